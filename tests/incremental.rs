//! Incremental builds (`--since`, content-hash reuse), shards and merge: every result is compared
//! with a full build of the same tree, table by table (rows and sha256 of each Parquet file).
use std::path::Path;

use crate::util::{
    commit, compacted_tables, duck, git, index, index_cmd, manifest, pq, query_jsonl, sample_repo,
    tables, trove, write,
};

/// `trove index ROOT -o OUT --json EXTRA...`: the summary, asserting success.
fn index_json(root: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let o = index_cmd(root, out, extra).arg("--json").assert().success();
    serde_json::from_slice(&o.get_output().stdout).unwrap()
}

/// `trove index` expected to be refused: exit 2, stderr returned.
fn index_refused(root: &Path, out: &Path, extra: &[&str]) -> String {
    let o = index_cmd(root, out, extra).arg("--quiet").assert().code(2);
    String::from_utf8_lossy(&o.get_output().stderr).into_owned()
}

fn head(root: &Path) -> String {
    let o = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// Hits of a few queries, without the bundle label (the two bundles live at different paths).
fn answers(bundle: &Path) -> Vec<serde_json::Value> {
    let mut all = Vec::new();
    for q in ["invoice total", "Button", "deploy server", "retry"] {
        let out = trove()
            .arg("query")
            .arg(bundle)
            .arg(q)
            .args(["--format", "jsonl", "-k", "5"])
            .output()
            .unwrap();
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("bundle");
            all.push(v);
        }
    }
    all
}

fn chunks_of(bundle: &Path, path: &str) -> u64 {
    duck(&format!(
        "SELECT count(*) FROM {} WHERE path = '{path}'",
        pq(bundle, "chunks")
    ))[0][0]
        .parse()
        .unwrap()
}

