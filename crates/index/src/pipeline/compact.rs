//! Compaction: the live rows of a bundle's segments rewritten as one segment, byte-identical to
//! what a full build of the same tree writes; and the k-way merge of live rows it shares with
//! `trove merge`.
//!
//! Input: verified bundles (a bundle's own segments, or the shards a merge joins). Output: one
//! segment written by the same [`BundleWriter`] a full build uses: files in path order (each taken
//! from the segment where it is live, embeddings included), postings renumbered and k-way merged
//! by term, references resolved again against every live definition, BM25 statistics of the
//! live rows. Dead rows (paths tombstoned by a later segment) are dropped on the way.
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::BundleConfig;
use crate::reader::FileRows;
use crate::writer::BundleWriter;
use crate::{Error, Result};
use trove_bundle::postings::GroupSource;
use trove_bundle::reader::{FileRow, Live, PostingStream};
use trove_bundle::{self as bundle, Finished, Manifest};

/// What a compaction did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct CompactSummary {
    /// Why it ran.
    pub reason: String,
    /// Segments before.
    pub segments_before: usize,
    /// Dead chunks dropped.
    pub dead_chunks: u64,
    /// Live files kept.
    pub files: u64,
    /// Live chunks kept.
    pub chunks: u64,
    /// Bytes of the compacted bundle.
    pub bundle_bytes: u64,
    /// Wall time in seconds.
    pub wall_secs: f64,
}

/// Stored chunks of `m`'s segments that are dead.
pub fn dead_chunks(m: &Manifest) -> u64 {
    let stored: u64 = m.segments.iter().map(|s| s.chunks).sum();
    stored.saturating_sub(m.counts.chunks)
}

/// Why the bundle of manifest `m` should be compacted after an incremental run, if it should:
/// `force` (`--compact` / `--no-compact`) wins over the bounds of `cfg`.
pub fn reason(m: &Manifest, force: Option<bool>, cfg: &BundleConfig) -> Option<String> {
    match force {
        Some(false) => return None,
        Some(true) if m.segments.len() > 1 => return Some("--compact".into()),
        Some(true) => return None,
        None => {}
    }
    if m.segments.len() > cfg.max_segments {
        return Some(format!(
            "{} segments (bundle.max_segments = {})",
            m.segments.len(),
            cfg.max_segments
        ));
    }
    let stored: u64 = m.segments.iter().map(|s| s.chunks).sum();
    let dead = dead_chunks(m);
    if stored > 0 && dead as f64 / stored as f64 > cfg.max_dead_ratio {
        return Some(format!(
            "{dead} of {stored} stored chunks dead ({:.0}% > bundle.max_dead_ratio = {})",
            100.0 * dead as f64 / stored as f64,
            cfg.max_dead_ratio
        ));
    }
    None
}

/// Writes the live rows of every segment of `inputs` (bundle folders with their manifests,
/// built with one embedder) as one segment into the empty bundle folder `tmp`. A path live in
/// two inputs is refused: the inputs must be disjoint.
pub fn write_live(tmp: &Path, inputs: &[(PathBuf, Manifest)]) -> Result<Finished> {
    let dim = inputs
        .first()
        .map(|(_, m)| m.embedder.dim)
        .ok_or_else(|| Error::internal("nothing to write"))?;
    // Every source segment, numbered across the inputs.
    let mut sources: Vec<PathBuf> = Vec::new();
    let mut rows: Vec<(FileRow, usize, usize)> = Vec::new();
    let mut skipped = Vec::new();
    for (n, (dir, m)) in inputs.iter().enumerate() {
        let live = Live::read(dir, m)?;
        let first = sources.len();
        sources.extend(m.segments.iter().map(|s| s.dir(dir)));
        rows.extend(live.files.into_iter().map(|(f, i)| (f, first + i, n)));
        skipped.extend(live.skipped.into_iter().map(|(k, _)| k));
    }
    rows.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    for w in rows.windows(2) {
        if w[0].0.path == w[1].0.path {
            return Err(Error::bad_input(format!(
                "{} is in both {} and {}: the inputs overlap (merge the shards of one split, each once)",
                w[0].0.path,
                inputs[w[0].2].0.display(),
                inputs[w[1].2].0.display()
            )));
        }
    }
    let mut streams = sources
        .iter()
        .enumerate()
        .map(|(i, d)| FileRows::open(d, dim, i))
        .collect::<Result<Vec<_>>>()?;
    let mut writer = BundleWriter::create(tmp, dim)?;
    for (row, i, _) in rows {
        writer.add_file(streams[i].take(row)?)?;
    }
    drop(streams);
    skipped.sort();
    skipped.dedup();
    let postings = sources
        .iter()
        .enumerate()
        .map(|(i, d)| {
            PostingStream::open(d, writer.renumbering(i)).map(|s| Box::new(s) as GroupSource)
        })
        .collect::<bundle::Result<Vec<_>>>()?;
    writer.finish(&skipped, postings)
}

