//! Reliability and safety through the real binary: the output lock, SIGKILL mid-write, a write
//! failure (file size limit), a panicking worker, secret redaction.
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

/// A repository big enough that an index run takes a while: `n` small Python files.
fn many_files(n: usize) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for i in 0..n {
        write(
            t.path(),
            &format!("pkg{}/mod_{i}.py", i % 20),
            format!(
                "def handler_{i}(request, retries={i}):\n    \"\"\"Handles request kind {i}.\"\"\"\n    total = sum(x * {i} for x in request.items)\n    return total + retries\n\n\nclass Service{i}:\n    def run(self, job):\n        return handler_{i}(job)\n"
            )
            .as_bytes(),
        );
    }
    t
}

fn trove_path() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("trove")
}

#[test]
fn a_second_run_on_the_same_output_is_refused_by_the_lock() {
    use rustix::fs::{FlockOperation, flock};
    use std::io::Write;
    let (r, w) = (many_files(5), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let before = parquet_bytes(&b);
    // Another run holds the lock (the kernel's flock, as a running trove holds it).
    let mut held = std::fs::File::create(w.path().join(".b.lock")).unwrap();
    flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
    writeln!(held, "4242").unwrap();
    for args in [
        vec![
            "index".to_string(),
            r.path().display().to_string(),
            "-o".into(),
            b.display().to_string(),
        ],
        vec![
            "merge".to_string(),
            b.display().to_string(),
            b.display().to_string(),
        ],
    ] {
        trove()
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(
                "another trove run (pid 4242) is writing",
            ));
    }
    assert_eq!(parquet_bytes(&b), before);
    // Released: the next run goes ahead.
    drop(held);
    index(r.path(), &b, &[]);
}

#[test]
fn sigkill_at_any_point_leaves_the_old_bundle_whole() {
    let (r, w) = (many_files(1500), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &["--threads", "2"]);
    let old = parquet_bytes(&b);
    // Every file changes, so a finished run gives a different bundle.
    for i in 0..1500 {
        write(
            r.path(),
            &format!("pkg{}/mod_{i}.py", i % 20),
            format!("def changed_{i}():\n    return {i}\n").as_bytes(),
        );
    }
    // What a finished run writes (bundles are deterministic).
    let fresh = w.path().join("fresh");
    index(r.path(), &fresh, &[]);
    let new = parquet_bytes(&fresh);
    assert_ne!(new, old);
    let mut args: Vec<std::ffi::OsString> = vec!["index".into(), r.path().into(), "-o".into()];
    args.extend([b.clone().into_os_string(), "--quiet".into()]);
    // The run adds a segment (the commit point is its manifest), then compacts (every row is
    // dead): a kill between the two leaves the two-segment bundle, which answers as the new one.
    let full = crate::util::tables(&fresh);
    let appended = |b: &Path| {
        crate::util::manifest(b)["segments"]
            .as_array()
            .unwrap()
            .len()
            == 2
            && crate::util::compacted_tables(b) == full
    };
    killed_runs_leave_old_or_new(
        &args,
        &b,
        &old,
        &new,
        Some(&appended),
        &w.path().join("cache"),
    );
    // The next run cleans up what the killed ones left beside the bundle and in it.
    index(r.path(), &b, &[]);
    assert_no_leftovers(w.path());
    assert_eq!(listed_bytes(&b), parquet_bytes(&b), "garbage segments left");
}

/// The Parquet files of `b` its manifest lists (what is live; a killed run's unlisted segment
/// folder is garbage the next run removes), by path.
fn listed_bytes(b: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let m = crate::util::manifest(b);
    let listed: Vec<&str> = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let mut all = parquet_bytes(b);
    all.retain(|name, _| listed.contains(&name.as_str()));
    all
}

