//! The bundle format (DESIGN.md §4, docs/bundle-format.md): Parquet tables in segment folders,
//! `manifest.json` and `views.sql`.
//!
//! A bundle is written (by trove-index's writer, with this crate's table encoders) into a temp
//! directory beside the target and swapped in only when complete (`manifest.json` last).
//! Invariants: the same input gives byte-identical Parquet files (fixed writer settings, rows
//! ordered by path then position, postings by term then chunk id); no absolute path of the
//! indexing machine is written.
//!
//! A bundle is read with this crate alone, without DuckDB or tree-sitter: [`open::OpenBundle`]
//! gives its manifest, live files, chunks, symbols, references and file text; lower down, its
//! tables a batch at a time ([`reader::open_parquet`]); and a query is tokenized as the bundle's
//! postings were:
//!
//! ```
//! use trove_bundle::tokenizer::{TOKENIZER, tokens};
//! assert_eq!(TOKENIZER, "code-v1");
//! assert_eq!(tokens("parseHTTPRequest", 64), ["parsehttprequest", "parse", "http", "request"]);
//! // A path that is no bundle is said to be none, not read.
//! let err = trove_bundle::open::OpenBundle::open("/no/such/bundle".as_ref()).unwrap_err();
//! assert_eq!(err.kind(), trove_base::error::ErrorKind::NotFound);
//! assert!(err.to_string().contains("does not exist"));
//! ```
pub mod cache;
pub mod error;
pub mod lookup;
mod manifest;
pub mod open;
mod output;
pub mod pack;
pub mod postings;
pub mod reader;
pub mod resolution;
mod schema;
pub mod sync;
pub mod table;
pub mod tokenizer;
pub mod upgrade;
mod verify;
pub mod views_file;

pub use error::{Error, Result};

pub use manifest::{
    Bm25Info, Counts, EmbedderInfo, FileEntry, Finished, LangCount, LiveTotals, MANIFEST, MAX_DIM,
    MAX_MANIFEST_BYTES, Manifest, Provenance, ScipInput, SegmentInfo, Shard, SourceInfo,
    TOMBSTONES, Tool, commit_manifest, created_at, deserialize, format_of, format_text,
    is_bundle_file, live_sql, manifest_tool, parse_manifest, read_manifest, read_manifest_json,
    remove_garbage, this_format, views_sql, write_manifest,
};
pub use output::{
    OutputLock, build_beside, check_replaceable, link_or_copy, link_segment, lock_output,
    lock_path, output_path, pid_note, swap_into_place, temp_beside, wait_for_writer, writer_active,
};
pub use schema::{TABLES, expected_schema};
pub use verify::{VerifyReport, check_sizes, verify};
pub use views_file::{discard_staged_views, install_views, settle_views, write_views};

/// The format name in every manifest.
pub const FORMAT: &str = "trove-bundle";
/// The newest bundle format this build reads and writes.
/// (4: postings refer to chunks by `chunk_ord`, their row in `chunks.parquet`, and carry no
/// `doc_len`, which is `chunks.token_len`. 5: the tables live in segment folders,
/// `segments/<id>/<table>.parquet`, listed by the manifest, with `views.sql` beside them. 6: the
/// text of every file is in the bundle, once: each chunk's `lead` (the text between it and the
/// chunk before) and each file's `tail`, joined with the chunks' content by the `file_text` view.
/// 7: `symbols.scip_symbol` and `refs.scip_symbol`, the facts of SCIP indexes. 8: `refs.exports`,
/// the names an import statement makes its file's, resolved through by importers of the file.
/// 9: `embeddings.windows`, the vectors of a long chunk's further windows for a model that reads
/// only a text's start; the vector arm scores a chunk by its best window. 10: format 1.0, the
/// layout of 9 with `format_major`/`format_minor`, `required_features` and `builds` in the
/// manifest.) Every 1.x bundle keeps 10 here, so troves before 1.0 refuse it by this number;
/// versions from 1.0 on are [`FORMAT_MAJOR`].[`FORMAT_MINOR`] (docs/format.md).
pub const FORMAT_VERSION: u32 = 10;
/// The format's major version: a reader reads every minor of its major; a new major is a change
/// an older reader cannot read (`trove upgrade` converts).
pub const FORMAT_MAJOR: u32 = 1;
/// The format's minor version: a minor only adds (optional columns, tables, manifest keys), which
/// readers of an older minor ignore.
pub const FORMAT_MINOR: u32 = 0;
/// The last format before 1.0 that `trove upgrade` converts (older ones are re-indexed).
pub const UPGRADABLE_FROM: u32 = 9;
/// The features of the format this trove reads (a manifest's `required_features` names any
/// whose meaning an older reader must not ignore); none in 1.0.
pub const KNOWN_FEATURES: &[&str] = &[];
static BUILD_STAMP: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sets the stamp of the program that writes bundles (`tool.build` in their manifests), once, at
/// start: the `trove` binary passes a hash of every source and pipeline file it was built from, so
/// an incremental run never reuses rows written by other code under the same version number.
/// Later calls are ignored.
pub fn set_build_stamp(stamp: impl Into<String>) {
    let _ = BUILD_STAMP.set(stamp.into());
}

/// The stamp [`set_build_stamp`] set, or `None` when the program set none.
pub fn build_stamp() -> Option<&'static str> {
    BUILD_STAMP.get().map(String::as_str)
}
/// The folder of the segments.
pub const SEGMENTS: &str = "segments";
/// The DuckDB views over the live rows of every table, with paths relative to the bundle.
pub const VIEWS: &str = "views.sql";

/// The bytes of a bundle's small file `p` (the manifest, the views) when it is a regular file (a
/// link is followed) of at most `max` bytes: a FIFO would block the read for ever and a device
/// such as `/dev/zero` would fill memory, so both are refused, as is anything larger.
pub(crate) fn read_small(p: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    // Looked at before it is opened: opening a FIFO blocks until a writer comes.
    if !std::fs::metadata(p)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    read_small_from(std::fs::File::open(p)?, max)
}

/// [`read_small`] of a file already open (one opened without blocking, e.g. `O_NONBLOCK`).
pub fn read_small_from(mut f: std::fs::File, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let too_large = || std::io::Error::other(format!("larger than {max} bytes"));
    if meta.len() > max {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    (&mut f).take(max.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(too_large());
    }
    Ok(buf)
}

/// The bytes free to this user on the filesystem of `dir`, when it says.
pub(crate) fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    rustix::fs::statvfs(dir)
        .ok()
        .map(|v| v.f_bavail.saturating_mul(v.f_frsize))
}

/// The first bytes of a zstd frame, which a packed bundle (`trove pack`) starts with.
pub(crate) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Whether `p` is a file that starts like a packed bundle.
pub fn is_packed(p: &std::path::Path) -> bool {
    let mut head = [0u8; 4];
    p.is_file()
        && std::fs::File::open(p)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok()
        && head == ZSTD_MAGIC
}
