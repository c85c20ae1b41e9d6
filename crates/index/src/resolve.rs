//! Reference resolution: which definition a call, base type or type use lands on.
//!
//! Two steps, both here. Per file, while the pipeline builds a file's records ([`in_file`]): each
//! reference gets its enclosing definition and chunk, and a name defined once in the same file
//! (among the kinds the reference can land on) resolves to it (`file`). Across the bundle, when
//! the writer has seen every file ([`Definitions`] + [`Pending`]): a reference still open resolves
//! through the file's import of the name (the one definition in the module files the import may
//! name: `import`), else to the one definition of that name in its language family (`repo`).
//! Definitions inside a function (a closure, a class in a test) are that function's own: only
//! their file's references land on them. A bare call of a name an enclosing function binds (a
//! parameter, loop variable or local: `def f(load): load(x)`) lands nowhere. Two candidates or none leave it unresolved: never a
//! guess. A reference taken from a SCIP index
//! (SCIP import, `precise`) resolves by its SCIP symbol string alone: to the one definition that
//! carries it (`scip`), wherever it is, or to none when the symbol is defined outside the bundle.
//!
//! Keys are typed ([`NameKey`], [`FileKey`]); a reference's context for the second step
//! ([`Pending`]) travels beside it, not packed into its target.
use rustc_hash::FxHashMap;

use crate::record::{ChunkRecord, RefKind, RefRecord, Resolution, Scope, SymbolRecord};
pub use crate::record::{Pending, PendingRef, chunk_at};
pub use trove_bundle::resolution::*;
use trove_lang::lang::LanguageFile;
use trove_lang::lang::refs::Reference;

/// For each of a file's `symbols` (in `language`), whether it counts as a target: all but the
/// later ones of an overload set ([`ONE_FUNCTION_OVERLOADS`]): same parent, kind and name, the
/// first by (start byte, id) counting.
pub fn counted(language: Option<&str>, symbols: &[SymbolRecord]) -> Vec<bool> {
    let mut out = vec![true; symbols.len()];
    if !language.is_some_and(|l| ONE_FUNCTION_OVERLOADS.contains(&l)) {
        return out;
    }
    let mut order: Vec<usize> = (0..symbols.len()).collect();
    order.sort_unstable_by_key(|&i| (symbols[i].symbol.start_byte, symbols[i].symbol_id));
    let mut seen: rustc_hash::FxHashSet<(Option<i64>, &str, &str)> = Default::default();
    for i in order {
        let s = &symbols[i];
        out[i] = seen.insert((s.parent_id, s.symbol.kind.as_str(), s.symbol.name.as_str()));
    }
    out
}

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
fn is_package(candidate: &str) -> bool {
    candidate.contains("/@")
}

/// The package an imported Go path names, under the Go modules of the bundle ((module path,
/// directory of its `go.mod`)): `github.com/spf13/cobra/doc` in module `github.com/spf13/cobra`
/// at the root is `doc/`.
fn go_package(import: &str, modules: &[(String, String)]) -> Vec<String> {
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
fn ts_alias(dir_spec: &str, modules: &[(String, String, String)]) -> Vec<String> {
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

/// A name a file takes from a module: (its name there, the module's candidate files).
type Reexport = (String, Vec<String>);

/// A definition's name within its class and language family: the key of name resolution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NameKey {
    /// Callable or type.
    pub class: Class,
    /// [`language_family`] of the defining file.
    pub family: String,
    /// The definition's name.
    pub name: String,
}

/// A definition's name within one file: the key of resolution through imports. A 64-bit hash of
/// (class, path, name), not the strings, since this map holds every definition of the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileKey(u64);

impl FileKey {
    /// The key of `name` of `class` defined in `path`.
    pub fn new(class: Class, path: &str, name: &str) -> Self {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        // The class as the character the key always hashed, so keys stay what they were.
        (class.code(), path, name).hash(&mut h);
        FileKey(h.finish())
    }
}

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
        // C#: a name not defined in the file comes from a namespace the file is in or uses
        // (`ns:NAME`: the files declaring that namespace), else from anywhere.
        let namespaces: Vec<String> = match language {
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
        };
        let imports = crate::extract::imports::import_map(path, language, &statements);
        let modules = crate::extract::imports::module_aliases(path, language, &statements);
        let family = language_family(language);
        refs.iter()
            .map(|r| {
                let pending = |import| Pending {
                    family: family.to_string(),
                    import,
                    method: false,
                    member_of: None,
                };
                let method = || Pending {
                    family: family.to_string(),
                    import: None,
                    method: true,
                    member_of: None,
                };
                if let Scope::Stored(p) = &r.scope {
                    return p.clone();
                }
                if r.scip_symbol.is_some() {
                    return Some(pending(None));
                }
                if r.resolution == Some(Resolution::File) || Class::of(r.kind).is_none() {
                    return None;
                }
                match &r.scope {
                    Scope::Open => Some(pending(
                        imports
                            .get(&r.target)
                            .map(|(name, files)| (name.clone(), files.clone()))
                            .or_else(|| {
                                // Not imported: Go's own package, else nothing; Java's, Kotlin's
                                // and Scala's own package, else anywhere.
                                let package = package_key(family, path);
                                match language {
                                    Some("go") => Some((r.target.clone(), vec![package])),
                                    Some("csharp") => Some((r.target.clone(), namespaces.clone())),
                                    Some("java" | "kotlin" | "scala") => Some((
                                        r.target.clone(),
                                        vec![package, ANYWHERE.to_string()],
                                    )),
                                    _ => None,
                                }
                            }),
                    )),
                    // `storage.load()`: `load` in the module `storage` names, if it is one; else
                    // a call on an object. Rust's `crate::a::f()`, `b::f()`: in the module the path
                    // names.
                    Scope::Module(m, or_method) => match modules.get(m) {
                        Some(files) => Some(pending(Some((r.target.clone(), files.clone())))),
                        // `flask.helpers.f()` after `import flask`: `f` in the submodule
                        // `helpers` of the package `flask` names (`flask.Flask.f()`: the
                        // member of the class there).
                        None if language == Some("python")
                            && let Some((head, rest)) = m.split_once('.')
                            && let Some(files) = modules.get(head) =>
                        {
                            match rest.rsplit('.').next() {
                                // (Else, as a call on any object: a member it inherits.)
                                Some(ty) if ty.starts_with(|c: char| c.is_uppercase()) => {
                                    Some(Pending {
                                        member_of: Some(ty.to_string()),
                                        method: *or_method,
                                        ..pending(None)
                                    })
                                }
                                _ => Some(pending(Some((
                                    r.target.clone(),
                                    py_submodule_files(files, rest),
                                )))),
                            }
                        }
                        // `Engine.create()`: no module, a type by its capital (Go's capitals are
                        // a package's variables as often).
                        None if m.starts_with(|c: char| c.is_uppercase())
                            && m.chars().all(is_ident)
                            && language != Some("go") =>
                        {
                            Some(Pending {
                                method: *or_method,
                                member_of: Some(m.clone()),
                                ..method()
                            })
                        }
                        None => or_method.then(method),
                    },
                    // `pathutil::f()`: the module a `use` names; `b::f()` with no `use` of `b`,
                    // the child module `mod b;` declares (an outside crate's,
                    // `serde_json::from_str()`, is no file of the bundle); `crate::a::f()`,
                    // the module the path names.
                    Scope::Path(m) => match modules.get(m) {
                        Some(files) => Some(pending(Some((r.target.clone(), files.clone())))),
                        None if language == Some("rust") => {
                            let mut segs: Vec<String> = m.split("::").map(str::to_string).collect();
                            if !matches!(segs[0].as_str(), "crate" | "self" | "super") {
                                segs.insert(0, "self".to_string());
                            }
                            crate::extract::imports::rust_module_files(path, &segs)
                                .filter(|f| f != &[ANYWHERE])
                                .map(|files| pending(Some((r.target.clone(), files))))
                        }
                        None => None,
                    },
                    Scope::Method => Some(method()),
                    Scope::Typed(ty, or_method) => Some(Pending {
                        method: *or_method,
                        member_of: Some(ty.clone()),
                        ..method()
                    }),
                    Scope::Closed | Scope::Stored(_) => None,
                }
            })
            .collect()
    }
}

