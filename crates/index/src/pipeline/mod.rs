//! Pipeline: joins the stages for `trove index`.
//!
//! ```text
//! walk (sorted paths) ─► feeder ─► [bounded] ─► N workers: read, classify, detect, chunk,
//!                                               tokenize, embed ─► [bounded] ─► writer (in path order)
//! ```
//! Input: [`IndexOptions`]. Output: a bundle at `opts.out` and an [`IndexSummary`]. Invariants: at
//! most [`WINDOW_FILES`] files are in flight or waiting to be written, whatever the repository size
//! (backpressure through a token channel), so memory is bounded; files reach the single writer in
//! path order, so `--threads 1` and `--threads N` write the same bytes; a per-file failure becomes a
//! `skipped` row, never an abort; the bundle is built in a temp directory beside the target and
//! swapped in whole, so a failed run leaves the previous bundle as it was.
pub mod compact;
mod incremental;
mod merge;
mod parse_only;
mod progress;

pub use incremental::Since;
pub use merge::{MergeSummary, run_merge};
pub use parse_only::{ParseOnlySummary, run_parse_only};
pub use progress::Progress;

use crossbeam_channel::{Receiver, Sender, bounded};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::PipelineConfig;
use crate::record::{ChunkRecord, FileRecord, RefKind, SymbolRecord};
use crate::resolve::{self, chunk_at};
use crate::source::{self, Candidate, Rules, SkipReason, Skipped, WalkOptions};
use crate::summarize::SummaryBackend;
use crate::writer::BundleWriter;
use crate::{Error, Result, extract};
use trove_base::util::{sha256_hex, stable_id};
use trove_bundle::reader::FileRow;
use trove_bundle::{self as bundle, Manifest, Shard};
use trove_embed::{EmbedStage, EmbedStats, window_texts};
use trove_lang::chunk::chunk_file;
use trove_lang::lang::Registry;

/// Test hooks, compiled in only with the cargo feature `test-hooks` (which `scripts/test.sh` turns
/// on for the test build; release builds have none): environment variables that make a run fail
/// on purpose, read nowhere else.
mod hooks {
    /// A worker panics on the file with this repo-relative path, to prove a panic costs that
    /// file only.
    pub const PANIC_ON_ENV: &str = "TROVE_PANIC_ON";
    /// The writer fails after this many files, to prove a failed run leaves the previous bundle
    /// intact.
    pub const FAIL_AFTER_ENV: &str = "TROVE_FAIL_AFTER_FILES";

    /// Panics when `rel` is the file `TROVE_PANIC_ON` names.
    pub fn panic_on(rel: &str) {
        if cfg!(feature = "test-hooks") && std::env::var_os(PANIC_ON_ENV).is_some_and(|p| p == rel)
        {
            panic!("{PANIC_ON_ENV}: panicking on {rel} on purpose");
        }
    }

    /// The file count `TROVE_FAIL_AFTER_FILES` names.
    pub fn fail_after() -> Option<u64> {
        if !cfg!(feature = "test-hooks") {
            return None;
        }
        std::env::var(FAIL_AFTER_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
    }
}

/// Files read, chunked or waiting for the writer at any one time: bounds memory (each holds one
/// file's text and chunks; files are at most `max_file_bytes`) while keeping every core busy even
/// when one large file holds up the in-order writer. 256 cost ~10% more peak memory than 64 on the
/// crates corpus for no speed gain.
pub const WINDOW_FILES: usize = 64;

/// What `trove index` was asked to do.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// The tree to index.
    pub root: PathBuf,
    /// The bundle directory to write.
    pub out: PathBuf,
    /// Resolved pipeline config.
    pub config: PipelineConfig,
    /// Include/exclude globs.
    pub walk: WalkOptions,
    /// Worker threads (0 = one per core).
    pub threads: usize,
    /// Extra language directories (after the built-ins and the repo's `.trove/languages`).
    pub languages_dirs: Vec<PathBuf>,
    /// How progress is shown.
    pub progress: Progress,
    /// `--since`: build on the existing bundle from this git revision.
    pub since: Option<Since>,
    /// `--include-uncommitted`: with `since`, also index the work tree's uncommitted changes.
    pub include_uncommitted: bool,
    /// `--shard I/N`: index only this slice of the tree.
    pub shard: Option<Shard>,
    /// `--compact` (`Some(true)`) / `--no-compact` (`Some(false)`): whether an incremental run
    /// compacts the bundle afterwards; `None`: when the `[bundle]` bounds say so.
    pub compact: Option<bool>,
    /// `--scip FILE`: SCIP indexes whose facts the run takes ([`crate::precise`]).
    pub scip: Vec<PathBuf>,
    /// `--no-scip`: leave the root's `index.scip` unread.
    pub no_scip: bool,
}

/// What a run did, for the final summary.
#[derive(Debug, Default, serde::Serialize)]
pub struct IndexSummary {
    /// Files the walk considered (indexed + skipped files).
    pub files_seen: u64,
    /// Files indexed (processed or carried over).
    pub files_indexed: u64,
    /// Of those, files whose rows were carried over from the existing bundle unchanged.
    pub files_reused: u64,
    /// Chunks carried over (their embeddings included).
    pub chunks_reused: u64,
    /// Chunks sent to the embedder.
    pub chunks_embedded: u64,
    /// Calls to the embedder.
    pub embed_calls: u64,
    /// The embed stage: calls, texts, cache hits, tokens, busy time, warnings.
    pub embed: EmbedStats,
    /// The summarizer: calls, cache hits, fallbacks.
    pub summaries: crate::summarize::SummaryStats,
    /// How the run used the existing bundle: why a full build, or what changed since its commit.
    pub incremental: Option<String>,
    /// Skipped files and directories by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Chunks written.
    pub chunks: u64,
    /// Chunks per language.
    pub chunks_by_language: BTreeMap<String, u64>,
    /// Files whose parse ran past its time bound (chunked by lines instead).
    pub parse_fallbacks: u64,
    /// Secrets redacted in the indexed files (carried files included).
    pub redactions: u64,
    /// Of those, in files processed by this run, by kind.
    pub redactions_by_kind: BTreeMap<String, u64>,
    /// Bytes of indexed source.
    pub source_bytes: u64,
    /// Bytes of the bundle.
    pub bundle_bytes: u64,
    /// Wall time in seconds.
    pub wall_secs: f64,
    /// Peak resident memory of the process, when known.
    pub peak_rss_bytes: Option<u64>,
    /// Segments of the bundle after the run.
    pub segments: usize,
    /// Paths this run's segment tombstoned in earlier ones.
    pub tombstones: u64,
    /// Bytes this run wrote (its segment, `views.sql`, the manifest; all of a full build).
    pub bytes_written: u64,
    /// Why and how the bundle was compacted after the run, when it was.
    pub compacted: Option<compact::CompactSummary>,
    /// Why a compaction the run started failed (the run's segment stays).
    pub compact_error: Option<String>,
    /// What the SCIP indexes given to the run did, when there were some.
    pub scip: Option<ScipSummary>,
}

