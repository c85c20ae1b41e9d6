//! The command line: one module per subcommand, each with `XArgs` and `run(args)`.
//! `main.rs` only parses and maps errors to exit codes.
pub mod chunks;
pub mod compact;
pub mod index;
pub mod inspect;
pub mod languages;

pub mod merge;
pub mod models;
pub mod pack;
pub mod query;
pub mod sql;
pub mod sync;
pub mod upgrade;
pub mod verify;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
pub use trove_service::args::{EmbedderAt, Rerank, limit, threads};
#[cfg(feature = "openai")]
pub use trove_service::ask;
pub use trove_service::{map, mcp, serve, show, structure};

/// `trove --version`: the version, the commit it was built from and the cargo features compiled in,
/// e.g. `0.1.0 (commit 1c6fc33a…, features: engine local onnx openai)`, then a line per model and
/// ONNX Runtime library shipped beside the binary (`trove models` says more).
pub static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let features: Vec<&str> = [
        ("engine", cfg!(feature = "engine")),
        ("local", cfg!(feature = "local")),
        ("onnx", cfg!(feature = "onnx")),
        ("openai", cfg!(feature = "openai")),
        ("cuda", cfg!(feature = "cuda")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    let mut v = format!(
        "{} (commit {}, features: {})",
        env!("CARGO_PKG_VERSION"),
        env!("TROVE_GIT_COMMIT"),
        features.join(" ")
    );
    for m in trove::embed::shipped::models() {
        v.push_str(&format!(
            "\nmodel: {} ({}) in {}",
            m.name,
            m.precision(),
            m.dir.display()
        ));
    }
    // The library file found, not loaded (`trove models` loads it and names its version).
    if let Some(lib) = trove::embed::shipped::runtime_lib() {
        v.push_str(&format!("\nruntime: {}", lib.display()));
    }
    v
});

/// trove: index source repositories into portable Parquet bundles, and query them.
#[derive(Debug, Parser)]
#[command(name = "trove", version = VERSION.as_str(), about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands: one line each in `trove --help` (`about`); each one's own `--help` is the doc of
/// its `XArgs`.
#[derive(Debug, Subcommand)]
pub enum Command {
    #[command(about = "Index a directory into a bundle (Parquet tables + manifest.json)")]
    Index(Box<index::IndexArgs>),
    #[command(about = "Show a bundle's manifest: source, counts, languages and files")]
    Inspect(inspect::InspectArgs),
    #[command(about = "Check a bundle's files, rows and counts against its manifest")]
    Verify(verify::VerifyArgs),
    #[command(about = "List the languages trove detects and how each is chunked")]
    Languages(languages::LanguagesArgs),
    #[command(about = "List the embedding models and ONNX Runtime shipped beside trove")]
    Models(models::ModelsArgs),
    #[command(about = "Show how trove chunks one file")]
    Chunks(chunks::ChunksArgs),
    #[command(about = "Search bundles: BM25 and vector arms, fused")]
    Query(query::QueryArgs),
    #[command(about = "Run SQL over a bundle in an embedded DuckDB")]
    Sql(sql::SqlArgs),
    #[command(about = "Join bundles of disjoint parts of one tree (CI shards) into one")]
    Merge(merge::MergeArgs),
    #[command(about = "Rewrite a bundle's live rows as one segment")]
    Compact(compact::CompactArgs),
    #[command(about = "Bring a bundle up to a published one, fetching only missing segments")]
    Sync(sync::SyncArgs),
    #[command(about = "Pack a bundle into one file to ship (.trove)")]
    Pack(pack::PackArgs),
    #[command(about = "Unpack a packed bundle (.trove) into a bundle directory")]
    Unpack(pack::UnpackArgs),
    #[command(about = "Convert a bundle of an older format to this trove's, in place")]
    Upgrade(upgrade::UpgradeArgs),
    #[command(about = "Show the repository as a map, the most depended-on entries first")]
    Map(map::MapArgs),
    #[command(about = "Print a file's text from the bundle, with line numbers")]
    Show(show::ShowArgs),
    #[command(about = "Serve bundles to coding agents over the Model Context Protocol (stdio)")]
    Mcp(mcp::McpArgs),
    #[command(about = "Serve bundles over HTTP: JSON API, MCP, health and metrics")]
    Serve(Box<serve::ServeArgs>),
    #[cfg(feature = "openai")]
    #[command(about = "Ask a question: a model researches the bundles and answers with citations")]
    Ask(ask::AskArgs),
    #[command(about = "Find definitions by name")]
    Symbols(structure::SymbolsArgs),
    #[command(about = "Follow references: callers, callees, imports, subtypes, uses")]
    Refs(structure::RefsArgs),
    #[command(about = "List the dependencies the bundle's package manifests declare")]
    Deps(structure::DepsArgs),
}