/// A sequence of commits, each indexed with `--since auto` on yesterday's bundle and in full into
/// a fresh directory: the tables are byte-identical, the answers equal, and only what changed is
/// embedded.
#[test]
fn since_equals_a_full_rebuild_after_every_kind_of_change() {
    let t = sample_repo();
    let root = t.path();
    let scratch = tempfile::tempdir().unwrap();
    let incr = scratch.path().join("incr.bundle");
    // A small size cap, so a file can grow past it (the same flag on every run: same config).
    let cap = ["--max-file-bytes", "20000"];
    index(root, &incr, &cap);
    let first_files = manifest(&incr)["counts"]["files"].as_u64().unwrap();
    type Step = (&'static str, fn(&Path), &'static [&'static str]);
    let steps: &[Step] = &[
        (
            "add",
            |r| {
                write(
                    r,
                    "billing/refunds.py",
                    b"def refund(invoice):\n    \"\"\"Refund an invoice.\"\"\"\n    return invoice.total * -1\n",
                )
            },
            &["billing/refunds.py"],
        ),
        (
            "modify",
            |r| {
                let p = r.join("api/server.go");
                let mut s = std::fs::read_to_string(&p).unwrap();
                s.push_str(
                    "\n// Retry reconnects with backoff.\nfunc Retry(n int) int { return n * 2 }\n",
                );
                std::fs::write(p, s).unwrap();
            },
            &["api/server.go"],
        ),
        (
            "delete",
            |r| std::fs::remove_file(r.join("scripts/deploy.sh")).unwrap(),
            &[],
        ),
        (
            "rename",
            |r| std::fs::rename(r.join("docs/guide.md"), r.join("docs/handbook.md")).unwrap(),
            &["docs/handbook.md"],
        ),
        (
            "move across directories",
            |r| {
                std::fs::create_dir_all(r.join("services/web")).unwrap();
                std::fs::rename(r.join("web/src/users.ts"), r.join("services/web/users.ts"))
                    .unwrap();
            },
            &["services/web/users.ts"],
        ),
        (
            "binary file added",
            |r| {
                write(
                    r,
                    "assets/icon.svg",
                    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\0binary",
                )
            },
            &[],
        ),
        (
            "file grown past the size cap",
            |r| {
                let p = r.join("billing/billing.py");
                let mut s = std::fs::read_to_string(&p).unwrap();
                while s.len() < 20001 {
                    s.push_str("# padding to grow the file past the cap\n");
                }
                std::fs::write(p, s).unwrap();
            },
            &[],
        ),
        (
            "mode change only",
            |r| {
                use std::os::unix::fs::PermissionsExt;
                let p = r.join("cli/src/main.rs");
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
            },
            &[],
        ),
    ];
    for (what, change, embedded_paths) in steps {
        change(root);
        commit(root, what);
        let s = index_json(root, &incr, &[&["--since", "auto"][..], &cap[..]].concat());
        let full = scratch
            .path()
            .join(format!("full-{}", what.replace(' ', "-")));
        let fs = index_json(root, &full, &cap);
        // Every file the walk met is counted once, read-time skips (binary, too large) included.
        let skipped_files = crate::util::skipped_reasons(&full)
            .keys()
            .filter(|p| !p.ends_with('/'))
            .count() as u64;
        assert_eq!(
            fs["files_seen"].as_u64(),
            Some(fs["files_indexed"].as_u64().unwrap() + skipped_files),
            "after {what}: {fs}"
        );
        assert_eq!(s["files_seen"], fs["files_seen"], "after {what}");
        assert_eq!(
            compacted_tables(&incr),
            tables(&full),
            "after {what}: tables differ"
        );
        assert_eq!(
            answers(&incr),
            answers(&full),
            "after {what}: answers differ"
        );
        let m = manifest(&incr);
        assert_eq!(m["source"]["commit"], head(root).as_str(), "{what}");
        assert_eq!(m["base"]["mode"], "git-diff", "{what}: {}", m["base"]);
        // Only the changed files' chunks were embedded; every other file was carried over.
        let expected: u64 = embedded_paths.iter().map(|p| chunks_of(&incr, p)).sum();
        assert_eq!(s["chunks_embedded"], expected, "{what}: {s}");
        assert_eq!(m["base"]["chunks_embedded"], expected, "{what}");
        let processed = s["files_indexed"].as_u64().unwrap() - s["files_reused"].as_u64().unwrap();
        assert_eq!(processed, embedded_paths.len() as u64, "{what}: {s}");
        assert!(
            s["files_reused"].as_u64().unwrap() + 2 >= first_files,
            "{what}: {s}"
        );
    }
    let v = trove().arg("verify").arg(&incr).assert().success();
    assert!(String::from_utf8_lossy(&v.get_output().stdout).starts_with("ok:"));
    // Two of the steps are in the bundle's answers.
    let hits = query_jsonl(&[incr.to_str().unwrap(), "refund invoice"]);
    assert_eq!(hits[0]["path"], "billing/refunds.py");
    let skipped = crate::util::skipped_reasons(&incr);
    assert_eq!(skipped["assets/icon.svg"], "binary");
    assert_eq!(skipped["billing/billing.py"], "too-large");
}

/// Without git, files are carried over when their sha256 is the base bundle's: a re-run embeds
/// nothing, a one-file change embeds that file's chunks only, and the result equals a full build.
#[test]
fn content_hash_reuse_without_git() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("src");
    crate::util::copy_dir(&crate::util::fixtures().join("sample-repo"), &root);
    let out = t.path().join("b");
    let first = index_json(&root, &out, &[]);
    assert_eq!(first["files_reused"], 0);
    assert!(first["chunks_embedded"].as_u64().unwrap() > 10);
    let again = index_json(&root, &out, &[]);
    assert_eq!(again["chunks_embedded"], 0, "{again}");
    assert_eq!(again["embed_calls"], 0);
    assert_eq!(again["files_reused"], again["files_indexed"]);
    assert_eq!(manifest(&out)["base"]["mode"], "content-hash");
    let p = root.join("billing/billing.py");
    let mut s = std::fs::read_to_string(&p).unwrap();
    s.push_str("\ndef late_fee(days):\n    return days * 5\n");
    std::fs::write(&p, s).unwrap();
    let third = index_json(&root, &out, &[]);
    assert_eq!(
        third["chunks_embedded"],
        chunks_of(&out, "billing/billing.py")
    );
    let full = t.path().join("full");
    index(&root, &full, &[]);
    assert_eq!(compacted_tables(&out), tables(&full));
    // --since needs git, and says how to do without it.
    let err = index_refused(&root, &out, &["--since", "auto"]);
    assert!(err.contains("not in a git repository"), "{err}");
}

#[test]
fn since_refusals_say_why_and_leave_the_bundle() {
    let t = sample_repo();
    let root = t.path();
    let c1 = head(root);
    write(root, "billing/extra.py", b"def extra():\n    return 1\n");
    commit(root, "two");
    let c2 = head(root);
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(root, &b, &[]);
    let before = tables(&b);

    let err = index_refused(root, &b, &["--since", "no-such-rev"]);
    assert!(err.contains("unknown revision"), "{err}");
    let err = index_refused(root, &b, &["--since", &c1]);
    assert!(err.contains("was built from commit"), "{err}");
    assert!(err.contains(&c2[..12]), "names the bundle's commit: {err}");

    // Uncommitted work: refused unless asked for, then indexed and stamped dirty.
    write(
        root,
        "billing/wip.py",
        b"def work_in_progress():\n    return 42\n",
    );
    let err = index_refused(root, &b, &["--since", "auto"]);
    assert!(
        err.contains("uncommitted") && err.contains("billing/wip.py"),
        "{err}"
    );
    assert_eq!(
        tables(&b),
        before,
        "a refused run leaves the bundle as it was"
    );
    // A name with a newline or an escape is written with escapes, on one line.
    write(root, "odd\nname\x1b[31m.py", b"x = 1\n");
    let err = index_refused(root, &b, &["--since", "auto"]);
    assert!(err.contains("odd\\x0aname\\x1b[31m.py"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    std::fs::remove_file(root.join("odd\nname\x1b[31m.py")).unwrap();
    let s = index_json(root, &b, &["--since", "auto", "--include-uncommitted"]);
    assert_eq!(s["chunks_embedded"], chunks_of(&b, "billing/wip.py"));
    assert_eq!(manifest(&b)["source"]["dirty"], true);
    // Built on a dirty bundle: every file is checked by content hash (still nothing re-embedded).
    std::fs::remove_file(root.join("billing/wip.py")).unwrap();
    let s = index_json(root, &b, &["--since", "auto"]);
    assert!(s["incremental"].as_str().unwrap().contains("dirty"), "{s}");
    assert_eq!(s["chunks_embedded"], 0);
    assert_eq!(manifest(&b)["source"]["dirty"], false);

    // History that does not lead to HEAD.
    git(root, &["checkout", "-q", "-b", "side", &c1]);
    write(root, "side.md", b"# Side\n\nA side branch.\n");
    commit(root, "side");
    let err = index_refused(root, &b, &["--since", &c2]);
    assert!(err.contains("not an ancestor"), "{err}");
    // A REV in HEAD's history, but the bundle's own commit is not: no `--since` is suggested
    // that would be refused in turn.
    let err = index_refused(root, &b, &["--since", &c1]);
    assert!(
        err.contains("not in HEAD's history") && err.contains("run without --since"),
        "{err}"
    );
    assert!(!err.contains("use --since"), "{err}");
    git(root, &["checkout", "-q", "main"]);

    // Another config: a full rebuild, said in the summary.
    let cfg = scratch.path().join("small.toml");
    std::fs::write(&cfg, "[chunk]\nmax_chars = 600\n").unwrap();
    let s = index_json(
        root,
        &b,
        &["--since", "auto", "--config", cfg.to_str().unwrap()],
    );
    let note = s["incremental"].as_str().unwrap();
    assert!(
        note.contains("full rebuild") && note.contains("pipeline config"),
        "{note}"
    );
    assert_eq!(s["files_reused"], 0);

    // Another format version (a bundle from before format 1.0): a full rebuild too, and the
    // note says `trove upgrade` would have kept it.
    index(root, &b, &[]);
    let mut m = manifest(&b);
    m["format_version"] = 9.into();
    m.as_object_mut().unwrap().remove("format_major");
    m.as_object_mut().unwrap().remove("format_minor");
    std::fs::write(b.join("manifest.json"), m.to_string()).unwrap();
    let s = index_json(root, &b, &["--since", "auto"]);
    let note = s["incremental"].as_str().unwrap();
    assert!(
        note.contains("format_version 9") && note.contains("trove upgrade"),
        "{s}"
    );

    // A v4 bundle as v4 laid it out (every table at the root, no segments): query and verify
    // ask for a re-index, `--since` rebuilds it in full as v5.
    index(root, &b, &[]);
    let mut m = manifest(&b);
    for f in m["files"].as_array_mut().unwrap() {
        let name = f["name"].as_str().unwrap().to_string();
        if let Some(base) = name.rsplit_once('/').map(|(_, base)| base.to_string()) {
            std::fs::rename(b.join(&name), b.join(&base)).unwrap();
            f["name"] = base.into();
        }
    }
    m["files"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["name"] != "views.sql");
    m.as_object_mut().unwrap().remove("segments");
    m.as_object_mut().unwrap().remove("format_major");
    m.as_object_mut().unwrap().remove("format_minor");
    m["format_version"] = 4.into();
    std::fs::remove_dir_all(b.join("segments")).unwrap();
    std::fs::remove_file(b.join("views.sql")).unwrap();
    std::fs::write(b.join("manifest.json"), m.to_string()).unwrap();
    for cmd in ["query", "verify"] {
        let mut c = trove();
        c.arg(cmd).arg(&b);
        if cmd == "query" {
            c.arg("invoice");
        }
        let o = c.assert().code(2);
        let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
        assert!(
            err.contains("format_version 4") && err.contains("re-index"),
            "{cmd}: {err}"
        );
    }
    let s = index_json(root, &b, &["--since", "auto"]);
    assert!(
        s["incremental"]
            .as_str()
            .unwrap()
            .contains("format_version 4"),
        "{s}"
    );
    assert_eq!(
        manifest(&b)["format_version"],
        trove::bundle::FORMAT_VERSION
    );
    trove().arg("verify").arg(&b).assert().success();

    // A bundle that does not verify is not built on.
    let chunks = crate::util::table_file(&b, "chunks");
    let len = std::fs::metadata(&chunks).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&chunks)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let err = index_refused(root, &b, &["--since", "auto"]);
    assert!(err.contains("cannot build on the existing bundle"), "{err}");

    // No bundle yet: a full build, said so.
    let fresh = scratch.path().join("fresh");
    let s = index_json(root, &fresh, &["--since", "auto"]);
    assert!(
        s["incremental"].as_str().unwrap().contains("full build"),
        "{s}"
    );
}

/// A shallow clone that lacks the bundle's commit: refused with how to deepen it.
#[test]
fn since_in_a_shallow_clone_says_how_to_deepen() {
    let t = sample_repo();
    let root = t.path();
    let c1 = head(root);
    for i in 0..2 {
        write(
            root,
            &format!("notes/n{i}.md"),
            format!("# Note {i}\n").as_bytes(),
        );
        commit(root, &format!("note {i}"));
    }
    let scratch = tempfile::tempdir().unwrap();
    let clone = scratch.path().join("clone");
    let url = format!("file://{}", root.display());
    let st = std::process::Command::new("git")
        .args(["clone", "-q", "--depth", "1", &url])
        .arg(&clone)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let b = scratch.path().join("b");
    index(&clone, &b, &[]);
    let err = index_refused(&clone, &b, &["--since", &c1]);
    assert!(err.contains("shallow") && err.contains("--deepen"), "{err}");
}

/// Three shards merged equal one full run — shard 1 named on the command line, shards 2 and 3
/// taken by `--shard auto` from a Kubernetes Indexed Job's and a GitLab job's environment;
/// overlapping inputs are refused.
#[test]
fn three_shards_merged_equal_the_full_bundle() {
    let t = sample_repo();
    let root = t.path();
    let scratch = tempfile::tempdir().unwrap();
    let full = scratch.path().join("full");
    index(root, &full, &[]);
    let mut shards = Vec::new();
    let mut files = 0;
    for i in 1..=3 {
        let s = scratch.path().join(format!("s{i}"));
        let mut cmd = index_cmd(root, &s, &["--quiet"]);
        // Whatever CI variables the machine running the tests has, these alone speak.
        for v in [
            "TROVE_SHARD",
            "JOB_COMPLETION_INDEX",
            "TROVE_SHARD_COUNT",
            "BUILDKITE_PARALLEL_JOB",
            "BUILDKITE_PARALLEL_JOB_COUNT",
            "CI_NODE_INDEX",
            "CI_NODE_TOTAL",
        ] {
            cmd.env_remove(v);
        }
        match i {
            1 => cmd.args(["--shard", "1/3"]),
            2 => cmd
                .args(["--shard", "auto"])
                .env("JOB_COMPLETION_INDEX", "1")
                .env("TROVE_SHARD_COUNT", "3"),
            _ => cmd
                .args(["--shard", "auto"])
                .env("CI_NODE_INDEX", "3")
                .env("CI_NODE_TOTAL", "3"),
        }
        .assert()
        .success();
        assert_eq!(
            manifest(&s)["shard"],
            serde_json::json!({"index": i, "count": 3})
        );
        files += manifest(&s)["counts"]["files"].as_u64().unwrap();
        shards.push(s);
    }
    assert_eq!(files, manifest(&full)["counts"]["files"].as_u64().unwrap());
    let merged = scratch.path().join("merged");
    trove()
        .arg("merge")
        .arg(&merged)
        .args(&shards)
        .arg("--quiet")
        .assert()
        .success();
    // The shards' segments are listed, not rewritten: their files are the shards' own.
    let m = manifest(&merged);
    let ids = |b: &Path| -> Vec<String> {
        manifest(b)["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&merged),
        shards.iter().flat_map(|s| ids(s)).collect::<Vec<_>>()
    );
    for s in &shards {
        for (name, _, sha) in tables(s) {
            if name.starts_with("segments/") {
                assert!(
                    tables(&merged).iter().any(|t| t.0 == name && t.2 == sha),
                    "{name}"
                );
            }
        }
    }
    assert_eq!(answers(&merged), answers(&full));
    let asked = |b: &Path| {
        crate::util::answers(
            b,
            "invoice total with tax",
            &["total", "format_amount", "NewServer"],
        )
    };
    assert_eq!(asked(&merged), asked(&full));
    assert_eq!(m["bm25"], manifest(&full)["bm25"]);
    // Live counts are the full build's; terms, postings and resolved references count what the
    // segments store until a compaction.
    let live = |b: &Path| {
        let mut c = manifest(b)["counts"].clone();
        for k in ["terms", "postings", "refs_resolved"] {
            c.as_object_mut().unwrap().remove(k);
        }
        c
    };
    assert_eq!(live(&merged), live(&full));
    // `inspect` says so beside them; a one-segment bundle has nothing to say.
    let inspect = |b: &Path| {
        let o = trove().arg("inspect").arg(b).assert().success();
        String::from_utf8_lossy(&o.get_output().stdout).into_owned()
    };
    let segments = m["segments"].as_array().unwrap().len();
    assert!(segments > 1, "{m}");
    assert!(
        inspect(&merged).contains(&format!(
            "postings as stored in {segments} segments: with dead rows until `trove compact`"
        )),
        "{}",
        inspect(&merged)
    );
    assert!(!inspect(&full).contains("as stored in"));
    assert_eq!(m["languages"], manifest(&full)["languages"]);
    trove().arg("verify").arg(&merged).assert().success();
    assert_eq!(crate::util::compacted_tables(&merged), tables(&full));

    let o = trove()
        .arg("merge")
        .arg(scratch.path().join("bad"))
        .args([&shards[0], &shards[0]])
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&o.get_output().stderr).contains("overlap"));
    // Some shards only: merged, with a warning.
    let o = trove()
        .arg("merge")
        .arg(scratch.path().join("part"))
        .args(&shards[..2])
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&o.get_output().stderr).contains("lacks the other slices"));
    // That part and the last shard are the whole tree: the warning does not say it lacks
    // anything for sure.
    let o = trove()
        .arg("merge")
        .arg(scratch.path().join("whole"))
        .arg(scratch.path().join("part"))
        .arg(&shards[2])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        err.contains("whole only if those hold the other slices") && !err.contains("lacks"),
        "{err}"
    );
    assert_eq!(
        crate::util::compacted_tables(&scratch.path().join("whole")),
        tables(&full),
        "the part and the last shard merge into the full bundle"
    );
    // A shard of another split: refused, naming the split, not a path both hold.
    let half = scratch.path().join("half");
    index(root, &half, &["--shard", "1/2"]);
    let o = trove()
        .arg("merge")
        .arg(scratch.path().join("mixed"))
        .arg(&shards[0])
        .arg(&half)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        err.contains("is shard 1/2") && err.contains("one split"),
        "{err}"
    );
    let o = trove()
        .args(["index", ".", "-o", "x", "--shard", "4/3"])
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&o.get_output().stderr).contains("between 1 and N"));
    // `auto` with no job slice in the environment: refused, naming the variables.
    let o = trove()
        .args(["index", ".", "-o", "x", "--shard", "auto"])
        .env_remove("TROVE_SHARD")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("BUILDKITE_PARALLEL_JOB")
        .env_remove("CI_NODE_INDEX")
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&o.get_output().stderr).contains("TROVE_SHARD"));
}

