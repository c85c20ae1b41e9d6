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
}

/// `[chunk]`: chunker choice and size budget.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChunkConfig {
    /// "ast" or "lines".
    pub chunker: String,
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

/// `[embed]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EmbedConfig {
    /// Backend name ("hash").
    pub backend: String,
    /// Vector dimension.
    pub dim: usize,
}

impl PipelineConfig {
    /// The built-in defaults.
    pub fn defaults() -> Result<Self> {
        Self::from_toml_layers(&[DEFAULT_TOML])
    }

    /// Defaults overlaid by the TOML file at `path` (only the keys it sets change).
    pub fn with_overlay_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_toml_layers(&[DEFAULT_TOML, &text])
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))
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
        if !matches!(self.chunk.chunker.as_str(), "ast" | "lines") {
            return bad("chunk.chunker must be \"ast\" or \"lines\"");
        }
        if self.chunk.max_chars < 64 {
            return bad("chunk.max_chars must be at least 64");
        }
        if self.chunk.window_lines == 0 {
            return bad("chunk.window_lines must be at least 1");
        }
        if self.embed.backend != "hash" {
            return bad("embed.backend: only \"hash\" is built in");
        }
        if !(8..=4096).contains(&self.embed.dim) {
            return bad("embed.dim must be between 8 and 4096");
        }
        if self.source.max_file_bytes == 0 {
            return bad("source.max_file_bytes must be positive");
        }
        Ok(())
    }

    /// sha256 of the canonical JSON of the resolved config: two bundles with the same hash were
    /// made by the same pipeline settings.
    pub fn hash(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
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
        assert_eq!(c.chunk.chunker, "ast");
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