/// A base type ([`Definitions::add_base`]): the definition its `inherits` reference resolves
/// to, else the name it gives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Base {
    Id(i64),
    Name(String),
}

/// Every callable and type definition of the bundle, counted by name (per family) and by file:
/// what the bundle-wide step resolves against. Each entry is (how many, the id of the first).
#[derive(Debug, Default)]
pub struct Definitions {
    by_name: FxHashMap<NameKey, (u32, i64)>,
    by_file: FxHashMap<FileKey, (u32, i64)>,
    /// Files that define something a reference can land on.
    def_files: rustc_hash::FxHashSet<String>,
    /// Callables by (family, the name of the definition holding them, name): a type's members.
    by_member: FxHashMap<(String, String, String), (u32, i64)>,
    /// Callables by (the id of the definition holding them, name).
    by_holder: FxHashMap<(i64, String), (u32, i64)>,
    /// The base types of each type, by id (`class A extends B`, `class A(B)`: its `inherits`
    /// references): where a member the type does not define is looked for.
    bases: FxHashMap<i64, Vec<Base>>,
    /// The names of the types, by id.
    type_names: FxHashMap<i64, String>,
    by_scip: FxHashMap<String, (u32, i64)>,
    /// Go modules of the bundle: (module path, directory of its `go.mod`).
    go_modules: Vec<(String, String)>,
    /// The files declaring each namespace (C#'s `namespace Acme.Core`).
    namespaces: FxHashMap<String, Vec<String>>,
    /// TypeScript/JavaScript path aliases: (the folder they hold under: a tsconfig.json's, the root
    /// for a package.json's name; alias; target).
    ts_modules: Vec<(String, String, String)>,
    /// Names files take from other modules ((file, local name or `*`) → (name there, the
    /// module's candidate files)): `RefRecord::exports` of their import statements.
    reexports: FxHashMap<(String, String), Vec<Reexport>>,
}

impl Definitions {
    /// Notes the module a manifest of the bundle declares (Go's `module` line, a `deps` row of
    /// scope `module`): imports of its packages resolve into the manifest's directory.
    pub fn add_module(&mut self, manifest: &str, dep: &crate::extract::deps::Dep) {
        let dir = manifest.rsplit_once('/').map_or("", |(d, _)| d);
        match (dep.ecosystem.as_str(), dep.scope.as_str(), &dep.version) {
            ("go", "module", _) => self.go_modules.push((dep.name.clone(), dir.to_string())),
            // A tsconfig.json's aliases hold under its folder; a package's name everywhere.
            ("npm", "module", Some(target)) => {
                let applies = if manifest == "package.json" || manifest.ends_with("/package.json") {
                    ""
                } else {
                    dir
                };
                self.ts_modules
                    .push((applies.to_string(), dep.name.clone(), target.clone()))
            }
            _ => {}
        }
    }

    /// Notes the names an import statement of the file at `path` makes its own
    /// ([`crate::extract::imports::exports`]).
    pub fn add_exports(&mut self, path: &str, (names, files): &(Vec<String>, Vec<String>)) {
        for n in names {
            let (local, name) = n.split_once('=').unwrap_or((n.as_str(), n.as_str()));
            self.reexports
                .entry((path.to_string(), local.to_string()))
                .or_default()
                .push((name.to_string(), files.clone()));
        }
    }

    /// A name that `files` (a module's candidates) do not define, through their imports of it:
    /// (the definitions found there, whether one of them names it rather than `*`).
    fn through_reexports(
        &self,
        class: Class,
        files: &[String],
        name: &str,
    ) -> (Vec<&(u32, i64)>, bool) {
        let (mut found, mut named) = (Vec::new(), false);
        for f in files {
            for local in [name, "*"] {
                let Some(entries) = self.reexports.get(&(f.clone(), local.to_string())) else {
                    continue;
                };
                named |= local != "*";
                for (there, targets) in entries {
                    let there = if local == "*" { name } else { there.as_str() };
                    found.extend(
                        targets
                            .iter()
                            .filter_map(|g| self.by_file.get(&FileKey::new(class, g, there))),
                    );
                }
            }
        }
        (found, named)
    }

    /// Notes a type's base type from its `inherits` reference `r` (with its context `p`, when
    /// it was left open in its file): the definition it resolves to, else its name
    /// ([`is_base_name`]; not the type's own: `class EnvironBuilder(werkzeug.test.EnvironBuilder)`
    /// names another module's), looked up by name (`import { Object3D } from "three"`, the
    /// package itself).
    pub fn add_base(&mut self, r: &RefRecord, p: Option<&Pending>) {
        let Some(ty) = r.from_symbol_id.filter(|_| r.kind == RefKind::Inherits) else {
            return;
        };
        let mut r = r.clone();
        if let Some(p) = p {
            self.resolve(&mut r, p);
        }
        let base = match r.target_symbol_id {
            Some(id) if id != ty => Base::Id(id),
            Some(_) => return,
            None if is_base_name(&r.target) && self.type_names.get(&ty) != Some(&r.target) => {
                Base::Name(r.target)
            }
            None => return,
        };
        let b = self.bases.entry(ty).or_default();
        if !b.contains(&base) {
            b.push(base);
        }
    }