/// The README's nightly job, run twice on a repository with a commit in between.
#[test]
fn nightly_ci_script_restores_updates_verifies_and_publishes() {
    let t = sample_repo();
    let root = t.path();
    let publish = tempfile::tempdir().unwrap();
    let script = crate::util::repo().join("scripts/nightly-ci.sh");
    let run = || {
        let o = std::process::Command::new("bash")
            .arg(&script)
            .arg(root)
            .arg(publish.path())
            .env("TROVE", env!("CARGO_BIN_EXE_trove"))
            .env("TROVE_CACHE_DIR", publish.path().join(".cache"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{err}");
        err
    };
    let name = root.file_name().unwrap().to_string_lossy().into_owned();
    let packed = publish.path().join(format!("{name}.trove"));
    let first = run();
    assert!(first.contains("full build"), "{first}");
    // A consumer syncs from the published directory each night.
    let (dir, consumer) = (publish.path().join(&name), publish.path().join("consumer"));
    let sync = || -> serde_json::Value {
        let o = trove()
            .arg("sync")
            .arg(&dir)
            .arg(&consumer)
            .arg("--json")
            .env("TROVE_CACHE_DIR", publish.path().join(".cache"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    assert_eq!(sync()["segments_fetched"], 1);
    write(
        root,
        "billing/late.py",
        b"def late_fee(days):\n    return days * 5\n",
    );
    commit(root, "late fees");
    let second = run();
    assert!(second.contains("incremental since"), "{second}");
    assert!(second.contains("1 path(s) changed"), "{second}");
    for b in [&packed, &dir] {
        let hits = query_jsonl(&[b.to_str().unwrap(), "late_fee"]);
        assert_eq!(hits[0]["path"], "billing/late.py");
    }
    // The second night's sync fetches the new segment only.
    let s = sync();
    assert_eq!(
        (s["segments"].as_u64(), s["segments_fetched"].as_u64()),
        (Some(2), Some(1)),
        "{s}"
    );
    assert_eq!(
        crate::util::bundle_files(&consumer),
        crate::util::bundle_files(&dir)
    );
}

/// A submodule is listed as skipped, and a commit that moves it re-processes nothing.
#[test]
fn submodules_are_skipped_and_their_moves_counted() {
    let t = sample_repo();
    let root = t.path();
    let other = tempfile::tempdir().unwrap();
    write(other.path(), "lib.rs", b"pub fn vendored() {}\n");
    git(other.path(), &["init", "-q"]);
    commit(other.path(), "lib");
    let url = format!("file://{}", other.path().display());
    git(
        root,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &url,
            "third/lib",
        ],
    );
    commit(root, "add submodule");
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(root, &b, &[]);
    assert_eq!(crate::util::skipped_reasons(&b)["third/lib/"], "submodule");
    assert!(
        !crate::util::indexed_paths(&b)
            .iter()
            .any(|p| p.starts_with("third/"))
    );
    write(other.path(), "lib.rs", b"pub fn vendored() -> u8 { 1 }\n");
    commit(other.path(), "lib 2");
    git(&root.join("third/lib"), &["pull", "-q"]);
    commit(root, "move submodule");
    let s = index_json(root, &b, &["--since", "auto"]);
    assert!(
        s["incremental"]
            .as_str()
            .unwrap()
            .contains("1 submodule change(s) skipped"),
        "{s}"
    );
    assert_eq!(s["chunks_embedded"], 0);
    let full = scratch.path().join("full");
    index(root, &full, &[]);
    assert_eq!(compacted_tables(&b), tables(&full));
}

/// A root whose name holds glob characters (`[locale]`) is diffed like any other: a same-size
/// edit under it is re-processed, not carried stale.
#[test]
fn since_under_a_root_with_glob_characters() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    write(
        repo,
        "web/[locale]/page.ts",
        b"export function title(): string {\n  return \"aaaa\";\n}\n",
    );
    write(repo, "web/other.ts", b"export const x = 1;\n");
    git(repo, &["init", "-q"]);
    commit(repo, "one");
    let root = repo.join("web/[locale]");
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(&root, &b, &[]);
    write(
        repo,
        "web/[locale]/page.ts",
        b"export function title(): string {\n  return \"bbbb\";\n}\n",
    );
    commit(repo, "two");
    let s = index_json(&root, &b, &["--since", "auto"]);
    assert_eq!(s["files_reused"], 0, "{s}");
    let full = scratch.path().join("full");
    index(&root, &full, &[]);
    assert_eq!(compacted_tables(&b), tables(&full));
}

/// Bundles written by another build of trove, of the same format, tokenizer, config and
/// embedder, are merged and compacted, every contributing build listed in `builds`; a later
/// `--since` rebuilds such a bundle in full (its rows are not this build's). What differs is
/// refused by name.
#[test]
fn merge_and_compact_join_builds_of_one_format() {
    let t = sample_repo();
    let scratch = tempfile::tempdir().unwrap();
    let (a, b) = (scratch.path().join("a"), scratch.path().join("b"));
    index(t.path(), &a, &["--shard", "1/2"]);
    index(t.path(), &b, &["--shard", "2/2"]);
    let other =
        serde_json::json!({"name": "trove", "version": "0.0.9", "build": "0123456789abcdef"});
    let restamp = |m: &Path| {
        let mut v = manifest(m);
        v["tool"] = other.clone();
        v["builds"] = serde_json::json!([other.clone()]);
        std::fs::write(m.join("manifest.json"), v.to_string()).unwrap();
    };
    restamp(&a);
    let merged = scratch.path().join("m");
    trove()
        .arg("merge")
        .arg(&merged)
        .args([&a, &b])
        .assert()
        .success();
    let m = manifest(&merged);
    let builds = m["builds"].as_array().unwrap();
    assert_eq!(builds.len(), 2, "{m}");
    assert!(builds.contains(&other), "{m}");
    assert!(builds.contains(&m["tool"]), "{m}");
    trove().arg("verify").arg(&merged).assert().success();
    let hits = query_jsonl(&[merged.to_str().unwrap(), "invoice", "--limit", "3"]);
    assert!(!hits.is_empty());

    // What a reader compares rows by must agree: another pipeline config is named.
    let mut v = manifest(&b);
    v["pipeline_hash"] = "f".repeat(64).into();
    std::fs::write(b.join("manifest.json"), v.to_string()).unwrap();
    let o = trove()
        .arg("merge")
        .arg(scratch.path().join("m2"))
        .args([&a, &b])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        err.contains("pipeline config") && err.contains(&"f".repeat(64)),
        "{err}"
    );

    // Two segments, stamped by another build: compact keeps the rows and lists that build.
    let two = scratch.path().join("two");
    index(t.path(), &two, &[]);
    write(
        t.path(),
        "billing/late.py",
        b"def late_fee(days):\n    return days * 5\n",
    );
    commit(t.path(), "late fee");
    index(t.path(), &two, &["--since", "auto", "--no-compact"]);
    assert_eq!(manifest(&two)["segments"].as_array().unwrap().len(), 2);
    restamp(&two);
    trove().arg("compact").arg(&two).assert().success();
    let m = manifest(&two);
    assert_eq!(m["segments"].as_array().unwrap().len(), 1);
    assert!(m["builds"].as_array().unwrap().contains(&other), "{m}");
    trove().arg("verify").arg(&two).assert().success();
    // Its rows are not all this build's: `--since` rebuilds it whole, and says why.
    let s = index_json(t.path(), &two, &["--since", "auto"]);
    let note = s["incremental"].as_str().unwrap();
    assert!(
        note.contains("full rebuild") && note.contains("0.0.9"),
        "{s}"
    );
    assert_eq!(manifest(&two)["builds"].as_array().unwrap().len(), 1);

    // A bundle of a newer minor is read, not rewritten.
    let mut v = manifest(&merged);
    v["format_minor"] = 7.into();
    std::fs::write(merged.join("manifest.json"), v.to_string()).unwrap();
    trove().arg("verify").arg(&merged).assert().success();
    let o = trove().arg("compact").arg(&merged).assert().code(2);
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        err.contains("bundle format 1.7") && err.contains("compacting"),
        "{err}"
    );
}

/// A committed file whose name is not UTF-8 (skipped: its path cannot be stored) and a
/// worktree's `.git` file (a pointer to the repository, an absolute local path) are no
/// uncommitted change and no source: the bundle is clean and `--since auto` builds on it.
#[cfg(unix)]
#[test]
fn odd_names_and_worktree_pointers_leave_the_tree_clean() {
    use std::os::unix::ffi::OsStrExt;
    let r = sample_repo();
    let root = r.path();
    let odd = root.join(std::ffi::OsStr::from_bytes(b"odd\xff.py"));
    std::fs::write(odd, "x = 1\n").unwrap();
    commit(root, "a name that is not UTF-8");
    let w = tempfile::tempdir().unwrap();
    let b = w.path().join("b");
    index(root, &b, &[]);
    assert_eq!(manifest(&b)["source"]["dirty"], false);
    write(
        root,
        "billing/late.py",
        b"def late_fee(days):\n    return days * 5\n",
    );
    commit(root, "late fee");
    index(root, &b, &["--since", "auto"]);
    assert_eq!(manifest(&b)["base"]["mode"], "git-diff");
    // A second work tree of the same repository, at the commit before.
    let wt = w.path().join("wt");
    git(
        root,
        &["worktree", "add", "-q", wt.to_str().unwrap(), "HEAD~1"],
    );
    assert!(wt.join(".git").is_file());
    let bw = w.path().join("bw");
    index(&wt, &bw, &[]);
    assert_eq!(manifest(&bw)["source"]["dirty"], false);
    let paths = crate::util::indexed_paths(&bw);
    assert!(!paths.iter().any(|p| p.ends_with(".git")), "{paths:?}");
    write(
        &wt,
        "billing/late.py",
        b"def late_fee(days):\n    return days * 6\n",
    );
    commit(&wt, "another late fee");
    index(&wt, &bw, &["--since", "auto"]);
    assert_eq!(manifest(&bw)["base"]["mode"], "git-diff");

    // `\` is a character of a name, not a separator: an edit of `a\b.py` is re-read (it kept
    // the old rows), committed or not, and the bundle equals a full build.
    write(root, "a\\b.py", b"def old_name():\n    return 1\n");
    commit(root, "a backslash");
    index(root, &b, &["--since", "auto"]);
    write(root, "a\\b.py", b"def new_name():\n    return 2\n");
    commit(root, "edited");
    index(root, &b, &["--since", "auto", "--no-compact"]);
    let found = trove()
        .args(["symbols"])
        .arg(&b)
        .arg("new_name")
        .assert()
        .success();
    let found = String::from_utf8_lossy(&found.get_output().stdout).into_owned();
    assert!(found.starts_with("a\\b.py:1-2"), "{found}");
    let full = w.path().join("full");
    index(root, &full, &[]);
    assert_eq!(crate::util::compacted_tables(&b), tables(&full));
    write(root, "a\\b.py", b"def third_name():\n    return 3\n");
    index(root, &b, &["--since", "auto", "--include-uncommitted"]);
    trove()
        .args(["symbols"])
        .arg(&b)
        .arg("third_name")
        .assert()
        .success();
}

/// Git never ignores a file it tracks: a tracked file that a `.gitignore` pattern matches (added
/// with `git add -f`) is indexed, by a full build and by `--since` alike, while the untracked
/// files beside it stay out. trove's own rules still apply to it: `.troveignore`, excluded
/// folders, secret names.
#[test]
fn tracked_files_that_gitignore_matches_are_indexed() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    git(root, &["init", "-q"]);
    write(
        root,
        ".gitignore",
        b"generated/\n*.gen.py\nbuild/\nlocal.txt\n",
    );
    write(root, ".troveignore", b"private/\n");
    write(root, "app.py", b"def main():\n    return 1\n");
    write(
        root,
        "generated/schema.py",
        b"def schema_version():\n    return 7\n",
    );
    write(root, "generated/junk.py", b"def junk():\n    return 0\n");
    write(root, "generated/.env", b"TOKEN=abc\n");
    write(root, "generated/node_modules/m.js", b"function m() {}\n");
    write(
        root,
        "tables.gen.py",
        b"def table_names():\n    return []\n",
    );
    write(root, "scratch.gen.py", b"def scratch():\n    return 2\n");
    write(root, "build/out.py", b"def out():\n    return 3\n");
    write(root, "private/keys.py", b"def keys():\n    return 4\n");
    git(root, &["add", "-A"]);
    git(
        root,
        &[
            "add",
            "-f",
            "generated/schema.py",
            "generated/.env",
            "generated/node_modules/m.js",
            "tables.gen.py",
            "build/out.py",
        ],
    );
    git(root, &["commit", "-q", "-m", "one"]);
    let scratch = tempfile::tempdir().unwrap();
    let incr = scratch.path().join("incr.bundle");
    index(root, &incr, &[]);
    let paths = crate::util::indexed_paths(&incr);
    for p in ["app.py", "generated/schema.py", "tables.gen.py"] {
        assert!(paths.contains(&p.to_string()), "{p} not in {paths:?}");
    }
    for p in [
        "generated/junk.py",
        "scratch.gen.py",
        "generated/.env",
        "generated/node_modules/m.js",
        "build/out.py",
        "private/keys.py",
    ] {
        assert!(!paths.contains(&p.to_string()), "{p} in {paths:?}");
    }
    let skipped = crate::util::skipped_reasons(&incr);
    assert_eq!(skipped["generated/.env"], "secret-file", "{skipped:?}");
    assert_eq!(skipped["scratch.gen.py"], "ignored", "{skipped:?}");
    assert_eq!(skipped["generated/"], "ignored", "{skipped:?}");
    assert_eq!(skipped["private/"], "ignored", "{skipped:?}");
    assert!(!skipped.contains_key("tables.gen.py"), "{skipped:?}");
    let hits = query_jsonl(&[incr.to_str().unwrap(), "schema_version"]);
    assert_eq!(hits[0]["path"], "generated/schema.py");

    // A change to a tracked, ignored file: `--since` reads it and equals a full build.
    write(
        root,
        "generated/schema.py",
        b"def schema_version():\n    return 8\n\ndef migrate():\n    return None\n",
    );
    git(root, &["commit", "-q", "-am", "two"]);
    let s = index_json(root, &incr, &["--since", "auto"]);
    let full = scratch.path().join("full.bundle");
    index(root, &full, &[]);
    assert_eq!(compacted_tables(&incr), tables(&full), "{s}");
    assert_eq!(manifest(&incr)["base"]["mode"], "git-diff");
    assert_eq!(
        s["files_indexed"].as_u64().unwrap() - s["files_reused"].as_u64().unwrap(),
        1,
        "{s}"
    );
    let hits = query_jsonl(&[incr.to_str().unwrap(), "migrate"]);
    assert_eq!(hits[0]["path"], "generated/schema.py");

    // A tracked file's folder replaced in the work tree by a link to a folder outside the root:
    // nothing outside the root is read.
    write(
        root,
        "generated/deep/inner.py",
        b"def inner():\n    return 5\n",
    );
    git(root, &["add", "-f", "generated/deep/inner.py"]);
    git(root, &["commit", "-q", "-m", "three"]);
    let outside = scratch.path().join("outside");
    write(
        &outside,
        "inner.py",
        b"def leaked_from_outside():\n    return 6\n",
    );
    std::fs::remove_dir_all(root.join("generated/deep")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("generated/deep")).unwrap();
    let linked = scratch.path().join("linked.bundle");
    index(root, &linked, &[]);
    let paths = crate::util::indexed_paths(&linked);
    assert!(
        paths.contains(&"generated/schema.py".to_string()),
        "{paths:?}"
    );
    assert!(
        !paths.contains(&"generated/deep/inner.py".to_string()),
        "{paths:?}"
    );
    let leaked = duck(&format!(
        "SELECT count(*) FROM {} WHERE content LIKE '%leaked_from_outside%'",
        pq(&linked, "chunks")
    ));
    assert_eq!(leaked[0][0], "0");
}