/// What the SCIP indexes of a run did.
#[derive(Debug, Default, serde::Serialize)]
pub struct ScipSummary {
    /// The indexes read.
    pub inputs: Vec<trove_bundle::ScipInput>,
    /// Files whose rows took their document's facts.
    pub files: u64,
    /// Definitions of the syntax rules marked with their SCIP symbol.
    pub definitions_matched: u64,
    /// Definitions added from the indexes.
    pub definitions_added: u64,
    /// References taken from the indexes.
    pub refs: u64,
    /// Files whose document no longer fits their text (built at another commit, or the file
    /// changed since): their facts were dropped and the syntax rules' kept.
    pub stale: u64,
    /// The first of those, with why.
    pub stale_files: Vec<(String, String)>,
    /// Documents of files this run kept from the base bundle as they were (their facts stay).
    pub kept: u64,
    /// Documents with no indexed code file in the tree (skipped, excluded, or not code).
    pub unused: u64,
}

/// How many stale files the summary names.
const STALE_NAMED: usize = 10;

impl IndexSummary {
    /// Counts one file written to the bundle.
    fn count(&mut self, f: &FileRecord) {
        self.files_indexed += 1;
        self.parse_fallbacks += u64::from(f.parse_fallback);
        self.redactions += u64::from(f.redactions);
        for k in &f.redacted_kinds {
            *self.redactions_by_kind.entry(k.to_string()).or_default() += 1;
        }
        *self
            .chunks_by_language
            .entry(f.language.clone().unwrap_or_else(|| "(none)".into()))
            .or_default() += f.chunks.len() as u64;
        self.chunks += f.chunks.len() as u64;
        if let (Some(s), Some(o)) = (self.scip.as_mut(), f.scip.as_ref()) {
            match o {
                crate::precise::FileOutcome::Applied {
                    matched,
                    added,
                    refs,
                } => {
                    s.files += 1;
                    s.definitions_matched += u64::from(*matched);
                    s.definitions_added += u64::from(*added);
                    s.refs += u64::from(*refs);
                }
                crate::precise::FileOutcome::Stale(why) => {
                    s.stale += 1;
                    if s.stale_files.len() < STALE_NAMED {
                        s.stale_files.push((f.path.clone(), why.clone()));
                    }
                }
            }
        }
    }

    /// Counts one file left as it was in the base bundle.
    fn count_kept(&mut self, f: &FileRow) {
        self.files_indexed += 1;
        self.files_reused += 1;
        self.chunks_reused += u64::from(f.chunks);
        self.parse_fallbacks += u64::from(f.parse_fallback);
        self.redactions += u64::from(f.redactions);
        let lang = f.language.as_deref().unwrap_or("(none)");
        match self.chunks_by_language.get_mut(lang) {
            Some(n) => *n += u64::from(f.chunks),
            None => {
                self.chunks_by_language
                    .insert(lang.to_string(), u64::from(f.chunks));
            }
        }
        self.chunks += u64::from(f.chunks);
    }
}

/// A worker's answer for one file.
enum FileResult {
    Indexed(Box<FileRecord>),
    Skipped(Skipped),
    /// Unchanged since the base bundle: the writer copies its rows from there.
    Carried,
    /// The embedder failed: the run stops (a bundle with chunks missing is never written).
    Failed(String),
}

