//! Summaries: a small [`Summarizer`] trait over `extractive` (the default, [`crate::extract::summary`])
//! and `llm` (an OpenAI-compatible `/v1/chat/completions` server, feature `openai`).
//!
//! Input: a file or a definition chunk that has no doc comment (code that documents itself keeps
//! its own words). Output: one sentence, or `None` to keep the extractive summary. The `llm`
//! summarizer asks the server with the prompts of `pipelines/prompts/summary.toml` (data, not
//! code), at most `concurrency` calls at once and `budget` calls per run; answers are cached by
//! (model, prompts, code) under the trove cache directory, so a re-run asks for nothing it
//! already has. Any failure — server down, refusal, empty reply, budget spent — keeps the
//! extractive summary and is counted, never fatal.
// Without `openai` there is no LLM summarizer: its prompts and counters go unused.
#![cfg_attr(not(feature = "openai"), allow(dead_code, unused_imports))]
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use trove_embed::config::{default_api_key_env, default_concurrency, default_timeout_secs};

/// The built-in prompts.
pub const DEFAULT_PROMPTS: &str = include_str!("../../../pipelines/prompts/summary.toml");

/// What is summarized.
pub struct Request<'a> {
    /// "file" or "chunk".
    pub target: &'a str,
    /// Language id.
    pub language: &'a str,
    /// Repo-relative path.
    pub path: &'a str,
    /// Chunk kind (`function`, `class`…); for a file, "file".
    pub kind: &'a str,
    /// Symbol path of a chunk; for a file, its path.
    pub symbol: &'a str,
    /// The code.
    pub code: &'a str,
}

/// A summary backend.
pub trait Summarizer: Send + Sync {
    /// Which backend it is.
    fn backend(&self) -> SummaryBackend;
    /// A summary of undocumented code, or `None` to keep the extractive one.
    fn summarize(&self, req: &Request<'_>) -> Option<String>;
    /// Calls made, cache hits, and fallbacks to the extractive summary by reason.
    fn stats(&self) -> SummaryStats {
        SummaryStats::default()
    }
}

/// What a summarizer did in a run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SummaryStats {
    /// Backend name (empty: the extractive default, which counts nothing).
    pub backend: String,
    /// Calls to the server.
    pub calls: u64,
    /// Summaries answered by the cache.
    pub cache_hits: u64,
    /// Summaries written by the server (calls that gave a usable sentence).
    pub written: u64,
    /// Extractive summaries kept instead, by reason (`budget`, `error`, `empty`).
    pub fallbacks: BTreeMap<String, u64>,
}

/// The default: never overrides (the extractive summary stands).
pub struct Extractive;

impl Summarizer for Extractive {
    fn backend(&self) -> SummaryBackend {
        SummaryBackend::Extractive
    }
    fn summarize(&self, _req: &Request<'_>) -> Option<String> {
        None
    }
}

/// The prompts text a config uses (its file, or the built-in one).
pub fn prompts_text(cfg: &SummaryConfig) -> Result<String> {
    if cfg.prompts.trim().is_empty() {
        return Ok(DEFAULT_PROMPTS.to_string());
    }
    std::fs::read_to_string(cfg.prompts.trim()).map_err(|e| Error::io(cfg.prompts.trim(), e))
}

/// Parsed prompts.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Prompts {
    version: u32,
    max_tokens: u32,
    temperature: f64,
    system: String,
    chunk: String,
    file: String,
}

trove_base::named_set! {
    /// A summarizer (`summary.backend`, `--summarizer`).
    SummaryBackend {
        /// From docs and the syntax tree.
        Extractive = "extractive",
        /// An OpenAI-compatible chat server, for code without docs only.
        Llm = "llm",
    }
}

/// Builds the summarizer a config asks for.
#[allow(unreachable_patterns)] // `other` is reachable only when `llm` is not compiled in
pub fn from_config(cfg: &SummaryConfig) -> Result<Box<dyn Summarizer>> {
    match cfg.backend {
        SummaryBackend::Extractive => Ok(Box::new(Extractive)),
        #[cfg(feature = "openai")]
        SummaryBackend::Llm => Ok(Box::new(llm::LlmSummarizer::new(cfg)?)),
        other => Err(Error::config(format!(
            "summarizer \"{other}\" is not built into this trove"
        ))),
    }
}

