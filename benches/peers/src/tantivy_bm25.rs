//! The BM25 peer for scripts/bench-query.sh: a tantivy index of the same chunks trove indexed.
//!
//! usage: tantivy-bm25 CHUNKS.json QUERIES INDEX_DIR
//! CHUNKS.json: a JSON array of {"chunk_id": i64, "content": str}
//! (`trove sql BUNDLE "SELECT chunk_id, content FROM chunks" --format json`).
//! Builds the index in INDEX_DIR (default tokenizer, BM25 scoring), then runs every query once to
//! warm up and once timed (top 10 by BM25, the stored chunk ids fetched), and prints one JSON line:
//! {"what": "tantivy-bm25", "queries": N, "p50_ms", "p95_ms", "build_secs", "docs"}.
use std::time::Instant;

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{STORED, Schema, TEXT, Value};
use tantivy::{Index, IndexWriter, TantivyDocument};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [chunks, queries, dir] = &args[..] else {
        eprintln!("usage: tantivy-bm25 CHUNKS.json QUERIES INDEX_DIR");
        std::process::exit(2);
    };
    let queries: Vec<String> = std::fs::read_to_string(queries)?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let mut sb = Schema::builder();
    let id = sb.add_i64_field("chunk_id", STORED);
    let content = sb.add_text_field("content", TEXT);
    let schema = sb.build();
    std::fs::create_dir_all(dir)?;
    let started = Instant::now();
    let index = Index::create_in_dir(dir, schema)?;
    let mut w: IndexWriter = index.writer(512_000_000)?;
    let mut docs = 0u64;
    let rows: Vec<serde_json::Value> =
        serde_json::from_reader(std::io::BufReader::new(std::fs::File::open(chunks)?))?;
    for v in rows {
        let mut d = TantivyDocument::default();
        d.add_i64(id, v["chunk_id"].as_i64().unwrap_or_default());
        d.add_text(content, v["content"].as_str().unwrap_or_default());
        w.add_document(d)?;
        docs += 1;
    }
    if docs == 0 {
        return Err(format!("{chunks}: no chunks").into());
    }
    w.commit()?;
    drop(w);
    let build_secs = started.elapsed().as_secs_f64();
    let reader = index.reader()?;
    let searcher = reader.searcher();
    let parser = QueryParser::for_index(&index, vec![content]);
    let run = |q: &str| -> Result<Vec<i64>, Box<dyn std::error::Error>> {
        let (query, _) = parser.parse_query_lenient(q);
        let top = searcher.search(&query, &TopDocs::with_limit(10).order_by_score())?;
        let mut ids = Vec::with_capacity(top.len());
        for (_, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr)?;
            ids.push(
                doc.get_first(id)
                    .and_then(|v| v.as_i64())
                    .unwrap_or_default(),
            );
        }
        Ok(ids)
    };
    for q in &queries {
        std::hint::black_box(run(q)?);
    }
    let mut ms = Vec::with_capacity(queries.len());
    for q in &queries {
        let t = Instant::now();
        std::hint::black_box(run(q)?);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() as f64 * p) as usize).min(ms.len() - 1)];
    println!(
        "{{\"what\": \"tantivy-bm25\", \"queries\": {}, \"p50_ms\": {:.3}, \"p95_ms\": {:.3}, \"build_secs\": {build_secs:.2}, \"docs\": {docs}}}",
        ms.len(),
        at(0.5),
        at(0.95)
    );
    Ok(())
}
