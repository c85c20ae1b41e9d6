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
            manifest_edit(|m| m["format_version"] = 99.into()),
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
