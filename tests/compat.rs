//! Bundles written by released formats keep working: `fixtures/compat/<FORMAT>/` holds bundles a
//! released trove wrote (one segment, three segments with tombstones, packed, merged) and what it
//! answered on them (`answers.json`), committed once by `scripts/make-compat-fixtures.sh` and never
//! regenerated. Every later trove must give the same answers, verify, sync, merge and compact
//! them; bundles from before format 1.0 are converted by `trove upgrade`.
use crate::util::{copy_dir, manifest, repo, trove};
use std::path::{Path, PathBuf};

/// The released formats whose bundles this trove reads as they are.
const READ_AS_THEY_ARE: &[&str] = &["1.0"];

fn fixture(format: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join(format);
    copy_dir(&repo().join("fixtures/compat").join(format), &d);
    (t, d)
}

fn pinned(dir: &Path) -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("answers.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Runs each pinned invocation whose bundle is `only` (all when `None`) in `dir` and compares
/// its exit code and output with the pinned ones.
fn assert_answers(
    dir: &Path,
    answers: &serde_json::Map<String, serde_json::Value>,
    only: Option<&str>,
) {
    let mut ran = 0;
    for (cmd, want) in answers {
        let args: Vec<&str> = split_invocation(cmd);
        if only.is_some_and(|b| args[1] != b) {
            continue;
        }
        let o = trove().current_dir(dir).args(&args).output().unwrap();
        let got = String::from_utf8_lossy(&o.stdout).into_owned();
        let expected = want["stdout"].as_str().unwrap();
        let same = if args[0] == "query" && !expected.is_empty() {
            // Scores to 1e-9: the manifest's `avgdl` is parsed by serde_json's fast float
            // parser, which may land one unit in the last place off (docs/format.md, quirks).
            same_hits(&got, expected)
        } else {
            got == expected
        };
        assert!(
            same && o.status.code() == want["code"].as_i64().map(|c| c as i32),
            "{cmd} in {}: got {:?}\n{got}\nexpected {}\n{expected}\n{}",
            dir.display(),
            o.status.code(),
            want["code"],
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    assert!(ran > 0, "no pinned answer for {only:?}");
}

/// Whether two `trove query --format json` outputs name the same hits, scores equal to 1e-9.
fn same_hits(got: &str, expected: &str) -> bool {
    let (Ok(serde_json::Value::Array(a)), Ok(serde_json::Value::Array(b))) = (
        serde_json::from_str::<serde_json::Value>(got),
        serde_json::from_str::<serde_json::Value>(expected),
    ) else {
        return got == expected;
    };
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            let (sx, sy) = (x["score"].as_f64(), y["score"].as_f64());
            let close = match (sx, sy) {
                (Some(p), Some(q)) => (p - q).abs() <= 1e-9 * q.abs().max(1.0),
                _ => sx == sy,
            };
            let strip = |v: &serde_json::Value| {
                let mut v = v.clone();
                v.as_object_mut().map(|o| o.remove("score"));
                v
            };
            close && strip(x) == strip(y)
        })
}

/// The arguments of a pinned invocation: a query's words are one argument (the one after the
/// bundle, up to the first `--`), as scripts/compat_answers.py ran them.
fn split_invocation(cmd: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = cmd.splitn(3, ' ').collect();
    if parts[0] == "query" {
        let rest = parts.pop().unwrap();
        let (q, flags) = rest.split_once(" --").unwrap();
        parts.push(q);
        let flags_at = rest.len() - flags.len() - 2;
        parts.extend(rest[flags_at..].split(' '));
    } else if parts.len() == 3 {
        let rest = parts.pop().unwrap();
        parts.extend(rest.split(' '));
    }
    parts
}

#[test]
fn bundles_of_every_released_format_answer_as_when_they_were_written() {
    for format in READ_AS_THEY_ARE {
        let (_t, dir) = fixture(format);
        let answers = pinned(&dir);
        assert_answers(&dir, &answers, None);
        for b in ["single", "segmented", "packed.trove", "merged"] {
            trove().arg("verify").arg(dir.join(b)).assert().success();
        }
        // Sync one into a new bundle, merge one, compact the segmented one: each answers as
        // its source did.
        trove()
            .arg("sync")
            .arg(dir.join("segmented"))
            .arg(dir.join("synced"))
            .assert()
            .success();
        trove()
            .arg("merge")
            .arg(dir.join("remerged"))
            .arg(dir.join("merged"))
            .assert()
            .success();
        trove()
            .arg("compact")
            .arg(dir.join("segmented"))
            .assert()
            .success();
        assert_eq!(
            manifest(&dir.join("segmented"))["segments"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        for (copy, of) in [
            ("synced", "segmented"),
            ("remerged", "merged"),
            ("segmented", "segmented"),
        ] {
            let renamed: serde_json::Map<String, serde_json::Value> = answers
                .iter()
                .filter(|(k, _)| split_invocation(k)[1] == of)
                .map(|(k, v)| {
                    let mut args = split_invocation(k);
                    args[1] = copy;
                    let mut v = v.clone();
                    // A query's hits name their bundle.
                    if let Some(s) = v["stdout"].as_str() {
                        v["stdout"] = s
                            .replace(
                                &format!("\"bundle\": \"{of}\""),
                                &format!("\"bundle\": \"{copy}\""),
                            )
                            .into();
                    }
                    (join_invocation(&args), v)
                })
                .collect();
            assert_answers(&dir, &renamed, Some(copy));
            trove().arg("verify").arg(dir.join(copy)).assert().success();
        }
    }
}

fn join_invocation(args: &[&str]) -> String {
    args.join(" ")
}

#[test]
fn bundles_from_before_format_1_0_are_upgraded_in_place() {
    let (_t, dir) = fixture("format-9");
    let answers = pinned(&dir);
    for b in ["single", "segmented", "merged"] {
        let o = trove()
            .current_dir(&dir)
            .args(["query", b, "invoice"])
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
        assert!(err.contains(&format!("trove upgrade {b}")), "{err}");
        let before = manifest(&dir.join(b));
        let o = trove()
            .current_dir(&dir)
            .args(["upgrade", b, "--json"])
            .assert()
            .success();
        let r: serde_json::Value = serde_json::from_slice(&o.get_output().stdout).unwrap();
        assert_eq!(
            (r["from"].as_str(), r["rewritten"].as_bool()),
            (Some("9"), Some(true)),
            "{r}"
        );
        let m = manifest(&dir.join(b));
        assert_eq!(
            (m["format_major"].as_u64(), m["format_version"].as_u64()),
            (Some(1), Some(10))
        );
        assert_eq!(m["builds"], serde_json::json!([before["tool"]]), "{m}");
        assert_eq!(m["segments"], before["segments"]);
        trove().arg("verify").arg(dir.join(b)).assert().success();
        assert_answers(&dir, &answers, Some(b));
        let o = trove().arg("inspect").arg(dir.join(b)).assert().success();
        let text = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
        assert!(
            text.contains("trove-bundle 1.0") && text.contains("builds "),
            "{text}"
        );
        // Rows of the old build compact, and answer as before.
        trove().arg("compact").arg(dir.join(b)).assert().success();
        assert_answers(&dir, &answers, Some(b));
        // Again: nothing to do.
        let o = trove()
            .current_dir(&dir)
            .args(["upgrade", b, "--json"])
            .assert()
            .success();
        let r: serde_json::Value = serde_json::from_slice(&o.get_output().stdout).unwrap();
        assert_eq!(r["rewritten"], false);
    }
    // A packed bundle is unpacked first.
    let o = trove()
        .current_dir(&dir)
        .args(["upgrade", "packed.trove"])
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&o.get_output().stderr).contains("trove unpack"));
}

#[test]
fn a_future_minor_is_read_and_an_unknown_required_feature_is_named() {
    let (_t, dir) = fixture("1.0");
    let answers = pinned(&dir);
    let future = |b: &str, extra: &[&str]| {
        let s = std::process::Command::new("python3")
            .arg(repo().join("scripts/future_minor.py"))
            .arg(dir.join(b))
            .args(extra)
            .status()
            .unwrap();
        assert!(s.success());
    };
    // An extra column, an extra table, an extra manifest key, minor 99: read as before.
    future("segmented", &[]);
    assert_eq!(manifest(&dir.join("segmented"))["format_minor"], 99);
    trove()
        .arg("verify")
        .arg(dir.join("segmented"))
        .assert()
        .success();
    assert_answers(&dir, &answers, Some("segmented"));
    // ... and not rewritten by this trove.
    let o = trove()
        .arg("compact")
        .arg(dir.join("segmented"))
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&o.get_output().stderr).contains("bundle format 1.99"));
    // A feature a reader must know: refused, naming it and the release that reads it.
    future("single", &["--feature", "quantum-postings=trove 7.1"]);
    let o = trove()
        .current_dir(&dir)
        .args(["query", "single", "invoice"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        err.contains("`quantum-postings`") && err.contains("trove 7.1"),
        "{err}"
    );
}

