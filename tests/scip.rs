//! `trove index --scip`: facts of real SCIP indexes (scip-typescript and scip-python, run by
//! scripts/scip-index.sh) on the fixture projects in fixtures/scip, read back through the binary
//! and checked against the SCIP files themselves, decoded here with the `scip` crate.
use crate::util::*;
use protobuf::Message;
use std::path::{Path, PathBuf};

/// Runs scripts/scip-index.sh LANG DIR OUT (the real indexer) and returns OUT.
fn scip_index(lang: &str, dir: &Path, out: &Path) -> PathBuf {
    let st = std::process::Command::new(repo().join("scripts/scip-index.sh"))
        .args([lang.as_ref(), dir.as_os_str(), out.as_os_str()])
        .status()
        .expect("scripts/scip-index.sh runs (scripts/test.sh installs the indexers)");
    assert!(
        st.success(),
        "scip-index.sh {lang} {} failed",
        dir.display()
    );
    out.to_path_buf()
}

/// A copy of fixtures/scip/NAME in a temp dir.
fn project(name: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join(name);
    copy_dir(&fixtures().join("scip").join(name), &root);
    (t, root)
}

/// The references a SCIP file holds by trove's rule, decoded independently of trove: every
/// occurrence of a global type, term, method or macro that is not a definition, and every
/// implementation relationship (at its symbol's definition): (path, 1-based line, symbol), sorted.
fn expected_refs(scip: &Path) -> Vec<(String, i64, String)> {
    use scip::types::descriptor::Suffix;
    let index = scip::types::Index::parse_from_bytes(&std::fs::read(scip).unwrap()).unwrap();
    let kept = |sym: &str| {
        scip::symbol::parse_symbol(sym).is_ok_and(|s| {
            !scip::symbol::is_local_symbol(sym)
                && s.descriptors.last().is_some_and(|d| {
                    matches!(
                        d.suffix.enum_value(),
                        Ok(Suffix::Type | Suffix::Term | Suffix::Method | Suffix::Macro)
                    )
                })
        })
    };
    let mut out = Vec::new();
    for doc in &index.documents {
        let mut def_line = std::collections::HashMap::new();
        for o in &doc.occurrences {
            if o.symbol_roles & 1 != 0 {
                def_line.entry(o.symbol.clone()).or_insert(o.range[0]);
            } else if kept(&o.symbol) {
                out.push((
                    doc.relative_path.clone(),
                    i64::from(o.range[0]) + 1,
                    o.symbol.clone(),
                ));
            }
        }
        for info in &doc.symbols {
            for r in info.relationships.iter().filter(|r| r.is_implementation) {
                if let Some(&line) = def_line.get(&info.symbol) {
                    out.push((
                        doc.relative_path.clone(),
                        i64::from(line) + 1,
                        r.symbol.clone(),
                    ));
                }
            }
        }
    }
    out.sort();
    out
}

/// The bundle's references taken from SCIP: (path, line, scip symbol), sorted.
fn scip_refs(bundle: &Path) -> Vec<(String, i64, String)> {
    let mut v: Vec<(String, i64, String)> = duck(&format!(
        "SELECT path, line, scip_symbol FROM {} WHERE resolution = 'scip'",
        pq(bundle, "refs")
    ))
    .into_iter()
    .map(|r| (r[0].clone(), r[1].parse().unwrap(), r[2].clone()))
    .collect();
    v.sort();
    v
}

