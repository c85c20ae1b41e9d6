//! `trove index` end to end through the binary on real git repositories.
use std::path::Path;

use crate::util::{
    duck, index, indexed_paths, manifest, parquet_bytes, pq, sample_repo, skipped_reasons, trove,
    write,
};

#[test]
fn index_verify_inspect_and_counts() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .success()
        .stdout(predicates::str::contains("ok: 10 files"));
    let inspect = trove()
        .arg("inspect")
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let inspect = String::from_utf8(inspect).unwrap();
    assert!(
        inspect.contains("python") && inspect.contains("go") && inspect.contains("markdown"),
        "{inspect}"
    );
    let m = manifest(&b);
    let files = duck(&format!(
        "SELECT path, language, source_type FROM {} ORDER BY path",
        pq(&b, "files")
    ));
    let paths: Vec<&str> = files.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        paths,
        [
            ".gitignore",
            "README.md",
            "api/server.go",
            "billing/billing.py",
            "cli/Cargo.toml",
            "cli/src/main.rs",
            "docs/guide.md",
            "scripts/deploy.sh",
            "tests/test_billing.py",
            "web/package.json",
            "web/src/Button.tsx",
            "web/src/users.ts",
        ]
    );
    let of = |p: &str| files.iter().find(|r| r[0] == p).unwrap().clone();
    assert_eq!(of("tests/test_billing.py")[2], "test");
    assert_eq!(of("scripts/deploy.sh")[1], "shell");
    assert_eq!(of("docs/guide.md")[2], "doc");
    assert_eq!(m["counts"]["files"], 12);
    let chunks = duck(&format!("SELECT count(*) FROM {}", pq(&b, "chunks")));
    assert_eq!(chunks[0][0], m["counts"]["chunks"].to_string());
    assert_eq!(m["source"]["commit"].as_str().map(str::len), Some(40));
    assert_eq!(m["source"]["dirty"], false);
    // No absolute path of this machine anywhere in the manifest.
    let text = std::fs::read_to_string(b.join("manifest.json")).unwrap();
    assert!(
        !text.contains(&*repo.path().to_string_lossy()),
        "manifest leaks the absolute path"
    );
}

#[test]
fn every_skipped_file_is_listed_with_its_reason() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let got = skipped_reasons(&b);
    for (path, reason) in [
        ("assets/logo.txt", "binary"),
        ("data/huge.md", "too-large"),
        (".env", "secret-file"),
        ("deploy/server.pem", "secret-file"),
        ("debug.log", "ignored"),
        ("node_modules/", "excluded-dir"),
        (".git/", "excluded-dir"),
        ("web/package-lock.json", "lockfile"),
        ("api/gen.pb.go", "generated"),
    ] {
        assert_eq!(
            got.get(path).map(String::as_str),
            Some(reason),
            "{path} in {got:?}"
        );
    }
    // Nothing secret made it into the chunks.
    let leaked = duck(&format!(
        "SELECT count(*) FROM {} WHERE content LIKE '%not-a-real-key%' OR content LIKE '%PRIVATE KEY%'",
        pq(&b, "chunks")
    ));
    assert_eq!(leaked[0][0], "0");
    // Another bundle left in the tree (an earlier run's output) is an index, not source: skipped
    // whole, by a full run and by an incremental one alike.
    index(
        &repo.path().join("web"),
        &repo.path().join("old.bundle"),
        &[],
    );
    let b2 = out.path().join("b2");
    index(repo.path(), &b2, &[]);
    assert_eq!(
        skipped_reasons(&b2).get("old.bundle/").map(String::as_str),
        Some("bundle")
    );
    assert!(
        indexed_paths(&b2)
            .iter()
            .all(|p| !p.starts_with("old.bundle/")),
        "{:?}",
        indexed_paths(&b2)
    );
    index(repo.path(), &b2, &["--since", "auto"]);
    assert!(
        indexed_paths(&b2)
            .iter()
            .all(|p| !p.starts_with("old.bundle/"))
    );
}

