//! `trove merge`: joins bundles of disjoint parts of one tree (the shards of `--shard I/N` CI jobs)
//! into one bundle.
//!
//! Input: verified bundles made by the same trove, config, language files and embedder from the same
//! commit, whose paths do not overlap. Output: one bundle, written beside `out` and swapped in, whose
//! tables are exactly what one full run over the union would write: files and chunks in path order
//! (streamed from each input, embeddings included), postings k-way merged by term, `terms` document
//! frequencies and BM25 `avgdl`/`n_docs` recomputed over the whole.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::bundle::{self, Manifest};
use crate::{Error, Result};

/// What a merge did.
#[derive(Debug, Default, serde::Serialize)]
pub struct MergeSummary {
    /// Input bundles.
    pub inputs: usize,
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
    /// Wall time in seconds.
    pub wall_secs: f64,
}

/// Why bundle `b` cannot be merged with `a` (the first input), if it cannot.
fn mismatch(a: &Manifest, b: &Manifest) -> Option<&'static str> {
    if a.format_version != b.format_version || a.tool != b.tool {
        Some("trove version or bundle format")
    } else if a.pipeline_hash != b.pipeline_hash {
        Some("pipeline config")
    } else if a.languages_hash != b.languages_hash {
        Some("language files")
    } else if a.embedder.fingerprint != b.embedder.fingerprint {
        Some("embedder")
    } else if a.source.commit != b.source.commit {
        Some("source commit")
    } else if a.source.subdir != b.source.subdir {
        Some("root directory")
    } else {
        None
    }
}

/// Merges the bundles at `inputs` into `out`.
pub fn run_merge(out: &Path, inputs: &[PathBuf]) -> Result<(Manifest, MergeSummary)> {
    let started = Instant::now();
    if inputs.is_empty() {
        return Err(Error::Other(
            "give at least one input bundle: trove merge OUT IN...".into(),
        ));
    }
    let mut manifests = Vec::with_capacity(inputs.len());
    for p in inputs {
        let r = bundle::verify(p)?;
        // The merged bundle is stamped as this build's: rows another build wrote cannot be.
        if r.manifest.tool != bundle::manifest_tool()
            || r.manifest.format_version != bundle::FORMAT_VERSION
        {
            return Err(Error::bundle(
                p,
                format!(
                    "was built by another trove build ({} {}, format {}): re-index it with this one \
                     before merging",
                    r.manifest.tool.version,
                    r.manifest.tool.build.as_deref().unwrap_or("unknown"),
                    r.manifest.format_version
                ),
            ));
        }
        if let Some((first, m0)) = inputs.first().zip(manifests.first())
            && let Some(what) = mismatch(m0, &r.manifest)
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
        manifests.push(r.manifest);
    }
    let out = super::absolute(out)?;
    let _lock = bundle::lock_output(&out)?;
    bundle::check_replaceable(&out)?;
    bundle::build_beside(&out, |tmp| write_merged(tmp, inputs, &manifests, started))
}

fn write_merged(
    tmp: &Path,
    inputs: &[PathBuf],
    manifests: &[Manifest],
    started: Instant,
) -> Result<(Manifest, MergeSummary)> {
    let first = &manifests[0];
    let sources: Vec<(PathBuf, Manifest)> = inputs
        .iter()
        .cloned()
        .zip(manifests.iter().cloned())
        .collect();
    let finished = super::compact::write_live(tmp, &sources)?;
    let warning = shard_warning(manifests);
    let mut source = first.source.clone();
    source.dirty = manifests.iter().any(|m| m.source.dirty);
    let merged: Vec<serde_json::Value> = manifests
        .iter()
        .map(|m| {
            serde_json::json!({
                "shard": m.shard.map(|s| s.to_string()),
                "created_at": m.created_at,
                "files": m.counts.files,
                "chunks": m.counts.chunks,
            })
        })
        .collect();
    let manifest = bundle::Provenance {
        source,
        base: Some(serde_json::json!({ "mode": "merge", "inputs": merged })),
        pipeline: first.pipeline.clone(),
        pipeline_hash: first.pipeline_hash.clone(),
        languages_hash: first.languages_hash.clone(),
        shard: None,
        embedder: first.embedder.clone(),
        bm25: first.bm25.clone(),
    }
    .manifest(finished);
    bundle::write_manifest(tmp, &manifest)?;
    let summary = MergeSummary {
        inputs: inputs.len(),
        files: manifest.counts.files,
        chunks: manifest.counts.chunks,
        skipped: manifest.counts.skipped,
        warning,
        bundle_bytes: manifest.files.iter().map(|e| e.bytes).sum(),
        wall_secs: started.elapsed().as_secs_f64(),
    };
    Ok((manifest, summary))
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
    (!complete).then(|| {
        format!(
            "the inputs hold shard(s) {} of {n}: the merged bundle lacks the other slices of the tree",
            have.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}
