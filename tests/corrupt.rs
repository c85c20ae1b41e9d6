//! Corrupt and foreign bundles: every reading command refuses each kind of damage with exit code
//! 2 and a one-line reason — no panic, no result from damaged bytes, nothing written outside.
use std::path::Path;

use crate::util::*;

/// What is done to a copy of a bundle.
type Damage = Box<dyn Fn(&Path)>;

/// The manifest's entry for the table file `name`.
fn file_entry<'a>(m: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
    m["files"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["name"].as_str().unwrap().ends_with(&format!("/{name}")))
        .unwrap()
}

/// Each way a bundle is damaged: (name, what is done to a copy).
fn damages() -> Vec<(&'static str, Damage)> {
    let manifest_edit =
        |f: fn(&mut serde_json::Value)| Box::new(move |b: &Path| edit_manifest(b, f)) as Damage;
    vec![
        (
            "truncated",
            Box::new(|b: &Path| {
                let p = table_file(b, "chunks");
                let len = std::fs::metadata(&p).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
            }),
        ),
        (
            "flipped bytes",
            Box::new(|b: &Path| {
                let p = table_file(b, "postings");
                let mut bytes = std::fs::read(&p).unwrap();
                let mid = bytes.len() / 2;
                for x in &mut bytes[mid..mid + 16] {
                    *x ^= 0x5a;
                }
                std::fs::write(&p, bytes).unwrap();
            }),
        ),
        (
            "missing file",
            Box::new(|b: &Path| std::fs::remove_file(table_file(b, "terms")).unwrap()),
        ),
        (
            "newer format",
            manifest_edit(|m| m["format_major"] = 99.into()),
        ),
        (
            "no vector dimension",
            manifest_edit(|m| m["embedder"]["dim"] = 99_999_999_999u64.into()),
        ),
        (
            "sha256 mismatch",
            manifest_edit(|m| {
                let f = file_entry(m, "files.parquet");
                f["sha256"] = "0".repeat(64).into();
            }),
        ),
        (
            "escaping path",
            manifest_edit(|m| {
                let f = file_entry(m, "skipped.parquet");
                f["name"] = "../skipped.parquet".into();
            }),
        ),
        (
            "absolute path",
            manifest_edit(|m| {
                let f = file_entry(m, "deps.parquet");
                f["name"] = "/etc/hostname".into();
            }),
        ),
        (
            "not json",
            Box::new(|b: &Path| std::fs::write(b.join("manifest.json"), b"{\"format\": ").unwrap()),
        ),
    ]
}

#[test]
fn every_command_refuses_every_damage_with_one_line_and_exit_2() {
    let repo = sample_repo();
    let w = tempfile::tempdir().unwrap();
    let good = w.path().join("good");
    index(repo.path(), &good, &[]);
    let mut tried = 0;
    for (what, damage) in damages() {
        let b = w.path().join(what.replace(' ', "-"));
        copy_dir(&good, &b);
        damage(&b);
        let out = w.path().join(format!("{}-out", what.replace(' ', "-")));
        let runs: Vec<(&str, Vec<std::ffi::OsString>)> = vec![
            (
                "query",
                vec!["query".into(), b.clone().into(), "invoice".into()],
            ),
            (
                "sql",
                vec![
                    "sql".into(),
                    b.clone().into(),
                    "SELECT count(*) FROM chunks".into(),
                ],
            ),
            ("verify", vec!["verify".into(), b.clone().into()]),
            (
                "merge",
                vec!["merge".into(), out.clone().into(), b.clone().into()],
            ),
            (
                "index --since",
                vec![
                    "index".into(),
                    repo.path().into(),
                    "-o".into(),
                    b.clone().into(),
                    "--since".into(),
                    "auto".into(),
                    "--quiet".into(),
                ],
            ),
        ];
        let listing = crate::util::names_in;
        let before: Vec<String> = listing(w.path())
            .into_iter()
            .filter(|n| !n.ends_with(".lock"))
            .collect();
        let bundle_before = listing(&b);
        for (cmd, args) in runs {
            tried += 1;
            let r = trove().args(&args).assert();
            let o = r.get_output();
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            assert_eq!(o.status.code(), Some(2), "{what} / {cmd}: {err}");
            assert!(!err.contains("panicked"), "{what} / {cmd}: {err}");
            assert_eq!(
                err.trim().lines().count(),
                1,
                "{what} / {cmd}: not one line: {err}"
            );
            // Nothing written beside the bundles (a lock file of the refused output aside), and
            // the damaged bundle is left as it was.
            let after: Vec<String> = listing(w.path())
                .into_iter()
                .filter(|n| !n.ends_with(".lock"))
                .collect();
            assert_eq!(after, before, "{what} / {cmd} wrote beside the bundles");
            assert_eq!(
                listing(&b),
                bundle_before,
                "{what} / {cmd} changed the bundle"
            );
        }
    }
    assert_eq!(tried, 45);
}