/// Shared read-only state of the workers.
struct Ctx<'a> {
    rules: &'a Rules,
    registry: &'a Registry,
    config: &'a PipelineConfig,
    embedder: &'a EmbedStage,
    summarizer: &'a dyn crate::summarize::Summarizer,
    reuse: Option<&'a incremental::Reuse>,
    scip: &'a crate::precise::ScipIndex,
}

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
    let registry = load_registry(&root, &opts.languages_dirs)?;
    let scip = load_scip(&root, opts)?;
    let backend =
        trove_embed::from_config(&opts.config.embed, opts.config.bm25.max_token_len, None)?;
    let cache_root = opts
        .config
        .embed
        .cache
        .then(trove_base::util::cache_dir)
        .flatten();
    if opts.config.embed.backend == trove_embed::EmbedBackend::Local {
        trove_embed::remember_model_dir(&backend.fingerprint(), &opts.config.embed.model_dir);
    }
    let embedder = EmbedStage::new(backend, cache_root.as_deref());
    let summarizer = crate::summarize::from_config(&opts.config.summary)?;
    let (source, repo) = git_stamp(&root);
    // The walk comes first: the work tree's untracked files are read off it, so git status has
    // only the tracked files to look at.
    let mut walk_opts = opts.walk.clone();
    walk_opts.never_walk.push(out.clone());
    walk_opts.never_walk.push(bundle::temp_beside(&out));
    walk_opts.never_walk.push(bundle::lock_path(&out));
    walk_opts.skip_nested_repos = source.commit.is_some();
    walk_opts.lazy_sizes = opts.since.is_some();
    let rules = Rules::new(&opts.config.source, &walk_opts)?;
    // git status of the tracked files runs meanwhile, in its own process, and a thread reads
    // HEAD's tree (its files; for --since, the diff from the bundle's commit).
    let base_commit = opts
        .since
        .as_ref()
        .and_then(|_| bundle::read_manifest(&out).ok())
        .and_then(|m| m.source.commit);
    let status = repo.as_ref().map(|(_, workdir)| {
        let prefix = source.subdir.as_deref().unwrap_or("");
        incremental::TrackedStatus::start(workdir, prefix, base_commit)
    });
    let walked = walk_tree(
        &root,
        &rules,
        &walk_opts,
        repo.as_ref().map(|(r, w)| (r, w.as_path())),
    )?;
    let (source, uncommitted) = git_status(source, repo, status, &out, &walked);
    let expect = incremental::Expect {
        pipeline_hash: opts.config.hash(),
        embedder_fingerprint: embedder.backend().fingerprint(),
        languages_hash: registry.fingerprint().to_string(),
        subdir: source.subdir.clone(),
        checkout: source.checkout.clone(),
        shard: opts.shard,
        scip: !scip.is_empty(),
    };
    let plan = incremental::plan(
        &root,
        &out,
        opts.since.as_ref(),
        opts.include_uncommitted,
        uncommitted,
        &expect,
    )?;
    let run = Run {
        registry: &registry,
        embedder: &embedder,
        summarizer: &*summarizer,
        scip: &scip,
        source,
        plan,
        rules,
        walked,
    };
    if run.plan.reuse.is_none() {
        let (m, s) = bundle::build_beside(&out, |tmp| build_into(opts, tmp, started, run))?;
        bundle::pack::remember_bundle(&out, &m);
        return Ok((m, s));
    }
    // An incremental run: one segment added to the bundle in place, the manifest its commit. A
    // failed run leaves only its unfinished segment folder, removed here (else by the next run).
    let built = build_into(opts, &out, started, run);
    if built.is_err() {
        let _ = std::fs::remove_dir_all(out.join(bundle::SEGMENTS).join(".building"));
    }
    let (manifest, mut summary) = built?;
    bundle::pack::remember_bundle(&out, &manifest);
    let why = compact::reason(&manifest, opts.compact, &opts.config.bundle);
    let Some(why) = why else {
        return Ok((manifest, summary));
    };
    // The run's segment is committed: a compaction that fails (a full disk) leaves the bundle as
    // it is, segments and all, and is said in the summary.
    let (manifest, c) = match compact::compact_locked(&out, manifest.clone(), &why) {
        Ok(x) => x,
        Err(e) => {
            summary.compact_error = Some(format!("compaction ({why}) failed: {e}"));
            return Ok((manifest, summary));
        }
    };
    bundle::pack::remember_bundle(&out, &manifest);
    summary.compacted = Some(c);
    summary.bundle_bytes = manifest.files.iter().map(|e| e.bytes).sum();
    summary.wall_secs = started.elapsed().as_secs_f64();
    Ok((manifest, summary))
}

/// The SCIP indexes of the run: `--scip` files, and the root's `index.scip` unless `--no-scip`
/// (or it was given).
fn load_scip(root: &Path, opts: &IndexOptions) -> Result<crate::precise::ScipIndex> {
    let mut files = opts.scip.clone();
    let default = root.join(crate::precise::DEFAULT_FILE);
    if !opts.no_scip
        && default.is_file()
        && !files
            .iter()
            .any(|f| f.canonicalize().is_ok_and(|f| f == default))
    {
        files.insert(0, default);
    }
    crate::precise::ScipIndex::load(root, &files)
}

/// The run's root, canonical, once the configuration has passed its checks.
fn checked_root(opts: &IndexOptions) -> Result<PathBuf> {
    opts.config.validate()?;
    opts.root
        .canonicalize()
        .map_err(|e| Error::io(&opts.root, e))
}

/// The built-in languages, then the repo's `.trove/languages`, then `--languages` directories.
fn load_registry(root: &Path, extra: &[PathBuf]) -> Result<Registry> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let repo_langs = root.join(".trove/languages");
    if repo_langs.is_dir() {
        dirs.push(repo_langs);
    }
    dirs.extend(extra.iter().cloned());
    Registry::load(&dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>())
}

/// The config as stamped in the manifest: without the local model folder's path (a bundle names
/// nothing of the machine that made it; the query side finds the folder by fingerprint).
fn stamped_config(cfg: &PipelineConfig, embedder: &dyn trove_embed::Embedder) -> serde_json::Value {
    let mut c = cfg.clone();
    embedder.stamp(&mut c.embed);
    c.embed.model_dir = String::new();
    serde_json::to_value(&c).unwrap_or_default()
}

/// The embedding part of a progress line (empty until something was embedded or cached).
fn embed_line(s: &EmbedStats) -> String {
    if s.texts + s.cache_hits == 0 {
        return String::new();
    }
    format!(
        ", embedded {} texts ({:.0} texts/s, {:.0} tokens/s), {} cache hits",
        s.texts,
        s.chunks_per_sec(),
        s.tokens_per_sec(),
        s.cache_hits
    )
}

/// Refuses to replace anything that is not a trove bundle (or an empty directory), and an output
/// that is the indexed tree itself or contains it.
fn check_output(out: &Path, root: &Path) -> Result<()> {
    if root.starts_with(out) {
        return Err(Error::bad_input(format!(
            "output {} would contain the indexed tree {}: choose another -o",
            out.display(),
            root.display()
        )));
    }
    bundle::check_replaceable(out)
}

/// What `run_index` settled before building: the languages, the embedder, the git stamp and
/// the reuse plan.
struct Run<'a> {
    registry: &'a Registry,
    embedder: &'a EmbedStage,
    summarizer: &'a dyn crate::summarize::Summarizer,
    scip: &'a crate::precise::ScipIndex,
    source: bundle::SourceInfo,
    plan: incremental::Plan,
    rules: Rules,
    walked: source::WalkResult,
}

