//! Helpers: the trove binary, temp git repositories, DuckDB over a bundle.
use std::path::{Path, PathBuf};
use std::process::Command;

/// The trove binary, with its query cache in the tests' scratch directory (not the user's).
pub fn trove() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("trove").expect("trove binary is built");
    c.env(
        "TROVE_CACHE_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("trove-cache"),
    );
    c
}

/// [`trove`] with `TROVE_CACHE_DIR` set to `cache` instead, when given (where a local model's
/// folder is remembered).
pub fn trove_in(cache: Option<&Path>) -> assert_cmd::Command {
    let mut c = trove();
    if let Some(d) = cache {
        c.env("TROVE_CACHE_DIR", d);
    }
    c
}

/// The checkout the tests run in. Read at run time (cargo sets it for every test run): a test
/// binary reused from a shared target directory may have been compiled in another checkout, whose
/// path `env!` would have baked in.
pub fn repo() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

pub fn fixtures() -> PathBuf {
    repo().join("fixtures")
}

/// Every file of a bundle (segment folders included), its bytes by its path in the bundle.
pub fn bundle_files(bundle: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(bundle, bundle, &mut out);
    out
}

/// Every table file of a bundle (in every segment folder), its bytes by its path in the bundle.
pub fn parquet_bytes(bundle: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = bundle_files(bundle);
    files.retain(|name, _| name.ends_with(".parquet"));
    files
}

/// The file of `table` in a bundle (v5: in its segment folder, as its manifest says).
pub fn table_file(bundle: &Path, table: &str) -> PathBuf {
    let m = manifest(bundle);
    let id = m["segments"][0]["id"]
        .as_str()
        .expect("a v5 manifest names its segment");
    bundle.join(format!("segments/{id}/{table}.parquet"))
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

pub fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args([
            "-c",
            "user.name=trove-test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        st.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// Stages everything in `root` and commits it.
/// The names of the entries of folder `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn commit(root: &Path, msg: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", msg]);
}

pub fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// The sample repo plus one file for each skip reason, committed to a fresh git repository.
pub fn sample_repo() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    copy_dir(&fixtures().join("sample-repo"), root);
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(std::iter::repeat_n(0u8, 64));
    write(root, "assets/logo.txt", &png); // binary content behind a text extension
    write(
        root,
        "data/huge.md",
        &vec![b'a'; 2 << 20]
            .iter()
            .enumerate()
            .map(|(i, b)| if i % 80 == 79 { b'\n' } else { *b })
            .collect::<Vec<_>>(),
    );
    write(root, ".env", b"API_KEY=not-a-real-key\n");
    write(
        root,
        "deploy/server.pem",
        b"-----BEGIN PRIVATE KEY-----\nxx\n-----END PRIVATE KEY-----\n",
    );
    write(root, "debug.log", b"ignored by .gitignore\n");
    write(
        root,
        "node_modules/left-pad/index.js",
        b"module.exports = () => {};\n",
    );
    write(root, "web/package-lock.json", b"{}\n");
    write(
        root,
        "api/gen.pb.go",
        b"// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n",
    );
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "sample"]);
    t
}

/// `trove index ROOT -o OUT` plus `extra`, not yet run.
pub fn index_cmd(root: &Path, out: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut c = trove();
    c.arg("index").arg(root).arg("-o").arg(out).args(extra);
    c
}

/// Runs `trove index ROOT -o OUT` (plus `extra`) and asserts success.
pub fn index(root: &Path, out: &Path, extra: &[&str]) {
    index_cmd(root, out, extra)
        .arg("--quiet")
        .assert()
        .success();
}

/// Runs `trove pack BUNDLE -o OUT` and asserts success.
pub fn pack(bundle: &Path, out: &Path) {
    trove()
        .arg("pack")
        .arg(bundle)
        .arg("-o")
        .arg(out)
        .assert()
        .success();
}

/// Rows of a query against an in-memory DuckDB, each row's columns as strings.
pub fn duck(sql: &str) -> Vec<Vec<String>> {
    let conn = duckdb::Connection::open_in_memory().unwrap();
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut rows = stmt.query([]).unwrap();
    let mut out = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        let n = row.as_ref().column_count();
        let mut v = Vec::new();
        for i in 0..n {
            let val: duckdb::types::Value = row.get(i).unwrap();
            v.push(trove::query::sql::to_text(&val));
        }
        out.push(v);
    }
    out
}

