//! `trove query` end to end: ranking on identifier queries, filters, formats, exit codes.
use std::path::Path;

use crate::util::{index, query_jsonl, sample_repo, sql_json, trove, write};

fn jsonl(bundle: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all: Vec<&std::ffi::OsStr> = vec![bundle.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    query_jsonl(&all)
}

fn bundle() -> (tempfile::TempDir, tempfile::TempDir, std::path::PathBuf) {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    (repo, out, b)
}

#[test]
fn identifier_queries_rank_their_definition_first_in_every_mode() {
    let (_r, _o, b) = bundle();
    let hits = jsonl(&b, &["processPayment", "--mode", "bm25"]);
    assert_eq!(hits[0]["path"], "web/src/users.ts", "{hits:#?}");
    assert_eq!(hits[0]["symbol_path"], "UserService");
    // Hybrid on this 42-chunk toy: a one-line doc section naming `process_payment` and a hash
    // collision in the vector arm may edge ahead; tuning is done on the dev eval, not here.
    let hits = jsonl(&b, &["processPayment", "-k", "3"]);
    assert!(
        hits.iter().any(|h| h["symbol_path"] == "UserService"),
        "{hits:#?}"
    );
    for mode in ["bm25", "hybrid"] {
        let hits = jsonl(&b, &["buffer_append NewServer", "--mode", mode, "-k", "3"]);
        assert_eq!(hits[0]["symbol"], "NewServer", "{mode}");
    }
    let hits = jsonl(
        &b,
        &[
            "format_amount thousands separated",
            "--mode",
            "vector",
            "-k",
            "1",
        ],
    );
    assert_eq!(hits[0]["symbol_path"], "format_amount");
}

#[test]
fn json_fields_and_types() {
    let (_r, _o, b) = bundle();
    let out = trove()
        .arg("query")
        .arg(&b)
        .args(["invoice tax", "--format", "json", "--content", "-k", "3"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let hits = v.as_array().unwrap();
    assert_eq!(hits.len(), 3);
    for (i, h) in hits.iter().enumerate() {
        assert_eq!(h["rank"], i + 1);
        assert!(h["score"].is_f64());
        assert!(h["start_line"].is_i64() && h["end_line"].as_i64() >= h["start_line"].as_i64());
        for k in ["path", "kind", "source_type", "content"] {
            assert!(h[k].is_string(), "{k} in {h}");
        }
        for k in ["symbol", "symbol_path", "language"] {
            assert!(h[k].is_string() || h[k].is_null(), "{k} in {h}");
        }
    }
    let no_content = jsonl(&b, &["invoice tax"]);
    assert!(no_content[0].get("content").is_none());
    ids_round_trip(&b, &no_content);
    // Options between the bundle and the text, as `symbols` takes them; `--` before a text that
    // starts with a dash; a bundle alone is bad input.
    let out = trove()
        .arg("query")
        .arg(&b)
        .args(["-k", "2", "--format", "jsonl", "invoice tax"])
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout)
            .lines()
            .count(),
        2
    );
    trove()
        .arg("query")
        .arg(&b)
        .args(["-k", "1", "--", "-invoice"])
        .assert()
        .success();
    trove()
        .arg("query")
        .arg(&b)
        .arg("-k")
        .arg("1")
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "give a bundle and the query text",
        ));
}

/// Ids are 64-bit hashes, nearly all beyond 2^53, where JavaScript, jq 1.6 and any parser that
/// reads numbers as doubles round them to another id: the JSON has them as strings of their
/// digits, and SQL takes such a string back (`similar_chunks`, `chunk_id = '…'`, `symbol_id`).
fn ids_round_trip(b: &Path, hits: &[serde_json::Value]) {
    let ids: Vec<&str> = hits
        .iter()
        .map(|h| h["chunk_id"].as_str().unwrap_or_else(|| panic!("{h}")))
        .collect();
    let big = ids
        .iter()
        .find(|id| id.parse::<i64>().unwrap().unsigned_abs() > 1 << 53)
        .expect("a hash id beyond 2^53");
    let rows = sql_json(
        b,
        &format!("SELECT path, start_line FROM chunks WHERE chunk_id = '{big}'"),
    );
    let hit = hits.iter().find(|h| h["chunk_id"] == *big).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (&rows[0]["path"], &rows[0]["start_line"]),
        (&hit["path"], &hit["start_line"])
    );
    let near = sql_json(
        b,
        &format!("SELECT chunk_id::VARCHAR AS id FROM similar_chunks('{big}', 3)"),
    );
    assert!(
        !near.is_empty() && near.iter().all(|r| r["id"] != *big),
        "{near:?}"
    );
    // And a definition's id from `trove symbols --format json`.
    let out = trove()
        .arg("symbols")
        .arg(b)
        .args(["format_amount", "--format", "json"])
        .assert()
        .success();
    let defs: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let id = defs[0]["symbol_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{defs}"));
    let rows = sql_json(
        b,
        &format!("SELECT name FROM symbols WHERE symbol_id = '{id}'"),
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["name"], "format_amount");
}

