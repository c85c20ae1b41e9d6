//! One build of a bundle: the walked files routed, processed and written in path order, either
//! as a whole new bundle (a full build, into a temp directory) or as one more segment of the base
//! bundle (an incremental run), then the manifest written and the summary completed.
use rustc_hash::FxHashSet;
use std::path::Path;
use std::time::Instant;

use super::base_changes::{changes, finish_unchanged};
use super::incremental::{Plan, Reuse};
use super::options::IndexOptions;
use super::progress::embed_line;
use super::report::{IndexSummary, ScipSummary};
use super::route::{FileRoute, route};
use super::timings::{Clock, Stage};
use super::worker::FileProcessor;
use super::writer_loop::{InOrderWriter, write_in_path_order};
use crate::config::PipelineConfig;
use crate::scip_import::ScipIndex;
use crate::source::{self, Candidate, Rules, Skipped};
use crate::summarize::Summarizer;
use crate::writer::BundleWriter;
use crate::{Result, extract};
use trove_bundle::{self as bundle, Finished, Manifest};
use trove_embed::EmbedStage;
use trove_lang::lang::Registry;

/// What `run_index` settled before building: the languages, the embedder, the git stamp and
/// the reuse plan.
pub(super) struct BuildInputs<'a> {
    /// The per-stage account (the walk's time in it already).
    pub(super) clock: super::timings::Clock,
    pub(super) registry: &'a Registry,
    pub(super) embedder: &'a EmbedStage,
    pub(super) summarizer: &'a dyn Summarizer,
    pub(super) scip: &'a ScipIndex,
    pub(super) source: bundle::SourceInfo,
    pub(super) plan: Plan,
    pub(super) rules: Rules,
    pub(super) walked: source::WalkResult,
}

/// What every step of one build reads: the per-stage account, the run's options, the directory
/// it writes (`tmp`) and the stages it runs.
struct BundleBuild<'a> {
    clock: &'a Clock,
    opts: &'a IndexOptions,
    tmp: &'a Path,
    registry: &'a Registry,
    embedder: &'a EmbedStage,
    summarizer: &'a dyn Summarizer,
    scip: &'a ScipIndex,
}

/// The files of a build written: the segment writer, the summary counted so far, the files kept
/// from the base bundle and the files skipped when read.
struct FilesWritten<'w> {
    writer: BundleWriter,
    summary: IndexSummary,
    kept: FxHashSet<&'w str>,
    read_skips: Vec<Skipped>,
}

/// Builds the bundle (or, incremental, its new segment) of `inputs` into `tmp`: the files
/// processed and written, then the skipped rows, the tombstones, the manifest and the summary.
pub(super) fn build_into(
    opts: &IndexOptions,
    tmp: &Path,
    started: Instant,
    inputs: BuildInputs<'_>,
) -> Result<(Manifest, IndexSummary)> {
    let BuildInputs {
        clock,
        registry,
        embedder,
        summarizer,
        scip,
        source,
        plan,
        rules,
        mut walked,
    } = inputs;
    if let Some(sh) = opts.shard {
        walked.files.retain(|c| sh.holds(&c.rel));
        walked.skipped.retain(|s| sh.holds(&s.path));
    }
    let build = BundleBuild {
        clock: &clock,
        opts,
        tmp,
        registry,
        embedder,
        summarizer,
        scip,
    };
    let reuse = plan.reuse.as_ref();
    let FilesWritten {
        mut writer,
        mut summary,
        kept,
        read_skips,
    } = build.write_files(&rules, reuse, &walked.files)?;

    // Files skipped when read were walked as candidates: counted once.
    summary.files_seen = walked.files.len() as u64
        + walked
            .skipped
            .iter()
            .filter(|s| !s.path.ends_with('/'))
            .count() as u64;
    if let Some(s) = summary.scip.as_mut() {
        let paths = scip.paths();
        let documents = paths.len() as u64;
        s.kept = paths.filter(|p| kept.contains(p)).count() as u64;
        s.unused = documents.saturating_sub(s.files + s.stale + s.kept);
    }
    let mut skipped = walked.skipped;
    skipped.extend(read_skips);
    skipped.sort();
    for sk in &skipped {
        *summary.skipped.entry(sk.reason.to_string()).or_default() += 1;
    }
    // An incremental run tombstones what changed and writes only its new skipped rows.
    let (skipped_written, tombstones) = match reuse {
        Some(r) => {
            let (tombstones, new_skips) = changes(r, &kept, &skipped);
            writer.set_tombstones(tombstones.clone());
            (new_skips, tombstones.into_iter().collect())
        }
        None => (skipped.clone(), FxHashSet::default()),
    };
    if let Some(r) = reuse
        && writer.is_empty()
        && skipped_written.is_empty()
    {
        // Nothing changed: no segment; the manifest is stamped with this run's commit.
        writer.abandon()?;
        summary.incremental = plan.note.clone();
        return finish_unchanged(
            embedder,
            summarizer,
            source,
            plan.base.clone(),
            r,
            summary,
            started,
        );
    }
    let finishing = Instant::now();
    let finished = writer.finish(&skipped_written, Vec::new())?;
    let (manifest, mut summary) = build.finish(
        finished,
        summary,
        source,
        plan,
        &skipped_written,
        &tombstones,
    )?;
    clock.add(Stage::Finish, finishing.elapsed());
    summary.wall_secs = started.elapsed().as_secs_f64();
    summary.timings = Some(clock.account(summary.wall_secs, trove_base::util::cpu_secs()));
    Ok((manifest, summary))
}