#[test]
fn the_repositorys_own_excludes_file_hides_untracked_files() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    git(root, &["init", "-q"]);
    // Relative: git reads it from the work tree's top.
    git(root, &["config", "core.excludesFile", "my-excludes"]);
    write(root, "my-excludes", b"*.scratch.py\nnotes/\n");
    write(root, "app.py", b"def main():\n    return 1\n");
    write(root, "kept.scratch.py", b"def kept():\n    return 2\n");
    write(root, "lib/try.scratch.py", b"def tried():\n    return 3\n");
    write(root, "notes/todo.md", b"# Todo\n");
    git(root, &["add", "app.py", "my-excludes"]);
    git(root, &["add", "-f", "kept.scratch.py"]);
    git(root, &["commit", "-q", "-m", "one"]);
    // What git calls untracked and not ignored.
    let others = std::process::Command::new("git")
        .args(["ls-files", "--others", "--exclude-standard"])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&others.stdout), "");
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("b");
    index(root, &b, &[]);
    let paths = crate::util::indexed_paths(&b);
    assert_eq!(
        paths,
        ["app.py", "kept.scratch.py", "my-excludes"],
        "{paths:?}"
    );
    let skipped = crate::util::skipped_reasons(&b);
    assert_eq!(skipped["lib/try.scratch.py"], "ignored", "{skipped:?}");
    assert_eq!(skipped["notes/"], "ignored", "{skipped:?}");
    // Set to a file that is not there, it hides nothing.
    git(root, &["config", "core.excludesFile", "gone"]);
    let b2 = scratch.path().join("b2");
    index(root, &b2, &[]);
    let paths = crate::util::indexed_paths(&b2);
    assert!(
        paths.contains(&"lib/try.scratch.py".to_string()),
        "{paths:?}"
    );
    assert!(paths.contains(&"notes/todo.md".to_string()), "{paths:?}");
}