#[test]
fn include_exclude_and_max_file_bytes() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(
        repo.path(),
        &b,
        &[
            "--exclude",
            "web/**",
            "--include",
            "**/*.{py,ts,go}",
            "--max-file-bytes",
            "1000",
        ],
    );
    let paths = indexed_paths(&b);
    assert_eq!(paths, ["api/server.go", "tests/test_billing.py"]);
    let got = skipped_reasons(&b);
    assert_eq!(got["web/"], "excluded");
    assert_eq!(got["billing/billing.py"], "too-large");
    assert_eq!(got["README.md"], "not-included");
    // A folder named as .gitignore writes it (`web/`), or bare, is all that is under it.
    let c = out.path().join("c");
    index(
        repo.path(),
        &c,
        &["--exclude", "web/", "--include", "api", "--include", "web"],
    );
    assert_eq!(indexed_paths(&c), ["api/server.go"]);
    assert_eq!(skipped_reasons(&c)["web/"], "excluded");
}

#[test]
fn same_input_gives_identical_parquet_bytes_at_any_thread_count() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let (b1, b2, b3) = (
        out.path().join("b1"),
        out.path().join("b2"),
        out.path().join("b3"),
    );
    index(repo.path(), &b1, &[]);
    index(repo.path(), &b2, &["--threads", "1"]);
    index(repo.path(), &b3, &["--threads", "7"]);
    let (p1, p2, p3) = (parquet_bytes(&b1), parquet_bytes(&b2), parquet_bytes(&b3));
    assert_eq!(p1.len(), 9);
    assert!(p1 == p2 && p2 == p3, "parquet bytes differ between runs");
}

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature (scripts/test.sh)"
)]
fn a_failed_run_leaves_the_previous_bundle_intact() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let before = parquet_bytes(&b);
    let manifest = std::fs::read(b.join("manifest.json")).unwrap();
    write(
        repo.path(),
        "api/extra.go",
        b"package api\n\nfunc Extra() {}\n",
    );
    trove()
        .arg("index")
        .arg(repo.path())
        .arg("-o")
        .arg(&b)
        .arg("--quiet")
        .env("FAILPOINTS", "index-file-written=2*off->return")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("left as it was"));
    assert_eq!(parquet_bytes(&b), before);
    assert_eq!(std::fs::read(b.join("manifest.json")).unwrap(), manifest);
    trove().arg("verify").arg(&b).assert().success();
    let leftovers = crate::util::names_in(out.path());
    // The output lock file stays (removing it would race a run about to take it).
    assert_eq!(leftovers, [".b.lock", "b"], "temp directories left behind");
    // And a successful run replaces it.
    index(repo.path(), &b, &[]);
    let files = duck(&format!(
        "SELECT count(*) FROM {} WHERE path = 'api/extra.go'",
        pq(&b, "files")
    ));
    assert_eq!(files[0][0], "1");
}

