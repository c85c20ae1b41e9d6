//! `trove serve` on real sockets (127.0.0.1 only): every endpoint with good and bad input through
//! Python's standard HTTP client and curl (`tests/serve_client.py`), answers equal to the CLI's,
//! the token, saturation (503 + Retry-After) and timeouts (504), reloads under load with no failed
//! request, and a bad version refused while the old one keeps serving.
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// An answer: status, headers (lower-case names), body.
type Answer = (u16, Vec<(String, String)>, String);

/// A running `trove serve`, stopped (SIGTERM) when dropped.
pub(crate) struct Server {
    child: Child,
    addr: String,
    /// stderr (access log, reload lines), collected by a thread.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    /// Starts `trove serve ARGS --listen 127.0.0.1:0` and waits for its address.
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("trove"));
        c.arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env(
                "TROVE_CACHE_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("trove-cache"),
            )
            .env_remove("TROVE_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().expect("trove serve starts");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let err = child.stderr.take().unwrap();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut l = kept.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("trove serve: listening on http://")
            .unwrap_or_else(|| panic!("no address line: {line:?}; {}", log.lock().unwrap()))
            .to_string();
        Server { child, addr, log }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// A client script's output and this server's log, for an assertion's message.
    fn transcript(&self, out: &std::process::Output) -> String {
        format!(
            "{}\n{}\n--- server log ---\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log()
        )
    }

    /// One request (HTTP/1.1, connection closed after): status, headers (lower-case names), body.
    fn http(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let mut s = std::net::TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        req.push_str("\r\n");
        req.push_str(body.unwrap_or(""));
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let text = String::from_utf8_lossy(&raw).to_string();
        let (head, rest) = text.split_once("\r\n\r\n").expect("an HTTP response");
        let mut lines = head.lines();
        let status: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let hs: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let chunked = hs
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked {
            dechunk(rest)
        } else {
            rest.to_string()
        };
        (status, hs, body)
    }

    pub(crate) fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, serde_json::Value) {
        let (s, _, b) = self.http(method, path, body, &[]);
        let v = serde_json::from_str(&b).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {b}"));
        (s, v)
    }
}

