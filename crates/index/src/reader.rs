//! Reading a bundle's rows back as the pipeline's records, for incremental builds and merges:
//! chunks with their embeddings a file at a time (in path order), symbols, refs and deps, and
//! the live files and skipped rows. Nothing is held beyond one record batch per table, so
//! carrying a large bundle over costs no more memory than writing it.
use arrow::array::{Array, BooleanArray, Int32Array, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::extract::deps::Dep;
use crate::record::{ChunkRecord, FileRecord, RefKind, RefRecord, Resolution, Scope, SymbolRecord};
use crate::resolve::{Pending, PendingRef};
use crate::{Error, Result};
use trove_bundle::reader::{
    EmbeddingCols, FileRow, Table, column, open_table, opt_i64, opt_str, usize_at, usize_of,
};
use trove_lang::chunk::{Chunk, Symbol};

/// A bundle's per-file rows (chunks with embeddings, symbols, deps), streamed in path order: what
/// an incremental run carries over and a merge copies.
pub struct FileRows {
    dir: PathBuf,
    chunks: ChunkStream,
    symbols: RowStream<SymbolRecord>,
    refs: RowStream<RefRecord>,
    deps: RowStream<Dep>,
}

impl FileRows {
    /// Opens the per-file tables of the segment folder `dir` (vectors of `dim` floats); its chunks
    /// are marked as coming from `source` (see [`ChunkRecord::origin`]).
    pub fn open(dir: &Path, dim: usize, source: usize) -> Result<Self> {
        Ok(FileRows {
            dir: dir.to_path_buf(),
            chunks: ChunkStream::open(dir, dim, source)?,
            symbols: RowStream::open(dir, "symbols", symbol_rows)?,
            refs: RowStream::open(dir, "refs", ref_records)?,
            deps: RowStream::open(dir, "deps", dep_rows)?,
        })
    }

    /// The writer's record of `row`'s file with everything the bundle holds for it. Files must be
    /// asked for in path order.
    pub fn take(&mut self, row: FileRow) -> Result<FileRecord> {
        let chunks = self.chunks.take(&row.path)?;
        if chunks.len() != row.chunks as usize {
            return Err(Error::bundle(
                &self.dir,
                format!(
                    "{} has {} chunk rows, files.parquet says {}",
                    row.path,
                    chunks.len(),
                    row.chunks
                ),
            ));
        }
        let symbols = self.symbols.take(&row.path)?;
        let deps = self.deps.take(&row.path)?;
        let refs = self.refs.take(&row.path)?;
        Ok(FileRecord {
            path: row.path,
            language: row.language,
            source_type: row.source_type,
            bytes: row.bytes,
            lines: row.lines,
            sha256: row.sha256,
            parse_fallback: row.parse_fallback,
            redactions: row.redactions,
            redacted_kinds: Vec::new(),
            summary: row.summary,
            tail: row.tail,
            chunks,
            symbols,
            deps,
            refs,
            scip: None,
        })
    }
}

/// Rows of a table sorted by path, decoded a record batch at a time (each column looked up once
/// per batch, not per row) and handed out a file at a time.
pub struct RowStream<T> {
    dir: PathBuf,
    reader: Table,
    /// The loaded batch's path column and its rows, decoded; `row` indexes both.
    paths: Option<StringArray>,
    rows: std::vec::IntoIter<T>,
    row: usize,
    decode: fn(&RecordBatch, &Path) -> Result<Vec<T>>,
}

impl<T> RowStream<T> {
    fn open(
        dir: &Path,
        table: &str,
        decode: fn(&RecordBatch, &Path) -> Result<Vec<T>>,
    ) -> Result<Self> {
        Ok(RowStream {
            dir: dir.to_path_buf(),
            reader: open_table(dir, table)?,
            paths: None,
            rows: Vec::new().into_iter(),
            row: 0,
            decode,
        })
    }

    /// The rows of `path`, skipping rows of paths before it.
    pub fn take(&mut self, path: &str) -> Result<Vec<T>> {
        let mut out = Vec::new();
        loop {
            let loaded = matches!(&self.paths, Some(p) if self.row < p.len());
            if !loaded {
                match self.reader.next().transpose()? {
                    None => {
                        self.paths = None;
                        break;
                    }
                    Some(b) => {
                        let rows = (self.decode)(&b, &self.dir)?;
                        self.paths = Some(column::<StringArray>(&b, "path", &self.dir)?.clone());
                        self.rows = rows.into_iter();
                        self.row = 0;
                        continue;
                    }
                }
            }
            let here = self.paths.as_ref().expect("loaded").value(self.row);
            let order = here.cmp(path);
            if order == std::cmp::Ordering::Greater {
                break;
            }
            let row = self.rows.next().ok_or_else(|| {
                Error::bundle(&self.dir, "a batch decoded to fewer rows than it has")
            })?;
            if order == std::cmp::Ordering::Equal {
                out.push(row);
            }
            self.row += 1;
        }
        Ok(out)
    }
}

fn symbol_rows(b: &RecordBatch, d: &Path) -> Result<Vec<SymbolRecord>> {
    let s = |n: &str| column::<StringArray>(b, n, d);
    let i64c = |n: &str| column::<Int64Array>(b, n, d);
    let i32c = |n: &str| column::<Int32Array>(b, n, d);
    let (kind, name, symbol_path) = (s("kind")?, s("name")?, s("symbol_path")?);
    let (signature, docs) = (s("signature")?, s("docs")?);
    let (start_byte, end_byte) = (i64c("start_byte")?, i64c("end_byte")?);
    let (start_line, end_line) = (i32c("start_line")?, i32c("end_line")?);
    let name_line = i32c("name_line")?;
    let exported = column::<BooleanArray>(b, "exported", d)?;
    let (symbol_id, parent_id, chunk_id) =
        (i64c("symbol_id")?, i64c("parent_id")?, i64c("chunk_id")?);
    let scip_symbol = s("scip_symbol")?;
    Ok((0..b.num_rows())
        .map(|i| SymbolRecord {
            symbol: Symbol {
                kind: kind.value(i).to_string(),
                name: name.value(i).to_string(),
                symbol_path: symbol_path.value(i).to_string(),
                start_byte: usize_of(start_byte.value(i)),
                end_byte: usize_of(end_byte.value(i)),
                start_line: usize_at(start_line, i),
                end_line: usize_at(end_line, i),
                name_line: usize_at(name_line, i),
                signature: opt_str(signature, i),
                docs: opt_str(docs, i),
                parent: None,
                exported: (!exported.is_null(i)).then(|| exported.value(i)),
            },
            symbol_id: symbol_id.value(i),
            parent_id: opt_i64(parent_id, i),
            chunk_id: opt_i64(chunk_id, i),
            scip_symbol: opt_str(scip_symbol, i),
        })
        .collect())
}

/// Every row of a batch of a refs table, without its path: each record's scope is the bundle-wide
/// context its writer stored ([`Scope::Stored`]), so a row written again resolves as it did.
fn ref_records(b: &RecordBatch, d: &Path) -> Result<Vec<RefRecord>> {
    let s = |n: &str| column::<StringArray>(b, n, d);
    let i64c = |n: &str| column::<Int64Array>(b, n, d);
    let line = column::<Int32Array>(b, "line", d)?;
    let (kind, target, resolution) = (s("kind")?, s("target")?, s("resolution")?);
    let (from_symbol_id, chunk_id) = (i64c("from_symbol_id")?, i64c("chunk_id")?);
    let target_symbol_id = i64c("target_symbol_id")?;
    let scip_symbol = s("scip_symbol")?;
    let (family, import_name) = (s("family")?, s("import_name")?);
    let import_files = column::<arrow::array::ListArray>(b, "import_files", d)?;
    let method_call = column::<BooleanArray>(b, "method_call", d)?;
    let receiver_type = s("receiver_type")?;
    let exports = column::<arrow::array::ListArray>(b, "exports", d)?;
    let strings_at = |list: &arrow::array::ListArray, i: usize| -> Result<Vec<String>> {
        let v = list.value(i);
        let v = v
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| Error::bundle(d, "a list column of refs is of another type"))?;
        Ok(v.iter().flatten().map(str::to_string).collect())
    };
    (0..b.num_rows())
        .map(|i| {
            let bad = |what: &str, v: &str| Error::bundle(d, format!("refs: unknown {what} {v:?}"));
            let k = kind.value(i);
            let resolution = match resolution.is_null(i) {
                true => None,
                false => {
                    let v = resolution.value(i);
                    Some(Resolution::parse(v).ok_or_else(|| bad("resolution", v))?)
                }
            };
            let pending = (!family.is_null(i)).then(|| -> Result<Pending> {
                let import = match import_name.is_null(i) {
                    true => None,
                    false => {
                        let files = import_files.value(i);
                        let files =
                            files
                                .as_any()
                                .downcast_ref::<StringArray>()
                                .ok_or_else(|| {
                                    Error::bundle(d, "column import_files is of another type")
                                })?;
                        Some((
                            import_name.value(i).to_string(),
                            files.iter().flatten().map(str::to_string).collect(),
                        ))
                    }
                };
                Ok(Pending {
                    family: family.value(i).to_string(),
                    import,
                    method: !method_call.is_null(i) && method_call.value(i),
                    member_of: opt_str(receiver_type, i),
                })
            });
            Ok(RefRecord {
                line: usize_at(line, i),
                kind: RefKind::parse(k).ok_or_else(|| bad("kind", k))?,
                target: target.value(i).to_string(),
                from_symbol_id: opt_i64(from_symbol_id, i),
                chunk_id: opt_i64(chunk_id, i),
                target_symbol_id: opt_i64(target_symbol_id, i),
                resolution,
                scip_symbol: opt_str(scip_symbol, i),
                exports: match exports.is_null(i) {
                    true => None,
                    false => Some((strings_at(exports, i)?, strings_at(import_files, i)?)),
                },
                scope: Scope::Stored(pending.transpose()?),
            })
        })
        .collect()
}

