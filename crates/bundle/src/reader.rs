//! Streaming reads of an existing bundle's tables: the files table, embeddings a batch at a
//! time, postings a term at a time (in term order), tombstones and the dead paths they make.
//! The pipeline's own rows (chunks, symbols, refs as records) are read back by
//! `trove_index::reader`. Nothing is held beyond one record batch per table, so carrying
//! a large bundle over costs no more memory than writing it.
use arrow::array::{
    Array, AsArray, BooleanArray, FixedSizeListArray, Int32Array, Int64Array, ListArray,
    StringArray,
};
use arrow::datatypes::Float32Type;
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use rustc_hash::FxHashSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::postings::Group;
use crate::{Error, Result};
use trove_base::sets::SkipReason;

/// Rows decoded per batch.
pub(crate) const READ_BATCH: usize = 4096;

pub use crate::schema::FileRow;

/// Row `i` of `a`, none when null.
pub fn opt_i64(a: &Int64Array, i: usize) -> Option<i64> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// The table `table` of the segment folder `dir`.
pub fn open_table(dir: &Path, table: &str) -> Result<Table> {
    open_parquet(&dir.join(format!("{table}.parquet")))
}

/// The table file at `p`, read a batch at a time.
pub fn open_parquet(p: &Path) -> Result<Table> {
    let f = File::open(p).map_err(|e| Error::io(p, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.with_batch_size(READ_BATCH).build())
        .map_err(|e| unreadable(p, e))?;
    Ok(Table::new(p, reader))
}

/// A table file that cannot be decoded (its hash matched, or it was not checked: a bug, or a
/// publisher's file): named, with the way to check the bundle.
pub(crate) fn unreadable(p: &Path, e: impl std::fmt::Display) -> Error {
    Error::failed(
        trove_base::error::ErrorKind::Corrupt,
        format!(
            "{}: cannot be read as a trove table: {e} (run `trove verify` on the bundle)",
            p.display()
        ),
    )
}

/// A table's record batches, each error naming the file.
pub struct Table {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
}

impl Table {
    /// `reader` over the table file at `path`.
    pub fn new(path: &Path, reader: ParquetRecordBatchReader) -> Self {
        Table {
            path: path.to_path_buf(),
            reader,
        }
    }
}

impl Iterator for Table {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.reader
            .next()
            .map(|b| b.map_err(|e| unreadable(&self.path, e)))
    }
}

/// Column `name` of a batch read from `path` (a bundle or one of its files), as the array type
/// `T`; a bundle error naming the column when it is missing or of another type.
pub fn column<'a, T: 'static>(b: &'a RecordBatch, name: &str, path: &Path) -> Result<&'a T> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| Error::bundle(path, format!("column {name} is missing or of another type")))
}

/// Row `i` of `a`, none when null.
pub fn opt_str(a: &StringArray, i: usize) -> Option<String> {
    (!a.is_null(i)).then(|| a.value(i).to_string())
}

/// A stored non-negative count or offset as a `usize` (0 for a negative value).
pub fn usize_of(v: i64) -> usize {
    usize::try_from(v).unwrap_or(0)
}

/// Row `i` of an INT32 line/column as a `usize` (0 for a negative value).
pub fn usize_at(a: &Int32Array, i: usize) -> usize {
    usize_of(i64::from(a.value(i)))
}

/// Every row of the segment folder `dir`'s `files.parquet`, in path order.
pub fn read_files(dir: &Path) -> Result<Vec<FileRow>> {
    let mut out = Vec::new();
    for batch in open_table(dir, "files")? {
        let b = batch?;
        let path = column::<StringArray>(&b, "path", dir)?;
        let language = column::<StringArray>(&b, "language", dir)?;
        let source_type = column::<StringArray>(&b, "source_type", dir)?;
        let bytes = column::<Int64Array>(&b, "bytes", dir)?;
        let lines = column::<Int64Array>(&b, "lines", dir)?;
        let sha = column::<StringArray>(&b, "sha256", dir)?;
        let chunks = column::<Int32Array>(&b, "chunks", dir)?;
        let fallback = column::<BooleanArray>(&b, "parse_fallback", dir)?;
        let redactions = column::<Int32Array>(&b, "redactions", dir)?;
        let summary = column::<StringArray>(&b, "summary", dir)?;
        let tokens = column::<Int64Array>(&b, "tokens", dir)?;
        let symbols = column::<Int32Array>(&b, "symbols", dir)?;
        let refs = column::<Int32Array>(&b, "refs", dir)?;
        let deps = column::<Int32Array>(&b, "deps", dir)?;
        let tail = column::<StringArray>(&b, "tail", dir)?;
        let n = |a: &Int32Array, i: usize| a.value(i).max(0) as u64;
        for i in 0..b.num_rows() {
            out.push(FileRow {
                path: path.value(i).to_string(),
                language: opt_str(language, i),
                source_type: source_type.value(i).to_string(),
                bytes: bytes.value(i).max(0) as u64,
                lines: lines.value(i).max(0) as u64,
                sha256: sha.value(i).to_string(),
                chunks: chunks.value(i).max(0) as u32,
                parse_fallback: fallback.value(i),
                redactions: redactions.value(i).max(0) as u32,
                summary: opt_str(summary, i),
                tokens: tokens.value(i).max(0) as u64,
                symbols: n(symbols, i),
                refs: n(refs, i),
                deps: n(deps, i),
                tail: opt_str(tail, i).unwrap_or_default(),
            });
        }
    }
    Ok(out)
}

