//! The bundle writer: one thread owns it; it streams record batches into Parquet and spills
//! postings to sorted runs so memory does not grow with the repository.
use arrow::array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Int32Array, Int64Array, StringArray,
};
use arrow::datatypes::{DataType, Field, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::manifest::{Counts, FileEntry, LangCount};
use super::schema::expected_schema;
use crate::chunk::Chunk;
use crate::source::Skipped;
use crate::{Error, Result};

/// Rows buffered per table before a record batch is handed to the Parquet writer.
const BATCH_ROWS: usize = 4096;
/// Row-group size of `chunks.parquet` (content is large: keep a group to tens of MB in memory).
const CHUNK_ROW_GROUP_ROWS: usize = 16 * 1024;
/// Row-group size of the narrow tables (postings, terms, embeddings, files, skipped).
const NARROW_ROW_GROUP_ROWS: usize = 256 * 1024;
/// Postings held in memory before a sorted run is spilled to disk: bounds the writer's memory on
/// any repository size.
const POSTINGS_SPILL_BYTES: usize = 96 * 1024 * 1024;
/// zstd level: 3 is zstd's default: good ratio at several hundred MB/s.
const ZSTD_LEVEL: i32 = 3;

/// One indexed file and its chunks, as the writer receives it.
#[derive(Debug)]
pub struct FileRecord {
    /// Repo-relative path.
    pub path: String,
    /// Language id (none for undetected text).
    pub language: Option<String>,
    /// code | doc | test | config.
    pub source_type: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Line count.
    pub lines: u64,
    /// sha256 of the content.
    pub sha256: String,
    /// Whether the AST chunker fell back to line windows.
    pub parse_fallback: bool,
    /// Chunks in source order.
    pub chunks: Vec<ChunkRecord>,
}

/// One chunk with its id, BM25 terms and embedding.
#[derive(Debug)]
pub struct ChunkRecord {
    /// The chunk.
    pub chunk: Chunk,
    /// Stable id.
    pub chunk_id: i64,
    /// Tokens in the chunk (BM25 document length).
    pub token_len: u32,
    /// (term, term frequency), any order.
    pub terms: Vec<(String, u32)>,
    /// The embedding.
    pub embedding: Vec<f32>,
}

fn props(table: &str) -> Result<WriterProperties> {
    let rows = if table == "chunks" {
        CHUNK_ROW_GROUP_ROWS
    } else {
        NARROW_ROW_GROUP_ROWS
    };
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
        .set_max_row_group_row_count(Some(rows));
    // Dictionaries pay off for repeated values (paths, kinds, terms), not for free text or floats.
    for col in [
        "content",
        "docs",
        "signature",
        "embedding.list.item",
        "sha256",
    ] {
        b = b.set_column_dictionary_enabled(ColumnPath::from(col), false);
    }
    Ok(b.build())
}

/// A Parquet file being written plus its row count.
struct Table {
    name: &'static str,
    path: PathBuf,
    schema: SchemaRef,
    writer: ArrowWriter<BufWriter<File>>,
    rows: u64,
}

impl Table {
    fn create(dir: &Path, name: &'static str, dim: usize) -> Result<Self> {
        let path = dir.join(format!("{name}.parquet"));
        let schema = expected_schema(name, dim)
            .ok_or_else(|| Error::Other(format!("no schema for {name}")))?;
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let writer =
            ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props(name)?))?;
        Ok(Table {
            name,
            path,
            schema,
            writer,
            rows: 0,
        })
    }

    fn write(&mut self, columns: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.rows += batch.num_rows() as u64;
        self.writer.write(&batch)?;
        Ok(())
    }

    /// Closes the file, syncs it, and returns its manifest entry.
    fn finish(self) -> Result<FileEntry> {
        let mut inner = self.writer.into_inner()?;
        inner.flush().map_err(|e| Error::io(&self.path, e))?;
        let file = inner
            .into_inner()
            .map_err(|e| Error::io(&self.path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        let (bytes, sha256) = hash_file(&self.path)?;
        Ok(FileEntry {
            name: format!("{}.parquet", self.name),
            rows: self.rows,
            bytes,
            sha256,
        })
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
    Ok((n, crate::util::hex(&h.finalize())))
}

fn strings<'a>(it: impl Iterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(it))
}
fn opt_strings<'a>(it: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(StringArray::from_iter(it))
}
fn i64s(it: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(it))
}
fn i32s(it: impl Iterator<Item = i32>) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(it))
}
fn i32c(v: usize) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// A buffered chunk row: the chunk plus its file's columns.
struct ChunkRow {
    rec: ChunkRecord,
    path: Arc<str>,
    language: Option<Arc<str>>,
    source_type: Arc<str>,
    heading_path: bool,
    index: usize,
    total: usize,
}

