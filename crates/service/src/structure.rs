//! `trove symbols BUNDLE NAME` and `trove deps BUNDLE`: the structural tables, queried in the
//! bundle's DuckDB.
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use trove_query::sql::{to_json, to_text};
use trove_query::{Bundle, lit};

use crate::args::OutFormat;

/// Find definitions by name: where a function, method, class, struct, ... is defined, with its
/// kind, signature, parent and doc comment.
///
/// NAME matches a symbol's name exactly, then case-insensitively, then the end of its symbol path
/// (`UserService.processPayment`, `UserService::processPayment` and `UserService > processPayment`
/// all work). Exact matches come first, then exported ones. Exit codes: 0 found, 1 none, 2 bad input.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove symbols app.bundle processPayment\n  trove symbols app.bundle UserService --kind class --format json"
)]
pub struct SymbolsArgs {
    /// The bundle (directory or packed .trove file).
    pub bundle: PathBuf,
    /// The name (or the end of a symbol path) to look up.
    pub name: String,
    /// Only these kinds (function, method, class, struct, ...); repeatable.
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// At most this many definitions.
    #[arg(short, default_value_t = 20, value_parser = crate::args::limit())]
    pub k: usize,
    /// Output format: text (a row per line), json (an array of rows), jsonl (a row per line).
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    pub format: OutFormat,
}

/// The SQL of `trove symbols`: definitions of `name` (a name or the end of a symbol path),
/// exact matches first, then exported ones; columns as [`symbol_line`] reads them.
pub fn symbols_sql(name: &str, kinds: &[String], k: usize) -> String {
    let path = symbol_path_of(name);
    let kinds = if kinds.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = kinds.iter().map(|k| lit(k)).collect();
        format!("AND s.kind IN ({})", list.join(", "))
    };
    let (n, p) = (lit(name), lit(&path));
    let order = |t: &str| {
        format!(
            "{t}.name = {n} DESC, {t}.symbol_path = {p} DESC, coalesce({t}.exported, false) DESC, \
             {t}.path, {t}.start_line, {t}.symbol_id"
        )
    };
    // The matches first, then their parents' paths: joining the parents of every definition
    // before the filter cost a third of the time on a large bundle.
    format!(
        "WITH m AS (SELECT * FROM symbols s \
                    WHERE (s.name = {n} OR lower(s.name) = lower({n}) OR s.symbol_path = {p} \
                           OR ends_with(s.symbol_path, '> ' || {p})) {kinds} \
                    ORDER BY {} LIMIT {k}) \
         SELECT m.path, m.start_line, m.end_line, m.kind, m.name, m.symbol_path, m.signature, \
                m.docs, p.symbol_path AS parent, m.exported, m.language, m.symbol_id::VARCHAR AS symbol_id, m.scip_symbol \
         FROM m LEFT JOIN symbols p ON p.symbol_id = m.parent_id ORDER BY {}",
        order("s"),
        order("m"),
        k = k.max(1),
    )
}

/// The symbol path a name means: `A.b`, `A::b`, `A > b` all mean `A > b`.
fn symbol_path_of(name: &str) -> String {
    name.replace("::", " > ")
        .split(['.', '>'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" > ")
}

/// A path or name of a row as text that keeps to its line (a newline in a file name printed as
/// `\x0a`, other control characters escaped as well).
fn on_line(v: &duckdb::types::Value) -> String {
    trove_base::util::visible_line(&to_text(v)).into_owned()
}

/// A row of [`symbols_sql`] as text: `path:start-end  kind symbol_path`, `[scip]` when a SCIP
/// index defines it, then its signature, the first line of its docs and its SCIP symbol below.
pub fn symbol_line(r: &[duckdb::types::Value]) -> String {
    let t = |i: usize| to_text(&r[i]);
    let one = |i: usize| on_line(&r[i]);
    let scip = r
        .get(12)
        .and_then(|v| to_json(v).as_str().map(str::to_string));
    let mut line = format!("{}:{}-{}  {} {}", one(0), t(1), t(2), t(3), one(5));
    if scip.is_some() {
        line.push_str("  [scip]");
    }
    if to_json(&r[6]).is_string() {
        line.push_str(&format!("\n    {}", t(6)));
    }
    if let Some(d) = to_json(&r[7]).as_str() {
        let first = d.lines().next().unwrap_or("");
        line.push_str(&format!("\n    {first}"));
    }
    if let Some(s) = scip {
        line.push_str(&format!("\n    scip: {s}"));
    }
    line
}

/// The distinct values of `col` in `table` over `bundles`, sorted.
fn values_in<'a>(
    bundles: impl IntoIterator<Item = &'a Bundle>,
    table: &str,
    col: &str,
) -> anyhow::Result<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    for b in bundles {
        let (_, rows) = b.run_sql(&format!(
            "SELECT DISTINCT {col} FROM {table} WHERE {col} IS NOT NULL"
        ))?;
        out.extend(rows.iter().map(|r| to_text(&r[0])));
    }
    Ok(out)
}

