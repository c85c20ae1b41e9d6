//! `[embed]` of the pipeline config: which backend embeds chunks, and how it is driven.
use serde::{Deserialize, Serialize};

/// `[embed]`: which backend embeds chunks, and how it is driven. Only `backend`, `dim`, `model`,
/// `dimensions`, `model_dir` and `window_tokens` decide the vectors (they make the embedder's
/// fingerprint), and `windows` how many a chunk gets (in the config hash); the rest is how the
/// work is done, and changing it never forces a rebuild.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EmbedConfig {
    /// The backend.
    pub backend: crate::EmbedBackend,
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
    pub runtime: crate::LocalRuntime,
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

/// Default of `windows`.
pub fn default_windows() -> usize {
    4
}

impl EmbedConfig {
    /// The most texts a chunk is embedded as: `windows` for a `local` model (it reads only a
    /// text's start, and says where it stops), 1 for `hash` (it reads all of a text) and `openai`
    /// (a server does not say where it stops reading).
    pub fn windows_used(&self) -> usize {
        match self.backend {
            crate::EmbedBackend::Local => self.windows,
            _ => 1,
        }
    }
}

fn default_runtime() -> crate::LocalRuntime {
    crate::LocalRuntime::Candle
}

/// Default of `api_key_env` (here and in `[summary]`).
pub fn default_api_key_env() -> String {
    "OPENAI_API_KEY".into()
}
fn default_batch_size() -> usize {
    64
}
fn default_batch_tokens() -> usize {
    32_000
}
/// Default of `concurrency` (here and in `[summary]`).
pub fn default_concurrency() -> usize {
    4
}
fn default_max_input_chars() -> usize {
    20_000
}
/// Default of `timeout_secs` (here and in `[summary]`).
pub fn default_timeout_secs() -> u64 {
    60
}
fn default_retries() -> u32 {
    5
}
/// `true`, a serde default.
pub fn default_true() -> bool {
    true
}

impl EmbedConfig {
    /// The `[embed]` table of the built-in pipeline defaults (`pipelines/default.toml`).
    pub fn defaults() -> crate::Result<Self> {
        Ok(trove_base::defaults::section("embed")?)
    }
}