/// Streams a bundle's tables into a directory.
pub struct BundleWriter {
    dir: PathBuf,
    dim: usize,
    files: Table,
    chunks: Table,
    embeddings: Table,
    file_rows: Vec<(FileRecord, usize)>,
    chunk_rows: Vec<ChunkRow>,
    postings: Spill,
    counts: Counts,
    languages: BTreeMap<String, LangCount>,
    total_tokens: u64,
}

/// The chunk of a buffered row.
fn c(row: &ChunkRow) -> &Chunk {
    &row.rec.chunk
}

impl BundleWriter {
    /// Starts writing into `dir` (which must exist and be empty).
    pub fn create(dir: &Path, dim: usize) -> Result<Self> {
        Ok(BundleWriter {
            dir: dir.to_path_buf(),
            dim,
            files: Table::create(dir, "files", dim)?,
            chunks: Table::create(dir, "chunks", dim)?,
            embeddings: Table::create(dir, "embeddings", dim)?,
            file_rows: Vec::new(),
            chunk_rows: Vec::new(),
            postings: Spill::new(dir.join(".postings-runs")),
            counts: Counts::default(),
            languages: BTreeMap::new(),
            total_tokens: 0,
        })
    }

    /// Adds one file; files must arrive in path order.
    pub fn add_file(&mut self, mut f: FileRecord) -> Result<()> {
        let path: Arc<str> = Arc::from(f.path.as_str());
        let language: Option<Arc<str>> = f.language.as_deref().map(Arc::from);
        let source_type: Arc<str> = Arc::from(f.source_type.as_str());
        let total = f.chunks.len();
        let lang = self
            .languages
            .entry(f.language.clone().unwrap_or_else(|| "(none)".into()))
            .or_default();
        lang.files += 1;
        lang.chunks += total as u64;
        self.counts.files += 1;
        self.counts.chunks += total as u64;
        self.counts.source_bytes += f.bytes;
        for (index, mut rec) in std::mem::take(&mut f.chunks).into_iter().enumerate() {
            self.total_tokens += u64::from(rec.token_len);
            for (term, tf) in std::mem::take(&mut rec.terms) {
                self.postings.push(term, rec.chunk_id, tf)?;
            }
            let heading_path = source_type.as_ref() == "doc" && rec.chunk.kind == "section";
            self.chunk_rows.push(ChunkRow {
                rec,
                path: path.clone(),
                language: language.clone(),
                source_type: source_type.clone(),
                heading_path,
                index,
                total,
            });
            if self.chunk_rows.len() >= BATCH_ROWS {
                self.flush_chunks()?;
            }
        }
        self.file_rows.push((f, total));
        if self.file_rows.len() >= BATCH_ROWS {
            self.flush_files()?;
        }
        Ok(())
    }