#[test]
fn refuses_to_overwrite_what_is_not_a_bundle() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    write(out.path(), "precious/notes.txt", b"keep me\n");
    trove()
        .arg("index")
        .arg(repo.path())
        .arg("-o")
        .arg(out.path().join("precious"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a trove bundle"));
    assert_eq!(
        std::fs::read(out.path().join("precious/notes.txt")).unwrap(),
        b"keep me\n"
    );
}

#[test]
fn verify_catches_a_changed_file_and_bad_input_is_exit_2() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    // Counts the manifest states that its rows do not make: live totals, a segment's, a
    // language's (`inspect` would show them as they are written).
    let original = std::fs::read_to_string(b.join("manifest.json")).unwrap();
    let tamper = |edit: &dyn Fn(&mut serde_json::Value), says: &str| {
        let mut m: serde_json::Value = serde_json::from_str(&original).unwrap();
        edit(&mut m);
        std::fs::write(b.join("manifest.json"), m.to_string()).unwrap();
        trove()
            .arg("verify")
            .arg(&b)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    };
    tamper(&|m| m["counts"]["files"] = 99.into(), "counts.files 99");
    tamper(
        &|m| m["counts"]["symbols"] = 5000.into(),
        "counts.symbols 5000",
    );
    tamper(
        &|m| m["segments"][0]["files"] = 999.into(),
        "claims 999 files rows",
    );
    tamper(
        &|m| m["languages"]["python"]["chunks"] = 77.into(),
        "languages do not match",
    );
    std::fs::write(b.join("manifest.json"), &original).unwrap();
    trove().arg("verify").arg(&b).assert().success();
    let p = crate::util::table_file(&b, "terms");
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&p, bytes).unwrap();
    trove()
        .arg("verify")
        .arg(&b)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("terms.parquet sha256"));
    trove()
        .arg("verify")
        .arg(out.path().join("missing"))
        .assert()
        .code(2);
    trove()
        .arg("inspect")
        .arg(repo.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is this a trove bundle"));
    trove()
        .arg("index")
        .arg(repo.path().join("nope"))
        .arg("-o")
        .arg(out.path().join("c"))
        .assert()
        .code(2);
    // Counts past reason and empty globs are refused before any work (100000 threads aborted).
    for (args, says) in [
        (&["--threads", "100000"][..], "not in 0..=1024"),
        (&["--include", ""][..], "is empty"),
        (&["--exclude", " "][..], "is empty"),
    ] {
        trove()
            .arg("index")
            .arg(repo.path())
            .arg("-o")
            .arg(out.path().join("c"))
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
        assert!(!out.path().join("c").exists());
    }
    // `trove chunks` reads a regular file only (a FIFO blocked it; /dev/zero grew without end).
    let fifo = out.path().join("pipe.py");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    for f in [repo.path().join("billing"), fifo] {
        if f.exists() || made.as_ref().is_ok_and(|s| s.success()) {
            trove()
                .arg("chunks")
                .arg(&f)
                .timeout(std::time::Duration::from_secs(30))
                .assert()
                .code(2)
                .stderr(predicates::str::contains("not a regular file"));
        }
    }
    // A packed file inside the bundle it packs would replace one of its files, or add one.
    let good = out.path().join("good");
    index(repo.path(), &good, &[]);
    for inside in ["manifest.json", "segments/x.trove", "b.trove"] {
        trove()
            .arg("pack")
            .arg(&good)
            .arg("-o")
            .arg(good.join(inside))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("is inside the bundle"));
    }
    trove().arg("verify").arg(&good).assert().success();
    // Unpacking into the folder that holds the packed file would delete it.
    let packed = out.path().join("p/g.trove");
    std::fs::create_dir_all(packed.parent().unwrap()).unwrap();
    trove()
        .args([
            "pack".as_ref(),
            good.as_os_str(),
            "-o".as_ref(),
            packed.as_os_str(),
        ])
        .assert()
        .success();
    trove()
        .args([
            "unpack".as_ref(),
            packed.as_os_str(),
            "-o".as_ref(),
            out.path().join("p").as_os_str(),
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("which unpacking replaces"));
    assert!(packed.is_file());
    // The other front ends' counts and addresses, checked before they start.
    for (args, says) in [
        (&["serve", "--workers", "0"][..], "not in 1..=1024"),
        (&["serve", "--workers", "100000"][..], "not in 1..=1024"),
        (
            &["serve", "--ask-url", "not a url"][..],
            "not an http:// or https:// URL",
        ),
        (
            &["ask", "--timeout", "0"][..],
            "--timeout must be at least 1",
        ),
        (
            &["ask", "--url", "localhost:1"][..],
            "not an http:// or https:// URL",
        ),
    ] {
        let mut c = trove();
        c.arg(args[0]).arg(&b);
        if args[0] == "ask" {
            c.arg("where is the invoice total computed");
        }
        c.args(&args[1..])
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
}

#[test]
fn progress_lines_and_summary_on_a_non_tty() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let assert = trove()
        .arg("index")
        .arg(repo.path())
        .arg("-o")
        .arg(out.path().join("b"))
        .assert()
        .success();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(err.contains("indexed 12 files"), "{err}");
    assert!(
        err.contains("skipped:") && err.contains("secret-file 2"),
        "{err}"
    );
    assert!(err.contains("peak memory"), "{err}");
}

