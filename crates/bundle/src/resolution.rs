//! The resolution vocabulary the bundle format fixes: which definition kinds each reference
//! kind lands on, language families, and the SQL twin of the bundle-wide resolution step
//! ([`resolved_refs_sql`]) that `views.sql` holds, so any DuckDB resolves references over a
//! bundle's live rows exactly as the writer did. The Rust step is the index crate's
//! (`trove_index::resolve`), which takes these sets from here.
use trove_base::sets::{RefKind, Resolution};

/// Kinds a call can land on.
pub const CALLABLE_KINDS: &[&str] = &[
    "function",
    "method",
    "macro",
    "constructor",
    "class",
    "struct",
];

/// Kinds a bare name can land on across files (through an import, or as the one definition of
/// its name): a method is called on a receiver, so a bare `f()` in another file is never one.
pub const OPEN_CALLABLE_KINDS: &[&str] = &["function", "macro", "class", "struct"];

/// Kinds a call on an object lands on, across files.
pub const METHOD_KINDS: &[&str] = &["method"];

/// Kinds of definitions that hold code rather than members: the holder of a method is the first
/// enclosing definition of another kind (a class, struct, impl block, trait, module).
pub const CODE_KINDS: &[&str] = &["function", "method", "macro", "constructor"];

/// Kinds a base type or a type use can land on.
pub const TYPE_KINDS: &[&str] = &["class", "struct", "interface", "trait", "enum", "type"];

/// The definition kinds a reference of `kind` resolves to (none for imports).
pub fn target_kinds(kind: RefKind) -> &'static [&'static str] {
    Class::of(kind).map_or(&[], Class::kinds)
}

