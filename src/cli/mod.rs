//! The command line: one module per subcommand, each with `XArgs` and `run(args)`.
//! `main.rs` only parses and maps errors to exit codes.
#[cfg(feature = "openai")]
pub mod ask;
pub mod chunks;
pub mod compact;
pub mod index;
pub mod inspect;
pub mod languages;
pub mod map;
pub mod mcp;
pub mod merge;
pub mod pack;
pub mod query;
pub mod serve;
pub mod show;
pub mod sql;
pub mod structure;
pub mod sync;
pub mod tools;
pub mod verify;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// `trove --version`: the version, the commit it was built from and the cargo features compiled in,
/// e.g. `0.1.0 (commit 1c6fc33a…, features: engine local onnx openai)`.
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
    format!(
        "{} (commit {}, features: {})",
        env!("CARGO_PKG_VERSION"),
        env!("TROVE_GIT_COMMIT"),
        features.join(" ")
    )
});

/// trove: index source repositories into portable Parquet bundles, and query them.
#[derive(Debug, Parser)]
#[command(name = "trove", version = VERSION.as_str(), about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands; each one's help is the doc of its `XArgs`.
#[derive(Debug, Subcommand)]
pub enum Command {
    Index(Box<index::IndexArgs>),
    Inspect(inspect::InspectArgs),
    Verify(verify::VerifyArgs),
    Languages(languages::LanguagesArgs),
    Chunks(chunks::ChunksArgs),
    Query(query::QueryArgs),
    Sql(sql::SqlArgs),
    Merge(merge::MergeArgs),
    Compact(compact::CompactArgs),
    Sync(sync::SyncArgs),
    Pack(pack::PackArgs),
    Unpack(pack::UnpackArgs),
    Map(map::MapArgs),
    Show(show::ShowArgs),
    Mcp(mcp::McpArgs),
    Serve(Box<serve::ServeArgs>),
    #[cfg(feature = "openai")]
    Ask(ask::AskArgs),
    Symbols(structure::SymbolsArgs),
    Refs(structure::RefsArgs),
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
    let text = format!("{e:#}");
    text.contains("No such file or directory")
        || text.contains("No files found that match the pattern")
        || (text.contains(" is missing") && text.contains("trove verify"))
}

/// Runs the parsed command line; returns the exit code (0 ok, 1 no results from a query).
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Index(a) => index::run(*a),
        Command::Inspect(a) => inspect::run(a).map(|()| 0),
        Command::Verify(a) => verify::run(a).map(|()| 0),
        Command::Languages(a) => languages::run(a).map(|()| 0),
        Command::Chunks(a) => chunks::run(a).map(|()| 0),
        Command::Query(a) => query::run(a),
        Command::Sql(a) => sql::run(a).map(|()| 0),
        Command::Merge(a) => merge::run(a).map(|()| 0),
        Command::Compact(a) => compact::run(a).map(|()| 0),
        Command::Sync(a) => sync::run(a).map(|()| 0),
        Command::Pack(a) => pack::run_pack(a).map(|()| 0),
        Command::Unpack(a) => pack::run_unpack(a).map(|()| 0),
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

/// A count of results (`-k`): at least 1 (0 asks for nothing, a mistake) and at most what SQL's
/// `LIMIT` takes.
pub(crate) fn limit() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=i64::MAX as u64)
}

/// A count of threads or handles, at most 1,024 (a mistyped 100000 would try to start them all):
/// from 0 (one per core) when `zero`, else from 1.
pub(crate) fn threads(zero: bool) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(u64::from(!zero)..=1024)
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

/// Late interaction's reach at query time (`trove query`, `serve`, `mcp`, `ask`).
#[derive(Debug, Clone, clap::Args)]
pub struct Rerank {
    /// Best hits reordered by late interaction in hybrid and vector mode (the local model's
    /// word-piece vectors of the query matched against each chunk's); 0: off. Only a `local`
    /// embedder has such vectors (hash and openai bundles are not reordered). It reads N chunks
    /// with the model at each query (at 20, on 2 cores: about +0.4 s with int8, +1 s with fp32).
    #[arg(long, value_name = "N", default_value_t = trove::query::RERANK)]
    pub rerank: usize,
}

/// Where a bundle's model embedder is found at query time, when not where the manifest says.
#[derive(Debug, Clone, clap::Args)]
pub struct EmbedderAt {
    /// The model folder of a bundle indexed with `--embedder local` (default: the folder it was
    /// indexed with, or $TROVE_MODEL_DIR). Its fingerprint must match the bundle's.
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<std::path::PathBuf>,
    /// The server of a bundle indexed with `--embedder openai` (default: the URL it was indexed
    /// with, or $TROVE_EMBED_URL); the API key comes from the same environment variable.
    #[arg(long, value_name = "URL")]
    pub embed_url: Option<String>,
}

impl EmbedderAt {
    /// Makes these the process's embedder overrides.
    pub fn apply(&self) {
        trove::embed::set_overrides(trove::embed::Overrides {
            model_dir: self.model_dir.clone(),
            url: self.embed_url.clone(),
        });
    }
}