/// `trove refs BUNDLE NAME ARGS...`: its lines.
fn refs(bundle: &Path, name: &str, args: &[&str]) -> Vec<String> {
    let o = trove()
        .arg("refs")
        .arg(bundle)
        .arg(name)
        .args(args)
        .output()
        .unwrap();
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every definition occurrence of a function, method or type in the SCIP file has a definition in
/// the bundle with that SCIP symbol, on the occurrence's line.
fn definitions_carry_their_symbols(bundle: &Path, scip: &Path) {
    use scip::types::descriptor::Suffix;
    let index = scip::types::Index::parse_from_bytes(&std::fs::read(scip).unwrap()).unwrap();
    let marked: std::collections::HashSet<(String, String, String)> = duck(&format!(
        "SELECT path, name_line, scip_symbol FROM {} WHERE scip_symbol IS NOT NULL",
        pq(bundle, "symbols")
    ))
    .into_iter()
    .map(|r| (r[0].clone(), r[1].clone(), r[2].clone()))
    .collect();
    let mut n = 0;
    for doc in &index.documents {
        for o in doc.occurrences.iter().filter(|o| o.symbol_roles & 1 != 0) {
            let s = scip::symbol::parse_symbol(&o.symbol).unwrap();
            let last = s.descriptors.last().unwrap();
            if matches!(last.suffix.enum_value(), Ok(Suffix::Method | Suffix::Type))
                && !scip::symbol::is_local_symbol(&o.symbol)
            {
                n += 1;
                let key = (
                    doc.relative_path.clone(),
                    (o.range[0] + 1).to_string(),
                    o.symbol.clone(),
                );
                assert!(marked.contains(&key), "no definition marked {key:?}");
            }
        }
    }
    assert!(n >= 5, "the fixture defines functions and types: {n}");
}

#[test]
fn typescript_references_are_the_scip_occurrences() {
    let (_t, root) = project("ts");
    // The root's index.scip is read without --scip.
    let scip = scip_index("typescript", &root, &root.join("index.scip"));
    let b = root.parent().unwrap().join("ts.bundle");
    let out = index_cmd(&root, &b, &[]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scip-typescript 0.4.0, 4 documents): 4 files took their facts"),
        "{err}"
    );
    assert!(!err.contains("do not fit"), "{err}");

    // Count and positions: the rows taken from SCIP are the file's occurrences.
    let want = expected_refs(&scip);
    assert!(want.len() > 20, "{}", want.len());
    assert_eq!(scip_refs(&b), want);
    definitions_carry_their_symbols(&b, &scip);

    // Two functions named `load`: each call lands on the one it calls, by symbol.
    assert_eq!(
        refs(&b, "load", &["--callers"]),
        [
            "src/main.ts:10  report  call load  -> src/cache.ts:5 load  [scip]",
            "src/main.ts:11  report  call load  -> src/store.ts:4 load  [scip]",
        ]
    );
    // A method call on an interface lands on the interface's method, not on a class's.
    let area = refs(&b, "area", &["--callers"]);
    assert_eq!(area.len(), 2, "{area:?}");
    assert!(
        area.iter()
            .all(|l| l.ends_with("-> src/shapes.ts:3 Shape > area  [scip]")),
        "{area:?}"
    );
    // Implementations from the index's relationships; constructors called by `new`.
    assert_eq!(
        refs(&b, "Shape", &["--subtypes"]),
        [
            "src/shapes.ts:7  Circle  implements Shape  -> src/shapes.ts:2 Shape  [scip]",
            "src/shapes.ts:16  Square  implements Shape  -> src/shapes.ts:2 Shape  [scip]",
        ]
    );
    assert!(
        refs(&b, "Circle", &["--callers"]).contains(
            &"src/store.ts:5  load  call Circle  -> src/shapes.ts:8 Circle > constructor  [scip]"
                .to_string()
        )
    );
    // A library's method: outside the bundle, with its symbol.
    let to_fixed = refs(&b, "toFixed", &["--callers"]);
    assert_eq!(to_fixed.len(), 1, "{to_fixed:?}");
    assert!(
        to_fixed[0].contains("outside the bundle: scip-typescript npm typescript ")
            && to_fixed[0].contains("Number#toFixed()."),
        "{to_fixed:?}"
    );
    // `trove symbols` says which definitions SCIP knows, `trove sql` gives the symbol string.
    let sym = trove()
        .args(["symbols"])
        .arg(&b)
        .arg("Circle")
        .args(["--kind", "class"])
        .output()
        .unwrap();
    let sym = String::from_utf8(sym.stdout).unwrap();
    assert!(
        sym.starts_with("src/shapes.ts:7-13  class Circle  [scip]"),
        "{sym}"
    );
    assert!(sym.contains("scip: scip-typescript npm shapes-demo 1.0.0 src/`shapes.ts`/Circle#"));
    let sql = trove()
        .arg("sql")
        .arg(&b)
        .arg("SELECT scip_symbol FROM symbols WHERE name = 'describe'")
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8(sql.stdout)
            .unwrap()
            .contains("scip-typescript npm shapes-demo 1.0.0 src/`main.ts`/describe()."),
    );
    // The writer's resolution and its SQL twin (the refs view of a bundle of segments) agree.
    for (stored, sql) in refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
    assert_eq!(manifest(&b)["scip"][0]["tool"], "scip-typescript 0.4.0");

    // --no-scip: the syntax heuristics, no SCIP row.
    let plain = root.parent().unwrap().join("plain.bundle");
    index(&root, &plain, &["--no-scip"]);
    assert!(scip_refs(&plain).is_empty());
    assert!(manifest(&plain).get("scip").is_none());
}

#[test]
fn python_calls_resolve_by_symbol_where_names_mislead() {
    let (t, root) = project("py");
    let scip = scip_index("python", &root, &t.path().join("py.scip"));
    let b = t.path().join("py.bundle");
    index(&root, &b, &["--scip", scip.to_str().unwrap()]);
    assert_eq!(scip_refs(&b), expected_refs(&scip));
    definitions_carry_their_symbols(&b, &scip);
    let plain = t.path().join("plain.bundle");
    index(&root, &plain, &[]);

    // Without an index: `storage.load(path)` in a file that defines its own `load` lands in the
    // module `storage` names (`from shop import storage`), and `json.load(f)` in a file that
    // defines `load` is left open (a call on a module outside the bundle), not guessed.
    assert_eq!(
        refs(&plain, "load", &["--callers"]),
        [
            "shop/report.py:12  summary  call load  -> shop/storage.py:7 load  [import]",
            "shop/report.py:13  summary  call load  -> shop/report.py:6 load  [file]",
            "shop/storage.py:10  load  call load  -> unresolved",
        ]
    );
    assert_eq!(
        refs(&b, "load", &["--callers"]),
        [
            "shop/report.py:12  summary  call load  -> shop/storage.py:7 load  [scip]",
            "shop/report.py:13  summary  call load  -> shop/report.py:6 load  [scip]",
            "shop/storage.py:10  load  call load  -> outside the bundle: scip-python python python-stdlib 3.11 json/load().  [scip]",
        ]
    );
    // Two classes define `total`: `Ledger().total()` names the type, with or without the index.
    assert!(refs(&plain, "total", &["--callers"]).iter().any(|l| l
        == "shop/report.py:18  empty  call total  -> shop/models.py:22 Ledger > total  [repo]"));
    assert!(
        refs(&b, "total", &["--callers"]).contains(
            &"shop/report.py:18  empty  call total  -> shop/models.py:22 Ledger > total  [scip]"
                .to_string()
        )
    );
    for (stored, sql) in refs_resolved_both_ways(&b) {
        assert_eq!(stored, sql);
    }
}

