//! `trove index --parse-only`: the speed floor the full pipeline is measured against.
//!
//! The same walk, read and decode as `trove index`, then a tree-sitter parse of every file with a
//! grammar, and nothing else: no chunking, extraction, embedding or writing. What `trove index`
//! spends beyond this is overhead (scripts/bench-index.sh prints the ratio).
use rayon::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::IndexOptions;
use crate::source::Rules;
use crate::{Error, Result};
use trove_lang::lang::Registry;

/// What a parse-only run did.
#[derive(Debug, Default, serde::Serialize)]
pub struct ParseOnlySummary {
    /// Files the walk yielded.
    pub files: u64,
    /// Bytes of the files read and decoded as text.
    pub source_bytes: u64,
    /// Files parsed with a grammar.
    pub parsed: u64,
    /// Files whose parse ran past the time bound (or failed).
    pub parse_fallbacks: u64,
    /// Text files without a grammar (read and decoded only).
    pub no_grammar: u64,
    /// Files the walk skipped plus files skipped on read (binary, too large, unreadable...).
    pub skipped: u64,
    /// Wall time in seconds.
    pub wall_secs: f64,
    /// Peak resident memory of the process, when known.
    pub peak_rss_bytes: Option<u64>,
}

/// Walks, reads, decodes and parses `opts.root` as `trove index` would, writing nothing.
pub fn run_parse_only(opts: &IndexOptions) -> Result<ParseOnlySummary> {
    let started = Instant::now();
    let root = super::setup::checked_root(opts)?;
    let registry = super::setup::load_registry(&root, &opts.languages_dirs)?;
    let mut walk_opts = opts.walk.clone();
    let repo = git2::Repository::discover(&root).ok();
    walk_opts.skip_nested_repos = repo.is_some();
    let rules = Rules::new(&opts.config.source, &walk_opts)?;
    let workdir = repo
        .as_ref()
        .and_then(|r| r.workdir())
        .and_then(|w| w.canonicalize().ok());
    let walked = super::walk::walk_tree(
        &root,
        &rules,
        &walk_opts,
        repo.as_ref().zip(workdir.as_deref()),
    )?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .thread_name(|i| format!("trove-parse-{i}"))
        .build()
        .map_err(|e| Error::internal(format!("cannot start the worker threads: {e}")))?;
    let s = Counters::default();
    pool.install(|| {
        walked
            .files
            .par_iter()
            .for_each(|c| parse_one(&c.abs, &c.rel, &rules, &registry, opts, &s));
    });
    Ok(ParseOnlySummary {
        files: walked.files.len() as u64,
        source_bytes: s.bytes.into_inner(),
        parsed: s.parsed.into_inner(),
        parse_fallbacks: s.fallbacks.into_inner(),
        no_grammar: s.no_grammar.into_inner(),
        skipped: walked.skipped.len() as u64 + s.skipped.into_inner(),
        wall_secs: started.elapsed().as_secs_f64(),
        peak_rss_bytes: trove_base::util::peak_rss_bytes(),
    })
}

#[derive(Default)]
struct Counters {
    bytes: AtomicU64,
    parsed: AtomicU64,
    fallbacks: AtomicU64,
    no_grammar: AtomicU64,
    skipped: AtomicU64,
}

fn parse_one(
    abs: &Path,
    rel: &str,
    rules: &Rules,
    registry: &Registry,
    opts: &IndexOptions,
    s: &Counters,
) {
    let Ok(bytes) = std::fs::read(abs) else {
        s.skipped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let Ok(text) = rules.classify(bytes) else {
        s.skipped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    s.bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
    let head = &text.as_bytes()[..text.len().min(16 * 1024)];
    let parsed = registry
        .detect(rel, head)
        .and_then(|lang| trove_lang::chunk::parse_only(&text, lang, &opts.config.chunk));
    let counter = match parsed {
        Some(true) => &s.parsed,
        Some(false) => &s.fallbacks,
        None => &s.no_grammar,
    };
    counter.fetch_add(1, Ordering::Relaxed);
}