/// Fills `{name}` placeholders.
fn fill(template: &str, r: &Request<'_>, code: &str) -> String {
    template
        .replace("{language}", r.language)
        .replace("{path}", r.path)
        .replace("{kind}", r.kind)
        .replace("{symbol}", r.symbol)
        .replace("{code}", code)
}

/// The reply's first non-empty line, unquoted, at most 200 characters.
fn clean(reply: &str) -> Option<String> {
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.trim_matches(['"', '\'', '`', '*']).trim();
    let s: String = line.chars().take(200).collect();
    (!s.is_empty()).then_some(s)
}

/// Counted fallbacks.
#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    hits: AtomicU64,
    written: AtomicU64,
    fallbacks: Mutex<BTreeMap<String, u64>>,
}

impl Counts {
    fn fallback(&self, why: &str) {
        if let Ok(mut f) = self.fallbacks.lock() {
            *f.entry(why.to_string()).or_default() += 1;
        }
    }
}

#[cfg(feature = "openai")]
mod llm {
    use super::*;
    use rustc_hash::FxHashMap;
    use std::io::Write;
    use std::sync::Condvar;
    use trove_base::http::{Client, endpoint};

    /// The `llm` summarizer (see the module docs).
    pub struct LlmSummarizer {
        client: Client,
        url: String,
        model: String,
        prompts: Prompts,
        max_input_chars: usize,
        budget: u64,
        /// Calls in flight, bounded by `concurrency`.
        slots: (Mutex<usize>, Condvar),
        concurrency: usize,
        cache: FxHashMap<String, String>,
        cache_file: Mutex<Option<std::fs::File>>,
        key_prefix: String,
        counts: Counts,
    }

    impl LlmSummarizer {
        pub fn new(cfg: &SummaryConfig) -> Result<Self> {
            let text = prompts_text(cfg)?;
            let prompts: Prompts = toml::from_str(&text)
                .map_err(|e| Error::config(format!("summary prompts: {e}")))?;
            let key_prefix = trove_base::util::sha256_hex(
                format!(
                    "{}|v{}|{}|{}",
                    cfg.model, prompts.version, text, cfg.max_input_chars
                )
                .as_bytes(),
            );
            let (cache, cache_file) = open_cache(&key_prefix[..32]);
            Ok(LlmSummarizer {
                client: Client::from_config(cfg.timeout_secs, cfg.retries, &cfg.api_key_env),
                url: endpoint(&cfg.url, "chat/completions"),
                model: cfg.model.clone(),
                prompts,
                max_input_chars: cfg.max_input_chars,
                budget: cfg.budget,
                slots: (Mutex::new(0), Condvar::new()),
                concurrency: cfg.concurrency,
                cache,
                cache_file: Mutex::new(cache_file),
                key_prefix,
                counts: Counts::default(),
            })
        }

        fn ask(&self, r: &Request<'_>) -> std::result::Result<String, &'static str> {
            let mut end = self.max_input_chars.min(r.code.len());
            while !r.code.is_char_boundary(end) {
                end -= 1;
            }
            let template = if r.target == "file" {
                &self.prompts.file
            } else {
                &self.prompts.chunk
            };
            let body = serde_json::json!({
                "model": self.model,
                "messages": [
                    {"role": "system", "content": self.prompts.system},
                    {"role": "user", "content": fill(template, r, &r.code[..end])},
                ],
                "max_tokens": self.prompts.max_tokens,
                "temperature": self.prompts.temperature,
            });
            // A slot, then the call.
            {
                let (lock, cv) = &self.slots;
                let mut n = lock.lock().map_err(|_| "error")?;
                while *n >= self.concurrency {
                    n = cv.wait(n).map_err(|_| "error")?;
                }
                *n += 1;
            }
            let reply = self.client.post(&self.url, &body);
            {
                let (lock, cv) = &self.slots;
                if let Ok(mut n) = lock.lock() {
                    *n -= 1;
                }
                cv.notify_one();
            }
            let reply = reply.map_err(|_| "error")?;
            reply
                .pointer("/choices/0/message/content")
                .and_then(|c| c.as_str())
                .and_then(clean)
                .ok_or("empty")
        }
    }

