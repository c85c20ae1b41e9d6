//! A hostile tree, generated here (nothing binary is committed): broken encodings, line-ending
//! oddities, huge and deeply nested files, thousands of tiny files, names that are not UTF-8,
//! symlink loops and escapes, a FIFO, empty files, syntax that breaks every grammar. Indexing it
//! must finish, index what can be indexed and list everything else with a reason.
use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use crate::util::*;

/// Builds the tree; returns the repo-relative paths of the regular files written.
fn hostile_tree(root: &Path) -> Vec<String> {
    let mut files: Vec<(String, Vec<u8>)> = vec![
        (
            "enc/invalid.py".into(),
            b"def f():\n    return '\xff\xfe\xfd'\n".to_vec(),
        ),
        (
            "enc/latin1.txt".into(),
            b"caf\xe9 cr\xe8me br\xfbl\xe9e\n".to_vec(),
        ),
        ("enc/utf16.md".into(), {
            let mut v = vec![0xff, 0xfe];
            for u in "# Title\n\nUTF-16 text.\n".encode_utf16() {
                v.extend(u.to_le_bytes());
            }
            v
        }),
        (
            "eol/crlf.py".into(),
            b"def crlf():\r\n    return 1\r\n\r\nclass K:\r\n    pass\r\n".to_vec(),
        ),
        (
            "eol/lone_cr.js".into(),
            b"function lone() {\r  return 1;\r}\rfunction two() { return 2; }\r".to_vec(),
        ),
        ("empty/empty.py".into(), Vec::new()),
        ("empty/empty.md".into(), Vec::new()),
        ("big/minified.js".into(), {
            let mut v = b"var a=".to_vec();
            v.extend(std::iter::repeat_n(b'1', 5 << 20));
            v
        }),
        (
            "deep/deep.py".into(),
            format!("x = {}1{}\n", "(\n".repeat(100_000), "\n)".repeat(100_000)).into_bytes(),
        ),
        (
            "deep/deep.js".into(),
            format!(
                "let x = {}{};\n",
                "[\n".repeat(100_000),
                "\n]".repeat(100_000)
            )
            .into_bytes(),
        ),
        (
            "deep/deep.rs".into(),
            format!(
                "fn f() {{ {}{} }}\n",
                "{\n".repeat(50_000),
                "\n}".repeat(50_000)
            )
            .into_bytes(),
        ),
        (
            "deep/deep.json".into(),
            format!("{}{}", "[\n".repeat(100_000), "\n]".repeat(100_000)).into_bytes(),
        ),
    ];
    // Syntax that breaks each language, under the names its fixtures use.
    let langs = fixtures().join("languages");
    for lang in std::fs::read_dir(&langs).unwrap() {
        let lang = lang.unwrap().path();
        for f in std::fs::read_dir(&lang).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            files.push((
                format!("broken/{}/{name}", lang.file_name().unwrap().to_string_lossy()),
                b"}}} ))) ]]] def class fn func ( { [ <<< >>> \" ' ` /* \n#if\n@@@ %% \\\n\x01\x02 end end end\n{{{{ (((( [[[[\n".to_vec(),
            ));
        }
    }
    for i in 0..10_000 {
        files.push((format!("tiny/t{i}.txt"), format!("tiny {i}\n").into_bytes()));
    }
    for (rel, bytes) in &files {
        write(root, rel, bytes);
    }
    // A 50 MB file (sparse: the size is what matters).
    let huge = root.join("big/huge.log");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(50 << 20)
        .unwrap();
    // A name that is not UTF-8.
    std::fs::write(
        root.join("enc")
            .join(std::ffi::OsStr::from_bytes(b"bad\xffname.py")),
        b"def bad_name():\n    return 1\n",
    )
    .unwrap();
    // Symlinks: a loop, one out of the root, one to a directory.
    std::fs::create_dir_all(root.join("links")).unwrap();
    std::os::unix::fs::symlink("loop_b", root.join("links/loop_a")).unwrap();
    std::os::unix::fs::symlink("loop_a", root.join("links/loop_b")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("links/etc")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join("links/hostname.txt")).unwrap();
    // A FIFO: reading it would block forever.
    let st = std::process::Command::new("mkfifo")
        .arg(root.join("fifo.txt"))
        .status()
        .unwrap();
    assert!(st.success());
    let mut out: Vec<String> = files.into_iter().map(|(p, _)| p).collect();
    out.push("big/huge.log".into());
    out
}