#[test]
fn an_index_of_another_commit_is_detected_per_document() {
    let (t, root) = project("ts");
    let scip = scip_index("typescript", &root, &t.path().join("old.scip"));
    // store.ts changes after the index was made: two lines above everything.
    let store = root.join("src/store.ts");
    let text = std::fs::read_to_string(&store).unwrap();
    std::fs::write(&store, format!("// Storage.\n// Loads shapes.\n{text}")).unwrap();
    let b = t.path().join("b.bundle");
    let out = index_cmd(&root, &b, &["--scip", scip.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3 files took their facts"), "{err}");
    assert!(
        err.contains("warning: scip: 1 documents do not fit their files"),
        "{err}"
    );
    assert!(err.contains("  src/store.ts: "), "{err}");
    // Its facts are dropped, the syntax rules' kept; the other files keep theirs.
    let rows = |path: &str, scip: bool| {
        duck(&format!(
            "SELECT count(*) FROM {} WHERE path = '{path}' AND (resolution = 'scip') = {scip}",
            pq(&b, "refs")
        ))[0][0]
            .clone()
    };
    assert_eq!(rows("src/store.ts", true), "0");
    assert_ne!(rows("src/store.ts", false), "0");
    assert_ne!(rows("src/main.ts", true), "0");
    let want: Vec<_> = expected_refs(&scip)
        .into_iter()
        .filter(|r| r.0 != "src/store.ts")
        .collect();
    assert_eq!(scip_refs(&b), want);
}

#[test]
fn incremental_runs_take_a_changed_files_facts_from_their_own_index() {
    let (t, root) = project("ts");
    git(&root, &["init", "-q"]);
    commit(&root, "shapes");
    let b = t.path().join("b.bundle");
    let first = scip_index("typescript", &root, &t.path().join("1.scip"));
    index(&root, &b, &["--scip", first.to_str().unwrap()]);

    // store.ts gains a function above `load`, which moves down.
    let store = root.join("src/store.ts");
    let text = std::fs::read_to_string(&store).unwrap().replace(
        "/** Shapes from",
        "export function none(): Shape[] {\n  return [];\n}\n\n/** Shapes from",
    );
    std::fs::write(&store, text).unwrap();
    commit(&root, "none");
    let second = scip_index("typescript", &root, &t.path().join("2.scip"));
    let out = index_cmd(
        &root,
        &b,
        &[
            "--since",
            "auto",
            "--no-compact",
            "--scip",
            second.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("1 files took their facts"), "{err}");
    assert!(err.contains("3 kept from the bundle"), "{err}");
    assert_eq!(manifest(&b)["segments"].as_array().unwrap().len(), 2);
    // main.ts was not processed again; its call still lands on `load`, where it is now.
    assert!(refs(&b, "load", &["--callers"]).contains(
        &"src/main.ts:11  report  call load  -> src/store.ts:8 load  [scip]".to_string()
    ));
    // The whole bundle equals one built from the second index alone.
    let full = t.path().join("full.bundle");
    index(&root, &full, &["--scip", second.to_str().unwrap()]);
    assert_eq!(
        refs(&b, "load", &["--callers"]),
        refs(&full, "load", &["--callers"])
    );
    assert_eq!(
        refs(&b, "Shape", &["--uses"]),
        refs(&full, "Shape", &["--uses"])
    );

    // A run without an index on a bundle made with one rebuilds, and says why.
    let out = index_cmd(&root, &b, &["--since", "auto"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("SCIP indexes (this run reads none"), "{err}");
    assert!(scip_refs(&b).is_empty());
}

#[test]
fn a_file_that_is_not_a_scip_index_is_refused() {
    let (t, root) = project("ts");
    let b = t.path().join("b.bundle");
    let bad = t.path().join("bad.scip");
    std::fs::write(&bad, b"\xff\xff\xff\xff not protobuf").unwrap();
    let out = index_cmd(&root, &b, &["--scip", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.scip: not a SCIP index"), "{err}");
    let missing = t.path().join("missing.scip");
    let out = index_cmd(&root, &b, &["--scip", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.scip"));
    assert!(!b.exists(), "nothing written");
}