/// The columns of one batch of `embeddings.parquet` at `d`, checked against the schema: each row's
/// chunk id, vector and further windows' vectors.
pub struct EmbeddingCols {
    ids: Int64Array,
    vectors: FixedSizeListArray,
    windows: ListArray,
    dim: usize,
}

impl EmbeddingCols {
    /// The columns of `e`, whose vectors must have `dim` 32-bit floats.
    pub fn new(e: &RecordBatch, dim: usize, d: &Path) -> Result<Self> {
        let vectors: FixedSizeListArray = column::<FixedSizeListArray>(e, "embedding", d)?.clone();
        if vectors.value_length() as usize != dim {
            return Err(Error::bundle(
                d,
                format!(
                    "embeddings have {} floats, the manifest says {dim}",
                    vectors.value_length(),
                ),
            ));
        }
        if vectors.values().as_primitive_opt::<Float32Type>().is_none() {
            return Err(Error::bundle(d, "embeddings are not 32-bit floats"));
        }
        let windows: ListArray = column::<ListArray>(e, "windows", d)?.clone();
        if windows.data_type() != &super::schema::windows_type(dim) {
            return Err(Error::bundle(
                d,
                format!(
                    "embeddings.windows is {}, not lists of {dim} 32-bit floats",
                    windows.data_type()
                ),
            ));
        }
        Ok(EmbeddingCols {
            ids: column::<Int64Array>(e, "chunk_id", d)?.clone(),
            vectors,
            windows,
            dim,
        })
    }

    /// Rows in the batch.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Row `i`'s chunk id.
    pub fn id(&self, i: usize) -> i64 {
        self.ids.value(i)
    }

    /// Row `i`'s vector (of the chunk's start, for a model that reads only that).
    pub fn vector(&self, i: usize) -> &[f32] {
        let at = self.vectors.value_offset_at(i);
        &self.vectors.values().as_primitive::<Float32Type>().values()[at..at + self.dim]
    }

    /// Row `i`'s further windows' vectors, one after another (a multiple of the dimension).
    pub fn windows(&self, i: usize) -> &[f32] {
        // Rows `offsets[i]..offsets[i + 1]` of the flat vector list.
        let offsets = self.windows.value_offsets();
        let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
        let flat = self.windows.values().as_fixed_size_list();
        &flat.values().as_primitive::<Float32Type>().values()
            [flat.value_offset_at(lo)..flat.value_offset_at(hi)]
    }
}

/// `postings.parquet` a term at a time, in term order, renumbered into another bundle's chunk
/// ordinals.
pub struct PostingStream {
    dir: PathBuf,
    reader: Table,
    batch: Option<RecordBatch>,
    row: usize,
    renumber: Vec<u32>,
}

impl PostingStream {
    /// Opens the postings of the segment folder `dir`, each chunk ordinal `o` renumbered to
    /// `renumber[o]` (from `trove_index::writer::BundleWriter::renumbering`); rows of chunks it does
    /// not map (`u32::MAX`, or beyond its end: chunks not carried) are dropped, and terms left with
    /// none are not produced.
    pub fn open(dir: &Path, renumber: Vec<u32>) -> Result<Self> {
        Ok(PostingStream {
            dir: dir.to_path_buf(),
            reader: open_table(dir, "postings")?,
            batch: None,
            row: 0,
            renumber,
        })
    }

    fn current(&mut self) -> Result<Option<&RecordBatch>> {
        loop {
            if let Some(b) = &self.batch
                && self.row < b.num_rows()
            {
                break;
            }
            match self.reader.next().transpose()? {
                None => {
                    self.batch = None;
                    return Ok(None);
                }
                Some(b) => {
                    self.batch = Some(b);
                    self.row = 0;
                }
            }
        }
        Ok(self.batch.as_ref())
    }