#[test]
fn languages_lists_the_registry() {
    let out = trove()
        .args(["languages", "--format", "json"])
        .assert()
        .success();
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let ids: Vec<&str> = listed.iter().filter_map(|l| l["id"].as_str()).collect();
    let reg = trove::lang::Registry::load(&[]).unwrap();
    let want: Vec<&str> = reg.languages().iter().map(|l| l.def.id.as_str()).collect();
    assert_eq!(ids, want);
    for id in [
        "kotlin", "csharp", "fsharp", "oberon", "basic", "hcl", "rst", "asciidoc",
    ] {
        assert!(ids.contains(&id), "{id} missing");
    }
    // The text table lists them too, one per line.
    let text = trove().arg("languages").assert().success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert_eq!(text.lines().count(), want.len() + 1, "{text}");
}

#[test]
fn a_mixed_repository_puts_every_file_in_its_language() {
    // Every language fixture in one repository, each under a directory named by its language id.
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    crate::util::copy_dir(&crate::util::fixtures().join("languages"), &root);
    crate::util::git(&root, &["init", "-q"]);
    crate::util::git(&root, &["add", "-A"]);
    crate::util::git(&root, &["commit", "-q", "-m", "fixtures"]);
    let b = t.path().join("b");
    index(&root, &b, &[]);
    let rows = duck(&format!(
        "SELECT path, coalesce(language, '-'), chunks FROM {} ORDER BY path",
        pq(&b, "files")
    ));
    let files = walkdir_count(&crate::util::fixtures().join("languages"));
    assert_eq!(rows.len(), files, "{rows:?}");
    for r in &rows {
        let dir = r[0].split('/').next().unwrap();
        assert_eq!(r[1], dir, "{r:?}");
        assert_ne!(r[2], "0", "{r:?} has no chunks");
    }
}

#[test]
fn nested_gitignore_negation_troveignore_and_symlinks() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    write(&root, "src/lib.rs", b"pub fn kept() {}\n");
    write(&root, "src/.gitignore", b"*.tmp.rs\n!keep.tmp.rs\n");
    write(&root, "src/scratch.tmp.rs", b"fn scratch() {}\n");
    write(&root, "src/keep.tmp.rs", b"fn keep() {}\n");
    write(&root, ".troveignore", b"fixtures/\n");
    write(&root, "fixtures/big_sample.py", b"x = 1\n");
    write(&root, "outside.txt", b"inside the root\n");
    std::os::unix::fs::symlink(t.path(), root.join("escape")).unwrap();
    std::os::unix::fs::symlink(root.join("outside.txt"), root.join("alias.txt")).unwrap();
    std::os::unix::fs::symlink(root.join("missing.txt"), root.join("dangling.txt")).unwrap();
    std::os::unix::fs::symlink(root.join("loop.txt"), root.join("loop.txt")).unwrap();
    crate::util::git(&root, &["init", "-q"]);
    let out = t.path().join("b");
    index(&root, &out, &[]);
    let paths = indexed_paths(&out);
    assert_eq!(
        paths,
        [
            ".troveignore",
            "outside.txt",
            "src/.gitignore",
            "src/keep.tmp.rs",
            "src/lib.rs"
        ]
    );
    let got = skipped_reasons(&out);
    assert_eq!(got["src/scratch.tmp.rs"], "ignored");
    assert_eq!(got["fixtures/"], "ignored");
    assert_eq!(got["escape"], "symlink-outside-root");
    assert_eq!(got["alias.txt"], "symlink");
    assert_eq!(got["dangling.txt"], "symlink-broken");
    assert_eq!(got["loop.txt"], "symlink-broken");
}