/// A repository with `core.autocrlf` off and LF files `app/a.py`, `app/b.py` and `other` (its
/// path) committed, indexed into `incr.bundle` in a scratch directory: (repo, scratch, bundle).
fn lf_repo_indexed(
    other_text: &[u8],
    other: &str,
) -> (tempfile::TempDir, tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    git(root, &["init", "-q"]);
    git(root, &["config", "core.autocrlf", "false"]);
    write(root, "app/a.py", b"def alpha():\n    return 1\n");
    write(root, "app/b.py", b"def beta():\n    return 2\n");
    write(root, other, other_text);
    commit(root, "one");
    let scratch = tempfile::tempdir().unwrap();
    let incr = scratch.path().join("incr.bundle");
    index(root, &incr, &[]);
    (t, scratch, incr)
}

/// Removes `rel` and checks it out again under the settings of now, asserting its new bytes.
fn checkout_again(root: &Path, rel: &str, bytes: &[u8]) {
    std::fs::remove_file(root.join(rel)).unwrap();
    git(root, &["checkout", "--", rel]);
    assert_eq!(std::fs::read(root.join(rel)).unwrap(), bytes);
}

/// `--since auto` into `incr`, asserted equal, table for table, to a full build of `root` made
/// anew in `scratch`: the run's summary.
fn since_equals_full(root: &Path, incr: &Path, scratch: &Path) -> serde_json::Value {
    let s = index_json(root, incr, &["--since", "auto"]);
    let full = scratch.join("full.bundle");
    if full.exists() {
        std::fs::remove_dir_all(&full).unwrap();
    }
    index(root, &full, &[]);
    assert_eq!(compacted_tables(incr), tables(&full), "{s}");
    s
}