/// Bad filter input is an error, not an empty result, as in `trove query`: a `--kind` that no
/// definition in the bundles has.
pub fn check_symbol_kinds<'a>(
    bundles: impl IntoIterator<Item = &'a Bundle>,
    kinds: &[String],
) -> anyhow::Result<()> {
    if kinds.is_empty() {
        return Ok(());
    }
    let there = values_in(bundles, "symbols", "kind")?;
    if let Some(bad) = kinds.iter().find(|k| !there.contains(*k)) {
        anyhow::bail!(
            "no definition of kind {bad:?} in the bundle(s) (kinds there: {})",
            there.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// The ecosystems `trove deps` reads manifests of.
pub const ECOSYSTEMS: &[&str] = &[
    "npm", "composer", "cargo", "go", "pypi", "maven", "rubygems",
];
/// The scopes manifests' dependencies are sorted into (a pyproject group keeps its own name).
pub const SCOPES: &[&str] = &[
    "runtime", "dev", "build", "peer", "optional", "indirect", "module",
];

/// Bad filter input is an error, not an empty result: an `--ecosystem` trove does not read, a
/// `--scope` that is neither a standard one nor in the bundles. A known one the bundles do not
/// have is no error (there are just no such dependencies).
pub fn check_deps_filters<'a>(
    bundles: impl IntoIterator<Item = &'a Bundle>,
    ecosystems: &[String],
    scopes: &[String],
) -> anyhow::Result<()> {
    if let Some(bad) = ecosystems
        .iter()
        .find(|e| !ECOSYSTEMS.contains(&e.as_str()))
    {
        anyhow::bail!(
            "unknown ecosystem {bad:?} (one of {})",
            ECOSYSTEMS.join(", ")
        );
    }
    if scopes.iter().any(|s| !SCOPES.contains(&s.as_str())) {
        let mut there = values_in(bundles, "deps", "scope")?;
        there.extend(SCOPES.iter().map(|s| s.to_string()));
        if let Some(bad) = scopes.iter().find(|s| !there.contains(*s)) {
            anyhow::bail!(
                "unknown scope {bad:?} (one of {})",
                there.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(())
}

/// Runs `trove symbols`.
pub fn run_symbols(a: SymbolsArgs) -> anyhow::Result<i32> {
    let b = Bundle::open(&a.bundle)?;
    let name = a.name.trim();
    if name.is_empty() {
        anyhow::bail!("the name is empty: trove symbols BUNDLE NAME");
    }
    check_symbol_kinds([&b], &a.kinds)?;
    let (names, rows) = b.run_sql(&symbols_sql(name, &a.kinds, a.k))?;
    let mut out = std::io::stdout().lock();
    print(&mut out, a.format, &names, &rows, symbol_line)?;
    Ok(if rows.is_empty() { 1 } else { 0 })
}

/// Follow references: who calls NAME (`--callers`, the default), what NAME calls (`--callees`),
/// which import statements name it (`--imports`), which types extend or implement it
/// (`--subtypes`), or where a type is used by name (`--uses`).
///
/// Calls are resolved to definitions where the repository defines the name once (in the calling
/// file first, then anywhere); a name defined several times stays unresolved rather than guessed,
/// and such edges are shown with the candidates left open. Each resolved edge ends with how it was
/// found (the `resolution` column of `refs`): `[file]` a definition in the same file, `[import]`
/// through the file's import of the name, `[repo]` the only definition of the name in the bundle's
/// language family, `[scip]` a SCIP index's occurrence of the symbol (`trove index --scip`: exact,
/// and shown with the SCIP symbol when it is defined outside the bundle). Exit codes: 0 found,
/// 1 none, 2 bad input.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove refs app.bundle processPayment            # who calls it\n  trove refs app.bundle processPayment --callees  # what it calls\n  trove refs app.bundle Database --imports"
)]
pub struct RefsArgs {
    /// The bundle (directory or packed .trove file).
    pub bundle: PathBuf,
    /// The name of a definition (or the end of its symbol path, as in `trove symbols`).
    pub name: String,
    /// Calls of NAME (the default).
    #[arg(long, conflicts_with_all = ["callees", "imports"])]
    pub callers: bool,
    /// Calls made inside definitions named NAME.
    #[arg(long, conflicts_with = "imports")]
    pub callees: bool,
    /// Import statements that name NAME (as a word of the statement).
    #[arg(long, conflicts_with = "subtypes")]
    pub imports: bool,
    /// Types that extend or implement NAME (`inherits` / `implements` references).
    #[arg(long, conflicts_with_all = ["callers", "callees"])]
    pub subtypes: bool,
    /// Where the type NAME is named (annotations, fields, `impl NAME`): `references` rows.
    #[arg(long, conflicts_with_all = ["callers", "callees", "imports", "subtypes"])]
    pub uses: bool,
    /// At most this many references.
    #[arg(short, default_value_t = 100, value_parser = crate::args::limit())]
    pub k: usize,
    /// Output format: text (a row per line), json (an array of rows), jsonl (a row per line).
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    pub format: OutFormat,
}

/// Which references `trove refs` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Calls of the name.
    Callers,
    /// Calls made inside definitions of the name.
    Callees,
    /// Import statements that mention it.
    Imports,
    /// Types that extend or implement it.
    Subtypes,
    /// Where a type is named.
    Uses,
    /// Every reference that names it: calls, type uses, base types, imports that mention it.
    All,
}

/// The SQL of `trove refs`: the references of `name` that `follow` asks for; columns as
/// [`ref_line`] reads them.
pub fn refs_sql(name: &str, follow: Follow, k: usize) -> String {
    refs_sql_in(name, follow, k, false)
}

/// [`refs_sql`] matching a bare name in any case: what to run when it found nothing (as `trove
/// symbols` finds `total_price` for `Total_Price`). Separate, because `lower()` keeps DuckDB from
/// pushing the name into the `refs` view of a bundle of several segments (half again the time).
pub fn refs_sql_any_case(name: &str, follow: Follow, k: usize) -> String {
    refs_sql_in(name, follow, k, true)
}

/// The rows of [`refs_sql`] on `b`, else of [`refs_sql_any_case`] when the name as written has
/// none: what `trove refs` and the agents' tool answer.
pub fn refs_rows(
    b: &Bundle,
    name: &str,
    follow: Follow,
    k: usize,
) -> trove_query::Result<(Vec<String>, Vec<Vec<duckdb::types::Value>>)> {
    let found = b.run_sql(&refs_sql(name, follow, k))?;
    if found.1.is_empty() {
        return b.run_sql(&refs_sql_any_case(name, follow, k));
    }
    Ok(found)
}

fn refs_sql_in(name: &str, follow: Follow, k: usize, any_case: bool) -> String {
    let leaf = name
        .rsplit(['.', ':', '>', ' '])
        .find(|s| !s.is_empty())
        .unwrap_or(name);
    let n = lit(leaf);
    // A qualified name (`Alpha.helper`) means that definition: only edges that resolve to it (or,
    // for callees, made inside it). A bare name matches its references as written (`any_case`:
    // in any case).
    let path = symbol_path_of(name);
    let qualified = path.contains(" > ");
    let p = lit(&path);
    let defs = format!(
        "(SELECT symbol_id FROM symbols WHERE symbol_path = {p} OR ends_with(symbol_path, '> ' || {p}))"
    );
    let named = if qualified {
        format!("r.target = {n} AND r.target_symbol_id IN {defs}")
    } else if any_case {
        format!("lower(r.target) = lower({n})")
    } else {
        format!("r.target = {n}")
    };
    // An import names the identifier as a word of its text (`import json` does not name `js`).
    let word = lit(&format!(
        "(^|[^A-Za-z0-9_$]){}($|[^A-Za-z0-9_$])",
        regex::escape(leaf)
    ));
    let imports = format!("r.kind = 'import' AND regexp_matches(r.target, {word})");
    let cols = "r.path, r.line, r.kind, r.target, f.symbol_path AS in_symbol, \
                t.path AS target_path, t.start_line AS target_line, t.symbol_path AS target_symbol, \
                r.resolution, r.scip_symbol";
    let joins = "FROM r LEFT JOIN symbols f ON f.symbol_id = r.from_symbol_id \
                 LEFT JOIN symbols t ON t.symbol_id = r.target_symbol_id";
    let filter = match follow {
        Follow::Uses => format!("r.kind = 'references' AND {named}"),
        Follow::Subtypes => format!("r.kind IN ('inherits', 'implements') AND {named}"),
        Follow::Imports => imports,
        Follow::Callees if qualified => {
            format!("r.kind = 'call' AND r.from_symbol_id IN {defs}")
        }
        Follow::Callees => format!(
            "r.kind = 'call' AND r.from_symbol_id IN (SELECT symbol_id FROM symbols WHERE name = {n})"
        ),
        Follow::Callers => format!("r.kind = 'call' AND {named}"),
        Follow::All => format!("({named} OR ({imports}))"),
    };
    // The references first (ordered and cut), then their definitions joined: joining every
    // reference before the filter cost a third of the time on a large bundle.
    let order = "r.path, r.line, r.kind, r.target";
    format!(
        "WITH r AS (SELECT * FROM refs r WHERE {filter} ORDER BY {order} LIMIT {}) \
         SELECT {cols} {joins} ORDER BY {order}",
        k.max(1)
    )
}

/// A row of [`refs_sql`] as text: `path:line  in_symbol  kind target  -> where it resolves  [how]`.
pub fn ref_line(r: &[duckdb::types::Value]) -> String {
    let t = |i: usize| to_text(&r[i]);
    let one = |i: usize| on_line(&r[i]);
    let inside = if to_json(&r[4]).is_null() {
        "(top level)".to_string()
    } else {
        one(4)
    };
    let target = if to_json(&r[5]).is_null() {
        if t(8) == trove_index::record::Resolution::Scip.as_str() {
            // A SCIP reference to a symbol defined outside the bundle (a library's).
            format!("outside the bundle: {}  [scip]", t(9))
        } else if t(2) != trove_index::record::RefKind::Import.as_str() {
            "unresolved".to_string()
        } else {
            String::new()
        }
    } else {
        // How the edge was found, as `refs.resolution` says: `file`, `import`, `repo` or `scip`.
        format!("{}:{} {}  [{}]", one(5), t(6), one(7), t(8))
    };
    let line = format!("{}:{}  {}  {} {}", one(0), t(1), inside, t(2), t(3));
    if target.is_empty() {
        line
    } else {
        format!("{line}  -> {target}")
    }
}

/// Runs `trove refs`.
pub fn run_refs(a: RefsArgs) -> anyhow::Result<i32> {
    let b = Bundle::open(&a.bundle)?;
    let name = a.name.trim();
    if name.is_empty() {
        anyhow::bail!("the name is empty: trove refs BUNDLE NAME");
    }
    let follow = if a.uses {
        Follow::Uses
    } else if a.subtypes {
        Follow::Subtypes
    } else if a.imports {
        Follow::Imports
    } else if a.callees {
        Follow::Callees
    } else {
        Follow::Callers
    };
    let (names, rows) = refs_rows(&b, name, follow, a.k)?;
    let mut out = std::io::stdout().lock();
    print(&mut out, a.format, &names, &rows, ref_line)?;
    Ok(if rows.is_empty() { 1 } else { 0 })
}

/// List the dependencies the bundle's package manifests declare: package.json, composer.json,
/// Cargo.toml, go.mod, requirements*.txt, pyproject.toml, pom.xml, build.gradle(.kts), Gemfile —
/// each with its manifest path (a monorepo has many), ecosystem, version spec and scope.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove deps app.bundle\n  trove deps app.bundle --ecosystem npm --scope dev --format jsonl"
)]
pub struct DepsArgs {
    /// The bundle (directory or packed .trove file).
    pub bundle: PathBuf,
    /// Only this ecosystem (npm, composer, cargo, go, pypi, maven, rubygems); repeatable.
    #[arg(long = "ecosystem", value_name = "E")]
    pub ecosystems: Vec<String>,
    /// Only this scope (runtime, dev, build, peer, optional, indirect); repeatable. `module` lists
    /// where imports of a package's own name lead (go.mod's module, tsconfig paths, a
    /// package.json's name), which references resolve through and the default leaves out.
    #[arg(long = "scope", value_name = "S")]
    pub scopes: Vec<String>,
    /// Only packages whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub name: Option<String>,
    /// Output format: text (a row per line), json (an array of rows), jsonl (a row per line).
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    pub format: OutFormat,
}

