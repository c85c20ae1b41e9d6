//! Edges of the everyday commands, through the binary: `show`'s suggestions and line ranges,
//! `map --format jsonl` paths, `--lang`'s list, an empty cache variable, `-o` as a symbolic link,
//! secret files in any folder.
use std::path::Path;

use crate::util::{index, sql_json, trove, write};

/// A small tree: a package, a test, an empty file, a skipped secret file.
fn repo(root: &Path) {
    write(
        root,
        "two.py",
        b"class Alpha:\n    def helper(self):\n        return 1\n",
    );
    write(
        root,
        "pkg/__init__.py",
        b"def total_price(items):\n    return sum(items)\n",
    );
    write(
        root,
        "tests/test_total.py",
        b"def test_total_price():\n    assert True\n",
    );
    write(root, "empty.py", b"");
    write(root, ".env", b"TOKEN=abc\n");
    write(
        root,
        "deploy/.docker/config.json",
        b"{\"auths\": {\"x\": {\"auth\": \"c2VjcmV0\"}}}\n",
    );
}

fn stderr_of(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let o = trove().args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

#[test]
fn show_suggests_files_by_name_and_says_why_one_was_skipped() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    repo(&root);
    let b = t.path().join("b");
    index(&root, &b, &[]);
    let show = |target: &str| stderr_of(&["show".as_ref(), b.as_os_str(), target.as_ref()]);
    // Names with `_` (a LIKE wildcard once, dropped from the pattern) find their files.
    let (code, _, err) = show("test_total.py");
    assert_eq!(code, Some(2));
    assert!(err.contains("did you mean tests/test_total.py?"), "{err}");
    let (_, _, err) = show("__init__.py");
    assert!(err.contains("did you mean pkg/__init__.py?"), "{err}");
    // `%` is a character, not a wildcard: no file has it.
    let (_, _, err) = show("%.py");
    assert!(!err.contains("did you mean"), "{err}");
    // A folder has no file name to suggest by.
    let (_, _, err) = show("tests/");
    assert!(!err.contains("did you mean"), "{err}");
    // A skipped file says so, and why.
    let (code, _, err) = show(".env");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("was not indexed (skipped: secret-file)"),
        "{err}"
    );
    // So is a Docker credentials file below the root.
    let (_, _, err) = show("deploy/.docker/config.json");
    assert!(err.contains("skipped: secret-file"), "{err}");
    // An empty file shows as empty, and has no line 1.
    let (code, out, _) = show("empty.py");
    assert_eq!((code, out.as_str()), (Some(0), ""));
    let (code, _, err) = show("empty.py:1");
    assert_eq!(code, Some(2));
    assert!(err.contains("past the end of the file (0 lines)"), "{err}");
}

