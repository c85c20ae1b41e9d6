//! The bundle writer: one thread owns it. Files arrive in path order with their records; it
//! buffers rows into batches for each table's encoder ([`trove_bundle::table`]), hands BM25
//! terms to the postings spill ([`trove_bundle::postings`]), and counts every definition so the
//! references left open in their files resolve against the whole bundle at the end
//! ([`crate::resolve`]).
use arrow::array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Int64Array, ListArray,
    ListBuilder, StringBuilder,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::record::{ChunkRecord, FileRecord, GroupSource, RefRecord, Resolution, SymbolRecord};
use crate::resolve::{Definitions, Pending, PendingRef};
use crate::source::Skipped;
use crate::{Error, Result};
pub use trove_bundle::Finished;
use trove_bundle::postings::{POSTINGS_SPILL_BYTES, Spill};
use trove_bundle::table::{BATCH_ROWS, Table, i32c, i32s, i64s, opt_strings, strings};
use trove_bundle::views_file::{stage_views, write_views};
use trove_bundle::{Counts, FileEntry, LangCount, SegmentInfo};
use trove_lang::chunk::Chunk;

/// The raw refs spill's table name (`refs` plus each open reference's [`Pending`] context).
pub(crate) const REFS_RAW: &str = "refs-raw";

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
    /// The bundle folder being written.
    bundle: PathBuf,
    /// Its segment's folder while the tables are written.
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
    ref_rows: Vec<PendingRef>,
    /// Every callable and type definition of the bundle: what open references resolve against.
    definitions: Definitions,
    file_rows: Vec<(FileRecord, FileTotals)>,
    chunk_rows: Vec<ChunkRow>,
    postings: Spill,
    /// Per source bundle: its chunk ordinals → this bundle's (`u32::MAX`: not carried).
    renumber: Vec<Vec<u32>>,
    counts: Counts,
    languages: BTreeMap<String, LangCount>,
    total_tokens: u64,
    /// The live segments this one follows (none for a full build).
    before: Vec<SegmentInfo>,
    /// Paths whose rows in those segments this one kills.
    tombstones: Vec<String>,
}

/// A file's totals, stored in its `files` row.
#[derive(Debug, Clone, Copy, Default)]
struct FileTotals {
    chunks: usize,
    tokens: u64,
    symbols: usize,
    refs: usize,
    deps: usize,
}

/// The chunk of a buffered row.
fn c(row: &ChunkRow) -> &Chunk {
    &row.rec.chunk
}

impl BundleWriter {
    /// Starts writing a bundle into `bundle` (which must exist and be empty): its one segment's
    /// tables go to a folder under `segments/` named by their content once they are complete.
    pub fn create(bundle: &Path, dim: usize) -> Result<Self> {
        Self::append(bundle, dim, Vec::new(), Vec::new())
    }