impl BundleBuild<'_> {
    /// Routes the walked `files`, processes those that need reading on the workers and writes
    /// them all in path order into a new bundle, or a new segment of the base bundle (`reuse`).
    fn write_files<'w>(
        &self,
        rules: &Rules,
        reuse: Option<&'w Reuse>,
        files: &'w [Candidate],
    ) -> Result<FilesWritten<'w>> {
        let (opts, cfg, embedder, scip) = (self.opts, &self.opts.config, self.embedder, self.scip);
        let processor = FileProcessor {
            clock: self.clock,
            rules,
            registry: self.registry,
            config: cfg,
            embedder,
            summarizer: self.summarizer,
            reuse,
            scip,
        };
        let threads = worker_threads(opts.threads, cfg, embedder);
        self.clock.set_workers(threads);
        let total_bytes: u64 = files.iter().filter_map(|c| c.bytes).sum();
        let progress = opts.progress.start(files.len() as u64, total_bytes);
        let embed_progress = || embed_line(&embedder.stats());
        let dim = embedder.backend().dim();
        let mut writer = match reuse {
            Some(r) => {
                bundle::remove_garbage(self.tmp, &r.manifest)?;
                BundleWriter::append(self.tmp, dim, r.manifest.segments.clone(), Vec::new())?
            }
            None => BundleWriter::create(self.tmp, dim)?,
        };
        let mut summary = IndexSummary {
            scip: (!scip.is_empty()).then(|| ScipSummary {
                inputs: scip.inputs.clone(),
                ..ScipSummary::default()
            }),
            ..IndexSummary::default()
        };

        // Files git vouches for never go to a worker: the writer carries them (or their skip) in
        // their turn. Where a checkout conversion may hide an edit, each is stat'ed: on all cores.
        let routes: Vec<FileRoute<'_>> = {
            use rayon::prelude::*;
            files.par_iter().map(|c| route(reuse, c)).collect()
        };
        let out = InOrderWriter::new(
            files,
            &routes,
            reuse,
            &mut writer,
            &mut summary,
            (&progress, &embed_progress),
            self.clock,
        );
        let (kept, read_skips) = write_in_path_order(threads, &processor, out)?;
        progress.finish();
        Ok(FilesWritten {
            writer,
            summary,
            kept,
            read_skips,
        })
    }

    /// The end of a build that wrote a segment (`finished`, its skipped rows `skipped_written`,
    /// the paths it tombstones `tombstones`): the summary completed, the manifest written — a new
    /// bundle's, or the base's with the segment appended, committed — and the totals.
    fn finish(
        &self,
        finished: Finished,
        mut summary: IndexSummary,
        source: bundle::SourceInfo,
        plan: Plan,
        skipped_written: &[Skipped],
        tombstones: &FxHashSet<String>,
    ) -> Result<(Manifest, IndexSummary)> {
        let (embedder, tmp) = (self.embedder, self.tmp);
        embedder.finish();
        let stats = embedder.stats();
        summary.embed_calls = stats.calls;
        summary.chunks_embedded = stats.chunks;
        summary.embed = stats;
        summary.summaries = self.summarizer.stats();
        summary.incremental = plan.note.clone();
        let base = plan.base.map(|mut b| {
            b.insert("files_reused".into(), summary.files_reused.into());
            b.insert(
                "files_processed".into(),
                (summary.files_indexed - summary.files_reused).into(),
            );
            b.insert("chunks_reused".into(), summary.chunks_reused.into());
            b.insert("chunks_embedded".into(), summary.chunks_embedded.into());
            serde_json::Value::Object(b)
        });
        summary.bytes_written = finished.entries.iter().map(|e| e.bytes).sum();
        let provenance = self.provenance(source, base);
        let manifest = match plan.reuse.as_ref() {
            None => {
                let m = provenance.manifest(finished);
                bundle::write_manifest(tmp, &m)?;
                m
            }
            Some(r) => {
                summary.tombstones = finished.segment.tombstones;
                append_segment(tmp, provenance, finished, r, skipped_written, tombstones)?
            }
        };
        summary.bytes_written +=
            std::fs::metadata(tmp.join(bundle::MANIFEST)).map_or(0, |m| m.len());
        summary.source_bytes = manifest.counts.source_bytes;
        summary.bundle_bytes = manifest.files.iter().map(|e| e.bytes).sum();
        summary.segments = manifest.segments.len();
        summary.peak_rss_bytes = trove_base::util::peak_rss_bytes();
        Ok((manifest, summary))
    }

    /// What the build stamps in the manifest: the source, the base bundle (`base`), the config,
    /// the languages, the shard, the SCIP indexes, the embedder and the BM25 parameters.
    fn provenance(
        &self,
        source: bundle::SourceInfo,
        base: Option<serde_json::Value>,
    ) -> bundle::Provenance {
        let (cfg, embedder) = (&self.opts.config, self.embedder);
        bundle::Provenance {
            source,
            base,
            pipeline: stamped_config(cfg, embedder.backend()),
            pipeline_hash: cfg.hash(),
            languages_hash: Some(self.registry.fingerprint().to_string()),
            shard: self.opts.shard,
            scip: self.scip.inputs.clone(),
            embedder: {
                let b = embedder.backend();
                bundle::EmbedderInfo {
                    backend: b.backend().into(),
                    model: b.model().into(),
                    dim: b.dim(),
                    fingerprint: b.fingerprint(),
                }
            },
            bm25: bundle::Bm25Info {
                k1: cfg.bm25.k1,
                b: cfg.bm25.b,
                avgdl: 0.0,
                n_docs: 0,
                tokenizer: extract::TOKENIZER.into(),
                max_token_len: cfg.bm25.max_token_len,
            },
            // A full build's rows are this build's; an appended segment adds the base's builds
            // (`manifest_appended`).
            builds: Vec::new(),
        }
    }
}

