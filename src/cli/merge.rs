//! `trove merge OUT IN...`.
use clap::Args;
use std::path::PathBuf;

use super::human_bytes;

/// Join bundles of disjoint parts of one tree — the shards of `trove index --shard I/N` CI jobs —
/// into one bundle that answers every query as one full run would.
///
/// The merged bundle lists the inputs' segments; no table is rewritten. Their files are
/// hard-linked (copied when the inputs sit on another filesystem), and the manifest gets the
/// counts and BM25 statistics of the union. The inputs must come from the same commit, trove
/// version, pipeline config, language files and embedder, and every file must match the sha256
/// its manifest records; a path in two inputs is refused. `trove compact` rewrites the result as
/// one segment, byte-identical to a full run's tables. Exit codes: 0 merged, 2 refused.
#[derive(Debug, Args)]
#[command(
    after_help = "Example (CI matrix of 3 jobs, then one merge job):\n  trove index . -o shard-1.bundle --shard 1/3\n  trove index . -o shard-2.bundle --shard 2/3\n  trove index . -o shard-3.bundle --shard 3/3\n  trove merge app.bundle shard-1.bundle shard-2.bundle shard-3.bundle\n  trove compact app.bundle   # optional: one segment, as a full run writes it"
)]
pub struct MergeArgs {
    /// The bundle directory to write (replaced atomically if it is already a bundle).
    pub output: PathBuf,
    /// Input bundles (directories or packed .trove files).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// No summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `trove merge`.
pub fn run(a: MergeArgs) -> anyhow::Result<()> {
    let inputs = a
        .inputs
        .iter()
        .map(|p| trove::bundle::pack::open_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    let (_, s) = trove::pipeline::run_merge(&a.output, &inputs)?;
    if a.json {
        super::print_json(&s)?;
    } else if !a.quiet {
        eprintln!(
            "merged {} bundles into {}: {} segments, {} files, {} chunks, {} skipped in {:.2}s ({}, {} copied, the rest linked)",
            s.inputs,
            a.output.display(),
            s.segments,
            s.files,
            s.chunks,
            s.skipped,
            s.wall_secs,
            human_bytes(s.bundle_bytes),
            human_bytes(s.bytes_copied)
        );
    }
    if let Some(w) = &s.warning {
        eprintln!("warning: {w}");
    }
    Ok(())
}
