//! Reference resolution: which definition a call, base type or type use lands on.
//!
//! Two steps, both here. Per file, while the pipeline builds a file's records ([`in_file`]): each
//! reference gets its enclosing definition and chunk, and a name defined once in the same file
//! (among the kinds the reference can land on) resolves to it (`file`). Across the bundle, when
//! the writer has seen every file ([`Definitions`] + [`Pending`]): a reference still open resolves
//! through the file's import of the name (the one definition in the module files the import may
//! name: `import`), else to the one definition of that name in its language family (`repo`).
//! Two candidates or none leave it unresolved: never a guess.
//!
//! Keys are typed ([`NameKey`], [`FileKey`]); a reference's context for the second step
//! ([`Pending`]) travels beside it, not packed into its target.
use rustc_hash::FxHashMap;

use crate::lang::refs::Reference;
use crate::record::{ChunkRecord, RefKind, RefRecord, Resolution, SymbolRecord};

/// Kinds a call can land on.
pub const CALLABLE_KINDS: &[&str] = &[
    "function",
    "method",
    "macro",
    "constructor",
    "class",
    "struct",
];

/// Kinds a base type or a type use can land on.
pub const TYPE_KINDS: &[&str] = &["class", "struct", "interface", "trait", "enum", "type"];

/// The definition kinds a reference of `kind` resolves to (none for imports).
pub fn target_kinds(kind: RefKind) -> &'static [&'static str] {
    Class::of(kind).map_or(&[], Class::kinds)
}

/// The two classes of definitions a reference can land on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Functions, methods, constructors... (calls).
    Callable,
    /// Classes, traits, interfaces... (base types, type uses).
    Type,
}

impl Class {
    /// The class a reference of `kind` lands on; none for imports.
    pub fn of(kind: RefKind) -> Option<Class> {
        match kind {
            RefKind::Call => Some(Class::Callable),
            RefKind::Inherits | RefKind::Implements | RefKind::References => Some(Class::Type),
            RefKind::Import => None,
        }
    }

    fn kinds(self) -> &'static [&'static str] {
        match self {
            Class::Callable => CALLABLE_KINDS,
            Class::Type => TYPE_KINDS,
        }
    }
}

/// Languages that share a family with others: (language, family). Any other language is its own
/// family; no language is the family `""`.
const FAMILIES: &[(&str, &str)] = &[
    ("javascript", "js"),
    ("typescript", "js"),
    ("tsx", "js"),
    ("c", "c"),
    ("cpp", "c"),
];

/// References resolve within a language family (a TypeScript call can land on a JavaScript
/// function, never on a Python one).
pub fn language_family(lang: Option<&str>) -> &str {
    match lang {
        Some(l) => FAMILIES.iter().find(|(x, _)| *x == l).map_or(l, |(_, f)| f),
        None => "",
    }
}

