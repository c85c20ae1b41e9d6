//! Bundle stage: the on-disk format (DESIGN.md §4) — Parquet tables plus `manifest.json`.
//!
//! Input: per-file results in path order. Output: a bundle directory, written into a temp directory
//! beside the target and swapped in only when complete (`manifest.json` last). Invariants: the same
//! input gives byte-identical Parquet files (fixed writer settings, rows ordered by path then
//! position, postings by term then chunk id); no absolute path of the indexing machine is written.
mod manifest;
pub mod pack;
pub mod reader;
mod schema;
mod verify;
mod writer;

pub use manifest::{
    Bm25Info, Counts, EmbedderInfo, FileEntry, LangCount, MANIFEST, Manifest, Shard, SourceInfo,
    Tool, manifest_tool, parse_manifest, read_manifest, write_manifest,
};
pub use schema::{TABLES, expected_schema};
pub use verify::{VerifyReport, verify};
#[cfg(feature = "engine")]
pub(crate) use writer::hash_file;
pub use writer::{
    BundleWriter, CALLABLE_KINDS, ChunkRecord, FileRecord, Finished, Group, GroupSource,
    OutputLock, Posting, RefRecord, SymbolRecord, TYPE_KINDS, build_beside, check_replaceable,
    lock_output, lock_path, swap_into_place, target_kinds, temp_beside,
};

/// The format name in every manifest.
pub const FORMAT: &str = "trove-bundle";
/// The newest bundle format this build reads and writes.
/// (4: postings refer to chunks by `chunk_ord`, their row in `chunks.parquet`, and carry no
/// `doc_len`, which is `chunks.token_len`.)
pub const FORMAT_VERSION: u32 = 4;
