//! The bundle's definitions, counted as the writer sees each file ([`Definitions`]): by name per
//! family, by file and package, as members of their types, by SCIP symbol; with the modules,
//! namespaces, path aliases and re-exports the bundle declares. What they resolve is
//! `in_bundle`'s.
use rustc_hash::FxHashMap;
use trove_bundle::resolution::{
    CALLABLE_KINDS, Class, TYPE_KINDS, is_declaration_file, language_family,
};

use super::candidates::package_key;
use super::keys::{FileKey, NameKey};
use super::targets::{counted, local_definitions};
use crate::record::SymbolRecord;

/// A name a file takes from a module: (its name there, the module's candidate files).
type Reexport = (String, Vec<String>);

/// A base type ([`Definitions::add_base`]): the definition its `inherits` reference resolves
/// to, else the name it gives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Base {
    /// The definition the base type resolves to.
    Id(i64),
    /// The name the base type gives, unresolved.
    Name(String),
}

/// Every callable and type definition of the bundle, counted by name (per family) and by file:
/// what the bundle-wide step resolves against. Each entry is (how many, the id of the first).
#[derive(Debug, Default)]
pub struct Definitions {
    /// Callables and types by their [`NameKey`].
    pub(super) by_name: FxHashMap<NameKey, (u32, i64)>,
    /// Callables and types by their [`FileKey`], under their file and their package.
    pub(super) by_file: FxHashMap<FileKey, (u32, i64)>,
    /// Files that define something a reference can land on.
    pub(super) def_files: rustc_hash::FxHashSet<String>,
    /// Callables by (family, the name of the definition holding them, name): a type's members.
    pub(super) by_member: FxHashMap<(String, String, String), (u32, i64)>,
    /// Callables by (the id of the definition holding them, name).
    pub(super) by_holder: FxHashMap<(i64, String), (u32, i64)>,
    /// The base types of each type, by id (`class A extends B`, `class A(B)`: its `inherits`
    /// references): where a member the type does not define is looked for.
    pub(super) bases: FxHashMap<i64, Vec<Base>>,
    /// The names of the types, by id.
    pub(super) type_names: FxHashMap<i64, String>,
    /// Definitions by the key of their SCIP symbol (`scip_key`).
    pub(super) by_scip: FxHashMap<String, (u32, i64)>,
    /// Go modules of the bundle: (module path, directory of its `go.mod`).
    pub(super) go_modules: Vec<(String, String)>,
    /// The files declaring each namespace (C#'s `namespace Acme.Core`).
    pub(super) namespaces: FxHashMap<String, Vec<String>>,
    /// TypeScript/JavaScript path aliases: (the folder they hold under: a tsconfig.json's, the root
    /// for a package.json's name; alias; target).
    pub(super) ts_modules: Vec<(String, String, String)>,
    /// Names files take from other modules ((file, local name or `*`) → (name there, the
    /// module's candidate files)): `RefRecord::exports` of their import statements.
    pub(super) reexports: FxHashMap<(String, String), Vec<Reexport>>,
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
}