/// The live rows of table `name` of the bundle as a SQL relation: the file's literal for a bundle
/// of one segment, else a subquery over every segment with tombstones applied (`refs` as stored).
pub fn pq(bundle: &Path, name: &str) -> String {
    let m: trove::bundle::Manifest =
        serde_json::from_value(manifest(bundle)).expect("a v5 manifest");
    if m.segments.len() == 1 {
        return format!("'{}'", table_file(bundle, name).display());
    }
    let sql = trove::bundle::live_sql(&m.segments, name, |rel| {
        format!("'{}'", bundle.join(rel).display())
    });
    format!("({sql})")
}

/// Paths in `files.parquet`, in order.
pub fn indexed_paths(bundle: &Path) -> Vec<String> {
    duck(&format!(
        "SELECT path FROM {} ORDER BY path",
        pq(bundle, "files")
    ))
    .into_iter()
    .map(|mut r| r.remove(0))
    .collect()
}

/// `skipped.parquet` as path → reason.
pub fn skipped_reasons(bundle: &Path) -> std::collections::BTreeMap<String, String> {
    duck(&format!(
        "SELECT path, reason FROM {}",
        pq(bundle, "skipped")
    ))
    .into_iter()
    .map(|r| (r[0].clone(), r[1].clone()))
    .collect()
}

/// The bundle's manifest as JSON.
pub fn manifest(bundle: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(bundle.join("manifest.json")).unwrap()).unwrap()
}

/// Runs `trove query ARGS --format jsonl`, asserts success, returns one JSON value per hit.
pub fn query_jsonl<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Vec<serde_json::Value> {
    query_jsonl_in(None, args)
}

