//! `trove sql BUNDLE ["SQL"]`.
use clap::Args;
use std::io::{Read, Write};
use std::path::PathBuf;

use trove::query::Bundle;
use trove::query::sql::{Cells, split_statements, unique_names};

/// Run SQL over a bundle in an embedded DuckDB.
///
/// Views: chunks, files, embeddings, terms, postings, skipped. Macros: bm25_search(query, k),
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
    for s in &stmts {
        match writes_into(s, &bundle.dir) {
            Writes::None => {}
            Writes::Into(target) => anyhow::bail!(
                "refusing to write {} inside the bundle {}: its files are checked against \
                 manifest.json, and a changed one would break every later command (write \
                 elsewhere)",
                target.display(),
                a.bundle.display()
            ),
            Writes::Computed(what) => anyhow::bail!(
                "refusing {what} to a path that is not written as a string: trove sql makes sure \
                 nothing is written inside the bundle {}, which it can tell only of a path in \
                 quotes (write the path as a literal)",
                a.bundle.display()
            ),
            Writes::Install => anyhow::bail!(
                "refusing INSTALL: trove sql never downloads DuckDB extensions (those compiled \
                 in, such as parquet, are there)"
            ),
        }
    }
    if !before.is_empty() {
        // A statement may redefine what `refs` resolves over (`symbols`, `deps`): no cached
        // resolution then.
        bundle.keep_refs_live();
    }
    for s in before {
        bundle
            .conn()?
            .execute_batch(s)
            .map_err(trove::Error::from)?;
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
    let rows = || {
        columns
            .iter()
            .flat_map(|(n, cols)| (0..*n).map(move |i| cols.iter().map(move |c| (c, i))))
    };
    let mut out = std::io::stdout().lock();
    match a.format {
        SqlFormat::Json => {
            let keys = unique_names(&names);
            let arr: Vec<serde_json::Value> = rows()
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
        }
        SqlFormat::Csv => {
            writeln!(
                out,
                "{}",
                names.iter().map(|n| csv(n)).collect::<Vec<_>>().join(",")
            )?;
            // NULL is an empty field, the empty string `""`: the two stay apart.
            for r in rows() {
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
        }
        SqlFormat::Table => {
            let cells: Vec<Vec<String>> = rows()
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
            writeln!(out, "{}", line(&names))?;
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
        }
    }
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
    /// `INSTALL` (or `FORCE INSTALL`): an extension downloaded.
    Install,
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
fn writes_into(stmt: &str, bundle: &std::path::Path) -> Writes {
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
        return writes_into(&stmt[m.end()..], bundle);
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
    let Ok(root) = bundle.canonicalize() else {
        return Writes::None;
    };
    targets
        .into_iter()
        .find_map(|t| {
            let abs = std::env::current_dir().ok()?.join(local_path(&t));
            let t = PathBuf::from(t);
            // The deepest part of the path that exists, resolved; the rest appended as written.
            let mut base = abs.as_path();
            let mut rest = Vec::new();
            let resolved = loop {
                if let Ok(r) = base.canonicalize() {
                    break r;
                }
                rest.push(base.file_name()?.to_owned());
                base = base.parent()?;
            };
            let full = rest.iter().rev().fold(resolved, |p, part| p.join(part));
            full.starts_with(&root).then_some(Writes::Into(t))
        })
        .unwrap_or(Writes::None)
}

/// The local path DuckDB's file system opens for the target `t`: a `file:` URI's path
/// (`file:///p`, `file://localhost/p`, `file:/p`), with a leading `~` for the home directory.
fn local_path(t: &str) -> PathBuf {
    let mut path = t;
    if t.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("file:/")) {
        path = &t[5..];
        if let Some(after) = path.strip_prefix("//") {
            let authority = &after[..after.find('/').unwrap_or(after.len())];
            if authority.is_empty() || authority.eq_ignore_ascii_case("localhost") {
                path = &after[authority.len()..];
            }
        }
    }
    match (path.strip_prefix('~'), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(path),
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
    let one_line = s.replace('\n', "⏎");
    if one_line.chars().count() > MAX_CELL {
        format!(
            "{}…",
            one_line.chars().take(MAX_CELL - 1).collect::<String>()
        )
    } else {
        one_line
    }
}