#[test]
fn config_overlay_changes_the_pipeline_and_bad_keys_are_refused() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    write(
        out.path(),
        "lines.toml",
        b"[chunk]\nchunker = \"lines\"\nwindow_lines = 5\n",
    );
    let b = out.path().join("b");
    index(
        repo.path(),
        &b,
        &["--config", &out.path().join("lines.toml").to_string_lossy()],
    );
    let kinds = duck(&format!(
        "SELECT DISTINCT kind, max(end_line - start_line) FROM {} GROUP BY kind",
        pq(&b, "chunks")
    ));
    assert_eq!(kinds, [vec!["lines".to_string(), "4".to_string()]]);
    let m = manifest(&b);
    assert_eq!(m["pipeline"]["chunk"]["window_lines"], 5);
    // Refused with exit 2 and a message naming what is wrong; nothing is written.
    let refused = |extra: &[&str], says: &str| {
        trove()
            .arg("index")
            .arg(repo.path())
            .arg("-o")
            .arg(out.path().join("c"))
            .args(extra)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    };
    write(out.path(), "bad.toml", b"[chunk]\nwindow_line = 5\n");
    let bad = out.path().join("bad.toml");
    refused(&["--config", &bad.to_string_lossy()], "window_line");
    // The file is named once, after one "config:".
    let out2 = trove()
        .arg("index")
        .arg(repo.path())
        .arg("-o")
        .arg(out.path().join("c"))
        .args(["--config", &bad.to_string_lossy()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out2.stderr);
    assert_eq!(err.matches("config:").count(), 1, "{err}");
    // A root that is not there is said to be missing.
    trove()
        .arg("index")
        .arg(out.path().join("no-such-tree"))
        .arg("-o")
        .arg(out.path().join("c"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no-such-tree does not exist"));
    // A value that parses but makes no sense, in a config file or a flag.
    write(out.path(), "tiny.toml", b"[embed]\nwindow_tokens = 5\n");
    let tiny = out.path().join("tiny.toml");
    refused(
        &["--config", &tiny.to_string_lossy()],
        "embed.window_tokens must be 0",
    );
    refused(&["--embed-window-tokens", "5"], "--embed-window-tokens");
    // A flag of another embedder than the one in use is not silently dropped.
    refused(
        &["--model-dir", "/nonexistent"],
        "--model-dir is for the local embedder",
    );
    refused(
        &["--embed-url", "http://localhost:1/v1"],
        "--embed-url is for the openai embedder",
    );
    // BM25 parameters the bundle's readers would refuse are refused before it is written.
    for (toml, says) in [
        ("[bm25]\nk1 = -1.0\n", "bm25.k1"),
        ("[bm25]\nk1 = nan\n", "bm25.k1"),
        ("[bm25]\nb = 5.0\n", "bm25.b"),
        ("[bm25]\nmax_token_len = 0\n", "bm25.max_token_len"),
        (
            "[source]\ngenerated_markers = [\"\"]\n",
            "generated_markers",
        ),
    ] {
        write(out.path(), "bm.toml", toml.as_bytes());
        refused(
            &["--config", &out.path().join("bm.toml").to_string_lossy()],
            says,
        );
    }
    assert!(!out.path().join("c").exists());
}

#[test]
fn a_file_too_deep_to_chunk_costs_only_itself() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    // 5,000 nested functions (they overflowed a worker's stack and ended the run), and a file
    // nested just under the bound, chunked by scope on the worker as usual.
    let nest = |n: usize| {
        let mut s: String = (0..n).map(|i| format!("function f{i}() {{\n")).collect();
        s.push_str("return 1;\n");
        s.push_str(&"}\n".repeat(n));
        s
    };
    write(&root, "deep.js", nest(5000).as_bytes());
    write(&root, "nested.js", nest(700).as_bytes());
    write(&root, "ok.py", b"def fine():\n    return 1\n");
    let b = t.path().join("b");
    index(&root, &b, &["--threads", "1"]);
    let rows = duck(&format!(
        "SELECT path, parse_fallback, chunks FROM {} ORDER BY path",
        pq(&b, "files")
    ));
    assert_eq!(rows[0][..2], ["deep.js", "true"], "{rows:?}");
    assert_eq!(rows[1][..2], ["nested.js", "false"], "{rows:?}");
    assert!(rows[1][2].parse::<u32>().unwrap() > 100, "{rows:?}");
    assert_eq!(rows[2][..2], ["ok.py", "false"], "{rows:?}");
}

/// Regular files under `dir`.
fn walkdir_count(dir: &Path) -> usize {
    walkdir_list(dir)
        .iter()
        .filter(|p| !Path::new(p).is_dir())
        .count()
}

#[test]
fn parse_only_reads_and_parses_what_index_would_and_writes_nothing() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    index(repo.path(), &b, &[]);
    let grammar_files = duck(&format!(
        "SELECT count(*) FROM {} WHERE language IN ('python', 'go', 'rust', 'typescript', 'javascript', 'markdown')",
        pq(&b, "files")
    ))[0][0]
        .parse::<u64>()
        .unwrap();
    let indexed = duck(&format!("SELECT count(*) FROM {}", pq(&b, "files")))[0][0]
        .parse::<u64>()
        .unwrap();
    let before: Vec<_> = walkdir_list(repo.path());
    let o = trove()
        .args(["index", "--parse-only", "--json"])
        .arg(repo.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let s: serde_json::Value = serde_json::from_slice(&o).unwrap();
    // Every file index wrote was read and decoded; those with a grammar were parsed.
    assert_eq!(
        s["parsed"].as_u64().unwrap() + s["no_grammar"].as_u64().unwrap(),
        indexed,
        "{s}"
    );
    assert!(s["parsed"].as_u64().unwrap() >= grammar_files, "{s}");
    assert_eq!(s["parse_fallbacks"], 0, "{s}");
    assert!(s["skipped"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(
        walkdir_list(repo.path()),
        before,
        "parse-only wrote into the tree"
    );
    // -o is refused beside it: parse-only never writes a bundle.
    trove()
        .args(["index", "--parse-only", "-o"])
        .arg(out.path().join("c"))
        .arg(repo.path())
        .assert()
        .code(2);
    assert!(!out.path().join("c").exists());
}

/// Every file and directory under `dir`, sorted.
fn walkdir_list(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            v.push(p.to_string_lossy().into_owned());
        }
    }
    v.sort();
    v
}

/// Every run accounts for its time stage by stage: `--json`'s `timings` names each stage, the
/// parse and the encoding of a code tree take time, no stage is negative, and `--timings` prints
/// the table; a run that builds nothing says so.
#[test]
fn a_run_accounts_for_its_time_stage_by_stage() {
    let repo = sample_repo();
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    let o = crate::util::index_cmd(repo.path(), &b, &["--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let s: serde_json::Value = serde_json::from_slice(&o).unwrap();
    let t = &s["timings"];
    let stages = t["stages"].as_array().unwrap();
    let names: Vec<&str> = stages
        .iter()
        .map(|x| x["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "walk", "read", "parse", "chunk", "extract", "tokenize", "embed", "encode", "finish"
        ]
    );
    let secs = |name: &str| {
        stages.iter().find(|x| x["stage"] == name).unwrap()["secs"]
            .as_f64()
            .unwrap()
    };
    for n in &names {
        assert!(secs(n) >= 0.0, "{n}: {t}");
    }
    assert!(
        secs("parse") > 0.0 && secs("encode") > 0.0 && secs("finish") > 0.0,
        "{t}"
    );
    let sum: f64 = names.iter().map(|n| secs(n)).sum();
    assert!(
        (sum - t["stages_secs"].as_f64().unwrap()).abs() < 1e-6,
        "{t}"
    );
    assert!(t["workers"].as_u64().unwrap() >= 1, "{t}");
    assert!(t["wall_secs"].as_f64().unwrap() > 0.0, "{t}");
    // The table, on stderr, after the summary.
    let o = crate::util::index_cmd(repo.path(), &out.path().join("c"), &["--timings"])
        .assert()
        .success()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(o).unwrap();
    for n in &names {
        assert!(err.lines().any(|l| l.starts_with(n)), "{n} missing:\n{err}");
    }
    assert!(
        err.contains("workers (") && err.contains("writer: busy"),
        "{err}"
    );
    // Nothing changed since: nothing built, and the run says so.
    let o = crate::util::index_cmd(
        repo.path(),
        &b,
        &["--since", "auto", "--timings", "--quiet"],
    )
    .assert()
    .success()
    .get_output()
    .stderr
    .clone();
    assert!(
        String::from_utf8_lossy(&o).contains("nothing was built"),
        "{}",
        String::from_utf8_lossy(&o)
    );
}