/// The classes of definitions a reference can land on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Functions, methods, constructors... (calls).
    Callable,
    /// Classes, traits, interfaces... (base types, type uses).
    Type,
    /// Methods (a call on an object, across files).
    Method,
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

    /// The definition kinds a reference of this class lands on.
    pub fn kinds(self) -> &'static [&'static str] {
        match self {
            Class::Callable => CALLABLE_KINDS,
            Class::Type => TYPE_KINDS,
            Class::Method => METHOD_KINDS,
        }
    }

    /// The kinds the bundle-wide step resolves to.
    pub fn open_kinds(self) -> &'static [&'static str] {
        match self {
            Class::Callable => OPEN_CALLABLE_KINDS,
            Class::Type => TYPE_KINDS,
            Class::Method => METHOD_KINDS,
        }
    }

    /// The character SQL and the name keys know the class by.
    pub fn code(self) -> char {
        match self {
            Class::Callable => 'c',
            Class::Type => 't',
            Class::Method => 'm',
        }
    }
}
/// Languages whose same-named definitions side by side (same kind, same parent) declare one
/// function: TypeScript's overload signatures before the implementation, Python's `@overload`
/// stubs (or a definition made again under a condition). A reference lands on the first of them,
/// as SCIP's indexers define the symbol there, instead of finding several and resolving to none.
/// (Java's, C#'s or C++'s overloads are different functions: which one a call takes is a type
/// checker's.)
pub const ONE_FUNCTION_OVERLOADS: &[&str] = &["python", "typescript", "tsx", "javascript"];
/// Languages that share a family with others: (language, family). Any other language is its own
/// family; no language is the family `""`.
pub(crate) const FAMILIES: &[(&str, &str)] = &[
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
pub(crate) fn sql_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("'{}'", s.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The bundle-wide step in SQL: a `SELECT` over the stored references `stored` (the `refs` table
/// with its `Pending` (trove-index) columns) and the definitions `symbols` that gives every reference with
/// the columns of `refs` and `target_symbol_id`/`resolution` as `Definitions::resolve` (trove-index) would
/// set them against those definitions: references resolved in their file (no `family`) as
/// stored; a SCIP reference, the one definition with its SCIP symbol; through an import, the one
/// definition in the module's candidate files (or, when the module is in the bundle and defines
/// no such name, re-exporting it, the one definition of the name in the family); a call on an
/// object whose type the caller declares, that type's one member of the name or its nearest base
/// type's (as `Definitions::member`: the recursive `walk`); a call on another object, the one
/// method of its name in the family; else the one definition of the name in the family. Over a
/// bundle's live rows this keeps references exact whatever segments the rows sit in; on a
/// one-segment bundle it equals what the writer stored.
///
/// Long on purpose: it is the text of one SQL statement, whose common table expressions name one
/// another, so it reads (and is diffed against the Rust rules) best whole.
pub fn resolved_refs_sql(stored: &str, symbols: &str, deps: &str) -> String {
    let family = {
        let mut arms = String::new();
        for (lang, fam) in FAMILIES {
            arms.push_str(&format!("WHEN '{lang}' THEN '{fam}' "));
        }
        format!("CASE language {arms}ELSE coalesce(language, '') END")
    };
    let class = format!(
        "CASE WHEN kind = '{call}' AND coalesce(method_call, false) THEN 'm' \
              WHEN kind = '{call}' THEN 'c' ELSE 't' END",
        call = RefKind::Call.as_str()
    );
    let (callable, types, methods) = (
        sql_list(OPEN_CALLABLE_KINDS),
        sql_list(TYPE_KINDS),
        sql_list(METHOD_KINDS),
    );
    // Where a reference that is no call on a typed receiver resolves: as stored when it needed
    // nothing more, else its SCIP symbol's definition, its import's, else its name's (the base
    // types' walk needs these for the `inherits` rows before the calls).
    let plain_target = "CASE WHEN r.family IS NULL THEN r.target_symbol_id
                    WHEN r.scip_symbol IS NOT NULL THEN s.id
                    WHEN r.import_name IS NOT NULL THEN i.id ELSE b.id END";
    let lookups = format!(
        "LEFT JOIN by_scip s ON r.family IS NOT NULL AND s.scip_key = {ref_key} AND s.n = 1
LEFT JOIN via_import i ON r.family IS NOT NULL AND r.import_name IS NOT NULL
  AND i.class = r.class AND i.family = r.family AND i.import_name = r.import_name
  AND i.import_files = r.import_files
LEFT JOIN by_name b ON r.family IS NOT NULL AND r.import_name IS NULL
  AND b.class = r.class AND b.family = r.family AND b.name = r.target AND b.n = 1
  AND NOT ((r.class = 'm' OR r.kind IN ('{inherits}', '{implements}'))
           AND b.id IS NOT DISTINCT FROM r.from_symbol_id)",
        ref_key = scip_key_sql("r.scip_symbol"),
        inherits = RefKind::Inherits.as_str(),
        implements = RefKind::Implements.as_str(),
    );
    format!(
        "WITH RECURSIVE counted AS (SELECT * FROM {symbols}
  QUALIFY coalesce(language, '') NOT IN ({overloads})
       OR row_number() OVER (PARTITION BY path, parent_id, kind, name
                             ORDER BY start_byte, symbol_id) = 1),
local AS (
  SELECT s.symbol_id FROM {symbols} s JOIN {symbols} p ON p.symbol_id = s.parent_id
  WHERE p.kind IN ({code})
  UNION
  SELECT s.symbol_id FROM {symbols} s JOIN local l ON s.parent_id = l.symbol_id),
open_defs AS (SELECT * FROM counted WHERE symbol_id NOT IN (SELECT symbol_id FROM local)),
defs AS (
  SELECT 'c' AS class, {family} AS family, path, name, symbol_id FROM open_defs
  WHERE kind IN ({callable}) AND NOT {declaration}
  UNION ALL
  SELECT 't', {family}, path, name, symbol_id FROM open_defs WHERE kind IN ({types})
  UNION ALL
  SELECT 'm', {family}, path, name, symbol_id FROM open_defs
  WHERE kind IN ({methods}) AND NOT {declaration}),
by_name AS (SELECT class, family, name, count(*) AS n, min(symbol_id) AS id FROM defs GROUP BY ALL),
by_file AS (SELECT class, path, name, count(*) AS n, min(symbol_id) AS id FROM (
  SELECT class, path, name, symbol_id FROM defs
  UNION ALL SELECT class, {package} || '@' || family AS path, name, symbol_id FROM defs) GROUP BY ALL),
by_member AS MATERIALIZED (SELECT {sym_family} AS family, h.name AS holder, s.name, count(*) AS n,
                   min(s.symbol_id) AS id
            FROM counted s JOIN {symbols} h ON h.symbol_id = s.parent_id
            WHERE s.kind IN ({all_callable}) AND NOT {s_declaration} GROUP BY ALL),
by_holder AS MATERIALIZED (SELECT s.parent_id AS holder_id, s.name, count(*) AS n,
                   min(s.symbol_id) AS id
            FROM counted s JOIN {symbols} h ON h.symbol_id = s.parent_id
            WHERE s.kind IN ({all_callable}) AND NOT {s_declaration} GROUP BY ALL),
by_scip AS (SELECT {sym_key} AS scip_key, count(*) AS n, min(symbol_id) AS id FROM {symbols}
            WHERE scip_symbol IS NOT NULL GROUP BY ALL),
open_refs AS (SELECT *, {class} AS class FROM {stored}),
imports AS (SELECT DISTINCT class, family, import_name, import_files FROM open_refs
            WHERE family IS NOT NULL AND import_name IS NOT NULL),
named AS (SELECT *, unnest(import_files) AS named FROM imports),
go_modules AS (SELECT name AS module,
                      CASE WHEN contains(path, '/') THEN regexp_replace(path, '/[^/]*$', '') ELSE '' END AS dir
               FROM {deps} WHERE ecosystem = 'go' AND scope = 'module'),
ts_modules AS (SELECT CASE WHEN contains(path, '/') AND NOT ends_with(path, '/package.json')
                           THEN regexp_replace(path, '/[^/]*$', '') ELSE '' END AS dir,
                      name AS alias, version AS target, split_part(name, '*', 1) AS pre,
                      CASE WHEN contains(name, '*') THEN substr(name, strpos(name, '*') + 1) END AS suf
               FROM {deps} WHERE ecosystem = 'npm' AND scope = 'module' AND version IS NOT NULL),
ts_specs AS (SELECT DISTINCT named, substr(named, 4, strpos(named, '|') - 4) AS from_dir,
                    substr(named, strpos(named, '|') + 1) AS spec
             FROM named WHERE named LIKE 'ts:%'),
ts_bases AS (SELECT s.named, replace(m.target, '*', substr(s.spec, length(m.pre) + 1,
                    length(s.spec) - length(m.pre) - length(coalesce(m.suf, '')))) AS base
             FROM ts_specs s JOIN ts_modules m
               ON (m.dir = '' OR s.from_dir = m.dir OR starts_with(s.from_dir, m.dir || '/'))
              AND CASE WHEN m.suf IS NULL THEN s.spec = m.alias
                       ELSE starts_with(s.spec, m.pre) AND ends_with(s.spec, m.suf)
                            AND length(s.spec) >= length(m.pre) + length(m.suf) END),
expanded AS (
  SELECT named, base || unnest([{js_suffixes}]) AS file FROM ts_bases
  UNION ALL
  SELECT n.named, coalesce(concat_ws('/', nullif(g.dir, ''),
                  nullif(ltrim(substr(n.named, 4 + length(g.module)), '/'), '')), '') || '/@go'
  FROM (SELECT DISTINCT named FROM named WHERE named LIKE 'go:%') n JOIN go_modules g
    ON substr(n.named, 4) = g.module OR starts_with(substr(n.named, 4), g.module || '/')
  UNION ALL
  SELECT n.named, s.path FROM (SELECT DISTINCT named FROM named WHERE named LIKE 'ns:%') n
    JOIN {symbols} s ON s.kind = 'namespace' AND s.language = 'csharp'
      AND s.name = substr(n.named, 4)),
candidates AS (SELECT DISTINCT n.class, n.family, n.import_name, n.import_files,
  CASE WHEN n.named LIKE 'go:%' OR n.named LIKE 'ts:%' OR n.named LIKE 'ns:%' THEN x.file
       ELSE n.named END AS file
  FROM named n LEFT JOIN expanded x ON x.named = n.named),
def_files AS (SELECT DISTINCT path FROM defs UNION SELECT DISTINCT {package} || '@' || family FROM defs),
in_files AS (
  SELECT c.class, c.family, c.import_name, c.import_files,
         CASE WHEN count(f.n) = 1 AND max(f.n) = 1 THEN max(f.id) END AS id,
         count(f.n) AS hits, bool_or(c.file = '{anywhere}'
           OR (d.path IS NOT NULL AND NOT (c.class = 'c' AND contains(c.file, '/@')))) AS module_here
  FROM candidates c LEFT JOIN by_file f
    ON f.class = c.class AND f.path = c.file AND f.name = c.import_name
  LEFT JOIN def_files d ON d.path = c.file
  GROUP BY c.class, c.family, c.import_name, c.import_files),
reexports AS (SELECT path AS file, split_part(e, '=', 1) AS local,
                     CASE WHEN e = '*' THEN NULL ELSE split_part(e, '=', 2) END AS name, import_files
              FROM (SELECT path, import_files, unnest(exports) AS e FROM {stored}
                    WHERE exports IS NOT NULL)),
reexport_files AS (SELECT file, local, name, unnest(import_files) AS target FROM reexports),
again AS (
  SELECT c.class, c.family, c.import_name, c.import_files,
         CASE WHEN count(DISTINCT f.id) = 1 AND max(f.n) = 1 THEN max(f.id) END AS id,
         count(f.n) AS hits, bool_or(x.local <> '*') AS named
  FROM candidates c JOIN reexport_files x ON x.file = c.file
    AND (x.local = c.import_name OR x.local = '*')
  LEFT JOIN by_file f ON f.class = c.class AND f.path = x.target
    AND f.name = coalesce(x.name, c.import_name)
  GROUP BY c.class, c.family, c.import_name, c.import_files),
via_import AS (
  SELECT m.class, m.family, m.import_name, m.import_files,
         CASE WHEN m.hits > 0 THEN m.id
              WHEN coalesce(a.hits, 0) > 0 THEN a.id
              WHEN coalesce(a.named, false) THEN NULL
              WHEN m.module_here THEN b.id END AS id
  FROM in_files m LEFT JOIN by_name b
    ON b.class = m.class AND b.family = m.family AND b.name = m.import_name AND b.n = 1
  LEFT JOIN again a ON a.class = m.class AND a.family = m.family
    AND a.import_name = m.import_name AND a.import_files = m.import_files),
bases AS MATERIALIZED (SELECT DISTINCT type_id, base_id,
                              CASE WHEN base_id IS NULL THEN target END AS base_name
  FROM (SELECT r.from_symbol_id AS type_id, r.target, t.name AS own,
               {plain_target} AS base_id
        FROM open_refs r {lookups}
        LEFT JOIN {symbols} t ON t.symbol_id = r.from_symbol_id AND t.kind IN ({types})
        WHERE r.kind = '{inherits}' AND r.from_symbol_id IS NOT NULL)
  WHERE CASE WHEN base_id IS NOT NULL THEN base_id <> type_id
             ELSE regexp_full_match(target, '{base_re}') AND target IS DISTINCT FROM own END),
walk AS (
  SELECT DISTINCT family, receiver_type AS start, target AS name, receiver_type AS type,
         NULL::BIGINT AS type_id, 0 AS depth
  FROM open_refs WHERE receiver_type IS NOT NULL AND family IS NOT NULL AND scip_symbol IS NULL
  UNION
  SELECT w.family, w.start, w.name, b.base_name, b.base_id, w.depth + 1 FROM walk w
  LEFT JOIN by_name t ON w.type_id IS NULL AND t.class = 't' AND t.family = w.family
    AND t.name = w.type AND t.n = 1
  JOIN bases b ON b.type_id = coalesce(w.type_id, t.id)
  WHERE w.depth < {max_bases}
    AND NOT EXISTS (SELECT 1 FROM by_member m WHERE w.type_id IS NULL
      AND m.family = w.family AND m.holder = w.type AND m.name = w.name)
    AND NOT EXISTS (SELECT 1 FROM by_holder h WHERE h.holder_id = w.type_id AND h.name = w.name)),
member_hits AS (
  SELECT w.family, w.start, w.name, w.depth, m.n, m.id FROM walk w
  JOIN by_member m ON w.type_id IS NULL AND m.family = w.family AND m.holder = w.type
    AND m.name = w.name
  UNION ALL
  SELECT w.family, w.start, w.name, w.depth, h.n, h.id FROM walk w
  JOIN by_holder h ON h.holder_id = w.type_id AND h.name = w.name),
members AS (SELECT h.family, h.start, h.name,
                   CASE WHEN count(*) = 1 AND max(h.n) = 1 THEN max(h.id) END AS id
            FROM member_hits h JOIN (SELECT family, start, name, min(depth) AS depth
                                     FROM member_hits GROUP BY ALL) f
              ON f.family = h.family AND f.start = h.start AND f.name = h.name AND f.depth = h.depth
            GROUP BY h.family, h.start, h.name)
SELECT r.path, r.line, r.kind, r.target, r.from_symbol_id, r.chunk_id,
  CASE WHEN r.family IS NOT NULL AND r.scip_symbol IS NULL AND r.receiver_type IS NOT NULL
         THEN coalesce(mb.id, CASE WHEN coalesce(r.method_call, false) THEN b.id END)
       ELSE {plain_target} END AS target_symbol_id,
  CASE WHEN r.family IS NULL THEN r.resolution
       WHEN r.scip_symbol IS NOT NULL THEN '{scip}'
       WHEN r.receiver_type IS NOT NULL THEN CASE WHEN coalesce(mb.id,
         CASE WHEN coalesce(r.method_call, false) THEN b.id END) IS NOT NULL THEN '{repo}' END
       WHEN r.import_name IS NOT NULL THEN CASE WHEN i.id IS NOT NULL THEN '{import}' END
       ELSE CASE WHEN b.id IS NOT NULL THEN '{repo}' END END AS resolution,
  r.scip_symbol, r.family, r.import_name, r.import_files, r.method_call, r.receiver_type,
  r.exports
FROM open_refs r {lookups}
LEFT JOIN members mb ON r.receiver_type IS NOT NULL AND mb.family = r.family
  AND mb.start = r.receiver_type AND mb.name = r.target",
        import = Resolution::Import.as_str(),
        inherits = RefKind::Inherits.as_str(),
        base_re = BASE_NAME_RE,
        max_bases = MAX_BASES,
        repo = Resolution::Repo.as_str(),
        scip = Resolution::Scip.as_str(),
        all_callable = sql_list(CALLABLE_KINDS),
        code = sql_list(CODE_KINDS),
        sym_family = family.replace("language", "s.language"),
        sym_key = scip_key_sql("scip_symbol"),
        package = "CASE WHEN contains(path, '/') THEN regexp_replace(path, '[^/]*$', '') ELSE '/' END",
        anywhere = ANYWHERE,
        overloads = sql_list(ONE_FUNCTION_OVERLOADS),
        declaration = declaration_sql("path"),
        s_declaration = declaration_sql("s.path"),
        js_suffixes = sql_list(&JS_SUFFIXES),
    )
}

/// How many levels of base types `Definitions::member` (trove-index) (and its SQL) climb: a bound for a
/// cycle of base names in bad input as much as for depth.
pub const MAX_BASES: usize = 16;

/// A base type name the member lookup follows: one plain (ASCII) identifier, as `inherits`
/// references of `class A extends B<T>`, `class A(B)` or `struct A : B` hold it (a base the
/// reference holds as more than a name, an expression, is not followed). The SQL form is
/// [`BASE_NAME_RE`].
pub fn is_base_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// [`is_base_name`] as a DuckDB regular expression (matched whole).
pub const BASE_NAME_RE: &str = "[A-Za-z_$][A-Za-z0-9_$]*";

/// A candidate "file" of an import that stands for the whole bundle: when none of the import's
/// other candidates defines the name, the one definition of the name in the family (Java's
/// `import com.acme.Engine` from a module the bundle lays out elsewhere, a Rust crate of the
/// workspace). Without it, an import whose module is not in the bundle resolves nowhere.
pub const ANYWHERE: &str = "*";
/// Whether `path` is a TypeScript declaration file (`.d.ts`, `.d.mts`, `.d.cts`): its functions
/// and methods are no call's target (`Definitions::add_file` (trove-index)).
pub fn is_declaration_file(path: &str) -> bool {
    DECLARATION_SUFFIXES.iter().any(|e| path.ends_with(e))
}

/// What a TypeScript declaration file's name ends with.
pub(crate) const DECLARATION_SUFFIXES: [&str; 3] = [".d.ts", ".d.mts", ".d.cts"];

/// [`is_declaration_file`] in SQL, of the path column `col`.
pub(crate) fn declaration_sql(col: &str) -> String {
    let any: Vec<String> = DECLARATION_SUFFIXES
        .iter()
        .map(|e| format!("ends_with({col}, '{e}')"))
        .collect();
    format!("({})", any.join(" OR "))
}

/// What a JavaScript/TypeScript module path may end with, most likely first.
pub const JS_SUFFIXES: [&str; 8] = [
    ".ts",
    ".tsx",
    ".js",
    ".jsx",
    ".mjs",
    "/index.ts",
    "/index.tsx",
    "/index.js",
];

/// [`scip_key`] of the SQL string expression `col`, in DuckDB.
pub fn scip_key_sql(col: &str) -> String {
    const FIELDS: &str = r"^((?:[^ ]|  )+) ((?:[^ ]|  )+) ((?:[^ ]|  )+) (?:[^ ]|  )+ (.+)$";
    let g = |i: u8| format!("regexp_extract({col}, '{FIELDS}', {i})");
    format!(
        "CASE WHEN regexp_matches({col}, '{FIELDS}') THEN {} || ' ' || {} || ' ' || \
         regexp_replace(lower({}), '[-_.]+', '-', 'g') || ' ' || {} END",
        g(1),
        g(2),
        g(3),
        g(4)
    )
}

/// The key a SCIP symbol resolves by: the symbol without its package version, the package name
/// in lower case with runs of `-`, `_`, `.` as one `-`. A release that bumps the version keeps
/// every key, so rows of files an incremental run kept still meet the definitions of files it
/// indexed again; and an index that names the project's own package two ways (scip-python: the
/// project as given, and as its installed distribution `Flask 3.1.3`) names one definition.
/// `None` for a local symbol or one that does not parse. [`scip_key_sql`] is the same in SQL.
pub fn scip_key(symbol: &str) -> Option<String> {
    // Fields are separated by one space; a space inside one is written as two.
    let mut fields: Vec<String> = Vec::with_capacity(5);
    let mut cur = String::new();
    let mut chars = symbol.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' && fields.len() < 4 {
            if chars.peek() == Some(&' ') {
                chars.next();
                cur.push_str("  ");
            } else {
                fields.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    fields.push(cur);
    let [scheme, manager, name, _version, rest] = <[String; 5]>::try_from(fields).ok()?;
    if scheme == "local" || rest.is_empty() {
        return None;
    }
    Some(format!("{scheme} {manager} {} {rest}", fold_name(&name)))
}

fn fold_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}
