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
        ("big/long.py:0", "lines numbered from 1"),
        ("big/long.py:3-", "write START or START-END"),
        ("big/long.py:-3", "bad line range"),
        ("big/long.py:a-b", "bad line range"),
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

/// JSON-RPC errors over stdio, as raw lines: a known method whose params do not fit it is
/// invalid params (-32602; rmcp answered -32601, "method not found", naming only the method), an
/// unknown method is -32601 with a message, and the session answers on after both.
#[test]
fn mcp_tells_bad_params_from_unknown_methods() {
    let (r, w) = (sample_repo(), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let call = |id: u32, arguments: serde_json::Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "search_code", "arguments": arguments}})
    };
    let answers = mcp_stdio(
        &[b.as_os_str()],
        &[
            call(2, "oops".into()),
            call(3, serde_json::json!([1, 2])),
            serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/nonsense", "params": {}}),
            call(5, serde_json::json!({"query": "invoice", "k": 1})),
        ],
        5,
    );
    for id in [2, 3] {
        let e = &answers[&id]["error"];
        assert_eq!(e["code"], -32602, "{id}: {e}");
        assert!(e["message"].as_str().unwrap().contains("an object"), "{e}");
    }
    let e = &answers[&4]["error"];
    assert_eq!(e["code"], -32601, "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("tools/nonsense"),
        "{e}"
    );
    let text = answers[&5]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("billing/"), "{text}");
}

/// search_code's `path` of a folder keeps to that folder (`billing` is not `billing_reports/`),
/// and list_bundles shows a commit of a hand-edited manifest whatever its characters.
#[test]
fn mcp_path_is_a_folder_and_list_bundles_takes_any_commit_text() {
    let (r, w) = (sample_repo(), tempfile::tempdir().unwrap());
    write(
        r.path(),
        "billing_reports/invoice_summary.py",
        b"def invoice_summary(invoices):\n    return sum(i.total for i in invoices)\n",
    );
    commit(r.path(), "reports");
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let mut m = manifest(&b);
    m["source"]["commit"] = "abcdefghijk\u{e9}\u{e9}\u{e9}".into();
    std::fs::write(b.join("manifest.json"), m.to_string()).unwrap();
    let search = |id: u32, path: &str| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "search_code", "arguments": {"query": "invoice", "path": path, "k": 50}}})
    };
    let answers = mcp_stdio(
        &[b.as_os_str()],
        &[
            search(2, "billing"),
            search(3, "billing_reports/"),
            serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "list_bundles", "arguments": {}}}),
        ],
        4,
    );
    let text = |id: u64| {
        answers[&id]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{id}: {}", answers[&id]))
            .to_string()
    };
    let folder = text(2);
    assert!(
        folder.contains("billing/") && !folder.contains("billing_reports"),
        "{folder}"
    );
    assert!(
        text(3).contains("billing_reports/invoice_summary.py"),
        "{}",
        text(3)
    );
    assert!(text(4).contains("commit abcdefghijk\u{e9}"), "{}", text(4));
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

/// Requests a [`ChatServer`] saw: each body and its Authorization header.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(serde_json::Value, Option<String>)>>>;

/// A scripted OpenAI-compatible chat server on 127.0.0.1: `reply(n, request)` answers the n-th
/// request (from 0) with a status and a JSON body; every request body and its Authorization
/// header are kept.
pub(crate) struct ChatServer {
    pub(crate) url: String,
    seen: Seen,
}

impl ChatServer {
    pub(crate) fn start(
        reply: impl Fn(usize, &serde_json::Value) -> (u16, serde_json::Value) + Send + Sync + 'static,
    ) -> ChatServer {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen: Seen = Default::default();
        let kept = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let (mut len, mut auth) = (0usize, None);
                let mut line = String::new();
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    let lower = l.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if lower.starts_with("authorization:") {
                        auth = Some(l["authorization:".len()..].trim().to_string());
                    }
                }
                let mut body = vec![0; len];
                if r.read_exact(&mut body).is_err() {
                    continue;
                }
                let req: serde_json::Value =
                    serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                let n = {
                    let mut s = kept.lock().unwrap();
                    s.push((req.clone(), auth));
                    s.len() - 1
                };
                let (status, answer) = reply(n, &req);
                let text = answer.to_string();
                let mut conn = conn;
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nRetry-After: 0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        ChatServer { url, seen }
    }

    pub(crate) fn requests(&self) -> Vec<(serde_json::Value, Option<String>)> {
        self.seen.lock().unwrap().clone()
    }
}