#[test]
fn filters_exclude_what_they_should() {
    let (_r, _o, b) = bundle();
    let all = |args: &[&str]| {
        jsonl(
            &b,
            &[&["payment invoice server", "-k", "50"], args].concat(),
        )
    };
    assert!(all(&["--lang", "go"]).iter().all(|h| h["language"] == "go"));
    assert!(
        all(&["--lang", "go", "--lang", "python"])
            .iter()
            .all(|h| h["language"] == "go" || h["language"] == "python")
    );
    let tests = all(&["--type", "test"]);
    assert!(!tests.is_empty() && tests.iter().all(|h| h["source_type"] == "test"));
    assert!(
        all(&["--path", "web/*"])
            .iter()
            .all(|h| h["path"].as_str().unwrap().starts_with("web/"))
    );
    let methods = all(&["--kind", "method"]);
    assert!(!methods.is_empty() && methods.iter().all(|h| h["kind"] == "method"));
    assert!(
        all(&["--type", "code"])
            .iter()
            .all(|h| h["source_type"] == "code")
    );
}

#[test]
fn exit_codes_and_clear_errors() {
    let (_r, o, b) = bundle();
    trove().arg("query").arg(&b).arg("zzqxjv").assert().code(1);
    trove().arg("query").arg(&b).arg("payment").assert().code(0);
    trove()
        .arg("query")
        .arg(o.path().join("missing"))
        .arg("x")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("bundle"));
    trove()
        .arg("query")
        .arg(&b)
        .args(["x", "--type", "bogus"])
        .assert()
        .code(2);
    // Bad filter input is exit 2 with a reason, never an empty result (exit 1).
    for (args, says) in [
        (&["payment", "--path", "["][..], "never closed"),
        (&["payment", "--path", "**/*.{py"][..], "never closed"),
        (&["payment", "--path", "a}"][..], "has no '{'"),
        (&["payment", "--path", "[z-a]*"][..], "reversed"),
        (&["payment", "--path", "billing\\"][..], "ends in an escape"),
        (&["payment", "--path", ""][..], "empty"),
        (
            &["payment", "--path", "/web"][..],
            "relative to the repository root",
        ),
        (&["payment", "--lang", "pyhton"][..], "unknown language"),
        (&["payment", "--kind", "functoin"][..], "no chunk of kind"),
        (&["payment", "-k", "0"][..], "not in 1.."),
        (&["payment", "-k", "18446744073709551615"][..], "not in 1.."),
    ] {
        trove()
            .arg("query")
            .arg(&b)
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    // Good ones still filter: a class of characters, a language trove knows.
    trove()
        .arg("query")
        .arg(&b)
        .args(["payment", "--path", "[a-z]*", "--lang", "python"])
        .assert()
        .code(0);
    // `{a,b}` alternatives, as `trove index --include` has them: either, and nothing else.
    let paths = |glob: &str| -> std::collections::BTreeSet<String> {
        let out = trove()
            .arg("query")
            .arg(&b)
            .args(["payment", "-k", "50", "--format", "jsonl", "--path", glob])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["path"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let either = paths("**/*.{py,ts}");
    assert!(either.iter().any(|p| p.ends_with(".py")), "{either:?}");
    assert!(either.iter().any(|p| p.ends_with(".ts")), "{either:?}");
    assert!(
        either
            .iter()
            .all(|p| p.ends_with(".py") || p.ends_with(".ts")),
        "{either:?}"
    );
    let mut both = paths("**/*.py");
    both.extend(paths("**/*.ts"));
    assert_eq!(either, both);
    // A plain path is that folder (or file): what `folder/*` matches, however it is written.
    let folder = paths("web/*");
    assert!(!folder.is_empty());
    for plain in ["web", "web/", "./web"] {
        assert_eq!(paths(plain), folder, "{plain}");
    }
    let file = folder.iter().next().unwrap().clone();
    assert_eq!(paths(&file), [file.clone()].into());
    // A bundle named twice is searched once (its hits came twice).
    let once = query_jsonl(&[b.as_os_str(), "payment".as_ref()]);
    let dir = b.parent().unwrap();
    let twice = query_jsonl(&[
        b.as_os_str(),
        dir.join(".").join(b.file_name().unwrap()).as_os_str(),
        "payment".as_ref(),
    ]);
    assert_eq!(once, twice);
    // A -k past every hit is every hit, not an allocation of k rows (it aborted once).
    trove()
        .arg("query")
        .arg(&b)
        .args(["payment", "-k", "9223372036854775807"])
        .assert()
        .code(0);
    // A truncated Parquet file, a missing manifest, a newer format: exit 2 with a reason, no panic.
    let copy = |name: &str| {
        let d = o.path().join(name);
        crate::util::copy_dir(&b, &d);
        d
    };
    let t = copy("truncated");
    let p = crate::util::table_file(&t, "chunks");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let a = trove().arg("query").arg(&t).arg("payment").assert().code(2);
    assert!(!String::from_utf8_lossy(&a.get_output().stderr).contains("panicked"));
    let m = copy("nomanifest");
    std::fs::remove_file(m.join("manifest.json")).unwrap();
    trove()
        .arg("query")
        .arg(&m)
        .arg("payment")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("manifest.json"));
    let n = copy("newer");
    let text = std::fs::read_to_string(n.join("manifest.json"))
        .unwrap()
        .replace(
            &format!("\"format_major\": {}", trove::bundle::FORMAT_MAJOR),
            "\"format_major\": 99",
        );
    write(&n, "manifest.json", text.as_bytes());
    trove()
        .arg("query")
        .arg(&n)
        .arg("payment")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("read it with a newer trove"));
    // An older format (postings by chunk id, before chunk_ord): refused, with what to do.
    let o = copy("older");
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o.join("manifest.json")).unwrap()).unwrap();
    m.as_object_mut().unwrap().remove("format_major");
    m["format_version"] = 3.into();
    write(&o, "manifest.json", m.to_string().as_bytes());
    for cmd in ["query", "sql"] {
        let arg = if cmd == "query" {
            "payment"
        } else {
            "SELECT 1"
        };
        trove().arg(cmd).arg(&o).arg(arg).assert().code(2).stderr(
            predicates::prelude::PredicateBooleanExt::and(
                predicates::str::contains("format_version 3"),
                predicates::str::contains("re-index"),
            ),
        );
    }
}