/// The manifest of the base bundle `r` (at `tmp`) with the segment `finished` appended, its live
/// totals counted (the base's rows not tombstoned by `tombstones`, and the segment's files and
/// skipped rows `skipped_written`), and committed. Not committed (a full disk), the segment and
/// views this run wrote go, and the bundle is as it was.
fn append_segment(
    tmp: &Path,
    provenance: bundle::Provenance,
    finished: Finished,
    r: &Reuse,
    skipped_written: &[Skipped],
    tombstones: &FxHashSet<String>,
) -> Result<Manifest> {
    let new_files = trove_bundle::reader::read_files(&finished.segment.dir(tmp))?;
    let live_files = r
        .files
        .values()
        .filter(|f| !tombstones.contains(&f.path))
        .chain(&new_files);
    let live_skipped = r
        .skipped
        .iter()
        .filter(|k| !tombstones.contains(&k.path))
        .count()
        + skipped_written.len();
    let live = bundle::LiveTotals::of(live_files, live_skipped as u64);
    let segment_dir = finished.segment.dir(tmp);
    let m = provenance.manifest_appended(&r.manifest, finished, live);
    if let Err(e) = bundle::commit_manifest(tmp, &m) {
        // Not committed (a full disk): the segment and views this run wrote go, and the
        // bundle is as it was.
        let _ = std::fs::remove_dir_all(&segment_dir);
        bundle::discard_staged_views(tmp);
        return Err(e.into());
    }
    bundle::install_views(tmp)?;
    Ok(m)
}

/// Worker threads for a run asked for `threads` (0 = one per core): more wait on a batching
/// backend's replies, so that its batches stay full.
fn worker_threads(threads: usize, cfg: &PipelineConfig, embedder: &EmbedStage) -> usize {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    // Workers wait on a batching backend's replies: more of them keep its batches full.
    let extra = if cfg.summary.backend == crate::summarize::SummaryBackend::Llm {
        embedder.extra_workers().max(cfg.summary.concurrency * 2)
    } else {
        embedder.extra_workers()
    };
    threads + extra
}

/// The config as stamped in the manifest: without the local model folder's path (a bundle names
/// nothing of the machine that made it; the query side finds the folder by fingerprint).
fn stamped_config(cfg: &PipelineConfig, embedder: &dyn trove_embed::Embedder) -> serde_json::Value {
    let mut c = cfg.clone();
    embedder.stamp(&mut c.embed);
    c.embed.model_dir = String::new();
    serde_json::to_value(&c).unwrap_or_default()
}
