//! Chunking throughput, trove beside text-splitter's `CodeSplitter`, per language fixture: the same
//! text, the same tree-sitter grammar, a comparable budget (text-splitter counts characters, trove
//! non-whitespace characters: its default 1800 of them). trove also extracts symbols, docs,
//! signatures and references while it chunks; text-splitter only cuts.
//!
//! Run: `CARGO_TARGET_DIR=$HOME/.cache/trove-peers-target cargo bench --manifest-path
//! benches/peers/Cargo.toml --bench chunk`, then `scripts/bench-ratios.py
//! $HOME/.cache/trove-peers-target/criterion` prints the ratios.
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use trove::chunk::chunk_file;
use trove::config::PipelineConfig;
use trove::lang::Registry;

#[path = "../../common/fixtures.rs"]
mod fixtures;

fn bench(c: &mut Criterion) {
    let reg = Registry::load(&[]).expect("registry");
    let cfg = PipelineConfig::defaults().expect("defaults");
    let files = fixtures::language_fixtures("../..");
    // The same files, the same grammar, a comparable budget: text-splitter counts characters,
    // trove non-whitespace characters (its default 1800 of them).
    let mut g = c.benchmark_group("chunk-vs-text-splitter");
    for (rel, text) in &files {
        let Some(grammar) = reg
            .detect(rel, text.as_bytes())
            .and_then(|l| l.grammar.clone())
        else {
            continue;
        };
        let lang = reg.detect(rel, text.as_bytes());
        let Ok(splitter) = text_splitter::CodeSplitter::new(grammar, cfg.chunk.max_chars) else {
            continue;
        };
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("{rel}/trove"), |b| {
            b.iter(|| black_box(chunk_file(text, lang, &cfg.chunk)))
        });
        g.bench_function(format!("{rel}/text-splitter"), |b| {
            b.iter(|| black_box(splitter.chunks(text).count()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
