//! Table encoding: one Parquet file per table, written with fixed settings (zstd, row-group sizes,
//! dictionaries only where values repeat, delta encoding for ascending integers) so the same rows
//! always give the same bytes, each encoded on a thread of its own.
use arrow::array::{ArrayRef, Int32Array, Int64Array, StringBuilder};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::manifest::FileEntry;
use super::schema::expected_schema;
use crate::{Error, Result};

/// Rows buffered per table before a record batch is handed to the Parquet writer.
pub const BATCH_ROWS: usize = 4096;
/// Row-group size of `embeddings` (dim floats a row): the writer buffers a whole row group, so
/// this keeps each to tens of MB whatever the repository size.
const WIDE_ROW_GROUP_ROWS: usize = 16 * 1024;
/// Row-group size of `chunks` (sorted by path): a query reads the content of its hits from the
/// groups their paths fall in, and a reader decompresses whole groups, so groups are small.
const CHUNKS_ROW_GROUP_ROWS: usize = 4 * 1024;
/// Row-group size of the narrow tables (files, skipped): a few MB per group.
const NARROW_ROW_GROUP_ROWS: usize = 256 * 1024;
/// Row-group size of `postings` (sorted by term): DuckDB prunes by row-group min/max only, so a
/// query term costs about one group beyond its own postings.
const POSTINGS_ROW_GROUP_ROWS: usize = 256 * 1024;
/// Row-group size of `terms`: a query looks up a handful of terms, and DuckDB prunes by row-group
/// statistics only (not page indexes), so small groups mean little is read per lookup.
const TERMS_ROW_GROUP_ROWS: usize = 4 * 1024;
/// Row-group size of `symbols` and `refs`: the writer holds a row group in memory, and refs are
/// written twice (raw, then resolved) at once, so groups stay small.
const STRUCTURE_ROW_GROUP_ROWS: usize = 32 * 1024;
/// zstd level: 3 is zstd's default: good ratio at several hundred MB/s.
const ZSTD_LEVEL: i32 = 3;

/// A column's path from its dotted name: `embedding.list.item` is three parts (a nested
/// column), which `ColumnPath::from(&str)` would take as one name that matches nothing.
pub fn column(dotted: &str) -> ColumnPath {
    ColumnPath::new(dotted.split('.').map(String::from).collect())
}

/// The Parquet writer settings of table `table` (row group size, compression, statistics).
pub(crate) fn props(table: &str) -> Result<WriterProperties> {
    let rows = match table {
        "chunks" => CHUNKS_ROW_GROUP_ROWS,
        "embeddings" => WIDE_ROW_GROUP_ROWS,
        "terms" => TERMS_ROW_GROUP_ROWS,
        "postings" => POSTINGS_ROW_GROUP_ROWS,
        "symbols" | "refs" | "refs-raw" => STRUCTURE_ROW_GROUP_ROWS,
        _ => NARROW_ROW_GROUP_ROWS,
    };
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
        .set_max_row_group_row_count(Some(rows));
    // Dictionaries pay off for repeated values (paths, kinds, terms), not for free text, floats,
    // or ids that are unique row by row (there a dictionary only adds an index to every value,
    // and hashing each value into it costs more than writing it).
    let unique_ids: &[&str] = match table {
        "chunks" | "embeddings" => &["chunk_id"],
        "symbols" => &["symbol_id"],
        _ => &[],
    };
    for col in [
        "content",
        "docs",
        "signature",
        "embedding.list.item",
        "windows.list.item.list.item",
        "sha256",
        "summary",
    ]
    .iter()
    .chain(unique_ids)
    {
        b = b.set_column_dictionary_enabled(column(col), false);
    }
    // Integers that ascend row by row (ordinals; lines and offsets within a file): stored as
    // deltas of a few bits each. Postings' ordinals ascend within a term, which is what made them
    // 163 MB → 20 MB on the bench corpus (as hash ids they took 64 bits a posting).
    let ascending: &[&str] = match table {
        "chunks" => &[
            "chunk_ord",
            "start_line",
            "end_line",
            "start_byte",
            "end_byte",
        ],
        "postings" => &["chunk_ord"],
        "symbols" => &[
            "start_line",
            "end_line",
            "name_line",
            "start_byte",
            "end_byte",
        ],
        "refs" | "refs-raw" => &["line"],
        _ => &[],
    };
    for col in ascending {
        b = b
            .set_column_dictionary_enabled(column(col), false)
            .set_column_encoding(column(col), Encoding::DELTA_BINARY_PACKED);
    }
    if table == "terms" {
        // Every term is unique here: a dictionary would only double the bytes to decode.
        b = b.set_column_dictionary_enabled(column("term"), false);
    }
    Ok(b.build())
}

/// A Parquet file being written plus its row count. Batches are encoded and compressed on a
/// thread of the table's own (fed through a short bounded channel), so the tables of a run encode
/// side by side instead of one after another on the writer's thread.
pub struct Table {
    name: &'static str,
    /// Where it is written.
    pub path: PathBuf,
    schema: SchemaRef,
    tx: Option<crossbeam_channel::Sender<RecordBatch>>,
    encoder: Option<std::thread::JoinHandle<Result<()>>>,
    /// Rows written so far.
    pub rows: u64,
}