fn build_into(
    opts: &IndexOptions,
    tmp: &Path,
    started: Instant,
    run: Run<'_>,
) -> Result<(Manifest, IndexSummary)> {
    let cfg = &opts.config;
    let Run {
        registry,
        embedder,
        summarizer,
        scip,
        source,
        plan,
        rules,
        mut walked,
    } = run;
    if let Some(sh) = opts.shard {
        walked.files.retain(|c| sh.holds(&c.rel));
        walked.skipped.retain(|s| sh.holds(&s.path));
    }
    let reuse = plan.reuse.as_ref();
    let ctx = Ctx {
        rules: &rules,
        registry,
        config: cfg,
        embedder,
        summarizer,
        reuse,
        scip,
    };
    // Files kept as the base bundle has them (their rows stay in its segments).
    let mut kept: FxHashSet<&str> = FxHashSet::default();
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };
    // Workers wait on a batching backend's replies: more of them keep its batches full.
    let extra = if cfg.summary.backend == crate::summarize::SummaryBackend::Llm {
        embedder.extra_workers().max(cfg.summary.concurrency * 2)
    } else {
        embedder.extra_workers()
    };
    let threads = threads + extra;
    let fail_after = hooks::fail_after();
    let total_bytes: u64 = walked.files.iter().filter_map(|c| c.bytes).sum();
    let progress = opts.progress.start(walked.files.len() as u64, total_bytes);
    let embed_progress = || embed_line(&embedder.stats());
    let dim = embedder.backend().dim();
    let mut writer = match reuse {
        Some(r) => {
            bundle::remove_garbage(tmp, &r.manifest)?;
            BundleWriter::append(tmp, dim, r.manifest.segments.clone(), Vec::new())?
        }
        None => BundleWriter::create(tmp, dim)?,
    };
    let mut read_skips: Vec<Skipped> = Vec::new();
    let mut summary = IndexSummary {
        scip: (!scip.is_empty()).then(|| ScipSummary {
            inputs: scip.inputs.clone(),
            ..ScipSummary::default()
        }),
        ..IndexSummary::default()
    };

    // Files git vouches for never go to a worker: the writer carries them (or their skip) in
    // their turn. Where a checkout conversion may hide an edit, each is stat'ed: on all cores.
    let prior: Vec<Prior<'_>> = {
        use rayon::prelude::*;
        walked.files.par_iter().map(|c| prior(reuse, c)).collect()
    };
    std::thread::scope(|s| -> Result<()> {
        let (task_tx, task_rx) = bounded::<(usize, &Candidate)>(threads * 2);
        let (res_tx, res_rx) = bounded::<(usize, FileResult)>(WINDOW_FILES);
        let (tok_tx, tok_rx) = bounded::<()>(WINDOW_FILES);
        for _ in 0..WINDOW_FILES {
            tok_tx
                .send(())
                .map_err(|_| Error::internal("token channel closed"))?;
        }
        for i in 0..threads {
            let task_rx: Receiver<(usize, &Candidate)> = task_rx.clone();
            let res_tx: Sender<(usize, FileResult)> = res_tx.clone();
            let ctx = &ctx;
            std::thread::Builder::new()
                .name(format!("trove-worker-{i}"))
                .spawn_scoped(s, move || {
                    for (i, c) in task_rx {
                        // A panic on one file (a grammar or chunker bug) must not take the run
                        // down, nor leave the in-order writer waiting for that file forever.
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            process(ctx, c)
                        }))
                        .unwrap_or_else(|_| {
                            FileResult::Skipped(Skipped {
                                path: c.rel.clone(),
                                reason: SkipReason::InternalError,
                                bytes: c.bytes.unwrap_or(0),
                            })
                        });
                        if res_tx.send((i, r)).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|e| Error::internal(format!("cannot start a worker thread: {e}")))?;
        }
        drop(res_tx);
        drop(task_rx);
        let files = &walked.files;
        let prior = &prior;
        let feeder = std::thread::Builder::new()
            .name("trove-feeder".into())
            .spawn_scoped(s, move || {
                for (i, c) in files
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| matches!(prior[*i], Prior::Worker))
                {
                    // A token per file in flight: the writer returns one per file written.
                    if tok_rx.recv().is_err() || task_tx.send((i, c)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::internal(format!("cannot start the feeder thread: {e}")))?;
        // This thread is the writer: results arrive in any order and are written in path order.
        let mut pending: HashMap<usize, FileResult> = HashMap::new();
        let mut next = 0usize;
        let mut written = 0u64;
        let mut outcome = Ok(());
        // The results, then nothing: the files at the end that no worker had.
        let results = res_rx.iter().map(Some).chain(std::iter::once(None));
        'recv: for got in results {
            if let Some((i, r)) = got {
                pending.insert(i, r);
            }
            loop {
                let (r, from_worker) = match prior.get(next) {
                    Some(Prior::Carried) => (FileResult::Carried, false),
                    Some(Prior::Skipped(k)) => (FileResult::Skipped((*k).clone()), false),
                    _ => match pending.remove(&next) {
                        Some(r) => (r, true),
                        None => break,
                    },
                };
                let bytes = files[next].bytes.unwrap_or(0);
                next += 1;
                let record = match r {
                    FileResult::Indexed(f) => Ok(Some(*f)),
                    FileResult::Skipped(sk) => {
                        read_skips.push(sk);
                        Ok(None)
                    }
                    FileResult::Failed(e) => {
                        Err(Error::internal(format!("{}: {e}", files[next - 1].rel)))
                    }
                    FileResult::Carried => {
                        let rel = &files[next - 1].rel;
                        match reuse.and_then(|r| r.files.get(rel)) {
                            Some(row) => {
                                summary.count_kept(row);
                                kept.insert(rel);
                                Ok(None)
                            }
                            None => Err(Error::internal(format!("{rel}: kept without a base row"))),
                        }
                    }
                };
                let written_ok = record.and_then(|f| match f {
                    Some(f) => {
                        summary.count(&f);
                        writer.add_file(f)
                    }
                    None => Ok(()),
                });
                if let Err(e) = written_ok {
                    outcome = Err(e);
                    break 'recv;
                }
                written += 1;
                progress.advance(bytes, &embed_progress);
                if fail_after.is_some_and(|n| written >= n) {
                    outcome = Err(Error::internal(format!(
                        "{} reached: failing on purpose after {written} files",
                        hooks::FAIL_AFTER_ENV
                    )));
                    break 'recv;
                }
                if from_worker {
                    let _ = tok_tx.send(());
                }
            }
        }
        drop(tok_tx);
        drop(res_rx);
        let _ = feeder.join();
        outcome
    })?;
    progress.finish();

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
    let (skipped_written, live_kept, tombstones) = match reuse {
        Some(r) => {
            let (tombstones, new_skips) = changes(r, &kept, &skipped);
            writer.set_tombstones(tombstones.clone());
            (new_skips, Some(r), tombstones.into_iter().collect())
        }
        None => (skipped.clone(), None, FxHashSet::default()),
    };
    if let Some(r) = live_kept
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
    let finished = writer.finish(&skipped_written, Vec::new())?;
    embedder.finish();
    let stats = embedder.stats();
    summary.embed_calls = stats.calls;
    summary.chunks_embedded = stats.chunks;
    summary.embed = stats;
    summary.summaries = summarizer.stats();
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
    let provenance = bundle::Provenance {
        source,
        base,
        pipeline: stamped_config(cfg, embedder.backend()),
        pipeline_hash: cfg.hash(),
        languages_hash: Some(registry.fingerprint().to_string()),
        shard: opts.shard,
        scip: scip.inputs.clone(),
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
    };
    let manifest = match live_kept {
        None => {
            let m = provenance.manifest(finished);
            bundle::write_manifest(tmp, &m)?;
            m
        }
        Some(r) => {
            summary.tombstones = finished.segment.tombstones;
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
                return Err(e);
            }
            bundle::install_views(tmp)?;
            m
        }
    };
    summary.bytes_written += std::fs::metadata(tmp.join(bundle::MANIFEST)).map_or(0, |m| m.len());
    summary.source_bytes = manifest.counts.source_bytes;
    summary.bundle_bytes = manifest.files.iter().map(|e| e.bytes).sum();
    summary.segments = manifest.segments.len();
    summary.wall_secs = started.elapsed().as_secs_f64();
    summary.peak_rss_bytes = trove_base::util::peak_rss_bytes();
    Ok((manifest, summary))
}