/// Rewrites `b`'s manifest.json after `f`.
fn edit_manifest(b: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut m = manifest(b);
    f(&mut m);
    std::fs::write(
        b.join("manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
}

/// A bundle of two segments damaged in the ways only segments can be — a manifest naming a
/// segment whose folder is gone, a tombstone file with flipped bytes, a segment listed twice, a
/// segment id or file name no build writes (a quote for the views' SQL, a `..`), an
/// impossible BM25 stamp, a segment stamped with another embedder — is refused by every command
/// with one line and exit 2, and left as it was.
#[test]
fn damaged_segments_are_refused_with_one_line_and_exit_2() {
    let repo = sample_repo();
    let w = tempfile::tempdir().unwrap();
    let good = w.path().join("good");
    index(repo.path(), &good, &[]);
    let p = repo.path().join("billing/billing.py");
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("\ndef late_fee(days):\n    return days * 5\n");
    std::fs::write(&p, text).unwrap();
    index(repo.path(), &good, &["--no-compact"]);
    let m = manifest(&good);
    assert_eq!(m["segments"].as_array().unwrap().len(), 2);
    let second = m["segments"][1]["id"].as_str().unwrap().to_string();
    let damages: Vec<(&str, Damage)> = vec![
        (
            "missing segment",
            Box::new({
                let id = second.clone();
                move |b: &Path| std::fs::remove_dir_all(b.join("segments").join(&id)).unwrap()
            }),
        ),
        (
            "corrupt tombstones",
            Box::new({
                let id = second.clone();
                move |b: &Path| {
                    let p = b.join(format!("segments/{id}/tombstones.parquet"));
                    let mut bytes = std::fs::read(&p).unwrap();
                    let mid = bytes.len() / 2;
                    for x in &mut bytes[mid..mid + 8] {
                        *x ^= 0x5a;
                    }
                    std::fs::write(&p, bytes).unwrap();
                }
            }),
        ),
        (
            "segment listed twice",
            Box::new(|b: &Path| {
                edit_manifest(b, |m| {
                    let first = m["segments"][0].clone();
                    m["segments"].as_array_mut().unwrap().push(first);
                })
            }),
        ),
        (
            "file listed twice",
            Box::new(|b: &Path| {
                edit_manifest(b, |m| {
                    let first = m["files"][0].clone();
                    m["files"].as_array_mut().unwrap().push(first);
                })
            }),
        ),
        (
            "segment id with a quote",
            Box::new(|b: &Path| {
                edit_manifest(b, |m| {
                    m["segments"][1]["id"] =
                        "0' AS segment, * FROM read_csv('/etc/passwd') --".into()
                })
            }),
        ),
        (
            "file outside the segments",
            Box::new(|b: &Path| {
                edit_manifest(b, |m| m["files"][0]["name"] = "../outside.parquet".into())
            }),
        ),
        (
            "bm25 b out of range",
            Box::new(|b: &Path| edit_manifest(b, |m| m["bm25"]["b"] = 99.into())),
        ),
        (
            "other embedder",
            Box::new(|b: &Path| {
                edit_manifest(b, |m| {
                    m["segments"][1]["embedder"] = "another-model-fingerprint".into()
                })
            }),
        ),
    ];
    for (what, damage) in damages {
        let b = w.path().join(what.replace(' ', "-"));
        copy_dir(&good, &b);
        damage(&b);
        let before = crate::util::bundle_files(&b);
        let runs: Vec<Vec<std::ffi::OsString>> = vec![
            vec!["query".into(), b.clone().into(), "invoice".into()],
            vec!["verify".into(), b.clone().into()],
            vec!["compact".into(), b.clone().into()],
            vec![
                "index".into(),
                repo.path().into(),
                "-o".into(),
                b.clone().into(),
                "--since".into(),
                "auto".into(),
                "--include-uncommitted".into(),
                "--quiet".into(),
            ],
            vec![
                "merge".into(),
                w.path().join("merged").into(),
                b.clone().into(),
            ],
            vec![
                "sync".into(),
                b.clone().into(),
                w.path().join("synced").into(),
            ],
        ];
        for args in runs {
            let o = trove().args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            let cmd = args[0].to_string_lossy().into_owned();
            assert_eq!(o.status.code(), Some(2), "{what} / {cmd}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{what} / {cmd}: {err}");
            assert_eq!(
                crate::util::bundle_files(&b),
                before,
                "{what} / {cmd} changed it"
            );
            for out in ["merged", "synced"] {
                assert!(!w.path().join(out).exists(), "{what} / {cmd} wrote {out}");
            }
        }
    }
}

/// `file` (a table of bundle `b`, path relative to it) replaced by what `sql` writes with `trove
/// sql` (the query reads the old file as `t`), and its manifest entry made to match: what a
/// hostile or buggy publisher ships, which every hash check passes.
fn republish(b: &Path, file: &str, select: &str, options: &str) {
    let w = b.with_extension("scratch.parquet");
    let src = b.join(file);
    let sql = format!(
        "COPY (SELECT {select} FROM read_parquet('{}') t) TO '{}' (FORMAT parquet{options})",
        src.display(),
        w.display()
    );
    trove().arg("sql").arg(b).arg(&sql).assert().success();
    std::fs::rename(&w, &src).unwrap();
    let bytes = std::fs::read(&src).unwrap();
    edit_manifest(b, |m| {
        let e = m["files"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|f| f["name"] == file)
            .unwrap();
        e["bytes"] = bytes.len().into();
        e["sha256"] = trove::util::sha256_hex(&bytes).into();
    });
}

/// Bundles whose hashes all match but whose contents lie — counts that would size an
/// allocation, ordinals that are not rows, a codec trove does not read — and bundles with a FIFO,
/// a device or a link where a file should be: refused with exit 2 and a message naming what is
/// wrong, quickly, never allocating what a count claims, never blocking, never writing through a
/// link outside the bundle.
#[test]
fn lying_bundles_are_refused_without_allocating_blocking_or_writing_outside() {
    let repo = sample_repo();
    let w = tempfile::tempdir().unwrap();
    let good = w.path().join("good");
    index(repo.path(), &good, &[]);
    let p = repo.path().join("billing/billing.py");
    std::fs::write(&p, "def late_fee(days):\n    return days * 5\n").unwrap();
    index(repo.path(), &good, &["--no-compact"]);
    let m = manifest(&good);
    let first = m["segments"][0]["id"].as_str().unwrap().to_string();
    let seg = |t: &str| format!("segments/{first}/{t}.parquet");
    let run = |args: &[&std::ffi::OsStr]| {
        let o = trove()
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let fresh = |name: &str| {
        let b = w.path().join(name);
        copy_dir(&good, &b);
        b
    };
    // A segment that claims 10^18 chunks: refused from the manifest, before any allocation.
    let b = fresh("claims");
    edit_manifest(&b, |m| {
        m["segments"][1]["chunks"] = 1_000_000_000_000_000_000u64.into()
    });
    for cmd in ["query", "verify"] {
        let mut args = vec![cmd.as_ref(), b.as_os_str()];
        if cmd == "query" {
            args.push("invoice".as_ref());
        }
        let (code, err) = run(&args);
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(
            err.contains("claims 1000000000000000000 chunks rows"),
            "{cmd}: {err}"
        );
    }
    // The old segment's files count two billion chunks for a path the new one tombstones.
    let b = fresh("counts");
    republish(
        &b,
        &seg("files"),
        "* REPLACE (CASE WHEN path = 'billing/billing.py' THEN 2147483647 ELSE chunks END AS chunks)",
        ", COMPRESSION zstd",
    );
    let (code, err) = run(&["verify".as_ref(), b.as_os_str()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("add up to"), "{err}");
    let (code, err) = run(&["query".as_ref(), b.as_os_str(), "invoice".as_ref()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("do not add up"), "{err}");
    // A chunk whose ordinal is not its row.
    let b = fresh("ordinals");
    republish(
        &b,
        &seg("chunks"),
        "* REPLACE (CASE WHEN chunk_ord = 1 THEN 2147483647 ELSE chunk_ord END AS chunk_ord)",
        ", COMPRESSION zstd",
    );
    for cmd in ["verify", "compact"] {
        let (code, err) = run(&[cmd.as_ref(), b.as_os_str()]);
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(err.contains("chunk_ord 2147483647"), "{cmd}: {err}");
    }
    // A table written with DuckDB's default codec (snappy), which trove's reader lacks: verify
    // says so, and a command that meets it names the file.
    let b = fresh("snappy");
    republish(&b, &seg("files"), "*", "");
    let (code, err) = run(&["verify".as_ref(), b.as_os_str()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("SNAPPY"), "{err}");
    let (code, err) = run(&["query".as_ref(), b.as_os_str(), "invoice".as_ref()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("files.parquet"), "{err}");
    // manifest.json a FIFO or /dev/zero: refused at once, not read for ever.
    #[cfg(unix)]
    {
        let b = fresh("fifo");
        std::fs::remove_file(b.join("manifest.json")).unwrap();
        let ok = std::process::Command::new("mkfifo")
            .arg(b.join("manifest.json"))
            .status()
            .unwrap();
        assert!(ok.success());
        let (code, err) = run(&["query".as_ref(), b.as_os_str(), "invoice".as_ref()]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("not a regular file"), "{err}");
        let b = fresh("zero");
        std::fs::remove_file(b.join("manifest.json")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", b.join("manifest.json")).unwrap();
        let (code, err) = run(&["inspect".as_ref(), b.as_os_str()]);
        assert_eq!(code, Some(2), "{err}");
        // The views staged under a link to a file outside: verify writes its views anew inside
        // the bundle, and the file outside keeps its bytes.
        let b = fresh("link");
        let outside = w.path().join("precious.txt");
        std::fs::write(&outside, "precious\n").unwrap();
        std::fs::remove_file(b.join("views.sql")).unwrap();
        std::os::unix::fs::symlink(&outside, b.join(".views.sql.next")).unwrap();
        let (code, err) = run(&["verify".as_ref(), b.as_os_str()]);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious\n");
        let meta = std::fs::symlink_metadata(b.join("views.sql")).unwrap();
        assert!(meta.file_type().is_file());
    }
}
