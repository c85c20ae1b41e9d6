//! Which file an imported name comes from, for resolving references through imports.
//!
//! Input: a file's path, language and import statements (as `refs` holds them). Output: each
//! imported local name with the repo-relative files its module may be, most likely first. Covered:
//! Python `from a.b import c as d` (absolute: `a/b.py`, `a/b/__init__.py`, the same under `src/`;
//! relative: beside the importing file, the package `__init__.py` first) and JavaScript/TypeScript `import { a, b as c } from
//! "./mod"` (relative specifiers only: `mod.ts`, `.tsx`, `.js`, `.jsx`, `.mjs`, `mod/index.*`).
//! Java/Kotlin/Scala `import a.b.C` (`a/b/C.java` under the source root the importing file's path
//! shows, else anywhere: [`ANYWHERE`]); Rust `use` trees (`crate::`, `self::`, `super::` paths to
//! `a/b.rs` or `a/b/mod.rs` under the crate's `src/`; another crate's names anywhere, the standard
//! library's nowhere). Anything else gives nothing, and the reference falls back to name
//! resolution.
//!
//! [`module_aliases`] gives the local names that stand for a whole module, for calls on them
//! (`storage.load()`): Python `import a.b as c`, `import a`, and `from a import b` where `b` may be
//! a submodule (`a/b.py`); JavaScript/TypeScript `import * as c from "./mod"`; Go's imported
//! packages (`go:` + the import path, a directory once the bundle's `go.mod` says where its module
//! lives); Rust's `use crate::a::b` (`b::f()`).
use regex::Regex;
use rustc_hash::FxHashMap;
use std::sync::LazyLock;
use trove_bundle::resolution::ANYWHERE;
pub use trove_bundle::resolution::JS_SUFFIXES;

static PY_FROM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^from\s+(\.*)([\w.]*)\s+import\s+\(?([^)]*)\)?\s*$").expect("valid regex")
});
static JS_NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+["']([^"']+)["']"#)
        .expect("valid regex")
});

static GO_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?:([A-Za-z_]\w*|\.)\s+)?"([^"]+)""#).expect("valid regex"));

static JS_REEXPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^export\s+(?:type\s+)?(?:\{([^}]*)\}|(\*))\s+from\s+["']([^"']+)["']"#)
        .expect("valid regex")
});

static PY_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^import\s+(.+)$").expect("valid regex"));
static JS_NAMESPACE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^import\s+\*\s+as\s+([\w$]+)\s+from\s+["']([^"']+)["']"#).expect("valid regex")
});