#[test]
fn map_jsonl_paths_are_the_repositorys() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    repo(&root);
    let b = t.path().join("b");
    index(&root, &b, &[]);
    let (code, out, err) = stderr_of(&[
        "map".as_ref(),
        b.as_os_str(),
        "--format".as_ref(),
        "jsonl".as_ref(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let paths: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["path"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(paths[0], ".", "{paths:?}");
    assert!(paths.contains(&"pkg/__init__.py".to_string()), "{paths:?}");
    // Every file entry is a path `show` takes.
    for l in out.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["type"] == "file" {
            trove()
                .arg("show")
                .arg(&b)
                .arg(v["path"].as_str().unwrap())
                .assert()
                .success();
        }
    }
    // A tree that is one folder (its name joined to the root's in the map) and a PATH of `.`:
    // the paths are still the repository's.
    let one = t.path().join("one");
    write(&one, "src/app.py", b"def app():\n    return 1\n");
    write(&one, "src/lib/util.py", b"def util():\n    return 2\n");
    let b1 = t.path().join("b1");
    index(&one, &b1, &[]);
    let jsonl = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["map".as_ref(), b1.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend(["--format", "jsonl"].map(std::ffi::OsStr::new));
        let (code, out, err) = stderr_of(&args);
        assert_eq!(code, Some(0), "{err}");
        out.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["type"] == "file")
            .map(|v| v["path"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let files = jsonl(&[]);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.contains(&"src/app.py".to_string()), "{files:?}");
    assert!(files.contains(&"src/lib/util.py".to_string()), "{files:?}");
    assert_eq!(jsonl(&["."]), files);
    assert_eq!(jsonl(&["./"]), files);
}

#[test]
fn lang_list_empty_cache_variable_and_a_linked_output() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    repo(&root);
    write(&root, "go.mod", b"module example.com/x\n\ngo 1.22\n");
    let real = t.path().join("release-1");
    index(&root, &real, &[]);
    // `--lang`'s error lists the languages chunks have: not "(none)".
    let (code, _, err) = stderr_of(&[
        "query".as_ref(),
        real.as_os_str(),
        "total".as_ref(),
        "--lang".as_ref(),
        "nosuch".as_ref(),
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("python") && !err.contains("(none)"), "{err}");
    // An empty TROVE_CACHE_DIR is unset: nothing lands in the working directory.
    let cwd = t.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    trove()
        .current_dir(&cwd)
        .env("TROVE_CACHE_DIR", "")
        .env("XDG_CACHE_HOME", t.path().join("xdg"))
        .arg("query")
        .arg(&real)
        .arg("total")
        .assert()
        .success();
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
    assert!(t.path().join("xdg/trove").exists());
    // `-o` a link to a bundle: every run writes the bundle it points to, and the link stays.
    let link = t.path().join("current");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    index(&root, &link, &["--chunker", "lines"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let kinds = sql_json(&real, "SELECT DISTINCT kind FROM chunks");
    assert_eq!(kinds, vec![serde_json::json!({"kind": "lines"})]);
    // A link to nothing is refused.
    let dangling = t.path().join("dangling");
    std::os::unix::fs::symlink(t.path().join("nothing"), &dangling).unwrap();
    trove()
        .arg("index")
        .arg(&root)
        .arg("-o")
        .arg(&dangling)
        .arg("-q")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("symbolic link to nothing"));
}

#[test]
fn inner_doc_comments_are_not_the_next_items() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    write(
        &root,
        "src/lib.rs",
        b"//! Crate-level docs.\n/// Something with an area.\npub trait Shape {\n    fn area(&self) -> f64;\n}\n\n//! Stray inner docs.\npub fn bare() {}\n",
    );
    let b = t.path().join("b");
    index(&root, &b, &[]);
    let docs = sql_json(
        &b,
        "SELECT name, docs FROM symbols WHERE name IN ('Shape', 'bare') ORDER BY name",
    );
    assert_eq!(
        docs,
        vec![
            serde_json::json!({"name": "Shape", "docs": "Something with an area."}),
            serde_json::json!({"name": "bare", "docs": null}),
        ]
    );
}

#[test]
fn python_packages_in_a_folder_resolve_their_imports() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    write(&root, "python/shop/__init__.py", b"");
    write(
        &root,
        "python/shop/pricing.py",
        b"def total_price(items):\n    return sum(items)\n",
    );
    write(
        &root,
        "python/shop/cart.py",
        b"from shop.pricing import total_price\n\n\ndef cart():\n    return total_price([1])\n",
    );
    let b = t.path().join("b");
    index(&root, &b, &[]);
    let out = trove()
        .arg("refs")
        .arg(&b)
        .arg("total_price")
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout),
        "python/shop/cart.py:5  cart  call total_price  -> python/shop/pricing.py:1 total_price  [import]\n"
    );
}