/// Every row of a batch of the writer's raw refs spill: path, record, and the bundle-wide
/// context of an open reference (see `BundleWriter`'s `refs-raw`).
pub(crate) fn pending_ref_rows(b: &RecordBatch, d: &Path) -> Result<Vec<PendingRef>> {
    ref_rows(b, d)?
        .into_iter()
        .map(|(path, r)| {
            let pending = match &r.scope {
                Scope::Stored(p) => p.clone(),
                _ => None,
            };
            Ok((path, r, pending))
        })
        .collect()
}

/// Every row of a batch of a refs table: its path and record.
pub(crate) fn ref_rows(b: &RecordBatch, d: &Path) -> Result<Vec<(Arc<str>, RefRecord)>> {
    let path = column::<StringArray>(b, "path", d)?;
    let mut last: Option<Arc<str>> = None;
    Ok(ref_records(b, d)?
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            // A file's refs are consecutive: they share one path.
            let p = match &last {
                Some(p) if **p == *path.value(i) => p.clone(),
                _ => last.insert(Arc::from(path.value(i))).clone(),
            };
            (p, r)
        })
        .collect())
}

fn dep_rows(b: &RecordBatch, d: &Path) -> Result<Vec<Dep>> {
    let s = |n: &str| column::<StringArray>(b, n, d);
    let (ecosystem, name, version, scope) =
        (s("ecosystem")?, s("name")?, s("version")?, s("scope")?);
    Ok((0..b.num_rows())
        .map(|i| Dep {
            ecosystem: ecosystem.value(i).to_string(),
            name: name.value(i).to_string(),
            version: opt_str(version, i),
            scope: scope.value(i).to_string(),
        })
        .collect())
}