/// What is known of a walked file before anyone reads it.
enum Prior<'a> {
    /// A worker reads it.
    Worker,
    /// Its rows are carried from the base bundle ([`carried_unread`]).
    Carried,
    /// Skipped by its content in the base bundle, and unchanged since: skipped again, unread.
    Skipped(&'a Skipped),
}

/// What is known of the walked file `c` before anyone reads it.
fn prior<'r>(reuse: Option<&'r incremental::Reuse>, c: &Candidate) -> Prior<'r> {
    if carried_unread(reuse, c) {
        return Prior::Carried;
    }
    match reuse.and_then(|r| r.skipped_unread(c)) {
        Some(k) => Prior::Skipped(k),
        None => Prior::Worker,
    }
}

/// Whether git vouches that the file `c` is as the base bundle's commit had it (tracked,
/// untouched since, and the same size when the walk took sizes or a checkout conversion may
/// hide an edit from git: [`incremental::Reuse::same_size`]): its rows are carried without
/// reading it.
fn carried_unread(reuse: Option<&incremental::Reuse>, c: &Candidate) -> bool {
    reuse.is_some_and(|r| {
        r.vouched(&c.rel) && r.files.get(&c.rel).is_some_and(|b| r.same_size(c, b.bytes))
    })
}

/// Reads, classifies and chunks one file; never fails (problems become a skip reason).
fn process(ctx: &Ctx<'_>, c: &Candidate) -> FileResult {
    hooks::panic_on(&c.rel);
    let skip = |reason: SkipReason, bytes: u64| {
        FileResult::Skipped(Skipped {
            path: c.rel.clone(),
            reason,
            bytes,
        })
    };
    let base = ctx.reuse.and_then(|r| r.files.get(&c.rel));
    if carried_unread(ctx.reuse, c) {
        return FileResult::Carried;
    }
    let bytes = match source::read_capped(&c.abs, ctx.rules.max_file_bytes()) {
        Ok(Ok(b)) => b,
        Ok(Err(size)) => return skip(SkipReason::TooLarge, size),
        Err(_) => return skip(SkipReason::Unreadable, c.bytes.unwrap_or(0)),
    };
    let size = bytes.len() as u64;
    let sha256 = sha256_hex(&bytes);
    if let Some(b) = base
        && b.sha256 == sha256
        && b.bytes == size
    {
        // Same content as in the base bundle: its rows (embeddings included) are what
        // processing it again would give.
        return FileResult::Carried;
    }
    // `classify` makes a UTF-8 byte-order mark three spaces for the chunkers and extractors;
    // the stored text gets it back below, so the bundle's copy of the file is its bytes.
    let bom = bytes.starts_with(BOM.as_bytes());
    let text = match ctx.rules.classify(bytes) {
        Ok(t) => t,
        Err(reason) => return skip(reason, size),
    };
    // Secrets never reach a chunk, a term, a vector or a summary.
    let (text, redacted) = if ctx.config.source.redact_secrets {
        match extract::secrets::redact(&text) {
            (std::borrow::Cow::Owned(t), found) => (t, found),
            (std::borrow::Cow::Borrowed(_), found) => (text, found),
        }
    } else {
        (text, Vec::new())
    };
    let head = &text.as_bytes()[..text.len().min(16 * 1024)];
    let lang = ctx.registry.detect(&c.rel, head);
    let source_type = lang.map_or("doc", |l| l.source_type(&c.rel)).to_string();
    let chunked = chunk_file(&text, lang, &ctx.config.chunk);
    let max_len = ctx.config.bm25.max_token_len;
    let path_tokens = extract::tokens(&c.rel, max_len);
    let is_code = matches!(source_type.as_str(), "code" | "test");
    let no_symbols: &[trove_lang::chunk::Symbol] = &[];
    let file_symbols = if source_type != "doc" {
        &chunked.symbols[..]
    } else {
        no_symbols
    };
    let language = lang.map_or("", |l| l.def.id.as_str());
    // Code without its own docs may get a summary from the configured summarizer (`llm`).
    let written = |target: &str, kind: &str, symbol: &str, code: &str| {
        ctx.summarizer.summarize(&crate::summarize::Request {
            target,
            language,
            path: &c.rel,
            kind,
            symbol,
            code,
        })
    };
    let summary = if is_code
        && ctx.summarizer.backend() != SummaryBackend::Extractive
        && extract::summary::file_docs(&text, lang, &source_type, file_symbols).is_none()
    {
        written("file", "file", &c.rel, &text)
    } else {
        None
    }
    .or_else(|| {
        extract::summary::file_summary(&text, lang, &source_type, file_symbols, &chunked.chunks)
    });
    let summaries: Vec<Option<String>> = chunked
        .chunks
        .iter()
        .map(|ch| {
            // Refs are in source order: the chunk's are one run of them.
            let refs = &chunked.refs;
            let lo = refs.partition_point(|r| r.start_byte < ch.start_byte);
            let hi = refs.partition_point(|r| r.start_byte < ch.end_byte);
            let calls: Vec<&str> = refs[lo..hi.max(lo)]
                .iter()
                .filter(|r| r.kind == RefKind::Call)
                .map(|r| r.target.as_str())
                .collect();
            let own = is_code
                && ctx.summarizer.backend() != SummaryBackend::Extractive
                && ch.docs.is_none()
                && ch.symbol.is_some();
            own.then(|| {
                written(
                    "chunk",
                    &ch.kind,
                    ch.symbol_path.as_deref().unwrap_or_default(),
                    &ch.content,
                )
            })
            .flatten()
            .or_else(|| extract::summary::chunk_summary(ch, &calls))
        })
        .collect();
    // BM25 terms of a chunk: its content's tokens and the path's. With the inline hash embedder
    // the same pass counts the token hashes of its text (path, symbol path, content: the tokens
    // of `embed_text`, in order), so no chunk is tokenized twice.
    let fnv = trove_base::util::fnv1a64;
    let hash = ctx
        .embedder
        .inline_hash()
        .filter(|h| h.max_token_len() == max_len);
    let path_hashes: Vec<u64> = path_tokens.iter().map(|t| fnv(t.as_bytes())).collect();
    // A chunk's terms (content, then path), each content token's hash also handed to `seen`.
    let count_terms = |ch: &trove_lang::chunk::Chunk,
                       mut seen: Option<&mut FxHashMap<u64, u32>>| {
        let mut terms = extract::TermCounts::default();
        extract::tokenize(&ch.content, max_len, |t| {
            let th = fnv(t.as_bytes());
            if let Some(f) = seen.as_deref_mut() {
                *f.entry(th).or_default() += 1;
            }
            terms.add(t, th);
        });
        for (t, &th) in path_tokens.iter().zip(&path_hashes) {
            terms.add(t, th);
        }
        terms.into_terms()
    };
    let mut term_counts: Vec<Vec<(String, u32)>> = Vec::with_capacity(chunked.chunks.len());
    let vectors = if let Some(h) = hash {
        let mut features: Vec<FxHashMap<u64, u32>> = Vec::with_capacity(chunked.chunks.len());
        for ch in &chunked.chunks {
            let mut f: FxHashMap<u64, u32> = FxHashMap::default();
            for &p in &path_hashes {
                *f.entry(p).or_default() += 1;
            }
            if let Some(s) = ch.symbol_path.as_deref() {
                extract::tokenize(s, max_len, |t| {
                    *f.entry(fnv(t.as_bytes())).or_default() += 1
                });
            }
            term_counts.push(count_terms(ch, Some(&mut f)));
            features.push(f);
        }
        // The byte lengths of the texts `embed_text` would give (no summary: see below).
        let lens = chunked.chunks.iter().map(|ch| {
            c.rel.len() + ch.symbol_path.as_ref().map_or(0, |s| 1 + s.len()) + 1 + ch.content.len()
        });
        ctx.embedder
            .embed_inline(lens, || {
                features.into_iter().map(|f| h.embed_counts(f)).collect()
            })
            .map(|v| v.into_iter().map(|x| (x, Vec::new())).collect())
    } else {
        term_counts.extend(chunked.chunks.iter().map(|ch| count_terms(ch, None)));
        // A model reads the start of its input (MiniLM: 256 tokens): the chunk's one-sentence
        // summary goes there, in words such a model knows. The hash embedder's text stays as it was.
        // Such a model gets windows over the rest of a long chunk (`embed.windows`).
        let with_summary = ctx.embedder.backend().limits().is_some();
        let windows = ctx.config.embed.windows_used();
        let mut beyond = 0;
        let texts: Vec<Vec<String>> = chunked
            .chunks
            .iter()
            .zip(&summaries)
            .map(|(ch, sm)| {
                let sm = sm.as_deref().filter(|_| with_summary);
                let (texts, unread) = window_texts(
                    ctx.embedder.backend(),
                    windows,
                    &c.rel,
                    ch.symbol_path.as_deref(),
                    sm,
                    &ch.content,
                );
                beyond += u64::from(unread);
                texts
            })
            .collect();
        ctx.embedder.embed_chunks(&texts, beyond)
    };
    let vectors: Vec<(Vec<f32>, Vec<f32>)> = match vectors {
        Ok(v) => v,
        Err(e) => return FileResult::Failed(e.to_string()),
    };
    let mut chunks = Vec::with_capacity(chunked.chunks.len());
    // Chunks are in source order and never overlap: what lies between them is each one's lead,
    // so the bundle holds the file's text once.
    let mut done = 0;
    for (((ch, (embedding, windows)), summary), terms) in chunked
        .chunks
        .into_iter()
        .zip(vectors)
        .zip(summaries)
        .zip(term_counts)
    {
        let token_len = terms.iter().map(|(_, n)| n).sum();
        let chunk_id = stable_id(&[
            c.rel.as_bytes(),
            ch.start_byte.to_string().as_bytes(),
            ch.content.as_bytes(),
        ]);
        let lead = text
            .get(done..ch.start_byte)
            .unwrap_or_default()
            .to_string();
        done = done.max(ch.end_byte);
        chunks.push(ChunkRecord {
            chunk: ch,
            lead,
            chunk_id,
            origin: None,
            token_len,
            terms,
            embedding,
            windows,
            summary,
        });
    }
    // Definitions are code's: a config file's keys and a document's headings are not symbols.
    // (A build file's functions and macros — CMake's — are definitions all the same.)
    let mut scip = None;
    let (symbols, refs) = if is_code {
        let mut symbols = symbol_records(&c.rel, chunked.symbols, &chunks);
        let mut refs = resolve::in_file(
            &c.rel,
            chunked.refs,
            &symbols,
            &chunks,
            lang.map(|l| &l.def),
            &text,
        );
        if let Some((doc, enc)) = ctx.scip.document(&c.rel) {
            scip = Some(crate::precise::apply(
                doc,
                enc,
                &text,
                &mut symbols,
                &mut refs,
                &chunks,
                |s| symbol_id(&c.rel, s),
            ));
        }
        (symbols, refs)
    } else if source_type == "config" {
        let mut defs = chunked.symbols;
        defs.retain(|s| matches!(s.kind.as_str(), "function" | "macro" | "method" | "class"));
        for s in &mut defs {
            s.parent = None;
        }
        (symbol_records(&c.rel, defs, &chunks), Vec::new())
    } else {
        (Vec::new(), Vec::new())
    };
    let deps = if extract::deps::is_manifest(&c.rel) {
        extract::deps::dependencies(&c.rel, &text)
    } else {
        Vec::new()
    };
    let mut tail = text.get(done..).unwrap_or_default().to_string();
    if bom {
        restore_bom(&mut chunks, &mut tail);
    }
    FileResult::Indexed(Box::new(FileRecord {
        path: c.rel.clone(),
        language: lang.map(|l| l.def.id.clone()),
        source_type,
        bytes: size,
        // `text.lines().count()`: a line per `\n`, and the last one when it has none.
        lines: (text.bytes().filter(|&b| b == b'\n').count()
            + usize::from(!text.is_empty() && !text.ends_with('\n'))) as u64,
        sha256,
        parse_fallback: chunked.parse_fallback,
        redactions: redacted.len() as u32,
        redacted_kinds: redacted,
        summary,
        tail,
        chunks,
        symbols,
        deps,
        refs,
        scip,
    }))
}

