//! `trove chunks FILE [--explain]`: the chunks of one file as the indexer makes them.
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

use trove::chunk::{Chunk, ChunkedFile, chunk_file, nonws_chars};
use trove::config::PipelineConfig;
use trove::lang::refs::{Reference, references};
use trove::lang::{Language, Registry};

use super::Format;

/// Show how trove chunks one file: each chunk's lines, kind and symbol path.
///
/// The debugging aid for language files: `--explain` adds how the language was detected, which
/// chunker and rules ran, each chunk's imports and calls (by the file's `import_nodes`/`call_nodes`),
/// and the syntax tree outline (node kinds, and the rule each definition matched), so you can see
/// which node kinds to list in a language file.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove chunks src/main.rs\n  trove chunks lib/cart.ex --explain\n  trove chunks Shapes.Mod --languages my-languages/ --format json"
)]
pub struct ChunksArgs {
    /// The file to chunk.
    pub file: PathBuf,
    /// Use this language id instead of detecting one (see `trove languages`).
    #[arg(long, value_name = "ID")]
    pub lang: Option<String>,
    /// Extra directory of language files to load after the built-ins; repeatable.
    #[arg(long, value_name = "DIR")]
    pub languages: Vec<PathBuf>,
    /// Pipeline config overlay (chunk size budget etc.), as for `trove index`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also print detection, chunker, rules, signatures, docs and the syntax tree outline.
    #[arg(long)]
    pub explain: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Depth of the syntax tree outline under `--explain`.
const OUTLINE_DEPTH: usize = 4;
/// Most outline lines printed.
const OUTLINE_LINES: usize = 400;

/// Runs `trove chunks`.
pub fn run(a: ChunksArgs) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let config = match &a.config {
        Some(p) => PipelineConfig::with_overlay_file(p)?,
        None => PipelineConfig::defaults()?,
    };
    let dirs: Vec<&Path> = a.languages.iter().map(PathBuf::as_path).collect();
    let reg = Registry::load(&dirs)?;
    let bytes = read_file(&a.file, config.source.max_file_bytes)?;
    // What `trove index` would make of the bytes: a file it skips (binary, generated, minified)
    // is still cut here, with a note, so the chunker can be looked at on it.
    let rules = trove::source::Rules::new(&config.source, &trove::source::WalkOptions::default())?;
    let index_skips = rules.classify(bytes.clone()).err();
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", a.file.display()))?;
    if let Some(r) = &index_skips {
        eprintln!(
            "note: trove index skips {} ({r}); these are the chunks it would be cut into",
            a.file.display()
        );
    }
    let rel = trove::util::slash_path(&a.file);
    let (lang, how) = language(&reg, a.lang.as_deref(), &rel, &text)?;
    let chunked = chunk_file(&text, lang, &config.chunk);
    let refs = lang.map(|l| references(l, &text)).unwrap_or_default();
    let view = View {
        rel,
        lang,
        how,
        index_skips,
        chunked,
        refs,
    };
    if a.format == Format::Json {
        return view.print_json(&mut out);
    }
    if a.explain {
        view.print_header(&mut out, config.chunk.max_chars)?;
    }
    view.print_chunks(&mut out, a.explain)?;
    if a.explain {
        view.print_outline(&mut out, &text)?;
    }
    Ok(())
}

/// The bytes of `file`, read as `trove index` reads one: only a regular file (opening a FIFO
/// blocks; /dev/zero never ends), no larger than `cap` (`source.max_file_bytes`).
fn read_file(file: &Path, cap: u64) -> anyhow::Result<Vec<u8>> {
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot read {}: {e}", file.display());
    if !std::fs::metadata(file).map_err(cannot)?.is_file() {
        anyhow::bail!("{} is not a regular file", file.display());
    }
    let bytes = trove::source::read_capped(file, cap)
        .map_err(cannot)?
        .map_err(|size| {
            anyhow::anyhow!(
                "{} is {size} bytes, over source.max_file_bytes ({cap}): trove index skips it (a \
                 --config overlay raises the limit)",
                file.display()
            )
        })?;
    Ok(bytes)
}

/// The language to chunk `text` (at `rel`) with, and how it was chosen: `--lang ID`'s, else the
/// one detected, else none (line windows).
fn language<'r>(
    reg: &'r Registry,
    id: Option<&str>,
    rel: &str,
    text: &str,
) -> anyhow::Result<(Option<&'r Language>, String)> {
    Ok(match id {
        Some(id) => (
            Some(reg.get(id).ok_or_else(|| {
                anyhow::anyhow!("no language {id:?}: `trove languages` lists them")
            })?),
            "--lang".to_string(),
        ),
        None => match reg.detect_why(rel, text.as_bytes()) {
            Some((l, how)) => (Some(l), how),
            None => (None, "not detected".to_string()),
        },
    })
}

/// One file's chunks and what `--explain` says of them.
struct View<'a> {
    /// The file's path, with `/`.
    rel: String,
    /// Its language, if one was given or detected.
    lang: Option<&'a Language>,
    /// How the language was chosen.
    how: String,
    /// Why `trove index` would skip the file, if it would.
    index_skips: Option<trove::source::SkipReason>,
    /// The chunks.
    chunked: ChunkedFile,
    /// The file's references, by the language file's node kinds.
    refs: Vec<Reference>,
}