/// `chunks.parquet` and `embeddings.parquet` read in step (the writer writes them row for row),
/// handed out a file at a time in path order.
pub struct ChunkStream {
    dir: PathBuf,
    dim: usize,
    chunks: Table,
    embeddings: Table,
    batch: Option<ChunkCols>,
    row: usize,
    /// Rows of the batches before the current one: `base + row` is the row's number.
    base: u64,
    source: usize,
    /// Chunks handed out.
    pub taken: u64,
}

impl ChunkStream {
    /// Opens the two tables of the segment folder `dir`, whose vectors have `dim` floats.
    pub fn open(dir: &Path, dim: usize, source: usize) -> Result<Self> {
        Ok(ChunkStream {
            dir: dir.to_path_buf(),
            dim,
            chunks: open_table(dir, "chunks")?,
            embeddings: open_table(dir, "embeddings")?,
            batch: None,
            row: 0,
            base: 0,
            source,
            taken: 0,
        })
    }

    /// The current row's path, loading the next batches when the current ones are used up;
    /// `None` at the end.
    fn peek_path(&mut self) -> Result<Option<&str>> {
        loop {
            if let Some(c) = &self.batch
                && self.row < c.path.len()
            {
                break;
            }
            let Some(c) = self.chunks.next().transpose()? else {
                self.batch = None;
                return Ok(None);
            };
            let e = self.embeddings.next().transpose()?.ok_or_else(|| {
                Error::bundle(&self.dir, "embeddings.parquet has fewer rows than chunks")
            })?;
            if e.num_rows() != c.num_rows() {
                return Err(Error::bundle(
                    &self.dir,
                    "embeddings.parquet is not row for row with chunks.parquet",
                ));
            }
            if let Some(old) = &self.batch {
                self.base += old.path.len() as u64;
            }
            self.batch = Some(ChunkCols::new(&c, &e, self.dim, &self.dir)?);
            self.row = 0;
        }
        let c = self.batch.as_ref().expect("loaded above");
        Ok(Some(c.path.value(self.row)))
    }

