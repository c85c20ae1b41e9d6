//! `trove sync`: a consumer's bundle brought up to a published one over HTTP (a file server on
//! 127.0.0.1 started here) and from a directory, fetching only what it lacks; damaged or missing
//! files on the server are refused with the consumer's bundle left as it was.
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::util::*;

/// A repository of `n` Python modules of 30 functions each (~11 kB a file).
fn modules(n: usize) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for i in 0..n {
        let mut text = String::new();
        for j in 0..30 {
            text.push_str(&format!(
                "def handler_{i}_{j}(request, retries={}):\n    \"\"\"Handles request kind {i}/{j}: validates the payload, retries {j} times.\"\"\"\n    total = sum(x * {} for x in request.items_{j})\n    if total > {}:\n        raise ValueError(\"too large {i} {j}\")\n    return total + retries\n\n\n",
                i * j,
                i + j,
                i * 31 + j
            ));
        }
        write(
            t.path(),
            &format!("pkg{}/mod_{i}.py", i % 20),
            text.as_bytes(),
        );
    }
    git(t.path(), &["init", "-q"]);
    commit(t.path(), "start");
    t
}

/// Bytes of every file a bundle's manifest lists, and of the manifest.
fn listed_bytes(b: &Path) -> u64 {
    let m = manifest(b);
    let data: u64 = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["bytes"].as_u64().unwrap())
        .sum();
    data + std::fs::metadata(b.join("manifest.json")).unwrap().len()
}

