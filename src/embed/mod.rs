//! Embed stage: chunks to vectors through a small [`Embedder`] trait.
//!
//! Input: chunk texts in batches. Output: one `dim`-long vector per text. Invariants: the same text
//! gives the same vector on every machine; the manifest stamps backend, model, dim and fingerprint so
//! a query with another embedder is refused.
use crate::Result;
use rustc_hash::FxHashMap;

use crate::extract;
use crate::util::{fnv1a64, sha256_hex};

/// A pluggable embedding backend.
pub trait Embedder: Send + Sync {
    /// Backend name (`hash`).
    fn backend(&self) -> &str;
    /// Model id within the backend.
    fn model(&self) -> &str;
    /// Vector dimension.
    fn dim(&self) -> usize;
    /// Embeds a batch of texts.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Identifies backend + model + settings: equal fingerprints give equal vectors.
    fn fingerprint(&self) -> String {
        sha256_hex(format!("{}|{}|{}", self.backend(), self.model(), self.dim()).as_bytes())
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
            model: format!("fnv1a-{}-{max_token_len}", extract::TOKENIZER),
        }
    }

    /// Embeds one text: each token weighs `1 + ln tf`.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        // Count tokens by their hash: no string is allocated per token.
        let mut counts: FxHashMap<u64, u32> = FxHashMap::default();
        extract::tokenize(text, self.max_token_len, |t| {
            *counts.entry(fnv1a64(t.as_bytes())).or_default() += 1
        });
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
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
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
}

/// An embedder that counts what passes through it: calls and texts. The pipeline wraps every
/// backend in one, so the summary (and the reuse tests) can tell how many chunks were really
/// embedded and how many were carried over.
pub struct Counting<E> {
    inner: E,
    calls: std::sync::atomic::AtomicU64,
    texts: std::sync::atomic::AtomicU64,
}

impl<E: Embedder> Counting<E> {
    /// Wraps `inner`.
    pub fn new(inner: E) -> Self {
        Counting {
            inner,
            calls: Default::default(),
            texts: Default::default(),
        }
    }
    /// (calls to `embed`, texts embedded) so far.
    pub fn stats(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.calls.load(Relaxed), self.texts.load(Relaxed))
    }
}

impl<E: Embedder> Embedder for Counting<E> {
    fn backend(&self) -> &str {
        self.inner.backend()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        use std::sync::atomic::Ordering::Relaxed;
        self.calls.fetch_add(1, Relaxed);
        self.texts.fetch_add(texts.len() as u64, Relaxed);
        self.inner.embed(texts)
    }
}

/// The text embedded for a chunk: where it is and what it is named, then its content.
pub fn embed_text(path: &str, symbol_path: Option<&str>, content: &str) -> String {
    match symbol_path {
        Some(s) => format!("{path} {s}\n{content}"),
        None => format!("{path}\n{content}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