/// `a/b/../c/./d` → `a/c/d`; `None` when it climbs out of the repository.
pub(crate) fn normalise(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            p => out.push(p),
        }
    }
    Some(out.join("/"))
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// `name` or `name as alias` → (local name, imported name).
fn alias(item: &str) -> Option<(String, String)> {
    let item = item.trim();
    let (name, local) = match item.split_once(" as ") {
        Some((n, l)) => (n.trim(), l.trim()),
        None => (item, item),
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    (ok(name) && ok(local)).then(|| (local.to_string(), name.to_string()))
}

/// The files a Python module path may be, for a file in `dir` (`a/b`: `a/b.py`,
/// `a/b/__init__.py`, under each of [`py_absolute_bases`]).
fn py_module_files(dir: &str, module: &str) -> Vec<String> {
    py_absolute_bases(dir, module)
        .iter()
        .flat_map(|b| [format!("{b}.py"), format!("{b}/__init__.py")])
        .collect()
}

/// Where an absolute Python module (`a/b`) imported by a file in `dir` may be: from the root,
/// under `src/`, and under the directories above the file (a tree whose packages live in
/// `python/` or `backend/`, which `sys.path` names: `python/shop/cart.py` importing `shop.pricing`
/// finds `python/shop/pricing.py`). Not the file's own folder or one above it: `import json` in
/// `flask/json/provider.py` is the standard library's `json`, not the package it is in.
fn py_absolute_bases(dir: &str, module: &str) -> Vec<String> {
    let mut out = vec![module.to_string(), format!("src/{module}")];
    let mut at = dir;
    while !at.is_empty() {
        let b = format!("{at}/{module}");
        let encloses = dir == b || dir.starts_with(&format!("{b}/"));
        if !encloses && !out.contains(&b) {
            out.push(b);
        }
        at = dir_of(at);
    }
    out
}

/// The files a JavaScript/TypeScript specifier may be, from the directory `dir`: a relative one's
/// files; a bare one (`rxjs/operators`, `@app/util`), `ts:DIR|SPEC`, which the bundle's
/// tsconfig.json `paths`/`baseUrl` turn into files when the bundle is resolved (a package's,
/// not in the bundle, into nothing the name can land on).
fn js_module_files(dir: &str, spec: &str) -> Option<Vec<String>> {
    if !spec.starts_with('.') {
        return (!spec.is_empty() && !spec.contains('|')).then(|| vec![format!("ts:{dir}|{spec}")]);
    }
    let base = normalise(&format!("{dir}/{spec}"))?;
    Some(JS_SUFFIXES.iter().map(|s| format!("{base}{s}")).collect())
}

/// The base directories of a Python `from` import's module (dots: relative levels, each past the
/// first climbing a directory); none when it climbs above the root.
fn py_from_bases(dir: &str, dots: usize, module: &str) -> Option<Vec<String>> {
    if dots == 0 {
        return Some(py_absolute_bases(dir, module));
    }
    let mut base = dir.to_string();
    for _ in 1..dots {
        if base.is_empty() {
            return None;
        }
        base = dir_of(&base).to_string();
    }
    let joined = if module.is_empty() {
        base
    } else {
        format!("{base}/{module}")
    };
    Some(normalise(&joined).into_iter().collect())
}

/// The name a Go import path binds without an alias: its last element, less a major-version
/// element (`/v2`), a `.vN` suffix (`yaml.v3`) and a `go-` prefix (`go-sqlite3`).
fn go_package_name(import: &str) -> &str {
    let mut parts = import.rsplit('/');
    let mut last = parts.next().unwrap_or(import);
    if last.len() > 1
        && last.starts_with('v')
        && last[1..].chars().all(|c| c.is_ascii_digit())
        && let Some(before) = parts.next()
    {
        last = before;
    }
    let last = match last.rsplit_once(".v") {
        Some((name, v)) if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) => name,
        _ => last,
    };
    last.strip_prefix("go-").unwrap_or(last)
}

/// The file extension of a JVM language's sources.
fn jvm_extension(language: Option<&str>) -> Option<&'static str> {
    match language {
        Some("java") => Some("java"),
        Some("kotlin") => Some("kt"),
        Some("scala") => Some("scala"),
        _ => None,
    }
}