    fn flush_files(&mut self) -> Result<()> {
        if self.file_rows.is_empty() {
            return Ok(());
        }
        let r = std::mem::take(&mut self.file_rows);
        self.files.write(vec![
            strings(r.iter().map(|(f, _)| f.path.as_str())),
            opt_strings(r.iter().map(|(f, _)| f.language.as_deref())),
            strings(r.iter().map(|(f, _)| f.source_type.as_str())),
            i64s(r.iter().map(|(f, _)| f.bytes as i64)),
            i64s(r.iter().map(|(f, _)| f.lines as i64)),
            strings(r.iter().map(|(f, _)| f.sha256.as_str())),
            i32s(r.iter().map(|(_, n)| i32c(*n))),
            Arc::new(BooleanArray::from(
                r.iter().map(|(f, _)| f.parse_fallback).collect::<Vec<_>>(),
            )),
        ])
    }

    fn flush_chunks(&mut self) -> Result<()> {
        if self.chunk_rows.is_empty() {
            return Ok(());
        }
        let r = std::mem::take(&mut self.chunk_rows);
        self.chunks.write(vec![
            i64s(r.iter().map(|x| x.rec.chunk_id)),
            strings(r.iter().map(|x| x.path.as_ref())),
            opt_strings(r.iter().map(|x| x.language.as_deref())),
            strings(r.iter().map(|x| x.source_type.as_ref())),
            strings(r.iter().map(|x| c(x).kind.as_str())),
            opt_strings(r.iter().map(|x| c(x).symbol.as_deref())),
            opt_strings(r.iter().map(|x| c(x).symbol_path.as_deref())),
            opt_strings(r.iter().map(|x| {
                if x.heading_path {
                    c(x).symbol_path.as_deref()
                } else {
                    None
                }
            })),
            opt_strings(r.iter().map(|x| c(x).signature.as_deref())),
            opt_strings(r.iter().map(|x| c(x).docs.as_deref())),
            i32s(r.iter().map(|x| i32c(c(x).start_line))),
            i32s(r.iter().map(|x| i32c(c(x).start_col))),
            i32s(r.iter().map(|x| i32c(c(x).end_line))),
            i32s(r.iter().map(|x| i32c(c(x).end_col))),
            i64s(r.iter().map(|x| c(x).start_byte as i64)),
            i64s(r.iter().map(|x| c(x).end_byte as i64)),
            i32s(r.iter().map(|x| i32c(x.index))),
            i32s(r.iter().map(|x| i32c(x.total))),
            i32s(r.iter().map(|x| i32c(x.rec.token_len as usize))),
            strings(r.iter().map(|x| c(x).content.as_str())),
        ])?;
        let values: Vec<f32> = r
            .iter()
            .flat_map(|x| x.rec.embedding.iter().copied())
            .collect();
        if values.len() != r.len() * self.dim {
            return Err(Error::Other(format!(
                "embedder returned vectors of the wrong size (want {})",
                self.dim
            )));
        }
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let list = FixedSizeListArray::try_new(
            item,
            self.dim as i32,
            Arc::new(Float32Array::from(values)),
            None,
        )?;
        self.embeddings
            .write(vec![i64s(r.iter().map(|x| x.rec.chunk_id)), Arc::new(list)])
    }

    /// Writes the remaining tables.
    pub fn finish(mut self, skipped: &[Skipped]) -> Result<Finished> {
        self.flush_files()?;
        self.flush_chunks()?;
        let files = self.files.finish()?;
        let chunks = self.chunks.finish()?;
        let embeddings = self.embeddings.finish()?;
        let mut terms = Table::create(&self.dir, "terms", self.dim)?;
        let mut postings = Table::create(&self.dir, "postings", self.dim)?;
        let (n_terms, n_postings) = self.postings.write_sorted(&mut terms, &mut postings)?;
        let terms = terms.finish()?;
        let postings = postings.finish()?;
        let mut sk = Table::create(&self.dir, "skipped", self.dim)?;
        for batch in skipped.chunks(BATCH_ROWS) {
            sk.write(vec![
                strings(batch.iter().map(|s| s.path.as_str())),
                strings(batch.iter().map(|s| s.reason.as_str())),
                i64s(batch.iter().map(|s| s.bytes as i64)),
            ])?;
        }
        let sk = sk.finish()?;
        self.counts.skipped = skipped.len() as u64;
        self.counts.terms = n_terms;
        self.counts.postings = n_postings;
        let avgdl = if self.counts.chunks == 0 {
            0.0
        } else {
            self.total_tokens as f64 / self.counts.chunks as f64
        };
        Ok(Finished {
            entries: vec![files, chunks, embeddings, terms, postings, sk],
            counts: self.counts,
            languages: self.languages,
            avgdl,
        })
    }
}

