//! `trove languages`.
use clap::Args;
use std::path::PathBuf;

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
    let dirs: Vec<&std::path::Path> = a.languages.iter().map(PathBuf::as_path).collect();
    let reg = Registry::load(&dirs)?;
    let mut rows = Vec::new();
    for l in reg.languages() {
        let d = &l.def;
        let chunking = match (d.chunker.as_str(), &d.grammar) {
            ("ast", Some(g)) => format!("ast ({g} grammar)"),
            (c, _) => c.to_string(),
        };
        let mut names: Vec<String> = d.extensions.iter().map(|e| format!(".{e}")).collect();
        names.extend(d.filenames.iter().cloned());
        let mut extracted = vec!["chunks"];
        if !d.doc_comment_prefixes.is_empty() || d.docstrings {
            extracted.push("docs");
        }
        if !d.definitions.is_empty() || d.chunker == "markdown" {
            extracted.push("symbols");
        }
        rows.push(serde_json::json!({
            "id": d.id, "name": d.name, "source_type": d.source_type, "files": names,
            "shebangs": d.shebangs, "chunking": chunking, "extracts": extracted,
        }));
    }
    if a.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "{:<12} {:<12} {:<7} {:<22} {:<18} files",
        "id", "name", "type", "chunking", "extracts"
    );
    for r in &rows {
        let files: Vec<&str> = r["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        let ex: Vec<&str> = r["extracts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        println!(
            "{:<12} {:<12} {:<7} {:<22} {:<18} {}",
            r["id"].as_str().unwrap_or(""),
            r["name"].as_str().unwrap_or(""),
            r["source_type"].as_str().unwrap_or(""),
            r["chunking"].as_str().unwrap_or(""),
            ex.join(","),
            files.join(" ")
        );
    }
    Ok(())
}
