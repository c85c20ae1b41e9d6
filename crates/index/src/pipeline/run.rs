//! `trove index` from start to end: the checks and the lock, the stages loaded, the build — a
//! full one beside the bundle and swapped in, or an incremental one in place — and the
//! compaction an incremental run may end with.
use std::path::Path;
use std::time::Instant;

use super::build_bundle::build_into;
use super::compact;
use super::options::IndexOptions;
use super::report::IndexSummary;
use super::setup::{LoadedStages, check_output, checked_root};
use crate::Result;
use trove_bundle::{self as bundle, Manifest};

/// Runs the whole index: walk, process, write, swap. Returns the manifest and a summary.
pub fn run_index(opts: &IndexOptions) -> Result<(Manifest, IndexSummary)> {
    let started = Instant::now();
    let root = checked_root(opts)?;
    let out = bundle::output_path(&opts.out)?;
    if root.starts_with(&out) {
        check_output(&out, &root)?;
    }
    // One run at a time writes a bundle; the lock is held until the new one is in place.
    let _lock = bundle::lock_output(&out)?;
    check_output(&out, &root)?;
    let stages = LoadedStages::load(&root, opts)?;
    let inputs = stages.prepare(opts, &root, &out)?;
    if inputs.plan.reuse.is_none() {
        let (m, s) = bundle::build_beside(&out, |tmp| build_into(opts, tmp, started, inputs))?;
        bundle::pack::remember_bundle(&out, &m);
        return Ok((m, s));
    }
    // An incremental run: one segment added to the bundle in place, the manifest its commit. A
    // failed run leaves only its unfinished segment folder, removed here (else by the next run).
    let built = build_into(opts, &out, started, inputs);
    if built.is_err() {
        let _ = std::fs::remove_dir_all(out.join(bundle::SEGMENTS).join(".building"));
    }
    let (manifest, summary) = built?;
    bundle::pack::remember_bundle(&out, &manifest);
    compact_after(opts, &out, started, manifest, summary)
}

/// The end of an incremental run that wrote the bundle at `out` (`manifest`, `summary`): a
/// compaction when `--compact` or the `[bundle]` bounds ask for one.
fn compact_after(
    opts: &IndexOptions,
    out: &Path,
    started: Instant,
    manifest: Manifest,
    mut summary: IndexSummary,
) -> Result<(Manifest, IndexSummary)> {
    let why = compact::reason(&manifest, opts.compact, &opts.config.bundle);
    let Some(why) = why else {
        return Ok((manifest, summary));
    };
    // The run's segment is committed: a compaction that fails (a full disk) leaves the bundle as
    // it is, segments and all, and is said in the summary.
    let (manifest, c) = match compact::compact_locked(out, manifest.clone(), &why) {
        Ok(x) => x,
        Err(e) => {
            summary.compact_error = Some(format!("compaction ({why}) failed: {e}"));
            return Ok((manifest, summary));
        }
    };
    bundle::pack::remember_bundle(out, &manifest);
    summary.compacted = Some(c);
    summary.bundle_bytes = manifest.files.iter().map(|e| e.bytes).sum();
    summary.wall_secs = started.elapsed().as_secs_f64();
    Ok((manifest, summary))
}
