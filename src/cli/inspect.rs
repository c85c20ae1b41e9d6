//! `trove inspect BUNDLE`.
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use trove::bundle::read_manifest;

use super::{Format, human_bytes};

/// Show a bundle's manifest: source, counts, languages and files.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The bundle directory or packed file.
    pub bundle: PathBuf,
    /// Output format (json prints the manifest itself).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs `trove inspect`.
pub fn run(a: InspectArgs) -> anyhow::Result<()> {
    let m = read_manifest(&trove::bundle::pack::open_path(&a.bundle)?)?;
    if a.format == Format::Json {
        writeln!(
            std::io::stdout().lock(),
            "{}",
            serde_json::to_string_pretty(&m)?
        )?;
        return Ok(());
    }
    // The manifest's strings (repository, branch, names) as text a terminal shows, not obeys.
    let mut out = Vec::new();
    text(&a, &m, &mut out)?;
    std::io::stdout()
        .lock()
        .write_all(trove::util::visible(&String::from_utf8_lossy(&out)).as_bytes())?;
    Ok(())
}

/// The text of `trove inspect` for the manifest `m`.
fn text(a: &InspectArgs, m: &trove::bundle::Manifest, out: &mut Vec<u8>) -> anyhow::Result<()> {
    writeln!(out, "bundle      {}", a.bundle.display())?;
    writeln!(
        out,
        "format      {} {}.{} (written by {} {} at {})",
        m.format, m.format_major, m.format_minor, m.tool.name, m.tool.version, m.created_at
    )?;
    let features: Vec<String> = m
        .required_features
        .iter()
        .map(|(name, release)| format!("{name} ({release})"))
        .collect();
    if !features.is_empty() {
        writeln!(out, "features    {}", features.join(", "))?;
    }
    // Rows of other builds (a compaction or merge across builds, an upgraded bundle).
    if m.builds.iter().any(|b| *b != m.tool) {
        let builds: Vec<String> = m
            .builds
            .iter()
            .map(|b| {
                format!(
                    "{} {} ({})",
                    b.name,
                    b.version,
                    b.build.as_deref().unwrap_or("?")
                )
            })
            .collect();
        writeln!(out, "builds      {}", builds.join(", "))?;
    }
    let mut src = m.source.repo.clone();
    if let Some(s) = &m.source.subdir {
        src.push_str(&format!(" ({s})"));
    }
    if let Some(c) = &m.source.commit {
        src.push_str(&format!(" @ {}", trove::util::short_commit(c)));
    }
    if let Some(b) = &m.source.branch {
        src.push_str(&format!(" [{b}]"));
    }
    if m.source.dirty {
        src.push_str(" +uncommitted changes");
    }
    writeln!(out, "source      {src}")?;
    if let Some(sh) = m.shard {
        writeln!(out, "shard       {sh}")?;
    }
    if let Some(b) = &m.base {
        let get = |k: &str| {
            b.get(k)
                .map(|v| v.to_string().trim_matches('"').to_string())
        };
        let mut line = get("mode").unwrap_or_else(|| "?".into());
        if let Some(c) = b.get("commit").and_then(|c| c.as_str()) {
            line.push_str(&format!(" from {}", trove::util::short_commit(c)));
        }
        if let (Some(r), Some(p)) = (get("files_reused"), get("files_processed")) {
            line.push_str(&format!(": {r} files reused, {p} processed"));
        }
        if let Some(e) = get("chunks_embedded") {
            line.push_str(&format!(", {e} chunks embedded"));
        }
        writeln!(out, "built on    {line}")?;
    }
    writeln!(
        out,
        "embedder    {} {} dim {}",
        m.embedder.backend, m.embedder.model, m.embedder.dim
    )?;
    writeln!(
        out,
        "bm25        k1 {} b {} avgdl {:.1} docs {} tokenizer {}",
        m.bm25.k1, m.bm25.b, m.bm25.avgdl, m.bm25.n_docs, m.bm25.tokenizer
    )?;
    let c = &m.counts;
    // Terms and postings are counted as stored: a later segment's tombstones leave the rows of
    // the files they kill in the earlier ones until a compaction.
    let stored = match m.segments.len() {
        0 | 1 => String::new(),
        n => format!(
            " (terms and postings as stored in {n} segments: with dead rows until `trove compact`)"
        ),
    };
    writeln!(
        out,
        "counts      {} files ({}), {} chunks, {} terms, {} postings, {} skipped{stored}",
        c.files,
        human_bytes(c.source_bytes),
        c.chunks,
        c.terms,
        c.postings,
        c.skipped
    )?;
    writeln!(out, "languages")?;
    for (l, n) in &m.languages {
        writeln!(out, "  {l:<14} {:>7} files {:>8} chunks", n.files, n.chunks)?;
    }
    writeln!(out, "files")?;
    for f in &m.files {
        writeln!(
            out,
            "  {:<20} {:>9} rows {:>10}  sha256 {}",
            f.name,
            f.rows,
            human_bytes(f.bytes),
            f.sha256.chars().take(16).collect::<String>()
        )?;
    }
    Ok(())
}
