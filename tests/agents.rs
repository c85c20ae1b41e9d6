//! What coding agents use: `trove show` (file text from the bundle alone), `trove mcp` driven by
//! the official MCP Python SDK, `trove ask` against a scripted OpenAI-compatible model, and the map
//! they read first.
use std::path::Path;

use crate::util::*;

/// Lines of the long file that makes `read_file` cut at its budget.
const LONG_LINES: usize = 450;

/// The sample repository plus a 450-line file and a file with a password to redact.
fn agent_repo() -> tempfile::TempDir {
    let r = sample_repo();
    let long: String = (1..=LONG_LINES)
        .map(|i| format!("value_{i} = {i}  # line {i}\n"))
        .collect();
    write(r.path(), "big/long.py", long.as_bytes());
    write(
        r.path(),
        "config/settings.py",
        b"\"\"\"Settings.\"\"\"\n\nDB_HOST = \"db.internal\"\nDB_PASSWORD = \"hunter2-Xq9!vLp3$Zr8\"\n\n\ndef url():\n    return DB_HOST\n",
    );
    commit(r.path(), "long file and settings");
    r
}

/// `trove show --raw` of `path`.
fn show_raw(bundle: &Path, path: &str) -> Vec<u8> {
    trove()
        .args(["show", "--raw"])
        .arg(bundle)
        .arg(path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

#[test]
fn show_gives_back_every_fixture_file_exactly() {
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("b");
    index(&fixtures(), &b, &[]);
    let paths = indexed_paths(&b);
    assert!(paths.len() > 50, "{paths:?}");
    for p in &paths {
        let want = std::fs::read(fixtures().join(p)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&show_raw(&b, p)),
            String::from_utf8_lossy(&want),
            "{p}"
        );
    }
    // The `file_text` view gives the same text with plain SQL.
    let views = std::fs::read_to_string(b.join("views.sql"))
        .unwrap()
        .replace("'segments/", &format!("'{}/segments/", b.display()));
    let conn = duckdb::Connection::open_in_memory().unwrap();
    conn.execute_batch(&views).unwrap();
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT path, text FROM file_text ORDER BY path")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), paths.len());
    for (p, text) in rows {
        assert_eq!(
            text.as_bytes(),
            std::fs::read(fixtures().join(&p)).unwrap(),
            "{p}"
        );
    }
}

#[test]
fn show_prints_numbered_ranges_redacted_text_and_follows_incremental_runs() {
    let r = agent_repo();
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    // A range, numbered.
    let out = trove()
        .arg("show")
        .arg(&b)
        .arg("big/long.py:9-11")
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout),
        "  9  value_9 = 9  # line 9\n 10  value_10 = 10  # line 10\n 11  value_11 = 11  # line 11\n"
    );
    // The secret is not in the bundle's text; the rest of the file is.
    let s = String::from_utf8(show_raw(&b, "config/settings.py")).unwrap();
    let disk = std::fs::read_to_string(r.path().join("config/settings.py")).unwrap();
    assert!(!s.contains("hunter2"), "{s}");
    assert!(s.contains("DB_PASSWORD = \"[REDACTED:password]\""), "{s}");
    assert_eq!(s.lines().count(), disk.lines().count());
    for (a, d) in s.lines().zip(disk.lines()) {
        if !d.contains("hunter2") {
            assert_eq!(a, d);
        }
    }
    // Bad input: exit 2 with a message.
    for (target, msg) in [
        ("billing.py", "did you mean billing/billing.py"),
        ("no/such/file.rs", "is not a file of the bundle"),
        ("big/long.py:900", "past the end"),
        ("big/long.py:9-3", "before the start"),
        ("big/long.py:0", "lines are numbers from 1"),
    ] {
        let out = trove().arg("show").arg(&b).arg(target).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(err.contains(msg), "{target}: {err}");
    }
    // After an incremental run (a new segment, the old rows tombstoned) show gives the new text,
    // and a deleted file is gone.
    write(
        r.path(),
        "billing/billing.py",
        b"def only():\n    return 1\n",
    );
    std::fs::remove_file(r.path().join("api/server.go")).unwrap();
    commit(r.path(), "edit and delete");
    index(r.path(), &b, &["--since", "auto", "--no-compact"]);
    assert!(manifest(&b)["segments"].as_array().unwrap().len() > 1);
    assert_eq!(
        show_raw(&b, "billing/billing.py"),
        b"def only():\n    return 1\n"
    );
    trove()
        .arg("show")
        .arg(&b)
        .arg("api/server.go")
        .assert()
        .code(2);
    assert_eq!(
        show_raw(&b, "big/long.py"),
        std::fs::read(r.path().join("big/long.py")).unwrap()
    );
}

#[test]
fn mcp_serves_the_official_python_client() {
    let r = agent_repo();
    let w = tempfile::tempdir().unwrap();
    let (a, b) = (w.path().join("app.bundle"), w.path().join("lib.bundle"));
    index(r.path(), &a, &[]);
    index(&fixtures().join("languages"), &b, &[]);
    let bin = assert_cmd::cargo::cargo_bin("trove");
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/mcp_client.py"))
        .arg("check")
        .arg(&bin)
        .arg(&a)
        .arg(&b)
        .env("TROVE_MCP_REPO", r.path())
        .env(
            "TROVE_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("trove-cache"),
        )
        .output()
        .expect("python3 runs (scripts/test.sh puts the test venv first on PATH)");
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    assert!(log.contains("all checks passed"), "{log}");
    assert!(
        log.contains("connected (auto): protocol 2026-07-28"),
        "{log}"
    );
    assert!(
        log.contains("connected (legacy): protocol 2025-11-25"),
        "{log}"
    );
}

#[test]
fn the_map_leads_with_the_code_others_depend_on_and_prose_summaries() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(
        root,
        "pkg/cookies.py",
        b"\"\"\"\nrequests.cookies\n~~~~~~~~~~~~~~~~\n\nCompatibility code to use a CookieJar with requests.\n\"\"\"\n\n\ndef get_cookie(jar, name):\n    return jar.get(name)\n",
    );
    write(
        root,
        "pkg/core.py",
        b"\"\"\"The core: sessions.\"\"\"\n\n\ndef session():\n    return 1\n",
    );
    for i in 0..3 {
        write(
            root,
            &format!("pkg/user{i}.py"),
            format!("from pkg.core import session\n\n\ndef use{i}():\n    return session()\n")
                .as_bytes(),
        );
    }
    // The tests define far more than the code.
    let many: String = (0..30)
        .map(|i| format!("def test_{i}():\n    assert get_cookie({{}}, 'x') is None\n\n\n"))
        .collect();
    write(root, "tests/test_all.py", many.as_bytes());
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "m"]);
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("b");
    index(root, &b, &[]);
    let out = trove().arg("map").arg(&b).assert().success();
    let map = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let at = |s: &str| map.find(s).unwrap_or_else(|| panic!("{s} not in\n{map}"));
    assert!(at("pkg/") < at("tests/"), "{map}");
    // core.py is called from three other files; cookies.py from one (the tests).
    assert!(at("core.py") < at("cookies.py"), "{map}");
    assert!(
        map.contains("cookies.py  Compatibility code to use a CookieJar with requests."),
        "{map}"
    );
    assert!(!map.contains("~~~~"), "{map}");
}