/// [`query_jsonl`] with `TROVE_CACHE_DIR` set to `cache` when given (where a local model's folder
/// is remembered, for the vector arm).
pub fn query_jsonl_in<S: AsRef<std::ffi::OsStr>>(
    cache: Option<&Path>,
    args: &[S],
) -> Vec<serde_json::Value> {
    let out = trove_in(cache)
        .arg("query")
        .args(args)
        .args(["--format", "jsonl"])
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The tables of a compacted copy of the bundle (`trove compact` on a copy): what a full build of
/// the same tree must equal byte for byte.
pub fn compacted_tables(bundle: &Path) -> Vec<(String, u64, String)> {
    let t = tempfile::tempdir().unwrap();
    let copy = t.path().join("copy");
    copy_dir(bundle, &copy);
    trove()
        .arg("compact")
        .arg(&copy)
        .arg("-q")
        .assert()
        .success();
    tables(&copy)
}

/// Each table's (name, rows, sha256) from the manifest: equal lists mean byte-identical tables.
pub fn tables(bundle: &Path) -> Vec<(String, u64, String)> {
    manifest(bundle)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["rows"].as_u64().unwrap(),
                f["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every reference of a one-segment bundle with its target as stored, and as the `refs` view of a
/// bundle of several segments resolves it again in SQL (`trove::resolve::resolved_refs_sql`) over
/// the same definitions: (path, line, kind, target, stored target/resolution, SQL's). The two
/// must agree: the Rust and SQL forms of the resolution rules are one rule.
pub fn refs_resolved_both_ways(bundle: &Path) -> Vec<(String, String)> {
    let conn = duckdb::Connection::open_in_memory().unwrap();
    conn.execute_batch(&format!(
        "CREATE VIEW stored_refs AS SELECT * FROM {};\nCREATE VIEW symbols AS SELECT * FROM {};\n\
         CREATE VIEW deps AS SELECT * FROM {};",
        pq(bundle, "refs"),
        pq(bundle, "symbols"),
        pq(bundle, "deps")
    ))
    .unwrap();
    let key = "path || ':' || line || ' ' || kind || ' ' || target || ' -> ' || \
               coalesce(target_symbol_id::VARCHAR, '-') || ' ' || coalesce(resolution, '-')";
    let rows = |sql: &str| -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        stmt.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    };
    let resolved = trove::resolve::resolved_refs_sql("stored_refs", "symbols", "deps");
    // The view of a bundle of several segments has the stored table's columns, in its order.
    let columns = |q: &str| rows(&format!("SELECT column_name FROM (DESCRIBE {q})"));
    assert_eq!(
        columns("SELECT * FROM stored_refs"),
        columns(&resolved),
        "the resolved references' columns"
    );
    let stored = rows(&format!("SELECT {key} AS k FROM stored_refs ORDER BY k"));
    let sql = rows(&format!("SELECT {key} AS k FROM ({resolved}) ORDER BY k"));
    assert_eq!(stored.len(), sql.len());
    stored.into_iter().zip(sql).collect()
}

/// Drops the keys that name where a bundle lives (the two bundles are at different paths).
pub fn unplaced(mut v: serde_json::Value) -> serde_json::Value {
    match &mut v {
        serde_json::Value::Object(o) => {
            o.remove("bundle");
            for x in o.values_mut() {
                *x = unplaced(x.take());
            }
        }
        serde_json::Value::Array(a) => {
            for x in a.iter_mut() {
                *x = unplaced(x.take());
            }
        }
        _ => {}
    }
    v
}

/// Everything a user asks of a bundle, as JSON: `query` in three modes with scores, the first of
/// `symbols` looked up, the callers of each, the dependencies and the map.
pub fn answers(bundle: &Path, query: &str, symbols: &[&str]) -> Vec<(String, serde_json::Value)> {
    let b = bundle.to_str().unwrap();
    let mut asks: Vec<Vec<&str>> = Vec::new();
    for mode in ["bm25", "vector", "hybrid"] {
        asks.push(vec![
            "query", b, query, "--mode", mode, "-k", "10", "--format", "json",
        ]);
    }
    asks.push(vec!["symbols", b, symbols[0], "--format", "json"]);
    for s in symbols {
        asks.push(vec!["refs", b, s, "--callers", "--format", "json"]);
    }
    asks.push(vec!["deps", b, "--format", "json"]);
    asks.push(vec!["map", b, "--format", "json"]);
    asks.into_iter()
        .map(|args| {
            let out = trove().args(&args).output().unwrap();
            let label = format!("{} {}", args[0], args[2..].join(" "));
            let text = String::from_utf8_lossy(&out.stdout);
            let v = match serde_json::from_str(&text) {
                Ok(v) => unplaced(v),
                // No results print nothing (exit 1): that too must agree.
                Err(_) => serde_json::json!({ "exit": out.status.code(), "stdout": text }),
            };
            (label, v)
        })
        .collect()
}

/// A static file server on 127.0.0.1 for `trove sync`: serves the files under a folder (GET
/// only, a 404 for anything missing; `Range: bytes=N-` answered with a 206 while `ranges` is
/// set), each reply after `delay`, and counts the body bytes it sent. It can play a bad link:
/// once `budget` bytes are sent, or `cut_each` bytes of one reply, the connection is dropped
/// mid-body.
pub struct FileServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Body bytes served so far.
    pub served: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Body bytes it will still send in all (`u64::MAX`: no end).
    pub budget: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Body bytes it sends of any one reply before dropping it (`u64::MAX`: all).
    pub cut_each: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Whether it answers range requests (else the whole file, a 200).
    pub ranges: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Range requests answered with a 206.
    pub ranged: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// Starts a [`FileServer`] over `root` (it runs until the test process ends).
pub fn serve_dir(root: &Path, delay: std::time::Duration) -> FileServer {
    use std::io::{BufRead, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = FileServer {
        url: format!("http://{}", listener.local_addr().unwrap()),
        served: Arc::new(AtomicU64::new(0)),
        budget: Arc::new(AtomicU64::new(u64::MAX)),
        cut_each: Arc::new(AtomicU64::new(u64::MAX)),
        ranges: Arc::new(AtomicBool::new(true)),
        ranged: Arc::new(AtomicU64::new(0)),
    };
    let root = root.to_path_buf();
    let (count, budget, cut_each, ranges, ranged) = (
        server.served.clone(),
        server.budget.clone(),
        server.cut_each.clone(),
        server.ranges.clone(),
        server.ranged.clone(),
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let root = root.clone();
            let (count, budget, cut_each, ranges, ranged) = (
                count.clone(),
                budget.clone(),
                cut_each.clone(),
                ranges.clone(),
                ranged.clone(),
            );
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                let mut from = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(r) = lower.strip_prefix("range: bytes=") {
                        from = r.trim().trim_end_matches('-').parse::<usize>().ok();
                    }
                }
                let path = request.split(' ').nth(1).unwrap_or("/");
                let rel = path.trim_start_matches('/');
                let body = (!rel.contains("..") && !rel.is_empty())
                    .then(|| std::fs::read(root.join(rel)).ok())
                    .flatten();
                std::thread::sleep(delay);
                let from = from.filter(|_| ranges.load(Relaxed));
                let (head, body) = match (body, from) {
                    (Some(b), Some(n)) if n >= b.len() => (
                        format!(
                            "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                            b.len()
                        ),
                        Vec::new(),
                    ),
                    (Some(b), Some(n)) => {
                        ranged.fetch_add(1, Relaxed);
                        (
                            format!(
                                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {n}-{}/{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                b.len() - 1,
                                b.len(),
                                b.len() - n
                            ),
                            b[n..].to_vec(),
                        )
                    }
                    (Some(b), None) => (
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            b.len()
                        ),
                        b,
                    ),
                    (None, _) => (
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\n"
                            .to_string(),
                        b"not found".to_vec(),
                    ),
                };
                // What this reply may send of its body: a bad link cuts it short.
                let allowed = cut_each.load(Relaxed).min(body.len() as u64);
                let allowed = match budget
                    .fetch_update(Relaxed, Relaxed, |left| Some(left.saturating_sub(allowed)))
                {
                    Ok(left) => allowed.min(left) as usize,
                    Err(_) => 0,
                };
                count.fetch_add(allowed as u64, Relaxed);
                let _ = stream
                    .write_all(head.as_bytes())
                    .and_then(|()| stream.write_all(&body[..allowed]));
            });
        }
    });
    server
}