#[test]
fn control_characters_in_code_do_not_reach_the_terminal() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    write(
        &root,
        "e.py",
        b"def evil():\r\n    x = \"\x1b]0;pwned\x07\x1b[2J\"\r\n    return x\r\n",
    );
    let b = t.path().join("b");
    index(&root, &b, &[]);
    for args in [vec!["query", "evil"], vec!["show", "e.py"]] {
        let o = trove().arg(args[0]).arg(&b).arg(args[1]).output().unwrap();
        let out = String::from_utf8(o.stdout).unwrap();
        assert!(!out.contains('\x1b') && !out.contains('\r'), "{out:?}");
        assert!(out.contains(r#"x = "\x1b]0;pwned\x07\x1b[2J""#), "{out}");
    }
    // --raw gives the bytes as they are.
    let o = trove()
        .args(["show", "--raw"])
        .arg(&b)
        .arg("e.py")
        .output()
        .unwrap();
    assert!(o.stdout.starts_with(b"def evil():\r\n"));
    assert!(o.stdout.contains(&0x1b));
    // Nor in a file's name, in every text output that prints one; a newline in it is escaped
    // where a path stands on one line.
    write(&root, "a\x1b[31mred.py", b"def escfunc():\n    pass\n");
    write(&root, "new\nline.py", b"def newline_func():\n    pass\n");
    index(&root, &b, &[]);
    for args in [
        vec!["query", "escfunc"],
        vec!["query", "newline_func"],
        vec!["map"],
        vec!["symbols", "escfunc"],
        vec!["symbols", "newline_func"],
    ] {
        let o = trove()
            .arg(args[0])
            .arg(&b)
            .args(&args[1..])
            .output()
            .unwrap();
        let out = String::from_utf8(o.stdout).unwrap();
        assert!(!out.contains('\x1b'), "{args:?}: {out:?}");
        assert!(
            !out.lines().any(|l| l.starts_with("line.py")),
            "{args:?}: {out:?}"
        );
        assert!(
            out.contains(r"a\x1b[31mred.py") || out.contains(r"new\x0aline.py"),
            "{args:?}: {out}"
        );
    }
}

#[test]
fn path_globs_match_characters_not_bytes() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    write(&root, "ünï/ç.py", b"def unicode_fn():\n    return 1\n");
    let b = t.path().join("b");
    index(&root, &b, &[]);
    for (glob, hits) in [
        ("ünï/?.py", 1),
        ("[ü]nï/*", 1),
        ("[!x]nï/*.py", 1),
        ("ünï/??.py", 0),
    ] {
        let o = trove()
            .arg("query")
            .arg(&b)
            .args(["unicode_fn", "--format", "jsonl", "--path", glob])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).lines().count(),
            hits,
            "{glob}"
        );
    }
}

#[test]
fn a_byte_order_mark_is_kept_in_the_bundles_copy_of_the_file() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    let files: [(&str, &[u8]); 5] = [
        // The first chunk after the mark (its lead holds the mark).
        ("a.py", b"\xEF\xBB\xBFdef greet_bom():\n    return 1\n"),
        // A heading section that starts at the file's first byte.
        ("b.md", b"\xEF\xBB\xBF# Bom title\n\nSome words.\n"),
        // No chunk at all: the mark is in the tail.
        ("c.py", b"\xEF\xBB\xBF"),
        (
            "d.cs",
            b"\xEF\xBB\xBFusing System;\r\nclass BomThing { void Run() {} }\r\n",
        ),
        ("e.txt", b"\xEF\xBB\xBFplain bom words\n"),
    ];
    for (p, bytes) in files {
        write(&root, p, bytes);
    }
    for chunker in ["ast", "lines"] {
        let b = t.path().join(format!("b-{chunker}"));
        index(&root, &b, &["--chunker", chunker]);
        for (p, bytes) in files {
            let o = trove()
                .args(["show", "--raw"])
                .arg(&b)
                .arg(p)
                .output()
                .unwrap();
            assert!(o.status.success(), "{chunker} {p}");
            assert_eq!(o.stdout, bytes, "{chunker} {p}");
            // A line range of the first line too.
            let first = bytes.split_inclusive(|&c| c == b'\n').next().unwrap();
            let o = trove()
                .args(["show", "--raw"])
                .arg(&b)
                .arg(format!("{p}:1-1"))
                .output()
                .unwrap();
            assert_eq!(o.stdout, first, "{chunker} {p}:1-1");
        }
        // The `file_text` view gives the file's bytes: its sha256 is the one `files` records.
        let rows = sql_json(
            &b,
            "SELECT count(*) AS n FROM file_text t JOIN files f USING (path) \
             WHERE sha256(t.text) = f.sha256",
        );
        assert_eq!(rows[0]["n"], 5, "{chunker}");
        // The mark is not part of what is searched: the first word is still found, on line 1.
        let hits = crate::util::query_jsonl(&[b.as_os_str(), "greet_bom".as_ref()]);
        assert_eq!(hits[0]["path"], "a.py", "{chunker}");
        assert_eq!(hits[0]["start_line"], 1, "{chunker}");
    }
    let b = t.path().join("b-ast");
    let rows = sql_json(
        &b,
        "SELECT symbol FROM chunks WHERE path = 'd.cs' AND symbol IS NOT NULL ORDER BY 1",
    );
    assert!(rows.iter().any(|r| r["symbol"] == "BomThing"), "{rows:?}");
}