#[test]
fn a_gitattributes_change_rereads_the_files_it_may_check_out_anew() {
    let (t, scratch, incr) = lf_repo_indexed(b"def gamma():\n    return 3\n", "other/c.py");
    let root = t.path();
    // New attributes, and a fresh checkout of app/a.py under them (as a new clone gets it):
    // git's content is unchanged, its bytes are not.
    write(root, "app/.gitattributes", b"*.py text eol=crlf\n");
    commit(root, "two");
    checkout_again(root, "app/a.py", b"def alpha():\r\n    return 1\r\n");
    let s = since_equals_full(root, &incr, scratch.path());
    let o = trove()
        .args(["show", "--raw"])
        .arg(&incr)
        .arg("app/a.py")
        .output()
        .unwrap();
    assert_eq!(o.stdout, b"def alpha():\r\n    return 1\r\n");
    // Only what changed is processed again: the attributes file and the re-checked-out file;
    // app/b.py was read and reused, other/c.py not even read.
    assert_eq!(
        s["files_indexed"].as_u64().unwrap() - s["files_reused"].as_u64().unwrap(),
        2,
        "{s}"
    );
    assert!(
        s["incremental"].as_str().unwrap().ends_with(
            "; .gitattributes changed: 2 other file(s) under app checked by content hash"
        ),
        "{s}"
    );
    assert_eq!(manifest(&incr)["base"]["mode"], "git-diff");
}

