//! A scripted history of 30 commits — adds, edits, deletes, renames, directory moves, a file
//! growing past the size cap and shrinking back, a binary file turning into text, dependency
//! changes, cross-file calls made and broken — applied one `trove index --since auto` at a time,
//! to two bundles: one with auto-compaction off (a segment per commit, tombstones piling up) and
//! one with it on (the default bounds). After every commit both answer exactly as a full build of
//! that commit: queries in every mode (hits and scores), `symbols`, `refs --callers`, `deps` and
//! `map`; the auto-compacted one, whenever it is one segment, has the full build's tables byte for
//! byte; and at the end `trove compact` makes the other byte-identical to the full build too.
use std::path::Path;

use crate::util::{commit, git, index, manifest, tables, trove, write};

/// Same flags on every run (same config): a small size cap, so a file can grow past it.
const CAP: [&str; 2] = ["--max-file-bytes", "6000"];

/// A module of `n` functions, each calling the one before it and, for the first, a function of
/// another module through an import (cross-file resolution).
fn py_module(pkg: &str, name: &str, n: usize, calls: Option<(&str, &str)>) -> String {
    let mut s = String::new();
    if let Some((module, f)) = calls {
        s.push_str(&format!("from {module} import {f}\n\n"));
    }
    for i in 0..n {
        s.push_str(&format!(
            "def {name}_step{i}(order):\n    \"\"\"Step {i} of {name} in {pkg}: reconcile the ledger of an order.\"\"\"\n"
        ));
        match (i, calls) {
            (0, Some((_, f))) => s.push_str(&format!("    return {f}(order)\n\n")),
            (0, None) => s.push_str("    return order\n\n"),
            _ => s.push_str(&format!("    return {name}_step{}(order) + {i}\n\n", i - 1)),
        }
    }
    s
}

fn go_file(name: &str, extra: usize) -> String {
    let mut s = format!(
        "package api\n\n// {name} serves the invoice endpoint and retries with backoff.\nfunc {name}(n int) int {{\n\treturn n * 2\n}}\n"
    );
    for i in 0..extra {
        s.push_str(&format!(
            "\n// {name}Retry{i} calls {name} again after a pause.\nfunc {name}Retry{i}(n int) int {{\n\treturn {name}(n) + {i}\n}}\n"
        ));
    }
    s
}

/// The 30 changes, each one commit.
fn change(root: &Path, step: usize) {
    let rm = |rel: &str| std::fs::remove_file(root.join(rel)).unwrap();
    let mv = |from: &str, to: &str| {
        let to = root.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::rename(root.join(from), to).unwrap();
    };
    match step {
        0 => write(
            root,
            "billing/ledger.py",
            py_module("billing", "ledger", 3, Some(("billing.core", "core_step0"))).as_bytes(),
        ),
        1 => write(
            root,
            "billing/core.py",
            py_module("billing", "core", 5, None).as_bytes(),
        ),
        2 => write(root, "api/server.go", go_file("Serve", 2).as_bytes()),
        3 => write(
            root,
            "requirements.txt",
            b"requests==2.31.0\nflask>=3.0\nnumpy\n",
        ),
        4 => mv("billing/ledger.py", "billing/ledgers.py"),
        5 => write(
            root,
            "docs/guide.md",
            b"# Guide\n\n## Invoices\n\nHow an invoice is reconciled against the ledger.\n\n## Retries\n\nBackoff doubles each time.\n",
        ),
        6 => write(root, "assets/blob.dat", b"\x00\x01\x02binary\x00payload\xff"),
        7 => mv("billing", "finance/billing"),
        8 => write(
            root,
            "web/app.ts",
            b"import { total } from \"./money\";\n\nexport function checkout(cart: number[]): number {\n  return total(cart) * 2;\n}\n",
        ),
        9 => write(
            root,
            "web/money.ts",
            b"/** Sums a cart. */\nexport function total(cart: number[]): number {\n  return cart.reduce((a, b) => a + b, 0);\n}\n",
        ),
        10 => write(root, "api/server.go", go_file("Serve", 6).as_bytes()),
        11 => {
            // Grows past the cap: no longer indexed (skipped as too-large).
            let big = py_module("finance", "core", 60, None);
            assert!(big.len() > 6000);
            write(root, "finance/billing/core.py", big.as_bytes());
        }
        12 => rm("docs/guide.md"),
        13 => write(
            root,
            "requirements.txt",
            b"requests==2.32.0\nflask>=3.0\n",
        ),
        14 => write(
            root,
            "finance/billing/core.py",
            py_module("finance", "core", 4, None).as_bytes(),
        ),
        15 => write(
            root,
            "assets/blob.dat",
            b"now plain text about invoices and ledgers\n",
        ),
        16 => mv("web/money.ts", "web/lib/money.ts"),
        17 => write(
            root,
            "web/app.ts",
            b"import { total } from \"./lib/money\";\n\nexport function checkout(cart: number[]): number {\n  return total(cart) * 3;\n}\n",
        ),
        18 => write(
            root,
            "tools/report.py",
            py_module("tools", "report", 2, Some(("finance.billing.core", "core_step0")))
                .as_bytes(),
        ),
        19 => write(
            root,
            "package.json",
            b"{\"name\": \"web\", \"dependencies\": {\"left-pad\": \"^1.3.0\"}, \"devDependencies\": {\"vitest\": \"^3\"}}\n",
        ),
        20 => mv("tools", "scripts/tools"),
        21 => {
            write(root, "api/health.go", go_file("Health", 1).as_bytes());
            // A second `Serve` in the family, and a call from a third file: ambiguous, so the
            // call stays unresolved (never a guess) until step 22 deletes one of them.
            write(
                root,
                "api/legacy.go",
                b"package api\n\n// Serve is the old entry point.\nfunc Serve(n int) int {\n\treturn n\n}\n",
            );
            write(
                root,
                "api/main.go",
                b"package api\n\n// Run serves once.\nfunc Run() int {\n\treturn Serve(1)\n}\n",
            );
        }
        22 => rm("api/server.go"),
        23 => write(
            root,
            "finance/billing/ledgers.py",
            py_module("finance", "ledger", 6, Some(("finance.billing.core", "core_step1")))
                .as_bytes(),
        ),
        24 => write(
            root,
            "README.md",
            b"# Shop\n\nInvoices, ledgers and a checkout.\n\n## Running\n\n`make run` starts the server.\n",
        ),
        25 => mv("finance/billing/ledgers.py", "finance/ledgers.py"),
        26 => write(
            root,
            "web/lib/money.ts",
            b"/** Sums a cart, in cents. */\nexport function total(cart: number[]): number {\n  return Math.round(cart.reduce((a, b) => a + b, 0) * 100);\n}\n",
        ),
        27 => rm("package.json"),
        28 => write(root, "api/server.go", go_file("Serve", 1).as_bytes()),
        29 => mv("scripts/tools/report.py", "report.py"),
        _ => unreachable!(),
    }
}

