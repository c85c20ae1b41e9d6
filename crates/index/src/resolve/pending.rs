//! The context a reference left open in its file carries to the bundle-wide step
//! ([`Pending::of_file`]): the file's import of the name, the module a call's path names, the type
//! its receiver is.
use rustc_hash::FxHashMap;
use trove_bundle::resolution::{ANYWHERE, Class, language_family};

use super::candidates::{package_key, py_submodule_files};
use super::types::is_ident;
use crate::record::{Pending, RefKind, RefRecord, Resolution, Scope, SymbolRecord};

impl Pending {
    /// The bundle-wide context of each of `refs` (of the file at `path` in `language`): `Some`
    /// for the references still to resolve, `None` for imports and those resolved in the file.
    pub fn of_file(
        path: &str,
        language: Option<&str>,
        refs: &[RefRecord],
        symbols: &[SymbolRecord],
    ) -> Vec<Option<Self>> {
        let statements: Vec<&str> = refs
            .iter()
            .filter(|r| r.kind == RefKind::Import && r.scip_symbol.is_none())
            .map(|r| r.target.as_str())
            .collect();
        let file = FileImports {
            path,
            language,
            family: language_family(language),
            namespaces: csharp_namespaces(language, symbols, &statements),
            imports: crate::extract::imports::import_map(path, language, &statements),
            modules: crate::extract::imports::module_aliases(path, language, &statements),
        };
        refs.iter().map(|r| file.of_ref(r)).collect()
    }
}

/// C#: a name not defined in the file comes from a namespace the file is in or uses (`ns:NAME`:
/// the files declaring that namespace), else from anywhere. These candidates, for a C# file with
/// import `statements`; none for another language.
fn csharp_namespaces(
    language: Option<&str>,
    symbols: &[SymbolRecord],
    statements: &[&str],
) -> Vec<String> {
    match language {
        Some("csharp") => symbols
            .iter()
            .filter(|s| s.symbol.kind == "namespace")
            .map(|s| s.symbol.name.clone())
            .chain(statements.iter().filter_map(|st| {
                let ns = st
                    .trim()
                    .strip_prefix("using ")?
                    .trim()
                    .trim_end_matches(';');
                let ok = !ns.is_empty()
                    && !ns.contains('=')
                    && ns
                        .split('.')
                        .all(|p| !p.is_empty() && p.chars().all(is_ident));
                ok.then(|| ns.to_string())
            }))
            .map(|ns| format!("ns:{ns}"))
            .chain([ANYWHERE.to_string()])
            .collect(),
        _ => Vec::new(),
    }
}

/// What one file's imports and declarations make of its references' names: the state
/// [`Pending::of_file`] reads each reference against.
struct FileImports<'a> {
    /// The file's path.
    path: &'a str,
    /// The file's language.
    language: Option<&'a str>,
    /// The language family of the file.
    family: &'a str,
    /// C#'s namespaces the file is in or uses ([`csharp_namespaces`]).
    namespaces: Vec<String>,
    /// Imported local name → (imported name, candidate files).
    imports: FxHashMap<String, (String, Vec<String>)>,
    /// Local names that stand for a module → the files that module may be.
    modules: FxHashMap<String, Vec<String>>,
}