/// The checkout settings outside the tree (`.git/info/attributes`, `core.autocrlf`) change no path
/// git diffs, yet a fresh checkout under them gives unchanged content other bytes: `--since` sees
/// the change by the fingerprint the bundle carries and compares every file by content hash.
#[test]
fn checkout_settings_outside_the_tree_reread_every_file() {
    let (t, scratch, incr) = lf_repo_indexed(b"gamma\n", "other/c.txt");
    let root = t.path();
    let changed = |s: &serde_json::Value| {
        s["files_indexed"].as_u64().unwrap() - s["files_reused"].as_u64().unwrap()
    };
    let note = "; git's checkout settings changed (.git/info/attributes, core.attributesFile, \
                core.autocrlf or core.eol): ";
    // Nothing changed: nothing read, no note.
    let s = index_json(root, &incr, &["--since", "auto"]);
    assert_eq!(changed(&s), 0, "{s}");
    assert!(!s["incremental"].as_str().unwrap().contains(note), "{s}");
    // `.git/info/attributes` asks for CRLF; one file is checked out again under it.
    write(root, ".git/info/attributes", b"*.py text eol=crlf\n");
    checkout_again(root, "app/a.py", b"def alpha():\r\n    return 1\r\n");
    let s = since_equals_full(root, &incr, scratch.path());
    // Every file was read; only the re-checked-out one is processed again.
    assert_eq!(changed(&s), 1, "{s}");
    assert!(
        s["incremental"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{note}3 other file(s) checked by content hash")),
        "{s}"
    );
    // The bundle now carries the new settings: the next run trusts git again.
    let s = index_json(root, &incr, &["--since", "auto"]);
    assert!(!s["incremental"].as_str().unwrap().contains(note), "{s}");
    // `core.autocrlf` is such a setting too.
    std::fs::remove_file(root.join(".git/info/attributes")).unwrap();
    git(root, &["config", "core.autocrlf", "true"]);
    checkout_again(root, "other/c.txt", b"gamma\r\n");
    let s = since_equals_full(root, &incr, scratch.path());
    assert!(s["incremental"].as_str().unwrap().contains(note), "{s}");
    assert_eq!(manifest(&incr)["base"]["mode"], "git-diff");
}

/// Files git is told not to check (`update-index --assume-unchanged`, `--skip-worktree`) and
/// then edited: git status says nothing of them, `--since` reads them all the same.
#[test]
fn edits_git_is_told_not_to_see_are_read() {
    let (t, scratch, incr) = lf_repo_indexed(b"def gamma():\n    return 3\n", "other/c.py");
    let root = t.path();
    git(root, &["update-index", "--assume-unchanged", "app/a.py"]);
    git(root, &["update-index", "--skip-worktree", "app/b.py"]);
    write(root, "app/a.py", b"def alpha_edited():\n    return 10\n");
    write(root, "app/b.py", b"def beta_edited():\n    return 20\n");
    let s = since_equals_full(root, &incr, scratch.path());
    let note = s["incremental"].as_str().unwrap();
    assert!(note.contains("2 file(s) git is told not to check"), "{s}");
    assert_eq!(s["files_reused"], 1, "{s}");
}

/// A folder whose name is not UTF-8, committed: `--since` passes over it as a full build does
/// (its files are listed as skipped) instead of failing to list HEAD's files.
#[test]
fn a_folder_named_in_other_bytes_than_utf8_does_not_stop_since() {
    use std::os::unix::ffi::OsStrExt;
    let (t, scratch, incr) = lf_repo_indexed(b"def gamma():\n    return 3\n", "other/c.py");
    let root = t.path();
    let odd = root.join(std::ffi::OsStr::from_bytes(b"\xfedir"));
    std::fs::create_dir(&odd).unwrap();
    std::fs::write(odd.join("inner.py"), b"def inner():\n    return 2\n").unwrap();
    write(root, "app/a.py", b"def alpha():\n    return 10\n");
    commit(root, "odd folder");
    let s = since_equals_full(root, &incr, scratch.path());
    assert_eq!(manifest(&incr)["base"]["mode"], "git-diff", "{s}");
}

/// git status calls a file unchanged when only its line endings were edited and a conversion
/// (a `text` attribute, `core.autocrlf`) would undo the edit as git checks it in: `--since` reads
/// it again all the same (its size is not the base's), for a file indexed and one past the size
/// cap alike, with the attribute at the root, above the indexed folder, or in the settings.
#[test]
fn line_ending_edits_that_git_normalizes_away_are_read_again() {
    let cap = ["--max-file-bytes", "300"];
    for (attributes, autocrlf, folder) in [
        (true, "false", ""),
        (true, "false", "app"),
        (false, "input", ""),
    ] {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        git(&root, &["init", "-q"]);
        git(&root, &["config", "core.autocrlf", autocrlf]);
        if attributes {
            write(&root, ".gitattributes", b"* text=auto\n");
        }
        write(&root, "app/a.py", b"def alpha():\n    return 1\n");
        write(&root, "app/big.py", "x = 1\n".repeat(60).as_bytes());
        commit(&root, "one");
        let target = root.join(folder);
        let (incr, full) = (t.path().join("incr"), t.path().join("full"));
        index(&target, &incr, &cap);
        for f in ["app/a.py", "app/big.py"] {
            let text = std::fs::read_to_string(root.join(f)).unwrap();
            write(&root, f, text.replace('\n', "\r\n").as_bytes());
        }
        git(&root, &["add", "-A"]);
        let status = std::process::Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(status.stdout.is_empty(), "git calls the edits changes");
        let s = index_json(&target, &incr, &[&cap[..], &["--since", "auto"]].concat());
        index(&target, &full, &cap);
        assert_eq!(
            compacted_tables(&incr),
            tables(&full),
            "{attributes} {autocrlf} {folder:?}: {s}"
        );
    }
}

/// One seed of `scripts/history-fuzz.py` (a subfolder indexed, two shards): four rounds of random
/// changes, each `--since` bundle against a full build — answers, compacted tables, the merged
/// shards, a synced copy. The script runs many seeds; this keeps it working.
#[test]
fn a_random_history_indexed_since_equals_full_builds() {
    let out = std::process::Command::new("python3")
        .arg(crate::util::repo().join("scripts/history-fuzz.py"))
        .args(["--seed", "9", "--steps", "4"])
        .env("TROVE", assert_cmd::cargo::cargo_bin("trove"))
        .env(
            "TROVE_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("trove-cache"),
        )
        .output()
        .expect("python3 runs");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{log}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        log.contains("seed 9 (root repo/src, no exclude, shards 2): 4 rounds agree"),
        "{log}"
    );
}

