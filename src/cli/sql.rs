//! `trove sql BUNDLE ["SQL"]`.
use clap::Args;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use trove::query::Bundle;
use trove::query::sql::{Cells, split_statements, unique_names};

/// Run SQL over a bundle in an embedded DuckDB.
///
/// Views: chunks, files, embeddings, terms, postings, skipped, symbols, refs, deps, file_text. Table
/// macros: definitions(name), callers(name), callees(name). Macros: bm25_search(query, k),
/// vector_search(query, k), similar_chunks(chunk_id, k), trove_tokens(text); function
/// trove_embed(text) (the query vector of `trove query --mode vector`). Without SQL, statements are read from stdin;
/// every statement runs, the last one's result is printed.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove sql app.bundle \"SELECT language, count(*) FROM files GROUP BY ALL ORDER BY 2 DESC\"\n  trove sql app.bundle \"SELECT * FROM bm25_search('retry with backoff', 5)\"\n  trove sql app.bundle \"SELECT path, similarity FROM vector_search('retry with backoff', 5)\"\n  echo \"SELECT path FROM skipped WHERE reason = 'secret-file'\" | trove sql app.bundle --format csv"
)]
pub struct SqlArgs {
    /// The bundle directory or packed file (.trove, unpacked once into the cache).
    pub bundle: PathBuf,
    /// SQL to run (default: read from stdin).
    pub sql: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SqlFormat::Table)]
    pub format: SqlFormat,
    #[command(flatten)]
    pub embedder_at: super::EmbedderAt,
}

/// Output formats of `sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SqlFormat {
    /// Aligned columns (long cells cut).
    Table,
    /// RFC 4180 CSV with a header; NULL is an empty field, the empty string `""`.
    Csv,
    /// One JSON array of objects.
    Json,
}

/// Widest cell of the table format.
const MAX_CELL: usize = 60;

/// Runs `trove sql`.
pub fn run(a: SqlArgs) -> anyhow::Result<()> {
    a.embedder_at.apply();
    let bundle = Bundle::open(&a.bundle)?;
    bundle.create_macros()?;
    let script = match a.sql {
        Some(s) => s,
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
    };
    let stmts = split_statements(&script);
    let Some((last, before)) = stmts.split_last() else {
        anyhow::bail!("no SQL given: pass it as an argument or on stdin");
    };
    refuse_writes(&stmts, &bundle.dir, &a.bundle)?;
    if !before.is_empty() {
        // A statement may redefine what `refs` resolves over (`symbols`, `deps`): no cached
        // resolution then.
        bundle.keep_refs_live();
    }
    for s in before {
        bundle
            .conn()?
            .execute_batch(s)
            .map_err(trove::query::Error::from)?;
    }
    let (names, batches) = bundle.run_sql_arrow(last)?;
    // Each batch's columns made ready to print once, then read row by row.
    let columns: Vec<(usize, Vec<Cells>)> = batches
        .iter()
        .map(|b| {
            (
                b.num_rows(),
                b.columns().iter().map(|c| Cells::new(c.as_ref())).collect(),
            )
        })
        .collect();
    let mut out = std::io::stdout().lock();
    match a.format {
        SqlFormat::Json => print_json(&mut out, &names, &columns)?,
        SqlFormat::Csv => print_csv(&mut out, &names, &columns)?,
        SqlFormat::Table => print_table(&mut out, &names, &columns)?,
    }
    Ok(())
}