/// What a finished writer reports for the manifest.
pub struct Finished {
    /// File entries, in [`super::TABLES`] order.
    pub entries: Vec<FileEntry>,
    /// Totals.
    pub counts: Counts,
    /// Files and chunks per language.
    pub languages: BTreeMap<String, LangCount>,
    /// Average chunk length in tokens.
    pub avgdl: f64,
}

/// One postings row: (term, chunk id, term frequency).
type Posting = (String, i64, u32);

/// Postings, spilled to sorted runs on disk when memory fills, merged once at the end.
struct Spill {
    dir: PathBuf,
    buf: Vec<(String, i64, u32)>,
    buf_bytes: usize,
    runs: Vec<PathBuf>,
}

impl Spill {
    fn new(dir: PathBuf) -> Self {
        Spill {
            dir,
            buf: Vec::new(),
            buf_bytes: 0,
            runs: Vec::new(),
        }
    }

    fn push(&mut self, term: String, chunk_id: i64, tf: u32) -> Result<()> {
        // String header + heap bytes + id + tf, roughly.
        self.buf_bytes += term.len() + 48;
        self.buf.push((term, chunk_id, tf));
        if self.buf_bytes >= POSTINGS_SPILL_BYTES {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let path = self.dir.join(format!("run-{:05}", self.runs.len()));
        self.buf.sort_unstable();
        let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut w = BufWriter::new(f);
        let io = |e| Error::io(&path, e);
        for (t, id, tf) in self.buf.drain(..) {
            w.write_all(&(t.len() as u32).to_le_bytes()).map_err(io)?;
            w.write_all(t.as_bytes()).map_err(io)?;
            w.write_all(&id.to_le_bytes()).map_err(io)?;
            w.write_all(&tf.to_le_bytes()).map_err(io)?;
        }
        w.flush().map_err(io)?;
        self.buf_bytes = 0;
        self.runs.push(path);
        Ok(())
    }

    /// Merges everything in (term, chunk_id) order into `postings`, and (term, df) into `terms`.
    fn write_sorted(mut self, terms: &mut Table, postings: &mut Table) -> Result<(u64, u64)> {
        let mut sources: Vec<Box<dyn Iterator<Item = Result<Posting>>>> = Vec::new();
        if self.runs.is_empty() {
            self.buf.sort_unstable();
            sources.push(Box::new(std::mem::take(&mut self.buf).into_iter().map(Ok)));
        } else {
            if !self.buf.is_empty() {
                self.spill()?;
            }
            for p in &self.runs {
                sources.push(Box::new(RunReader::open(p)?));
            }
        }
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(row) = s.next() {
                heap.push(Reverse((row?, i)));
            }
        }
        let (mut n_terms, mut n_postings) = (0u64, 0u64);
        let mut pt: Vec<String> = Vec::with_capacity(BATCH_ROWS);
        let mut pid: Vec<i64> = Vec::with_capacity(BATCH_ROWS);
        let mut ptf: Vec<i32> = Vec::with_capacity(BATCH_ROWS);
        let mut tt: Vec<String> = Vec::new();
        let mut tdf: Vec<i64> = Vec::new();
        while let Some(Reverse(((term, id, tf), i))) = heap.pop() {
            if let Some(row) = sources[i].next() {
                heap.push(Reverse((row?, i)));
            }
            if tt.last() == Some(&term) {
                *tdf.last_mut().expect("df for the last term") += 1;
            } else {
                if tt.len() >= BATCH_ROWS {
                    n_terms += flush_terms(terms, &mut tt, &mut tdf)?;
                }
                tt.push(term.clone());
                tdf.push(1);
            }
            pt.push(term);
            pid.push(id);
            ptf.push(i32::try_from(tf).unwrap_or(i32::MAX));
            if pt.len() >= BATCH_ROWS {
                n_postings += flush_postings(postings, &mut pt, &mut pid, &mut ptf)?;
            }
        }
        n_postings += flush_postings(postings, &mut pt, &mut pid, &mut ptf)?;
        n_terms += flush_terms(terms, &mut tt, &mut tdf)?;
        if !self.runs.is_empty() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        }
        Ok((n_terms, n_postings))
    }
}

