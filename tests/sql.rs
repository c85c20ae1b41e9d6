//! `trove sql`: views, macros, stdin, formats; and BM25 checked against an independent computation.
use std::collections::HashMap;

use crate::util::{index, manifest, query_jsonl, sql_json, trove, write};

fn tiny_bundle() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    // Three one-chunk config files (weight 1: no doc/test down-weighting) with known term counts.
    write(&root, "a.yaml", b"alpha beta beta gamma\n");
    write(&root, "b.yaml", b"beta delta delta delta epsilon zeta\n");
    write(&root, "c.yaml", b"gamma gamma alpha\n");
    let b = t.path().join("b");
    index(&root, &b, &[]);
    (t, b)
}

#[test]
fn bm25_matches_an_independent_computation() {
    let (_t, b) = tiny_bundle();
    let m = manifest(&b);
    let (k1, bb) = (
        m["bm25"]["k1"].as_f64().unwrap(),
        m["bm25"]["b"].as_f64().unwrap(),
    );
    // Documents as the index sees them: the content tokens plus the file path's tokens.
    let docs: Vec<(&str, Vec<&str>)> = vec![
        (
            "a.yaml",
            vec!["alpha", "beta", "beta", "gamma", "a", "yaml"],
        ),
        (
            "b.yaml",
            vec![
                "beta", "delta", "delta", "delta", "epsilon", "zeta", "b", "txt",
            ],
        ),
        ("c.yaml", vec!["gamma", "gamma", "alpha", "c", "yaml"]),
    ];
    let n = docs.len() as f64;
    let avgdl = docs.iter().map(|d| d.1.len() as f64).sum::<f64>() / n;
    assert!((m["bm25"]["avgdl"].as_f64().unwrap() - avgdl).abs() < 1e-9);
    let query = ["gamma", "beta"];
    let mut expected: HashMap<&str, f64> = HashMap::new();
    for (path, toks) in &docs {
        let mut s = 0.0;
        for q in query {
            let df = docs.iter().filter(|d| d.1.contains(&q)).count() as f64;
            let tf = toks.iter().filter(|t| **t == q).count() as f64;
            if tf > 0.0 {
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                s +=
                    idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - bb + bb * toks.len() as f64 / avgdl));
            }
        }
        expected.insert(path, s);
    }
    // The query engine's BM25 arm (bm25 mode; no name/doc signals apply to these line chunks)...
    let hits = query_jsonl(&[
        b.as_os_str(),
        "gamma beta".as_ref(),
        "--mode".as_ref(),
        "bm25".as_ref(),
    ]);
    assert_eq!(hits.len(), 3);
    for h in &hits {
        let want = expected[h["path"].as_str().unwrap()];
        assert!(
            (h["score"].as_f64().unwrap() - want).abs() < 1e-9,
            "{h} vs {want}"
        );
    }
    // ... and the SQL macro agree with it.
    for r in sql_json(
        &b,
        "SELECT c.path, s.score FROM bm25_search('gamma beta', 10) s JOIN chunks c USING (chunk_id)",
    ) {
        let want = expected[r["path"].as_str().unwrap()];
        assert!(
            (r["score"].as_f64().unwrap() - want).abs() < 1e-9,
            "{r} vs {want}"
        );
    }
}

