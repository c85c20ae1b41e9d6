//! `[chunk]` of the pipeline config: which chunker, and the size budget of a chunk.
use serde::{Deserialize, Serialize};

/// `[chunk]`: chunker choice and size budget.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChunkConfig {
    /// `ast` (each language's own chunker) or `lines` (line windows for every file).
    pub chunker: crate::lang::Chunker,
    /// Budget of one chunk in non-whitespace characters.
    pub max_chars: usize,
    /// Gaps with fewer non-whitespace characters are dropped.
    pub min_block_chars: usize,
    /// Lines per window of the line chunker.
    pub window_lines: usize,
    /// Parse time bound per file in milliseconds.
    pub parse_timeout_ms: u64,
}

impl ChunkConfig {
    /// The `[chunk]` table of the built-in pipeline defaults (`pipelines/default.toml`).
    pub fn defaults() -> Self {
        trove_base::defaults::section("chunk").expect("pipelines/default.toml has a valid [chunk]")
    }
}