#[test]
fn a_hostile_tree_is_indexed_without_a_crash_and_everything_is_accounted_for() {
    let (r, w) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let written = hostile_tree(r.path());
    let b = w.path().join("b");
    let out = index_cmd(r.path(), &b, &["--json"]).assert().success();
    let s: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    trove().arg("verify").arg(&b).assert().success();
    let indexed: BTreeSet<String> = indexed_paths(&b).into_iter().collect();
    let skipped = skipped_reasons(&b);
    // Every regular file written is indexed or skipped with a reason.
    let unaccounted: Vec<&String> = written
        .iter()
        .filter(|p| !indexed.contains(*p) && !skipped.contains_key(*p))
        .collect();
    assert!(unaccounted.is_empty(), "{unaccounted:?}");
    // What can be indexed is.
    for p in [
        "eol/crlf.py",
        "eol/lone_cr.js",
        "deep/deep.py",
        "deep/deep.js",
        "deep/deep.rs",
        "deep/deep.json",
        "tiny/t9999.txt",
    ] {
        assert!(
            indexed.contains(p),
            "{p} not indexed; skipped as {:?}",
            skipped.get(p)
        );
    }
    assert_eq!(
        indexed.iter().filter(|p| p.starts_with("tiny/")).count(),
        10_000
    );
    // The rest is skipped, each with its reason.
    assert_eq!(
        skipped.get("big/huge.log").map(String::as_str),
        Some("too-large")
    );
    assert_eq!(
        skipped.get("big/minified.js").map(String::as_str),
        Some("too-large")
    );
    assert_eq!(
        skipped.get("enc/utf16.md").map(String::as_str),
        Some("utf16")
    );
    assert!(skipped.contains_key("enc/invalid.py"), "{skipped:?}");
    assert!(skipped.contains_key("enc/latin1.txt"));
    // A name that is not UTF-8 cannot be a path in the bundle: skipped, named lossily.
    assert!(
        skipped.keys().any(|k| k.starts_with("enc/bad")),
        "{skipped:?}"
    );
    // Symlinks are never followed (no /etc content, no loop), the FIFO is never opened.
    assert!(
        !indexed.iter().any(|p| p.starts_with("links/")),
        "{indexed:?}"
    );
    assert!(!indexed.contains("fifo.txt"));
    // Every grammar-breaking file was either chunked or skipped, and the run says how many
    // parses fell back to lines.
    let broken = written.iter().filter(|p| p.starts_with("broken/")).count();
    assert!(broken >= 40);
    assert_eq!(
        indexed.iter().filter(|p| p.starts_with("broken/")).count()
            + skipped.keys().filter(|p| p.starts_with("broken/")).count(),
        broken
    );
    // Memory stays bounded (peak RSS of the whole run, 10 000 files and 100 000-deep trees).
    let rss = s["peak_rss_bytes"].as_u64().unwrap();
    assert!(rss < 1 << 30, "peak RSS {rss}");
    eprintln!(
        "hostile tree: {} files written, {} indexed, {} skipped, peak RSS {} MB",
        written.len(),
        indexed.len(),
        skipped.len(),
        rss >> 20
    );
}

#[test]
fn files_deleted_or_changed_during_the_run_are_indexed_or_skipped_never_lost_track_of() {
    let (r, w) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for i in 0..4000 {
        write(
            r.path(),
            &format!("d/f{i:04}.py"),
            format!("def f{i}():\n    return {i}\n").as_bytes(),
        );
    }
    let b = w.path().join("b");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("trove"))
        .arg("index")
        .arg(r.path())
        .arg("-o")
        .arg(&b)
        .args(["--quiet", "--threads", "1"])
        .env("TROVE_CACHE_DIR", w.path().join("cache"))
        .spawn()
        .unwrap();
    // Once the run has started writing (its walk is done or nearly): delete every third file,
    // rewrite every seventh, from the end backwards, while it reads them from the start.
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(10)
        && !std::fs::read_dir(w.path()).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".b.tmp-")
        })
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(30));
    for i in (0..4000).rev() {
        let p = r.path().join(format!("d/f{i:04}.py"));
        if i % 3 == 0 {
            let _ = std::fs::remove_file(&p);
        } else if i % 7 == 0 {
            let _ = std::fs::write(&p, format!("def changed{i}():\n    return -{i}\n"));
        }
    }
    assert!(child.wait().unwrap().success());
    trove().arg("verify").arg(&b).assert().success();
    let indexed: BTreeSet<String> = indexed_paths(&b).into_iter().collect();
    let skipped = skipped_reasons(&b);
    eprintln!(
        "deleted during the run: {} files skipped as unreadable",
        skipped.values().filter(|r| *r == "unreadable").count()
    );
    for i in 0..4000 {
        let p = format!("d/f{i:04}.py");
        assert!(
            indexed.contains(&p) || skipped.contains_key(&p) || i % 3 == 0,
            "{p} neither indexed nor skipped"
        );
        if let Some(reason) = skipped.get(&p) {
            assert_eq!(reason, "unreadable", "{p}");
        }
    }
    // Each indexed file's chunk is one of the two versions it had, whole.
    let rows = duck(&format!("SELECT path, content FROM {}", pq(&b, "chunks")));
    for row in rows {
        let i: usize = row[0][3..7].parse().unwrap();
        assert!(
            row[1].contains(&format!("def f{i}():"))
                || row[1].contains(&format!("def changed{i}():")),
            "{row:?}"
        );
    }
}

#[test]
fn unreadable_files_and_directories_are_skipped_as_unreadable() {
    let (r, w) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    use std::os::unix::fs::PermissionsExt;
    write(r.path(), "ok.py", b"def ok():\n    return 1\n");
    write(r.path(), "secret/inner.py", b"def inner():\n    return 2\n");
    write(r.path(), "locked.py", b"def locked():\n    return 3\n");
    let set = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(r.path(), 0o755);
    set(w.path(), 0o777);
    set(&r.path().join("locked.py"), 0o000);
    set(&r.path().join("secret"), 0o000);
    // Root reads anything: run as `nobody` when the tests run as root.
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    let mut cmd = if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(assert_cmd::cargo::cargo_bin("trove"));
        c
    } else {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("trove"))
    };
    let b = w.path().join("b");
    let out = cmd
        .arg("index")
        .arg(r.path())
        .arg("-o")
        .arg(&b)
        .arg("--quiet")
        .env("TROVE_CACHE_DIR", w.path().join("cache"))
        .output()
        .unwrap();
    set(&r.path().join("secret"), 0o755);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(indexed_paths(&b), ["ok.py"]);
    let skipped = skipped_reasons(&b);
    assert_eq!(
        skipped.get("locked.py").map(String::as_str),
        Some("unreadable"),
        "{skipped:?}"
    );
    assert!(
        skipped.keys().any(|k| k.starts_with("secret")),
        "{skipped:?}"
    );
}
