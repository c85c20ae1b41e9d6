//! Throughput of the CPU stages on the language fixtures: chunking per language (MB/s), the
//! tokenizer and per-chunk BM25 term counts, the hash embedder, and the bundle writer (postings
//! merge + Parquet/zstd). Run: `cargo bench --bench pipeline`. Chunking beside text-splitter's
//! `CodeSplitter` is in benches/peers (its own crate: the peers stay out of trove's build).
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use trove::chunk::chunk_file;
use trove::config::PipelineConfig;
use trove::embed::HashEmbedder;
use trove::extract::tokenize;
use trove::lang::Registry;
use trove::record::{ChunkRecord, FileRecord};
use trove::writer::BundleWriter;

#[path = "common/fixtures.rs"]
mod fixtures;

fn bench(c: &mut Criterion) {
    let reg = Registry::load(&[]).expect("registry");
    let cfg = PipelineConfig::defaults().expect("defaults");
    let files = fixtures::language_fixtures(".");
    let mut g = c.benchmark_group("chunk");
    for (rel, text) in &files {
        let lang = reg.detect(rel, text.as_bytes());
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(rel.as_str(), |b| {
            b.iter(|| black_box(chunk_file(text, lang, &cfg.chunk)))
        });
    }
    g.finish();
    let all: String = files.iter().map(|(_, t)| t.as_str()).collect();
    let mut g = c.benchmark_group("extract");
    g.throughput(Throughput::Bytes(all.len() as u64));
    g.bench_function("tokenize", |b| {
        b.iter(|| {
            let mut n = 0usize;
            tokenize(&all, 64, |t| n += t.len());
            black_box(n)
        })
    });
    // Per-chunk term counts, as the pipeline builds them for the postings.
    let chunked: Vec<_> = files
        .iter()
        .map(|(rel, text)| chunk_file(text, reg.detect(rel, text.as_bytes()), &cfg.chunk))
        .collect();
    g.bench_function("term-counts", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for f in &chunked {
                for ch in &f.chunks {
                    n += term_counts(&ch.content).len();
                }
            }
            black_box(n)
        })
    });
    let e = HashEmbedder::new(256, 64);
    g.bench_function("hash-embed", |b| b.iter(|| black_box(e.embed_one(&all))));
    g.finish();

    // The writer: 20 copies of the fixtures (postings merge, Parquet, zstd, sha256 of each table).
    let copies = 20;
    let records: Vec<FileRecord> = (0..copies)
        .flat_map(|i| {
            files
                .iter()
                .zip(&chunked)
                .map(move |((rel, text), f)| (i, rel, text, f))
        })
        .map(|(i, rel, text, f)| FileRecord {
            path: format!("copy{i:02}/{rel}"),
            language: None,
            source_type: "code".into(),
            bytes: text.len() as u64,
            lines: text.lines().count() as u64,
            sha256: format!("{i:064}"),
            parse_fallback: false,
            redactions: 0,
            redacted_kinds: Vec::new(),
            summary: None,
            tail: String::new(),
            chunks: f
                .chunks
                .iter()
                .enumerate()
                .map(|(j, ch)| {
                    let terms: Vec<(String, u32)> = term_counts(&ch.content).into_iter().collect();
                    ChunkRecord {
                        chunk: ch.clone(),
                        lead: String::new(),
                        chunk_id: (i * 1_000_003 + j as i64) * 7_919 + rel.len() as i64,
                        origin: None,
                        token_len: terms.iter().map(|t| t.1).sum(),
                        terms,
                        embedding: e.embed_one(&ch.content),
                        windows: Vec::new(),
                        summary: None,
                    }
                })
                .collect(),
            symbols: Vec::new(),
            deps: Vec::new(),
            refs: Vec::new(),
            scip: None,
        })
        .collect();
    let mut g = c.benchmark_group("write");
    g.throughput(Throughput::Bytes(all.len() as u64 * copies as u64));
    g.sample_size(10);
    g.bench_function("bundle-writer", |b| {
        b.iter_batched(
            || (tempfile::tempdir().expect("temp dir"), records.clone()),
            |(dir, records)| {
                let mut w = BundleWriter::create(dir.path(), 256).expect("writer");
                for r in records {
                    w.add_file(r).expect("add");
                }
                black_box(w.finish(&[], Vec::new()).expect("finish"));
            },
            criterion::BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn term_counts(text: &str) -> std::collections::HashMap<String, u32> {
    let mut counts = std::collections::HashMap::new();
    tokenize(text, 64, |t| *counts.entry(t.to_string()).or_insert(0) += 1);
    counts
}

criterion_group!(benches, bench);
criterion_main!(benches);