    /// The chunks of `path`, skipping any rows of paths before it. Paths must be asked for in
    /// increasing order; a path with no rows gives an empty list.
    pub fn take(&mut self, path: &str) -> Result<Vec<ChunkRecord>> {
        let mut out = Vec::new();
        loop {
            let here = match self.peek_path()? {
                None => break,
                Some(p) => p.cmp(path),
            };
            match here {
                std::cmp::Ordering::Less => self.row += 1,
                std::cmp::Ordering::Greater => break,
                std::cmp::Ordering::Equal => {
                    out.push(self.record()?);
                    self.row += 1;
                }
            }
        }
        self.taken += out.len() as u64;
        Ok(out)
    }

    /// The chunk record of the current row (terms left empty: postings are carried separately).
    fn record(&self) -> Result<ChunkRecord> {
        let c = self.batch.as_ref().expect("peeked");
        let (i, d) = (self.row, &self.dir);
        let chunk_id = c.chunk_id.value(i);
        if c.embeddings.id(i) != chunk_id {
            return Err(Error::bundle(
                d,
                "embeddings.parquet is not row for row with chunks.parquet",
            ));
        }
        let embedding = c.embeddings.vector(i).to_vec();
        let windows = c.embeddings.windows(i).to_vec();
        // A chunk's ordinal is its row (postings and the next bundle's renumbering rely on it).
        let ord = c.chunk_ord.value(i);
        let row = self.base + i as u64;
        let ord = u32::try_from(ord)
            .ok()
            .filter(|&o| u64::from(o) == row)
            .ok_or_else(|| {
                Error::bundle(
                    d,
                    format!(
                        "chunks.parquet: chunk_ord {ord} in row {row} is not its row number \
                         (run `trove verify` on the bundle)"
                    ),
                )
            })?;
        Ok(ChunkRecord {
            chunk: Chunk {
                kind: c.kind.value(i).to_string(),
                symbol: opt_str(&c.symbol, i),
                symbol_path: opt_str(&c.symbol_path, i),
                signature: opt_str(&c.signature, i),
                docs: opt_str(&c.docs, i),
                start_byte: usize_of(c.start_byte.value(i)),
                end_byte: usize_of(c.end_byte.value(i)),
                start_line: usize_at(&c.start_line, i),
                start_col: usize_at(&c.start_col, i),
                end_line: usize_at(&c.end_line, i),
                end_col: usize_at(&c.end_col, i),
                content: c.content.value(i).to_string(),
            },
            lead: opt_str(&c.lead, i).unwrap_or_default(),
            chunk_id,
            origin: Some((self.source, ord)),
            token_len: c.token_len.value(i).max(0) as u32,
            terms: Vec::new(),
            embedding,
            windows,
            summary: opt_str(&c.summary, i),
        })
    }
}

/// The columns of one batch of `chunks.parquet` and the matching batch of `embeddings.parquet`,
/// looked up (by name, checked for type) once per batch.
struct ChunkCols {
    path: StringArray,
    kind: StringArray,
    symbol: StringArray,
    symbol_path: StringArray,
    signature: StringArray,
    docs: StringArray,
    content: StringArray,
    lead: StringArray,
    summary: StringArray,
    chunk_id: Int64Array,
    start_byte: Int64Array,
    end_byte: Int64Array,
    start_line: Int32Array,
    start_col: Int32Array,
    end_line: Int32Array,
    end_col: Int32Array,
    token_len: Int32Array,
    chunk_ord: Int32Array,
    embeddings: EmbeddingCols,
}

impl ChunkCols {
    fn new(c: &RecordBatch, e: &RecordBatch, dim: usize, d: &Path) -> Result<Self> {
        let s = |n: &str| column::<StringArray>(c, n, d).cloned();
        let i64c = |n: &str| column::<Int64Array>(c, n, d).cloned();
        let i32c = |n: &str| column::<Int32Array>(c, n, d).cloned();
        Ok(ChunkCols {
            path: s("path")?,
            kind: s("kind")?,
            symbol: s("symbol")?,
            symbol_path: s("symbol_path")?,
            signature: s("signature")?,
            docs: s("docs")?,
            content: s("content")?,
            lead: s("lead")?,
            summary: s("summary")?,
            chunk_id: i64c("chunk_id")?,
            start_byte: i64c("start_byte")?,
            end_byte: i64c("end_byte")?,
            start_line: i32c("start_line")?,
            start_col: i32c("start_col")?,
            end_line: i32c("end_line")?,
            end_col: i32c("end_col")?,
            token_len: i32c("token_len")?,
            chunk_ord: i32c("chunk_ord")?,
            embeddings: EmbeddingCols::new(e, dim, d)?,
        })
    }
}
