//! The bundle writer: one thread owns it; it streams record batches into Parquet and spills
//! postings to sorted runs so memory does not grow with the repository.
use arrow::array::{
    ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Int32Array, Int64Array, StringArray,
};
use arrow::datatypes::{DataType, Field, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::manifest::{Counts, FileEntry, LangCount};
use super::schema::expected_schema;
use crate::chunk::Chunk;
use crate::source::Skipped;
use crate::{Error, Result};

/// Rows buffered per table before a record batch is handed to the Parquet writer.
const BATCH_ROWS: usize = 4096;
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
/// Postings held in memory (estimated bytes) before a sorted run is spilled to disk: bounds the
/// writer's memory on any repository size. Measured on 178 MB of crates: 96 MiB gave a 322 MB peak,
/// 16 MiB 184 MB, at the same speed (the final k-way merge over more runs is cheap).
const POSTINGS_SPILL_BYTES: usize = 16 * 1024 * 1024;
/// Row-group size of `symbols` and `refs`: the writer holds a row group in memory, and refs are
/// written twice (raw, then resolved) at once, so groups stay small.
const STRUCTURE_ROW_GROUP_ROWS: usize = 32 * 1024;
/// zstd level: 3 is zstd's default: good ratio at several hundred MB/s.
const ZSTD_LEVEL: i32 = 3;

/// One indexed file and its chunks, as the writer receives it.
#[derive(Debug, Clone)]
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
    /// Secrets replaced by `[REDACTED:<kind>]` in its text.
    pub redactions: u32,
    /// Their kinds (this run's processing only; not stored).
    pub redacted_kinds: Vec<&'static str>,
    /// One-sentence summary (header comment, else what it defines).
    pub summary: Option<String>,
    /// Chunks in source order.
    pub chunks: Vec<ChunkRecord>,
    /// Definitions in source order.
    pub symbols: Vec<SymbolRecord>,
    /// Dependencies it declares (package manifests).
    pub deps: Vec<crate::extract::deps::Dep>,
    /// Imports and calls in source order.
    pub refs: Vec<RefRecord>,
}

/// Kinds a call can land on: a call's target resolves to a definition of one of these.
pub const CALLABLE_KINDS: &[&str] = &[
    "function",
    "method",
    "macro",
    "constructor",
    "class",
    "struct",
];

/// Separates a language family from a name in the writer's resolution keys.
const SCOPE_SEP: char = '\u{1f}';

/// References resolve within a language family (a TypeScript call can land on a JavaScript
/// function, never on a Python one).
fn language_family(lang: Option<&str>) -> &str {
    match lang {
        Some("javascript" | "typescript" | "tsx") => "js",
        Some("c" | "cpp") => "c",
        Some(l) => l,
        None => "",
    }
}

fn scoped_name(family: &str, name: &str) -> String {
    format!("{family}{SCOPE_SEP}{name}")
}

/// Key of `defs_in_file`: class (`c` callable, `t` type), file, name.
fn file_key(class: char, path: &str, name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    (class, path, name).hash(&mut h);
    h.finish()
}

/// Kinds an `inherits`/`implements` reference can land on.
pub const TYPE_KINDS: &[&str] = &["class", "struct", "interface", "trait", "enum", "type"];

/// The kinds a reference of `kind` resolves to (none for imports).
pub fn target_kinds(kind: &str) -> &'static [&'static str] {
    match kind {
        "call" => CALLABLE_KINDS,
        "inherits" | "implements" | "references" => TYPE_KINDS,
        _ => &[],
    }
}

/// One import, call, or base type (`inherits` / `implements`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefRecord {
    /// 1-based line.
    pub line: usize,
    /// `import`, `call`, `inherits` or `implements`.
    pub kind: String,
    /// The called name or base type, or the import statement.
    pub target: String,
    /// The innermost definition it occurs in.
    pub from_symbol_id: Option<i64>,
    /// The chunk it occurs in.
    pub chunk_id: Option<i64>,
    /// The definition a call resolves to: the one callable of that name in the same file, else
    /// the one in the repository; none when there are none or several (never a guess).
    pub target_symbol_id: Option<i64>,
    /// `file` or `repo`: how `target_symbol_id` was found.
    pub resolution: Option<String>,
}