/// A run killed between its manifest's commit and moving its `views.sql` in leaves views older
/// than the manifest: `verify` rewrites them from it (with a note), and refuses views changed
/// with no run killed and views the manifest does not derive from its own segments.
#[test]
fn views_left_behind_by_a_kill_after_the_commit_are_brought_up_to_date() {
    let (r, w) = (sample_repo(), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let old_views = std::fs::read(b.join("views.sql")).unwrap();
    write(r.path(), "src/extra.py", b"def extra():\n    return 1\n");
    commit(r.path(), "extra");
    index(r.path(), &b, &["--since", "auto", "--no-compact"]);
    let new_views = std::fs::read(b.join("views.sql")).unwrap();
    assert_ne!(old_views, new_views);
    // What the kill leaves: the new manifest, the old views, the new ones staged beside them.
    std::fs::write(b.join("views.sql"), &old_views).unwrap();
    std::fs::write(b.join(".views.sql.next"), &new_views).unwrap();
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "older than manifest.json (a run was killed",
        ));
    assert_eq!(std::fs::read(b.join("views.sql")).unwrap(), new_views);
    assert!(!b.join(".views.sql.next").exists());
    // Views changed with no run killed (nothing staged) were altered after they were written:
    // an error that leaves them as they are, not a quiet rewrite. Deleted, they are written anew.
    let mut altered = new_views.clone();
    altered.extend_from_slice(b"COPY (SELECT 42) TO 'elsewhere.csv';\n");
    std::fs::write(b.join("views.sql"), &altered).unwrap();
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("changed after it was written"));
    assert_eq!(std::fs::read(b.join("views.sql")).unwrap(), altered);
    std::fs::remove_file(b.join("views.sql")).unwrap();
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .success()
        .stderr(predicates::str::contains("views.sql was missing"));
    assert_eq!(std::fs::read(b.join("views.sql")).unwrap(), new_views);
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .success()
        .stderr(predicates::str::is_empty());
    // A killed incremental run's unfinished segment is no part of the bundle: verify names it.
    let building = b.join("segments/.building");
    std::fs::create_dir_all(&building).unwrap();
    std::fs::write(building.join("chunks.parquet"), b"half").unwrap();
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "segments/.building not listed by manifest.json",
        ));
    std::fs::remove_dir_all(&building).unwrap();
    // A stray file there (a Finder `.DS_Store`) is named too, and the next run removes it.
    std::fs::write(b.join("segments/.DS_Store"), b"finder").unwrap();
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .success()
        .stderr(predicates::str::contains("segments/.DS_Store not listed"));
    write(r.path(), "src/extra2.py", b"def extra2():\n    return 2\n");
    commit(r.path(), "extra2");
    index(r.path(), &b, &["--since", "auto", "--no-compact"]);
    assert!(!b.join("segments/.DS_Store").exists());
    let new_views = std::fs::read(b.join("views.sql")).unwrap();
    // A manifest whose views entry is not the views of its segments is damage, not a late file.
    let mut m = manifest(&b);
    for f in m["files"].as_array_mut().unwrap() {
        if f["name"] == "views.sql" {
            f["sha256"] = "0".repeat(64).into();
        }
    }
    std::fs::write(
        b.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "does not list the views.sql of its own segments",
        ));
    assert_eq!(std::fs::read(b.join("views.sql")).unwrap(), new_views);
}

/// Runs `trove ARGS` (which writes `b`) again and again, SIGKILLed after growing delays, until
/// one run finishes: after every kill the bundle verifies and its listed files are byte for byte
/// the old one (`old`) or the whole new one (`new`), or a committed state between the two that
/// `mid` accepts — never a mix. At least one run must have been killed.
fn killed_runs_leave_old_or_new(
    args: &[std::ffi::OsString],
    b: &Path,
    old: &std::collections::BTreeMap<String, Vec<u8>>,
    new: &std::collections::BTreeMap<String, Vec<u8>>,
    mid: Option<&dyn Fn(&Path) -> bool>,
    cache: &Path,
) {
    let mut kills = 0;
    for delay_ms in [0u64, 30, 80, 150, 250, 400, 600, 900, 1400] {
        let mut child = Command::new(trove_path())
            .args(args)
            .env("TROVE_CACHE_DIR", cache)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        kills += usize::from(!status.success());
        trove().arg("verify").arg(b).assert().success();
        let now = listed_bytes(b);
        assert!(
            &now == old || &now == new || mid.is_some_and(|f| f(b)),
            "after a kill at {delay_ms} ms: a mixed bundle"
        );
        if &now == new {
            break;
        }
    }
    assert!(kills > 0);
}

/// No temp directory of a killed run is left beside the bundle `b` in `dir`.
fn assert_no_leftovers(dir: &Path) {
    let left = crate::util::names_in(dir);
    assert!(
        !left
            .iter()
            .any(|n| n.starts_with(".b.tmp-") || n == ".b.sync-partial"),
        "{left:?}"
    );
}

