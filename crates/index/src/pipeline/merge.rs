//! `trove merge`: joins bundles of disjoint parts of one tree (the shards of `--shard I/N` CI jobs)
//! into one bundle by listing their segments, without rewriting a table.
//!
//! Input: bundles made by the same trove, config, language files and embedder from the same
//! commit, whose live paths do not overlap; each is checked (sizes, then every file's sha256
//! through the memo) before anything is written. Output: one bundle, built beside `out` and
//! swapped in, whose manifest lists every input's segments in input order. Their files are
//! hard-linked (copied across filesystems); the manifest gets the live totals and the BM25
//! `n_docs`/`avgdl` of the union from the small `files` tables, so queries score as on a full
//! build. `trove compact` turns the result into the full build's tables, byte for byte.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::{Error, Result};
use trove_bundle::reader::{FileRow, Live, read_tombstones};
use trove_bundle::{self as bundle, Counts, FileEntry, LiveTotals, Manifest, SegmentInfo};

/// What a merge did.
#[derive(Debug, Default, serde::Serialize)]
pub struct MergeSummary {
    /// Input bundles.
    pub inputs: usize,
    /// Segments the merged bundle lists.
    pub segments: usize,
    /// Files in the merged bundle.
    pub files: u64,
    /// Chunks in the merged bundle.
    pub chunks: u64,
    /// Skipped rows.
    pub skipped: u64,
    /// A warning when the inputs are some, not all, shards of a split.
    pub warning: Option<String>,
    /// Bytes of the merged bundle.
    pub bundle_bytes: u64,
    /// Of those, bytes copied (the rest are hard links to the inputs' files).
    pub bytes_copied: u64,
    /// Wall time in seconds.
    pub wall_secs: f64,
}

/// Why bundle `b` cannot be merged with `a` (the first input), if it cannot: what differs, with
/// both values. Bundles of different trove builds merge when their rows agree on everything a
/// reader compares them by: format, tokenizer, pipeline config, language files and embedder.
fn mismatch(a: &Manifest, b: &Manifest) -> Option<String> {
    let differs =
        |what: &str, x: String, y: String| (x != y).then(|| format!("{what} ({y}, not {x})"));
    let opt = |s: &Option<String>| s.clone().unwrap_or_else(|| "none".into());
    differs(
        "bundle format",
        format!("{}.{}", a.format_major, a.format_minor),
        format!("{}.{}", b.format_major, b.format_minor),
    )
    .or_else(|| {
        differs(
            "tokenizer",
            format!("{} max {}", a.bm25.tokenizer, a.bm25.max_token_len),
            format!("{} max {}", b.bm25.tokenizer, b.bm25.max_token_len),
        )
    })
    .or_else(|| {
        differs(
            "pipeline config",
            a.pipeline_hash.clone(),
            b.pipeline_hash.clone(),
        )
    })
    .or_else(|| {
        differs(
            "language files",
            opt(&a.languages_hash),
            opt(&b.languages_hash),
        )
    })
    .or_else(|| {
        differs(
            "embedder",
            a.embedder.fingerprint.clone(),
            b.embedder.fingerprint.clone(),
        )
    })
    .or_else(|| {
        differs(
            "source commit",
            opt(&a.source.commit),
            opt(&b.source.commit),
        )
    })
    .or_else(|| {
        differs(
            "root directory",
            opt(&a.source.subdir),
            opt(&b.source.subdir),
        )
    })
}