/// One definition with its ids.
#[derive(Debug, Clone)]
pub struct SymbolRecord {
    /// The definition.
    pub symbol: crate::chunk::Symbol,
    /// Stable id (path, kind, symbol path, start byte).
    pub symbol_id: i64,
    /// The enclosing definition's id.
    pub parent_id: Option<i64>,
    /// The chunk that holds the definition's start.
    pub chunk_id: Option<i64>,
}

/// One chunk with its id, BM25 terms and embedding.
#[derive(Debug, Clone)]
pub struct ChunkRecord {
    /// The chunk.
    pub chunk: Chunk,
    /// Stable id.
    pub chunk_id: i64,
    /// Where a chunk carried over from another bundle came from: (source, its `chunk_ord` there),
    /// so that source's postings can be renumbered ([`BundleWriter::renumbering`]).
    pub origin: Option<(usize, u32)>,
    /// Tokens in the chunk (BM25 document length).
    pub token_len: u32,
    /// (term, term frequency), any order.
    pub terms: Vec<(String, u32)>,
    /// The embedding.
    pub embedding: Vec<f32>,
    /// One-sentence summary (doc comment, else built from what it is and calls).
    pub summary: Option<String>,
}

/// A column's path from its dotted name: `embedding.list.item` is three parts (a nested
/// column), which `ColumnPath::from(&str)` would take as one name that matches nothing.
fn column(dotted: &str) -> ColumnPath {
    ColumnPath::new(dotted.split('.').map(String::from).collect())
}

