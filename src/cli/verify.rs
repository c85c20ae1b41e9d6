//! `trove verify BUNDLE`.
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use super::human_bytes;

/// Check a bundle: every file's size, sha256, row count, schema and codec (zstd) against
/// manifest.json; each segment's chunk ordinals against their rows and its files' chunk counts
/// against its chunks; and the live totals against the manifest's counts. A packed bundle (.trove) is unpacked into a scratch directory and checked entry by entry too.
/// Exits 0 when all match, 2 with the first mismatch otherwise. A views.sql left older than the
/// manifest by a run killed right after its commit is rewritten from the manifest (it is derived
/// from the manifest's segments), with a note.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The bundle directory or packed file.
    pub bundle: PathBuf,
    /// Print nothing on success.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs `trove verify`.
pub fn run(a: VerifyArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if trove::bundle::pack::is_packed(&a.bundle) {
        let m = trove::bundle::pack::check(&a.bundle)?;
        if !a.quiet {
            writeln!(
                out,
                "ok: packed bundle of {} files matches {} ({} chunks)",
                m.files.len() + 1,
                trove::bundle::MANIFEST,
                m.counts.chunks
            )?;
        }
        return Ok(());
    }
    // A run writing the bundle changes it as it is read: verify waits for it, and once more
    // for one that started meanwhile, so a mismatch it reports is one a finished run left.
    let wait = || {
        trove::bundle::writer_active(&a.bundle).map(|pid| {
            eprintln!(
                "trove verify: waiting for the trove run{} writing {} to finish",
                trove::bundle::pid_note(&pid),
                a.bundle.display()
            );
            trove::bundle::wait_for_writer(&a.bundle);
        })
    };
    wait();
    let r = match trove::bundle::verify(&a.bundle) {
        Err(_) if wait().is_some() => trove::bundle::verify(&a.bundle)?,
        r => r?,
    };
    if r.views_rewritten {
        eprintln!(
            "note: {} was missing, or older than {} (a run was killed right after its commit): \
             written from it",
            trove::bundle::VIEWS,
            trove::bundle::MANIFEST
        );
    }
    if !r.unlisted.is_empty() {
        eprintln!(
            "note: {} not listed by {} (left by a killed run: not part of the bundle, removed by \
             the next run; `trove sync` copies only what is listed)",
            r.unlisted.join(", "),
            trove::bundle::MANIFEST
        );
    }
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