/// `'a', 'b'`: SQL string literals.
fn sql_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("'{}'", s.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The bundle-wide step in SQL: a `SELECT` over the stored references `stored` (the `refs` table
/// with its [`Pending`] columns) and the definitions `symbols` that gives every reference with
/// the columns of `refs` and `target_symbol_id`/`resolution` as [`Definitions::resolve`] would
/// set them against those definitions: references resolved in their file (no `family`) as
/// stored; through an import, the one definition in the module's candidate files; else the one
/// definition of the name in the family. Over a bundle's live rows this keeps references exact
/// whatever segments the rows sit in; on a one-segment bundle it equals what the writer stored.
pub fn resolved_refs_sql(stored: &str, symbols: &str) -> String {
    let family = {
        let mut arms = String::new();
        for (lang, fam) in FAMILIES {
            arms.push_str(&format!("WHEN '{lang}' THEN '{fam}' "));
        }
        format!("CASE language {arms}ELSE coalesce(language, '') END")
    };
    let class = format!(
        "CASE WHEN kind = '{}' THEN 'c' ELSE 't' END",
        RefKind::Call.as_str()
    );
    let (callable, types) = (sql_list(CALLABLE_KINDS), sql_list(TYPE_KINDS));
    format!(
        "WITH defs AS (
  SELECT 'c' AS class, {family} AS family, path, name, symbol_id FROM {symbols} WHERE kind IN ({callable})
  UNION ALL
  SELECT 't', {family}, path, name, symbol_id FROM {symbols} WHERE kind IN ({types})),
by_name AS (SELECT class, family, name, count(*) AS n, min(symbol_id) AS id FROM defs GROUP BY ALL),
by_file AS (SELECT class, path, name, count(*) AS n, min(symbol_id) AS id FROM defs GROUP BY ALL),
open_refs AS (SELECT *, {class} AS class FROM {stored}),
imports AS (SELECT DISTINCT class, import_name, import_files FROM open_refs
            WHERE family IS NOT NULL AND import_name IS NOT NULL),
candidates AS (SELECT class, import_name, import_files, unnest(import_files) AS file FROM imports),
via_import AS (
  SELECT c.class, c.import_name, c.import_files,
         CASE WHEN count(f.n) = 1 AND max(f.n) = 1 THEN max(f.id) END AS id
  FROM candidates c LEFT JOIN by_file f
    ON f.class = c.class AND f.path = c.file AND f.name = c.import_name
  GROUP BY c.class, c.import_name, c.import_files)
SELECT r.path, r.line, r.kind, r.target, r.from_symbol_id, r.chunk_id,
  CASE WHEN r.family IS NULL THEN r.target_symbol_id
       WHEN r.import_name IS NOT NULL THEN i.id ELSE b.id END AS target_symbol_id,
  CASE WHEN r.family IS NULL THEN r.resolution
       WHEN r.import_name IS NOT NULL THEN CASE WHEN i.id IS NOT NULL THEN '{import}' END
       ELSE CASE WHEN b.id IS NOT NULL THEN '{repo}' END END AS resolution
FROM open_refs r
LEFT JOIN via_import i ON r.family IS NOT NULL AND r.import_name IS NOT NULL
  AND i.class = r.class AND i.import_name = r.import_name AND i.import_files = r.import_files
LEFT JOIN by_name b ON r.family IS NOT NULL AND r.import_name IS NULL
  AND b.class = r.class AND b.family = r.family AND b.name = r.target AND b.n = 1",
        import = Resolution::Import.as_str(),
        repo = Resolution::Repo.as_str(),
    )
}

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
        let c = match class {
            Class::Callable => 'c',
            Class::Type => 't',
        };
        (c, path, name).hash(&mut h);
        FileKey(h.finish())
    }
}

/// What a reference left open by [`in_file`] needs for the bundle-wide step: the family it
/// resolves in and, when its file imports the name, the imported name and the module's
/// candidate files (most likely first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// [`language_family`] of the referring file.
    pub family: String,
    /// (imported name, candidate files) when the file imports the name.
    pub import: Option<(String, Vec<String>)>,
}

impl Pending {
    /// The bundle-wide context of each of `refs` (of the file at `path` in `language`): `Some`
    /// for the references still to resolve, `None` for imports and those resolved in the file.
    pub fn of_file(path: &str, language: Option<&str>, refs: &[RefRecord]) -> Vec<Option<Self>> {
        let statements: Vec<&str> = refs
            .iter()
            .filter(|r| r.kind == RefKind::Import)
            .map(|r| r.target.as_str())
            .collect();
        let imports = crate::extract::imports::import_map(path, language, &statements);
        let family = language_family(language);
        refs.iter()
            .map(|r| {
                let open = r.resolution != Some(Resolution::File) && Class::of(r.kind).is_some();
                open.then(|| Pending {
                    family: family.to_string(),
                    import: imports
                        .get(&r.target)
                        .map(|(name, files)| (name.clone(), files.clone())),
                })
            })
            .collect()
    }
}

/// A reference as the writer spills it: its file's path, the record, and its [`Pending`] context
/// (none when it needs nothing more).
pub type PendingRef = (std::sync::Arc<str>, RefRecord, Option<Pending>);

/// Every callable and type definition of the bundle, counted by name (per family) and by file:
/// what the bundle-wide step resolves against. Each entry is (how many, the id of the first).
#[derive(Debug, Default)]
pub struct Definitions {
    by_name: FxHashMap<NameKey, (u32, i64)>,
    by_file: FxHashMap<FileKey, (u32, i64)>,
}