    /// Summaries cached by earlier runs, and this process's file to append to.
    fn open_cache(name: &str) -> (FxHashMap<String, String>, Option<std::fs::File>) {
        let mut map = FxHashMap::default();
        let Some(dir) = trove_base::util::cache_dir().map(|d| d.join("summaries").join(name))
        else {
            return (map, None);
        };
        if std::fs::create_dir_all(&dir).is_err() {
            return (map, None);
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let Ok(text) = std::fs::read_to_string(e.path()) else {
                    continue;
                };
                // One JSON object per line; a line cut short by a crash is skipped.
                for line in text.lines() {
                    if let Ok(serde_json::Value::Object(o)) = serde_json::from_str(line)
                        && let (Some(k), Some(v)) = (
                            o.get("k").and_then(|k| k.as_str()),
                            o.get("v").and_then(|v| v.as_str()),
                        )
                    {
                        map.insert(k.to_string(), v.to_string());
                    }
                }
            }
        }
        let file = std::fs::File::create(dir.join(format!(
            "{}-{}.jsonl",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        )))
        .ok();
        (map, file)
    }

    impl Summarizer for LlmSummarizer {
        fn backend(&self) -> SummaryBackend {
            SummaryBackend::Llm
        }

        fn summarize(&self, r: &Request<'_>) -> Option<String> {
            let key = trove_base::util::sha256_hex(
                format!(
                    "{}|{}|{}|{}|{}",
                    self.key_prefix, r.target, r.path, r.symbol, r.code
                )
                .as_bytes(),
            );
            if let Some(s) = self.cache.get(&key) {
                self.counts.hits.fetch_add(1, Relaxed);
                return Some(s.clone());
            }
            // Take a call from the budget (a spent budget keeps the extractive summary).
            let taken = self
                .counts
                .calls
                .fetch_update(Relaxed, Relaxed, |c| (c < self.budget).then_some(c + 1));
            if taken.is_err() {
                self.counts.fallback("budget");
                return None;
            }
            match self.ask(r) {
                Ok(s) => {
                    self.counts.written.fetch_add(1, Relaxed);
                    if let Ok(mut f) = self.cache_file.lock()
                        && let Some(f) = f.as_mut()
                    {
                        let line = serde_json::json!({"k": key, "v": s}).to_string();
                        let _ = writeln!(f, "{line}");
                    }
                    Some(s)
                }
                Err(why) => {
                    self.counts.fallback(why);
                    None
                }
            }
        }

        fn stats(&self) -> SummaryStats {
            SummaryStats {
                backend: SummaryBackend::Llm.to_string(),
                calls: self.counts.calls.load(Relaxed),
                cache_hits: self.counts.hits.load(Relaxed),
                written: self.counts.written.load(Relaxed),
                fallbacks: self
                    .counts
                    .fallbacks
                    .lock()
                    .map(|f| f.clone())
                    .unwrap_or_default(),
            }
        }
    }
}

/// `[summary]`: how files and chunks without docs get their one-sentence summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SummaryConfig {
    /// Extractive (from docs and the syntax tree) or llm (an OpenAI-compatible chat server, for
    /// code without docs only).
    pub backend: SummaryBackend,
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

/// The `[summary]` defaults (the extractive summarizer).
pub fn default_summary() -> SummaryConfig {
    SummaryConfig {
        backend: SummaryBackend::Extractive,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_prompts_parse_and_replies_are_cleaned() {
        let p: Prompts = toml::from_str(DEFAULT_PROMPTS).unwrap();
        assert_eq!(p.version, 1);
        assert!(p.chunk.contains("{code}") && p.file.contains("{code}"));
        assert_eq!(
            clean("\n  \"Parses the config file.\"\nmore").as_deref(),
            Some("Parses the config file.")
        );
        assert_eq!(clean("  \n "), None);
    }
}
