//! `trove languages`.
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use trove::chunk::Chunker;
use trove::lang::Registry;

use super::Format;

/// List every language trove detects: extensions, file names, how it is chunked, what is extracted.
#[derive(Debug, Args)]
pub struct LanguagesArgs {
    /// Extra directory of language files to load after the built-ins; repeatable.
    #[arg(long, value_name = "DIR")]
    pub languages: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs `trove languages`.
pub fn run(a: LanguagesArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let dirs: Vec<&std::path::Path> = a.languages.iter().map(PathBuf::as_path).collect();
    let reg = Registry::load(&dirs)?;
    let mut rows = Vec::new();
    for l in reg.languages() {
        let d = &l.def;
        let chunking = match (d.chunker, &d.grammar) {
            (Chunker::Ast, Some(g)) => format!("ast ({g} grammar)"),
            (c, _) => c.to_string(),
        };
        let mut names: Vec<String> = d.extensions.iter().map(|e| format!(".{e}")).collect();
        names.extend(d.filenames.iter().cloned());
        let mut extracted = vec!["chunks"];
        if !d.doc_comment_prefixes.is_empty() || d.docstrings {
            extracted.push("docs");
        }
        if !d.definitions.is_empty()
            || matches!(
                d.chunker,
                Chunker::Markdown | Chunker::Rst | Chunker::Asciidoc
            )
        {
            extracted.push("symbols");
        }
        rows.push(serde_json::json!({
            "id": d.id, "name": d.name, "source_type": d.source_type, "files": names,
            "shebangs": d.shebangs, "chunking": chunking, "extracts": extracted,
        }));
    }
    if a.format == Format::Json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    let table: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            let list = |k: &str, sep: &str| {
                r[k].as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(sep)
            };
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            [
                s("id"),
                s("name"),
                s("source_type"),
                s("chunking"),
                list("extracts", ","),
                list("files", " "),
            ]
        })
        .collect();
    let header = ["id", "name", "type", "chunking", "extracts", "files"].map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(&table) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&table) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$} ", w = widths[i]));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}