fn flush_terms(t: &mut Table, terms: &mut Vec<String>, df: &mut Vec<i64>) -> Result<u64> {
    if terms.is_empty() {
        return Ok(0);
    }
    let n = terms.len() as u64;
    t.write(vec![
        strings(terms.iter().map(String::as_str)),
        i64s(df.iter().copied()),
    ])?;
    terms.clear();
    df.clear();
    Ok(n)
}

fn flush_postings(
    t: &mut Table,
    terms: &mut Vec<String>,
    ids: &mut Vec<i64>,
    tfs: &mut Vec<i32>,
) -> Result<u64> {
    if terms.is_empty() {
        return Ok(0);
    }
    let n = terms.len() as u64;
    t.write(vec![
        strings(terms.iter().map(String::as_str)),
        i64s(ids.iter().copied()),
        i32s(tfs.iter().copied()),
    ])?;
    terms.clear();
    ids.clear();
    tfs.clear();
    Ok(n)
}

/// Reads one spilled run back in order.
struct RunReader {
    path: PathBuf,
    r: BufReader<File>,
}

impl RunReader {
    fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(RunReader {
            path: path.to_path_buf(),
            r: BufReader::new(f),
        })
    }

    fn read_row(&mut self) -> std::io::Result<Option<(String, i64, u32)>> {
        let mut len = [0u8; 4];
        match self.r.read_exact(&mut len) {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            r => r?,
        }
        let mut t = vec![0u8; u32::from_le_bytes(len) as usize];
        self.r.read_exact(&mut t)?;
        let mut id = [0u8; 8];
        self.r.read_exact(&mut id)?;
        let mut tf = [0u8; 4];
        self.r.read_exact(&mut tf)?;
        let term = String::from_utf8(t)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(Some((term, i64::from_le_bytes(id), u32::from_le_bytes(tf))))
    }
}

impl Iterator for RunReader {
    type Item = Result<(String, i64, u32)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.read_row()
            .map_err(|e| Error::io(&self.path, e))
            .transpose()
    }
}

/// Moves the finished bundle `tmp` to `out`. When `out` exists, the two are exchanged atomically
/// (`renameat2(RENAME_EXCHANGE)`), so a reader sees the old or the new bundle, never a mix; where
/// the filesystem cannot exchange, the old bundle is renamed aside first. The old bundle is then removed.
pub fn swap_into_place(tmp: &Path, out: &Path) -> Result<()> {
    if !out.exists() {
        return std::fs::rename(tmp, out).map_err(|e| Error::io(out, e));
    }
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, tmp, CWD, out, RenameFlags::EXCHANGE) {
        Ok(()) => std::fs::remove_dir_all(tmp).map_err(|e| Error::io(tmp, e)),
        Err(_) => {
            let old = tmp.with_extension("old");
            std::fs::rename(out, &old).map_err(|e| Error::io(out, e))?;
            std::fs::rename(tmp, out).map_err(|e| Error::io(out, e))?;
            std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))
        }
    }
}