/// docs/format.md is precise enough to read a bundle from: `scripts/spec_reader.py`, written
/// from it alone (pyarrow and Python's standard library; no trove code, no DuckDB, no
/// views.sql), ranks `--mode bm25` as trove does, scores included, and prints files as `trove
/// show` does, on the 1.0 bundles of one segment, three segments with tombstones, and merged.
#[test]
fn a_reader_written_from_the_spec_alone_answers_as_trove_does() {
    let (_t, dir) = fixture("1.0");
    let reader = repo().join("scripts/spec_reader.py");
    let text = std::fs::read_to_string(&reader).unwrap();
    for line in text
        .lines()
        .filter(|l| l.starts_with("import ") || l.starts_with("from "))
    {
        let module = line.split_whitespace().nth(1).unwrap();
        let root = module.split('.').next().unwrap();
        let stdlib = [
            "argparse",
            "bisect",
            "json",
            "math",
            "sys",
            "unicodedata",
            "pathlib",
        ];
        assert!(root == "pyarrow" || stdlib.contains(&root), "{line}");
    }
    let spec = |args: &[&str]| {
        let o = std::process::Command::new("python3")
            .arg(&reader)
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let ours = |args: &[&str]| {
        let o = trove().current_dir(&dir).args(args).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let queries = [
        "charge the customer",
        "invoice total",
        "PaymentService",
        "refund",
        "late_fee days",
        "how is an invoice charged",
        "parseConfig",
        "http2 server",
        "the",
        "renderCheckoutButton",
    ];
    for b in ["single", "segmented", "merged"] {
        for q in queries {
            let (code, want) = ours(&[
                "query", b, q, "--mode", "bm25", "--format", "json", "--limit", "10",
            ]);
            let (scode, got) = spec(&["search", b, q, "--limit", "10"]);
            assert_eq!(scode, code, "{b} {q:?}: {got}");
            if code == Some(0) {
                assert!(
                    same_hits(&got, &want),
                    "{b} {q:?}:\n{got}\nvs trove:\n{want}"
                );
            }
        }
        for target in [
            "billing/billing.py",
            "billing/billing.py:3-9",
            "README.md",
            "billing/late.py",
        ] {
            assert_eq!(
                spec(&["show", b, target]),
                ours(&["show", b, target]),
                "{b} {target}"
            );
        }
    }
}