#[test]
fn several_bundles_name_their_results() {
    let (_r, o, b) = bundle();
    let b2 = o.path().join("b2");
    crate::util::copy_dir(&b, &b2);
    let hits = query_jsonl(&[
        b.as_os_str(),
        b2.as_os_str(),
        "processPayment".as_ref(),
        "-k".as_ref(),
        "4".as_ref(),
    ]);
    let bundles: std::collections::BTreeSet<&str> =
        hits.iter().map(|h| h["bundle"].as_str().unwrap()).collect();
    assert_eq!(bundles.len(), 2, "{hits:#?}");
}

#[test]
fn a_damaged_or_unwritable_cache_changes_nothing() {
    let (_r, o, b) = bundle();
    let cache = o.path().join("cache");
    let run = |dir: &Path| {
        let out = trove()
            .env("TROVE_CACHE_DIR", dir)
            .arg("query")
            .arg(&b)
            // Both arms run (the hash embedder's default weight leaves the vector arm out).
            .args([
                "payment total",
                "--format",
                "jsonl",
                "-k",
                "5",
                "--vector-weight",
                "1",
            ])
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let first = run(&cache);
    assert!(!first.is_empty());
    // The cache files (not the prune stamp, `.pruned`).
    let mut files: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        ["vectors-", "rows-", "inverted-"]
            .iter()
            .all(|k| names.iter().any(|n| n.starts_with(k))),
        "{names:?}"
    );
    let sizes: Vec<u64> = files.iter().map(|p| p.metadata().unwrap().len()).collect();
    // Garbage in one file, a truncated other: both are rebuilt, and the answer is the same.
    for (i, f) in files.iter().enumerate() {
        let bytes = std::fs::read(f).unwrap();
        if i % 2 == 0 {
            std::fs::write(f, b"not a cache file").unwrap();
        } else {
            std::fs::write(f, &bytes[..bytes.len() / 3]).unwrap();
        }
    }
    assert_eq!(run(&cache), first);
    let rebuilt: Vec<u64> = files.iter().map(|p| p.metadata().unwrap().len()).collect();
    assert_eq!(rebuilt, sizes);
    // A cache that cannot be written (its directory is a file) only costs speed.
    let blocked = o.path().join("not-a-dir");
    std::fs::write(&blocked, b"x").unwrap();
    assert_eq!(run(&blocked), first);
}

