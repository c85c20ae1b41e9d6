//! Candidate files: the keys a module, package or alias is known by among the files an import
//! may name, and the files an imported Go path, TypeScript alias or Python submodule stands for.

/// The key a package (a directory: Go, and Java/Kotlin's own package) is known by among import
/// candidates: the directory of `path` with a trailing `/` (`/` for the root) and the language
/// family (`@go`: a cgo file's C functions are not the Go package's). A definition counts under its
/// file and under its package.
pub fn package_key(family: &str, path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/@{family}"),
        None => format!("/@{family}"),
    }
}

/// Whether a candidate is a package ([`package_key`]) rather than a file.
pub(super) fn is_package(candidate: &str) -> bool {
    candidate.contains("/@")
}

/// The package an imported Go path names, under the Go modules of the bundle ((module path,
/// directory of its `go.mod`)): `github.com/spf13/cobra/doc` in module `github.com/spf13/cobra`
/// at the root is `doc/`.
pub(super) fn go_package(import: &str, modules: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = modules
        .iter()
        .filter_map(|(module, dir)| {
            let rest = import.strip_prefix(module.as_str())?;
            let rest = match rest {
                "" => "",
                r => r.strip_prefix('/')?,
            };
            let joined = [dir.as_str(), rest]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("/");
            Some(format!("{joined}/@go"))
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The files a bare TypeScript/JavaScript specifier (`DIR|SPEC`: the importing file's directory,
/// the specifier) may be under the bundle's path aliases ((tsconfig directory, alias, target)):
/// each alias of a tsconfig.json above the importer that matches (`rxjs/internal/*` →
/// `src/internal/*`), its target's files; none matching, none (a package's, not the bundle's).
pub(super) fn ts_alias(dir_spec: &str, modules: &[(String, String, String)]) -> Vec<String> {
    let Some((from, spec)) = dir_spec.split_once('|') else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (dir, alias, target) in modules {
        let above = dir.is_empty()
            || from == dir
            || from
                .strip_prefix(dir.as_str())
                .is_some_and(|r| r.starts_with('/'));
        if !above {
            continue;
        }
        let middle = match alias.split_once('*') {
            None => (spec == alias).then_some(""),
            Some((pre, suf)) => spec
                .strip_prefix(pre)
                .and_then(|r| r.strip_suffix(suf))
                .filter(|_| spec.len() >= pre.len() + suf.len()),
        };
        if let Some(m) = middle {
            let base = target.replace('*', m);
            out.extend(
                crate::extract::imports::JS_SUFFIXES
                    .iter()
                    .map(|s| format!("{base}{s}")),
            );
        }
    }
    out
}

/// The files of the submodule `rest` (`a.b`) of a Python module whose files are `files`
/// (`flask.py` or `flask/__init__.py`, ...): `flask/a/b.py`, `flask/a/b/__init__.py`, ...
pub(super) fn py_submodule_files(files: &[String], rest: &str) -> Vec<String> {
    let rest = rest.replace('.', "/");
    let mut out: Vec<String> = Vec::new();
    for f in files {
        let Some(base) = f
            .strip_suffix("/__init__.py")
            .or_else(|| f.strip_suffix(".py"))
        else {
            continue;
        };
        for sub in [
            format!("{base}/{rest}.py"),
            format!("{base}/{rest}/__init__.py"),
        ] {
            if !out.contains(&sub) {
                out.push(sub);
            }
        }
    }
    out
}