/// Where a filesystem cannot exchange two folders, a swap renames the old bundle aside first:
/// a run killed between the two renames leaves no bundle and the old one under a temp name. The
/// next run that takes the lock puts it back (the old bundle is kept, as after any kill) and
/// clears the rest.
#[test]
fn a_swap_killed_between_its_renames_gets_the_old_bundle_back() {
    let (r, w) = (sample_repo(), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let old = parquet_bytes(&b);
    std::fs::rename(&b, w.path().join(".b.tmp-4242-old")).unwrap();
    let new = w.path().join(".b.tmp-4242");
    std::fs::create_dir_all(new.join("segments")).unwrap();
    std::fs::write(new.join("manifest.json"), b"{}").unwrap();
    trove().arg("compact").arg(&b).assert().success();
    assert_eq!(parquet_bytes(&b), old);
    assert_no_leftovers(w.path());
    trove().arg("verify").arg(&b).assert().success();
}

/// `trove merge` killed at any point leaves the bundle it replaces whole, and the next merge
/// cleans up after it.
#[test]
fn sigkill_during_a_merge_leaves_the_old_bundle_whole() {
    let (r, w) = (many_files(1500), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &["--exclude", "pkg1*/**"]);
    let old = parquet_bytes(&b);
    let (s1, s2) = (w.path().join("s1"), w.path().join("s2"));
    index(r.path(), &s1, &["--shard", "1/2"]);
    index(r.path(), &s2, &["--shard", "2/2"]);
    let merged = w.path().join("merged");
    let merge = |out: &Path| -> Vec<std::ffi::OsString> {
        vec![
            "merge".into(),
            out.into(),
            s1.clone().into_os_string(),
            s2.clone().into_os_string(),
            "--quiet".into(),
        ]
    };
    trove().args(merge(&merged)).assert().success();
    let new = parquet_bytes(&merged);
    assert_ne!(new, old);
    killed_runs_leave_old_or_new(&merge(&b), &b, &old, &new, None, &w.path().join("cache"));
    trove().args(merge(&b)).assert().success();
    assert_eq!(parquet_bytes(&b), new);
    assert_no_leftovers(w.path());
}

/// `trove compact` killed at any point leaves the segmented bundle whole (or the compacted one).
#[test]
fn sigkill_during_a_compaction_leaves_the_bundle_whole() {
    let (r, w) = (many_files(1500), tempfile::tempdir().unwrap());
    git(r.path(), &["init", "-q"]);
    commit(r.path(), "start");
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    for i in (0..1500).step_by(7) {
        write(
            r.path(),
            &format!("pkg{}/mod_{i}.py", i % 20),
            format!("def changed_{i}():\n    return {i}\n").as_bytes(),
        );
    }
    commit(r.path(), "change");
    index(r.path(), &b, &["--since", "auto", "--no-compact"]);
    let old = parquet_bytes(&b);
    let compacted = w.path().join("compacted");
    copy_dir(&b, &compacted);
    trove().arg("compact").arg(&compacted).assert().success();
    let new = parquet_bytes(&compacted);
    assert_ne!(new, old);
    let args: Vec<std::ffi::OsString> = vec!["compact".into(), b.clone().into(), "-q".into()];
    killed_runs_leave_old_or_new(&args, &b, &old, &new, None, &w.path().join("cache"));
    trove().arg("compact").arg(&b).assert().success();
    assert_eq!(parquet_bytes(&b), new);
    assert_no_leftovers(w.path());
}

/// `trove sync` killed at any point (each file the server sends comes after a pause) leaves the
/// consumer's bundle as it was or as the server's.
#[test]
fn sigkill_during_a_sync_leaves_the_old_bundle_whole() {
    let (r, w) = (many_files(300), tempfile::tempdir().unwrap());
    let published = w.path().join("published");
    index(r.path(), &published, &[]);
    let b = w.path().join("b");
    let server = serve_dir(&published, Duration::from_millis(40));
    let sync = vec![
        "sync".into(),
        server.url.clone().into(),
        b.clone().into_os_string(),
        "-q".into(),
    ];
    trove().args(&sync).assert().success();
    let old = parquet_bytes(&b);
    write(r.path(), "pkg0/extra.py", b"def extra():\n    return 1\n");
    index(r.path(), &published, &[]);
    let new = parquet_bytes(&published);
    assert_ne!(new, old);
    killed_runs_leave_old_or_new(&sync, &b, &old, &new, None, &w.path().join("cache"));
    trove().args(&sync).assert().success();
    assert_eq!(bundle_files(&b), bundle_files(&published));
    assert_no_leftovers(w.path());
}

#[test]
fn a_write_failure_fails_cleanly_and_keeps_the_old_bundle() {
    let (r, w) = (many_files(400), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let old = parquet_bytes(&b);
    write(r.path(), "pkg0/extra.py", b"def extra():\n    return 1\n");
    // A full rebuild (another size cap) under a file size limit of 16 KiB: the kernel fails the write that passes it (EFBIG), as a full
    // disk would (SIGXFSZ ignored so the write returns the error).
    let out = Command::new("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 16; exec \"$0\" index \"$1\" -o \"$2\" --quiet --max-file-bytes 999999")
        .arg(trove_path())
        .arg(r.path())
        .arg(&b)
        .env("TROVE_CACHE_DIR", w.path().join("cache"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("left as it was"), "{err}");
    // One line that names the file and the cause, once.
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(err.matches("File too large").count(), 1, "{err}");
    assert_eq!(parquet_bytes(&b), old);
    trove().arg("verify").arg(&b).assert().success();
    let left = crate::util::names_in(w.path());
    assert!(!left.iter().any(|n| n.starts_with(".b.tmp-")), "{left:?}");
}

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature (scripts/test.sh)"
)]
fn a_panicking_file_is_skipped_and_strict_makes_it_an_error() {
    let (r, w) = (many_files(6), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    let out = index_cmd(r.path(), &b, &[])
        .env("FAILPOINTS", "index-file=return(pkg3/mod_3.py)")
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("1 file(s) hit an internal error"), "{err}");
    assert_eq!(
        skipped_reasons(&b).get("pkg3/mod_3.py").map(String::as_str),
        Some("internal-error")
    );
    assert_eq!(indexed_paths(&b).len(), 5);
    index_cmd(r.path(), &w.path().join("b2"), &["--strict", "--quiet"])
        .env("FAILPOINTS", "index-file=return(pkg3/mod_3.py)")
        .assert()
        .code(3);
    index_cmd(r.path(), &w.path().join("b3"), &["--strict", "--quiet"])
        .assert()
        .success();
}

/// Every cell of every table, as text.
fn all_text(b: &Path) -> String {
    let mut s = String::new();
    for t in trove::bundle::TABLES {
        for row in duck(&format!("SELECT * FROM {}", pq(b, t))) {
            s.push_str(&row.join("\u{1}"));
            s.push('\n');
        }
    }
    s
}

#[test]
fn secrets_are_redacted_everywhere_and_nothing_names_the_machine() {
    let (r, w) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let secrets = [
        "AKIAQWERTYUIOPASDFGH",
        "ghp_Zx8Qp2Lm9Rt4Vw7Yb1Nc5Hd3Kf6Jg0aB1cD2",
        "xoxb-2718281828-3141592653-AbCdEfGhIjKl",
        "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2",
        "Tr0ub4dor&3horse",
        "q8Zr2LxP0vN7mK4tY1wB6sD9fH3jG5cE",
    ];
    write(
        r.path(),
        "src/settings.py",
        format!(
            "AWS_ACCESS_KEY_ID = \"{}\"\nGITHUB = \"{}\"\nSLACK_TOKEN = \"{}\"\nDB_PASSWORD = \"{}\"\napi_secret = \"{}\"\n\n\ndef connect():\n    return DB_PASSWORD\n",
            secrets[0], secrets[1], secrets[2], secrets[4], secrets[5]
        )
        .as_bytes(),
    );
    write(
        r.path(),
        "deploy/README.md",
        format!(
            "# Deploy\n\nThe key:\n\n-----BEGIN RSA PRIVATE KEY-----\n{}\nAbCdEf0123456789\n-----END RSA PRIVATE KEY-----\n\nDone.\n",
            secrets[3]
        )
        .as_bytes(),
    );
    let b = w.path().join("b");
    let out = index_cmd(r.path(), &b, &["--json"]).assert().success();
    let s: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(s["redactions"], 6, "{s}");
    assert_eq!(manifest(&b)["counts"]["redactions"], 6);
    let text = all_text(&b);
    let mut raw = Vec::new();
    for bytes in bundle_files(&b).into_values() {
        raw.extend(bytes);
    }
    let raw = String::from_utf8_lossy(&raw);
    for secret in secrets {
        assert!(!text.contains(secret), "{secret} is in a table");
        assert!(!raw.contains(secret), "{secret} is in a file's bytes");
    }
    assert!(text.contains("[REDACTED:private-key]"));
    assert!(text.contains("DB_PASSWORD = \"[REDACTED:password]\""));
    // Line numbers stay right after a redacted key block.
    let done = duck(&format!(
        "SELECT start_line FROM {} WHERE content LIKE '%Done.%'",
        pq(&b, "chunks")
    ));
    assert!(
        done.iter().any(|r| r[0].parse::<i64>().unwrap() <= 11),
        "{done:?}"
    );
    // Nothing names the machine: no absolute path of it, no user name, no host name.
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let home = std::env::var("HOME").unwrap_or_default();
    let everything = format!(
        "{text}{}",
        std::fs::read_to_string(b.join("manifest.json")).unwrap()
    );
    for name in [
        r.path().to_string_lossy().to_string(),
        w.path().to_string_lossy().to_string(),
        home,
        host.trim().to_string(),
    ] {
        if name.len() > 3 {
            assert!(!everything.contains(&name), "the bundle names {name:?}");
        }
    }
    // --no-redact keeps them (the scan above can see a secret when there is one).
    let kept = w.path().join("kept");
    index(r.path(), &kept, &["--no-redact"]);
    let text = all_text(&kept);
    assert!(secrets.iter().all(|s| text.contains(s)));
}

/// Every file under `dir` (recursively), relative.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

/// A full disk (a small tmpfs; root only, else skipped): read commands whose cache is on it
/// answer as ever and leave no half-written temporaries; a pack that cannot be unpacked there is
/// not called damaged; a sync or unpack that cannot fit is refused or fails naming the disk;
/// and an incremental run that fails at any point of its writing leaves the live bundle exactly
/// as it was, with nothing of its own beside it.
#[test]
fn a_full_disk_is_named_as_one_and_leaves_nothing_behind() {
    let Some(disk) = SmallDisk::mount(4 << 20) else {
        eprintln!("skipped: no tmpfs can be mounted here (needs root)");
        return;
    };
    let (r, w) = (sample_repo(), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let packed = w.path().join("b.trove");
    pack(&b, &packed);
    let want = query_jsonl_in(
        Some(&w.path().join("cache")),
        &[b.as_os_str(), "invoice".as_ref()],
    );

    // The query cache on a full disk: the same answers, no temporaries left in it.
    let cache = disk.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    for leave in [0, 8 << 10, 32 << 10] {
        disk.fill(leave);
        let got = query_jsonl_in(Some(&cache), &[b.as_os_str(), "invoice".as_ref()]);
        assert_eq!(got, want, "{leave} bytes free");
        trove_in(Some(&cache)).arg("map").arg(&b).assert().success();
        let tmp: Vec<String> = files_under(&cache)
            .into_iter()
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert!(tmp.is_empty(), "{leave} bytes free: {tmp:?}");
        // A pack is unpacked into that cache: the disk is full, the pack is not damaged.
        let out = trove_in(Some(&cache))
            .arg("query")
            .arg(&packed)
            .arg("invoice")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                err.contains("No space left") || err.contains("free"),
                "{err}"
            );
            assert!(!err.contains("damaged"), "{err}");
        }
    }

    // A sync from a folder on another disk, and an unpack, that cannot fit.
    disk.fill(32 << 10);
    let out = trove()
        .arg("sync")
        .arg(&b)
        .arg(disk.path().join("d"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs") && err.contains("nothing was changed"),
        "{err}"
    );
    assert!(!disk.path().join("d").exists());
    let out = trove()
        .arg("unpack")
        .arg(&packed)
        .arg("-o")
        .arg(disk.path().join("u"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("damaged"), "{err}");
    assert!(err.contains(&disk.path().display().to_string()), "{err}");
    assert!(!disk.path().join("u").exists());

    // An incremental run into a bundle on the disk, failing at each point of its writing until
    // the disk holds it: the bundle as it was, nothing beside it, then the run that fits.
    disk.unfill();
    let live = disk.path().join("live");
    trove().arg("sync").arg(&b).arg(&live).assert().success();
    let before = bundle_files(&live);
    write(r.path(), "billing/refunds.py", &b"def refund(invoice):\n    \"\"\"Gives the money back.\"\"\"\n    return -invoice.total()\n".repeat(40));
    commit(r.path(), "refunds");
    let (mut failures, mut leave) = (0, 0u64);
    loop {
        disk.fill(leave);
        let out = index_cmd(
            r.path(),
            &live,
            &["--since", "auto", "--no-compact", "--quiet"],
        )
        .env("TROVE_CACHE_DIR", w.path().join("cache"))
        .output()
        .unwrap();
        disk.unfill();
        if out.status.success() {
            break;
        }
        failures += 1;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{leave} bytes free: {err}");
        assert!(err.contains("No space left"), "{leave} bytes free: {err}");
        assert_eq!(bundle_files(&live), before, "{leave} bytes free: {err}");
        let mut beside = names_in(&live);
        beside.retain(|n| n.starts_with('.'));
        assert!(beside.is_empty(), "{leave} bytes free: {beside:?}");
        assert_eq!(std::fs::read_dir(live.join("segments")).unwrap().count(), 1);
        leave += 4 << 10;
        assert!(leave < 2 << 20, "never fits: {err}");
    }
    assert!(failures > 3, "{failures}");
    assert_eq!(manifest(&live)["segments"].as_array().unwrap().len(), 2);
    trove().arg("verify").arg(&live).assert().success();
    // A compaction asked for (--compact) that finds no room: said even with --quiet, exit code 4,
    // the bundle as it was committed.
    disk.fill(16 << 10);
    let out = index_cmd(
        r.path(),
        &live,
        &["--since", "auto", "--compact", "--quiet"],
    )
    .env("TROVE_CACHE_DIR", w.path().join("cache"))
    .output()
    .unwrap();
    disk.unfill();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("compaction (--compact) failed") && err.contains("No space left"),
        "{err}"
    );
    assert_eq!(manifest(&live)["segments"].as_array().unwrap().len(), 2);
    trove().arg("verify").arg(&live).assert().success();
}

/// Readers while writers swap new versions in (compact, a full index): every read answers, from
/// the old version or the new (a reader that had read the old manifest used to fail on files the
/// swap removed: "No files found that match the pattern", about one `trove sql` in three).
/// And `trove verify` meanwhile waits for the writer instead of reporting the half-written state
/// or rewriting views.sql under it.
#[test]
fn readers_answer_while_writers_swap_versions_in() {
    let (r, w) = (sample_repo(), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (root, b, stop) = (r.path().to_path_buf(), b.clone(), stop.clone());
        std::thread::spawn(move || {
            for i in 0..12 {
                write(
                    &root,
                    "billing/churn.py",
                    format!("def churn_{i}():\n    return {i}\n").as_bytes(),
                );
                commit(&root, &format!("churn {i}"));
                index(&root, &b, &["--since", "auto", "--no-compact"]);
                trove().arg("compact").arg(&b).assert().success();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    };
    let mut reads = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        for args in [
            vec!["sql", "SELECT count(*) FROM chunks"],
            vec!["query", "invoice total"],
            vec!["map"],
        ] {
            let out = trove()
                .arg(args[0])
                .arg(&b)
                .args(&args[1..])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            reads += 1;
        }
        let out = trove().arg("verify").arg(&b).output().unwrap();
        assert!(
            out.status.success(),
            "verify: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    writer.join().unwrap();
    assert!(reads >= 6, "{reads}");
    trove().arg("verify").arg(&b).assert().success();
}

/// A pack killed while writing leaves `.X.trove.tmp-PID` beside its output; the next pack into
/// the same output removes it (it stayed for good), and two packs into one output do not race.
#[test]
fn a_killed_packs_temporary_goes_with_the_next_pack() {
    let (r, w) = (sample_repo(), tempfile::tempdir().unwrap());
    let b = w.path().join("b");
    index(r.path(), &b, &[]);
    let left = w.path().join(".x.trove.tmp-4242");
    std::fs::write(&left, vec![0u8; 4096]).unwrap();
    pack(&b, &w.path().join("x.trove"));
    assert!(!left.exists());
    trove()
        .arg("verify")
        .arg(w.path().join("x.trove"))
        .assert()
        .success();
}
