//! Warm in-process query latency over one bundle, for scripts/bench-query.sh.
//!
//! Opens BUNDLE once, runs every query of QUERIES (one per line) once to warm up, then times each
//! query once per mode (BM25, vector, hybrid; then BM25 with the hits' text) and prints p50/p95 in
//! milliseconds. Beside them, the vector floor: a plain brute-force f32 scan of every embedding
//! (read from embeddings.parquet into memory, dot product, top 10), the least any vector search
//! over the same rows can do.
//!
//! Run: `cargo run --release --example query_latency -- BUNDLE QUERIES`
//! Prints one JSON object per line: {"what": ..., "queries": N, "p50_ms": .., "p95_ms": ..}.
use std::path::Path;
use std::time::Instant;

use trove::embed::{Embedder, HashEmbedder};
use trove::query::{Bundle, Mode, QueryOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bundle, queries] = &args[..] else {
        eprintln!("usage: query_latency BUNDLE QUERIES");
        std::process::exit(2);
    };
    let queries: Vec<String> = std::fs::read_to_string(queries)
        .expect("queries file")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let b = Bundle::open(Path::new(bundle)).expect("open bundle");
    // The modes return what the tantivy peer returns (the top 10 with their rows: path, lines,
    // symbol; no text), as `trove query --format jsonl` does; `bm25+content` adds each hit's text,
    // read from chunks.parquet, as the text output's snippets need.
    for (name, mode, content) in [
        ("bm25", Mode::Bm25, false),
        ("vector", Mode::Vector, false),
        ("hybrid", Mode::Hybrid, false),
        ("bm25+content", Mode::Bm25, true),
    ] {
        let o = QueryOptions {
            content,
            ..QueryOptions::unfiltered(mode, 10)
        };
        let ms = time_each(&queries, |q| {
            std::hint::black_box(b.search(q, &o).expect("search"));
        });
        report(name, &ms);
    }

    // The floor: every embedding as f32 in memory, scanned in full per query.
    let dim = b.manifest.embedder.dim;
    let rows = load_f32(&b.dir.join(b.manifest.segments[0].file("embeddings")), dim);
    let e = HashEmbedder::new(dim, b.manifest.bm25.max_token_len);
    let ms = time_each(&queries, |q| {
        let v = e.embed(&[q]).expect("embed").pop().unwrap_or_default();
        std::hint::black_box(brute_force_top(&rows, dim, &v, 10));
    });
    report("vector-floor-f32", &ms);
}

/// Runs `f` on every query once (warm-up), then times each once; milliseconds, sorted.
fn time_each(queries: &[String], mut f: impl FnMut(&str)) -> Vec<f64> {
    queries.iter().for_each(|q| f(q));
    let mut ms: Vec<f64> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            f(q);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms
}

fn report(what: &str, ms: &[f64]) {
    let at = |p: f64| ms[((ms.len() as f64 * p) as usize).min(ms.len() - 1)];
    println!(
        "{{\"what\": \"{what}\", \"queries\": {}, \"p50_ms\": {:.3}, \"p95_ms\": {:.3}}}",
        ms.len(),
        at(0.5),
        at(0.95)
    );
}

/// Every chunk's vectors as f32: the chunks' first vectors and ids, then their further windows'
/// vectors with each one's chunk (row).
struct F32Rows {
    rows: Vec<f32>,
    ids: Vec<i64>,
    windows: Vec<f32>,
    owners: Vec<usize>,
}

fn load_f32(path: &Path, dim: usize) -> F32Rows {
    let mut r = F32Rows {
        rows: Vec::new(),
        ids: Vec::new(),
        windows: Vec::new(),
        owners: Vec::new(),
    };
    trove::query::vectors::for_each_embedding(path, dim, |id, v, windows| {
        for w in windows.chunks_exact(dim) {
            r.owners.push(r.ids.len());
            r.windows.extend_from_slice(w);
        }
        r.ids.push(id);
        r.rows.extend_from_slice(v);
    })
    .expect("embeddings.parquet");
    r
}

fn brute_force_top(r: &F32Rows, dim: usize, q: &[f32], k: usize) -> Vec<(i64, f32)> {
    let dot = |v: &[f32]| v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>();
    let mut scored: Vec<(i64, f32)> = r
        .rows
        .chunks_exact(dim)
        .zip(&r.ids)
        .map(|(v, id)| (*id, dot(v)))
        .collect();
    // A chunk scores its best window (MaxP), as the matrix does.
    for (v, &o) in r.windows.chunks_exact(dim).zip(&r.owners) {
        scored[o].1 = scored[o].1.max(dot(v));
    }
    let k = k.min(scored.len());
    if k > 0 {
        scored.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    }
    scored
}