/// Refuses the script when one of its statements would write inside the bundle at `dir`
/// (`shown` as given on the command line), might (a path known only when it runs), or would
/// download an extension.
fn refuse_writes(stmts: &[String], dir: &Path, shown: &Path) -> anyhow::Result<()> {
    // DuckDB reads `~` as its `home_directory` setting where one is set: a script that sets it
    // makes its `~` paths unknown until they run.
    let home_set = stmts
        .iter()
        .any(|s| setting_of(s).is_some_and(|(name, _)| name == "home_directory"));
    for s in stmts {
        match writes_into(s, dir, home_set) {
            Writes::None => {}
            Writes::Into(target) => anyhow::bail!(
                "refusing to write {} inside the bundle {}: its files are checked against \
                 manifest.json, and a changed one would break every later command (write \
                 elsewhere)",
                target.display(),
                shown.display()
            ),
            Writes::Computed(what) => anyhow::bail!(
                "refusing {what} to a path that is not written as a string: trove sql makes sure \
                 nothing is written inside the bundle {}, which it can tell only of a path in \
                 quotes (write the path as a literal)",
                shown.display()
            ),
            Writes::Unknown(what) => anyhow::bail!(
                "refusing {what}: trove sql makes sure nothing is written inside the bundle {}, \
                 and where this path leads is known only when it runs (write the whole path)",
                shown.display()
            ),
            Writes::Install => anyhow::bail!(
                "refusing INSTALL: trove sql never downloads DuckDB extensions (those compiled \
                 in, such as parquet, are there)"
            ),
        }
    }
    Ok(())
}

/// The result's rows, each as its cells: a batch's cells (`columns`, with the batch's row
/// count) and the row's index in them.
fn rows<'c, 'a>(
    columns: &'c [(usize, Vec<Cells<'a>>)],
) -> impl Iterator<Item = impl Iterator<Item = (&'c Cells<'a>, usize)>> {
    columns
        .iter()
        .flat_map(|(n, cols)| (0..*n).map(move |i| cols.iter().map(move |c| (c, i))))
}

