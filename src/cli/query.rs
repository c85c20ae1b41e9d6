//! `trove query BUNDLE... "text"`.
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use trove::query::{Bundle, Hit, Mode, QueryOptions, search_all};

/// Search one or more bundles: BM25 and vector arms fused by a convex combination of their
/// normalized scores (--fusion rrf: Reciprocal Rank Fusion).
///
/// Each chunk's score is joined with its file's (the best score of the file's candidates, a
/// quarter of the weight), and a hit that is a piece of a split function or method is shown as the
/// whole definition (up to 7,200 bytes): its lines, name and text; the function's other pieces are
/// not listed again.
///
/// Exit codes: 0 results, 1 no results, 2 bad input (missing or corrupt bundle, bad flag).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove query app.bundle \"where is the session cookie written\"\n  trove query app.bundle processPayment --kind method --format jsonl\n  trove query a.bundle b.bundle \"retry backoff\" --lang go --type code -k 5"
)]
pub struct QueryArgs {
    /// One or more bundles (directories or packed .trove files), then the query text (the last
    /// argument). Options may come before, between or after them.
    #[arg(required = true, num_args = 1.., value_name = "BUNDLE... QUERY")]
    pub args: Vec<String>,
    /// hybrid (BM25 + vector, fused; with the hash embedder the same as bm25), bm25 or vector.
    #[arg(long, value_enum, default_value_t = Mode::Hybrid)]
    pub mode: Mode,
    /// Number of results.
    #[arg(short = 'k', long = "limit", default_value_t = 10, value_parser = super::limit())]
    pub k: usize,
    /// Only this language id (see `trove languages`); repeatable.
    #[arg(long = "lang", value_name = "LANG")]
    pub langs: Vec<String>,
    /// Only this source type; repeatable.
    #[arg(long = "type", value_name = "TYPE", value_parser = ["code", "doc", "test", "config"])]
    pub types: Vec<String>,
    /// Only paths matching this glob (`*` matches across `/`, `{a,b}` either), e.g. 'src/*.rs',
    /// '**/*.{py,pyi}'; a path without glob characters is that file or that folder (src/http).
    #[arg(long, value_name = "GLOB")]
    pub path: Option<String>,
    /// Only this chunk kind (function, method, class, struct, section, block ...); repeatable. A
    /// chunk's kind, not a definition's: a class small enough to be one chunk is one `class` chunk,
    /// methods and all (`trove symbols --kind` finds definitions).
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Weight of the vector arm in hybrid fusion (BM25's is 1) [default: 0 for the hash embedder,
    /// whose vector arm adds nothing to BM25 (hybrid is then BM25); 1 for a model embedder].
    #[arg(long, value_name = "W")]
    pub vector_weight: Option<f64>,
    /// How hybrid mode fuses BM25 and vector: convex (normalized scores, weighted) or rrf (ranks).
    #[arg(long, value_enum, default_value_t = trove::query::Fusion::default())]
    pub fusion: trove::query::Fusion,
    #[command(flatten)]
    pub late: super::Rerank,
    /// Output format: text (`path:start-end  kind symbol_path  score` and a snippet), json (an
    /// array of hits), jsonl (a hit per line).
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    pub format: OutFormat,
    /// Include each hit's content in json/jsonl output (a hit shown as a whole function: its text).
    #[arg(long)]
    pub content: bool,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    #[command(flatten)]
    pub embedder_at: super::EmbedderAt,
}

pub use trove_service::args::OutFormat;

/// Colour choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    /// On a terminal unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

pub use trove_service::filters::check_filters;

/// Snippet lines shown per result in text output.
const SNIPPET_LINES: usize = 4;

use trove::util::{visible, visible_line};

/// Runs `trove query`; returns the exit code (0 results, 1 none).
pub fn run(a: QueryArgs) -> anyhow::Result<i32> {
    a.embedder_at.apply();
    let mut args = a.args.clone();
    if args.len() < 2 {
        anyhow::bail!(
            "give a bundle and the query text: trove query BUNDLE... \"what to find\" (a text \
             that starts with '-' goes after `--`)"
        );
    }
    let query = args.pop().unwrap_or_default();
    if query.trim().is_empty() {
        anyhow::bail!("the query text is empty: trove query BUNDLE \"what to find\"");
    }
    // A bundle named twice (`b b`, `./b b`) is searched once: its hits would come twice.
    let mut seen = std::collections::HashSet::new();
    let bundles = args
        .iter()
        .filter(|b| seen.insert(std::fs::canonicalize(b).unwrap_or_else(|_| PathBuf::from(b))))
        .map(|b| Bundle::open(&PathBuf::from(b)))
        .collect::<Result<Vec<_>, _>>()?;
    let opts = QueryOptions {
        mode: a.mode,
        k: a.k,
        langs: a.langs.clone(),
        types: a.types.clone(),
        path: a.path.clone(),
        kinds: a.kinds.clone(),
        content: a.content || a.format == OutFormat::Text,
        vector_weight: a.vector_weight,
        fusion: a.fusion,
        rerank: a.late.rerank,
    };
    if a.vector_weight
        .is_some_and(|w| !(w.is_finite() && w >= 0.0))
    {
        anyhow::bail!("--vector-weight must be a non-negative number");
    }
    check_filters(&bundles, &opts)?;
    let hits = search_all(&bundles, &query, &opts)?;
    let color = match a.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let mut out = std::io::stdout().lock();
    match a.format {
        OutFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&hits)?)?,
        OutFormat::Jsonl => {
            for h in &hits {
                writeln!(out, "{}", serde_json::to_string(h)?)?;
            }
        }
        OutFormat::Text => print_text(&mut out, &hits, bundles.len() > 1, color)?,
    }
    Ok(if hits.is_empty() { 1 } else { 0 })
}

fn print_text(
    out: &mut impl Write,
    hits: &[Hit],
    name_bundle: bool,
    color: bool,
) -> std::io::Result<()> {
    let (bold, dim, cyan, reset) = if color {
        ("\x1b[1m", "\x1b[2m", "\x1b[36m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    for h in hits {
        let bundle = if name_bundle {
            format!("{}: ", h.bundle)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{bundle}{bold}{}:{}-{}{reset}  {cyan}{} {}{reset}  {:.4}",
            visible_line(&h.path),
            h.start_line,
            h.end_line,
            visible_line(&h.kind),
            visible_line(h.symbol_path.as_deref().unwrap_or("-")),
            h.score
        )?;
        if let Some(c) = &h.content {
            // Line by line (a CRLF file's `\r` is a line end, not a character to show).
            let snippet = snippet(&h.indent, c)
                .lines()
                .map(|l| visible(l).into_owned())
                .collect::<Vec<_>>()
                .join("\n");
            let painted = color
                .then_some(h.language.as_deref())
                .flatten()
                .and_then(|l| trove::highlight::highlight_language(l, &snippet));
            match painted {
                Some(p) => {
                    for line in p.lines() {
                        writeln!(out, "    {line}")?;
                    }
                }
                None => {
                    for line in snippet.lines() {
                        writeln!(out, "    {dim}{line}{reset}")?;
                    }
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The first [`SNIPPET_LINES`] lines of a hit's `content` as written: its first line with the
/// `indent` it had, then all of them shifted left together by what they share.
fn snippet(indent: &str, content: &str) -> String {
    let lines: Vec<String> = content
        .split_inclusive('\n')
        .take(SNIPPET_LINES)
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("{indent}{l}")
            } else {
                l.to_string()
            }
        })
        .collect();
    let lead = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let common = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| lead(l))
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| l.get(common.min(lead(l))..).unwrap_or(""))
        .collect()
}