/// Merges the bundles at `inputs` into `out`.
pub fn run_merge(out: &Path, inputs: &[PathBuf]) -> Result<(Manifest, MergeSummary)> {
    let started = Instant::now();
    if inputs.is_empty() {
        return Err(Error::bad_input(
            "give at least one input bundle: trove merge OUT IN...",
        ));
    }
    // Locked before the inputs are read: OUT may be one of them (a shard added to a merged
    // bundle), and a run that commits to it meanwhile must not be dropped by the swap.
    let out = bundle::output_path(out)?;
    let _lock = bundle::lock_output(&out)?;
    bundle::check_replaceable(&out)?;
    let mut manifests = Vec::with_capacity(inputs.len());
    for p in inputs {
        let m = bundle::read_manifest(p)?;
        // Rows of other builds of this format are kept, their builds listed in `builds`.
        m.check_writable(p, "merging it")?;
        if let Some((first, m0)) = inputs.first().zip(manifests.first())
            && let Some(what) = mismatch(m0, &m)
        {
            return Err(Error::bundle(
                p,
                format!(
                    "was built with another {what} than {}: only bundles of one commit, config and \
                     embedder can be merged",
                    first.display()
                ),
            ));
        }
        // Shards of splits with other counts slice the tree differently: the overlap check
        // would blame a path, not the split.
        if let Some((other, o)) = inputs.iter().zip(&manifests).find_map(|(q, o)| {
            o.shard
                .zip(m.shard)
                .filter(|(x, y)| x.count != y.count)
                .map(|(x, _)| (q, x))
        }) {
            return Err(Error::bundle(
                p,
                format!(
                    "is shard {} and {} is shard {o}: merge the shards of one split (--shard I/N with one N)",
                    m.shard.map_or_else(String::new, |s| s.to_string()),
                    other.display()
                ),
            ));
        }
        bundle::check_sizes(p, &m)?;
        bundle::pack::check_hashes(p, &m)?;
        manifests.push(m);
    }
    let (manifest, summary) =
        bundle::build_beside(&out, |tmp| write_merged(tmp, inputs, &manifests, started))?;
    bundle::pack::remember_bundle(&out, &manifest);
    Ok((manifest, summary))
}

