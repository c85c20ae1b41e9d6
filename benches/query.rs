//! Query latency (BM25, vector, hybrid), in process and warm, on a generated bundle of
//! `TROVE_BENCH_CHUNKS` chunks (default 100 000): synthetic Rust files of small functions whose
//! names and bodies draw from a fixed vocabulary, indexed by the real pipeline once per run.
//! Run: `cargo bench --bench query` (`TROVE_BENCH_CHUNKS=1000000` for the 1M figure).
use criterion::{Criterion, criterion_group, criterion_main};
use std::fmt::Write as _;
use std::hint::black_box;

use trove::config::PipelineConfig;
use trove::pipeline::{IndexOptions, Progress, run_index};
use trove::query::{Bundle, Mode, QueryOptions};
use trove::source::WalkOptions;

const WORDS: &[&str] = &[
    "parse", "config", "request", "session", "cookie", "retry", "backoff", "token", "buffer",
    "stream", "cache", "index", "query", "render", "widget", "payment", "invoice", "schema",
    "column", "vector", "matrix", "socket", "handler", "router", "encode", "decode", "compress",
    "shard", "merge", "commit", "branch", "manifest",
];
/// Functions per generated file.
const FUNCTIONS_PER_FILE: usize = 50;

/// A deterministic word stream (xorshift), so every run builds the same corpus.
struct Words(u64);
impl Words {
    fn next(&mut self) -> &'static str {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        WORDS[(self.0 % WORDS.len() as u64) as usize]
    }
}

fn build(chunks: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().expect("temp dir");
    let root = t.path().join("repo");
    let mut w = Words(0x9E37_79B9_7F4A_7C15);
    for f in 0..chunks.div_ceil(FUNCTIONS_PER_FILE) {
        let mut src = String::new();
        for i in 0..FUNCTIONS_PER_FILE {
            let (a, b, c) = (w.next(), w.next(), w.next());
            let _ = writeln!(
                src,
                "/// {a} the {b} with {c}.\nfn {a}_{b}_{i}(x: u32) -> u32 {{\n    let {c} = x + {i};\n    {c} * 2\n}}\n"
            );
        }
        let dir = root.join(format!("m{:03}", f / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join(format!("f{f}.rs")), src).expect("write");
    }
    let out = t.path().join("bundle");
    let opts = IndexOptions {
        root,
        out: out.clone(),
        config: PipelineConfig::defaults().expect("defaults"),
        walk: WalkOptions::default(),
        threads: 0,
        languages_dirs: Vec::new(),
        progress: Progress::Quiet,
        since: None,
        include_uncommitted: false,
        shard: None,
        compact: None,
        scip: Vec::new(),
        no_scip: false,
    };
    run_index(&opts).expect("index");
    (t, out)
}

fn bench(c: &mut Criterion) {
    let chunks: usize = std::env::var("TROVE_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let (_t, dir) = build(chunks);
    let bundle = Bundle::open(&dir).expect("open");
    let mut g = c.benchmark_group(format!("query-{chunks}"));
    g.sample_size(20);
    for (name, mode) in [
        ("bm25", Mode::Bm25),
        ("vector", Mode::Vector),
        ("hybrid", Mode::Hybrid),
    ] {
        let o = QueryOptions::unfiltered(mode, 10);
        g.bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    bundle
                        .search("retry the session cookie with backoff", &o)
                        .expect("search"),
                )
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