/// `trove index ROOT -o OUT EXTRA --json`, asserting success: the summary's `incremental` (what
/// the run reused, or why it rebuilt in full).
fn indexed(root: &Path, out: &Path, extra: &[&str]) -> String {
    let o = crate::util::index_cmd(root, out, extra)
        .arg("--json")
        .assert()
        .success();
    let summary: serde_json::Value = serde_json::from_slice(&o.get_output().stdout).unwrap();
    summary["incremental"].to_string()
}

/// Everything a user asks of the history's bundles.
fn asked(bundle: &Path) -> Vec<(String, serde_json::Value)> {
    crate::util::answers(
        bundle,
        "reconcile the ledger of an invoice",
        &["core_step0", "total"],
    )
}

#[test]
fn thirty_commits_since_auto_answer_as_a_full_build_after_each() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    git(root, &["init", "-q"]);
    write(
        root,
        "billing/invoice.py",
        b"def charge(invoice):\n    \"\"\"Charge an invoice.\"\"\"\n    return invoice.total\n",
    );
    commit(root, "start");
    let scratch = tempfile::tempdir().unwrap();
    let incr = scratch.path().join("incr.bundle");
    let auto = scratch.path().join("auto.bundle");
    index(root, &incr, &CAP);
    index(root, &auto, &CAP);
    let mut seen_skips = std::collections::BTreeSet::new();
    let (mut compactions, mut one_segment_checks) = (0, 0);
    let full = scratch.path().join("full");
    for step in 0..30 {
        change(root, step);
        commit(root, &format!("step {step}"));
        let since = [&["--since", "auto"][..], &CAP[..]].concat();
        // The summaries say why a run rebuilt in full, should one (the assertion's message).
        let why = [
            indexed(root, &incr, &[&since[..], &["--no-compact"]].concat()),
            indexed(root, &auto, &since),
        ];
        if full.exists() {
            std::fs::remove_dir_all(&full).unwrap();
        }
        index(root, &full, &CAP);
        let m = manifest(&incr);
        assert_eq!(
            m["base"]["mode"], "git-diff",
            "step {step}: {} ({why:?})",
            m["base"]
        );
        let segments = |b: &Path| manifest(b)["segments"].as_array().unwrap().len();
        assert_eq!(segments(&incr), step + 2, "step {step}: a segment per run");
        let m = manifest(&auto);
        if m["base"]["compacted"].is_object() {
            compactions += 1;
        }
        if segments(&auto) == 1 {
            one_segment_checks += 1;
            assert_eq!(tables(&auto), tables(&full), "step {step}: tables differ");
        }
        let want = asked(&full);
        for b in [&incr, &auto] {
            for ((label, x), (_, y)) in asked(b).iter().zip(&want) {
                assert_eq!(x, y, "step {step}: {label} of {} differs", b.display());
            }
        }
        for (stored, sql) in crate::util::refs_resolved_both_ways(&full) {
            assert_eq!(stored, sql, "step {step}: the SQL resolution differs");
        }
        for (path, reason) in crate::util::skipped_reasons(&full) {
            seen_skips.insert(format!("{path} {reason}"));
        }
    }
    assert!(
        compactions > 0 && one_segment_checks > 0,
        "{compactions} {one_segment_checks}"
    );
    // Thirty segments compact into the full build's tables, byte for byte.
    let out = trove()
        .args(["compact", incr.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tables(&incr), tables(&full), "compacted tables differ");
    // The history did what it says: a file past the cap and a binary file were seen skipped, and
    // the calls across files resolved.
    assert!(
        seen_skips.contains("finance/billing/core.py too-large"),
        "{seen_skips:?}"
    );
    assert!(
        seen_skips.contains("assets/blob.dat binary"),
        "{seen_skips:?}"
    );
    let out = trove()
        .args(["refs", incr.to_str().unwrap(), "total", "--callers"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("web/app.ts"), "checkout calls total: {text}");
}