fn write_merged(
    tmp: &Path,
    inputs: &[PathBuf],
    manifests: &[Manifest],
    started: Instant,
) -> Result<(Manifest, MergeSummary)> {
    let first = &manifests[0];
    let (live_files, skipped) = live_union(inputs, manifests)?;
    let mut segments: Vec<SegmentInfo> = Vec::new();
    let mut files: Vec<FileEntry> = Vec::new();
    let mut bytes_copied = 0;
    for (dir, m) in inputs.iter().zip(manifests) {
        for s in &m.segments {
            if segments.iter().any(|x| x.id == s.id) {
                // Equal ids are equal tables: shards that both came out empty. Anything else
                // would be a path in two inputs, which `check_disjoint` refused.
                continue;
            }
            let entries = m.segment_entries(s);
            bytes_copied += bundle::link_segment(dir, tmp, s, &entries)?;
            files.extend(entries.into_iter().cloned());
            segments.push(s.clone());
        }
    }
    let totals = LiveTotals::of(&live_files, skipped);
    files.push(bundle::write_views(tmp, &segments)?);
    let warning = shard_warning(manifests);
    let mut source = first.source.clone();
    source.dirty = manifests.iter().any(|m| m.source.dirty);
    // Shards checked out under other settings vouch for none: the next `--since` reads all.
    if manifests
        .iter()
        .any(|m| m.source.checkout != source.checkout)
    {
        source.checkout = None;
    }
    let merged: Vec<serde_json::Value> = manifests
        .iter()
        .map(|m| {
            serde_json::json!({
                "shard": m.shard.map(|s| s.to_string()),
                "created_at": m.created_at,
                "files": m.counts.files,
                "chunks": m.counts.chunks,
                "segments": m.segments.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let stored: Vec<&Counts> = manifests.iter().map(|m| &m.counts).collect();
    let manifest = bundle::Provenance {
        source,
        base: Some(serde_json::json!({ "mode": "merge", "inputs": merged })),
        pipeline: first.pipeline.clone(),
        pipeline_hash: first.pipeline_hash.clone(),
        languages_hash: first.languages_hash.clone(),
        shard: None,
        embedder: first.embedder.clone(),
        scip: first.scip.clone(),
        bm25: first.bm25.clone(),
        builds: manifests
            .iter()
            .flat_map(|m| m.builds.iter().cloned())
            .collect(),
    }
    .manifest_of_segments(segments, files, totals, &stored);
    bundle::write_manifest(tmp, &manifest)?;
    let summary = MergeSummary {
        inputs: inputs.len(),
        segments: manifest.segments.len(),
        files: manifest.counts.files,
        chunks: manifest.counts.chunks,
        skipped: manifest.counts.skipped,
        warning,
        bundle_bytes: manifest.files.iter().map(|e| e.bytes).sum(),
        bytes_copied,
        wall_secs: started.elapsed().as_secs_f64(),
    };
    Ok((manifest, summary))
}

/// The live rows of the inputs, which the joined bundle's must be, all of them: their `files`
/// rows and the number of skipped rows. Refuses inputs whose live paths (indexed or skipped)
/// overlap, naming the path and both inputs, and a tombstone of one input that names a live path
/// of an earlier one (listed after it, it would kill that row).
fn live_union(inputs: &[PathBuf], manifests: &[Manifest]) -> Result<(Vec<FileRow>, u64)> {
    let mut paths: Vec<(String, usize)> = Vec::new();
    let mut files = Vec::new();
    let mut skipped = 0;
    for (n, (dir, m)) in inputs.iter().zip(manifests).enumerate() {
        let live = Live::read(dir, m)?;
        skipped += live.skipped.len() as u64;
        paths.extend(live.files.iter().map(|(f, _)| (f.path.clone(), n)));
        paths.extend(live.skipped.into_iter().map(|(k, _)| (k.path, n)));
        files.extend(live.files.into_iter().map(|(f, _)| f));
    }
    paths.sort();
    for w in paths.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(Error::bad_input(format!(
                "{} is in both {} and {}: the inputs overlap (merge the shards of one split, each once)",
                w[0].0,
                inputs[w[0].1].display(),
                inputs[w[1].1].display()
            )));
        }
    }
    for (n, (dir, m)) in inputs.iter().zip(manifests).enumerate() {
        for s in m.segments.iter().filter(|s| s.tombstones > 0) {
            for dead in read_tombstones(&s.dir(dir))? {
                if let Ok(k) = paths.binary_search_by(|(p, _)| p.as_str().cmp(&dead))
                    && paths[k].1 < n
                {
                    return Err(Error::bad_input(format!(
                        "a tombstone of {} names {}, live in {}: the inputs overlap (merge the \
                         shards of one split, each once)",
                        dir.display(),
                        dead,
                        inputs[paths[k].1].display()
                    )));
                }
            }
        }
    }
    Ok((files, skipped))
}

/// A warning when the inputs are shards but not every shard of their split.
fn shard_warning(manifests: &[Manifest]) -> Option<String> {
    let shards: Vec<_> = manifests.iter().filter_map(|m| m.shard).collect();
    if shards.is_empty() {
        return None;
    }
    let n = shards[0].count;
    let have: BTreeSet<u32> = shards.iter().map(|s| s.index).collect();
    let complete = shards.len() == manifests.len()
        && shards.iter().all(|s| s.count == n)
        && have.len() == n as usize;
    let listed = have
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let unstamped = manifests.len() - shards.len();
    (!complete).then(|| {
        if unstamped > 0 {
            // A merge of some shards (or a full build) carries no shard stamp: it may hold the
            // other slices.
            format!(
                "the inputs hold shard(s) {listed} of {n} and {unstamped} bundle(s) that are no single shard (a merge of shards, or a full build): the merged bundle is whole only if those hold the other slices"
            )
        } else {
            format!(
                "the inputs hold shard(s) {listed} of {n}: the merged bundle lacks the other slices of the tree"
            )
        }
    })
}