/// Output formats shared by the subcommands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// One JSON document.
    Json,
}

impl Cli {
    /// The bundles a read-only command names (`query`'s arguments hold its words too: they name
    /// no file); `None` for a command that writes. A reader may be run again as it is (see
    /// [`vanished_under`]).
    fn read_bundles(&self) -> Option<Vec<PathBuf>> {
        Some(match &self.command {
            Command::Inspect(a) => vec![a.bundle.clone()],
            Command::Verify(a) => vec![a.bundle.clone()],
            Command::Query(a) => a.args.iter().map(PathBuf::from).collect(),
            Command::Sql(a) => vec![a.bundle.clone()],
            Command::Map(a) => vec![a.bundle.clone()],
            Command::Show(a) => vec![a.bundle.clone()],
            Command::Symbols(a) => vec![a.bundle.clone()],
            Command::Refs(a) => vec![a.bundle.clone()],
            Command::Deps(a) => vec![a.bundle.clone()],
            _ => return None,
        })
    }

    /// For a read-only command, what identifies the versions of the bundles it names (each one's
    /// manifest, or packed file: inode, size, mtime), to tell whether a writer replaced one while
    /// it ran; `None` for a command that writes.
    pub fn versions(&self) -> Option<Vec<Option<(u64, u64, i128)>>> {
        use std::os::unix::fs::MetadataExt;
        let version = |p: &PathBuf| {
            let m = if p.is_dir() {
                std::fs::metadata(p.join(trove::bundle::MANIFEST))
            } else {
                std::fs::metadata(p)
            };
            m.ok().map(|m| {
                (
                    m.ino(),
                    m.len(),
                    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                )
            })
        };
        self.read_bundles()
            .map(|paths| paths.iter().map(version).collect())
    }
}

/// Whether `e` is a bundle file gone from under a reader: a writer (`compact`, a full `index`,
/// `sync`, `unpack`, `merge`) swapped a new version in and removed the old one's files between
/// the reader's reading of the manifest and of the files (the caller checks that a bundle's
/// version changed meanwhile). Run again, the command reads the new version whole.
pub fn vanished_under(e: &anyhow::Error) -> bool {
    use trove_base::error::ErrorKind;
    e.chain().any(|c| {
        // DuckDB names a file it could not open only in its text: any DuckDB failure counts,
        // as the caller runs again only when a bundle's version changed meanwhile.
        if matches!(c.downcast_ref(), Some(trove::query::Error::Duck(_))) {
            return true;
        }
        if let Some(kind) = trove_service::kind_of(c) {
            return matches!(kind, ErrorKind::NotFound | ErrorKind::Corrupt);
        }
        c.downcast_ref::<duckdb::Error>().is_some()
            || c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
    })
}

/// Runs the parsed command line; returns the exit code (0 ok, 1 no results from a query).
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Index(a) => index::run(*a),
        Command::Inspect(a) => inspect::run(a).map(|()| 0),
        Command::Verify(a) => verify::run(a).map(|()| 0),
        Command::Languages(a) => languages::run(a).map(|()| 0),
        Command::Models(a) => models::run(a).map(|()| 0),
        Command::Chunks(a) => chunks::run(a).map(|()| 0),
        Command::Query(a) => query::run(a),
        Command::Sql(a) => sql::run(a).map(|()| 0),
        Command::Merge(a) => merge::run(a).map(|()| 0),
        Command::Compact(a) => compact::run(a).map(|()| 0),
        Command::Sync(a) => sync::run(a).map(|()| 0),
        Command::Pack(a) => pack::run_pack(a).map(|()| 0),
        Command::Unpack(a) => pack::run_unpack(a).map(|()| 0),
        Command::Upgrade(a) => upgrade::run(a).map(|()| 0),
        Command::Map(a) => map::run(a),
        Command::Show(a) => show::run(a),
        Command::Mcp(a) => mcp::run(a),
        Command::Serve(a) => serve::run(*a),
        #[cfg(feature = "openai")]
        Command::Ask(a) => ask::run(a),
        Command::Symbols(a) => structure::run_symbols(a),
        Command::Refs(a) => structure::run_refs(a),
        Command::Deps(a) => structure::run_deps(a),
    }
}

/// Prints `v` as pretty JSON on stdout (a command's `--json` summary).
pub(crate) fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    writeln!(
        std::io::stdout().lock(),
        "{}",
        serde_json::to_string_pretty(v)?
    )?;
    Ok(())
}

/// `1234567` → `1.2 MB`.
pub(crate) fn human_bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} MB", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1} kB", n / 1e3)
    } else {
        format!("{n} B")
    }
}