impl View<'_> {
    /// A chunk's references of `kind` (imports, calls...): their distinct targets, in order.
    fn refs_of(&self, c: &Chunk, kind: &str) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in self.refs.iter().filter(|r| {
            r.kind.as_str() == kind && (c.start_byte..c.end_byte).contains(&r.start_byte)
        }) {
            if !v.contains(&r.target) {
                v.push(r.target.clone());
            }
        }
        v
    }

    /// `--format json`: one document with the file, its language and its chunks.
    fn print_json(&self, out: &mut impl Write) -> anyhow::Result<()> {
        let lang = self.lang;
        let rows: Vec<serde_json::Value> = self
            .chunked
            .chunks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "start_line": c.start_line, "end_line": c.end_line, "kind": c.kind,
                    "symbol": c.symbol, "symbol_path": c.symbol_path, "signature": c.signature,
                    "docs": c.docs, "chars": nonws_chars(&c.content),
                    "imports": self.refs_of(c, "import"), "calls": self.refs_of(c, "call"),
                    "inherits": self.refs_of(c, "inherits"),
                    "implements": self.refs_of(c, "implements"),
                    "types": self.refs_of(c, "references"),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "file": self.rel,
            "language": lang.map(|l| l.def.id.as_str()),
            "detected_by": self.how,
            "chunker": lang.map_or("lines", |l| l.def.chunker.as_str()),
            "parse_fallback": self.chunked.parse_fallback,
            "index_skips": self.index_skips.as_ref().map(|r| r.as_str()),
            "chunks": rows,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        Ok(())
    }

    /// `--explain`'s header: the file, its language, the chunker and its budget, and the
    /// fallback to line windows when there was one.
    fn print_header(&self, out: &mut impl Write, max_chars: usize) -> anyhow::Result<()> {
        let (rel, lang, how) = (&self.rel, self.lang, &self.how);
        writeln!(
            out,
            "file      {rel}\nlanguage  {} ({how})\nchunker   {}{}\nbudget    {} non-whitespace chars per chunk",
            lang.map_or("-", |l| l.def.id.as_str()),
            lang.map_or("lines", |l| l.def.chunker.as_str()),
            lang.and_then(|l| l.def.grammar.as_deref())
                .map(|g| format!(" (grammar {g})"))
                .unwrap_or_default(),
            max_chars,
        )?;
        if self.chunked.parse_fallback {
            writeln!(
                out,
                "fallback  no syntax tree (the parse ran past its time bound, or the tree nests \
                 deeper than {} levels): line windows were used",
                trove::chunk::MAX_TREE_DEPTH
            )?;
        }
        writeln!(out)?;
        Ok(())
    }

    /// A line per chunk; with `explain`, each chunk's signature, docs and references under it.
    fn print_chunks(&self, out: &mut impl Write, explain: bool) -> anyhow::Result<()> {
        for c in &self.chunked.chunks {
            writeln!(
                out,
                "{:>5}-{:<5} {:<10} {}  ({} chars)",
                c.start_line,
                c.end_line,
                c.kind,
                c.symbol_path.as_deref().unwrap_or("-"),
                nonws_chars(&c.content)
            )?;
            if explain {
                if let Some(s) = &c.signature {
                    writeln!(out, "            sig:  {s}")?;
                }
                if let Some(d) = &c.docs {
                    let first = d.lines().next().unwrap_or("");
                    writeln!(out, "            docs: {first}")?;
                }
                for i in self.refs_of(c, "import") {
                    writeln!(out, "            import: {i}")?;
                }
                for kind in ["call", "inherits", "implements", "references"] {
                    let names = self.refs_of(c, kind);
                    if !names.is_empty() {
                        let label = match kind {
                            "call" => "calls",
                            "references" => "types",
                            k => k,
                        };
                        writeln!(out, "            {label}: {}", names.join(", "))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// `--explain`'s syntax tree outline of `text`, for a language with a grammar.
    fn print_outline(&self, out: &mut impl Write, text: &str) -> anyhow::Result<()> {
        // No outline where the chunker found no tree: parsing again, without its bounds, could
        // run as long as the parse it gave up on (the fallback line above says why).
        if !self.chunked.parse_fallback
            && let Some(l) = self.lang
            && let Some(g) = &l.grammar
        {
            writeln!(
                out,
                "\nsyntax tree outline (named nodes to depth {OUTLINE_DEPTH}; `=> kind` marks a definition rule):"
            )?;
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(g)?;
            if let Some(tree) = parser.parse(text, None) {
                let mut printed = 0;
                outline(out, l, tree.root_node(), 0, &mut printed)?;
                if printed >= OUTLINE_LINES {
                    writeln!(out, "  … (outline cut at {OUTLINE_LINES} lines)")?;
                }
            }
        }
        Ok(())
    }
}

/// Prints `node` and its named descendants to [`OUTLINE_DEPTH`], at most [`OUTLINE_LINES`] lines
/// counted in `printed`.
fn outline(
    out: &mut impl Write,
    l: &Language,
    node: tree_sitter::Node<'_>,
    depth: usize,
    printed: &mut usize,
) -> std::io::Result<()> {
    if *printed >= OUTLINE_LINES {
        return Ok(());
    }
    let rule = l.rule_for(node.kind()).map(|r| r.kind.as_str());
    writeln!(
        out,
        "  {:indent$}{} [{}-{}]{}{}",
        "",
        node.kind(),
        node.start_position().row + 1,
        node.end_position().row + 1,
        if node.is_error() { " ERROR" } else { "" },
        rule.map(|k| format!(" => {k}")).unwrap_or_default(),
        indent = depth * 2
    )?;
    *printed += 1;
    if depth + 1 < OUTLINE_DEPTH {
        let mut c = node.walk();
        for child in node.named_children(&mut c) {
            outline(out, l, child, depth + 1, printed)?;
        }
    }
    Ok(())
}
