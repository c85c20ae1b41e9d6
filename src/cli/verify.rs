//! `trove verify BUNDLE`.
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use super::human_bytes;

/// Check a bundle: every file's size, sha256, row count and schema against manifest.json.
/// Exits 0 when all match, 2 with the first mismatch otherwise.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// Print nothing on success.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs `trove verify`.
pub fn run(a: VerifyArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let r = trove::bundle::verify(&a.bundle)?;
    if !a.quiet {
        writeln!(
            out,
            "ok: {} files ({}) match {} ({} chunks)",
            r.files_checked,
            human_bytes(r.bytes_hashed),
            trove::bundle::MANIFEST,
            r.manifest.counts.chunks
        )?;
    }
    Ok(())
}