/// The rows of `trove sql BUNDLE SQL --format json`.
pub fn sql_json(bundle: &Path, sql: &str) -> Vec<serde_json::Value> {
    sql_json_in(None, bundle, sql)
}

/// [`sql_json`] with `TROVE_CACHE_DIR` set to `cache` when given (where a local model's folder
/// is remembered, for `trove_embed`).
pub fn sql_json_in(cache: Option<&Path>, bundle: &Path, sql: &str) -> Vec<serde_json::Value> {
    let out = trove_in(cache)
        .arg("sql")
        .arg(bundle)
        .arg(sql)
        .args(["--format", "json"])
        .assert()
        .success();
    serde_json::from_slice::<serde_json::Value>(&out.get_output().stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The answers, by id, of `trove mcp ARGS...` over stdio (newline-delimited JSON-RPC) to
/// `requests`, sent after the initialize handshake, read until every request (and `last`) has
/// its answer.
pub fn mcp_stdio(
    args: &[&std::ffi::OsStr],
    requests: &[serde_json::Value],
    last: u64,
) -> std::collections::BTreeMap<u64, serde_json::Value> {
    use std::io::{BufRead, Write};
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("trove"))
        .arg("mcp")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let handshake = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for m in handshake.iter().chain(requests) {
        writeln!(stdin, "{m}").unwrap();
    }
    let mut answers = std::collections::BTreeMap::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        // Notifications (no id) are no answers.
        let Some(id) = v["id"].as_u64() else {
            continue;
        };
        answers.insert(id, v);
        // Every request answered (the server may answer them out of order), `last` among them.
        if answers.contains_key(&last)
            && requests
                .iter()
                .filter_map(|r| r["id"].as_u64())
                .all(|i| answers.contains_key(&i))
        {
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();
    answers
}

/// The cached resolutions of multi-segment bundles' `refs` in the query cache `dir`
/// (`refs-v1-*.parquet`), sorted; none when `dir` does not exist.
pub fn refs_cache_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| {
                    let n = p.file_name().unwrap().to_string_lossy();
                    n.starts_with("refs-v1-") && n.ends_with(".parquet")
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A git repository with `shop/money.py` (defines `total`) committed, and a bundle of it at `out`;
/// then `shop/checkout.py` (calls `total` through an import) committed and indexed with
/// `--since auto --no-compact`: a bundle of two segments whose call crosses them.
pub fn two_segment_shop(root: &Path, out: &Path) {
    write(
        root,
        "shop/money.py",
        b"def total(cart):\n    return sum(cart)\n",
    );
    git(root, &["init", "-q"]);
    commit(root, "start");
    index(root, out, &[]);
    write(
        root,
        "shop/checkout.py",
        b"from shop.money import total\n\ndef checkout(cart):\n    return total(cart) * 2\n",
    );
    commit(root, "checkout");
    index(root, out, &["--since", "auto", "--no-compact"]);
}

/// A small tmpfs mounted at a folder of its own, for full-disk tests; unmounted when dropped.
pub struct SmallDisk {
    pub dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A tmpfs of `bytes`, or `None` where one cannot be mounted (mounting needs root).
    pub fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk until `leave` bytes are free (a file `.filler` takes the rest).
    pub fn fill(&self, leave: u64) {
        self.unfill();
        let out = std::process::Command::new("stat")
            .args(["-f", "-c", "%a %S"])
            .arg(self.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut n = text.split_whitespace().map(|x| x.parse::<u64>().unwrap());
        let free = n.next().unwrap() * n.next().unwrap();
        if free > leave {
            let ok = std::process::Command::new("fallocate")
                .args(["-l", &(free - leave).to_string()])
                .arg(self.path().join(".filler"))
                .status()
                .unwrap();
            assert!(ok.success());
        }
    }

    pub fn unfill(&self) {
        let _ = std::fs::remove_file(self.path().join(".filler"));
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