#[test]
fn the_refs_of_several_segments_are_cached_and_answer_as_the_full_build() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    let (incr, full) = (t.path().join("incr"), t.path().join("full"));
    crate::util::two_segment_shop(&root, &incr);
    // A third segment whose call resolves to a definition of the first, and a fourth that
    // renames a caller (tombstones).
    write(
        &root,
        "shop/report.py",
        b"from shop.money import total\n\ndef report(cart):\n    return f'{total(cart)}'\n",
    );
    commit(&root, "report");
    index(&root, &incr, &["--since", "auto", "--no-compact"]);
    std::fs::rename(root.join("shop/checkout.py"), root.join("shop/pay.py")).unwrap();
    commit(&root, "rename");
    index(&root, &incr, &["--since", "auto", "--no-compact"]);
    index(&root, &full, &[]);
    assert_eq!(manifest(&incr)["segments"].as_array().unwrap().len(), 4);

    let cache = t.path().join("cache");
    let ask = |b: &Path, args: &[&str]| {
        let o = crate::util::trove_in(Some(&cache))
            .args([args[0], b.to_str().unwrap()])
            .args(&args[1..])
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        crate::util::unplaced(serde_json::from_slice(&o.stdout).unwrap())
    };
    let cached = || crate::util::refs_cache_files(&cache);
    let callers = ["refs", "total", "--callers"];
    let want = ask(&full, &callers);
    assert_eq!(want.as_array().unwrap().len(), 2, "{want}");
    // The first use writes the resolution to the cache (a bundle of one segment needs none),
    // later ones read it; all answer as the full build, `map` and SQL too.
    assert_eq!(ask(&incr, &callers), want);
    let files = cached();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(ask(&incr, &callers), want);
    assert_eq!(ask(&incr, &["map"]), ask(&full, &["map"]));
    let sql = [
        "sql",
        "SELECT path, line, target, target_symbol_id FROM refs ORDER BY ALL",
    ];
    assert_eq!(ask(&incr, &sql), ask(&full, &sql));
    assert_eq!(cached(), files);
    // A script that redefines what `refs` resolves over gets the live resolution over its own
    // views (without `total`'s file, neither call resolves; the full build's refs are stored as
    // resolved, 2), and leaves nothing of it in the cache: with a cold cache, the next `refs`
    // answers as the full build.
    let poison = "CREATE TEMP TABLE s AS SELECT * FROM symbols WHERE path <> 'shop/money.py'; \
                  CREATE OR REPLACE VIEW symbols AS SELECT * FROM s; \
                  SELECT count(*) AS n FROM refs WHERE target_symbol_id IS NOT NULL";
    let resolved = |b: &Path| {
        let o = crate::util::trove_in(Some(&t.path().join("cold")))
            .args(["sql", b.to_str().unwrap(), poison, "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()[0]["n"].clone()
    };
    assert_eq!(resolved(&incr), 0);
    assert_eq!(resolved(&full), 2);
    let o = crate::util::trove_in(Some(&t.path().join("cold")))
        .args([
            "refs",
            incr.to_str().unwrap(),
            "total",
            "--callers",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        crate::util::unplaced(serde_json::from_slice(&o.stdout).unwrap()),
        want
    );
    // A damaged cache file is written again.
    std::fs::write(&files[0], b"not parquet").unwrap();
    assert_eq!(ask(&incr, &callers), want);
    assert!(std::fs::read(&files[0]).unwrap().starts_with(b"PAR1"));
    // Another segment: another cache file, the new answer.
    write(
        &root,
        "shop/refund.py",
        b"from shop.money import total\n\ndef refund(cart):\n    return -total(cart)\n",
    );
    commit(&root, "refund");
    index(&root, &incr, &["--since", "auto", "--no-compact"]);
    std::fs::remove_dir_all(&full).unwrap();
    index(&root, &full, &[]);
    let want = ask(&full, &callers);
    assert_eq!(want.as_array().unwrap().len(), 3, "{want}");
    assert_eq!(ask(&incr, &callers), want);
    assert_eq!(cached().len(), 2);
}