fn props(table: &str) -> Result<WriterProperties> {
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
struct Table {
    name: &'static str,
    path: PathBuf,
    schema: SchemaRef,
    tx: Option<crossbeam_channel::Sender<RecordBatch>>,
    encoder: Option<std::thread::JoinHandle<Result<()>>>,
    rows: u64,
}

/// Batches a table's encoder may hold queued (a chunks batch is a few MB).
const QUEUED_BATCHES: usize = 2;

impl Table {
    fn create(dir: &Path, name: &'static str, dim: usize) -> Result<Self> {
        let path = dir.join(format!("{name}.parquet"));
        let schema = expected_schema(name, dim)
            .ok_or_else(|| Error::Other(format!("no schema for {name}")))?;
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut writer =
            ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props(name)?))?;
        let (tx, rx) = crossbeam_channel::bounded::<RecordBatch>(QUEUED_BATCHES);
        let at = path.clone();
        let encoder = std::thread::Builder::new()
            .name(format!("trove-write-{name}"))
            .spawn(move || -> Result<()> {
                for batch in rx {
                    writer.write(&batch)?;
                }
                // Closed: the file is complete. Footer, flush, sync.
                let mut inner = writer.into_inner()?;
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

    fn write(&mut self, columns: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.rows += batch.num_rows() as u64;
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if sent {
            Ok(())
        } else {
            // The encoder stopped: its error says why.
            self.join().and(Err(Error::Other(format!(
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
                Err(Error::Other(format!(
                    "writing {}.parquet panicked",
                    self.name
                )))
            }),
            None => Ok(()),
        }
    }

    /// Closes the file, syncs it, and returns its manifest entry.
    fn finish(mut self) -> Result<FileEntry> {
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
    /// The chunk's ordinal in the bundle (its row in `chunks.parquet`).
    ord: u32,
}

/// Streams a bundle's tables into a directory.
pub struct BundleWriter {
    dir: PathBuf,
    dim: usize,
    files: Table,
    chunks: Table,
    embeddings: Table,
    symbols: Table,
    deps: Table,
    symbol_rows: Vec<(Arc<str>, Option<Arc<str>>, SymbolRecord)>,
    dep_rows: Vec<(Arc<str>, crate::extract::deps::Dep)>,
    /// Refs as files arrive, unresolved across files: resolved into `refs.parquet` at the end.
    refs_raw: Option<Table>,
    ref_rows: Vec<(Arc<str>, RefRecord)>,
    /// Callable definitions by name over the whole bundle: (how many, the id of one).
    callables: FxHashMap<String, (u32, i64)>,
    /// Type definitions (class, struct, interface, trait, ...) by name, likewise.
    types: FxHashMap<String, (u32, i64)>,
    /// Callable (`c`) and type (`t`) definitions by a 64-bit hash of (class, file, name), for
    /// references through imports (a hash, not the strings: this map holds every definition).
    defs_in_file: FxHashMap<u64, (u32, i64)>,
    file_rows: Vec<(FileRecord, usize)>,
    chunk_rows: Vec<ChunkRow>,
    postings: Spill,
    /// Per source bundle: its chunk ordinals → this bundle's (`u32::MAX`: not carried).
    renumber: Vec<Vec<u32>>,
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
            symbols: Table::create(dir, "symbols", dim)?,
            deps: Table::create(dir, "deps", dim)?,
            symbol_rows: Vec::new(),
            dep_rows: Vec::new(),
            refs_raw: Some(Table::create(dir, "refs-raw", dim)?),
            ref_rows: Vec::new(),
            callables: FxHashMap::default(),
            types: FxHashMap::default(),
            defs_in_file: FxHashMap::default(),
            file_rows: Vec::new(),
            chunk_rows: Vec::new(),
            postings: Spill::new(dir.join(".postings-runs"), POSTINGS_SPILL_BYTES),
            renumber: Vec::new(),
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
        let family = language_family(f.language.as_deref());
        let lang = self
            .languages
            .entry(f.language.clone().unwrap_or_else(|| "(none)".into()))
            .or_default();
        lang.files += 1;
        lang.chunks += total as u64;
        self.counts.files += 1;
        self.counts.redactions += u64::from(f.redactions);
        let first = self.counts.chunks;
        self.counts.chunks += total as u64;
        self.counts.source_bytes += f.bytes;
        for (index, mut rec) in std::mem::take(&mut f.chunks).into_iter().enumerate() {
            // `chunk_ord` is an INT32 column: refuse what it cannot hold rather than clamp it.
            let ord = i32::try_from(first + index as u64)
                .map_err(|_| Error::Other("more than 2^31 chunks in one bundle".into()))?
                .unsigned_abs();
            self.total_tokens += u64::from(rec.token_len);
            for (term, tf) in std::mem::take(&mut rec.terms) {
                self.postings.push(term, ord, tf)?;
            }
            if let Some((source, old)) = rec.origin {
                if self.renumber.len() <= source {
                    self.renumber.resize_with(source + 1, Vec::new);
                }
                let map = &mut self.renumber[source];
                if map.len() <= old as usize {
                    map.resize(old as usize + 1, u32::MAX);
                }
                map[old as usize] = ord;
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
                ord,
            });
            if self.chunk_rows.len() >= BATCH_ROWS {
                self.flush_chunks()?;
            }
        }
        for sym in std::mem::take(&mut f.symbols) {
            for (class, kinds, map) in [
                ('c', CALLABLE_KINDS, &mut self.callables),
                ('t', TYPE_KINDS, &mut self.types),
            ] {
                if kinds.contains(&sym.symbol.kind.as_str()) {
                    map.entry(scoped_name(family, &sym.symbol.name))
                        .or_insert((0, sym.symbol_id))
                        .0 += 1;
                    self.defs_in_file
                        .entry(file_key(class, &f.path, &sym.symbol.name))
                        .or_insert((0, sym.symbol_id))
                        .0 += 1;
                }
            }
            self.symbol_rows.push((path.clone(), language.clone(), sym));
        }
        let statements: Vec<&str> = f
            .refs
            .iter()
            .filter(|r| r.kind == "import")
            .map(|r| r.target.as_str())
            .collect();
        let imports =
            crate::extract::imports::import_map(&f.path, f.language.as_deref(), &statements);
        for mut r in std::mem::take(&mut f.refs) {
            // Resolved across the bundle at the end — through the file's imports, else within
            // its language family — so the raw row carries the family, the name and where an
            // import says the name comes from.
            if r.resolution.as_deref() != Some("file") && !target_kinds(&r.kind).is_empty() {
                let mut t = scoped_name(family, &r.target);
                if let Some((name, files)) = imports.get(&r.target) {
                    t.push(SCOPE_SEP);
                    t.push_str(name);
                    t.push(SCOPE_SEP);
                    t.push_str(&files.join("\u{1e}"));
                }
                r.target = t;
            }
            self.ref_rows.push((path.clone(), r));
        }
        if self.ref_rows.len() >= BATCH_ROWS
            && let Some(raw) = self.refs_raw.as_mut()
        {
            write_refs(raw, &std::mem::take(&mut self.ref_rows))?;
        }
        if self.symbol_rows.len() >= BATCH_ROWS {
            self.flush_symbols()?;
        }
        for d in std::mem::take(&mut f.deps) {
            self.dep_rows.push((path.clone(), d));
        }
        if self.dep_rows.len() >= BATCH_ROWS {
            self.flush_deps()?;
        }
        self.file_rows.push((f, total));
        if self.file_rows.len() >= BATCH_ROWS {
            self.flush_files()?;
        }
        Ok(())
    }

    fn flush_symbols(&mut self) -> Result<()> {
        if self.symbol_rows.is_empty() {
            return Ok(());
        }
        let r = std::mem::take(&mut self.symbol_rows);
        self.symbols.write(vec![
            i64s(r.iter().map(|x| x.2.symbol_id)),
            strings(r.iter().map(|x| x.0.as_ref())),
            opt_strings(r.iter().map(|x| x.1.as_deref())),
            strings(r.iter().map(|x| x.2.symbol.kind.as_str())),
            strings(r.iter().map(|x| x.2.symbol.name.as_str())),
            strings(r.iter().map(|x| x.2.symbol.symbol_path.as_str())),
            i32s(r.iter().map(|x| i32c(x.2.symbol.start_line))),
            i32s(r.iter().map(|x| i32c(x.2.symbol.end_line))),
            i32s(r.iter().map(|x| i32c(x.2.symbol.name_line))),
            i64s(r.iter().map(|x| x.2.symbol.start_byte as i64)),
            i64s(r.iter().map(|x| x.2.symbol.end_byte as i64)),
            opt_strings(r.iter().map(|x| x.2.symbol.signature.as_deref())),
            opt_strings(r.iter().map(|x| x.2.symbol.docs.as_deref())),
            Arc::new(Int64Array::from_iter(r.iter().map(|x| x.2.parent_id))),
            Arc::new(BooleanArray::from_iter(
                r.iter().map(|x| x.2.symbol.exported),
            )),
            Arc::new(Int64Array::from_iter(r.iter().map(|x| x.2.chunk_id))),
        ])
    }

    /// Reads the raw refs back in order and writes `refs.parquet`, resolving every call not
    /// resolved within its file against the callables of the whole bundle.
    fn finish_refs(&mut self) -> Result<(FileEntry, u64)> {
        let mut raw = self
            .refs_raw
            .take()
            .ok_or_else(|| Error::Other("refs finished twice".into()))?;
        write_refs(&mut raw, &std::mem::take(&mut self.ref_rows))?;
        let raw_path = raw.path.clone();
        raw.finish()?;
        let mut out = Table::create(&self.dir, "refs", self.dim)?;
        let mut resolved = 0u64;
        let mut buf: Vec<(Arc<str>, RefRecord)> = Vec::new();
        let f = File::open(&raw_path).map_err(|e| Error::io(&raw_path, e))?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)?
            .with_batch_size(BATCH_ROWS)
            .build()?;
        for batch in reader {
            for (path, mut r) in super::reader::ref_rows(&batch?, &raw_path)? {
                let rewritten =
                    r.resolution.as_deref() != Some("file") && !target_kinds(&r.kind).is_empty();
                let parts: Vec<String> = if rewritten {
                    r.target.split(SCOPE_SEP).map(str::to_string).collect()
                } else {
                    Vec::new()
                };
                if let [family, name, rest @ ..] = parts.as_slice() {
                    let key = scoped_name(family, name);
                    r.target = name.clone();
                    let class = if r.kind == "call" { 'c' } else { 't' };
                    // A name that came through an import is the import's business: resolved when
                    // exactly one of the module's candidate files defines it, once; never by a
                    // repo-wide name (`from os.path import join` is not the repo's `join`).
                    // Otherwise the one definition in the family.
                    let via_import = match rest {
                        [imported, files] => {
                            let found: Vec<&(u32, i64)> = files
                                .split('\u{1e}')
                                .filter_map(|file| {
                                    self.defs_in_file.get(&file_key(class, file, imported))
                                })
                                .collect();
                            Some(match found.as_slice() {
                                [(1, id)] => Some(*id),
                                _ => None,
                            })
                        }
                        _ => None,
                    };
                    let (id, how) = match via_import {
                        Some(id) => (id, "import"),
                        None => {
                            let names = if class == 'c' {
                                &self.callables
                            } else {
                                &self.types
                            };
                            let unique = names.get(&key).filter(|(n, _)| *n == 1);
                            (unique.map(|(_, id)| *id), "repo")
                        }
                    };
                    r.target_symbol_id = id;
                    r.resolution = id.map(|_| how.to_string());
                }
                resolved += u64::from(r.target_symbol_id.is_some());
                buf.push((path, r));
                if buf.len() >= BATCH_ROWS {
                    write_refs(&mut out, &std::mem::take(&mut buf))?;
                }
            }
        }
        write_refs(&mut out, &buf)?;
        std::fs::remove_file(&raw_path).map_err(|e| Error::io(&raw_path, e))?;
        Ok((out.finish()?, resolved))
    }

    fn flush_deps(&mut self) -> Result<()> {
        if self.dep_rows.is_empty() {
            return Ok(());
        }
        let r = std::mem::take(&mut self.dep_rows);
        self.deps.write(vec![
            strings(r.iter().map(|x| x.0.as_ref())),
            strings(r.iter().map(|x| x.1.ecosystem.as_str())),
            strings(r.iter().map(|x| x.1.name.as_str())),
            opt_strings(r.iter().map(|x| x.1.version.as_deref())),
            strings(r.iter().map(|x| x.1.scope.as_str())),
        ])
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
            opt_strings(r.iter().map(|(f, _)| f.summary.as_deref())),
            i32s(r.iter().map(|(_, n)| i32c(*n))),
            Arc::new(BooleanArray::from(
                r.iter().map(|(f, _)| f.parse_fallback).collect::<Vec<_>>(),
            )),
            i32s(r.iter().map(|(f, _)| i32c(f.redactions as usize))),
        ])
    }

    fn flush_chunks(&mut self) -> Result<()> {
        if self.chunk_rows.is_empty() {
            return Ok(());
        }
        let r = std::mem::take(&mut self.chunk_rows);
        self.chunks.write(vec![
            i64s(r.iter().map(|x| x.rec.chunk_id)),
            i32s(r.iter().map(|x| i32::try_from(x.ord).unwrap_or(i32::MAX))),
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
            opt_strings(r.iter().map(|x| x.rec.summary.as_deref())),
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

    /// How the chunk ordinals of source bundle `source` (the `origin` of the chunks carried from
    /// it) map to this bundle's: index by the old `chunk_ord`, `u32::MAX` for chunks not carried.
    /// Complete once every file has been added; for that source's [`GroupSource`] of postings.
    pub fn renumbering(&mut self, source: usize) -> Vec<u32> {
        self.renumber
            .get_mut(source)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Writes the remaining tables. `carried` are postings of chunks added without terms (carried
    /// over from other bundles): merged with this writer's own, so `terms`/`postings` come out as
    /// if every chunk had been tokenized here.
    pub fn finish(mut self, skipped: &[Skipped], carried: Vec<GroupSource>) -> Result<Finished> {
        self.flush_files()?;
        self.flush_chunks()?;
        self.flush_symbols()?;
        self.flush_deps()?;
        // The two long tails run side by side: terms/postings (a k-way merge of sorted runs and
        // carried postings) on a second thread, refs (resolved against the whole bundle's
        // definitions) and the other tables' last row groups on this one.
        let spill = std::mem::replace(&mut self.postings, Spill::new(self.dir.clone(), 0));
        let (dir, dim) = (self.dir.clone(), self.dim);
        let (refs, postings) = std::thread::scope(|s| {
            let postings = s.spawn(move || -> Result<_> {
                let mut terms = Table::create(&dir, "terms", dim)?;
                let mut postings = Table::create(&dir, "postings", dim)?;
                let (n_terms, n_postings) =
                    spill.write_sorted(&mut terms, &mut postings, carried)?;
                Ok((terms.finish()?, postings.finish()?, n_terms, n_postings))
            });
            let refs = self.finish_refs();
            let postings = postings
                .join()
                .unwrap_or_else(|_| Err(Error::Other("writing postings panicked".into())));
            (refs, postings)
        });
        let (refs, refs_resolved) = refs?;
        let (terms, postings, n_terms, n_postings) = postings?;
        let files = self.files.finish()?;
        let chunks = self.chunks.finish()?;
        let embeddings = self.embeddings.finish()?;
        let symbols = self.symbols.finish()?;
        let deps = self.deps.finish()?;
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
        self.counts.symbols = symbols.rows;
        self.counts.deps = deps.rows;
        self.counts.refs = refs.rows;
        self.counts.refs_resolved = refs_resolved;
        self.counts.terms = n_terms;
        self.counts.postings = n_postings;
        let avgdl = if self.counts.chunks == 0 {
            0.0
        } else {
            self.total_tokens as f64 / self.counts.chunks as f64
        };
        Ok(Finished {
            entries: vec![
                files, chunks, embeddings, terms, postings, symbols, refs, deps, sk,
            ],
            counts: self.counts,
            languages: self.languages,
            avgdl,
        })
    }
}

/// Writes ref rows (path, record) to `t`.
fn write_refs(t: &mut Table, r: &[(Arc<str>, RefRecord)]) -> Result<()> {
    if r.is_empty() {
        return Ok(());
    }
    t.write(vec![
        strings(r.iter().map(|x| x.0.as_ref())),
        i32s(r.iter().map(|x| i32c(x.1.line))),
        strings(r.iter().map(|x| x.1.kind.as_str())),
        strings(r.iter().map(|x| x.1.target.as_str())),
        Arc::new(Int64Array::from_iter(r.iter().map(|x| x.1.from_symbol_id))),
        Arc::new(Int64Array::from_iter(r.iter().map(|x| x.1.chunk_id))),
        Arc::new(Int64Array::from_iter(
            r.iter().map(|x| x.1.target_symbol_id),
        )),
        opt_strings(r.iter().map(|x| x.1.resolution.as_deref())),
    ])
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

/// One posting: (chunk ordinal, term frequency).
pub type Posting = (u32, u32);
/// The postings of one term, sorted by chunk ordinal once complete.
pub type Group = (String, Vec<Posting>);
/// A stream of term groups in term order (each group's ordinals sorted): postings carried over
/// from another bundle, renumbered to this bundle's ordinals.
pub type GroupSource = Box<dyn Iterator<Item = Result<Group>> + Send>;

/// Postings grouped by term in memory (each term stored once, ordinals sorted), spilled to
/// sorted runs on disk when the memory budget fills, merged once at the end.
struct Spill {
    dir: PathBuf,
    budget: usize,
    map: FxHashMap<String, Vec<Posting>>,
    bytes: usize,
    runs: Vec<PathBuf>,
}

impl Spill {
    fn new(dir: PathBuf, budget: usize) -> Self {
        Spill {
            dir,
            budget,
            map: FxHashMap::default(),
            bytes: 0,
            runs: Vec::new(),
        }
    }

    fn push(&mut self, term: String, ord: u32, tf: u32) -> Result<()> {
        match self.map.get_mut(term.as_str()) {
            Some(v) => {
                v.push((ord, tf));
                self.bytes += 8;
            }
            None => {
                // Key, vector header, map slot, first entry: roughly.
                self.bytes += term.len() + 72;
                self.map.insert(term, vec![(ord, tf)]);
            }
        }
        if self.bytes >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// The in-memory groups, sorted by term, each sorted by chunk id.
    fn take_sorted(&mut self) -> Vec<Group> {
        let mut groups: Vec<Group> = self.map.drain().collect();
        groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (_, ids) in &mut groups {
            ids.sort_unstable();
        }
        self.bytes = 0;
        groups
    }

    fn spill(&mut self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let path = self.dir.join(format!("run-{:05}", self.runs.len()));
        let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut w = BufWriter::new(f);
        let io = |e| Error::io(&path, e);
        for (t, ids) in self.take_sorted() {
            w.write_all(&(t.len() as u32).to_le_bytes()).map_err(io)?;
            w.write_all(t.as_bytes()).map_err(io)?;
            w.write_all(&(ids.len() as u32).to_le_bytes()).map_err(io)?;
            for (ord, tf) in ids {
                w.write_all(&ord.to_le_bytes()).map_err(io)?;
                w.write_all(&tf.to_le_bytes()).map_err(io)?;
            }
        }
        w.flush().map_err(io)?;
        self.runs.push(path);
        Ok(())
    }

    /// Merges everything in (term, chunk_ord) order into `postings`, and (term, df) into `terms`.
    fn write_sorted(
        mut self,
        terms: &mut Table,
        postings: &mut Table,
        carried: Vec<GroupSource>,
    ) -> Result<(u64, u64)> {
        let mut sources: Vec<GroupSource> = Vec::new();
        if self.runs.is_empty() {
            sources.push(Box::new(self.take_sorted().into_iter().map(Ok)));
        } else {
            if !self.map.is_empty() {
                self.spill()?;
            }
            for p in &self.runs {
                sources.push(Box::new(RunReader::open(p)?));
            }
        }
        sources.extend(carried);
        let mut heads: Vec<Option<Vec<Posting>>> = vec![None; sources.len()];
        let mut heap: BinaryHeap<Reverse<(String, usize)>> = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(g) = s.next() {
                let (t, ids) = g?;
                heads[i] = Some(ids);
                heap.push(Reverse((t, i)));
            }
        }
        let mut out = Batches::default();
        while let Some(Reverse((term, i))) = heap.pop() {
            let mut ids = heads[i].take().unwrap_or_default();
            let mut from = vec![i];
            // The same term from other runs: their chunks are disjoint, so concatenate and sort.
            while heap.peek().is_some_and(|Reverse((t, _))| *t == term) {
                if let Some(Reverse((_, j))) = heap.pop() {
                    ids.extend(heads[j].take().unwrap_or_default());
                    from.push(j);
                }
            }
            if from.len() > 1 {
                ids.sort_unstable();
            }
            for j in from {
                if let Some(g) = sources[j].next() {
                    let (t, next_ids) = g?;
                    heads[j] = Some(next_ids);
                    heap.push(Reverse((t, j)));
                }
            }
            out.add(terms, postings, term, &ids)?;
        }
        out.flush(terms, postings)?;
        if !self.runs.is_empty() {
            std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        }
        Ok((out.n_terms, out.n_postings))
    }
}

/// Row buffers of `terms` and `postings`, flushed every [`BATCH_ROWS`].
#[derive(Default)]
struct Batches {
    terms: Vec<String>,
    df: Vec<i64>,
    p_terms: Vec<u32>,
    p_ords: Vec<i32>,
    p_tfs: Vec<i32>,
    n_terms: u64,
    n_postings: u64,
}

impl Batches {
    fn add(
        &mut self,
        terms: &mut Table,
        postings: &mut Table,
        term: String,
        ids: &[Posting],
    ) -> Result<()> {
        let k = self.terms.len() as u32;
        for &(ord, tf) in ids {
            self.p_terms.push(k);
            self.p_ords.push(i32::try_from(ord).unwrap_or(i32::MAX));
            self.p_tfs.push(i32::try_from(tf).unwrap_or(i32::MAX));
        }
        self.terms.push(term);
        self.df.push(ids.len() as i64);
        if self.p_ords.len() >= BATCH_ROWS || self.terms.len() >= BATCH_ROWS {
            self.flush(terms, postings)?;
        }
        Ok(())
    }

    fn flush(&mut self, terms: &mut Table, postings: &mut Table) -> Result<()> {
        if !self.p_ords.is_empty() {
            let names = &self.terms;
            postings.write(vec![
                strings(self.p_terms.iter().map(|&k| names[k as usize].as_str())),
                i32s(self.p_ords.iter().copied()),
                i32s(self.p_tfs.iter().copied()),
            ])?;
            self.n_postings += self.p_ords.len() as u64;
        }
        if !self.terms.is_empty() {
            terms.write(vec![
                strings(self.terms.iter().map(String::as_str)),
                i64s(self.df.iter().copied()),
            ])?;
            self.n_terms += self.terms.len() as u64;
        }
        self.terms.clear();
        self.df.clear();
        self.p_terms.clear();
        self.p_ords.clear();
        self.p_tfs.clear();
        Ok(())
    }
}

/// Reads one spilled run back, a term group at a time.
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

    fn u32(&mut self) -> std::io::Result<u32> {
        let mut b = [0u8; 4];
        self.r.read_exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn read_group(&mut self) -> std::io::Result<Option<Group>> {
        let len = match self.u32() {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            r => r? as usize,
        };
        let mut t = vec![0u8; len];
        self.r.read_exact(&mut t)?;
        let term = String::from_utf8(t)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let n = self.u32()? as usize;
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            let ord = self.u32()?;
            ids.push((ord, self.u32()?));
        }
        Ok(Some((term, ids)))
    }
}

impl Iterator for RunReader {
    type Item = Result<Group>;
    fn next(&mut self) -> Option<Self::Item> {
        self.read_group()
            .map_err(|e| Error::io(&self.path, e))
            .transpose()
    }
}

/// Held while a run writes a bundle: an exclusive `flock` on `<parent>/.<name>.lock`. The kernel
/// drops it when the process ends, however it ends, so a killed run never leaves it stuck.
#[derive(Debug)]
pub struct OutputLock {
    _file: std::fs::File,
}

/// `<parent>/.<name>.lock`: the output lock file of `out`.
pub fn lock_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    out.with_file_name(format!(".{name}.lock"))
}

/// Takes the output lock of `out` (creating its parent), or refuses with the pid of the run that
/// holds it. Holding it, removes what killed runs left beside `out` (`.<name>.tmp-<pid>`).
pub fn lock_output(out: &Path) -> Result<OutputLock> {
    use rustix::fs::{FlockOperation, flock};
    use std::io::{Read, Seek, Write};
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    let parent = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let path = lock_path(out);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        let pid = pid.trim();
        return Err(Error::Other(format!(
            "another trove run{} is writing {}: wait for it to finish (lock {})",
            if pid.is_empty() {
                String::new()
            } else {
                format!(" (pid {pid})")
            },
            out.display(),
            path.display()
        )));
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    // No other run is writing `out`: temp directories beside it are leftovers of killed runs.
    let prefix = format!(".{name}.tmp-");
    if let Ok(entries) = std::fs::read_dir(parent) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    Ok(OutputLock { _file: file })
}

/// `<parent>/.<name>.tmp-<pid>`: beside the target, so the final rename stays on one filesystem.
pub fn temp_beside(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    out.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Refuses an output path that is a file or a directory other than a trove bundle (an empty one
/// is fine), and creates its parent.
pub fn check_replaceable(out: &Path) -> Result<()> {
    if out.is_file() {
        return Err(Error::Other(format!(
            "output {} is a file: choose a directory path for the bundle",
            out.display()
        )));
    }
    if out.is_dir() {
        let empty = std::fs::read_dir(out)
            .map_err(|e| Error::io(out, e))?
            .next()
            .is_none();
        if !empty && super::read_manifest(out).is_err() {
            return Err(Error::Other(format!(
                "refusing to overwrite {}: it exists and is not a trove bundle (remove it or choose another -o)",
                out.display()
            )));
        }
    }
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}

/// Builds a bundle with `build` in a fresh temp directory beside `out`, then swaps it into place;
/// on any failure the temp directory is removed and `out` is left as it was.
pub fn build_beside<T>(out: &Path, build: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let tmp = temp_beside(out);
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let r = build(&tmp).and_then(|v| swap_into_place(&tmp, out).map(|()| v));
    if r.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    r
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_settings_reach_nested_and_id_columns() {
        let p = props("embeddings").unwrap();
        // The floats sit three levels down; a one-part path would leave their dictionary on.
        assert!(!p.dictionary_enabled(&column("embedding.list.item")));
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

    fn merged(budget: usize, dir: &Path) -> (Vec<u8>, Vec<u8>, usize) {
        std::fs::create_dir_all(dir).unwrap();
        let mut spill = Spill::new(dir.join(".runs"), budget);
        for chunk in 0..300i64 {
            for t in 0..(chunk % 17 + 1) {
                spill
                    .push(
                        format!("term{}", (chunk * 7 + t * 13) % 50),
                        1000 - chunk as u32,
                        (t + 1) as u32,
                    )
                    .unwrap();
            }
        }
        let runs = spill.runs.len();
        let mut terms = Table::create(dir, "terms", 8).unwrap();
        let mut postings = Table::create(dir, "postings", 8).unwrap();
        spill
            .write_sorted(&mut terms, &mut postings, Vec::new())
            .unwrap();
        terms.finish().unwrap();
        postings.finish().unwrap();
        assert!(
            !dir.join(".runs").exists(),
            "runs are removed after the merge"
        );
        (
            std::fs::read(dir.join("terms.parquet")).unwrap(),
            std::fs::read(dir.join("postings.parquet")).unwrap(),
            runs,
        )
    }

    #[test]
    fn spilled_runs_merge_to_the_same_bytes_as_memory() {
        let t = tempfile::tempdir().unwrap();
        let (t1, p1, r1) = merged(usize::MAX, &t.path().join("mem"));
        let (t2, p2, r2) = merged(2000, &t.path().join("spill"));
        assert_eq!(r1, 0);
        assert!(r2 > 3, "the small budget spilled {r2} runs");
        assert_eq!(t1, t2);
        assert_eq!(p1, p2);
    }
}
