//! The pipeline config: `pipelines/default.toml` (embedded), overlaid by a user file (`--config`),
//! overlaid by command-line flags. The resolved config and its hash go into the manifest.
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::{Error, Result};

/// The built-in defaults, fully commented in `pipelines/default.toml`.
pub const DEFAULT_TOML: &str = include_str!("../pipelines/default.toml");

/// The whole pipeline config.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// What is walked and what is skipped.
    pub source: SourceConfig,
    /// How files are cut into chunks.
    pub chunk: ChunkConfig,
    /// BM25 parameters and tokenizer limits.
    pub bm25: Bm25Config,
    /// The embedding backend.
    pub embed: EmbedConfig,
    /// The summarizer.
    #[serde(default = "default_summary")]
    pub summary: SummaryConfig,
    /// When an incremental run compacts the bundle's segments.
    #[serde(default)]
    pub bundle: BundleConfig,
}

/// `[bundle]`: when `trove index` compacts on its own after adding a segment. Not part of the
/// pipeline hash: it decides how rows are laid out, never what they are.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BundleConfig {
    /// Compact when the bundle has more segments than this. A query scans every segment's
    /// caches, so its cost grows with their count; 8 keeps a bundle of nightly runs with a week
    /// of deltas below the 1.5× query-time bound while a daily delta still costs only its change.
    pub max_segments: usize,
    /// Compact when this share of the stored chunks is dead (tombstoned): dead rows are bytes
    /// shipped and scanned for nothing. At 0.25 a bundle is never more than a third larger than
    /// its live rows.
    pub max_dead_ratio: f64,
}

impl Default for BundleConfig {
    fn default() -> Self {
        BundleConfig {
            max_segments: 8,
            max_dead_ratio: 0.25,
        }
    }
}

/// `[summary]`: how files and chunks without docs get their one-sentence summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SummaryConfig {
    /// Extractive (from docs and the syntax tree) or llm (an OpenAI-compatible chat server, for
    /// code without docs only).
    pub backend: crate::summarize::SummaryBackend,
    /// `llm`: the server's base URL (`…/v1` or the full `…/v1/chat/completions`).
    #[serde(default)]
    pub url: String,
    /// `llm`: the model name.
    #[serde(default)]
    pub model: String,
    /// `llm`: the environment variable holding the API key.
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    /// `llm`: most calls per run (cache hits are free); past it, extractive summaries (counted).
    #[serde(default = "default_budget")]
    pub budget: u64,
    /// `llm`: calls in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// `llm`: seconds per call.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// `llm`: retries of a call that timed out or got 429/5xx.
    #[serde(default = "default_summary_retries")]
    pub retries: u32,
    /// `llm`: code sent per call is cut to this many characters.
    #[serde(default = "default_summary_input")]
    pub max_input_chars: usize,
    /// `llm`: a prompts file (TOML, as `pipelines/prompts/summary.toml`); empty = the built-in one.
    #[serde(default)]
    pub prompts: String,
}

fn default_summary() -> SummaryConfig {
    SummaryConfig {
        backend: crate::summarize::SummaryBackend::Extractive,
        url: String::new(),
        model: String::new(),
        api_key_env: default_api_key_env(),
        budget: default_budget(),
        concurrency: default_concurrency(),
        timeout_secs: default_timeout_secs(),
        retries: default_summary_retries(),
        max_input_chars: default_summary_input(),
        prompts: String::new(),
    }
}
fn default_budget() -> u64 {
    2000
}
fn default_summary_retries() -> u32 {
    2
}
fn default_summary_input() -> usize {
    6000
}

