//! `trove pack BUNDLE -o FILE.trove` and `trove unpack FILE.trove -o BUNDLE`.
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use super::human_bytes;

/// Pack a bundle into one file to ship: a zstd-compressed tar of manifest.json and the Parquet
/// files, with fixed headers (the same bundle always packs to the same bytes).
///
/// The bundle is verified first. `trove query`, `trove sql`, `trove inspect` and `trove merge` read a
/// packed file directly (unpacked once into the cache, keyed by its sha256); `trove verify` checks
/// one end to end; `trove unpack` turns it back into a directory.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  trove pack app.bundle -o app.trove\n  trove query app.trove \"retry with backoff\""
)]
pub struct PackArgs {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// The packed file to write [default: BUNDLE.trove beside the bundle].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs `trove pack`.
pub fn run_pack(a: PackArgs) -> anyhow::Result<()> {
    let out = a.output.clone().unwrap_or_else(|| {
        let name = a
            .bundle
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "bundle".into());
        a.bundle.with_file_name(format!("{name}.trove"))
    });
    let s = trove::bundle::pack::pack(&a.bundle, &out)?;
    if !a.quiet {
        writeln!(
            std::io::stdout().lock(),
            "packed {} files ({}) into {} ({}), sha256 {}",
            s.files,
            human_bytes(s.bundle_bytes),
            out.display(),
            human_bytes(s.packed_bytes),
            s.sha256
        )?;
    }
    Ok(())
}

/// Unpack a packed bundle (.trove) into a bundle directory.
///
/// Every entry must be a plain bundle file name (no paths, links or `..`); the zstd checksum and the
/// unpacked bundle's sha256s are checked before the directory is swapped into place. A truncated or
/// altered file is refused (exit 2) and nothing is left behind.
#[derive(Debug, Args)]
pub struct UnpackArgs {
    /// The packed file.
    pub file: PathBuf,
    /// The bundle directory to write (replaced atomically if it is already a bundle).
    #[arg(short = 'o', long = "output", value_name = "BUNDLE")]
    pub output: PathBuf,
    /// No summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs `trove unpack`.
pub fn run_unpack(a: UnpackArgs) -> anyhow::Result<()> {
    let m = trove::bundle::pack::unpack(&a.file, &a.output)?;
    if !a.quiet {
        writeln!(
            std::io::stdout().lock(),
            "unpacked {} into {}: {} files, {} chunks (verified)",
            a.file.display(),
            a.output.display(),
            m.counts.files,
            m.counts.chunks
        )?;
    }
    Ok(())
}
