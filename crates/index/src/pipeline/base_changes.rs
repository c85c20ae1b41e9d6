//! What an incremental run changes in its base bundle: the paths its segment tombstones and the
//! skipped rows it writes, or, when nothing changed, only the manifest's stamp.
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;
use std::time::Instant;

use super::incremental::Reuse;
use super::report::IndexSummary;
use crate::Result;
use crate::source::Skipped;
use crate::summarize::Summarizer;
use trove_bundle::{self as bundle, Manifest};
use trove_embed::EmbedStage;

/// What an incremental run changes in the base bundle `r`, given the files it kept and the
/// skipped rows of the whole tree now (sorted): the paths to tombstone (sorted) — every live path
/// of the base whose file was not kept (changed, deleted, now skipped) or whose skipped rows
/// changed — and the skipped rows to write (those of tombstoned paths, and of paths the base had
/// no rows for).
pub(super) fn changes(
    r: &Reuse,
    kept: &FxHashSet<&str>,
    skipped: &[Skipped],
) -> (Vec<String>, Vec<Skipped>) {
    let mut old: BTreeMap<&str, Vec<&Skipped>> = BTreeMap::new();
    for k in &r.skipped {
        old.entry(k.path.as_str()).or_default().push(k);
    }
    let mut new: BTreeMap<&str, Vec<&Skipped>> = BTreeMap::new();
    for k in skipped {
        new.entry(k.path.as_str()).or_default().push(k);
    }
    let mut dead: std::collections::BTreeSet<String> = r
        .files
        .keys()
        .filter(|p| !kept.contains(p.as_str()))
        .cloned()
        .collect();
    for (p, rows) in &old {
        if kept.contains(*p) {
            continue;
        }
        if new.get(p) != Some(rows) {
            dead.insert((*p).to_string());
        }
    }
    let write: Vec<Skipped> = skipped
        .iter()
        .filter(|k| {
            dead.contains(&k.path)
                || !old.contains_key(k.path.as_str()) && !r.files.contains_key(&k.path)
        })
        .cloned()
        .collect();
    (dead.into_iter().collect(), write)
}

/// The end of an incremental run that found nothing to change: the base's segments stay, and its
/// manifest is stamped with this run's source and time.
pub(super) fn finish_unchanged(
    embedder: &EmbedStage,
    summarizer: &dyn Summarizer,
    source: bundle::SourceInfo,
    base: Option<serde_json::Map<String, serde_json::Value>>,
    r: &Reuse,
    mut summary: IndexSummary,
    started: Instant,
) -> Result<(Manifest, IndexSummary)> {
    embedder.finish();
    summary.embed = embedder.stats();
    summary.summaries = summarizer.stats();
    let mut m = r.manifest.clone();
    m.source = source;
    if let Some(s) = &summary.scip {
        m.scip = s.inputs.clone();
    }
    m.created_at = bundle::created_at();
    m.base = base.map(|mut b| {
        b.insert("files_reused".into(), summary.files_reused.into());
        b.insert("files_processed".into(), 0.into());
        b.insert("chunks_reused".into(), summary.chunks_reused.into());
        b.insert("chunks_embedded".into(), 0.into());
        serde_json::Value::Object(b)
    });
    bundle::commit_manifest(&r.dir, &m)?;
    bundle::settle_views(&r.dir, &m, false)?;
    summary.source_bytes = m.counts.source_bytes;
    summary.bundle_bytes = m.files.iter().map(|e| e.bytes).sum();
    summary.bytes_written = std::fs::metadata(r.dir.join(bundle::MANIFEST)).map_or(0, |x| x.len());
    summary.segments = m.segments.len();
    summary.wall_secs = started.elapsed().as_secs_f64();
    Ok((m, summary))
}