    fn next_group(&mut self) -> Result<Option<Group>> {
        loop {
            let mut term: Option<String> = None;
            let mut ids = Vec::new();
            loop {
                if self.current()?.is_none() {
                    break;
                }
                let b = self.batch.as_ref().expect("loaded by current");
                let terms = column::<StringArray>(b, "term", &self.dir)?;
                let ords = column::<Int32Array>(b, "chunk_ord", &self.dir)?;
                let tfs = column::<Int32Array>(b, "tf", &self.dir)?;
                let mut r = self.row;
                let mut ended = false;
                while r < b.num_rows() {
                    let t = terms.value(r);
                    match &term {
                        None => term = Some(t.to_string()),
                        Some(cur) if cur != t => {
                            ended = true;
                            break;
                        }
                        Some(_) => {}
                    }
                    let new = usize::try_from(ords.value(r))
                        .ok()
                        .and_then(|o| self.renumber.get(o).copied())
                        .unwrap_or(u32::MAX);
                    if new != u32::MAX {
                        ids.push((new, tfs.value(r).max(0) as u32));
                    }
                    r += 1;
                }
                self.row = r;
                if ended {
                    break;
                }
            }
            match term {
                None => return Ok(None),
                Some(t) if !ids.is_empty() => {
                    // Carried chunks keep their path order, so their ordinals keep theirs; sorting
                    // anyway costs one pass when they do.
                    if !ids.is_sorted() {
                        ids.sort_unstable();
                    }
                    return Ok(Some((t, ids)));
                }
                // Every posting of this term belonged to a dropped chunk: the term goes too.
                Some(_) => continue,
            }
        }
    }
}

impl Iterator for PostingStream {
    type Item = Result<Group>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_group().transpose()
    }
}

/// The paths a segment folder's `tombstones.parquet` lists (none when it has no such file).
pub fn read_tombstones(dir: &Path) -> Result<Vec<String>> {
    if !dir.join(format!("{}.parquet", super::TOMBSTONES)).is_file() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for batch in open_table(dir, super::TOMBSTONES)? {
        let b = batch?;
        let path = column::<StringArray>(&b, "path", dir)?;
        out.extend((0..b.num_rows()).map(|i| path.value(i).to_string()));
    }
    Ok(out)
}

/// Per segment of the bundle at `dir` (manifest order): the paths whose rows in it are dead,
/// tombstoned by a later segment.
pub fn dead_paths(dir: &Path, manifest: &super::Manifest) -> Result<Vec<FxHashSet<String>>> {
    let segs = &manifest.segments;
    let mut dead: Vec<FxHashSet<String>> = vec![FxHashSet::default(); segs.len()];
    for (i, s) in segs.iter().enumerate().skip(1) {
        if s.tombstones == 0 {
            continue;
        }
        for p in read_tombstones(&s.dir(dir))? {
            for d in &mut dead[..i] {
                d.insert(p.clone());
            }
        }
    }
    Ok(dead)
}

/// A file or directory that is not indexed, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Skipped {
    /// Repo-relative path (directories end with `/`).
    pub path: String,
    /// Why.
    pub reason: SkipReason,
    /// Size in bytes when known (0 for directories).
    pub bytes: u64,
}

/// Every row of the segment folder `dir`'s `skipped.parquet`.
pub fn read_skipped(dir: &Path) -> Result<Vec<Skipped>> {
    let mut out = Vec::new();
    for batch in open_table(dir, "skipped")? {
        let b = batch?;
        let path = column::<StringArray>(&b, "path", dir)?;
        let reason = column::<StringArray>(&b, "reason", dir)?;
        let bytes = column::<Int64Array>(&b, "bytes", dir)?;
        for i in 0..b.num_rows() {
            let r = reason.value(i);
            out.push(Skipped {
                path: path.value(i).to_string(),
                reason: SkipReason::parse(r)
                    .ok_or_else(|| Error::bundle(dir, format!("skipped: unknown reason {r:?}")))?,
                bytes: bytes.value(i).max(0) as u64,
            });
        }
    }
    Ok(out)
}

/// The live rows of a segmented bundle, as far as its small tables tell: per segment, the paths
/// later segments tombstone; the live `files` and `skipped` rows with the segment holding each.
#[derive(Debug, Default)]
pub struct Live {
    /// Live files rows, in path order, with their segment's index.
    pub files: Vec<(FileRow, usize)>,
    /// Live skipped rows, sorted, with their segment's index.
    pub skipped: Vec<(Skipped, usize)>,
}

impl Live {
    /// Reads the tombstones, files and skipped tables of every segment of the bundle at `dir`.
    pub fn read(dir: &Path, manifest: &super::Manifest) -> Result<Self> {
        let segs = &manifest.segments;
        let dead = dead_paths(dir, manifest)?;
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let sd = s.dir(dir);
            files.extend(
                read_files(&sd)?
                    .into_iter()
                    .filter(|f| !dead[i].contains(&f.path))
                    .map(|f| (f, i)),
            );
            skipped.extend(
                read_skipped(&sd)?
                    .into_iter()
                    .filter(|k| !dead[i].contains(&k.path))
                    .map(|k| (k, i)),
            );
        }
        files.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        for w in files.windows(2) {
            if w[0].0.path == w[1].0.path {
                return Err(Error::bundle(
                    dir,
                    format!(
                        "{} is live in two segments (a tombstone is missing): re-index",
                        w[0].0.path
                    ),
                ));
            }
        }
        skipped.sort();
        Ok(Live { files, skipped })
    }
}