impl Definitions {
    /// Counts the definitions of the file at `path` (in `language`).
    pub fn add_file(&mut self, path: &str, language: Option<&str>, symbols: &[SymbolRecord]) {
        let family = language_family(language);
        for sym in symbols {
            for class in [Class::Callable, Class::Type] {
                if class.kinds().contains(&sym.symbol.kind.as_str()) {
                    let key = NameKey {
                        class,
                        family: family.to_string(),
                        name: sym.symbol.name.clone(),
                    };
                    self.by_name.entry(key).or_insert((0, sym.symbol_id)).0 += 1;
                    self.by_file
                        .entry(FileKey::new(class, path, &sym.symbol.name))
                        .or_insert((0, sym.symbol_id))
                        .0 += 1;
                }
            }
        }
    }

    /// Resolves `r` (open, with context `p`) against every definition: a name that came through
    /// an import is the import's business — resolved when the module's candidate files define it
    /// exactly once, never by a bundle-wide name (`from os.path import join` is not the repo's
    /// `join`); any other name by the one definition in the family.
    pub fn resolve(&self, r: &mut RefRecord, p: &Pending) {
        let Some(class) = Class::of(r.kind) else {
            return;
        };
        let (id, how) = match &p.import {
            Some((imported, files)) => {
                let found: Vec<&(u32, i64)> = files
                    .iter()
                    .filter_map(|file| self.by_file.get(&FileKey::new(class, file, imported)))
                    .collect();
                let id = match found.as_slice() {
                    [(1, id)] => Some(*id),
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
                    .map(|(_, id)| *id);
                (id, Resolution::Repo)
            }
        };
        r.target_symbol_id = id;
        r.resolution = id.map(|_| how);
    }
}

/// A file's imports, calls and base types with the definition and chunk each occurs in; a
/// reference whose name is one definition of this file (of a kind it can land on) resolves to
/// it here (`file`). The rest are resolved when the bundle is written ([`Definitions`]).
pub fn in_file(
    refs: Vec<Reference>,
    symbols: &[SymbolRecord],
    chunks: &[ChunkRecord],
) -> Vec<RefRecord> {
    // Definitions by (start, index) and by (name, index): each ref looks up its enclosing
    // definition and its same-named ones instead of scanning them all.
    let mut by_start: Vec<usize> = (0..symbols.len()).collect();
    by_start.sort_unstable_by_key(|&i| (symbols[i].symbol.start_byte, i));
    let mut by_name: Vec<usize> = (0..symbols.len()).collect();
    by_name.sort_unstable_by(|&a, &b| {
        (symbols[a].symbol.name.as_str(), a).cmp(&(symbols[b].symbol.name.as_str(), b))
    });
    refs.into_iter()
        .map(|r| {
            let at = r.start_byte;
            // The innermost definition holding `at`: the latest start at or before it whose end
            // is past it (the last such in `symbols` order on equal starts, as `max_by_key`).
            let before = by_start.partition_point(|&i| symbols[i].symbol.start_byte <= at);
            let from = by_start[..before]
                .iter()
                .rev()
                .find(|&&i| at < symbols[i].symbol.end_byte)
                .map(|&i| symbols[i].symbol_id);
            let chunk_id = chunk_at(chunks, at);
            let kinds = target_kinds(r.kind);
            let lo =
                by_name.partition_point(|&i| symbols[i].symbol.name.as_str() < r.target.as_str());
            let hi = lo + by_name[lo..].partition_point(|&i| symbols[i].symbol.name == r.target);
            let mut here = by_name[lo..hi]
                .iter()
                .map(|&i| &symbols[i])
                .filter(|s| kinds.contains(&s.symbol.kind.as_str()));
            let (target_symbol_id, resolution) = match (here.next(), here.next()) {
                (Some(one), None) => (Some(one.symbol_id), Some(Resolution::File)),
                _ => (None, None),
            };
            RefRecord {
                line: r.line,
                kind: r.kind,
                target: r.target,
                from_symbol_id: from,
                chunk_id,
                target_symbol_id,
                resolution,
            }
        })
        .collect()
}

/// The chunk holding byte `at`: chunks are in source order and never overlap, so a binary search
/// finds it (files with thousands of chunks, symbols and refs stay linear-logarithmic).
pub fn chunk_at(chunks: &[ChunkRecord], at: usize) -> Option<i64> {
    let i = chunks.partition_point(|c| c.chunk.start_byte <= at);
    chunks[..i]
        .last()
        .filter(|c| at < c.chunk.end_byte)
        .map(|c| c.chunk_id)
}
