//! Throughput of the CPU stages on the language fixtures: chunking per language (MB/s), the
//! tokenizer, and the hash embedder. Run: `cargo bench --bench pipeline`.
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;

use trove::chunk::chunk_file;
use trove::config::PipelineConfig;
use trove::embed::HashEmbedder;
use trove::extract::tokenize;
use trove::lang::Registry;

fn fixtures() -> Vec<(String, String)> {
    // Read at run time: the bench binary may come from a shared target dir built in another checkout.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf());
    let root = manifest_dir.join("fixtures/languages");
    let mut out = Vec::new();
    for lang in std::fs::read_dir(&root).expect("fixtures") {
        let lang = lang.expect("entry").path();
        for f in std::fs::read_dir(&lang).expect("lang dir") {
            let p = f.expect("file").path();
            let rel = format!(
                "{}/{}",
                lang.file_name().unwrap().to_string_lossy(),
                p.file_name().unwrap().to_string_lossy()
            );
            out.push((rel, std::fs::read_to_string(&p).expect("utf-8 fixture")));
        }
    }
    out.sort();
    out
}

fn bench(c: &mut Criterion) {
    let reg = Registry::load(&[]).expect("registry");
    let cfg = PipelineConfig::defaults().expect("defaults");
    let files = fixtures();
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
    let e = HashEmbedder::new(256, 64);
    g.bench_function("hash-embed", |b| b.iter(|| black_box(e.embed_one(&all))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