impl Server {
    /// Sends SIGHUP and waits (20 s at most) for the generation after `from` to answer.
    fn reload_by_hup(&self, from: u64) {
        let generation = || self.json("GET", "/health", None).1["generation"].as_u64();
        assert_eq!(generation(), Some(from));
        assert!(
            Command::new("kill")
                .args(["-HUP", &self.child.id().to_string()])
                .status()
                .unwrap()
                .success()
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while generation() == Some(from) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(generation(), Some(from + 1), "{}", self.log());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    hs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// `v` without the fields that name where a hit was served from.
pub(crate) fn unbundled(mut v: serde_json::Value) -> serde_json::Value {
    for h in v.as_array_mut().into_iter().flatten() {
        h.as_object_mut().unwrap().remove("bundle");
    }
    v
}

#[test]
fn serve_answers_every_endpoint_as_the_cli_does_and_refuses_bad_input() {
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("fx.bundle");
    index(&fixtures(), &b, &[]);
    let s = Server::start(&[b.to_str().unwrap(), "--token", "s3cret-token"], &[]);
    let auth = ("Authorization", "Bearer s3cret-token");
    // The Python standard-library client and curl: every endpoint, good and bad input.
    let out = Command::new("python3")
        .arg(repo().join("tests/serve_client.py"))
        .args([
            "--base",
            &s.url(),
            "--bundle",
            "fx.bundle",
            "--token",
            "s3cret-token",
            "--curl",
        ])
        .output()
        .expect("python3 runs");
    let text = s.transcript(&out);
    assert!(out.status.success(), "{text}");

    // POST /query answers what `trove query --format json` prints, in each mode, with filters.
    for (body, cli) in [
        (
            r#"{"query": "parse the config file", "k": 7, "rerank": 0}"#,
            vec!["parse the config file", "-k", "7", "--rerank", "0"],
        ),
        (
            r#"{"query": "invoice total", "mode": "bm25", "language": ["python", "go"], "k": 5}"#,
            vec![
                "invoice total",
                "--mode",
                "bm25",
                "--lang",
                "python",
                "--lang",
                "go",
                "-k",
                "5",
            ],
        ),
        (
            r#"{"query": "render html template", "mode": "vector", "source_type": "code", "content": true}"#,
            vec![
                "render html template",
                "--mode",
                "vector",
                "--type",
                "code",
                "--content",
            ],
        ),
        (
            r#"{"query": "error", "alpha": 0.5, "fusion": "rrf", "path": "languages/*", "kind": ["type", "function"]}"#,
            vec![
                "error",
                "--vector-weight",
                "0.5",
                "--fusion",
                "rrf",
                "--path",
                "languages/*",
                "--kind",
                "type",
                "--kind",
                "function",
            ],
        ),
    ] {
        let (st, hs, got) = s.http("POST", "/query", Some(body), &[auth]);
        assert_eq!(st, 200, "{body}: {got}");
        assert!(header(&hs, "x-trove-generation").is_some());
        let got: serde_json::Value = serde_json::from_str(&got).unwrap();
        let want = trove()
            .arg("query")
            .arg(&b)
            .args(&cli)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let want: serde_json::Value = serde_json::from_slice(&want.stdout).unwrap();
        assert!(
            !want.as_array().unwrap().is_empty(),
            "{cli:?} finds something"
        );
        assert_eq!(unbundled(got.clone()), unbundled(want), "{body}");
        assert!(got[0]["bundle"] == "fx.bundle", "{got}");
    }

    // No model server configured: /ask says so.
    let (st, _, body) = s.http("POST", "/ask", Some(r#"{"question": "how?"}"#), &[auth]);
    assert_eq!(st, 501, "{body}");
    assert!(body.contains("not_configured"), "{body}");

    // The access log has a line per request; metrics count them.
    let log = s.log();
    assert!(log.contains("POST /query 200"), "{log}");
    let (st, _, metrics) = s.http("GET", "/metrics", None, &[auth]);
    assert_eq!(st, 200);
    assert!(
        metrics
            .contains("trove_http_requests_total{route=\"/query\",method=\"POST\",status=\"200\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("trove_bundle_info{bundle=\"fx.bundle\""),
        "{metrics}"
    );
}

#[test]
fn serve_needs_a_token_off_loopback_and_answers_503_and_504_under_pressure() {
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("s.bundle");
    let r = sample_repo();
    index(r.path(), &b, &[]);

    // Any other address than loopback needs a token (or --insecure-no-auth).
    let out = trove()
        .args(["serve", b.to_str().unwrap(), "--listen", "0.0.0.0:0"])
        .env_remove("TROVE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--insecure-no-auth") && err.contains("TROVE_TOKEN"),
        "{err}"
    );
    // A port in use is refused; a host name (localhost) is resolved, not refused as syntax.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    for listen in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let out = trove()
            .args(["serve", b.to_str().unwrap(), "--listen", &listen])
            .env_remove("TROVE_TOKEN")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{listen}: {err}");
        assert!(err.contains("cannot listen on"), "{listen}: {err}");
    }
    // A bundle that fails its check: exit 2 naming the bundle (not the server's snapshot
    // folder), and no folder of the server's left beside it.
    let damaged = w.path().join("damaged.bundle");
    index(r.path(), &damaged, &[]);
    let seg = std::fs::read_dir(damaged.join("segments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let chunks = seg.join("chunks.parquet");
    let mut bytes = std::fs::read(&chunks).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&chunks, bytes).unwrap();
    // And one whose manifest is refused (read from the server's snapshot of it).
    let future = w.path().join("future.bundle");
    index(r.path(), &future, &[]);
    let text = std::fs::read_to_string(future.join("manifest.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["embedder"]["dim"] = 0.into();
    std::fs::write(future.join("manifest.json"), m.to_string()).unwrap();
    for (bad, says) in [(&damaged, "damaged.bundle"), (&future, "future.bundle")] {
        let out = trove()
            .args(["serve", bad.to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .env_remove("TROVE_TOKEN")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says) && !err.contains(".serve-"), "{err}");
    }
    let left = crate::util::names_in(w.path());
    assert!(!left.iter().any(|n| n.contains(".serve-")), "{left:?}");

    // Every request takes 1.5 s (test hook); 2 may be in flight; a request may take 1 s.
    let s = Server::start(
        &[
            b.to_str().unwrap(),
            "--max-in-flight",
            "2",
            "--timeout",
            "1",
            "--workers",
            "2",
        ],
        &[("FAILPOINTS", "serve-request=sleep(1500)")],
    );
    let started = Instant::now();
    let answers: Vec<Answer> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..6)
            .map(|_| sc.spawn(|| s.http("POST", "/query", Some(r#"{"query": "session"}"#), &[])))
            .collect();
        // Health answers while the server is saturated.
        std::thread::sleep(Duration::from_millis(300));
        let (st, _, h) = s.http("GET", "/health", None, &[]);
        assert_eq!(st, 200, "{h}");
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let busy: Vec<_> = answers.iter().filter(|a| a.0 == 503).collect();
    let late: Vec<_> = answers.iter().filter(|a| a.0 == 504).collect();
    assert!(!busy.is_empty() && !late.is_empty(), "{answers:?}");
    assert_eq!(busy.len() + late.len(), 6, "{answers:?}");
    for (_, hs, body) in &busy {
        assert_eq!(header(hs, "retry-after"), Some("1"), "{hs:?}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "overloaded", "{body}");
    }
    for (_, _, body) in &late {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "timeout", "{body}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    // Still serving: after the slow work drains, a request gets its (slow, timed out) answer.
    std::thread::sleep(Duration::from_millis(1600));
    let (st, _, body) = s.http("GET", "/bundles", None, &[]);
    assert_eq!(st, 200, "{body}");

    // Without a token, only loopback names and no other web page's requests: a page that
    // rebinds its name to 127.0.0.1, or posts across sites, is refused.
    for (k, v) in [
        ("Host", "evil.example:7878"),
        ("Origin", "http://evil.example"),
    ] {
        let (st, _, body) = s.http("GET", "/bundles", None, &[(k, v)]);
        assert_eq!(st, 403, "{k}: {body}");
        assert!(body.contains("\"forbidden\""), "{body}");
    }
    // An origin is scheme, host and port: a page on another port of this host is another.
    let (st, _, body) = s.http(
        "GET",
        "/bundles",
        None,
        &[("Host", "localhost"), ("Origin", "http://localhost:3000")],
    );
    assert_eq!(st, 403, "{body}");
    let own = format!("http://{}", s.addr);
    let (st, _, body) = s.http("GET", "/bundles", None, &[("Origin", own.as_str())]);
    assert_eq!(st, 200, "{body}");
    drop(s);

    // A connection that never finishes its request's headers, or sends nothing, is closed at
    // --timeout (before any token is asked for).
    let s = Server::start(
        &[
            b.to_str().unwrap(),
            "--timeout",
            "1",
            "--token",
            "s3cret",
            "--no-access-log",
        ],
        &[],
    );
    let started = Instant::now();
    let mut half = std::net::TcpStream::connect(&s.addr).unwrap();
    half.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let idle = std::net::TcpStream::connect(&s.addr).unwrap();
    for mut c in [half, idle] {
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut rest = Vec::new();
        // Closed by the server: the read ends (with whatever it said, if anything).
        let _ = c.read_to_end(&mut rest);
    }
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(15), "{waited:?}");
    drop(s);

    // At most --max-connections are open: with three held, a fourth is closed unanswered; once
    // they go, requests are answered. (A long --timeout: the held ones stay open meanwhile.)
    let s = Server::start(
        &[
            b.to_str().unwrap(),
            "--max-connections",
            "3",
            "--token",
            "s3cret",
            "--no-access-log",
        ],
        &[],
    );
    let held: Vec<std::net::TcpStream> = (0..3)
        .map(|_| std::net::TcpStream::connect(&s.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut fourth = std::net::TcpStream::connect(&s.addr).unwrap();
    fourth
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = fourth.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut got = Vec::new();
    let _ = fourth.read_to_end(&mut got);
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    let (st, _, body) = s.http(
        "GET",
        "/health",
        None,
        &[("Authorization", "Bearer s3cret")],
    );
    assert_eq!(st, 200, "{body}");
}

#[test]
fn serve_reloads_under_load_without_failing_a_request_and_keeps_the_old_version_on_a_bad_one() {
    let w = tempfile::tempdir().unwrap();
    let r = sample_repo();
    let b = w.path().join("live.bundle");
    index(r.path(), &b, &[]);
    let s = Server::start(
        &[
            b.to_str().unwrap(),
            "--reload-interval",
            "0.2",
            "--workers",
            "2",
        ],
        &[],
    );
    let (_, h) = s.json("GET", "/health", None);
    assert_eq!(h["status"], "ok", "{h}");
    let first = h["generation"].as_u64().unwrap();

    // Five new versions published (each a new commit, indexed over the served bundle: the
    // writer swaps directories) while 4 clients query for 8 s: no request fails.
    let bin = assert_cmd::cargo::cargo_bin("trove");
    let publish = format!(
        "cd {repo} && n=$(date +%s%N) && printf 'def fresh_{{n}}():\\n    return {{n}}\\n' | sed \"s/{{n}}/$n/g\" > fresh.py && git add -A && git -c user.email=t@t -c user.name=t commit -qm v$n && {bin} index {repo} -o {out} --quiet",
        repo = r.path().display(),
        bin = bin.display(),
        out = b.display()
    );
    let report = w.path().join("load.json");
    let out = Command::new("python3")
        .arg(repo().join("scripts/load-serve.py"))
        .args(["--base", &s.url(), "--clients", "4", "--seconds", "8"])
        .args(["--reload-cmd", &publish, "--reloads", "5"])
        .arg("--server-pid")
        .arg(s.child.id().to_string())
        .arg("--json")
        .arg(&report)
        .env(
            "TROVE_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("trove-cache"),
        )
        .output()
        .unwrap();
    let text = s.transcript(&out);
    assert!(out.status.success(), "{text}");
    let load: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(load["errors"], 0, "{text}");
    assert_eq!(load["reloads"].as_array().map(Vec::len), Some(5), "{text}");
    let (_, h) = s.json("GET", "/health", None);
    assert_eq!(h["status"], "ok", "{h}\n{text}");
    assert!(
        h["generation"].as_u64().unwrap() >= first + 5,
        "{h}\n{text}"
    );
    // Answers come from the new version: the last function published is found.
    let last = std::fs::read_to_string(r.path().join("fresh.py")).unwrap();
    let name = last
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches("():");
    let (st, hits) = s.json(
        "POST",
        "/query",
        Some(&format!(r#"{{"query": "{name}", "mode": "bm25", "k": 1}}"#)),
    );
    assert_eq!(st, 200);
    assert_eq!(hits[0]["symbol"], name, "{hits}");
    // The old versions' snapshots are gone once nothing uses them (retired on a thread of their
    // own after the switch: soon, not at once).
    let snapshots = || {
        std::fs::read_dir(w.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".live.bundle.serve-")
            })
            .flat_map(|e| std::fs::read_dir(e.path()).unwrap().flatten())
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    let left = loop {
        let left = snapshots();
        if left.len() <= 1 || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        left.len(),
        1,
        "one snapshot left, the one served: {left:?}\n{}",
        s.log()
    );
    // No version was refused on the way (an in-place run's views, linked in the moment between
    // its manifest's commit and their rename, once were).
    assert!(!s.log().contains("not switched"), "{}", s.log());

    // A version that fails verification is not switched to: the old one keeps serving and
    // /health says why.
    let generation = h["generation"].as_u64().unwrap();
    let bad = w.path().join("bad.bundle");
    copy_dir(&b, &bad);
    let table = table_file(&bad, "chunks");
    let mut bytes = std::fs::read(&table).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&table, bytes).unwrap();
    // A new manifest (so the server sees a change) over the damaged table.
    let mut m = manifest(&bad);
    m["created_at"] = serde_json::json!("2001-01-01T00:00:00Z");
    std::fs::write(
        bad.join("manifest.json"),
        serde_json::to_string_pretty(&m).unwrap(),
    )
    .unwrap();
    let aside = w.path().join("live.bundle.old");
    std::fs::rename(&b, &aside).unwrap();
    std::fs::rename(&bad, &b).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let h = loop {
        let (_, h) = s.json("GET", "/health", None);
        if h["status"] == "degraded" || Instant::now() > deadline {
            break h;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(h["status"], "degraded", "{h}\n{}", s.log());
    let error = h["bundles"][0]["error"]["message"].as_str().unwrap();
    assert!(error.contains("sha256"), "{error}");
    assert_eq!(h["generation"].as_u64().unwrap(), generation);
    let (st, hits) = s.json(
        "POST",
        "/query",
        Some(&format!(r#"{{"query": "{name}", "mode": "bm25", "k": 1}}"#)),
    );
    assert_eq!(st, 200, "the old version still answers");
    assert_eq!(hits[0]["symbol"], name, "{hits}");
    assert!(s.log().contains("still serving the old one"), "{}", s.log());

    // The good version back: health is ok again (nothing to switch: it is the one served).
    std::fs::remove_dir_all(&b).unwrap();
    std::fs::rename(&aside, &b).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, h) = s.json("GET", "/health", None);
        if h["status"] == "ok" {
            break;
        }
        assert!(Instant::now() < deadline, "{h}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An in-place run (`--since`) commits its manifest, then renames its views in: a reload that
/// looks in between sees the new manifest beside the old `views.sql`. The version is switched to
/// all the same (the views are the manifest's to derive), not refused as damaged.
#[test]
fn serve_switches_to_a_version_seen_between_its_manifest_and_its_views() {
    let w = tempfile::tempdir().unwrap();
    let r = sample_repo();
    let b = w.path().join("live.bundle");
    index(r.path(), &b, &[]);
    let s = Server::start(&[b.to_str().unwrap(), "--reload-interval", "0"], &[]);
    let (_, h) = s.json("GET", "/health", None);
    let first = h["generation"].as_u64().unwrap();
    let old_views = std::fs::read(b.join("views.sql")).unwrap();
    write(
        r.path(),
        "fresh.py",
        b"def between_versions():\n    return 1\n",
    );
    commit(r.path(), "fresh");
    index(r.path(), &b, &["--since", "auto"]);
    assert_eq!(manifest(&b)["segments"].as_array().unwrap().len(), 2);
    // The moment between the two renames, as a run killed there leaves it.
    let new_views = std::fs::read(b.join("views.sql")).unwrap();
    assert_ne!(new_views, old_views);
    std::fs::write(b.join(".views.sql.next"), &new_views).unwrap();
    std::fs::write(b.join("views.sql"), &old_views).unwrap();
    let hup = Command::new("kill")
        .args(["-HUP", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let h = loop {
        let (_, h) = s.json("GET", "/health", None);
        if h["generation"].as_u64().unwrap() > first
            || h["status"] != "ok"
            || Instant::now() > deadline
        {
            break h;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(h["status"], "ok", "{h}\n{}", s.log());
    assert_eq!(
        h["generation"].as_u64().unwrap(),
        first + 1,
        "{h}\n{}",
        s.log()
    );
    let (st, hits) = s.json(
        "POST",
        "/query",
        Some(r#"{"query": "between_versions", "mode": "bm25", "k": 1}"#),
    );
    assert_eq!(st, 200);
    assert_eq!(hits[0]["symbol"], "between_versions", "{hits}");
    // The live bundle is left as the publisher left it (its own run, or verify, settles it).
    assert_eq!(std::fs::read(b.join("views.sql")).unwrap(), old_views);
}

#[test]
fn serve_runs_the_research_loop_at_ask_when_a_model_server_is_configured() {
    use crate::agents::{ChatServer, answer, tool_call};
    let w = tempfile::tempdir().unwrap();
    let r = sample_repo();
    let b = w.path().join("s.bundle");
    index(r.path(), &b, &[]);
    let chat = ChatServer::start(|n, _| match n {
        0 => (
            200,
            tool_call(n, "search_code", serde_json::json!({"query": "session"})),
        ),
        _ => (
            200,
            answer("Charges are made in billing/billing.py:1 and nowhere.py:3."),
        ),
    });
    let s = Server::start(
        &[
            b.to_str().unwrap(),
            "--ask-url",
            &chat.url,
            "--ask-model",
            "m1",
        ],
        &[],
    );
    let (st, v) = s.json(
        "POST",
        "/ask",
        Some(r#"{"question": "where are sessions made?", "max_steps": 3}"#),
    );
    assert_eq!(st, 200, "{v}\n{}", s.log());
    assert_eq!(v["model"], "m1");
    assert_eq!(v["steps"][0]["tool"], "search_code", "{v}");
    assert_eq!(v["steps"][0]["ok"], true, "{v}");
    let cites = v["citations"].as_array().unwrap();
    assert_eq!(cites.len(), 2, "{v}");
    assert_eq!(cites[1]["valid"], false, "{v}");
    // The model saw the tools and the question.
    let reqs = chat.requests();
    assert!(reqs[0].0["tools"].as_array().is_some_and(|t| t.len() == 5));
    assert!(reqs[0].0.to_string().contains("where are sessions made?"));
    // Bad input is a 400, an unknown bundle a 404.
    let (st, _) = s.json("POST", "/ask", Some(r#"{"question": " "}"#));
    assert_eq!(st, 400);
    let (st, v) = s.json(
        "POST",
        "/ask",
        Some(r#"{"question": "x", "bundles": ["nope"]}"#),
    );
    assert_eq!(st, 404, "{v}");
}

/// Several bundles served: `k` bounds the rows in all (not per bundle); a file none holds is
/// answered with the near paths of each, by bundle; an empty `path` glob is bad input (as for
/// `trove query --path ''`), in POST /query and in MCP `search_code`; `/map` and `read_map` of a
/// file say it is one; `trove map --format json --depth N` cuts the tree where `/map` does.
#[test]
fn serve_over_several_bundles_bounds_and_names_each() {
    let w = tempfile::tempdir().unwrap();
    let r = sample_repo();
    let (a, b) = (w.path().join("a.bundle"), w.path().join("b.bundle"));
    index(r.path(), &a, &[]);
    index(r.path(), &b, &[]);
    let s = Server::start(&[a.to_str().unwrap(), b.to_str().unwrap()], &[]);
    for route in [
        "/symbols?name=PaymentService&k=1",
        "/refs?name=format_amount&follow=callers&k=1",
    ] {
        let (st, v) = s.json("GET", route, None);
        assert_eq!(st, 200, "{route}: {v}");
        assert_eq!(v.as_array().unwrap().len(), 1, "{route}: {v}");
    }
    let (st, v) = s.json("GET", "/symbols?name=PaymentService&k=5", None);
    assert_eq!((st, v.as_array().unwrap().len()), (200, 2), "{v}");

    let (st, v) = s.json("GET", "/files/billing.py", None);
    assert_eq!(st, 404, "{v}");
    let m = v["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("the bundles a.bundle, b.bundle")
            && m.contains("a.bundle: billing/billing.py")
            && m.contains("b.bundle: billing/billing.py"),
        "{m}"
    );

    // A bundle named twice is searched once.
    let (st, v) = s.json(
        "POST",
        "/query",
        Some(r#"{"query": "invoice", "bundles": ["a.bundle", "a.bundle"], "k": 3}"#),
    );
    assert_eq!(st, 200, "{v}");
    let ids: Vec<&serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["chunk_id"])
        .collect();
    assert!(
        ids.len() > 1 && (1..ids.len()).all(|i| !ids[..i].contains(&ids[i])),
        "{v}"
    );

    let (st, v) = s.json(
        "POST",
        "/query",
        Some(r#"{"query": "invoice", "path": ""}"#),
    );
    assert_eq!(st, 400, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("empty"),
        "{v}"
    );

    let (st, v) = s.json("GET", "/map?bundle=a.bundle&path=billing/billing.py", None);
    assert_eq!(st, 400, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is a file"),
        "{v}"
    );

    let (st, served) = s.json("GET", "/map?bundle=a.bundle&depth=1", None);
    assert_eq!(st, 200);
    let cli = trove()
        .arg("map")
        .arg(&a)
        .args(["--format", "json", "--depth", "1"])
        .output()
        .unwrap();
    let cli: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(cli, served);
    assert!(
        cli["children"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("children").is_none()),
        "{cli}"
    );

    let answers = crate::util::mcp_stdio(
        &[a.as_os_str()],
        &[
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "search_code", "arguments": {"query": "invoice", "path": " "}}}),
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "read_map", "arguments": {"path": "billing/billing.py"}}}),
        ],
        3,
    );
    for (id, says) in [(2, "path is empty"), (3, "is a file, not a folder")] {
        let r = &answers[&id]["result"];
        assert_eq!(r["isError"], true, "{r}");
        assert!(
            r["content"][0]["text"].as_str().unwrap().contains(says),
            "{r}"
        );
    }
    drop(s);

    // With --reload-interval 0 a new version is taken on SIGHUP (it used to end the server).
    let s = Server::start(
        &[
            a.to_str().unwrap(),
            "--reload-interval",
            "0",
            "--no-access-log",
        ],
        &[],
    );
    write(
        r.path(),
        "billing/late.py",
        b"def late_fee(days):\n    return days * 5\n",
    );
    index(r.path(), &a, &[]);
    s.reload_by_hup(1);
    let (st, v) = s.json("GET", "/symbols?name=late_fee", None);
    assert_eq!((st, v.as_array().unwrap().len()), (200, 1), "{v}");
}

/// Input that would exhaust a worker's stack (a path glob of 30,000 nested braces) is a 400, not
/// the end of the server; and SIGTERM stops it promptly even while an MCP client holds an event
/// stream open (GET /mcp, which never ends on its own): the streams are ended first, then the
/// requests in flight finish.
#[test]
fn serve_refuses_a_deep_glob_and_stops_on_sigterm_with_an_mcp_stream_open() {
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("fx.bundle");
    index(&fixtures(), &b, &[]);
    // MCP sessions end `--timeout` + 1 s after the signal (a tool call in flight has had its
    // deadline by then).
    let mut s = Server::start(&[b.to_str().unwrap(), "--timeout", "3"], &[]);
    let deep = serde_json::json!({"query": "x", "path": format!("{}{}", "{".repeat(30_000), "}".repeat(30_000))});
    let (st, v) = s.json("POST", "/query", Some(&deep.to_string()));
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("more than 64"), "{v}");
    assert_eq!(s.json("GET", "/health", None).0, 200);

    let accept = ("Accept", "application/json, text/event-stream");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let (st, hs, body) = s.http("POST", "/mcp", Some(init), &[accept]);
    assert_eq!(st, 200, "{body}");
    let sid = header(&hs, "mcp-session-id").unwrap().to_string();
    let session = [
        accept,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (st, _, body) = s.http("POST", "/mcp", Some(initialized), &session);
    assert!(st < 300, "{st} {body}");
    // The event stream: its headers read, the connection left open.
    let mut stream = std::net::TcpStream::connect(&s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
        s.addr
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"),
        "{head}"
    );
    Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    // Without ending the stream the server would wait for it (minutes): a bound far above a
    // prompt stop and far below that.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "still running 20 s after SIGTERM:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}\n{}", s.log());
    assert!(s.log().contains("shutting down"), "{}", s.log());
}

/// A research loop whose request timed out (504) stops before its next model call instead of
/// spending the model's tokens on an answer nobody will read, and gives its slot back.
#[test]
fn serve_stops_the_research_loop_of_a_request_that_timed_out() {
    use crate::agents::{ChatServer, tool_call};
    let w = tempfile::tempdir().unwrap();
    let r = sample_repo();
    let b = w.path().join("s.bundle");
    index(r.path(), &b, &[]);
    // A slow model that never stops asking for tools.
    let chat = ChatServer::start(|n, _| {
        std::thread::sleep(Duration::from_millis(3000));
        (
            200,
            tool_call(n, "search_code", serde_json::json!({"query": "session"})),
        )
    });
    let s = Server::start(
        &[
            b.to_str().unwrap(),
            "--ask-url",
            &chat.url,
            "--ask-model",
            "m1",
            "--ask-timeout",
            "2",
            "--workers",
            "1",
        ],
        &[],
    );
    let ask = r#"{"question": "where are sessions made?", "max_steps": 50}"#;
    let (st, v) = s.json("POST", "/ask", Some(ask));
    assert_eq!(st, 504, "{v}");
    // At most the call in flight at the deadline is made; a loop left running would make one
    // call every 3 s.
    let at_deadline = chat.requests().len();
    std::thread::sleep(Duration::from_secs(8));
    let after = chat.requests().len();
    assert!(
        after <= at_deadline.max(1),
        "{at_deadline} then {after}\n{}",
        s.log()
    );
    // Its slot (--workers 1) is free again: the next question reaches the model.
    let (st, _) = s.json("POST", "/ask", Some(ask));
    assert_eq!(st, 504);
    std::thread::sleep(Duration::from_secs(2));
    assert!(chat.requests().len() > after, "{}", s.log());
}

/// A packed bundle is unpacked into a snapshot folder of the server's own beside it, not into
/// the shared cache (another process may read that copy); when the file is replaced by a new
/// pack (a nightly shipment), the new version is served and the old version's folder goes with
/// it (one full copy per night would otherwise pile up).
#[test]
fn serve_follows_a_packed_bundle_and_drops_the_old_versions_copy() {
    let w = tempfile::tempdir().unwrap();
    let r = sample_repo();
    let (b, packed, cache) = (
        w.path().join("app.bundle"),
        w.path().join("app.trove"),
        w.path().join("cache"),
    );
    let pack = || {
        crate::util::pack(&b, &packed);
    };
    index(r.path(), &b, &[]);
    pack();
    let copies = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(w.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".app.trove.serve-")
            })
            .flat_map(|e| std::fs::read_dir(e.path()).unwrap().flatten())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let s = Server::start(
        &[packed.to_str().unwrap(), "--reload-interval", "0"],
        &[("TROVE_CACHE_DIR", cache.to_str().unwrap())],
    );
    let first = copies();
    assert_eq!(first.len(), 1, "{first:?}");
    write(
        r.path(),
        "billing/late.py",
        b"def late_fee(days):\n    return days * 5\n",
    );
    index(r.path(), &b, &[]);
    pack();
    s.reload_by_hup(1);
    let (st, v) = s.json("GET", "/symbols?name=late_fee", None);
    assert_eq!((st, v.as_array().unwrap().len()), (200, 1), "{v}");
    // The old version goes when its last request has finished.
    let deadline = Instant::now() + Duration::from_secs(5);
    while copies().len() > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let now = copies();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, first);
    assert!(!cache.join("packed").exists());
}

#[test]
fn serve_writes_the_refs_cache_again_when_it_is_removed_under_it() {
    let t = tempfile::tempdir().unwrap();
    let b = t.path().join("b");
    two_segment_shop(&t.path().join("repo"), &b);
    let cache = t.path().join("cache");
    // One handle per lane: every request meets the same connection.
    let s = Server::start(
        &[b.to_str().unwrap(), "--workers", "1"],
        &[("TROVE_CACHE_DIR", cache.to_str().unwrap())],
    );
    let cached = || refs_cache_files(&cache);
    let callers = "/refs?name=total&follow=callers";
    let (st, want) = s.json("GET", callers, None);
    assert_eq!((st, want.as_array().unwrap().len()), (200, 1), "{want}");
    let files = cached();
    assert_eq!(files.len(), 1, "{files:?}");
    // A cache cleaner removes it: the next request answers the same and writes it again.
    std::fs::remove_file(&files[0]).unwrap();
    assert_eq!(s.json("GET", callers, None), (200, want));
    assert_eq!(cached(), files);
}

/// A new version met with a full disk where the server snapshots it (a small tmpfs; root only,
/// else skipped): not switched to, and `/health` names that disk, not the bundle; once space is
/// freed, SIGHUP takes the version at once (it used to wait out the minute a failed version
/// waits). A pack whose folder is full is unpacked into the cache's copy instead.
#[test]
fn serve_names_a_full_disk_and_takes_the_version_on_sighup_once_freed() {
    let Some(disk) = SmallDisk::mount(4 << 20) else {
        eprintln!("skipped: no tmpfs can be mounted here (needs root)");
        return;
    };
    let (w, r) = (tempfile::tempdir().unwrap(), sample_repo());
    let b = disk.path().join("live.bundle");
    index(r.path(), &b, &[]);
    let next = w.path().join("next.bundle");
    trove().arg("sync").arg(&b).arg(&next).assert().success();
    write(
        r.path(),
        "billing/late.py",
        b"def late_fee(days):\n    return days * 5\n",
    );
    commit(r.path(), "late");
    index(r.path(), &next, &["--since", "auto"]);
    let s = Server::start(&[b.to_str().unwrap(), "--reload-interval", "0"], &[]);
    let hup = || {
        assert!(
            Command::new("kill")
                .args(["-HUP", &s.child.id().to_string()])
                .status()
                .unwrap()
                .success()
        );
    };
    let health_after = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, h) = s.json("GET", "/health", None);
            if pred(&h) || Instant::now() > deadline {
                return h;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    trove().arg("sync").arg(&next).arg(&b).assert().success();
    disk.fill(0);
    hup();
    let h = health_after(&|h| h["status"] != "ok");
    assert_eq!(h["status"], "degraded", "{h}\n{}", s.log());
    let msg = h["bundles"][0]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("is full") && msg.contains(".live.bundle.serve-"),
        "{msg}"
    );
    assert!(!msg.contains("verification failed"), "{msg}");
    assert_eq!(h["generation"], 1);
    let (st, v) = s.json("GET", "/symbols?name=late_fee", None);
    assert_eq!((st, v.as_array().unwrap().len()), (200, 0), "{v}");
    disk.unfill();
    hup();
    let h = health_after(&|h| h["generation"] == 2);
    assert_eq!(
        (h["status"].as_str(), h["generation"].as_u64()),
        (Some("ok"), Some(2)),
        "{h}\n{}",
        s.log()
    );
    let (st, v) = s.json("GET", "/symbols?name=late_fee", None);
    assert_eq!((st, v.as_array().unwrap().len()), (200, 1), "{v}");
    drop(s);

    // A pack in a full folder: its new version comes from the cache's copy.
    let packed = disk.path().join("app.trove");
    crate::util::pack(&w.path().join("next.bundle"), &packed);
    std::fs::remove_dir_all(&b).unwrap();
    let cache = w.path().join("cache");
    let s = Server::start(
        &[packed.to_str().unwrap(), "--reload-interval", "0"],
        &[("TROVE_CACHE_DIR", cache.to_str().unwrap())],
    );
    write(
        r.path(),
        "billing/later.py",
        b"def later_fee(days):\n    return days * 7\n",
    );
    let other = w.path().join("other.trove");
    index(r.path(), &next, &[]);
    crate::util::pack(&next, &other);
    std::fs::copy(&other, disk.path().join(".app.trove.new")).unwrap();
    std::fs::rename(disk.path().join(".app.trove.new"), &packed).unwrap();
    disk.fill(0);
    s.reload_by_hup(1);
    let (st, v) = s.json("GET", "/symbols?name=later_fee", None);
    assert_eq!((st, v.as_array().unwrap().len()), (200, 1), "{v}");
    assert!(cache.join("packed").exists());
}