/// Compacts the bundle `out` (whose output lock the caller holds; `m` its manifest) into one
/// segment, built beside it and swapped in.
pub fn compact_locked(out: &Path, m: Manifest, why: &str) -> Result<(Manifest, CompactSummary)> {
    let started = Instant::now();
    let segments_before = m.segments.len();
    let dead = dead_chunks(&m);
    let inputs = [(out.to_path_buf(), m)];
    let manifest = bundle::build_beside(out, |tmp| {
        let finished = write_live(tmp, &inputs)?;
        let m = &inputs[0].1;
        let mut base = m.base.clone().unwrap_or_else(|| serde_json::json!({}));
        if let Some(b) = base.as_object_mut() {
            b.insert(
                "compacted".into(),
                serde_json::json!({ "segments": segments_before, "dead_chunks": dead, "reason": why }),
            );
        }
        let manifest = bundle::Provenance {
            source: m.source.clone(),
            base: Some(base),
            pipeline: m.pipeline.clone(),
            pipeline_hash: m.pipeline_hash.clone(),
            languages_hash: m.languages_hash.clone(),
            shard: m.shard,
            embedder: m.embedder.clone(),
            scip: m.scip.clone(),
            bm25: m.bm25.clone(),
            builds: m.builds.clone(),
        }
        .manifest(finished);
        bundle::write_manifest(tmp, &manifest)?;
        Ok::<_, Error>(manifest)
    })?;
    let summary = CompactSummary {
        reason: why.to_string(),
        segments_before,
        dead_chunks: dead,
        files: manifest.counts.files,
        chunks: manifest.counts.chunks,
        bundle_bytes: manifest.files.iter().map(|e| e.bytes).sum(),
        wall_secs: started.elapsed().as_secs_f64(),
    };
    Ok((manifest, summary))
}

/// `trove compact BUNDLE`: checks every byte of the bundle, then rewrites its live rows as one
/// segment (a bundle of one segment without dead rows is left as it is).
pub fn run_compact(bundle_dir: &Path) -> Result<(Manifest, CompactSummary)> {
    let out = bundle::output_path(bundle_dir)?;
    let _lock = bundle::lock_output(&out)?;
    let m = bundle::verify(&out)?.manifest;
    if m.segments.len() == 1 && m.segments[0].tombstones == 0 {
        let summary = CompactSummary {
            reason: "already one segment".into(),
            segments_before: 1,
            files: m.counts.files,
            chunks: m.counts.chunks,
            bundle_bytes: m.files.iter().map(|e| e.bytes).sum(),
            ..CompactSummary::default()
        };
        return Ok((m, summary));
    }
    // Rows another build of this format wrote are kept as they are, that build listed in the
    // manifest's `builds`; postings are copied, never re-tokenized, but the bundle must name the
    // tokenizer this trove queries with.
    m.check_writable(&out, "compacting it")?;
    if m.bm25.tokenizer != crate::extract::TOKENIZER {
        return Err(Error::bundle_unusable(
            &out,
            format!(
                "was tokenized with {}, and this trove tokenizes with {}: re-index it",
                m.bm25.tokenizer,
                crate::extract::TOKENIZER
            ),
        ));
    }
    compact_locked(&out, m, "trove compact")
}