    /// Starts writing a segment that follows the live segments `before` of the bundle `bundle`
    /// and tombstones `tombstones` (paths, sorted) in them. Its folder is `segments/.building`
    /// until it is complete and named; what a killed run left there is removed first.
    pub fn append(
        bundle: &Path,
        dim: usize,
        before: Vec<SegmentInfo>,
        tombstones: Vec<String>,
    ) -> Result<Self> {
        let dir = bundle.join(trove_bundle::SEGMENTS).join(BUILDING);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let dir = dir.as_path();
        Ok(BundleWriter {
            bundle: bundle.to_path_buf(),
            dir: dir.to_path_buf(),
            dim,
            files: Table::create(dir, "files", dim)?,
            chunks: Table::create(dir, "chunks", dim)?,
            embeddings: Table::create(dir, "embeddings", dim)?,
            symbols: Table::create(dir, "symbols", dim)?,
            deps: Table::create(dir, "deps", dim)?,
            symbol_rows: Vec::new(),
            dep_rows: Vec::new(),
            refs_raw: Some(Table::create(dir, REFS_RAW, dim)?),
            ref_rows: Vec::new(),
            definitions: Definitions::default(),
            file_rows: Vec::new(),
            chunk_rows: Vec::new(),
            postings: Spill::new(dir.join(".postings-runs"), POSTINGS_SPILL_BYTES),
            renumber: Vec::new(),
            counts: Counts::default(),
            languages: BTreeMap::new(),
            total_tokens: 0,
            before,
            tombstones,
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
        self.counts.redactions += u64::from(f.redactions);
        let first = self.counts.chunks;
        self.counts.chunks += total as u64;
        let totals = FileTotals {
            chunks: total,
            tokens: f.chunks.iter().map(|c| u64::from(c.token_len)).sum(),
            symbols: f.symbols.len(),
            refs: f.refs.len(),
            deps: f.deps.len(),
        };
        self.counts.source_bytes += f.bytes;
        for (index, mut rec) in std::mem::take(&mut f.chunks).into_iter().enumerate() {
            // `chunk_ord` is an INT32 column: refuse what it cannot hold rather than clamp it.
            let ord = i32::try_from(first + index as u64)
                .map_err(|_| Error::internal("more than 2^31 chunks in one bundle"))?
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
        self.definitions
            .add_file(&f.path, f.language.as_deref(), &f.symbols);
        // Resolved across the bundle at the end (through the file's imports, else within its
        // language family): each open reference carries what that needs.
        for r in f
            .refs
            .iter_mut()
            .filter(|r| r.kind == trove_base::sets::RefKind::Import)
        {
            r.exports = crate::extract::imports::exports(&f.path, f.language.as_deref(), &r.target);
            if let Some(e) = &r.exports {
                self.definitions.add_exports(&f.path, e);
            }
        }
        let pending = Pending::of_file(&f.path, f.language.as_deref(), &f.refs, &f.symbols);
        for d in &f.deps {
            self.definitions.add_module(&f.path, d);
        }
        for sym in std::mem::take(&mut f.symbols) {
            self.symbol_rows.push((path.clone(), language.clone(), sym));
        }
        for (r, p) in std::mem::take(&mut f.refs).into_iter().zip(pending) {
            self.ref_rows.push((path.clone(), r, p));
        }
        if self.ref_rows.len() >= BATCH_ROWS
            && let Some(raw) = self.refs_raw.as_mut()
        {
            write_raw_refs(raw, &self.ref_rows)?;
            self.ref_rows.clear();
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
        self.file_rows.push((f, totals));
        if self.file_rows.len() >= BATCH_ROWS {
            self.flush_files()?;
        }
        Ok(())
    }

    fn flush_symbols(&mut self) -> Result<()> {
        if self.symbol_rows.is_empty() {
            return Ok(());
        }
        // Built from the buffer, which is then emptied: its room serves the next batch.
        let r = &self.symbol_rows;
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
            opt_strings(r.iter().map(|x| x.2.scip_symbol.as_deref())),
        ])?;
        self.symbol_rows.clear();
        Ok(())
    }

    /// Reads the raw refs back in order and writes `refs.parquet`, resolving every reference
    /// left open in its file against the definitions of the whole bundle.
    fn finish_refs(&mut self) -> Result<(FileEntry, u64)> {
        let mut raw = self
            .refs_raw
            .take()
            .ok_or_else(|| Error::internal("refs finished twice"))?;
        write_raw_refs(&mut raw, &std::mem::take(&mut self.ref_rows))?;
        let raw_path = raw.path.clone();
        raw.finish()?;
        let read = || -> Result<_> {
            let f = File::open(&raw_path).map_err(|e| Error::io(&raw_path, e))?;
            Ok(
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)?
                    .with_batch_size(BATCH_ROWS)
                    .build()?,
            )
        };
        // First the base types (`inherits` references resolve by name and import alone): where
        // a member a type does not define is looked for (`Definitions::member`).
        for batch in read()? {
            for (_, r, pending) in crate::reader::pending_ref_rows(&batch?, &raw_path)? {
                self.definitions.add_base(&r, pending.as_ref());
            }
        }
        let mut out = Table::create(&self.dir, "refs", self.dim)?;
        let mut resolved = 0u64;
        let mut buf: Vec<PendingRef> = Vec::new();
        for batch in read()? {
            for (path, mut r, pending) in crate::reader::pending_ref_rows(&batch?, &raw_path)? {
                if let Some(p) = &pending {
                    self.definitions.resolve(&mut r, p);
                }
                resolved += u64::from(r.target_symbol_id.is_some());
                buf.push((path, r, pending));
                if buf.len() >= BATCH_ROWS {
                    write_raw_refs(&mut out, &std::mem::take(&mut buf))?;
                }
            }
        }
        write_raw_refs(&mut out, &buf)?;
        std::fs::remove_file(&raw_path).map_err(|e| Error::io(&raw_path, e))?;
        Ok((out.finish()?, resolved))
    }

    fn flush_deps(&mut self) -> Result<()> {
        if self.dep_rows.is_empty() {
            return Ok(());
        }
        // Built from the buffer, which is then emptied: its room serves the next batch.
        let r = &self.dep_rows;
        self.deps.write(vec![
            strings(r.iter().map(|x| x.0.as_ref())),
            strings(r.iter().map(|x| x.1.ecosystem.as_str())),
            strings(r.iter().map(|x| x.1.name.as_str())),
            opt_strings(r.iter().map(|x| x.1.version.as_deref())),
            strings(r.iter().map(|x| x.1.scope.as_str())),
        ])?;
        self.dep_rows.clear();
        Ok(())
    }

    fn flush_files(&mut self) -> Result<()> {
        if self.file_rows.is_empty() {
            return Ok(());
        }
        // Built from the buffer, which is then emptied: its room serves the next batch.
        let r = &self.file_rows;
        self.files.write(vec![
            strings(r.iter().map(|(f, _)| f.path.as_str())),
            opt_strings(r.iter().map(|(f, _)| f.language.as_deref())),
            strings(r.iter().map(|(f, _)| f.source_type.as_str())),
            i64s(r.iter().map(|(f, _)| f.bytes as i64)),
            i64s(r.iter().map(|(f, _)| f.lines as i64)),
            strings(r.iter().map(|(f, _)| f.sha256.as_str())),
            opt_strings(r.iter().map(|(f, _)| f.summary.as_deref())),
            i32s(r.iter().map(|(_, n)| i32c(n.chunks))),
            Arc::new(BooleanArray::from(
                r.iter().map(|(f, _)| f.parse_fallback).collect::<Vec<_>>(),
            )),
            i32s(r.iter().map(|(f, _)| i32c(f.redactions as usize))),
            i64s(r.iter().map(|(_, n)| n.tokens as i64)),
            i32s(r.iter().map(|(_, n)| i32c(n.symbols))),
            i32s(r.iter().map(|(_, n)| i32c(n.refs))),
            i32s(r.iter().map(|(_, n)| i32c(n.deps))),
            opt_strings(
                r.iter()
                    .map(|(f, _)| Some(f.tail.as_str()).filter(|t| !t.is_empty())),
            ),
        ])?;
        self.file_rows.clear();
        Ok(())
    }

    fn flush_chunks(&mut self) -> Result<()> {
        if self.chunk_rows.is_empty() {
            return Ok(());
        }
        // Built from the buffer, which is then emptied: its room serves the next batch.
        let r = &self.chunk_rows;
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
            opt_strings(
                r.iter()
                    .map(|x| Some(x.rec.lead.as_str()).filter(|t| !t.is_empty())),
            ),
        ])?;
        let mut values: Vec<f32> = Vec::with_capacity(r.len() * self.dim);
        values.extend(r.iter().flat_map(|x| x.rec.embedding.iter().copied()));
        if values.len() != r.len() * self.dim {
            return Err(Error::remote(format!(
                "embedder returned vectors of the wrong size (want {})",
                self.dim
            )));
        }
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let list = FixedSizeListArray::try_new(
            item.clone(),
            self.dim as i32,
            Arc::new(Float32Array::from(values)),
            None,
        )?;
        if let Some(x) = r.iter().find(|x| x.rec.windows.len() % self.dim != 0) {
            return Err(Error::remote(format!(
                "chunk {} has window vectors of the wrong size (want multiples of {})",
                x.rec.chunk_id, self.dim
            )));
        }
        let mut windows: Vec<f32> = Vec::with_capacity(r.iter().map(|x| x.rec.windows.len()).sum());
        windows.extend(r.iter().flat_map(|x| x.rec.windows.iter().copied()));
        let n = windows.len() / self.dim;
        let vectors = FixedSizeListArray::try_new(
            item,
            self.dim as i32,
            Arc::new(Float32Array::from(windows)),
            None,
        )?;
        let offsets: OffsetBuffer<i32> =
            OffsetBuffer::from_lengths(r.iter().map(|x| x.rec.windows.len() / self.dim));
        debug_assert_eq!(offsets.iter().last().copied(), Some(n as i32));
        let windows = ListArray::try_new(
            Arc::new(Field::new("item", vectors.data_type().clone(), false)),
            offsets,
            Arc::new(vectors),
            None,
        )?;
        self.embeddings.write(vec![
            i64s(r.iter().map(|x| x.rec.chunk_id)),
            Arc::new(list),
            Arc::new(windows),
        ])?;
        self.chunk_rows.clear();
        Ok(())
    }

    /// Sets the paths (sorted) this segment tombstones in the segments before it.
    pub fn set_tombstones(&mut self, paths: Vec<String>) {
        self.tombstones = paths;
    }

    /// Whether nothing was added: no file, and no tombstone.
    pub fn is_empty(&self) -> bool {
        self.counts.files == 0 && self.tombstones.is_empty()
    }

    /// Drops the segment being written (a run that found nothing to add).
    pub fn abandon(self) -> Result<()> {
        std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))
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
                .unwrap_or_else(|_| Err(Error::internal("writing postings panicked")));
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
        let mut entries = vec![
            files, chunks, embeddings, terms, postings, symbols, refs, deps, sk,
        ];
        if !self.tombstones.is_empty() {
            let mut t = Table::create(&self.dir, trove_bundle::TOMBSTONES, self.dim)?;
            for batch in self.tombstones.chunks(BATCH_ROWS) {
                t.write(vec![strings(batch.iter().map(String::as_str))])?;
            }
            entries.push(t.finish()?);
        }
        // Named by its content and the segments before it, the segment moves to its place;
        // entries name files by their path in the bundle.
        let sha: Vec<&str> = entries.iter().map(|e| e.sha256.as_str()).collect();
        let segment = SegmentInfo {
            id: SegmentInfo::id_for(&self.before, &sha),
            files: self.counts.files,
            chunks: self.counts.chunks,
            tombstones: self.tombstones.len() as u64,
            embedder: String::new(),
        };
        let at = segment.dir(&self.bundle);
        if at.exists() {
            // Not listed by the manifest (it would have another id): a killed run's leftover.
            std::fs::remove_dir_all(&at).map_err(|e| Error::io(&at, e))?;
        }
        std::fs::rename(&self.dir, &at).map_err(|e| Error::io(&at, e))?;
        for e in &mut entries {
            e.name = format!("{}/{}/{}", trove_bundle::SEGMENTS, segment.id, e.name);
        }
        let mut all = self.before.clone();
        all.push(segment.clone());
        // A full build's bundle is a temporary folder swapped in whole: its views go in place. A
        // segment added in place commits by its manifest: its views wait beside the old ones
        // until then ([`install_views`]).
        let views = if self.before.is_empty() {
            write_views(&self.bundle, &all)
        } else {
            // Added in place: a failure here leaves the live bundle as it was.
            stage_views(&self.bundle, &all).inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&at);
            })
        };
        entries.push(views?);
        Ok(Finished {
            entries,
            segment,
            counts: self.counts,
            languages: self.languages,
            avgdl,
        })
    }
}