/// The UTF-8 byte-order mark.
const BOM: &str = "\u{feff}";

/// Puts a file's byte-order mark back into the stored text that holds its first three bytes
/// (the first chunk's lead, else its content, else the file's tail), where `classify` left three
/// spaces. The mark is three bytes too, so every offset stays right; the chunk's id, terms and
/// vectors were made from the spaces, as a `--since` run makes them again.
fn restore_bom(chunks: &mut [ChunkRecord], tail: &mut String) {
    let first = match chunks.first_mut() {
        Some(c) if c.lead.is_empty() => &mut c.chunk.content,
        Some(c) => &mut c.lead,
        None => tail,
    };
    // A chunk that began inside the three spaces would split the mark between two strings: no
    // chunker starts one in whitespace, and the spaces then stay.
    if first.starts_with("   ") {
        first.replace_range(..3, BOM);
    }
}

/// The stable id of the definition `s` of the file at `rel`: (path, kind, symbol path, start).
fn symbol_id(rel: &str, s: &trove_lang::chunk::Symbol) -> i64 {
    stable_id(&[
        rel.as_bytes(),
        s.kind.as_bytes(),
        s.symbol_path.as_bytes(),
        s.start_byte.to_string().as_bytes(),
    ])
}

/// A file's definitions with their ids: stable symbol ids, the parent's id, and the chunk that
/// holds each definition's start.
fn symbol_records(
    rel: &str,
    symbols: Vec<trove_lang::chunk::Symbol>,
    chunks: &[ChunkRecord],
) -> Vec<SymbolRecord> {
    let ids: Vec<i64> = symbols.iter().map(|s| symbol_id(rel, s)).collect();
    // A definition outside its type's body (a Go method, `void Matrix::multiply()`) has the type
    // as its parent when the file defines it.
    let by_path: FxHashMap<&str, i64> = symbols
        .iter()
        .zip(&ids)
        .map(|(s, &id)| (s.symbol_path.as_str(), id))
        .collect();
    let parents: Vec<Option<i64>> = symbols
        .iter()
        .map(|s| match s.parent {
            Some(p) => Some(ids[p]),
            None => s
                .symbol_path
                .rsplit_once(" > ")
                .and_then(|(prefix, _)| by_path.get(prefix).copied()),
        })
        .collect();
    drop(by_path);
    symbols
        .into_iter()
        .zip(&ids)
        .zip(parents)
        .map(|((s, &id), parent_id)| {
            let chunk_id = chunk_at(chunks, s.start_byte);
            SymbolRecord {
                parent_id,
                symbol_id: id,
                chunk_id,
                symbol: s,
                scip_symbol: None,
            }
        })
        .collect()
}