/// The SQL of `trove deps`: the dependencies of these ecosystems and scopes (all when empty)
/// whose name contains `name`.
pub fn deps_sql(ecosystems: &[String], scopes: &[String], name: Option<&str>) -> String {
    let mut filters = vec!["true".to_string()];
    let any_of = |col: &str, vals: &[String]| {
        let list: Vec<String> = vals.iter().map(|v| lit(v)).collect();
        format!("{col} IN ({})", list.join(", "))
    };
    if !ecosystems.is_empty() {
        filters.push(any_of("ecosystem", ecosystems));
    }
    if !scopes.is_empty() {
        filters.push(any_of("scope", scopes));
    } else {
        // Where imports of a package's own name lead: no dependency, asked for by name only.
        filters.push("scope <> 'module'".to_string());
    }
    if let Some(n) = name {
        filters.push(format!("contains(lower(name), lower({}))", lit(n)));
    }
    format!(
        "SELECT path, ecosystem, name, version, scope FROM deps WHERE {} ORDER BY path, ecosystem, scope, name, version",
        filters.join(" AND ")
    )
}

/// Runs `trove deps`.
pub fn run_deps(a: DepsArgs) -> anyhow::Result<i32> {
    let b = Bundle::open(&a.bundle)?;
    check_deps_filters([&b], &a.ecosystems, &a.scopes)?;
    let sql = deps_sql(&a.ecosystems, &a.scopes, a.name.as_deref());
    let (names, rows) = b.run_sql(&sql)?;
    let mut out = std::io::stdout().lock();
    let mut last = String::new();
    print(&mut out, a.format, &names, &rows, |r| {
        let s = |i: usize| {
            trove_base::util::visible_line(to_json(&r[i]).as_str().unwrap_or("")).into_owned()
        };
        let mut line = String::new();
        if s(0) != last {
            last = s(0);
            line.push_str(&format!("{}\n", last));
        }
        line.push_str(&format!("  {:<8} {:<8} {} {}", s(1), s(4), s(2), s(3)));
        line.trim_end().to_string()
    })?;
    Ok(if rows.is_empty() { 1 } else { 0 })
}

/// Prints rows as text (one `text(row)` each), a JSON array, or JSON lines.
fn print(
    out: &mut impl Write,
    format: OutFormat,
    names: &[String],
    rows: &[Vec<duckdb::types::Value>],
    mut text: impl FnMut(&[duckdb::types::Value]) -> String,
) -> anyhow::Result<()> {
    let obj = |r: &[duckdb::types::Value]| {
        serde_json::Value::Object(names.iter().cloned().zip(r.iter().map(to_json)).collect())
    };
    match format {
        OutFormat::Text => {
            // A path or name from a bundle made elsewhere cannot drive the terminal (the row
            // functions keep a path on its line; a signature or import may span lines).
            for r in rows {
                writeln!(out, "{}", trove_base::util::visible(&text(r)))?;
            }
        }
        OutFormat::Json => {
            let all: Vec<serde_json::Value> = rows.iter().map(|r| obj(r)).collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
        }
        OutFormat::Jsonl => {
            for r in rows {
                writeln!(out, "{}", obj(r))?;
            }
        }
    }
    Ok(())
}