/// `trove sync SRC DEST`, its exit code and stderr.
fn sync(src: &str, dest: &Path) -> (i32, String) {
    let out = trove()
        .args(["sync", src])
        .arg(dest)
        .args(["--retries", "0", "--quiet"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn sync_over_http_fetches_the_new_segment_only_and_refuses_a_damaged_server() {
    let repo = modules(1200);
    let w = tempfile::tempdir().unwrap();
    let (published, dest) = (w.path().join("published"), w.path().join("dest"));
    index(repo.path(), &published, &[]);
    let server = serve_dir(&published, Duration::ZERO);

    // First sync: everything.
    assert_eq!(sync(&server.url, &dest), (0, String::new()));
    assert_eq!(bundle_files(&dest), bundle_files(&published));
    trove().arg("verify").arg(&dest).assert().success();

    // A nightly run changes one file: the consumer fetches the new segment and the manifest.
    let edit = |n: usize| {
        write(
            repo.path(),
            "pkg0/mod_0.py",
            format!("def changed_{n}():\n    return {n}\n").as_bytes(),
        );
        commit(repo.path(), &format!("edit {n}"));
        index(
            repo.path(),
            &published,
            &["--since", "auto", "--no-compact"],
        );
    };
    edit(1);
    server.served.store(0, Relaxed);
    assert_eq!(sync(&format!("{}/", server.url), &dest), (0, String::new()));
    let (sent, total) = (server.served.load(Relaxed), listed_bytes(&published));
    assert!(
        sent * 100 <= total,
        "a 1-file change sent {sent} of {total} bytes"
    );
    assert_eq!(bundle_files(&dest), bundle_files(&published));
    let asked = |b: &Path| {
        answers(
            b,
            "handles request kind validates payload",
            &["handler_0_1"],
        )
    };
    assert_eq!(asked(&dest), asked(&published));

    // Nothing new: only the manifest is read.
    server.served.store(0, Relaxed);
    let out = trove()
        .args(["sync", &server.url])
        .arg(&dest)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("up to date"));
    let manifest_len = std::fs::metadata(published.join("manifest.json"))
        .unwrap()
        .len();
    assert_eq!(server.served.load(Relaxed), manifest_len);

    // The server's new segment is damaged, then missing: refused in one line, DEST untouched.
    edit(2);
    let m = manifest(&published);
    let newest = m["segments"].as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let chunks = published.join(format!("segments/{newest}/chunks.parquet"));
    let good = std::fs::read(&chunks).unwrap();
    let before = bundle_files(&dest);
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    // Exit 2, one line that says all of `says`, DEST as it was.
    let refused = |says: &[&str]| {
        let (code, err) = sync(&server.url, &dest);
        assert_eq!(code, 2, "{err}");
        assert!(says.iter().all(|s| err.contains(s)), "{says:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert_eq!(bundle_files(&dest), before);
    };
    std::fs::write(&chunks, &bad).unwrap();
    refused(&["chunks.parquet", "sha256"]);
    std::fs::remove_file(&chunks).unwrap();
    refused(&["404", "nothing was changed"]);
    // Mended on the server: the next sync goes through.
    std::fs::write(&chunks, &good).unwrap();
    assert_eq!(sync(&server.url, &dest).0, 0);
    assert_eq!(bundle_files(&dest), bundle_files(&published));

    // A compaction on the server replaces every segment: DEST follows, without the old ones.
    trove()
        .args(["compact", "-q"])
        .arg(&published)
        .assert()
        .success();
    assert_eq!(sync(&server.url, &dest).0, 0);
    assert_eq!(bundle_files(&dest), bundle_files(&published));

    // From a directory, into a new bundle; a path that is not a bundle is refused.
    let copy = w.path().join("copy");
    assert_eq!(sync(published.to_str().unwrap(), &copy).0, 0);
    assert_eq!(bundle_files(&copy), bundle_files(&published));
    let (code, err) = sync(repo.path().to_str().unwrap(), &w.path().join("x"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is this a trove bundle"), "{err}");
}

/// A published manifest that names a file outside the bundle, a sha256 that is not one, or a
/// segment of another embedder, is refused before anything is fetched or written.
#[test]
fn sync_refuses_a_hostile_or_mixed_manifest() {
    let repo = modules(3);
    let w = tempfile::tempdir().unwrap();
    let published = w.path().join("published");
    index(repo.path(), &published, &[]);
    let text = std::fs::read_to_string(published.join("manifest.json")).unwrap();
    let server = serve_dir(&published, Duration::ZERO);
    for (what, hostile) in [
        (
            "outside the bundle",
            text.replacen("\"name\": \"segments/", "\"name\": \"../segments/", 1),
        ),
        // A sha256 names the download's file beside DEST: nothing but hex digits.
        (
            "not 64 lower-case hex digits",
            text.replacen("\"sha256\": \"", "\"sha256\": \"../../", 1),
        ),
        (
            "another embedder",
            text.replacen("\"embedder\": \"", "\"embedder\": \"x", 1),
        ),
        // Views that say more than the views of the segments listed (a `duckdb -init
        // views.sql` user would run them), listed with their sha256.
        ("views.sql of its own segments", {
            let views = std::fs::read(published.join("views.sql")).unwrap();
            let mut more = views.clone();
            more.extend_from_slice(b"COPY (SELECT 1) TO '/tmp/owned.csv';\n");
            let sha = |b: &[u8]| {
                use sha2::Digest;
                sha2::Sha256::digest(b)
                    .iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<String>()
            };
            text.replace(&sha(&views), &sha(&more))
        }),
    ] {
        assert_ne!(hostile, text);
        std::fs::write(published.join("manifest.json"), &hostile).unwrap();
        let dest = w.path().join("dest");
        let (code, err) = sync(&server.url, &dest);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(what), "{what}: {err}");
        assert!(!dest.exists(), "{what}: something was written");
    }
}

/// A URL with a query string cannot be carried over to each file: refused with the reason. A
/// packed file is unpacked beside DEST for the run and removed after: nothing is left in the
/// cache or beside DEST.
#[test]
fn sync_refuses_a_query_string_and_leaves_no_unpacked_copy_of_a_pack() {
    let repo = modules(3);
    let w = tempfile::tempdir().unwrap();
    let published = w.path().join("published");
    index(repo.path(), &published, &[]);
    let (code, err) = sync("http://127.0.0.1:9/b?sig=abc", &w.path().join("d0"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("query string"), "{err}");
    // Another scheme is no local path: said so, with the password hidden.
    let (code, err) = sync("ftp://u:pw-secret@example.com/b", &w.path().join("d0"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not ftp://") && !err.contains("pw-secret"),
        "{err}"
    );
    let packed = w.path().join("app.trove");
    crate::util::pack(&published, &packed);
    let (cache, dest) = (w.path().join("cache"), w.path().join("dest"));
    let o = trove_in(Some(&cache))
        .args(["sync", packed.to_str().unwrap()])
        .arg(&dest)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(bundle_files(&dest), bundle_files(&published));
    assert!(
        !cache.join("packed").exists()
            || std::fs::read_dir(cache.join("packed"))
                .unwrap()
                .all(|e| !e.unwrap().path().is_dir())
    );
    let left = crate::util::names_in(w.path());
    assert!(
        !left.iter().any(|n| n.starts_with(".dest.tmp-")),
        "{left:?}"
    );
    trove().arg("verify").arg(&dest).assert().success();
}

#[test]
fn sync_never_prints_a_urls_password_and_warns_before_sending_one_in_clear() {
    let repo = modules(3);
    let w = tempfile::tempdir().unwrap();
    let published = w.path().join("published");
    index(repo.path(), &published, &[]);
    let server = serve_dir(&published, Duration::ZERO);
    // The local server ignores the credentials: the sync succeeds, and neither its summary nor
    // its JSON names the password; 127.0.0.1 is this machine, so no warning.
    let url = server
        .url
        .replacen("http://", "http://ci:hunter2-secret@", 1);
    let dest = w.path().join("dest");
    let out = trove()
        .args(["sync", &url])
        .arg(&dest)
        .arg("--json")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        summary["source"],
        server.url.replacen("http://", "http://***@", 1)
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    // A file missing on the server: the error names the URL, not the password.
    let (code, err) = sync(&format!("{url}/nothing-here"), &w.path().join("d1"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("***@127.0.0.1") && err.contains("404"),
        "{err}"
    );
    // Another host over plain HTTP: a token or a password would travel in clear. Warned first
    // (the name never resolves, so nothing is sent here).
    let far = "http://ci:hunter2-secret@trove-sync-test.invalid/b/";
    let o = trove()
        .args(["sync", far])
        .arg(w.path().join("d2"))
        .args(["--retries", "0", "--timeout", "2"])
        .env("TROVE_SYNC_TOKEN", "tok-123456")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("warning: $TROVE_SYNC_TOKEN and the URL's user and password will be sent unencrypted to trove-sync-test.invalid"),
        "{err}"
    );
    for out in [&stdout, &stderr, &err] {
        assert!(
            !out.contains("hunter2") && !out.contains("tok-123456"),
            "{out}"
        );
    }
}

/// A sync cut off halfway (the link drops mid-file) keeps what it fetched beside DEST, and the
/// next one resumes: files it had whole are not fetched again, the file cut off is continued
/// with a range request (or sent whole by a server without ranges), a damaged part is fetched
/// again from its start. A link that drops every reply partway still gets there within one run
/// by resuming on each retry. A staging folder that is not the user's own is refused.
#[test]
fn an_interrupted_sync_resumes_where_it_stopped() {
    let repo = modules(300);
    let w = tempfile::tempdir().unwrap();
    let published = w.path().join("published");
    index(repo.path(), &published, &[]);
    let server = serve_dir(&published, Duration::ZERO);
    // The bundle's files and its manifest (which is fetched again).
    let total = listed_bytes(&published);
    let stage = |d: &str| w.path().join(format!(".{d}.sync-partial"));
    let staged_bytes = |d: &str, whole_only: bool| -> u64 {
        std::fs::read_dir(stage(d))
            .map(|r| {
                r.map(|e| e.unwrap().path())
                    .filter(|p| !whole_only || p.extension().is_none())
                    .map(|p| p.metadata().unwrap().len())
                    .sum()
            })
            .unwrap_or(0)
    };
    // The link drops after 60% of the bundle: exit 2, DEST not made, what came is kept.
    let cut_run = |d: &str| {
        server.budget.store(total * 6 / 10, Relaxed);
        let (code, err) = sync(&server.url, &w.path().join(d));
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("the next sync resumes"), "{err}");
        assert!(!w.path().join(d).exists());
        let held = staged_bytes(d, false);
        assert!(held > total / 2 && held < total, "{held} of {total}");
        server.budget.store(u64::MAX, Relaxed);
        held
    };
    // `trove sync --json` into `d`, which succeeds: its summary and the bytes served.
    let synced = |d: &str| -> (serde_json::Value, u64) {
        server.served.store(0, Relaxed);
        let out = trove()
            .args(["sync", &server.url])
            .arg(w.path().join(d))
            .args(["--retries", "0", "--json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert_eq!(bundle_files(&w.path().join(d)), bundle_files(&published));
        assert!(!stage(d).exists());
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (summary, server.served.load(Relaxed))
    };

    // Only what the first run lacked travels, the rest of the file cut off by a range request.
    let held = cut_run("dest");
    let (summary, sent) = synced("dest");
    assert_eq!(sent, total - held, "{summary}");
    assert_eq!(summary["bytes_resumed"], held, "{summary}");
    assert_eq!(server.ranged.load(Relaxed), 1);
    trove()
        .arg("verify")
        .arg(w.path().join("dest"))
        .assert()
        .success();

    // A server without ranges sends the file cut off whole again; the whole ones are kept.
    cut_run("d2");
    let whole = staged_bytes("d2", true);
    server.ranges.store(false, Relaxed);
    let (summary, sent) = synced("d2");
    server.ranges.store(true, Relaxed);
    assert_eq!(sent, total - whole, "{summary}");
    assert_eq!(summary["bytes_resumed"], whole, "{summary}");

    // A part damaged on disk fails its check once resumed: fetched again from its start.
    cut_run("d3");
    let whole = staged_bytes("d3", true);
    let part = std::fs::read_dir(stage("d3"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "part") && p.metadata().unwrap().len() > 0)
        .expect("a part cut off");
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&part, bytes).unwrap();
    let ranged = server.ranged.load(Relaxed);
    let (summary, _) = synced("d3");
    assert_eq!(server.ranged.load(Relaxed), ranged + 1);
    assert_eq!(summary["bytes_resumed"], whole, "{summary}");

    // Every reply dropped after a fifth of the largest file: one run with retries gets there.
    let largest = manifest(&published)["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["bytes"].as_u64().unwrap())
        .max()
        .unwrap();
    server.cut_each.store(largest / 5 + 1, Relaxed);
    let o = trove()
        .args(["sync", &server.url])
        .arg(w.path().join("d4"))
        .args(["--retries", "6", "--quiet"])
        .output()
        .unwrap();
    server.cut_each.store(u64::MAX, Relaxed);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(bundle_files(&w.path().join("d4")), bundle_files(&published));
    assert!(!stage("d4").exists());

    // A staging folder that is a link (another user's, planted beside DEST) is refused, and
    // nothing where it points is touched.
    let elsewhere = w.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("keep.txt"), "mine").unwrap();
    std::os::unix::fs::symlink(&elsewhere, stage("d5")).unwrap();
    let (code, err) = sync(&server.url, &w.path().join("d5"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("refusing") && err.contains(".d5.sync-partial"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("keep.txt")).unwrap(),
        "mine"
    );
}
