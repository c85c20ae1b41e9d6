//! Which file an imported name comes from, for resolving references through imports.
//!
//! Input: a file's path, language and import statements (as `refs` holds them). Output: each
//! imported local name with the repo-relative files its module may be, most likely first. Covered:
//! Python `from a.b import c as d` (absolute: `a/b.py`, `a/b/__init__.py`, the same under `src/`;
//! relative: beside the importing file, the package `__init__.py` first) and JavaScript/TypeScript `import { a, b as c } from
//! "./mod"` (relative specifiers only: `mod.ts`, `.tsx`, `.js`, `.jsx`, `.mjs`, `mod/index.*`).
//! Anything else gives nothing, and the reference falls back to name resolution.
//!
//! [`module_aliases`] gives the local names that stand for a whole module, for calls on them
//! (`storage.load()`): Python `import a.b as c`, `import a`, and `from a import b` where `b` may be
//! a submodule (`a/b.py`); JavaScript/TypeScript `import * as c from "./mod"`.
use regex::Regex;
use rustc_hash::FxHashMap;
use std::sync::LazyLock;

static PY_FROM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^from\s+(\.*)([\w.]*)\s+import\s+\(?([^)]*)\)?\s*$").expect("valid regex")
});
static JS_NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+["']([^"']+)["']"#)
        .expect("valid regex")
});

static PY_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^import\s+(.+)$").expect("valid regex"));
static JS_NAMESPACE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^import\s+\*\s+as\s+([\w$]+)\s+from\s+["']([^"']+)["']"#).expect("valid regex")
});

/// `a/b/../c/./d` → `a/c/d`; `None` when it climbs out of the repository.
fn normalise(path: &str) -> Option<String> {
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

/// The files a Python module path may be (`a/b`: `a/b.py`, `a/b/__init__.py`, the same under
/// `src/`).
fn py_module_files(module: &str) -> Vec<String> {
    [module.to_string(), format!("src/{module}")]
        .iter()
        .flat_map(|b| [format!("{b}.py"), format!("{b}/__init__.py")])
        .collect()
}

/// The files a JavaScript/TypeScript relative specifier may be, from the directory `dir`.
fn js_module_files(dir: &str, spec: &str) -> Option<Vec<String>> {
    if !spec.starts_with('.') {
        return None;
    }
    let base = normalise(&format!("{dir}/{spec}"))?;
    let mut files: Vec<String> = Vec::new();
    for ext in ["ts", "tsx", "js", "jsx", "mjs"] {
        files.push(format!("{base}.{ext}"));
    }
    for ext in ["ts", "tsx", "js"] {
        files.push(format!("{base}/index.{ext}"));
    }
    Some(files)
}

/// The base directories of a Python `from` import's module (dots: relative levels, each past the
/// first climbing a directory); none when it climbs above the root.
fn py_from_bases(dir: &str, dots: usize, module: &str) -> Option<Vec<String>> {
    if dots == 0 {
        return Some(vec![module.to_string(), format!("src/{module}")]);
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
                                py_module_files(&bound.replace('.', "/")),
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
            _ => {}
        }
    }
    out
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
                let module = c[2].replace('.', "/");
                let Some(bases) = py_from_bases(dir, c[1].len(), &module) else {
                    continue;
                };
                let files: Vec<String> = bases
                    .iter()
                    .filter(|b| !b.is_empty())
                    .flat_map(|b| [format!("{b}/__init__.py"), format!("{b}.py")])
                    .collect();
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
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
        assert!(
            !js.contains_key("fs"),
            "a package, not a file of the repository"
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
                    "src/app/main.py".into()
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