#[test]
fn views_macros_stdin_and_formats() {
    let (_t, b) = tiny_bundle();
    let rows = sql_json(
        &b,
        "SELECT (SELECT count(*) FROM files) AS f, (SELECT count(*) FROM chunks) AS c, (SELECT count(*) FROM embeddings) AS e",
    );
    assert_eq!(rows[0]["f"], 3);
    assert_eq!(rows[0]["c"], 3);
    assert_eq!(rows[0]["e"], 3);
    let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["f", "c", "e"], "columns keep their order");
    let toks = sql_json(
        &b,
        "SELECT list_sort(trove_tokens('parseHTTPRequest')) AS t",
    );
    assert_eq!(
        toks[0]["t"],
        serde_json::json!(["http", "parse", "parsehttprequest", "request"])
    );
    let out = trove()
        .arg("sql")
        .arg(&b)
        .args(["--format", "csv"])
        .write_stdin("CREATE TEMP TABLE x AS SELECT path FROM files WHERE path <> 'b.yaml';\nSELECT path FROM x ORDER BY path;")
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout),
        "path\na.yaml\nc.yaml\n"
    );
    let table = trove()
        .arg("sql")
        .arg(&b)
        .arg("SELECT path FROM files ORDER BY path")
        .assert()
        .success();
    let text = String::from_utf8_lossy(&table.get_output().stdout).into_owned();
    assert!(
        text.starts_with("path\n----") && text.contains("(3 rows)"),
        "{text}"
    );
    let sim = sql_json(
        &b,
        "SELECT count(*) AS n FROM similar_chunks((SELECT min(chunk_id) FROM chunks), 5)",
    );
    assert_eq!(sim[0]["n"], 2);
    trove()
        .arg("sql")
        .arg(&b)
        .arg("SELECT nope FROM files")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("nope"));
    // trove_tokens is the index's tokenizer for any script, not only ASCII (it split `wörld`).
    let text = "hällo wörld größeZahl ΔeltaΦunction naïve_café 数据库 x_1Y";
    let got = sql_json(&b, &format!("SELECT trove_tokens('{text}') AS t"));
    let mut got: Vec<String> = got[0]["t"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    let mut want = trove::extract::tokens(text, 64);
    got.sort();
    want.sort();
    want.dedup();
    assert_eq!(got, want);
    // A comment after the last statement is no statement of its own; only comments are no SQL.
    let t = trove()
        .arg("sql")
        .arg(&b)
        .args(["SELECT 41 + 1 AS n; -- the answer", "--format", "csv"])
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&t.get_output().stdout), "n\n42\n");
    trove()
        .arg("sql")
        .arg(&b)
        .arg("/* nothing; here */ -- at all")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no SQL given"));
}

#[test]
fn vector_search_ranks_like_the_vector_arm() {
    // Config chunks without symbols: no name, doc or test signal moves the vector arm, so its order
    // and scores are the plain cosine that `vector_search` computes in SQL (up to int8 rounding).
    let (_t, b) = tiny_bundle();
    let dim = manifest(&b)["embedder"]["dim"].as_u64().unwrap();
    // trove_embed: the bundle's query vector, unit length; NULL when no query term is in the bundle.
    let v = sql_json(
        &b,
        "SELECT len(trove_embed('gamma beta')) AS n, list_sum(list_transform(trove_embed('gamma beta'), lambda x: x * x)) AS norm, trove_embed('zzqxjv') IS NULL AS unknown",
    );
    assert_eq!(v[0]["n"], dim);
    assert!((v[0]["norm"].as_f64().unwrap() - 1.0).abs() < 1e-4, "{v:?}");
    assert_eq!(v[0]["unknown"], true);
    for q in ["gamma beta", "delta", "alpha zeta"] {
        let arm = query_jsonl(&[
            b.as_os_str(),
            q.as_ref(),
            "--mode".as_ref(),
            "vector".as_ref(),
        ]);
        let rows = sql_json(
            &b,
            &format!("SELECT path, similarity FROM vector_search('{q}', 10)"),
        );
        assert_eq!(rows.len(), arm.len(), "{q}: {rows:?} vs {arm:?}");
        for (r, h) in rows.iter().zip(&arm) {
            assert_eq!(r["path"], h["path"], "{q}: {rows:?} vs {arm:?}");
            let (s, c) = (
                r["similarity"].as_f64().unwrap(),
                h["score"].as_f64().unwrap(),
            );
            assert!((s - c).abs() < 0.02, "{q}: {s} vs {c}");
        }
    }
    let none = sql_json(&b, "SELECT count(*) AS n FROM vector_search('zzqxjv', 5)");
    assert_eq!(none[0]["n"], 0);
}

