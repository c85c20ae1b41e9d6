//! The workspace's shape, checked: crates by layer (none depends on a crate above its own) and
//! no module cycle inside any crate (`scripts/module_graph.py`).
use std::collections::BTreeMap;
use std::process::Command;

use crate::util::repo;

/// Each crate's layer: a crate may depend only on crates of lower layers.
const LAYERS: &[(&str, u32)] = &[
    ("trove-base", 0),
    ("trove-bundle", 1),
    ("trove-lang", 2),
    ("trove-embed", 2),
    ("trove-index", 3),
    ("trove-query", 3),
    ("trove-service", 4),
    ("trove", 5),
];

fn layer(name: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// name -> the workspace crates it depends on (dependencies and dev-dependencies alike).
fn workspace_deps() -> BTreeMap<String, Vec<String>> {
    let root = repo();
    let mut manifests = vec![root.join("Cargo.toml")];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        let p = e.unwrap().path().join("Cargo.toml");
        if p.is_file() {
            manifests.push(p);
        }
    }
    let mut out = BTreeMap::new();
    for m in manifests {
        let doc: toml::Table = toml::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
        let name = doc["package"]["name"].as_str().unwrap().to_string();
        let mut deps = Vec::new();
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            if let Some(t) = doc.get(section).and_then(|t| t.as_table()) {
                deps.extend(t.keys().filter(|k| k.starts_with("trove")).cloned());
            }
        }
        out.insert(name, deps);
    }
    out
}

#[test]
fn crates_depend_only_on_lower_layers() {
    let deps = workspace_deps();
    assert_eq!(
        deps.len(),
        LAYERS.len(),
        "every workspace crate has a layer in tests/layout.rs: {:?}",
        deps.keys().collect::<Vec<_>>()
    );
    for (name, on) in &deps {
        let mine = layer(name).unwrap_or_else(|| panic!("{name} has no layer in tests/layout.rs"));
        for d in on {
            let theirs = layer(d).unwrap_or_else(|| panic!("{d} has no layer in tests/layout.rs"));
            assert!(
                theirs < mine,
                "{name} (layer {mine}) depends on {d} (layer {theirs}): a crate depends only on \
                 lower layers"
            );
        }
    }
    // The format crate (and what it stands on) is readable without the engine or the grammars.
    for dir in ["base", "bundle"] {
        let text = std::fs::read_to_string(repo().join("crates").join(dir).join("Cargo.toml"));
        let doc: toml::Table = toml::from_str(&text.unwrap()).unwrap();
        for (dep, spec) in doc["dependencies"].as_table().unwrap() {
            let features: Vec<&str> = spec
                .get("features")
                .and_then(|f| f.as_array())
                .map(|f| f.iter().filter_map(|x| x.as_str()).collect())
                .unwrap_or_default();
            assert!(
                !features.contains(&"duckdb"),
                "crates/{dir} turns on {dep}'s duckdb feature: the format crate stays without DuckDB"
            );
            assert!(
                !dep.starts_with("tree-sitter") && dep != "duckdb",
                "crates/{dir} must not depend on {dep}: the format crate stays without DuckDB and \
                 the grammars (the engine's errors are trove-query's)"
            );
        }
    }
}

#[test]
fn module_graphs_are_acyclic() {
    let script = repo().join("scripts/module_graph.py");
    let run = |args: &[&str]| {
        let out = Command::new("python3")
            .arg(&script)
            .args(args)
            .output()
            .expect("python3 runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "module_graph.py {args:?}:\n{text}");
        text
    };
    // The checker itself finds a cycle when there is one.
    run(&["--self-test"]);
    let text = run(&[repo().to_str().unwrap()]);
    // Every crate of the workspace was read (a layout the script does not find is no pass).
    for (name, _) in LAYERS {
        let short = name.strip_prefix("trove-").unwrap_or(name);
        let short = if short == "lang" { "languages" } else { short };
        assert!(
            text.contains(short),
            "module_graph.py did not read {name}: {text}"
        );
    }
}