/// `import a.b.C;` (`import static a.b.C.m;`, Kotlin's `import a.b.C as D`, Scala's
/// `import a.b.{C, D => E}`) → (local name, imported name, the type's dotted path) for each
/// name; wildcards give nothing.
fn jvm_imports(st: &str) -> Vec<(String, String, Vec<String>)> {
    let Some(rest) = st.strip_prefix("import ") else {
        return Vec::new();
    };
    let rest = rest.trim();
    let (is_static, rest) = match rest.strip_prefix("static ") {
        Some(r) => (true, r.trim()),
        None => (false, rest),
    };
    let mut items: Vec<(String, String)> = Vec::new();
    let base = match rest.split_once('{') {
        Some((base, group)) => {
            let group = group.trim_end().trim_end_matches('}');
            for item in group.split(',') {
                let (name, local) = match item.split_once("=>") {
                    Some((n, l)) => (n.trim(), l.trim()),
                    None => (item.trim(), item.trim()),
                };
                items.push((name.to_string(), local.to_string()));
            }
            base.trim_end_matches('.')
        }
        None => {
            let (path, local) = match rest.split_once(" as ") {
                Some((p, l)) => (p.trim(), Some(l.trim())),
                None => (rest, None),
            };
            let (base, name) = path.rsplit_once('.').unwrap_or(("", path));
            items.push((name.to_string(), local.unwrap_or(name).to_string()));
            base
        }
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    let pkg: Vec<String> = base.split('.').map(str::to_string).collect();
    items
        .into_iter()
        .filter(|(n, l)| ok(n) && ok(l) && pkg.iter().all(|p| ok(p)))
        .map(|(name, local)| {
            // `import static a.b.C.m`: the member `m` of the type `a.b.C`.
            let mut ty = pkg.clone();
            if !is_static {
                ty.push(name.clone());
            }
            (local, name, ty)
        })
        .collect()
}

/// The files a JVM type's dotted path may be, for a file in `dir`: under the source root the
/// file's own path shows (the directories before the last one named like the path's first
/// element: `framework/src/` for `framework/src/org/apache/cordova/x` importing `org.apache...`),
/// then anywhere ([`ANYWHERE`]: another module of the build).
fn jvm_type_files(dir: &str, ty: &[String], ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = if dir.is_empty() {
        Vec::new()
    } else {
        dir.split('/').collect()
    };
    if let Some(first) = ty.first()
        && let Some(at) = parts.iter().rposition(|p| p == first)
    {
        let mut file: Vec<&str> = parts[..at].to_vec();
        file.extend(ty.iter().map(String::as_str));
        out.push(format!("{}.{ext}", file.join("/")));
    }
    out.push(ANYWHERE.to_string());
    out
}

/// A Rust `use` tree (`crate::{a::B, c::{self, d as e}}`, without `use` and `;`) flattened:
/// (path to the item, local name) for each item; globs give nothing.
fn rust_use_items(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{')
        && tree.ends_with('}')
    {
        let mut base = prefix.to_vec();
        base.extend(
            tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        let inner = &tree[open + 1..tree.len() - 1];
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    rust_use_items(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        rust_use_items(&inner[start..], &base, out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim())),
        None => (tree, None),
    };
    if path.is_empty() {
        return;
    }
    let mut segs = prefix.to_vec();
    segs.extend(path.split("::").map(str::trim).map(str::to_string));
    if segs.last().is_some_and(|s| s == "self") {
        segs.pop();
    }
    let Some(last) = segs.last().cloned() else {
        return;
    };
    if last == "*" || last == "_" || alias == Some("_") {
        return;
    }
    let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    if segs.iter().all(|s| ok(s)) {
        out.push((segs, alias.unwrap_or(&last).to_string()));
    }
}

/// The items a Rust `use` statement brings in: (path, local name).
fn rust_uses(st: &str) -> Vec<(Vec<String>, String)> {
    let st = st.trim();
    let st = match st.strip_prefix("pub") {
        Some(rest) => rest.trim_start_matches(|c: char| c != ' ').trim_start(),
        None => st,
    };
    let Some(tree) = st.strip_prefix("use ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    rust_use_items(tree.trim_start_matches("::"), &[], &mut out);
    out
}

/// The files the Rust module `segs` (a `use` path's module part: `crate::a::b`, `self::x`,
/// `super::y`) may be, seen from the file at `path`: `a/b.rs` or `a/b/mod.rs` under the crate
/// root (the nearest `src/` above the file, else every directory above it), the crate root itself
/// being `lib.rs`/`main.rs`. `super` also names the file itself (a `mod tests` inside it uses
/// `super::`). `Some(vec![ANYWHERE])` for another crate, `Some(vec![])` for the standard
/// library's, `None` for what no file can be.
pub fn rust_module_files(path: &str, segs: &[String]) -> Option<Vec<String>> {
    let dir = dir_of(path);
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".rs")?;
    let root_file = matches!(stem, "mod" | "lib" | "main");
    let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}/{b}"),
    };
    // (the directory the module's children live in, the module's own files)
    let mut bases: Vec<(String, Vec<String>)> = Vec::new();
    let (first, rest) = segs.split_first()?;
    match first.as_str() {
        "crate" => {
            let mut ancestors = vec![dir.to_string()];
            let mut a = dir;
            while !a.is_empty() {
                a = dir_of(a);
                ancestors.push(a.to_string());
            }
            let src: Vec<String> = ancestors
                .iter()
                .filter(|a| *a == "src" || a.ends_with("/src"))
                .take(1)
                .cloned()
                .collect();
            let roots = if src.is_empty() { ancestors } else { src };
            for r in roots {
                let files = vec![join(&r, "lib.rs"), join(&r, "main.rs")];
                bases.push((r, files));
            }
        }
        "self" => {
            let children = if root_file {
                dir.to_string()
            } else {
                join(dir, stem)
            };
            bases.push((children, vec![path.to_string()]));
        }
        "super" => {
            // The parent module lives in the directory above a root file's, else in the file's.
            let up = if root_file { dir_of(dir) } else { dir };
            let files = vec![
                join(up, "mod.rs"),
                join(up, "lib.rs"),
                join(up, "main.rs"),
                format!("{up}.rs"),
                path.to_string(),
            ];
            bases.push((up.to_string(), files));
        }
        "std" | "core" | "alloc" => return Some(Vec::new()),
        _ => return Some(vec![ANYWHERE.to_string()]),
    }
    if rest
        .iter()
        .any(|s| s == "super" || s == "self" || s == "crate")
    {
        return None;
    }
    let mut out = Vec::new();
    for (children, files) in bases {
        if rest.is_empty() {
            out.extend(files);
        } else {
            let m = join(&children, &rest.join("/"));
            out.push(format!("{m}.rs"));
            out.push(format!("{m}/mod.rs"));
        }
    }
    Some(out)
}

/// The files the module of a Python `from … import` ([`PY_FROM`]'s captures) may be, for a file
/// in `dir`: each base's package `__init__.py`, then its `.py`.
fn py_from_files(dir: &str, c: &regex::Captures<'_>) -> Option<Vec<String>> {
    let module = c[2].replace('.', "/");
    let files = py_from_bases(dir, c[1].len(), &module)?
        .iter()
        .filter(|b| !b.is_empty())
        .flat_map(|b| [format!("{b}/__init__.py"), format!("{b}.py")])
        .collect();
    Some(files)
}

/// Local names that stand for a module → the files that module may be, for the file at `path`.
pub fn module_aliases(
    path: &str,
    language: Option<&str>,
    statements: &[&str],
) -> FxHashMap<String, Vec<String>> {
    let mut out = FxHashMap::default();
    let dir = dir_of(path);
    for st in statements {
        let st = st.trim().trim_end_matches(';');
        match language {
            Some("python") => {
                if let Some(c) = PY_FROM.captures(st) {
                    let module = c[2].replace('.', "/");
                    let Some(bases) = py_from_bases(dir, c[1].len(), &module) else {
                        continue;
                    };
                    for item in c[3].split(',') {
                        // A module by PEP 8's lower-case name (`from shop import pricing`);
                        // `from shop.models import Cart` imports a class.
                        if let Some((local, name)) =
                            alias(item).filter(|(_, n)| !n.starts_with(|c: char| c.is_uppercase()))
                        {
                            let files: Vec<String> = bases
                                .iter()
                                .flat_map(|b| {
                                    let sub = if b.is_empty() {
                                        name.clone()
                                    } else {
                                        format!("{b}/{name}")
                                    };
                                    [format!("{sub}.py"), format!("{sub}/__init__.py")]
                                })
                                .collect();
                            out.insert(local, files);
                        }
                    }
                } else if let Some(c) = PY_IMPORT.captures(st) {
                    for item in c[1].split(',') {
                        let item = item.trim();
                        // `import a.b as c` binds `c` to `a.b`; `import a.b` binds `a` to `a`.
                        let (bound, local) = match item.split_once(" as ") {
                            Some((m, l)) => (m.trim(), l.trim()),
                            None => {
                                let top = item.split('.').next().unwrap_or(item);
                                (top, top)
                            }
                        };
                        if !local.is_empty() && !bound.is_empty() {
                            out.insert(
                                local.to_string(),
                                py_module_files(dir, &bound.replace('.', "/")),
                            );
                        }
                    }
                }
            }
            Some("javascript" | "typescript" | "tsx") => {
                if let Some(c) = JS_NAMESPACE.captures(st)
                    && let Some(files) = js_module_files(dir, &c[2])
                {
                    out.insert(c[1].to_string(), files);
                }
            }
            Some("go") if st.starts_with("import") => {
                for c in GO_IMPORT.captures_iter(st) {
                    let import = &c[2];
                    let local = match c.get(1).map(|m| m.as_str()) {
                        Some(".") => continue,
                        Some(alias) => alias,
                        None => go_package_name(import),
                    };
                    out.insert(local.to_string(), vec![format!("go:{import}")]);
                }
            }
            Some("rust") => {
                // Another crate's module is not the bundle's business: `meta::f()` stays open.
                for (segs, local) in rust_uses(st) {
                    if let Some(files) = rust_module_files(path, &segs)
                        && files != [ANYWHERE]
                    {
                        out.insert(local, files);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The names an import statement of the file at `path` makes the file's own, for importers of
/// the file (a package's `__init__.py` doing `from .app import Flask`, an `index.ts` doing
/// `export { map } from "./map"` or `export * from "./types"`): (`local=name` entries, `*` for
/// all the module's names; the module's candidate files). None for other statements and
/// languages.
pub fn exports(
    path: &str,
    language: Option<&str>,
    statement: &str,
) -> Option<(Vec<String>, Vec<String>)> {
    let st = statement.trim().trim_end_matches(';');
    let dir = dir_of(path);
    let (names, files) = match language {
        Some("python") => {
            let c = PY_FROM.captures(st)?;
            let files = py_from_files(dir, &c)?;
            let names = c[3]
                .split(',')
                .filter_map(alias)
                .map(|(local, name)| format!("{local}={name}"))
                .collect();
            (names, files)
        }
        Some("javascript" | "typescript" | "tsx") => {
            let c = JS_REEXPORT.captures(st)?;
            let files = js_module_files(dir, &c[3])?;
            let names = match c.get(1) {
                Some(list) => list
                    .as_str()
                    .split(',')
                    .filter_map(|i| alias(i.trim().trim_start_matches("type ")))
                    .map(|(local, name)| format!("{local}={name}"))
                    .collect(),
                None => vec!["*".to_string()],
            };
            (names, files)
        }
        _ => return None,
    };
    (!names.is_empty() && !files.is_empty()).then_some((names, files))
}

/// Imported local name → (imported name, candidate files), for the file at `path`.
pub fn import_map(
    path: &str,
    language: Option<&str>,
    statements: &[&str],
) -> FxHashMap<String, (String, Vec<String>)> {
    let mut out = FxHashMap::default();
    let dir = dir_of(path);
    for st in statements {
        let st = st.trim().trim_end_matches(';');
        match language {
            Some("python") => {
                let Some(c) = PY_FROM.captures(st) else {
                    continue;
                };
                let Some(files) = py_from_files(dir, &c) else {
                    continue;
                };
                for item in c[3].split(',') {
                    if let Some((local, name)) = alias(item) {
                        out.insert(local, (name, files.clone()));
                    }
                }
            }
            Some("javascript" | "typescript" | "tsx") => {
                let Some(c) = JS_NAMED.captures(st) else {
                    continue;
                };
                let Some(files) = js_module_files(dir, &c[2]) else {
                    continue;
                };
                for item in c[1].split(',') {
                    if let Some((local, name)) = alias(item.trim().trim_start_matches("type ")) {
                        out.insert(local, (name, files.clone()));
                    }
                }
            }
            Some("java" | "kotlin" | "scala") => {
                let ext = jvm_extension(language).unwrap_or("java");
                for (local, name, ty) in jvm_imports(st) {
                    out.insert(local, (name, jvm_type_files(dir, &ty, ext)));
                }
            }
            Some("rust") => {
                for (segs, local) in rust_uses(st) {
                    let (name, module) = segs.split_last().expect("a use item has a name");
                    if let Some(files) = rust_module_files(path, module) {
                        out.insert(local, (name.clone(), files));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn python_packages_under_a_folder_of_the_tree_are_found() {
        let b = py_absolute_bases("python/shop", "shop/pricing");
        assert!(b.contains(&"python/shop/pricing".to_string()), "{b:?}");
        assert_eq!(&b[..2], ["shop/pricing", "src/shop/pricing"]);
        // Never the package the file is in: `import json` there is the standard library's.
        let b = py_absolute_bases("src/flask/json", "json");
        assert!(!b.contains(&"src/flask/json".to_string()), "{b:?}");
    }
    use super::*;

    #[test]
    fn names_that_stand_for_modules() {
        let m = module_aliases(
            "shop/cart.py",
            Some("python"),
            &[
                "from shop import pricing, util as u",
                "from . import models",
                "import os.path",
                "import numpy as np",
            ],
        );
        assert_eq!(m["pricing"][0], "shop/pricing.py");
        assert_eq!(m["u"][1], "shop/util/__init__.py");
        assert_eq!(m["models"][0], "shop/models.py");
        assert_eq!(m["os"][0], "os.py", "`import os.path` binds os");
        assert_eq!(m["np"][1], "numpy/__init__.py");
        let js = module_aliases(
            "web/a.ts",
            Some("typescript"),
            &[
                "import * as cache from \"./cache\";",
                "import * as fs from \"fs\";",
            ],
        );
        assert_eq!(js["cache"][0], "web/cache.ts");
        assert_eq!(
            js["fs"],
            ["ts:web|fs"],
            "a package: files only where a tsconfig.json alias or a package name says"
        );
    }

    #[test]
    fn go_packages_by_import_path() {
        let m = module_aliases(
            "doc/man.go",
            Some("go"),
            &[
                "import ( \"fmt\" \"github.com/spf13/cobra\" y \"gopkg.in/yaml.v3\" \"example.com/x/v2\" _ \"embed\" . \"strings\" )",
            ],
        );
        assert_eq!(m["fmt"], ["go:fmt"]);
        assert_eq!(m["cobra"], ["go:github.com/spf13/cobra"]);
        assert_eq!(m["y"], ["go:gopkg.in/yaml.v3"]);
        assert_eq!(
            m["x"],
            ["go:example.com/x/v2"],
            "a major version is no name"
        );
        assert_eq!(m["_"], ["go:embed"], "bound to nothing a call can name");
        assert!(!m.contains_key("strings"), "a dot import binds no name");
        assert_eq!(go_package_name("github.com/mattn/go-sqlite3"), "sqlite3");
    }

    #[test]
    fn jvm_imports_under_the_source_root() {
        let m = import_map(
            "app/src/main/java/org/acme/web/Server.java",
            Some("java"),
            &[
                "import org.acme.core.Engine;",
                "import static org.acme.util.Strings.join;",
                "import com.google.Gson;",
                "import java.util.*;",
            ],
        );
        assert_eq!(
            m["Engine"].1,
            ["app/src/main/java/org/acme/core/Engine.java", ANYWHERE]
        );
        assert_eq!(
            m["join"],
            (
                "join".into(),
                vec![
                    "app/src/main/java/org/acme/util/Strings.java".into(),
                    ANYWHERE.into()
                ]
            )
        );
        assert_eq!(m["Gson"].1, [ANYWHERE], "no `com/` above the file");
        assert_eq!(m.len(), 3, "a wildcard names nothing");
        let k = import_map(
            "src/org/acme/A.kt",
            Some("kotlin"),
            &["import org.acme.b.Thing as T"],
        );
        assert_eq!(
            k["T"],
            (
                "Thing".into(),
                vec!["src/org/acme/b/Thing.kt".into(), ANYWHERE.into()]
            )
        );
        let s = import_map(
            "org/acme/A.scala",
            Some("scala"),
            &["import org.acme.b.{Thing, Other => O}"],
        );
        assert_eq!(s["O"].1[0], "org/acme/b/Other.scala");
        assert_eq!(s["Thing"].0, "Thing");
    }

    #[test]
    fn rust_use_trees() {
        let m = import_map(
            "crates/g/src/lib.rs",
            Some("rust"),
            &[
                "use crate::{glob::MatchStrategy, pathutil::{file_name, normalize_path as norm}};",
                "pub(crate) use self::inner::Thing;",
                "use super::Up;",
                "use std::path::Path;",
                "use regex::Regex;",
                "use crate::glob::*;",
            ],
        );
        assert_eq!(
            m["MatchStrategy"],
            (
                "MatchStrategy".into(),
                vec![
                    "crates/g/src/glob.rs".into(),
                    "crates/g/src/glob/mod.rs".into()
                ]
            )
        );
        assert_eq!(m["norm"].0, "normalize_path");
        assert_eq!(m["file_name"].1[0], "crates/g/src/pathutil.rs");
        assert_eq!(
            m["Thing"].1,
            ["crates/g/src/inner.rs", "crates/g/src/inner/mod.rs"]
        );
        assert_eq!(
            m["Up"].1[0], "crates/g/mod.rs",
            "lib.rs's super is above it"
        );
        assert!(
            m["Path"].1.is_empty(),
            "the standard library is not in the bundle"
        );
        assert_eq!(m["Regex"].1, [ANYWHERE]);
        assert_eq!(m.len(), 7);
        // In `src/glob.rs`, `super::` is the crate root, or the file itself (`mod tests`).
        let t = import_map("src/glob.rs", Some("rust"), &["use super::{Glob, Token};"]);
        assert!(t["Glob"].1.contains(&"src/lib.rs".to_string()));
        assert!(t["Glob"].1.contains(&"src/glob.rs".to_string()));
        let mods = module_aliases(
            "src/lib.rs",
            Some("rust"),
            &["use crate::pathutil;", "use regex_automata::meta;"],
        );
        assert_eq!(mods["pathutil"], ["src/pathutil.rs", "src/pathutil/mod.rs"]);
        assert!(
            !mods.contains_key("meta"),
            "another crate's module is nobody's"
        );
    }

    #[test]
    fn python_and_javascript_imports() {
        let m = import_map(
            "app/run.py",
            Some("python"),
            &[
                "from app.main import Cart, helper as h",
                "from .util import (fmt)",
                "import os",
            ],
        );
        assert_eq!(
            m["Cart"],
            (
                "Cart".into(),
                vec![
                    "app/main/__init__.py".into(),
                    "app/main.py".into(),
                    "src/app/main/__init__.py".into(),
                    "src/app/main.py".into(),
                    // The file's own folder as a root (a script's folder is on `sys.path`).
                    "app/app/main/__init__.py".into(),
                    "app/app/main.py".into()
                ]
            )
        );
        assert_eq!(m["h"].0, "helper");
        assert_eq!(m["fmt"].1[1], "app/util.py");
        assert!(!m.contains_key("os"));
        // Three dots from `app/` climb above the root: no module to look in.
        let up = import_map("app/run.py", Some("python"), &["from ...util import f"]);
        assert!(up.is_empty());
        let m = import_map(
            "web/src/a.ts",
            Some("typescript"),
            &[
                "import { Store, type Named as N } from \"../lib/store\";",
                "import React from \"react\";",
            ],
        );
        assert_eq!(m["Store"].1[0], "web/lib/store.ts");
        assert_eq!(m["N"].0, "Named");
        assert!(!m.contains_key("React"));
        assert!(
            import_map(
                "a.ts",
                Some("typescript"),
                &["import { x } from \"../../up\""]
            )
            .is_empty()
        );
    }
}
