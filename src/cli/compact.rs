//! `trove compact BUNDLE`.
use clap::Args;
use std::path::PathBuf;

use super::human_bytes;

/// Rewrite a bundle's live rows as one segment: byte-identical to a full build of the same tree.
///
/// Incremental runs add a segment each, whose tombstones mark the old rows of the paths they
/// changed as dead; queries skip dead rows, and `trove index` compacts on its own past the
/// [bundle] bounds (max_segments, max_dead_ratio). This does it now: every byte is checked first,
/// the new bundle is built beside the old one and swapped in, so a killed run leaves the old one
/// as it was. Exit codes: 0 compacted (or already one segment), 2 refused.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  trove index . -o app.bundle --since auto --no-compact   # nightly deltas\n  trove compact app.bundle                                 # weekly"
)]
pub struct CompactArgs {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// No summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `trove compact`.
pub fn run(a: CompactArgs) -> anyhow::Result<()> {
    let (_, s) = trove::pipeline::compact::run_compact(&a.bundle)?;
    if a.json {
        super::print_json(&s)?;
    } else if !a.quiet {
        if s.segments_before <= 1 && s.dead_chunks == 0 {
            eprintln!("{}: already one segment, nothing to do", a.bundle.display());
        } else {
            eprintln!(
                "compacted {} segments of {} into one: {} files, {} chunks, {} dead chunks dropped in {:.2}s ({})",
                s.segments_before,
                a.bundle.display(),
                s.files,
                s.chunks,
                s.dead_chunks,
                s.wall_secs,
                human_bytes(s.bundle_bytes)
            );
        }
    }
    Ok(())
}