    /// The member `name` of the type named `ty` (in `family`), or of the nearest of its base
    /// types that defines one: the types it inherits from ([`Definitions::add_base`]), level by
    /// level (a base's bases next), at most [`MAX_BASES`] levels up. A type by name is every
    /// type of the family of that name for its members, and its bases are followed only where
    /// it is one. The first level where any type defines `name` decides: its one definition,
    /// else none (two bases defining it is a type checker's to choose).
    fn member(&self, family: &str, ty: &str, name: &str) -> Option<i64> {
        let mut level: Vec<Base> = vec![Base::Name(ty.to_string())];
        let mut seen: rustc_hash::FxHashSet<Base> = rustc_hash::FxHashSet::default();
        for depth in 0..=MAX_BASES {
            let hits: Vec<(u32, i64)> = level
                .iter()
                .filter_map(|t| match t {
                    Base::Name(t) => {
                        self.by_member
                            .get(&(family.to_string(), t.clone(), name.to_string()))
                    }
                    Base::Id(t) => self.by_holder.get(&(*t, name.to_string())),
                })
                .copied()
                .collect();
            if !hits.is_empty() {
                return match hits.as_slice() {
                    [(1, id)] => Some(*id),
                    _ => None,
                };
            }
            if depth == MAX_BASES {
                break;
            }
            seen.extend(level.iter().cloned());
            let mut next: Vec<Base> = Vec::new();
            for t in &level {
                let id = match t {
                    Base::Id(id) => *id,
                    Base::Name(t) => {
                        let key = NameKey {
                            class: Class::Type,
                            family: family.to_string(),
                            name: t.clone(),
                        };
                        let Some(&(1, id)) = self.by_name.get(&key) else {
                            continue;
                        };
                        id
                    }
                };
                for b in self.bases.get(&id).into_iter().flatten() {
                    if !seen.contains(b) && !next.contains(b) {
                        next.push(b.clone());
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        None
    }

    /// Counts the definitions of the file at `path` (in `language`).
    pub fn add_file(&mut self, path: &str, language: Option<&str>, symbols: &[SymbolRecord]) {
        let family = language_family(language);
        let names: FxHashMap<i64, &str> = symbols
            .iter()
            .map(|s| (s.symbol_id, s.symbol.name.as_str()))
            .collect();
        // A TypeScript declaration file declares what code elsewhere implements (commander's
        // `typings/index.d.ts` beside `lib/*.js`): a call lands on the code, a type use may
        // land on the declaration.
        let declarations = is_declaration_file(path);
        // Every SCIP symbol counts (an overload the index defines is its symbol's definition).
        for sym in symbols {
            if let Some(k) = sym
                .scip_symbol
                .as_deref()
                .and_then(trove_bundle::resolution::scip_key)
            {
                self.by_scip.entry(k).or_insert((0, sym.symbol_id)).0 += 1;
            }
        }
        let local = local_definitions(symbols);
        for sym in symbols
            .iter()
            .filter(|s| TYPE_KINDS.contains(&s.symbol.kind.as_str()))
        {
            self.type_names
                .insert(sym.symbol_id, sym.symbol.name.clone());
        }
        let csharp = language == Some("csharp");
        for sym in symbols
            .iter()
            .filter(|s| csharp && s.symbol.kind == "namespace")
        {
            self.namespaces
                .entry(sym.symbol.name.clone())
                .or_default()
                .push(path.to_string());
        }
        for (sym, _) in symbols
            .iter()
            .zip(counted(language, symbols))
            .filter(|(_, c)| *c)
        {
            if CALLABLE_KINDS.contains(&sym.symbol.kind.as_str())
                && !declarations
                && let Some(holder) = sym.parent_id.and_then(|p| names.get(&p))
            {
                let key = (
                    family.to_string(),
                    holder.to_string(),
                    sym.symbol.name.clone(),
                );
                self.by_member.entry(key).or_insert((0, sym.symbol_id)).0 += 1;
                if let Some(p) = sym.parent_id {
                    self.by_holder
                        .entry((p, sym.symbol.name.clone()))
                        .or_insert((0, sym.symbol_id))
                        .0 += 1;
                }
            }
            // A definition inside a function is the function's own: no other file names it.
            if local.contains(&sym.symbol_id) {
                continue;
            }
            for class in [Class::Callable, Class::Type, Class::Method] {
                if class.open_kinds().contains(&sym.symbol.kind.as_str())
                    && !(declarations && class != Class::Type)
                {
                    if !self.def_files.contains(path) {
                        self.def_files.insert(path.to_string());
                        self.def_files.insert(package_key(family, path));
                    }
                    let key = NameKey {
                        class,
                        family: family.to_string(),
                        name: sym.symbol.name.clone(),
                    };
                    self.by_name.entry(key).or_insert((0, sym.symbol_id)).0 += 1;
                    for at in [path, package_key(family, path).as_str()] {
                        self.by_file
                            .entry(FileKey::new(class, at, &sym.symbol.name))
                            .or_insert((0, sym.symbol_id))
                            .0 += 1;
                    }
                }
            }
        }
    }

    /// Resolves `r` (open, with context `p`) against every definition: a name that came through
    /// an import is the import's business — resolved when the module's candidate files define it
    /// exactly once, never by a bundle-wide name (`from os.path import join` is not the repo's
    /// `join`); any other name by the one definition in the family.
    pub fn resolve(&self, r: &mut RefRecord, p: &Pending) {
        if let Some(s) = &r.scip_symbol {
            r.target_symbol_id = trove_bundle::resolution::scip_key(s)
                .and_then(|k| self.by_scip.get(&k))
                .filter(|(n, _)| *n == 1)
                .map(|x| x.1);
            r.resolution = Some(Resolution::Scip);
            return;
        }
        let Some(class) = Class::of(r.kind) else {
            return;
        };
        if let Some(ty) = &p.member_of {
            if let Some(id) = self.member(&p.family, ty, &r.target) {
                r.target_symbol_id = Some(id);
                r.resolution = Some(Resolution::Repo);
                return;
            }
            if !p.method {
                r.target_symbol_id = None;
                r.resolution = None;
                return;
            }
        }
        let class = if p.method { Class::Method } else { class };
        let (id, how) = match &p.import {
            Some((imported, named)) => {
                let mut files: Vec<String> = Vec::with_capacity(named.len());
                for f in named {
                    if let Some(import) = f.strip_prefix("go:") {
                        files.extend(go_package(import, &self.go_modules));
                    } else if let Some(spec) = f.strip_prefix("ts:") {
                        files.extend(ts_alias(spec, &self.ts_modules));
                    } else if let Some(ns) = f.strip_prefix("ns:") {
                        files.extend(self.namespaces.get(ns).into_iter().flatten().cloned());
                    } else {
                        files.push(f.clone());
                    }
                }
                files.sort_unstable();
                files.dedup();
                let found: Vec<&(u32, i64)> = files
                    .iter()
                    .filter_map(|file| self.by_file.get(&FileKey::new(class, file, imported)))
                    .collect();
                let (again, named_there) = match found.as_slice() {
                    [] => self.through_reexports(class, &files, imported),
                    _ => (Vec::new(), false),
                };
                let id = match found.as_slice() {
                    [(1, id)] => Some(*id),
                    // The module is in the bundle but does not define the name: it imports
                    // it (`from .app import Flask` in a package's `__init__.py`, `export *
                    // from "./types"`): the one definition where that import says.
                    // (The same definition reached twice, `export *` and `export { x }` from one
                    // module, is one.)
                    [] if !again.is_empty() => {
                        let first = again[0];
                        again
                            .iter()
                            .all(|x| x.0 == 1 && x.1 == first.1)
                            .then_some(first.1)
                    }
                    // From outside the bundle (`from markupsafe import escape`): nowhere.
                    [] if named_there => None,
                    // Neither: the one definition of the name in the family.
                    // (A package does not for a call: Go's `max()` not in its package is the
                    // builtin, not another package's.)
                    [] if files.iter().any(|f| {
                        f == ANYWHERE
                            || (self.def_files.contains(f)
                                && !(class == Class::Callable && is_package(f)))
                    }) =>
                    {
                        self.by_name
                            .get(&NameKey {
                                class,
                                family: p.family.clone(),
                                name: imported.clone(),
                            })
                            .filter(|(n, _)| *n == 1)
                            .map(|(_, id)| *id)
                    }
                    _ => None,
                };
                (id, Resolution::Import)
            }
            None => {
                let key = NameKey {
                    class,
                    family: p.family.clone(),
                    name: r.target.clone(),
                };
                let id = self
                    .by_name
                    .get(&key)
                    .filter(|(n, _)| *n == 1)
                    .map(|(_, id)| *id)
                    // `baseArgs.optString(i)` inside `optString`: a wrapper handing the call
                    // to another object, not a method calling itself on one; a base type named
                    // as the type itself is another module's.
                    .filter(|&id| {
                        let base = matches!(r.kind, RefKind::Inherits | RefKind::Implements);
                        !((p.method || base) && r.from_symbol_id == Some(id))
                    });
                (id, Resolution::Repo)
            }
        };
        r.target_symbol_id = id;
        r.resolution = id.map(|_| how);
    }
}

/// A file's imports, calls and base types with the definition and chunk each occurs in; a
/// reference whose name is one definition of this file (of a kind it can land on) resolves to
/// it here (`file`). A call on a receiver resolves by what the receiver is (`lang`'s
/// `self_receivers`, `named_receivers`): on `self`/`this`, to the one method of that name beside
/// the calling one, else (later) in the holder's one base type ([`Scope::Typed`]), as `super`'s
/// calls; on a type of this file (`T::new()`), to that type's method, else (later) to its one
/// base type's (`class Index1(View)`, `Index1.as_view()`); on a name that
/// may be an imported module, later, in that module ([`Scope::Module`]); on anything else, not
/// at all ([`Scope::Closed`]: a guess by name is wrong more often than right). The rest are
/// resolved when the bundle is written ([`Definitions`]).
pub fn in_file(
    path: &str,
    refs: Vec<Reference>,
    symbols: &[SymbolRecord],
    chunks: &[ChunkRecord],
    lang: Option<&LanguageFile>,
    text: &str,
) -> Vec<RefRecord> {
    // Definitions by (start, index) and by (name, index): each ref looks up its enclosing
    // definition and its same-named ones instead of scanning them all.
    let mut by_start: Vec<usize> = (0..symbols.len()).collect();
    by_start.sort_unstable_by_key(|&i| (symbols[i].symbol.start_byte, i));
    // (An overload set's later definitions are no targets: [`counted`].)
    let targets = counted(lang.map(|l| l.id.as_str()), symbols);
    let mut by_name: Vec<usize> = (0..symbols.len()).filter(|&i| targets[i]).collect();
    by_name.sort_unstable_by(|&a, &b| {
        (symbols[a].symbol.name.as_str(), a).cmp(&(symbols[b].symbol.name.as_str(), b))
    });
    let by_id: FxHashMap<i64, usize> = symbols
        .iter()
        .enumerate()
        .map(|(i, s)| (s.symbol_id, i))
        .collect();
    // The definitions from `id` outward: it, the one holding it, and so on.
    let up = {
        let by_id = &by_id;
        move |id: Option<i64>| {
            let at = move |id: Option<i64>| id.and_then(|i| by_id.get(&i)).map(|&i| &symbols[i]);
            std::iter::successors(at(id), move |s: &&SymbolRecord| at(s.parent_id))
        }
    };
    // The innermost definition holding byte `at`: the latest start at or before it whose end is
    // past it (the last such in `symbols` order on equal starts, as `max_by_key`).
    let enclosing = |at: usize| {
        let before = by_start.partition_point(|&i| symbols[i].symbol.start_byte <= at);
        by_start[..before]
            .iter()
            .rev()
            .find(|&&i| at < symbols[i].symbol.end_byte)
            .map(|&i| symbols[i].symbol_id)
    };
    let need_receiver = lang.is_some_and(|l| l.methods_need_receiver);
    // The names the file's imports bind (a module, or a name of one); read when first asked.
    let import_statements: Vec<String> = refs
        .iter()
        .filter(|r| r.kind == RefKind::Import)
        .map(|r| r.target.clone())
        .collect();
    let imported: std::cell::OnceCell<rustc_hash::FxHashSet<String>> = Default::default();
    let imported = |x: &str| {
        imported
            .get_or_init(|| {
                let id = lang.map(|l| l.id.as_str());
                let statements: Vec<&str> = import_statements.iter().map(String::as_str).collect();
                let aliases = crate::extract::imports::module_aliases(path, id, &statements);
                let names = crate::extract::imports::import_map(path, id, &statements);
                aliases.into_keys().chain(names.into_keys()).collect()
            })
            .contains(x)
    };
    // A call on an object: by name across files, unless the standard library shares the name.
    let on_object = |name: &str| {
        if lang.is_some_and(|l| l.common_methods.iter().any(|m| m == name)) {
            Scope::Closed
        } else {
            Scope::Method
        }
    };
    let named = |name: &str| {
        let lo = by_name.partition_point(|&i| symbols[i].symbol.name.as_str() < name);
        let hi = lo + by_name[lo..].partition_point(|&i| symbols[i].symbol.name == name);
        by_name[lo..hi].iter().map(|&i| &symbols[i])
    };
    let one = |mut it: Box<dyn Iterator<Item = &SymbolRecord> + '_>| match (it.next(), it.next()) {
        (Some(s), None) => Some(s.symbol_id),
        _ => None,
    };
    // The definition holding the members beside `id`'s code: the first enclosing definition
    // (from `id` itself) that is not a function or method.
    let holder = |id: Option<i64>| {
        up(id)
            .find(|s| !CODE_KINDS.contains(&s.symbol.kind.as_str()))
            .map(|s| s.symbol_id)
    };
    // The base types each definition names (`class A extends B`, `class A(B)`), by the
    // definition's id: what `super.f()` and an inherited `this.f()` are looked up in.
    let bases: FxHashMap<i64, Vec<String>> = {
        let mut m: FxHashMap<i64, Vec<String>> = FxHashMap::default();
        for r in refs.iter().filter(|r| r.kind == RefKind::Inherits) {
            if let Some(id) = enclosing(r.start_byte) {
                m.entry(id).or_default().push(r.target.clone());
            }
        }
        m
    };
    // Its one base, when that is a name to follow and not the definition's own.
    let one_base = |id: Option<i64>| {
        let id = id?;
        match bases.get(&id).map(Vec::as_slice) {
            Some([b])
                if is_base_name(b)
                    && by_id
                        .get(&id)
                        .is_some_and(|&i| &symbols[i].symbol.name != b) =>
            {
                Some(b.clone())
            }
            _ => None,
        }
    };
    // A member `name` that `h` does not define itself: in its one base type (or that type's
    // bases), else, when the call is one on an object, the one method of the name.
    let inherited = |h: Option<i64>, name: &str| {
        one_base(h).map(|b| Scope::Typed(b, on_object(name) == Scope::Method))
    };
    // A callable named `name` defined directly in a function or method around `from` (itself
    // included), the innermost such: `Some(its id)`, `Some(None)` when that function defines
    // two, `None` when none does.
    let nested = |from: Option<i64>, name: &str| {
        up(from)
            .filter(|s| CODE_KINDS.contains(&s.symbol.kind.as_str()))
            .find_map(|s| {
                let mut it = named(name).filter(|c| {
                    c.parent_id == Some(s.symbol_id)
                        && CALLABLE_KINDS.contains(&c.symbol.kind.as_str())
                });
                match (it.next(), it.next()) {
                    (Some(c), None) => Some(Some(c.symbol_id)),
                    (Some(_), Some(_)) => Some(None),
                    _ => None,
                }
            })
    };
    // The receiver name in the signature of the method holding `id` (Go: `func (s *T) F()`).
    let receiver_of = |id: Option<i64>| {
        let rest = up(id).find_map(|s| s.symbol.signature.as_deref()?.strip_prefix("func ("))?;
        rest.split([' ', ')']).next().map(str::to_string)
    };
    // The type the code around a call declares for `x`: a parameter of an enclosing function
    // (`app: Flask`, `Engine e`, `c *Command`), else its last `x = Type(...)` in that function
    // (each function's text read once per name).
    let known: std::cell::RefCell<FxHashMap<(i64, String), Option<String>>> = Default::default();
    let jsdoc = lang.is_some_and(|l| l.jsdoc_types);
    // What the file's one callable named `name` returns: its signature's `): T` / `-> T`, else
    // its JSDoc `@returns {T}`.
    let returns = |name: &str| -> Option<String> {
        let mut it = named(name).filter(|s| CALLABLE_KINDS.contains(&s.symbol.kind.as_str()));
        let (Some(s), None) = (it.next(), it.next()) else {
            return None;
        };
        let sig = s.symbol.signature.as_deref().unwrap_or("");
        let declared = sig.rfind(')').and_then(|at| {
            let after = sig[at + 1..].trim_start();
            let t = after
                .strip_prefix("->")
                .or_else(|| after.strip_prefix(':'))?;
            type_name(t)
        });
        declared
            .or_else(|| {
                jsdoc
                    .then(|| jsdoc_type(text, s.symbol.start_byte, &["@returns", "@return"], None))
                    .flatten()
            })
            .filter(|t| t.chars().next().is_some_and(char::is_uppercase))
    };
    // The type function `f` declares for its parameter `x`: in its signature, else (JavaScript)
    // its JSDoc `@param {T} x`.
    let param_type = |f: &SymbolRecord, x: &str| {
        f.symbol
            .signature
            .as_deref()
            .and_then(|sig| declared_type(sig, x))
            .or_else(|| {
                jsdoc
                    .then(|| jsdoc_param(text, f.symbol.start_byte, x))
                    .flatten()
            })
    };
    // `self.x = x` in a method of `h` whose parameter `x` declares its type (a constructor
    // keeping what it is given: `def __init__(self, serializer: TaggedJSONSerializer)`), the
    // type when every such assignment agrees.
    let from_parameter = |h: &SymbolRecord, body: &str, field: &str| {
        let mut found: Option<String> = None;
        for i in word_at(body, field) {
            let Some(rhs) = body[i + field.len()..]
                .trim_start_matches([' ', '\t'])
                .strip_prefix('=')
                .filter(|r| !r.starts_with('='))
            else {
                continue;
            };
            let rhs = rhs.trim_start_matches([' ', '\t']);
            let end = rhs.find(|c: char| !is_ident(c)).unwrap_or(rhs.len());
            let (y, rest) = rhs.split_at(end);
            // The whole right-hand side (to the line's end, `;`, or the end of the class).
            let rest = rest.trim_start_matches([' ', '\t']);
            if y.is_empty() || !(rest.is_empty() || rest.starts_with(['\n', '\r', ';'])) {
                continue;
            }
            // (The method of `h` the assignment is in.)
            let method = up(enclosing(h.symbol.start_byte + i)).find(|s| {
                s.parent_id == Some(h.symbol_id) && CODE_KINDS.contains(&s.symbol.kind.as_str())
            });
            let ty = method.and_then(|m| param_type(m, y))?;
            if found.as_ref().is_some_and(|f| *f != ty) {
                return None;
            }
            found = Some(ty);
        }
        found
    };
    // A field of the type `h`: `T x;` / `x: T` in its body, or `self.x = T(...)` /
    // `this.x = new T()` / `self.x = x` of a typed parameter in its methods.
    let own_field = |h: &SymbolRecord, x: &str| {
        known
            .borrow_mut()
            .entry((h.symbol_id, format!("field {x}")))
            .or_insert_with(|| {
                let body = text.get(h.symbol.start_byte..h.symbol.end_byte)?;
                field_type(body, x).or_else(|| {
                    lang.and_then(|l| {
                        l.self_receivers.iter().find_map(|s| {
                            let field = format!("{s}.{x}");
                            assigned_type(body, &field, &returns)
                                .or_else(|| from_parameter(h, body, &field))
                        })
                    })
                })
            })
            .clone()
    };
    // (Or of the base type it inherits the field from, when the file defines that base:
    // `class TagDict(JSONTag)` reads the `self.serializer` JSONTag's `__init__` sets.)
    let field_of = |from: Option<i64>, x: &str| {
        let mut h = holder(from)
            .and_then(|h| by_id.get(&h))
            .map(|&i| &symbols[i])?;
        let mut seen = vec![h.symbol_id];
        loop {
            if let Some(t) = own_field(h, x) {
                return Some(t);
            }
            let b = one_base(Some(h.symbol_id))?;
            let mut it = named(&b).filter(|s| TYPE_KINDS.contains(&s.symbol.kind.as_str()));
            let (Some(base), None) = (it.next(), it.next()) else {
                return None;
            };
            if seen.contains(&base.symbol_id) || seen.len() > MAX_BASES {
                return None;
            }
            seen.push(base.symbol_id);
            h = base;
        }
    };
    // The file's own statements, outside its definitions (each top-level function, class and
    // the like blanked, its lines kept): where a module-level `app = Flask(...)` is.
    let module_text: std::cell::OnceCell<String> = std::cell::OnceCell::new();
    let module_text = || {
        module_text.get_or_init(|| {
            let mut t = text.as_bytes().to_vec();
            for s in symbols.iter().filter(|s| {
                s.parent_id.is_none()
                    && (CODE_KINDS.contains(&s.symbol.kind.as_str())
                        || TYPE_KINDS.contains(&s.symbol.kind.as_str()))
            }) {
                let end = s.symbol.end_byte.min(t.len());
                for b in &mut t[s.symbol.start_byte.min(end)..end] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
            }
            // Whole characters blanked: still UTF-8 (a definition's span is whole characters).
            String::from_utf8(t).unwrap_or_default()
        })
    };
    let module_known: std::cell::RefCell<FxHashMap<String, Option<String>>> = Default::default();
    let type_of = |from: Option<i64>, x: &str, bound: bool| {
        for s in up(from).take_while(|s| CODE_KINDS.contains(&s.symbol.kind.as_str())) {
            let t = known
                .borrow_mut()
                .entry((s.symbol_id, x.to_string()))
                .or_insert_with(|| {
                    param_type(s, x).or_else(|| {
                        text.get(s.symbol.start_byte..s.symbol.end_byte)
                            .and_then(|b| assigned_type(b, x, &returns))
                    })
                })
                .clone();
            if t.is_some() {
                return t;
            }
        }
        // Else, where no function around the call binds it, the module's variable
        // (`bp = Blueprint(...)` at the top of the file, `@bp.get(...)` in it).
        if !bound
            && let Some(t) = module_known
                .borrow_mut()
                .entry(x.to_string())
                .or_insert_with(|| assigned_type(module_text(), x, &returns))
                .clone()
        {
            return Some(t);
        }
        // Else a field of the holder by its bare name (`db.query()` in a Java method, or a
        // local named as the field it was read from: `const lists = this.lists`) — unless the
        // file imports the name: `from . import cli` makes `cli.load_dotenv()` the module's,
        // whatever `self.cli` holds.
        if imported(x) { None } else { field_of(from, x) }
    };
    refs.into_iter()
        .map(|r| {
            let at = r.start_byte;
            let from = enclosing(at);
            let chunk_id = chunk_at(chunks, at);
            let kinds = target_kinds(r.kind);
            let of_kinds = |s: &&SymbolRecord| kinds.contains(&s.symbol.kind.as_str());
            let (target_symbol_id, scope) = match (r.kind, r.receiver.as_deref()) {
                (RefKind::Call, Some(recv)) => {
                    let selfish = lang.is_some_and(|l| {
                        l.self_receivers.iter().any(|s| s == recv)
                            || (l.named_receivers && receiver_of(from).as_deref() == Some(recv))
                    });
                    if recv == "super" && !r.path_call {
                        // The base type's method: the holder's one base type's member (or its
                        // bases'); with several bases, which one defines it is a type checker's.
                        match one_base(holder(from)) {
                            Some(b) => (None, Scope::Typed(b, false)),
                            None => (None, Scope::Closed),
                        }
                    } else if recv.starts_with("super.") && !r.path_call {
                        (None, Scope::Closed)
                    } else if selfish {
                        let h = holder(from);
                        let id = h.and_then(|h| {
                            one(Box::new(
                                named(&r.target)
                                    .filter(of_kinds)
                                    .filter(move |s| s.parent_id == Some(h)),
                            ))
                        });
                        // Not beside it: inherited, from the holder's one base type (or its
                        // bases) when it has one, else a method all the same.
                        match id {
                            Some(_) => (id, Scope::Closed),
                            None => (
                                None,
                                inherited(h, &r.target).unwrap_or_else(|| on_object(&r.target)),
                            ),
                        }
                    } else if recv
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
                    {
                        // `T::new()`, `T.create()` on a type this file defines; else, perhaps,
                        // a module.
                        let ty = one(Box::new(
                            named(recv).filter(|s| TYPE_KINDS.contains(&s.symbol.kind.as_str())),
                        ));
                        match ty {
                            Some(t) => {
                                let members = |s: &&SymbolRecord| {
                                    s.parent_id == Some(t)
                                        || s.parent_id.and_then(|p| by_id.get(&p)).is_some_and(
                                            |&p| {
                                                symbols[p].symbol.name == recv
                                                    && symbols[p].symbol.kind == "impl"
                                            },
                                        )
                                };
                                let mut own = named(&r.target).filter(of_kinds).filter(members);
                                match (own.next(), own.next()) {
                                    (Some(s), None) => (Some(s.symbol_id), Scope::Closed),
                                    (Some(_), Some(_)) => (None, Scope::Closed),
                                    // Not its own: inherited (`class Index1(View)`,
                                    // `Index1.as_view()`), from its one base type (or its bases)
                                    // as for an inherited `self.f()`; a method all the same when
                                    // it has several; nowhere when it names no base.
                                    (None, _) => (
                                        None,
                                        inherited(Some(t), &r.target).unwrap_or_else(|| {
                                            if bases.contains_key(&t) {
                                                on_object(&r.target)
                                            } else {
                                                Scope::Closed
                                            }
                                        }),
                                    ),
                                }
                            }
                            // Not the file's method by name, even when it defines one: measured
                            // on commander and rxjs, `option.name()` lands on another type's
                            // `name` as often as on the file's (see scripts/bench-refs.sh).
                            // `serde_json::from_str()`, `Regex::builder()`: a path names a module
                            // or a type, never an object.
                            // A type's (`Glob::new()`: its one member of the name, else nowhere)
                            // or a module's (`pathutil::f()`, when a `use` names it).
                            None if r.path_call => (None, path_scope(recv)),
                            None => {
                                let or_method = on_object(&r.target) == Scope::Method;
                                match type_of(from, recv, r.receiver_bound) {
                                    Some(t) => (None, Scope::Typed(t, or_method)),
                                    None => (None, Scope::Module(recv.to_string(), or_method)),
                                }
                            }
                        }
                    } else if r.path_call {
                        (None, path_scope(recv))
                    } else {
                        // `self.db.query()`: a field of the holder whose type it declares.
                        let field = lang.and_then(|l| {
                            l.self_receivers.iter().find_map(|s| {
                                recv.strip_prefix(s.as_str())?
                                    .strip_prefix('.')
                                    .filter(|f| f.chars().all(is_ident))
                            })
                        });
                        let or_method = on_object(&r.target) == Scope::Method;
                        match field.and_then(|f| field_of(from, f)) {
                            Some(t) => (None, Scope::Typed(t, or_method)),
                            // `flask.helpers.make_response()`: in a module's submodule when
                            // `flask` is an imported module, else a call on an object.
                            None if field.is_none()
                                && !r.chained
                                && recv
                                    .split('.')
                                    .all(|p| !p.is_empty() && p.chars().all(is_ident)) =>
                            {
                                (None, Scope::Module(recv.to_string(), or_method))
                            }
                            None => (None, on_object(&r.target)),
                        }
                    }
                }
                // A function defined in an enclosing function (`def test(): def index(): ..;
                // index()`): the innermost one's, however many the file has elsewhere.
                (RefKind::Call, None) if let Some(id) = nested(from, &r.target) => {
                    (id, Scope::Closed)
                }
                // A value the function binds (`def f(load): load(x)`): nothing the bundle defines.
                (RefKind::Call, None) if r.local => (None, Scope::Closed),
                _ => {
                    let bare_call = r.kind == RefKind::Call;
                    // A base type named as the type itself is another module's
                    // (`class EnvironBuilder(werkzeug.test.EnvironBuilder)`).
                    let base = matches!(r.kind, RefKind::Inherits | RefKind::Implements);
                    let id = one(Box::new(named(&r.target).filter(of_kinds).filter(|s| {
                        let method = bare_call && need_receiver && s.symbol.kind == "method";
                        let itself = base && Some(s.symbol_id) == from;
                        !(method || itself)
                    })));
                    (id, Scope::Open)
                }
            };
            RefRecord {
                line: r.line,
                kind: r.kind,
                target: r.target,
                from_symbol_id: from,
                chunk_id,
                resolution: target_symbol_id.map(|_| Resolution::File),
                target_symbol_id,
                scip_symbol: None,
                exports: None,
                scope,
            }
        })
        .collect()
}

/// The ids of `symbols` (one file's) defined inside a function or method, however deep
/// (`def test(): class Index: def head()`, a closure assigned in a function body).
pub fn local_definitions(symbols: &[SymbolRecord]) -> rustc_hash::FxHashSet<i64> {
    let by_id: FxHashMap<i64, &SymbolRecord> = symbols.iter().map(|s| (s.symbol_id, s)).collect();
    symbols
        .iter()
        .filter(|s| {
            let mut up = s.parent_id;
            // Bounded by the file's definitions, so a cycle in bad input cannot hang.
            for _ in 0..symbols.len() {
                let Some(p) = up.and_then(|p| by_id.get(&p)) else {
                    return false;
                };
                if CODE_KINDS.contains(&p.symbol.kind.as_str()) {
                    return true;
                }
                up = p.parent_id;
            }
            false
        })
        .map(|s| s.symbol_id)
        .collect()
}

/// The files of the submodule `rest` (`a.b`) of a Python module whose files are `files`
/// (`flask.py` or `flask/__init__.py`, ...): `flask/a/b.py`, `flask/a/b/__init__.py`, ...
fn py_submodule_files(files: &[String], rest: &str) -> Vec<String> {
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

/// Where a call on the path `recv` (`Glob::new`, `crate::glob::Glob::new`, `pathutil::f`) can
/// land: a type by its capital (its one member of the name), else the module the path names
/// ([`Scope::Path`]).
fn path_scope(recv: &str) -> Scope {
    let last = recv.rsplit("::").next().unwrap_or(recv);
    if last.starts_with(|c: char| c.is_uppercase()) && last.chars().all(is_ident) {
        Scope::Typed(last.to_string(), false)
    } else if recv
        .split("::")
        .all(|s| !s.is_empty() && s.chars().all(is_ident))
    {
        Scope::Path(recv.to_string())
    } else {
        Scope::Closed
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The start of every occurrence of the identifier `x` in `s` (not inside a longer one).
fn word_at<'a>(s: &'a str, x: &'a str) -> impl Iterator<Item = usize> + 'a {
    s.match_indices(x).map(|(i, _)| i).filter(move |&i| {
        !s[..i].chars().next_back().is_some_and(is_ident)
            && !s[i + x.len()..].chars().next().is_some_and(is_ident)
    })
}

/// A type name at the start of `s` (`Flask`, `flask.Flask`, `&mut Engine`, `*Command`,
/// `"Flask"`): its last segment, without generic arguments.
fn type_name(s: &str) -> Option<String> {
    let mut s = s.trim_start();
    for p in ["&", "'", "mut ", "dyn ", "impl ", "*", "\"", "?"] {
        let Some(rest) = s.strip_prefix(p) else {
            continue;
        };
        s = rest.trim_start();
        // `&'a mut T`: past the lifetime's name.
        if p == "'" && s.starts_with(|c: char| c.is_alphabetic()) {
            let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
            if s[end..].starts_with(' ') {
                s = s[end..].trim_start();
            }
        }
    }
    let end = s
        .find(|c: char| !(is_ident(c) || c == '.' || c == ':'))
        .unwrap_or(s.len());
    let path = s[..end].trim_end_matches([':', '.']);
    let last = path.rsplit(['.', ':']).next()?;
    (last
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_'))
    .then(|| last.to_string())
}

/// The last word of `s` (which ends where a declared name starts, trimmed), past generic arguments
/// and `[]`: the type of `List<String> xs`, `Engine[] es`, `a.b.Engine e`.
fn type_word_before(s: &str) -> &str {
    let b = s.trim_end_matches("[]");
    let b = match b.strip_suffix('>') {
        Some(g) => g.rfind('<').map_or(g, |o| &g[..o]),
        None => b,
    };
    let start = b
        .char_indices()
        .rfind(|&(_, c)| !(is_ident(c) || c == '.'))
        .map_or(0, |(k, c)| k + c.len_utf8());
    &b[start..]
}

/// The type a signature declares for the parameter `x`: `x: T` (Python, TypeScript, Rust,
/// Kotlin, Swift), `T x` (Java, C#, C), `x *T` / `x T` (Go).
fn declared_type(sig: &str, x: &str) -> Option<String> {
    let params = &sig[sig.find('(')?..];
    for i in word_at(params, x) {
        let after = params[i + x.len()..].trim_start();
        let after = after.strip_prefix('?').unwrap_or(after).trim_start();
        if let Some(t) = after.strip_prefix(':')
            && !t.starts_with(':')
        {
            return type_name(t);
        }
        let before = params[..i].trim_end();
        if after.starts_with([',', ')', '=']) && !before.ends_with(['(', ',']) {
            // `T x` (Java).
            let word = type_word_before(before);
            if word.chars().next().is_some_and(char::is_uppercase) {
                return type_name(word);
            }
        }
        if let Some(t) = after.strip_prefix('*').or(Some(after))
            && t.chars().next().is_some_and(char::is_uppercase)
            && before.ends_with(['(', ','])
        {
            // `c *Command` (Go).
            return type_name(t);
        }
    }
    None
}

/// The type a JSDoc comment right before `start` (blank lines between allowed) declares for the
/// parameter `x`: `@param {Help} helper`, `@param {Option} [option]`; a union with `null` or
/// `undefined` is its one other member. Other unions, generics and arrays declare nothing.
fn jsdoc_param(text: &str, start: usize, x: &str) -> Option<String> {
    jsdoc_type(text, start, &["@param"], Some(x))
}

/// The type of the JSDoc tags `tags` right before `start`: of the one naming `x`, or (`None`) the
/// first (`@returns {Help}`). As [`jsdoc_param`] reads it.
fn jsdoc_type(text: &str, start: usize, tags: &[&str], x: Option<&str>) -> Option<String> {
    let before = text.get(..start)?.trim_end();
    let body = before.strip_suffix("*/")?;
    let open = body.rfind("/**")?;
    let doc = &body[open + 3..];
    if doc.contains("*/") {
        return None;
    }
    let parts = tags.iter().flat_map(|t| doc.split(t).skip(1));
    for tag in parts {
        let tag = tag.trim_start();
        let Some(rest) = tag.strip_prefix('{') else {
            continue;
        };
        let Some((ty, after)) = rest.split_once('}') else {
            continue;
        };
        let name = after
            .trim_start()
            .trim_start_matches('[')
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .next()
            .unwrap_or("");
        if x.is_some_and(|x| name != x) {
            continue;
        }
        let mut members = ty
            .split('|')
            .map(str::trim)
            .filter(|t| !matches!(*t, "null" | "undefined" | ""));
        let (Some(one), None) = (members.next(), members.next()) else {
            return None;
        };
        let one = one.trim_start_matches('?');
        let ok = one.chars().next().is_some_and(char::is_uppercase)
            && one
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.');
        return ok.then(|| one.rsplit('.').next().unwrap_or(one).to_string());
    }
    None
}

/// The type a type's body declares for its field `x`: `T x;` / `T x =` (Java, C#), `x: T`
/// (TypeScript, Kotlin, Python class annotations), `x *T` (Go struct fields).
fn field_type(body: &str, x: &str) -> Option<String> {
    let mut found: Option<String> = None;
    for i in word_at(body, x) {
        let line_before = body[..i].rsplit('\n').next().unwrap_or("");
        let after = body[i + x.len()..].trim_start();
        let ty = if let Some(t) = after
            .strip_prefix(['?', '!'])
            .unwrap_or(after)
            .strip_prefix(':')
        {
            // `private x: T;`: modifiers, or nothing, before it on its line.
            let words_ok = line_before.split_whitespace().all(|w| {
                matches!(
                    w,
                    "private"
                        | "public"
                        | "protected"
                        | "readonly"
                        | "static"
                        | "val"
                        | "var"
                        | "let"
                        | "lateinit"
                        | "internal"
                        | "override"
                        | "declare"
                )
            });
            (words_ok && !t.starts_with([':', '=']))
                .then(|| type_name(t))
                .flatten()
        } else if after.starts_with([';', '=']) && !after.starts_with("==") {
            // `private final T x;`.
            type_name(type_word_before(line_before.trim_end()))
        } else if line_before.trim().is_empty() && after.starts_with(['*']) {
            // Go: `db *Store`.
            type_name(after)
        } else {
            None
        };
        if let Some(t) = ty.filter(|t| t.chars().next().is_some_and(char::is_uppercase)) {
            if found.as_ref().is_some_and(|f| *f != t) {
                return None;
            }
            found = Some(t);
        }
    }
    found
}

/// The type of the last `x = T(...)` / `x = new T(...)` / `x := T{...}` / `T x = ...` in `body`
/// (a constructor by its capital).
fn assigned_type(body: &str, x: &str, returns: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut found: Option<String> = None;
    let mut agree = true;
    let mut note = |ty: String| {
        if found.as_ref().is_some_and(|f| *f != ty) {
            agree = false;
        }
        found = Some(ty);
    };
    for i in word_at(body, x) {
        let after = body[i + x.len()..].trim_start();
        // `x: T = ...` declares it (a declaration: first on its line, or after `let`/`const`...,
        // not an object literal's key).
        let line_before = body[..i].rsplit('\n').next().unwrap_or("").trim();
        // (Or a parameter of a function inside, an arrow's: `(subscriber: Subscriber<T>) =>`.)
        let declares = line_before.is_empty()
            || line_before.ends_with('(')
            || ["let", "const", "var", "val", "mut"]
                .iter()
                .any(|k| line_before.ends_with(k));
        if let Some(t) = after.strip_prefix(':')
            && declares
            && !t.starts_with([':', '='])
            && let Some(ty) = type_name(t)
            && ty.chars().next().is_some_and(char::is_uppercase)
        {
            note(ty);
            continue;
        }
        let Some(rhs) = after
            .strip_prefix(":=")
            .or_else(|| after.strip_prefix('=').filter(|r| !r.starts_with('=')))
        else {
            continue;
        };
        let rhs = rhs.trim_start();
        let rhs = rhs.strip_prefix("new ").unwrap_or(rhs).trim_start();
        let rhs = rhs.strip_prefix('&').unwrap_or(rhs);
        let end = rhs
            .find(|c: char| !(is_ident(c) || c == '.' || c == ':'))
            .unwrap_or(rhs.len());
        if rhs[end..].starts_with(['(', '{', '<'])
            && let Some(ty) = type_name(&rhs[..end])
        {
            if ty.chars().next().is_some_and(char::is_uppercase) {
                note(ty);
            } else if rhs[end..].starts_with('(')
                && let Some(ret) = returns(&ty)
            {
                // `helper = this.createHelp()`: what the file's one `createHelp` returns.
                note(ret);
            }
        }
    }
    // Assigned two types: which one a call sees is the flow's to say.
    if agree { found } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The base names the member lookup follows are one identifier, in Rust and in SQL alike.
    #[test]
    fn base_names_are_one_plain_identifier() {
        for ok in ["Subject", "_Base", "$Mixin", "A1"] {
            assert!(is_base_name(ok), "{ok}");
        }
        for no in ["", "1A", "pkg.Base", "Base<T>", "mixin(B)", "Bäse", "a b"] {
            assert!(!is_base_name(no), "{no}");
        }
        let conn = duckdb::Connection::open_in_memory().unwrap();
        for s in [
            "Subject", "_Base", "$Mixin", "A1", "", "1A", "pkg.Base", "Base<T>", "Bäse",
        ] {
            let sql: bool = conn
                .query_row(
                    "SELECT regexp_full_match(?, ?)",
                    duckdb::params![s, BASE_NAME_RE],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(sql, is_base_name(s), "{s}");
        }
    }

    #[test]
    fn the_types_code_declares_for_a_name() {
        // JSDoc above a function, a blank line between allowed.
        let js = "/**\n * Pad.\n * @param {Command} cmd\n * @param {Help|undefined} [helper]\n * @param {string|number} w\n */\n\n";
        let at = js.len();
        let src = format!("{js}padWidth(cmd, helper, w) {{}}");
        let j = |x: &str| jsdoc_param(&src, at, x);
        assert_eq!(j("cmd").as_deref(), Some("Command"));
        assert_eq!(j("helper").as_deref(), Some("Help"));
        assert_eq!(j("w"), None, "a union of two types names neither");
        assert_eq!(j("other"), None);
        assert_eq!(jsdoc_param("/* not jsdoc */ f(a) {}", 16, "a"), None);
        let d = |sig: &str, x: &str| declared_type(sig, x);
        assert_eq!(d("def f(app: Flask, n):", "app").as_deref(), Some("Flask"));
        assert_eq!(
            d("def f(app: \"flask.Flask\"):", "app").as_deref(),
            Some("Flask")
        );
        assert_eq!(
            d("function f(s: Subscriber<T>, o?: Observer<T>)", "o").as_deref(),
            Some("Observer")
        );
        assert_eq!(d("fn f(&self, g: &mut Glob)", "g").as_deref(), Some("Glob"));
        assert_eq!(
            d(
                "public void f(CordovaWebViewEngine engine, List<String> xs)",
                "engine"
            )
            .as_deref(),
            Some("CordovaWebViewEngine")
        );
        assert_eq!(d("public void f(Map<K, V> m)", "m").as_deref(), Some("Map"));
        assert_eq!(
            d("func (s *Server) Run(c *Command, n int)", "c").as_deref(),
            Some("Command")
        );
        assert_eq!(d("def f(n):", "n"), None);
        assert_eq!(
            d("def f(appx: Flask):", "app"),
            None,
            "a longer name is another name"
        );
        let a = |body: &str, x: &str| assigned_type(body, x, &|_| None);
        assert_eq!(
            a("app = Flask(__name__)\napp.run()", "app").as_deref(),
            Some("Flask")
        );
        assert_eq!(
            a("const s = new Subscriber(o);", "s").as_deref(),
            Some("Subscriber")
        );
        assert_eq!(
            a("c := Command{Use: \"x\"}", "c").as_deref(),
            Some("Command")
        );
        assert_eq!(a("let g: Glob = make();", "g").as_deref(), Some("Glob"));
        assert_eq!(
            a("x = make()\nx == Foo()", "x"),
            None,
            "a call, and a comparison"
        );
        assert_eq!(
            a("app = Flask()\napp.run()\napp = Other()", "app"),
            None,
            "two types"
        );
        let f = |body: &str, x: &str| field_type(body, x);
        assert_eq!(
            f(
                "class A {\n  protected final CordovaWebViewEngine engine;\n}",
                "engine"
            )
            .as_deref(),
            Some("CordovaWebViewEngine")
        );
        assert_eq!(
            f("class A {\n  private store: Store;\n}", "store").as_deref(),
            Some("Store")
        );
        assert_eq!(
            f("type S struct {\n\tdb *Store\n}", "db").as_deref(),
            Some("Store")
        );
        assert_eq!(f("Foo x;\nBar x;", "x"), None, "declared two ways");
        assert_eq!(f("if (x == y) { x = 1; }", "x"), None);
        assert_eq!(
            a("def __init__(self):\n    self.db = Database()\n", "self.db").as_deref(),
            Some("Database")
        );
        assert_eq!(
            a("f({engine: Engine})", "engine"),
            None,
            "an object literal's key"
        );
        assert_eq!(d("fn f(g: &'a mut Glob)", "g").as_deref(), Some("Glob"));
        assert_eq!(
            d("void f(\u{20ac}Engine e)", "e").as_deref(),
            Some("Engine"),
            "past a multibyte character, without a panic"
        );
    }
}