/// `trove query --mode bm25` (the cached inverted index) ranks exactly as the `bm25_search` SQL
/// macro (plain SQL over `terms`/`postings`) on 150 generated config files (no name or doc
/// signal applies to config chunks), with and without a path filter, ties included; and as the
/// plain BM25 SQL of docs/bundle-format.md run by Python's duckdb package
/// (`scripts/bm25_plain_sql.py`), an engine trove does not embed.
#[test]
fn query_bm25_ranks_as_the_sql_macro() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    let words = [
        "parse", "token", "retry", "backoff", "cache", "shard", "commit", "vector", "socket",
        "render", "widget", "invoice", "stream", "buffer", "manifest", "router",
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n) as usize
    };
    for i in 0..150 {
        let len = 2 + next(20);
        let text: Vec<&str> = (0..len).map(|_| words[next(words.len() as u64)]).collect();
        let rel = format!("d{}/f{i}.yaml", i % 3);
        write(&root, &rel, format!("{}\n", text.join(" ")).as_bytes());
    }
    let b = t.path().join("b");
    index(&root, &b, &[]);
    let full = bm25_three_ways(&b);
    // A bundle of two segments — a third of the files edited, some deleted, the old rows
    // tombstoned — ranks the same three ways over the live views, as a full build does.
    for i in (0..150).step_by(3) {
        let rel = format!("d{}/f{i}.yaml", i % 3);
        if i % 9 == 0 {
            std::fs::remove_file(root.join(rel)).unwrap();
        } else {
            let len = 2 + next(20);
            let text: Vec<&str> = (0..len).map(|_| words[next(words.len() as u64)]).collect();
            write(&root, &rel, format!("{}\n", text.join(" ")).as_bytes());
        }
    }
    index(&root, &b, &["--no-compact"]);
    let m = crate::util::manifest(&b);
    assert_eq!(m["segments"].as_array().unwrap().len(), 2);
    assert!(m["segments"][1]["tombstones"].as_u64().unwrap() > 40);
    let segmented = bm25_three_ways(&b);
    let f = t.path().join("full");
    index(&root, &f, &[]);
    assert_eq!(segmented, bm25_three_ways(&f));
    assert_ne!(segmented, full);
}

#[test]
fn bm25_search_tokenizes_and_breaks_ties_as_the_engine() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    // Four files of the same text: their scores tie exactly.
    for n in ["a", "b", "c", "d"] {
        write(&root, &format!("{n}.yaml"), b"animal: zebra crossing\n");
    }
    // Words the index splits where a regular expression mirror did not: a one-letter part beside
    // a longer one, a combining mark, a dotted capital I, a circled letter, a word past the cap.
    let long = "q".repeat(70);
    write(
        &root,
        "e.txt",
        format!("x_Word xCoordinate x1y2Z İstanbul cafe\u{301} Ⓐbc {long}_tail\n").as_bytes(),
    );
    let b = t.path().join("b");
    index(&root, &b, &[]);
    let text = format!("x_Word xCoordinate x1y2Z İstanbul cafe\u{301} Ⓐbc {long}_tail");
    let got = sql_json(&b, &format!("SELECT trove_tokens('{text}') AS t"));
    let got: Vec<String> = got[0]["t"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    let mut want = Vec::new();
    for t in trove::extract::tokens(&text, 64) {
        if !want.contains(&t) {
            want.push(t);
        }
    }
    assert_eq!(got, want);
    assert!(got.contains(&"coordinate".to_string()), "{got:?}");
    // Every word of the file finds it through the macro, as through the engine.
    for w in ["word", "coordinate", "x1y2", "İstanbul", "cafe\u{301}"] {
        let n = sql_json(
            &b,
            &format!("SELECT count(*) AS n FROM bm25_search('{w}', 10) WHERE path = 'e.txt'"),
        );
        assert_eq!(n[0]["n"], 1, "{w}");
        let hits = query_jsonl(&[
            b.as_os_str(),
            w.as_ref(),
            "--mode".as_ref(),
            "bm25".as_ref(),
        ]);
        assert_eq!(hits[0]["path"], "e.txt", "{w}");
    }
    // Tied scores: the engine's order is the macro's (by chunk id), and the first hit does not
    // depend on -k.
    let sql = sql_json(&b, "SELECT path FROM bm25_search('zebra', 10)");
    let sql: Vec<&str> = sql.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(sql.len(), 4);
    for k in ["1", "2", "4"] {
        let hits = query_jsonl(&[
            b.as_os_str(),
            "zebra".as_ref(),
            "--mode".as_ref(),
            "bm25".as_ref(),
            "-k".as_ref(),
            k.as_ref(),
        ]);
        let paths: Vec<&str> = hits.iter().map(|h| h["path"].as_str().unwrap()).collect();
        assert_eq!(paths, sql[..paths.len()], "-k {k}");
    }
}