/// A chat completion that calls `tool` with `args`.
pub(crate) fn tool_call(n: usize, tool: &str, args: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null,
        "tool_calls": [{"id": format!("call_{n}"), "type": "function",
                        "function": {"name": tool, "arguments": args.to_string()}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
}

/// A chat completion that answers `text`.
pub(crate) fn answer(text: &str) -> serde_json::Value {
    serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
}

#[test]
fn ask_runs_the_research_loop_and_checks_the_citations() {
    let r = agent_repo();
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let server = ChatServer::start(|n, _| match n {
        0 => (429, serde_json::json!({"error": {"message": "slow down"}})),
        1 => (200, tool_call(n, "read_map", serde_json::json!({}))),
        2 => (
            200,
            tool_call(
                n,
                "search_code",
                serde_json::json!({"query": "invoice total"}),
            ),
        ),
        3 => (
            200,
            tool_call(
                n,
                "resolve_symbol",
                serde_json::json!({"name": "Invoice", "action": "definition"}),
            ),
        ),
        4 => (
            200,
            tool_call(
                n,
                "read_file",
                serde_json::json!({"path": "billing/billing.py", "start_line": 10, "end_line": 18}),
            ),
        ),
        5 => (
            200,
            tool_call(n, "drop_tables", serde_json::json!({"all": true})),
        ),
        _ => (
            200,
            answer(
                "Invoice is defined at billing/billing.py:10-18; its total is billing/billing.py:16. \
                 Also see nowhere.py:3 and billing/billing.py:900-910, \
                 billing/billing.py:1-18446744073709551616.",
            ),
        ),
    });
    let out = trove()
        .arg("ask")
        .arg(&b)
        .arg("How is an invoice's total computed?")
        .args([
            "--url",
            &server.url,
            "--model",
            "scripted",
            "--format",
            "json",
        ])
        .env("OPENAI_API_KEY", "test-key-123")
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    let tools: Vec<&str> = steps.iter().map(|s| s["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "read_map",
            "search_code",
            "resolve_symbol",
            "read_file",
            "drop_tables"
        ],
        "{doc}"
    );
    assert!(steps[..4].iter().all(|s| s["ok"] == true), "{doc}");
    assert_eq!(steps[4]["ok"], false);
    assert!(
        steps[3]["result"]
            .as_str()
            .unwrap()
            .contains("class Invoice"),
        "{doc}"
    );
    assert_eq!(steps[2]["arguments"]["name"], "Invoice");
    assert!(doc["stopped"].is_null());
    // Citations: two check out, a missing file and a range past the end are marked.
    let cites: Vec<(String, bool)> = doc["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["text"].as_str().unwrap().to_string(), c["valid"] == true))
        .collect();
    assert_eq!(
        cites,
        [
            ("billing/billing.py:10-18".to_string(), true),
            ("billing/billing.py:16".to_string(), true),
            ("nowhere.py:3".to_string(), false),
            ("billing/billing.py:900-910".to_string(), false),
            // An end past any number is past the end, not the start line.
            (
                "billing/billing.py:1-18446744073709551616".to_string(),
                false
            ),
        ],
        "{doc}"
    );
    // What the model saw: the tools offered, the key, each tool's output, the unknown tool's error.
    let seen = server.requests();
    assert_eq!(seen.len(), 7, "the 429 was retried once, then six calls");
    assert_eq!(seen[1].1.as_deref(), Some("Bearer test-key-123"));
    let offered: Vec<&str> = seen[1].0["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "read_map",
            "search_code",
            "resolve_symbol",
            "read_file",
            "list_bundles"
        ]
    );
    let last = seen[6].0["messages"].as_array().unwrap();
    let tool_msgs: Vec<&str> = last
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(tool_msgs.len(), 5);
    assert!(
        tool_msgs[3].contains("10  class Invoice:"),
        "{}",
        tool_msgs[3]
    );
    assert!(
        tool_msgs[4].starts_with("ERROR: unknown tool \"drop_tables\""),
        "{}",
        tool_msgs[4]
    );
}

#[test]
fn ask_stops_a_looping_model_and_fails_clearly_when_the_server_does() {
    let r = agent_repo();
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    // A model that searches forever, and answers only when no tools are offered.
    let server = ChatServer::start(|n, req| {
        if req.get("tools").is_some() {
            (
                200,
                tool_call(
                    n,
                    "search_code",
                    serde_json::json!({"query": format!("invoice {n}")}),
                ),
            )
        } else {
            (
                200,
                answer("Partly: see billing/billing.py:10 and gone.py:1."),
            )
        }
    });
    let out = trove()
        .arg("ask")
        .arg(&b)
        .arg("Where are invoices made?")
        .args(["--url", &server.url, "--max-steps", "3"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.starts_with("Partly: see billing/billing.py:10"),
        "{text}"
    );
    assert!(text.contains("✓ billing/billing.py:10"), "{text}");
    assert!(
        text.contains("✗ gone.py:1 (no such file in the bundle)"),
        "{text}"
    );
    assert!(text.contains("stopped by the max-steps budget"), "{text}");
    let seen = server.requests();
    assert_eq!(seen.len(), 4, "three steps, then one call for the answer");
    assert!(seen[3].0.get("tools").is_none());
    // The token budget stops it too.
    let out = trove()
        .arg("ask")
        .arg(&b)
        .arg("Where are invoices made?")
        .args([
            "--url",
            &server.url,
            "--max-tokens",
            "150",
            "--format",
            "json",
        ])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["stopped"], "max-tokens", "{doc}");
    assert_eq!(doc["steps"].as_array().unwrap().len(), 2, "{doc}");
    // A server that keeps failing: retried, then exit 2 naming it.
    let down = ChatServer::start(|_, _| (503, serde_json::json!({"error": "down"})));
    let out = trove()
        .arg("ask")
        .arg(&b)
        .arg("anything?")
        .args(["--url", &down.url, "--retries", "1"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("chat server") && err.contains("503"), "{err}");
    assert!(err.contains("gave up after 1 retry"), "{err}");
    assert_eq!(err.matches(&down.url).count(), 1, "{err}");
    assert_eq!(down.requests().len(), 2);
    // No server named and no key for the default one: said at once, nothing looked up.
    let out = trove()
        .arg("ask")
        .arg(&b)
        .arg("anything?")
        .env_remove("TROVE_ASK_URL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("no chat server to ask"), "{err}");
    // A reply past 8 MiB: refused at once (the same server would send it again), not printed.
    let flood = ChatServer::start(|_, _| (200, answer(&"x".repeat(9 << 20))));
    let out = trove()
        .arg("ask")
        .arg(&b)
        .arg("anything?")
        .args(["--url", &flood.url, "--retries", "2"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("chat server") && err.contains("longer than 8388608 bytes"),
        "{err}"
    );
    assert!(
        out.get_output().stdout.len() < 4096,
        "the reply is not printed"
    );
    assert_eq!(flood.requests().len(), 1, "not retried");
    // A model that asks for tools past its budget is told once more that none can be called;
    // it answers then, or the run says what it did.
    let said = |req: &serde_json::Value, what: &str| {
        req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains(what)))
    };
    for stubborn in [false, true] {
        let server = ChatServer::start(move |n, req| {
            if said(req, "No more tools can be called") && !stubborn {
                (200, answer("See billing/billing.py:10."))
            } else {
                (
                    200,
                    tool_call(n, "search_code", serde_json::json!({"query": "invoice"})),
                )
            }
        });
        let o = trove()
            .arg("ask")
            .arg(&b)
            .arg("Where are invoices made?")
            .args(["--url", &server.url, "--max-steps", "2"])
            .output()
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        if stubborn {
            assert_eq!(o.status.code(), Some(2), "{out}{err}");
            assert!(
                err.contains("kept asking for tools after its budget was spent (2 research steps)"),
                "{err}"
            );
            // The research made is not lost with the failure: on stderr, and in the JSON.
            assert!(
                err.contains("the research before the failure:")
                    && err.contains(r#"1. search_code {"query":"invoice"} (ok"#),
                "{err}"
            );
            let o = trove()
                .arg("ask")
                .arg(&b)
                .arg("Where are invoices made?")
                .args(["--url", &server.url, "--max-steps", "2", "--format", "json"])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2));
            let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert!(doc["answer"].is_null(), "{doc}");
            assert!(
                doc["error"]
                    .as_str()
                    .unwrap()
                    .contains("kept asking for tools"),
                "{doc}"
            );
            assert_eq!(doc["steps"].as_array().unwrap().len(), 2, "{doc}");
            assert_eq!(doc["stopped"], "max-steps", "{doc}");
            assert_eq!(doc["calls"], 4, "{doc}");
        } else {
            assert!(o.status.success(), "{out}{err}");
            assert!(out.starts_with("See billing/billing.py:10"), "{out}");
        }
        // Two steps, the call with the final prompt, the one telling it no tools are left (twice
        // when stubborn: the text run and the JSON one).
        assert_eq!(server.requests().len(), if stubborn { 8 } else { 4 });
    }
}