/// `[source]`: the walk and the skip rules.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Files larger than this are skipped as too large.
    pub max_file_bytes: u64,
    /// A line longer than this marks the file as minified.
    pub max_line_bytes: usize,
    /// Honour .gitignore / .ignore / .troveignore.
    pub respect_gitignore: bool,
    /// Directory names never descended into.
    pub exclude_dirs: Vec<String>,
    /// Lock file name globs.
    pub lock_files: Vec<String>,
    /// Minified/derived file name globs.
    pub minified_files: Vec<String>,
    /// Secret-bearing file name globs.
    pub secret_files: Vec<String>,
    /// Regexes marking generated files (first 1 KiB).
    pub generated_markers: Vec<String>,
    /// Replace high-confidence secrets in indexed text by `[REDACTED:<kind>]` (`--no-redact`).
    #[serde(default = "default_true")]
    pub redact_secrets: bool,
}

/// `[chunk]`: chunker choice and size budget.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChunkConfig {
    /// `ast` (each language's own chunker) or `lines` (line windows for every file).
    pub chunker: crate::chunk::Chunker,
    /// Budget of one chunk in non-whitespace characters.
    pub max_chars: usize,
    /// Gaps with fewer non-whitespace characters are dropped.
    pub min_block_chars: usize,
    /// Lines per window of the line chunker.
    pub window_lines: usize,
    /// Parse time bound per file in milliseconds.
    pub parse_timeout_ms: u64,
}

/// `[bm25]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Bm25Config {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation.
    pub b: f64,
    /// Longer tokens are not indexed.
    pub max_token_len: usize,
}

/// `[embed]`: which backend embeds chunks, and how it is driven. Only `backend`, `dim`, `model`,
/// `dimensions`, `model_dir` and `window_tokens` decide the vectors (they make the embedder's
/// fingerprint), and `windows` how many a chunk gets (in the config hash); the rest is how the
/// work is done, and changing it never forces a rebuild.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EmbedConfig {
    /// The backend.
    pub backend: crate::embed::EmbedBackend,
    /// Vector dimension of the `hash` embedder.
    pub dim: usize,
    /// `openai`: the model name sent to the server. `local`: a display name (default: the folder's).
    #[serde(default)]
    pub model: String,
    /// `openai`: base URL of an OpenAI-compatible server (`…/v1`, or the full `…/v1/embeddings`).
    #[serde(default)]
    pub url: String,
    /// `openai`: the environment variable holding the API key (the key itself is never stored).
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    /// `openai`: the `dimensions` asked of the server (0 = the model's own).
    #[serde(default)]
    pub dimensions: usize,
    /// `local`: a sentence-transformers model folder (config.json, tokenizer.json, model.safetensors).
    #[serde(default)]
    pub model_dir: String,
    /// `local`: what runs the model: `auto` (ONNX Runtime when the folder has an ONNX file and
    /// libonnxruntime is found, else candle), `onnx`, `candle`. A bundle stamps what ran; a
    /// manifest without the key was made by candle.
    #[serde(default = "default_runtime")]
    pub runtime: crate::embed::LocalRuntime,
    /// `local` on ONNX Runtime: the ONNX file in the model folder (empty: `model.int8.onnx` when
    /// there, else `model.onnx`).
    #[serde(default)]
    pub onnx_file: String,
    /// Most texts per call to the backend.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Most estimated tokens (characters / 4) per call to the backend.
    #[serde(default = "default_batch_tokens")]
    pub batch_tokens: usize,
    /// Calls to the backend in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// `openai`: inputs longer than this many characters are cut (counted in the summary).
    #[serde(default = "default_max_input_chars")]
    pub max_input_chars: usize,
    /// `openai`: seconds before a call is abandoned (and retried).
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// `openai`: retries of a call that timed out or got 429/5xx, with exponential backoff.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Keep model vectors in the embedding cache, keyed by (model fingerprint, text hash).
    #[serde(default = "default_true")]
    pub cache: bool,
    /// Most vectors per chunk for a model that reads only the start of a text (`local`: MiniLM
    /// reads 256 word pieces): the rest of a longer chunk gets windows of its own, and a query
    /// scores the chunk by its best window (MaxP). 1: the start only.
    #[serde(default = "default_windows")]
    pub windows: usize,
    /// `local`: the most word pieces the model reads of each window (each text a chunk is
    /// embedded as); 0 (the default): as many as the model can (MiniLM: 256). A query is always
    /// read up to the model's own length. Left out of a stamp when 0, so a bundle made with the
    /// default stamps (and hashes) what it did before the setting existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub window_tokens: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub(crate) fn default_windows() -> usize {
    4
}

