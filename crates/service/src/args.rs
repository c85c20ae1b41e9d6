//! Command-line options the service's commands share with the CLI: output formats, reranking and
//! where the query embedder's model is, and the value parsers of counts and thread numbers.

/// Late interaction's reach at query time (`trove query`, `serve`, `mcp`, `ask`).
#[derive(Debug, Clone, clap::Args)]
pub struct Rerank {
    /// Best hits reordered by late interaction in hybrid and vector mode (the local model's
    /// word-piece vectors of the query matched against each chunk's); 0: off. Only a `local`
    /// embedder has such vectors (hash and openai bundles are not reordered). It reads N chunks
    /// with the model at each query (at 20, on 2 cores: about +0.4 s with int8, +1 s with fp32).
    #[arg(long, value_name = "N", default_value_t = trove_query::RERANK)]
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
        trove_embed::set_overrides(trove_embed::Overrides {
            model_dir: self.model_dir.clone(),
            url: self.embed_url.clone(),
        });
    }
}

/// A count of results (`-k`): at least 1 (0 asks for nothing, a mistake) and at most what SQL's
/// `LIMIT` takes.
pub fn limit() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=i64::MAX as u64)
}

/// A count of threads or handles, at most 1,024 (a mistyped 100000 would try to start them all):
/// from 0 (one per core) when `zero`, else from 1.
pub fn threads(zero: bool) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(u64::from(!zero)..=1024)
}

/// Output formats of `query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    /// Lines for a person to read.
    Text,
    /// One JSON document.
    Json,
    /// One JSON object per line.
    Jsonl,
}