/// `trove query --mode bm25` hits (rounded score, path, line) of four queries on bundle `b`,
/// checked equal to the `bm25_search` SQL macro's and to docs/bundle-format.md's plain SQL run by
/// Python's duckdb over `views.sql`.
fn bm25_three_ways(b: &std::path::Path) -> Vec<Vec<(String, String, i64)>> {
    let rounded = |v: &serde_json::Value| format!("{:.9}", v.as_f64().unwrap());
    let mut out = Vec::new();
    for (q, glob) in [
        ("retry backoff", None),
        ("cache", None),
        ("vector socket widget", None),
        ("parse token", Some("d1/*")),
    ] {
        let mut args: Vec<&str> = vec![q, "--mode", "bm25", "-k", "200"];
        let filter = match glob {
            Some(g) => {
                args.extend(["--path", g]);
                format!("WHERE c.path GLOB '{g}'")
            }
            None => String::new(),
        };
        let mut all: Vec<&std::ffi::OsStr> = vec![b.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        let hits = query_jsonl(&all);
        let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{q}: {scores:?}");
        let native: Vec<(String, String, i64)> = hits
            .iter()
            .map(|h| {
                let path = h["path"].as_str().unwrap().to_string();
                (
                    rounded(&h["score"]),
                    path,
                    h["start_line"].as_i64().unwrap(),
                )
            })
            .collect();
        let sql: Vec<(String, String, i64)> = sql_json(
            b,
            &format!(
                "SELECT c.path, c.start_line, s.score FROM bm25_search('{q}', 100000) s \
                 JOIN chunks c USING (chunk_id) {filter} ORDER BY s.score DESC, s.chunk_id"
            ),
        )
        .iter()
        .map(|r| {
            let path = r["path"].as_str().unwrap().to_string();
            (
                rounded(&r["score"]),
                path,
                r["start_line"].as_i64().unwrap(),
            )
        })
        .collect();
        assert!(sql.len() > 10, "{q}: {} matches", sql.len());
        assert_eq!(native.len(), sql.len(), "{q}");
        // Equal scores within 1e-9 position by position; ties (equal rounded scores) compared as
        // sets, since two engines may sum one chunk's terms in another order.
        let grouped = |v: &[(String, String, i64)]| {
            let mut v = v.to_vec();
            v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            v
        };
        assert_eq!(grouped(&native), grouped(&sql), "{q}");
        if glob.is_none() {
            let o = std::process::Command::new("python3")
                .arg(crate::util::repo().join("scripts/bm25_plain_sql.py"))
                .arg(b)
                .arg("100000")
                .args(q.split(' '))
                .output()
                .expect("python3 runs");
            assert!(
                o.status.success(),
                "scripts/bm25_plain_sql.py (needs the duckdb package: scripts/test.sh installs it):\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            let plain: Vec<(String, String, i64)> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(|l| {
                    let r: serde_json::Value = serde_json::from_str(l).unwrap();
                    let path = r["path"].as_str().unwrap().to_string();
                    (
                        rounded(&r["score"]),
                        path,
                        r["start_line"].as_i64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(grouped(&native), grouped(&plain), "{q}: python duckdb");
        }
        out.push(grouped(&native));
    }
    out
}

#[test]
fn every_duckdb_type_prints_as_its_value() {
    let (t, b) = tiny_bundle();
    let run = |args: &[&str]| {
        let o = trove().arg("sql").arg(&b).args(args).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    // An untyped NULL column, decimals, dates, intervals, nested values, NaN and a HUGEINT sum.
    let sql = "SELECT NULL AS nothing, 0.5 AS half, DATE '2024-01-02' AS d, \
               INTERVAL 1 DAY AS iv, {'k': 1} AS st, [1, NULL] AS l, MAP {'a': 2} AS m, \
               'nan'::DOUBLE AS x, ''::VARCHAR AS e, sum(bytes) AS total, \
               TIMESTAMPTZ '2024-01-02 03:04:05+00' AS tz, \
               [TIMESTAMPTZ '2024-01-02 05:04:05+02', NULL] AS tzl, \
               {'at': TIMESTAMPTZ '2024-01-02 03:04:05.5+00'} AS tzs FROM files";
    let (code, out, err) = run(&[sql, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &rows[0];
    // The table is for a terminal: a value's escape sequence prints as text, not as a command.
    let (code, out, err) = run(&["SELECT chr(27) || '[2J' || chr(7) AS v"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("\\x1b[2J\\x07"), "{out:?}");
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(r["nothing"].is_null(), "{r}");
    assert_eq!(r["half"], 0.5, "{r}");
    assert_eq!(r["d"], "2024-01-02", "{r}");
    assert_eq!(r["iv"], "1 days", "{r}");
    assert_eq!(r["st"], serde_json::json!({"k": 1}), "{r}");
    assert_eq!(r["l"], serde_json::json!([1, null]), "{r}");
    assert_eq!(r["m"], serde_json::json!({"a": 2}), "{r}");
    assert_eq!(r["x"], "NaN", "{r}");
    assert_eq!(r["e"], "", "{r}");
    assert_eq!(r["tz"], "2024-01-02T03:04:05Z", "{r}");
    assert_eq!(
        r["tzl"],
        serde_json::json!(["2024-01-02T03:04:05Z", null]),
        "{r}"
    );
    assert_eq!(
        r["tzs"],
        serde_json::json!({"at": "2024-01-02T03:04:05.500Z"}),
        "{r}"
    );
    assert!(r["total"].as_i64().is_some_and(|n| n > 0), "{r}");
    let (code, out, _) = run(&[sql]);
    assert_eq!(code, Some(0));
    let row = out.lines().nth(2).unwrap();
    for v in [
        "NULL",
        "0.5",
        "2024-01-02",
        "1 days",
        "{k: 1}",
        "[1, NULL]",
        "NaN",
        "[2024-01-02T03:04:05Z, NULL]",
        "{at: 2024-01-02T03:04:05.500Z}",
    ] {
        assert!(row.contains(v), "{v} in {row}");
    }
    assert!(
        !out.contains("Decimal") && !out.contains("Date32") && !out.contains("value)"),
        "{out}"
    );
    // CSV: NULL is an empty field, the empty string a quoted one.
    let (_, out, _) = run(&["SELECT NULL AS a, '' AS b, 'x,y' AS c", "--format", "csv"]);
    assert_eq!(out, "a,b,c\n,\"\",\"x,y\"\n");
    // A join's two `path` columns are both kept.
    let (_, out, _) = run(&[
        "SELECT f.path, g.path FROM files f, files g WHERE f.path = 'a.yaml' AND g.path = 'b.yaml'",
        "--format",
        "json",
    ]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        rows[0],
        serde_json::json!({"path": "a.yaml", "path_1": "b.yaml"})
    );
    // An error is said once, without DuckDB's "Unknown error code" tail.
    for script in ["SELEC 1", "SELEC 1; SELECT 2"] {
        let (code, _, err) = run(&[script]);
        assert_eq!(code, Some(2));
        assert_eq!(err.matches("syntax error").count(), 1, "{err}");
        assert!(!err.contains("Unknown error code"), "{err}");
    }
    // COPY into the bundle is refused, before anything runs; COPY elsewhere works.
    let seg = std::fs::read_dir(b.join("segments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let target = seg.join("files.parquet");
    let before = std::fs::read(&target).unwrap();
    let (code, _, err) = run(&[&format!(
        "CREATE TABLE x AS SELECT 1 AS n; COPY (SELECT 1 AS x) TO '{}' (FORMAT parquet)",
        target.display()
    )]);
    assert_eq!(code, Some(2));
    assert!(err.contains("refusing to write"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    // Nor by another road: after a comment, to a path computed at run time, into a database
    // attached inside it; and no extension is downloaded.
    let p = target.display().to_string();
    for (sql, says) in [
        (
            format!("/* c */ -- d\n(COPY (SELECT 1 AS x) TO '{p}' (FORMAT parquet))"),
            "refusing to write",
        ),
        (
            format!(
                "SET VARIABLE p = '{p}'; COPY (SELECT 1 AS x) TO (getvariable('p')) (FORMAT parquet)"
            ),
            "refusing COPY to a path that is not written as a string",
        ),
        (
            format!(
                "ATTACH '{}' AS d; CREATE TABLE d.t AS SELECT 1",
                seg.join("x.duckdb").display()
            ),
            "refusing to write",
        ),
        (
            "ATTACH getvariable('p') AS d".to_string(),
            "refusing ATTACH",
        ),
        (
            format!("EXPORT DATABASE memory TO '{}'", seg.join("x").display()),
            "refusing to write",
        ),
        (
            format!("PREPARE w AS COPY (SELECT 1 AS x) TO '{p}' (FORMAT parquet); EXECUTE w"),
            "refusing to write",
        ),
        (
            format!("EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{p}' (FORMAT parquet)"),
            "refusing to write",
        ),
        // DuckDB opens a file: URI's path, and ~ as the home directory.
        (
            format!("COPY (SELECT 1 AS x) TO 'file://{p}' (FORMAT parquet)"),
            "refusing to write",
        ),
        (
            format!("COPY (SELECT 1 AS x) TO 'file:///{p}' (FORMAT parquet)"),
            "refusing to write",
        ),
        (
            format!("COPY (SELECT 1 AS x) TO 'file://localhost{p}' (FORMAT parquet)"),
            "refusing to write",
        ),
        (
            format!("ATTACH 'file:{}' AS d", seg.join("x.duckdb").display()),
            "refusing to write",
        ),
        (
            format!(
                "EXPORT DATABASE memory TO 'file://{}'",
                seg.join("x").display()
            ),
            "refusing to write",
        ),
        // Settings that name a file DuckDB writes; `~` after the script moved home; a `..`
        // after a folder an earlier statement makes.
        (format!("SET log_query_path = '{p}'"), "refusing to write"),
        (
            format!("SET GLOBAL profiling_output TO 'file://{p}'"),
            "refusing to write",
        ),
        (
            "SET temp_directory = getvariable('p')".to_string(),
            "refusing a path setting",
        ),
        (
            format!(
                "SET home_directory = '{}'; COPY (SELECT 1 AS x) TO '~/manifest.json'",
                b.display()
            ),
            "known only when it runs",
        ),
        (
            format!(
                "EXPORT DATABASE '{0}/made'; COPY (SELECT 1 AS x) TO '{0}/made/../{1}' \
                 (FORMAT parquet)",
                t.path().display(),
                target.strip_prefix(t.path()).unwrap().display()
            ),
            "refusing to write",
        ),
        ("FORCE INSTALL httpfs".to_string(), "refusing INSTALL"),
        ("install httpfs".to_string(), "refusing INSTALL"),
    ] {
        let (code, _, err) = run(&[&sql]);
        assert_eq!(code, Some(2), "{sql}: {err}");
        assert!(err.contains(says), "{sql}: {err}");
    }
    // `~` is the home directory to DuckDB.
    let home = t.path().canonicalize().unwrap();
    let under_home = target.canonicalize().unwrap();
    let o = trove()
        .arg("sql")
        .arg(&b)
        .arg(format!(
            "COPY (SELECT 1 AS x) TO '~/{}' (FORMAT parquet)",
            under_home.strip_prefix(&home).unwrap().display()
        ))
        .env("HOME", &home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("refusing to write"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert!(!seg.join("x.duckdb").exists());
    // A table named like the keyword is no computed path; a COPY FROM reads; a database attached
    // elsewhere is the user's: they work.
    let rows = t.path().join("rows.csv");
    std::fs::write(&rows, "n\n1\n2\n").unwrap();
    let (code, out, err) = run(&[&format!(
        "CREATE TABLE total (n INT); COPY total FROM '{}' (HEADER); SELECT sum(n) AS s FROM total",
        rows.display()
    )]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains('3'), "{out}");
    let other = t.path().join("other.duckdb");
    let (code, out, err) = run(&[&format!(
        "ATTACH '{}' AS o; CREATE TABLE o.t AS SELECT 'kept' AS n; SELECT n FROM o.t",
        other.display()
    )]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("kept") && other.exists(), "{out}");
    let out_csv = t.path().join("out.csv");
    let (code, _, err) = run(&[&format!(
        "COPY (SELECT path FROM files ORDER BY path) TO '{}'",
        out_csv.display()
    )]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        std::fs::read_to_string(&out_csv)
            .unwrap()
            .contains("a.yaml")
    );
    trove().arg("verify").arg(&b).assert().success();
}