#[test]
fn text_output_highlights_code_only_when_colour_is_on() {
    let (_r, _o, b) = bundle();
    let text = |extra: &[&str], no_color: bool| {
        let mut c = trove();
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = c
            .arg("query")
            .arg(&b)
            .args(["process_payment", "-k", "1", "--lang", "python"])
            .args(extra)
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let plain = text(&[], false); // not a terminal: no colour
    assert!(
        plain.starts_with("billing/billing.py:") && plain.contains("class PaymentService"),
        "{plain}"
    );
    assert!(!plain.contains('\x1b'), "{plain}");
    assert!(!text(&["--color", "never"], false).contains('\x1b'));
    assert!(!text(&["--color", "auto"], true).contains('\x1b'));
    let painted = text(&["--color", "always"], false);
    // By Python's highlights.scm: `class` is a keyword (magenta), the docstring a string (green).
    assert!(painted.contains("\x1b[35mclass\x1b[0m"), "{painted:?}");
    assert!(
        painted.contains("\x1b[32m\"\"\"Charges invoices"),
        "{painted:?}"
    );
    let stripped = regex::Regex::new("\x1b\\[[0-9;]*m")
        .unwrap()
        .replace_all(&painted, "");
    assert_eq!(stripped, plain);
}

/// A Python file with a function the chunker splits in pieces (small enough to be shown whole) and
/// one too long to be shown whole; each mentions its own rare words in its last lines only.
fn split_functions_repo() -> (tempfile::TempDir, String) {
    let mut src = String::from("import ledger\n\n\n");
    let mut body = |name: &str, lines: usize, tail: &str| {
        // A decorator: the first piece starts above the line the definition's own range does.
        src.push_str(&format!("@ledger.audited\ndef {name}(book, rate):\n"));
        src.push_str("    \"\"\"Walks the book once, posting each entry at the rate.\"\"\"\n");
        for i in 0..lines {
            src.push_str(&format!(
                "    total_{i} = ledger.amount(book, {i}) * rate + ledger.fee({i})  # step {i}\n"
            ));
        }
        src.push_str(&format!("    return ledger.{tail}(book)\n\n\n"));
    };
    body("settle_ledger", 60, "quarantine_overdraft");
    body("replay_journal", 160, "reconcile_backlog");
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), "books/settle.py", src.as_bytes());
    (repo, src)
}

