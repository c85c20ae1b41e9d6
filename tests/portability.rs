//! The bundle is plain Parquet: DuckDB (a client we did not write) reads every table with plain SQL,
//! and so does pyarrow from a Python script.
use crate::util::{duck, index, manifest, pq, sample_repo};

#[test]
fn duckdb_reads_every_table_and_the_embeddings_as_arrays() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let m = manifest(&b);
    let mut tables = 0;
    for f in m["files"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        if !name.ends_with(".parquet") {
            continue;
        }
        let n = duck(&format!(
            "SELECT count(*) FROM '{}'",
            b.join(name).display()
        ));
        assert_eq!(n[0][0], f["rows"].to_string(), "{name}");
        tables += 1;
    }
    assert_eq!(tables, 9);
    // The bundle's views.sql, run as `cd BUNDLE && duckdb -init views.sql` would (relative paths
    // resolved in the bundle folder), gives every table under its own name.
    let conn = duckdb::Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "SET file_search_path = '{}';\n{}",
        b.display(),
        std::fs::read_to_string(b.join("views.sql")).unwrap()
    ))
    .unwrap();
    for t in trove::bundle::TABLES {
        let n: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap();
        let rows = m["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| {
                f["name"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("/{t}.parquet"))
            })
            .unwrap()["rows"]
            .as_i64()
            .unwrap();
        assert_eq!(n, rows, "view {t}");
    }
    let dim = m["embedder"]["dim"].as_u64().unwrap();
    let self_sim = duck(&format!(
        "SELECT min(array_cosine_similarity(embedding::FLOAT[{dim}], embedding::FLOAT[{dim}])) FROM {}",
        pq(&b, "embeddings")
    ));
    let v: f64 = self_sim[0][0].parse().unwrap();
    assert!((v - 1.0).abs() < 1e-4, "self similarity {v}");
    // Every chunk has exactly one embedding, and the join works.
    let joined = duck(&format!(
        "SELECT count(*) FROM {} c JOIN {} e USING (chunk_id)",
        pq(&b, "chunks"),
        pq(&b, "embeddings")
    ));
    assert_eq!(joined[0][0], m["counts"]["chunks"].to_string());
    // BM25 in plain SQL over terms/postings finds the definition of a rare identifier.
    let top = duck(&format!(
        "WITH q AS (SELECT term, ln(1 + ({n} - df + 0.5) / (df + 0.5)) AS idf FROM {terms} WHERE term IN ('process_payment')) \
         SELECT c.path, c.symbol_path FROM q JOIN {post} p USING (term) JOIN {chunks} c USING (chunk_ord) \
         ORDER BY q.idf * p.tf DESC, c.path LIMIT 1",
        n = m["bm25"]["n_docs"],
        terms = pq(&b, "terms"),
        post = pq(&b, "postings"),
        chunks = pq(&b, "chunks")
    ));
    assert_eq!(top[0][0], "billing/billing.py");
}

#[test]
fn pyarrow_reads_every_file() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let script = crate::util::repo().join("scripts/check_bundle.py");
    let o = std::process::Command::new("python3")
        .arg(&script)
        .arg(&b)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "scripts/check_bundle.py failed (install pyarrow: pip install pyarrow):\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok: 9 tables"));
}

/// A third party reads a bundle with the format crate alone (`trove_bundle::open`): the live
/// files, chunks, symbols and references of a bundle of two segments (one file changed, so its
/// first rows are tombstoned) are DuckDB's rows of the same tables with tombstones applied, the
/// text of a file is its text on disk, and the packed bundle reads the same.
#[test]
fn the_format_crate_reads_live_rows_without_an_engine() {
    use trove::bundle::open::OpenBundle;
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let changed = "billing/billing.py";
    let text = format!(
        "{}\n\ndef refund(invoice):\n    return -format_amount(invoice.total())\n",
        std::fs::read_to_string(repo.path().join(changed)).unwrap()
    );
    crate::util::write(repo.path(), changed, text.as_bytes());
    crate::util::commit(repo.path(), "refund");
    index(repo.path(), &b, &["--since", "auto", "--no-compact"]);
    assert_eq!(manifest(&b)["segments"].as_array().unwrap().len(), 2);

    let ob = OpenBundle::open(&b).unwrap();
    let col = |sql: &str| -> Vec<String> {
        let mut rows: Vec<String> = duck(sql).into_iter().map(|r| r.join("|")).collect();
        rows.sort();
        rows
    };
    let files: Vec<String> = ob.files().unwrap().into_iter().map(|f| f.path).collect();
    assert_eq!(
        files,
        col(&format!(
            "SELECT path FROM {} ORDER BY path",
            pq(&b, "files")
        ))
    );
    assert!(files.iter().any(|p| p == changed));
    let chunks = ob.chunks().unwrap();
    let mut ours: Vec<String> = chunks
        .iter()
        .map(|c| format!("{}|{}|{}|{}", c.chunk_id, c.path, c.start_line, c.end_line))
        .collect();
    ours.sort();
    assert_eq!(
        ours,
        col(&format!(
            "SELECT chunk_id, path, start_line, end_line FROM {}",
            pq(&b, "chunks")
        ))
    );
    assert!(chunks.windows(2).all(|w| w[0].path <= w[1].path));
    assert!(
        chunks
            .iter()
            .any(|c| c.path == changed && c.content.contains("refund"))
    );
    let mut symbols: Vec<String> = ob
        .symbols()
        .unwrap()
        .iter()
        .map(|s| format!("{}|{}|{}", s.symbol_id, s.path, s.name))
        .collect();
    symbols.sort();
    assert_eq!(
        symbols,
        col(&format!(
            "SELECT symbol_id, path, name FROM {}",
            pq(&b, "symbols")
        ))
    );
    assert!(symbols.iter().any(|s| s.ends_with("|refund")));
    let mut refs: Vec<String> = ob
        .refs()
        .unwrap()
        .iter()
        .map(|r| format!("{}|{}|{}|{}", r.path, r.line, r.kind, r.target))
        .collect();
    refs.sort();
    let stored = col(&format!(
        "SELECT path, line, kind, target FROM {}",
        pq(&b, "refs")
    ));
    assert_eq!(refs, stored);
    assert!(!refs.is_empty());
    assert_eq!(
        ob.file_text(changed).unwrap().as_deref(),
        Some(text.as_str())
    );
    assert_eq!(ob.file_text("no/such/file.py").unwrap(), None);

    let packed = out.path().join("b.trove");
    crate::util::pack(&b, &packed);
    let again = OpenBundle::open(&packed).unwrap();
    assert_eq!(again.chunks().unwrap(), chunks);
    assert_eq!(
        again.file_text(changed).unwrap().as_deref(),
        Some(text.as_str())
    );
}