impl FileImports<'_> {
    /// A context of the file's family, through `import` when it is `Some`.
    fn pending(&self, import: Option<(String, Vec<String>)>) -> Pending {
        Pending {
            family: self.family.to_string(),
            import,
            method: false,
            member_of: None,
        }
    }

    /// A call on an object ([`Scope::Method`]), in the file's family.
    fn method(&self) -> Pending {
        Pending {
            family: self.family.to_string(),
            import: None,
            method: true,
            member_of: None,
        }
    }

    /// The context of one reference `r` of the file (`None`: none to carry).
    fn of_ref(&self, r: &RefRecord) -> Option<Pending> {
        if let Scope::Stored(p) = &r.scope {
            return p.clone();
        }
        if r.scip_symbol.is_some() {
            return Some(self.pending(None));
        }
        if r.resolution == Some(Resolution::File) || Class::of(r.kind).is_none() {
            return None;
        }
        match &r.scope {
            Scope::Open => Some(self.pending(self.open(r))),
            // `storage.load()`: `load` in the module `storage` names, if it is one; else
            // a call on an object. Rust's `crate::a::f()`, `b::f()`: in the module the path
            // names.
            Scope::Module(m, or_method) => self.in_module(r, m, *or_method),
            // `pathutil::f()`: the module a `use` names; `b::f()` with no `use` of `b`,
            // the child module `mod b;` declares (an outside crate's,
            // `serde_json::from_str()`, is no file of the bundle); `crate::a::f()`,
            // the module the path names.
            Scope::Path(m) => self.in_path(r, m),
            Scope::Method => Some(self.method()),
            Scope::Typed(ty, or_method) => Some(Pending {
                method: *or_method,
                member_of: Some(ty.clone()),
                ..self.method()
            }),
            Scope::Closed | Scope::Stored(_) => None,
        }
    }

    /// A bare name ([`Scope::Open`]): the file's import of it, else the candidates of the
    /// language.
    fn open(&self, r: &RefRecord) -> Option<(String, Vec<String>)> {
        self.imports
            .get(&r.target)
            .map(|(name, files)| (name.clone(), files.clone()))
            .or_else(|| {
                // Not imported: Go's own package, else nothing; Java's, Kotlin's
                // and Scala's own package, else anywhere.
                let package = package_key(self.family, self.path);
                match self.language {
                    Some("go") => Some((r.target.clone(), vec![package])),
                    Some("csharp") => Some((r.target.clone(), self.namespaces.clone())),
                    Some("java" | "kotlin" | "scala") => {
                        Some((r.target.clone(), vec![package, ANYWHERE.to_string()]))
                    }
                    _ => None,
                }
            })
    }

    /// A call on the name `m` that may be a module ([`Scope::Module`]; `or_method`: else as a
    /// call on an object).
    fn in_module(&self, r: &RefRecord, m: &str, or_method: bool) -> Option<Pending> {
        match self.modules.get(m) {
            Some(files) => Some(self.pending(Some((r.target.clone(), files.clone())))),
            // `flask.helpers.f()` after `import flask`: `f` in the submodule
            // `helpers` of the package `flask` names (`flask.Flask.f()`: the
            // member of the class there).
            None if self.language == Some("python")
                && let Some((head, rest)) = m.split_once('.')
                && let Some(files) = self.modules.get(head) =>
            {
                match rest.rsplit('.').next() {
                    // (Else, as a call on any object: a member it inherits.)
                    Some(ty) if ty.starts_with(|c: char| c.is_uppercase()) => Some(Pending {
                        member_of: Some(ty.to_string()),
                        method: or_method,
                        ..self.pending(None)
                    }),
                    _ => Some(
                        self.pending(Some((r.target.clone(), py_submodule_files(files, rest)))),
                    ),
                }
            }
            // `Engine.create()`: no module, a type by its capital (Go's capitals are
            // a package's variables as often).
            None if m.starts_with(|c: char| c.is_uppercase())
                && m.chars().all(is_ident)
                && self.language != Some("go") =>
            {
                Some(Pending {
                    method: or_method,
                    member_of: Some(m.to_string()),
                    ..self.method()
                })
            }
            None => or_method.then(|| self.method()),
        }
    }

    /// A call on the path `m` ([`Scope::Path`]): in the module a `use` names, else (Rust) the
    /// module the path names.
    fn in_path(&self, r: &RefRecord, m: &str) -> Option<Pending> {
        match self.modules.get(m) {
            Some(files) => Some(self.pending(Some((r.target.clone(), files.clone())))),
            None if self.language == Some("rust") => {
                let mut segs: Vec<String> = m.split("::").map(str::to_string).collect();
                if !matches!(segs[0].as_str(), "crate" | "self" | "super") {
                    segs.insert(0, "self".to_string());
                }
                crate::extract::imports::rust_module_files(self.path, &segs)
                    .filter(|f| f != &[ANYWHERE])
                    .map(|files| self.pending(Some((r.target.clone(), files))))
            }
            None => None,
        }
    }
}