impl EmbedConfig {
    /// The most texts a chunk is embedded as: `windows` for a `local` model (it reads only a
    /// text's start, and says where it stops), 1 for `hash` (it reads all of a text) and `openai`
    /// (a server does not say where it stops reading).
    pub fn windows_used(&self) -> usize {
        match self.backend {
            crate::embed::EmbedBackend::Local => self.windows,
            _ => 1,
        }
    }
}

fn default_runtime() -> crate::embed::LocalRuntime {
    crate::embed::LocalRuntime::Candle
}

fn default_api_key_env() -> String {
    "OPENAI_API_KEY".into()
}
fn default_batch_size() -> usize {
    64
}
fn default_batch_tokens() -> usize {
    32_000
}
fn default_concurrency() -> usize {
    4
}
fn default_max_input_chars() -> usize {
    20_000
}
fn default_timeout_secs() -> u64 {
    60
}
fn default_retries() -> u32 {
    5
}
fn default_true() -> bool {
    true
}

impl PipelineConfig {
    /// The built-in defaults.
    pub fn defaults() -> Result<Self> {
        Self::from_toml_layers(&[DEFAULT_TOML])
    }

    /// Defaults overlaid by the TOML file at `path` (only the keys it sets change).
    pub fn with_overlay_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_toml_layers(&[DEFAULT_TOML, &text]).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            e => e,
        })
    }

    fn from_toml_layers(layers: &[&str]) -> Result<Self> {
        let mut merged = toml::Table::new();
        for text in layers {
            let t: toml::Table = toml::from_str(text).map_err(|e| Error::Config(e.to_string()))?;
            merge(&mut merged, t);
        }
        let cfg: PipelineConfig = toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| Error::Config(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if !matches!(
            self.chunk.chunker,
            crate::chunk::Chunker::Ast | crate::chunk::Chunker::Lines
        ) {
            return bad("chunk.chunker must be \"ast\" or \"lines\"");
        }
        if self.chunk.max_chars < 64 {
            return bad("chunk.max_chars must be at least 64");
        }
        if self.bundle.max_segments == 0 {
            return bad("bundle.max_segments must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.bundle.max_dead_ratio) {
            return bad("bundle.max_dead_ratio must be between 0 and 1");
        }
        if !(1..=64).contains(&self.embed.windows) {
            return bad("embed.windows must be between 1 and 64");
        }
        if self.embed.window_tokens != 0 && !(16..=8192).contains(&self.embed.window_tokens) {
            return bad("embed.window_tokens must be 0 (the model's own length) or 16 to 8192");
        }
        if self.chunk.window_lines == 0 {
            return bad("chunk.window_lines must be at least 1");
        }
        let e = &self.embed;
        use crate::embed::EmbedBackend;
        match e.backend {
            EmbedBackend::Openai if e.url.trim().is_empty() => {
                return bad("embed.backend openai needs embed.url (or --embed-url)");
            }
            EmbedBackend::Openai if e.model.trim().is_empty() => {
                return bad("embed.backend openai needs embed.model (or --embed-model)");
            }
            EmbedBackend::Local if e.model_dir.trim().is_empty() => {
                return bad("embed.backend local needs embed.model_dir (or --model-dir)");
            }
            EmbedBackend::Hash | EmbedBackend::Openai | EmbedBackend::Local => {}
        }
        if !(8..=4096).contains(&e.dim) {
            return bad("embed.dim must be between 8 and 4096");
        }
        if e.batch_size == 0 || e.batch_tokens == 0 || e.concurrency == 0 {
            return bad(
                "embed.batch_size, embed.batch_tokens and embed.concurrency must be positive",
            );
        }
        let sm = &self.summary;
        if sm.backend == crate::summarize::SummaryBackend::Llm
            && (sm.url.trim().is_empty() || sm.model.trim().is_empty())
        {
            return bad(
                "summary.backend llm needs summary.url and summary.model (or --summary-url, --summary-model)",
            );
        }
        if sm.concurrency == 0 || sm.max_input_chars < 16 {
            return bad(
                "summary.concurrency must be positive and summary.max_input_chars at least 16",
            );
        }
        if e.max_input_chars < 16 {
            return bad("embed.max_input_chars must be at least 16");
        }
        if self.source.max_file_bytes == 0 {
            return bad("source.max_file_bytes must be positive");
        }
        // What a bundle's readers refuse must not be written: these checks are the manifest's.
        let bm = &self.bm25;
        if !(bm.k1.is_finite() && bm.k1 >= 0.0) {
            return bad("bm25.k1 must be a number of at least 0 (1.2 by default)");
        }
        if !(0.0..=1.0).contains(&bm.b) {
            return bad("bm25.b must be between 0 and 1 (0.75 by default)");
        }
        if bm.max_token_len < 2 {
            return bad("bm25.max_token_len must be at least 2");
        }
        if self.source.max_line_bytes == 0 {
            return bad("source.max_line_bytes must be positive (it marks minified files)");
        }
        if self
            .source
            .generated_markers
            .iter()
            .any(|m| m.trim().is_empty())
        {
            return bad(
                "source.generated_markers must not hold an empty marker (it marks every file)",
            );
        }
        Ok(())
    }

    /// sha256 of the canonical JSON of the resolved config: two bundles with the same hash were
    /// made by the same pipeline settings.
    /// The embedder is left out: its fingerprint is compared on its own, and how it is driven
    /// (batch sizes, concurrency, URL) does not change what is indexed.
    pub fn hash(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("embed");
            o.remove("bundle");
            // How many vectors a chunk gets changes the embeddings table, not any one vector.
            o.insert("embed_windows".into(), self.embed.windows_used().into());
            // What makes the summaries, not how the calls are driven.
            if let Some(sm) = o.get_mut("summary").and_then(|x| x.as_object_mut()) {
                for k in [
                    "url",
                    "api_key_env",
                    "budget",
                    "concurrency",
                    "timeout_secs",
                    "retries",
                ] {
                    sm.remove(k);
                }
                if self.summary.backend == crate::summarize::SummaryBackend::Llm {
                    let prompts = crate::summarize::prompts_text(&self.summary).unwrap_or_default();
                    sm.insert(
                        "prompts_sha256".into(),
                        crate::util::sha256_hex(prompts.as_bytes()).into(),
                    );
                }
            }
        }
        let json = serde_json::to_vec(&v).unwrap_or_default();
        crate::util::sha256_hex(&json)
    }
}

/// Deep-merges `over` into `base`: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_and_validate() {
        let c = PipelineConfig::defaults().unwrap();
        assert_eq!(c.chunk.chunker, crate::chunk::Chunker::Ast);
        assert_eq!(c.source.max_file_bytes, 1 << 20);
    }

    #[test]
    fn overlay_changes_only_its_keys() {
        let c = PipelineConfig::from_toml_layers(&[DEFAULT_TOML, "[chunk]\nmax_chars = 999\n"])
            .unwrap();
        assert_eq!(c.chunk.max_chars, 999);
        assert_eq!(
            c.chunk.window_lines,
            PipelineConfig::defaults().unwrap().chunk.window_lines
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = PipelineConfig::from_toml_layers(&[DEFAULT_TOML, "[chunk]\nmax_chrs = 1\n"])
            .unwrap_err();
        assert!(e.to_string().contains("max_chrs"), "{e}");
    }
}