/// What an incremental run changes in the base bundle `r`, given the files it kept and the
/// skipped rows of the whole tree now (sorted): the paths to tombstone (sorted) — every live path
/// of the base whose file was not kept (changed, deleted, now skipped) or whose skipped rows
/// changed — and the skipped rows to write (those of tombstoned paths, and of paths the base had
/// no rows for).
fn changes(
    r: &incremental::Reuse,
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
fn finish_unchanged(
    embedder: &EmbedStage,
    summarizer: &dyn crate::summarize::Summarizer,
    source: bundle::SourceInfo,
    base: Option<serde_json::Map<String, serde_json::Value>>,
    r: &incremental::Reuse,
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

/// Repo name, commit and branch of the tree at `root` (only the directory's name, never its
/// absolute path), with its repository and canonical work tree when it is in one.
fn git_stamp(root: &Path) -> (bundle::SourceInfo, Option<(git2::Repository, PathBuf)>) {
    let mut info = bundle::SourceInfo {
        repo: root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Default::default()
    };
    let Ok(repo) = git2::Repository::discover(root) else {
        return (info, None);
    };
    let Some(workdir) = repo.workdir().and_then(|w| w.canonicalize().ok()) else {
        return (info, None);
    };
    info.subdir = subdir_of(root, &workdir);
    info.checkout = Some(source::checkout_settings(&repo));
    if let Ok(head) = repo.head() {
        info.commit = head.peel_to_commit().ok().map(|c| c.id().to_string());
        if head.is_branch() {
            info.branch = head.shorthand().ok().map(str::to_string);
        }
    }
    (info, Some((repo, workdir)))
}

/// The files in the index of the repository whose work tree is `workdir` (tracked, or staged to
/// be; submodules are not files), repository-relative and sorted, read on a thread of its own so
/// that it costs the walk it runs beside nothing: [`source::admit_tracked`] needs them only when
/// the walk ignored something, and a 30,000-file index read after the walk took a one-file
/// `--since` run 20 ms.
fn read_index_paths(workdir: &Path) -> Option<std::thread::JoinHandle<Vec<String>>> {
    let workdir = workdir.to_path_buf();
    std::thread::Builder::new()
        .name("trove-git-index".into())
        .spawn(move || {
            let Ok(index) = git2::Repository::open(&workdir).and_then(|r| r.index()) else {
                return Vec::new();
            };
            let mut out: Vec<String> = index
                .iter()
                .filter(|e| e.mode != 0o160_000)
                .filter_map(|e| String::from_utf8(e.path).ok())
                .collect();
            // Sorted by byte for the binary searches: a case-insensitive repository
            // (core.ignorecase) keeps its index in another order. Conflicted paths appear once
            // per stage.
            out.sort_unstable();
            out.dedup();
            out
        })
        .ok()
}

/// Where `root` lies in the work tree `workdir` (both canonical), as a `/`-path; `None` at its top.
fn subdir_of(root: &Path, workdir: &Path) -> Option<String> {
    root.strip_prefix(workdir)
        .ok()
        .map(trove_base::util::slash_path)
        .filter(|s| !s.is_empty())
}

/// The walk of `root` ([`source::walk`]), and, in the repository `git` (with its work tree,
/// `root` and it canonical), the files it ignored that git tracks put back
/// ([`source::admit_tracked`]), the index read beside the walk.
pub(crate) fn walk_tree(
    root: &Path,
    rules: &Rules,
    opts: &source::WalkOptions,
    git: Option<(&git2::Repository, &Path)>,
) -> Result<source::WalkResult> {
    let git = git.filter(|_| rules.respects_gitignore());
    let workdir = git.map(|(_, w)| w);
    let index = workdir.and_then(read_index_paths);
    let excludes = git.and_then(|(r, _)| source::git_excludes_file(r));
    let mut walked = source::walk(root, rules, opts, excludes.as_deref())?;
    let Some(index) = index else {
        return Ok(walked);
    };
    let subdir = workdir.and_then(|w| subdir_of(root, w));
    source::admit_tracked(&mut walked, root, rules, opts, |ignored| {
        let tracked = index.join().unwrap_or_default();
        tracked_under(&tracked, subdir.as_deref(), ignored)
    });
    Ok(walked)
}

/// The files of `tracked` (the index's paths, sorted) at or under `ignored` (paths relative to
/// the root at `subdir` of the work tree; folders end with `/`), relative to that root.
fn tracked_under(tracked: &[String], subdir: Option<&str>, ignored: &[&str]) -> Vec<String> {
    let prefix = subdir.map(|s| format!("{s}/")).unwrap_or_default();
    let mut out = Vec::new();
    for p in ignored {
        let full = format!("{prefix}{p}");
        if full.ends_with('/') {
            let from = tracked.partition_point(|t| t.as_str() < full.as_str());
            out.extend(
                tracked[from..]
                    .iter()
                    .take_while(|t| t.starts_with(&full))
                    .map(|t| t[prefix.len()..].to_string()),
            );
        } else if tracked.binary_search(&full).is_ok() {
            out.push((*p).to_string());
        }
    }
    out
}

/// The dirty flag of `info` and the uncommitted paths it comes from (read once: `--since`
/// planning needs the same list): git status of the tracked files, and what the walk found that
/// git does not track. Changes to the bundle `out` itself do not count.
fn git_status(
    mut info: bundle::SourceInfo,
    repo: Option<(git2::Repository, PathBuf)>,
    status: Option<incremental::TrackedStatus>,
    out: &Path,
    walked: &source::WalkResult,
) -> (bundle::SourceInfo, Result<incremental::Worktree>) {
    let (Some((repo, workdir)), Some(status)) = (repo, status) else {
        return (info, Ok(incremental::Worktree::default()));
    };
    let uncommitted = incremental::worktree_changes(
        &repo,
        &workdir,
        info.subdir.as_deref().unwrap_or(""),
        &[out.to_path_buf()],
        walked,
        status,
    );
    info.dirty = uncommitted.as_ref().is_ok_and(|w| !w.changed.is_empty());
    (info, uncommitted)
}

/// Whether stderr is a terminal (progress bars, colours).
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}