#[test]
fn a_piece_of_a_split_function_stands_for_the_whole_function() {
    let (repo, src) = split_functions_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let lines: Vec<&str> = src.lines().collect();
    let line_of = |s: &str| lines.iter().position(|l| l.contains(s)).unwrap() as i64 + 1;
    let (start, end) = (
        line_of("def settle_ledger") - 1,
        line_of("quarantine_overdraft"),
    );
    // The function is cut in pieces: no chunk holds all of it.
    let chunks = sql_json(
        &b,
        &format!(
            "SELECT start_line, end_line FROM chunks WHERE start_line >= {start} AND end_line <= {end}"
        ),
    );
    assert!(chunks.len() >= 2, "{chunks:?}");
    for mode in ["bm25", "hybrid"] {
        let hits = jsonl(&b, &["quarantine overdraft", "--mode", mode, "--content"]);
        let h = &hits[0];
        assert_eq!(
            (h["start_line"].as_i64(), h["end_line"].as_i64()),
            (Some(start), Some(end)),
            "{mode}: {hits:#?}"
        );
        assert_eq!(h["symbol"], "settle_ledger");
        assert_eq!(h["kind"], "function");
        let text = lines[start as usize - 1..end as usize].join("\n");
        assert_eq!(h["content"].as_str(), Some(text.as_str()));
        // Its other pieces are not listed again.
        assert!(
            hits[1..]
                .iter()
                .all(|o| o["end_line"].as_i64() < Some(start)
                    || o["start_line"].as_i64() > Some(end)),
            "{hits:#?}"
        );
    }
    // A query that matches the first piece gets the same whole function, from the decorator on.
    let hits = jsonl(&b, &["audited settle_ledger posting", "--mode", "bm25"]);
    assert_eq!(
        (hits[0]["start_line"].as_i64(), hits[0]["end_line"].as_i64()),
        (Some(start), Some(end)),
        "{hits:#?}"
    );
    // So does the function's name.
    let hits = jsonl(&b, &["settle_ledger"]);
    assert_eq!(
        (hits[0]["start_line"].as_i64(), hits[0]["end_line"].as_i64()),
        (Some(start), Some(end)),
        "{hits:#?}"
    );
    // A function past the size bound stays in pieces.
    let (start, end) = (line_of("def replay_journal"), line_of("reconcile_backlog"));
    let hits = jsonl(&b, &["reconcile backlog", "--mode", "bm25"]);
    let h = &hits[0];
    assert_eq!(h["end_line"].as_i64(), Some(end), "{hits:#?}");
    assert!(h["start_line"].as_i64() > Some(start), "{hits:#?}");
    // The text output shows the function from its first line.
    trove()
        .args(["query"])
        .arg(&b)
        .args(["quarantine overdraft", "-k", "1", "--color", "never"])
        .assert()
        .success()
        .stdout(predicates::str::contains(format!(
            "books/settle.py:{}-{}",
            line_of("def settle_ledger") - 1,
            line_of("quarantine_overdraft")
        )));
}

/// The text output shows a snippet's lines as written, shifted left together: a method's first
/// line keeps its place beside its body (a chunk's content starts at its code, after the
/// indentation), whether the hit is a chunk or a split method shown whole.
#[test]
fn text_snippets_keep_the_code_indentation() {
    let repo = tempfile::tempdir().unwrap();
    let mut src = String::from(
        "class Ledger:\n    \"\"\"Books.\"\"\"\n\n    def post_entry(self, amount):\n        \"\"\"Posts one zebra entry.\"\"\"\n        if amount:\n            return amount\n        return 0\n\n    def settle_all(self, book):\n",
    );
    for i in 0..60 {
        src.push_str(&format!(
            "        total_{i} = book.amount({i}) * 2 + book.fee({i})  # step {i}\n"
        ));
    }
    src.push_str("        return book.quarantine_overdraft()\n");
    write(repo.path(), "books/ledger.py", src.as_bytes());
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let text = |q: &str| {
        let out = trove()
            .arg("query")
            .arg(&b)
            .args([q, "-k", "1", "--color", "never"])
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let got = text("post_entry");
    let lines: Vec<&str> = got.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "    def post_entry(self, amount):",
            "        \"\"\"Posts one zebra entry.\"\"\"",
            "        if amount:",
            "            return amount",
            "",
        ],
        "{got}"
    );
    // A piece of the long method stands for the method, shown from its `def`.
    let got = text("quarantine overdraft");
    assert!(got.starts_with("books/ledger.py:10-"), "{got}");
    let lines: Vec<&str> = got.lines().skip(1).take(2).collect();
    assert_eq!(
        lines,
        [
            "    def settle_all(self, book):",
            "        total_0 = book.amount(0) * 2 + book.fee(0)  # step 0",
        ],
        "{got}"
    );
}

