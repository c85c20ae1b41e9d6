//! `openai` embedder: any server speaking the OpenAI `/v1/embeddings` protocol (OpenAI, Azure,
//! Ollama, vLLM, text-embeddings-inference, LM Studio).
//!
//! Input: texts, cut to `max_input_chars` first. Output: one vector per text, put back in input
//! order by the reply's `index`. The dimension is learned from one probe call when the embedder is
//! built for indexing (so a wrong URL, key or model stops the run before any work), and every
//! reply is checked against it. An "input too long" refusal cuts the longest inputs in half and
//! tries again (each cut counted); retries, backoff and `Retry-After` are [`trove_base::http`]'s.
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Counters, Embedder, Limits};
use crate::config::EmbedConfig;
use crate::{Error, Result};
use trove_base::http::{Client, Failure, endpoint};

/// Halvings of too-long inputs tried before giving up.
const MAX_CUTS: usize = 6;

/// An OpenAI-compatible embeddings client.
pub struct OpenAiEmbedder {
    client: Client,
    url: String,
    model: String,
    dimensions: usize,
    dim: usize,
    max_input_chars: usize,
    limits: Limits,
    tokens: AtomicU64,
    truncated: AtomicU64,
}

impl OpenAiEmbedder {
    /// A client for `cfg`'s server. `known_dim` (a bundle's stamped dimension, at query time)
    /// skips the probe call; without it one call learns the dimension.
    pub fn new(cfg: &EmbedConfig, known_dim: Option<usize>) -> Result<Self> {
        let mut e = OpenAiEmbedder {
            client: Client::from_config(cfg.timeout_secs, cfg.retries, &cfg.api_key_env),
            url: endpoint(&cfg.url, "embeddings"),
            model: cfg.model.clone(),
            dimensions: cfg.dimensions,
            dim: known_dim.unwrap_or(0),
            max_input_chars: cfg.max_input_chars,
            limits: Limits {
                max_batch: cfg.batch_size,
                max_batch_tokens: cfg.batch_tokens,
                concurrency: cfg.concurrency,
            },
            tokens: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
        };
        if e.dim == 0 {
            let v = match e.request(&["dimension probe".to_string()])? {
                Reply::Vectors(v) => v,
                Reply::TooLong(m) => return Err(Error::server(m)),
            };
            e.dim = v.first().map_or(0, Vec::len);
            if e.dim == 0 {
                return Err(Error::server_at(
                    &e.url,
                    "the probe call returned an empty vector",
                ));
            }
            if e.dim > trove_bundle::MAX_DIM {
                return Err(Error::server_at(
                    &e.url,
                    format!(
                        "the probe call returned a vector of {} dimensions, more \
                     than a bundle holds ({}): ask for fewer with embed.dimensions",
                        e.dim,
                        trove_bundle::MAX_DIM
                    ),
                ));
            }
            if e.dimensions > 0 && e.dim != e.dimensions {
                return Err(Error::server_at(
                    &e.url,
                    format!(
                        "asked for {} dimensions, got {} (does model {} support `dimensions`?)",
                        e.dimensions, e.dim, e.model
                    ),
                ));
            }
            e.tokens.store(0, Relaxed);
        }
        Ok(e)
    }

    /// One call (with the client's retries): the vectors in input order, checked, or the
    /// server's refusal of inputs as too long.
    fn request(&self, inputs: &[String]) -> Result<Reply> {
        let mut body = serde_json::json!({
            "model": self.model,
            "input": inputs,
            "encoding_format": "float",
        });
        if self.dimensions > 0 {
            body["dimensions"] = self.dimensions.into();
        }
        match self.client.post(&self.url, &body) {
            Ok(reply) => self.parse(&reply, inputs.len()).map(Reply::Vectors),
            Err(Failure::TooLong(m)) => Ok(Reply::TooLong(m)),
            Err(other) => Err(Error::server(other.to_string())),
        }
    }

    fn parse(&self, reply: &serde_json::Value, n: usize) -> Result<Vec<Vec<f32>>> {
        let bad = |m: String| Error::server_at(&self.url, m);
        let data = reply
            .get("data")
            .and_then(|d| d.as_array())
            .ok_or_else(|| bad("the reply has no `data` array".into()))?;
        if data.len() != n {
            return Err(bad(format!("{} vectors for {n} inputs", data.len())));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
        for (pos, item) in data.iter().enumerate() {
            let i = item
                .get("index")
                .and_then(|x| x.as_u64())
                .map_or(pos, |x| x as usize);
            let v: Vec<f32> = item
                .get("embedding")
                .and_then(|e| e.as_array())
                .ok_or_else(|| bad(format!("item {pos} has no `embedding` array")))?
                .iter()
                .map(|x| x.as_f64().map(|f| f as f32))
                .collect::<Option<_>>()
                .ok_or_else(|| bad(format!("item {pos}'s embedding holds a non-number")))?;
            if self.dim > 0 && v.len() != self.dim {
                return Err(bad(format!(
                    "a vector of dimension {} where this embedder has {} (model {})",
                    v.len(),
                    self.dim,
                    self.model
                )));
            }
            match out.get_mut(i) {
                Some(slot @ None) => *slot = Some(v),
                _ => return Err(bad(format!("index {i} out of range or repeated"))),
            }
        }
        let usage = reply.get("usage");
        let tokens = usage
            .and_then(|u| u.get("total_tokens").or_else(|| u.get("prompt_tokens")))
            .and_then(|t| t.as_u64());
        self.tokens.fetch_add(tokens.unwrap_or(0), Relaxed);
        Ok(out.into_iter().flatten().collect())
    }
}

/// What one request to the server comes back with.
enum Reply {
    /// The vectors, in input order.
    Vectors(Vec<Vec<f32>>),
    /// The server refused the inputs as too long (the caller cuts them and tries again).
    TooLong(String),
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> String {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

impl Embedder for OpenAiEmbedder {
    fn backend(&self) -> &str {
        "openai"
    }
    fn model(&self) -> &str {
        &self.model
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn limits(&self) -> Option<Limits> {
        Some(self.limits)
    }
    fn counters(&self) -> Counters {
        let t = self.tokens.load(Relaxed);
        Counters {
            tokens: (t > 0).then_some(t),
            warnings: vec![
                ("truncated".into(), self.truncated.load(Relaxed)),
                ("retried".into(), self.client.retried.load(Relaxed)),
            ],
        }
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut inputs: Vec<String> = texts
            .iter()
            .map(|t| {
                if t.len() > self.max_input_chars {
                    self.truncated.fetch_add(1, Relaxed);
                    cut(t, self.max_input_chars)
                } else {
                    t.to_string()
                }
            })
            .collect();
        for _ in 0..=MAX_CUTS {
            match self.request(&inputs)? {
                Reply::Vectors(v) => return Ok(v),
                Reply::TooLong(m) => {
                    // Cut the longer half of the inputs in half and try again.
                    let longest = inputs.iter().map(String::len).max().unwrap_or(0);
                    if longest < 32 {
                        return Err(Error::server(m));
                    }
                    for s in inputs.iter_mut().filter(|s| s.len() * 2 >= longest) {
                        *s = cut(s, s.len() / 2);
                        self.truncated.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        Err(Error::server_at(
            &self.url,
            format!("inputs still too long after {MAX_CUTS} cuts"),
        ))
    }
}