/// Batches a table's encoder may hold queued (a chunks batch is a few MB).
const QUEUED_BATCHES: usize = 2;

impl Table {
    /// Creates `<dir>/<name>.parquet` with the table's schema and settings and starts its encoder.
    pub fn create(dir: &Path, name: &'static str, dim: usize) -> Result<Self> {
        let path = dir.join(format!("{name}.parquet"));
        let schema = expected_schema(name, dim)
            .ok_or_else(|| Error::internal(format!("no schema for {name}")))?;
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut writer =
            ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props(name)?))?;
        let (tx, rx) = crossbeam_channel::bounded::<RecordBatch>(QUEUED_BATCHES);
        let at = path.clone();
        let encoder = std::thread::Builder::new()
            .name(format!("trove-write-{name}"))
            .spawn(move || -> Result<()> {
                // The encoder's errors name the file (a full disk fails here first).
                let named = |e: parquet::errors::ParquetError| match e {
                    parquet::errors::ParquetError::External(b) => {
                        match b.downcast::<std::io::Error>() {
                            Ok(io) => Error::io(&at, *io),
                            Err(b) => Error::internal(format!("{}: {b}", at.display())),
                        }
                    }
                    e => Error::internal(format!("{}: {e}", at.display())),
                };
                for batch in rx {
                    writer.write(&batch).map_err(named)?;
                }
                // Closed: the file is complete. Footer, flush, sync.
                let mut inner = writer.into_inner().map_err(named)?;
                inner.flush().map_err(|e| Error::io(&at, e))?;
                let file = inner
                    .into_inner()
                    .map_err(|e| Error::io(&at, e.into_error()))?;
                file.sync_all().map_err(|e| Error::io(&at, e))
            })
            .map_err(|e| Error::io(&path, e))?;
        Ok(Table {
            name,
            path,
            schema,
            tx: Some(tx),
            encoder: Some(encoder),
            rows: 0,
        })
    }

    /// Queues one batch of `columns` (in schema order).
    pub fn write(&mut self, columns: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.rows += batch.num_rows() as u64;
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if sent {
            Ok(())
        } else {
            // The encoder stopped: its error says why.
            self.join().and(Err(Error::internal(format!(
                "writing {}.parquet stopped",
                self.name
            ))))
        }
    }

    /// Closes the channel and waits for the encoder: its result.
    fn join(&mut self) -> Result<()> {
        self.tx = None;
        match self.encoder.take() {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(Error::internal(format!(
                    "writing {}.parquet panicked",
                    self.name
                )))
            }),
            None => Ok(()),
        }
    }

    /// Closes the file, syncs it, and returns its manifest entry.
    pub fn finish(mut self) -> Result<FileEntry> {
        self.join()?;
        let (bytes, sha256) = hash_file(&self.path)?;
        Ok(FileEntry {
            name: format!("{}.parquet", self.name),
            rows: self.rows,
            bytes,
            sha256,
        })
    }
}

impl Drop for Table {
    /// A table dropped unfinished (a failed run) still stops its encoder before its directory is
    /// removed.
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// (size, sha256 hex) of a file, streamed.
pub(crate) fn hash_file(path: &Path) -> Result<(u64, String)> {
    use sha2::{Digest, Sha256};
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if k == 0 {
            break;
        }
        n += k as u64;
        h.update(&buf[..k]);
    }
    Ok((n, trove_base::util::hex(&h.finalize())))
}

/// A string column (as [`opt_strings`] makes it: with no null, it has no null buffer).
pub fn strings<'a>(it: impl Iterator<Item = &'a str> + Clone) -> ArrayRef {
    opt_strings(it.map(Some))
}
/// A nullable string column. Its bytes are counted first, so the column's buffer is allocated
/// once instead of doubling (and copying) its way up to a batch's text.
pub fn opt_strings<'a>(it: impl Iterator<Item = Option<&'a str>> + Clone) -> ArrayRef {
    let bytes = it.clone().map(|s| s.map_or(0, str::len)).sum();
    let mut b = StringBuilder::with_capacity(it.size_hint().0, bytes);
    for s in it {
        b.append_option(s);
    }
    Arc::new(b.finish())
}
/// An `INT64` column.
pub fn i64s(it: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(it))
}
/// An `INT32` column.
pub fn i32s(it: impl Iterator<Item = i32>) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(it))
}
/// A count as an `INT32` value (saturating).
pub fn i32c(v: usize) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_settings_reach_nested_and_id_columns() {
        let p = props("embeddings").unwrap();
        // The floats sit three levels down; a one-part path would leave their dictionary on.
        assert!(!p.dictionary_enabled(&column("embedding.list.item")));
        assert!(!p.dictionary_enabled(&column("windows.list.item.list.item")));
        assert!(!p.dictionary_enabled(&column("chunk_id")));
        let p = props("chunks").unwrap();
        assert!(!p.dictionary_enabled(&column("content")));
        assert!(p.dictionary_enabled(&column("path")));
        assert_eq!(
            p.encoding(&column("chunk_ord")),
            Some(Encoding::DELTA_BINARY_PACKED)
        );
        assert!(
            props("postings")
                .unwrap()
                .dictionary_enabled(&column("term"))
        );
    }
}