/// A long query word also finds its shorter forms in code (`parameters` → `param`, `timeouts`
/// → `timeout`), below the chunks that have the word itself; the SQL macro scores the query's own
/// terms only.
#[test]
fn query_words_reach_their_prefixes_in_code() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    write(&root, "settings.py", b"def read_param(p):\n    return p\n");
    write(
        &root,
        "explain.py",
        b"def explain_parameters(parameters):\n    return parameters\n",
    );
    write(
        &root,
        "net.py",
        b"def set_timeout(seconds):\n    return seconds\n",
    );
    write(&root, "other.py", b"def unrelated():\n    return 1\n");
    let b = t.path().join("b");
    index(&root, &b, &[]);
    for mode in ["bm25", "hybrid"] {
        let paths = |q: &str| -> Vec<String> {
            jsonl(&b, &[q, "--mode", mode])
                .iter()
                .map(|h| h["path"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(paths("parameters"), ["explain.py", "settings.py"], "{mode}");
        assert_eq!(paths("timeouts"), ["net.py"], "{mode}");
    }
    let rows = sql_json(
        &b,
        "SELECT c.path FROM bm25_search('parameters', 10) JOIN chunks c USING (chunk_id)",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["path"], "explain.py");
}

/// `scripts/eval/report.py` (the retrieval table of `scripts/eval.sh`) compares rows on the same
/// questions: the questions each side has in its top 10 and the other not, and the mean
/// difference of reciprocal ranks, as the per-question ranks it writes say; a difference these
/// questions can tell (one bundle misses half the files) gets an interval clear of 0 and a small
/// p, and a row against itself (the hash embedder's hybrid is its BM25 arm) none.
#[test]
fn the_eval_report_compares_rows_on_the_same_questions() {
    let t = tempfile::tempdir().unwrap();
    let (full, half) = (t.path().join("full"), t.path().join("half"));
    let words = [
        "ledger", "invoice", "glacier", "harbour", "lantern", "meadow", "orchard", "pylon",
        "quartz", "saddle", "tundra", "walnut", "yarrow", "zephyr", "bramble", "cobalt",
    ];
    let mut questions = String::new();
    for (i, w) in words.iter().enumerate() {
        let rel = format!("pkg/m{i}.py");
        let src = format!(
            "def settle_{w}(rows):\n    \"\"\"Folds the {w} rows.\"\"\"\n    total = 0\n    for r in rows:\n        total += r.{w}_weight\n    return total\n"
        );
        write(&full, &rel, src.as_bytes());
        if i % 2 == 0 {
            write(&half, &rel, src.as_bytes());
        }
        questions.push_str(&format!(
            "{{\"id\": \"q{i}\", \"kind\": \"concept\", \"query\": \"how are the {w} rows folded\", \"answers\": [{{\"path\": \"{rel}\", \"start_line\": 1, \"end_line\": 6}}]}}\n"
        ));
    }
    write(t.path(), "q.jsonl", questions.as_bytes());
    // The scorer's hit rule (../shared/eval/run_eval.py), which the report imports.
    write(
        t.path(),
        "shared/eval/run_eval.py",
        b"def is_hit(res, ans):\n    if res.get('path') != ans['path']:\n        return False\n    rs, re_ = int(res['start_line']), int(res['end_line'])\n    a, b = int(ans['start_line']), int(ans['end_line'])\n    if (min(re_, b) - max(rs, a) + 1) * 2 < b - a + 1:\n        return False\n    return re_ - rs + 1 <= max(150, 4 * (b - a + 1))\n\ndef first_hit_rank(results, answers):\n    for i, res in enumerate(results, 1):\n        if any(is_hit(res, a) for a in answers):\n            return i\n    return None\n",
    );
    let (bf, bh) = (t.path().join("bf"), t.path().join("bh"));
    index(&full, &bf, &[]);
    index(&half, &bh, &[]);
    let trove_bin = assert_cmd::cargo::cargo_bin("trove");
    let ranks_file = t.path().join("ranks.json");
    let o = std::process::Command::new("python3")
        .arg(crate::util::repo().join("scripts/eval/report.py"))
        .arg("--trove")
        .arg(&trove_bin)
        .arg("--shared")
        .arg(t.path().join("shared"))
        .arg("--set")
        .arg(format!("t={}", t.path().join("q.jsonl").display()))
        // Labels only name rows: the half bundle stands as "lines", the full one once more as
        // a model's ("ast/same"), whose hybrid is then its own BM25.
        .arg("--bundle")
        .arg(format!("t:ast/hash={}", bf.display()))
        .arg("--bundle")
        .arg(format!("t:lines/hash={}", bh.display()))
        .arg("--bundle")
        .arg(format!("t:ast/same={}", bf.display()))
        .arg("--json")
        .arg(&ranks_file)
        .env("TROVE_CACHE_DIR", t.path().join("cache"))
        .output()
        .expect("python3 runs");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let ranks: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&ranks_file).unwrap()).unwrap();
    let rr = |key: &str| -> Vec<f64> {
        (0..words.len())
            .map(|i| {
                ranks[key][format!("q{i}")]
                    .as_i64()
                    .map_or(0.0, |r| 1.0 / r as f64)
            })
            .collect()
    };
    let (ast, lines) = (rr("t:ast/hash:bm25"), rr("t:lines/hash:bm25"));
    let won = ast
        .iter()
        .zip(&lines)
        .filter(|(a, l)| **a > 0.0 && **l == 0.0)
        .count();
    let lost = ast
        .iter()
        .zip(&lines)
        .filter(|(a, l)| **a == 0.0 && **l > 0.0)
        .count();
    let mean = ast.iter().zip(&lines).map(|(a, l)| a - l).sum::<f64>() / words.len() as f64;
    assert_eq!(
        (won, lost),
        (8, 0),
        "the half bundle lacks 8 answers:\n{out}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("ast bm25") && l.contains("lines bm25"))
        .unwrap_or_else(|| panic!("no AST against lines line:\n{out}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    // questions, this (2 words), against (2 words), +won/-lost, ΔMRR, [lo, hi], p
    assert_eq!(f[5], format!("+{won}/-{lost}"), "{line}");
    let delta: f64 = f[6].parse().unwrap();
    assert!((delta - mean).abs() < 0.0005, "{line}: mean {mean}");
    let lo: f64 = f[7].trim_matches(['[', ',']).parse().unwrap();
    let hi: f64 = f[8].trim_matches(']').parse().unwrap();
    let p: f64 = f[9].parse().unwrap();
    assert!(lo > 0.0 && lo <= delta && delta <= hi, "{line}");
    assert!(p > 0.0 && p < 0.05, "{line}");
    let same = out
        .lines()
        .find(|l| l.contains("ast/same hybrid") && l.contains("bm25"))
        .unwrap_or_else(|| panic!("no hybrid against BM25 line:\n{out}"));
    assert_eq!(
        same.split_whitespace().skip(4).collect::<Vec<_>>(),
        ["+0/-0", "+0.000", "[+0.000,", "+0.000]", "1.000"],
        "{same}"
    );
}

/// A name query over several bundles puts the definition first even when another bundle's call
/// sites score higher (in the defining bundle every chunk names it, so its BM25 scores are low;
/// each bundle promotes its definitions within its own list, and the merge keeps them first).
#[test]
fn a_definition_leads_across_bundles() {
    let w = tempfile::tempdir().unwrap();
    let (defs, calls) = (w.path().join("defs"), w.path().join("calls"));
    let mut lib = String::new();
    for i in 0..5 {
        lib.push_str(&format!(
            "export function helper{i}(x: number): number {{\n  return settleInvoice(x) + {i};\n}}\n\n"
        ));
    }
    lib.push_str("export function settleInvoice(amount: number): number {\n  return amount;\n}\n");
    write(&defs, "lib/pay.ts", lib.as_bytes());
    let mut app = String::new();
    for i in 0..10 {
        let body = if i < 2 {
            "  settleInvoice(x);\n".repeat(12)
        } else {
            format!("  console.log(x + {i});\n")
        };
        app.push_str(&format!(
            "export function screen{i}(x: number): void {{\n{body}}}\n\n"
        ));
    }
    write(&calls, "app/screens.ts", app.as_bytes());
    let (bd, bc) = (w.path().join("bd"), w.path().join("bc"));
    index(&defs, &bd, &[]);
    index(&calls, &bc, &[]);
    let hits = query_jsonl(&[
        bc.as_os_str(),
        bd.as_os_str(),
        "settleInvoice".as_ref(),
        "--mode".as_ref(),
        "bm25".as_ref(),
    ]);
    assert_eq!(hits[0]["path"], "lib/pay.ts", "{hits:#?}");
    assert_eq!(hits[0]["symbol"], "settleInvoice", "{hits:#?}");
}

#[test]
fn cache_files_nobody_used_for_a_month_are_removed_and_used_ones_kept() {
    let (_r, o, b) = bundle();
    let cache = o.path().join("cache");
    let hours_ago = |p: &Path, hours: u64| {
        let f = std::fs::File::open(p).unwrap();
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(hours * 3600))
            .unwrap();
    };
    let days_ago = |p: &Path, days: u64| hours_ago(p, days * 24);
    let age_days = |p: &Path| {
        p.metadata()
            .unwrap()
            .modified()
            .unwrap()
            .elapsed()
            .unwrap()
            .as_secs()
            / 86_400
    };
    // What earlier versions of bundles left: old query-cache files, a temporary one of a killed
    // run and an old sha256 memo go; a recent one, and what is not the query cache's, stay.
    let plant = |rel: &str, days: u64| {
        let p = cache.join(rel);
        write(&cache, rel, b"x");
        days_ago(&p, days);
        p
    };
    let h = "0123456789abcdef".repeat(4);
    let h2 = "fedcba9876543210".repeat(4);
    // A temporary name of a killed writer goes after an hour; an unpacked pack whose manifest
    // nobody touched for a month goes, as does a killed unpacking's folder after an hour.
    let hours = |p: std::path::PathBuf, n: u64| {
        hours_ago(&p, n);
        p
    };
    let gone = [
        plant(&format!("vectors-{h}.i8"), 40),
        plant(&format!("refs-v1-{}.parquet.tmp-1-0", &h[..32]), 31),
        hours(plant(&format!("rows-{h}-{h}-w7200.bin.tmp-7-0"), 0), 2),
        plant(&format!("verified/stat-{h}"), 45),
        plant(&format!("packed/{h}/manifest.json"), 40)
            .parent()
            .unwrap()
            .to_path_buf(),
        hours(
            plant(&format!("packed/.{h2}.tmp-7/manifest.json"), 0)
                .parent()
                .unwrap()
                .to_path_buf(),
            2,
        ),
    ];
    let kept = [
        plant(&format!("inverted-{h}-{h}.bin"), 20),
        hours(plant(&format!("dead-v1-{}.tmp-7-1", &h[..32]), 0), 0),
        plant(&format!("packed/{h2}/manifest.json"), 10),
        plant("notes.txt", 400),
        plant("rows.csv", 400),
        plant(&format!("embeddings/{h}"), 400),
    ];
    let run = || {
        trove()
            .env("TROVE_CACHE_DIR", &cache)
            .arg("query")
            .arg(&b)
            .args(["payment total", "--format", "jsonl", "--vector-weight", "1"])
            .assert()
            .success();
    };
    // The first query writes its cache files, and prunes before.
    run();
    for p in &gone {
        assert!(!p.exists(), "{} is still there", p.display());
    }
    for p in &kept {
        assert!(p.exists(), "{} was removed", p.display());
    }
    let made: Vec<std::path::PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            p.is_file()
                && ["vectors-", "rows-", "inverted-"]
                    .iter()
                    .any(|k| n.starts_with(k))
                && !kept.contains(p)
        })
        .collect();
    assert!(made.len() >= 3, "{made:?}");
    // A month later, the same query uses them again: they are marked used.
    for p in &made {
        days_ago(p, 35);
    }
    run();
    for p in &made {
        assert_eq!(age_days(p), 0, "{} was not marked used", p.display());
    }
    // A run that writes no query-cache file but memos (index, sync, verify) prunes too: the
    // memos of every bundle ever checked used to stay for good on a machine that never queried.
    // Once a day per cache folder: the first run pruned and dated the stamp, so runs that day
    // leave what they would remove (listing a busy cache's memos cost every run half a second).
    let stamp = cache.join(".pruned");
    assert_eq!(age_days(&stamp), 0);
    let old_memo = plant(&format!("verified/bundle-{h2}"), 45);
    let (r2, o2, _) = bundle();
    let index_again = |name: &str| {
        trove()
            .env("TROVE_CACHE_DIR", &cache)
            .arg("index")
            .arg(r2.path())
            .arg("-o")
            .arg(o2.path().join(name))
            .arg("--quiet")
            .assert()
            .success();
    };
    index_again("again");
    assert!(old_memo.exists(), "pruned twice in one day");
    // A day later, the next run prunes.
    hours_ago(&stamp, 25);
    index_again("next-day");
    assert!(!old_memo.exists());
    assert_eq!(age_days(&stamp), 0);
}