/// The folder a segment is written in before it is named.
const BUILDING: &str = ".building";

/// The record columns of ref rows (path, record).
fn ref_columns<'a>(
    r: impl Iterator<Item = (&'a Arc<str>, &'a RefRecord)> + Clone,
) -> Vec<ArrayRef> {
    vec![
        strings(r.clone().map(|x| x.0.as_ref())),
        i32s(r.clone().map(|x| i32c(x.1.line))),
        strings(r.clone().map(|x| x.1.kind.as_str())),
        strings(r.clone().map(|x| x.1.target.as_str())),
        Arc::new(Int64Array::from_iter(r.clone().map(|x| x.1.from_symbol_id))),
        Arc::new(Int64Array::from_iter(r.clone().map(|x| x.1.chunk_id))),
        Arc::new(Int64Array::from_iter(
            r.clone().map(|x| x.1.target_symbol_id),
        )),
        opt_strings(r.clone().map(|x| x.1.resolution.map(Resolution::as_str))),
        opt_strings(r.map(|x| x.1.scip_symbol.as_deref())),
    ]
}

/// Writes ref rows with their bundle-wide context (to the raw spill, and to `refs`): the record's
/// columns, then the [`Pending`] fields (`family` null for a reference that needs nothing more).
fn write_raw_refs(t: &mut Table, r: &[PendingRef]) -> Result<()> {
    if r.is_empty() {
        return Ok(());
    }
    let mut cols = ref_columns(r.iter().map(|(p, x, _)| (p, x)));
    let pending = || r.iter().map(|x| x.2.as_ref());
    cols.push(opt_strings(pending().map(|p| p.map(|p| p.family.as_str()))));
    cols.push(opt_strings(pending().map(|p| {
        p.and_then(|p| p.import.as_ref())
            .map(|(name, _)| name.as_str())
    })));
    let mut files = ListBuilder::new(StringBuilder::new());
    for (p, x) in pending().zip(r.iter().map(|x| &x.1)) {
        let module = x.exports.as_ref().map(|(_, files)| files);
        match p.and_then(|p| p.import.as_ref()).map(|i| &i.1).or(module) {
            Some(candidates) => {
                for c in candidates {
                    files.values().append_value(c);
                }
                files.append(true);
            }
            None => files.append(false),
        }
    }
    cols.push(Arc::new(files.finish()));
    cols.push(Arc::new(BooleanArray::from_iter(
        pending().map(|p| p.map(|p| p.method)),
    )));
    cols.push(opt_strings(
        pending().map(|p| p.and_then(|p| p.member_of.as_deref())),
    ));
    let mut exports = ListBuilder::new(StringBuilder::new());
    for (_, x, _) in r {
        match &x.exports {
            Some((names, _)) => {
                for n in names {
                    exports.values().append_value(n);
                }
                exports.append(true);
            }
            None => exports.append(false),
        }
    }
    cols.push(Arc::new(exports.finish()));
    Ok(t.write(cols)?)
}