/// `--format json`: one array of objects, keyed by the column names made unique.
fn print_json(
    out: &mut impl Write,
    names: &[String],
    columns: &[(usize, Vec<Cells<'_>>)],
) -> anyhow::Result<()> {
    let keys = unique_names(names);
    let arr: Vec<serde_json::Value> = rows(columns)
        .map(|r| {
            serde_json::Value::Object(
                keys.iter()
                    .cloned()
                    .zip(r.map(|(c, i)| c.json(i)))
                    .collect(),
            )
        })
        .collect();
    writeln!(out, "{}", serde_json::to_string_pretty(&arr)?)?;
    Ok(())
}

/// `--format csv`: a header, then a line per row.
fn print_csv(
    out: &mut impl Write,
    names: &[String],
    columns: &[(usize, Vec<Cells<'_>>)],
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{}",
        names.iter().map(|n| csv(n)).collect::<Vec<_>>().join(",")
    )?;
    // NULL is an empty field, the empty string `""`: the two stay apart.
    for r in rows(columns) {
        writeln!(
            out,
            "{}",
            r.map(|(c, i)| if c.is_null(i) {
                String::new()
            } else {
                match c.text(i) {
                    t if t.is_empty() => "\"\"".to_string(),
                    t => csv(&t),
                }
            })
            .collect::<Vec<_>>()
            .join(",")
        )?;
    }
    Ok(())
}

/// `--format table`: aligned columns under a header and a rule, then the row count.
fn print_table(
    out: &mut impl Write,
    names: &[String],
    columns: &[(usize, Vec<Cells<'_>>)],
) -> anyhow::Result<()> {
    let cells: Vec<Vec<String>> = rows(columns)
        .map(|r| r.map(|(c, i)| cell(&c.text(i))).collect())
        .collect();
    let widths: Vec<usize> = (0..names.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([names[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |vals: &[String]| {
        vals.iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    writeln!(out, "{}", line(names))?;
    writeln!(
        out,
        "{}",
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  ")
    )?;
    for r in &cells {
        writeln!(out, "{}", line(r))?;
    }
    writeln!(out, "({} rows)", cells.len())?;
    Ok(())
}

/// What a statement would write, as far as `trove sql` lets it.
#[derive(Debug, PartialEq)]
enum Writes {
    /// Nothing it looks at (a query, `SET`, `CREATE TABLE` in memory…), or a file outside.
    None,
    /// A file inside the bundle (the path as written).
    Into(PathBuf),
    /// `COPY … TO`, `EXPORT DATABASE` or `ATTACH` with a path computed at run time
    /// (`TO (getvariable('p'))`), which cannot be checked before it runs.
    Computed(&'static str),
    /// A literal path whose place is known only at run time: under `~` after the script set
    /// `home_directory`.
    Unknown(&'static str),
    /// `INSTALL` (or `FORCE INSTALL`): an extension downloaded.
    Install,
}

/// DuckDB settings whose value is a file or folder DuckDB writes (a query log, a profile, spill
/// files, extensions) or that moves `~`.
const PATH_SETTINGS: &[&str] = &[
    "log_query_path",
    "profiling_output",
    "temp_directory",
    "extension_directory",
    "secret_directory",
    "home_directory",
];

/// The setting `SET [GLOBAL|SESSION|LOCAL] name = value`, `SET name TO value`, `PRAGMA name =
/// value` or `PRAGMA name(value)` changes, lower-cased, with the text of its value.
fn setting_of(stmt: &str) -> Option<(String, &str)> {
    let stmt = lead(stmt);
    let re = regex::Regex::new(
        r"(?is)^(?:set|pragma)\s+(?:(?:global|session|local)\s+)?([\w.]+)\s*(?:=|\bto\b|\()\s*",
    )
    .ok()?;
    let m = re.captures(stmt)?;
    let name = m.get(1)?.as_str().to_ascii_lowercase();
    Some((name, &stmt[m.get(0)?.end()..]))
}

/// The statement after its leading blanks, comments and opening parentheses.
fn lead(stmt: &str) -> &str {
    let mut s = stmt;
    loop {
        let t = s.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(rest) = t.strip_prefix("--") {
            s = rest.find('\n').map_or("", |i| &rest[i..]);
        } else if let Some(rest) = t.strip_prefix("/*") {
            s = rest.find("*/").map_or("", |i| &rest[i + 2..]);
        } else {
            return t;
        }
    }
}

/// What `stmt` would write ([`Writes`]): the file a `COPY ... TO 'file'`, `EXPORT DATABASE 'dir'`
/// or `ATTACH 'file'` statement names, when it is inside `bundle` (relative targets taken from
/// the working directory, as DuckDB does).
fn writes_into(stmt: &str, bundle: &std::path::Path, home_set: bool) -> Writes {
    // A setting that names a file DuckDB writes: its literal value is a target like COPY's.
    if let Some((name, value)) = setting_of(stmt)
        && PATH_SETTINGS.contains(&name.as_str())
    {
        if name == "home_directory" {
            return Writes::None;
        }
        let Some(v) = regex::Regex::new(r"^'((?:[^']|'')*)'")
            .ok()
            .and_then(|re| re.captures(value))
        else {
            return Writes::Computed("a path setting");
        };
        return inside(
            &[v[1].replace("''", "'")],
            bundle,
            home_set,
            "a ~ path setting",
        );
    }
    let stmt = lead(stmt);
    let head = stmt.to_ascii_lowercase();
    let word = |w: &str| {
        head.strip_prefix(w).is_some_and(|r| {
            r.is_empty() || r.starts_with(|c: char| !c.is_alphanumeric() && c != '_')
        })
    };
    if word("install") || (word("force") && lead(&head[5..]).starts_with("install")) {
        return Writes::Install;
    }
    // A statement that runs another: `PREPARE p AS COPY …` (run by `EXECUTE p`), `EXPLAIN
    // ANALYZE COPY …` — the inner one is what is checked.
    let wrapper = [
        ("prepare", r"(?is)^prepare\s+\S+\s+as\b"),
        ("explain", r"(?is)^explain(\s+analyze)?\b"),
    ]
    .into_iter()
    .find(|(w, _)| word(w));
    if let Some(m) = wrapper.and_then(|(_, re)| regex::Regex::new(re).ok()?.find(stmt)) {
        return writes_into(&stmt[m.end()..], bundle, home_set);
    }
    // The literal targets, and what follows the keyword when it is not a literal.
    let (what, literal, computed) = if word("copy") {
        (
            "COPY",
            r"(?is)\bto\s+'((?:[^']|'')*)'",
            r"(?is)\bto\b\s*[^'\s]",
        )
    } else if word("export") {
        (
            "EXPORT DATABASE",
            r#"(?is)^export\s+database\s+(?:[\w."]+\s+to\s+)?'((?:[^']|'')*)'"#,
            r"(?is)^export\b",
        )
    } else if word("attach") {
        (
            "ATTACH",
            r"(?is)^attach\s+(?:database\s+)?(?:if\s+not\s+exists\s+)?'((?:[^']|'')*)'",
            r"(?is)^attach\b",
        )
    } else {
        return Writes::None;
    };
    let (Ok(literal), Ok(computed)) = (regex::Regex::new(literal), regex::Regex::new(computed))
    else {
        return Writes::Computed(what);
    };
    let targets: Vec<String> = literal
        .captures_iter(stmt)
        .map(|c| c[1].replace("''", "'"))
        .collect();
    if targets.is_empty() {
        return if computed.is_match(stmt) {
            Writes::Computed(what)
        } else {
            Writes::None
        };
    }
    inside(&targets, bundle, home_set, what)
}

/// [`Writes::Into`] for the first of `targets` that lies inside `bundle` (relative targets taken
/// from the working directory, as DuckDB does; `..` and links followed as the kernel will).
fn inside(
    targets: &[String],
    bundle: &std::path::Path,
    home_set: bool,
    what: &'static str,
) -> Writes {
    let Ok(root) = bundle.canonicalize() else {
        return Writes::None;
    };
    let Ok(cwd) = std::env::current_dir() else {
        return Writes::None;
    };
    for t in targets {
        let local = local_path(t);
        if home_set && local.starts_with('~') {
            return Writes::Unknown(what);
        }
        let local = match local.strip_prefix('~') {
            // DuckDB joins its home and the rest as text: `~x` is `$HOME` + `x`.
            Some(rest) => {
                let mut p = std::env::var_os("HOME").unwrap_or_default();
                p.push(rest);
                PathBuf::from(p)
            }
            None => PathBuf::from(local),
        };
        if resolve(&cwd.join(local)).starts_with(&root) {
            return Writes::Into(PathBuf::from(t));
        }
    }
    Writes::None
}

/// Where the absolute path `abs` leads: each part applied in turn, links resolved where what is
/// reached so far exists (a `..` after a folder that does not exist yet goes back up, as it will
/// once a statement before has made that folder).
fn resolve(abs: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let mut p = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                p.pop();
            }
            Component::CurDir => {}
            c => p.push(c),
        }
        if let Ok(r) = p.canonicalize() {
            p = r;
        }
    }
    p
}

/// The path DuckDB's file system opens for the target `t`: a `file:` URI's path (`file:///p`,
/// `file://localhost/p`, `file:/p`), else `t` (`~` is left to the caller).
fn local_path(t: &str) -> &str {
    let Some(path) = t.strip_prefix("file:").filter(|p| p.starts_with('/')) else {
        return t;
    };
    match path.strip_prefix("//") {
        Some(after) => {
            let authority = &after[..after.find('/').unwrap_or(after.len())];
            match authority {
                "" | "localhost" => &after[authority.len()..],
                // DuckDB refuses another host.
                _ => t,
            }
        }
        None => path,
    }
}

fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn cell(s: &str) -> String {
    // A table is for a terminal: a value's ESC and other control characters print as escapes
    // (a summary or a file's text must not retitle the window or clear the screen).
    let one_line = trove::util::visible(&s.replace('\n', "⏎")).into_owned();
    if one_line.chars().count() > MAX_CELL {
        format!(
            "{}…",
            one_line.chars().take(MAX_CELL - 1).collect::<String>()
        )
    } else {
        one_line
    }
}
