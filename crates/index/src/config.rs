//! The pipeline config: `pipelines/default.toml` (embedded), overlaid by a user file (`--config`),
//! overlaid by command-line flags. The resolved config and its hash go into the manifest.
use serde::{Deserialize, Serialize};
use std::path::Path;

pub use crate::summarize::SummaryConfig;
use crate::summarize::default_summary;
use crate::{Error, Result};
pub use trove_embed::config::EmbedConfig;
use trove_embed::config::default_true;
pub use trove_lang::chunk::ChunkConfig;

/// The built-in defaults, fully commented in `pipelines/default.toml`.
pub use trove_base::defaults::PIPELINE_TOML as DEFAULT_TOML;

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

impl PipelineConfig {
    /// The built-in defaults.
    pub fn defaults() -> Result<Self> {
        Self::from_toml_layers(&[DEFAULT_TOML])
    }

    /// Defaults overlaid by the TOML file at `path` (only the keys it sets change).
    pub fn with_overlay_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_toml_layers(&[DEFAULT_TOML, &text]).map_err(|e| match e {
            Error::Base(trove_base::Error::Config(m)) => {
                Error::config(format!("{}: {m}", path.display()))
            }
            e => e,
        })
    }

    fn from_toml_layers(layers: &[&str]) -> Result<Self> {
        let mut merged = toml::Table::new();
        for text in layers {
            let t: toml::Table = toml::from_str(text).map_err(|e| Error::config(e.to_string()))?;
            merge(&mut merged, t);
        }
        let cfg: PipelineConfig = toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| Error::config(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks values that parse but make no sense.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::config(m.to_string()));
        if !matches!(
            self.chunk.chunker,
            trove_lang::lang::Chunker::Ast | trove_lang::lang::Chunker::Lines
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
        use trove_embed::EmbedBackend;
        match e.backend {
            EmbedBackend::Openai if e.url.trim().is_empty() => {
                return bad("embed.backend openai needs embed.url (or --embed-url)");
            }
            EmbedBackend::Openai if e.model.trim().is_empty() => {
                return bad("embed.backend openai needs embed.model (or --embed-model)");
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
                        trove_base::util::sha256_hex(prompts.as_bytes()).into(),
                    );
                }
            }
        }
        let json = serde_json::to_vec(&v).unwrap_or_default();
        trove_base::util::sha256_hex(&json)
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
        assert_eq!(c.chunk.chunker, trove_lang::lang::Chunker::Ast);
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
