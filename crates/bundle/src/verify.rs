//! `trove verify`: re-hash every file, check sizes, row counts and schemas against the manifest
//! (and bring a stale `views.sql`, which is derived from it, up to date).
use arrow::datatypes::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::fs::File;
use std::path::Path;

use super::manifest::{FileEntry, MANIFEST, Manifest, is_bundle_file, read_manifest};
use super::schema::expected_schema;
use super::table::hash_file;
use crate::{Error, Result};

/// What `verify` checked.
#[derive(Debug)]
pub struct VerifyReport {
    /// The manifest read.
    pub manifest: Manifest,
    /// Files checked.
    pub files_checked: usize,
    /// Bytes re-hashed.
    pub bytes_hashed: u64,
    /// Whether `views.sql` was rewritten from the manifest (a run was killed between its commit
    /// and moving its views in).
    pub views_rewritten: bool,
    /// What lies under `segments/` that the manifest does not list (`.building`: a killed
    /// incremental run's unfinished segment), sorted: no part of the bundle, removed by the next
    /// run, but copied by a plain `rsync` of the folder.
    pub unlisted: Vec<String>,
}

/// Checks the bundle at `dir`; the first problem found is the error.
pub fn verify(dir: &Path) -> Result<VerifyReport> {
    let manifest = read_manifest(dir)?;
    let bad = |m: String| Error::bundle(dir, m);
    let mut bytes_hashed = 0;
    if manifest.segments.is_empty() {
        return Err(bad(format!("{MANIFEST} lists no segment")));
    }
    manifest.check_segments(dir)?;
    let views_rewritten = super::settle_views(dir, &manifest, true)?;
    for name in manifest.segment_files() {
        if manifest.entry(&name).is_none() {
            return Err(bad(format!("{MANIFEST} does not list {name}")));
        }
    }
    // A newer minor of this format may add columns (and tables, which are hashed but not read):
    // its tables must hold the columns this trove knows, with their types, and may hold more.
    let newer_minor = manifest.format_minor > super::FORMAT_MINOR;
    for entry in &manifest.files {
        bytes_hashed += check_file(dir, entry, manifest.embedder.dim, newer_minor)?;
    }
    check_counts(dir, &manifest)?;
    let unlisted = super::manifest::unlisted_segments(dir, &manifest)
        .iter()
        .filter_map(|p| p.strip_prefix(dir).ok())
        .map(trove_base::util::slash_path)
        .collect();
    Ok(VerifyReport {
        files_checked: manifest.files.len(),
        manifest,
        bytes_hashed,
        views_rewritten,
        unlisted,
    })
}

/// Checks one file the manifest lists: a file of the bundle, there, no link, at the size and
/// sha256 the manifest records, and a table as [`check_table`] checks it. Returns the bytes hashed.
fn check_file(dir: &Path, entry: &FileEntry, dim: usize, newer_minor: bool) -> Result<u64> {
    let bad = |m: String| Error::bundle(dir, m);
    if !is_bundle_file(&entry.name) || entry.name == MANIFEST {
        return Err(bad(format!(
            "{MANIFEST} names a file outside the bundle: {:?}",
            entry.name
        )));
    }
    let p = dir.join(&entry.name);
    if !p.is_file() {
        return Err(bad(format!("{} is missing", entry.name)));
    }
    // A link is no file of the bundle (`trove sync` refuses one too): what it points to may
    // change under the bundle, and a copy of the bundle would carry the link.
    if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad(format!(
            "{} is a symbolic link, not a file of the bundle (copy the file in its place)",
            entry.name
        )));
    }
    let (bytes, sha) = hash_file(&p)?;
    if bytes != entry.bytes {
        return Err(bad(format!(
            "{} is {bytes} bytes, the manifest says {}",
            entry.name, entry.bytes
        )));
    }
    if sha != entry.sha256 {
        return Err(bad(format!(
            "{} sha256 {sha} does not match the manifest's {}",
            entry.name, entry.sha256
        )));
    }
    let base = entry.name.rsplit('/').next().unwrap_or(&entry.name);
    let table = base.trim_end_matches(".parquet");
    if let Some(expected) = expected_schema(table, dim) {
        check_table(dir, &p, entry, &expected, newer_minor)?;
    }
    Ok(bytes)
}

/// Checks the table file `p` (`entry`'s) as Parquet: its codecs, its row count against the
/// manifest, and its schema against `expected` (with `newer_minor`, the columns of `expected`
/// with their types, among others).
fn check_table(
    dir: &Path,
    p: &Path,
    entry: &FileEntry,
    expected: &Schema,
    newer_minor: bool,
) -> Result<()> {
    let bad = |m: String| Error::bundle(dir, m);
    let f = File::open(p).map_err(|e| Error::io(p, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| bad(format!("{} is not readable Parquet: {e}", entry.name)))?;
    // What trove writes and reads: zstd or nothing. A file another writer compressed with
    // another codec (DuckDB's default is snappy) has the right rows and schema but cannot be
    // read by the query engine.
    for col in reader
        .metadata()
        .row_groups()
        .iter()
        .flat_map(|g| g.columns())
    {
        let c = col.compression();
        if !matches!(
            c,
            parquet::basic::Compression::UNCOMPRESSED | parquet::basic::Compression::ZSTD(_)
        ) {
            return Err(bad(format!(
                "{} column {} is compressed with {c}, which trove does not read (it writes \
                 zstd)",
                entry.name,
                col.column_path()
            )));
        }
    }
    let rows = reader.metadata().file_metadata().num_rows();
    if rows < 0 || rows as u64 != entry.rows {
        return Err(bad(format!(
            "{} has {rows} rows, the manifest says {}",
            entry.name, entry.rows
        )));
    }
    let got = reader.schema();
    let differs = if newer_minor {
        expected.fields().iter().any(|b| {
            got.field_with_name(b.name())
                .map_or(true, |a| a.data_type() != b.data_type())
        })
    } else {
        got.fields().len() != expected.fields().len()
            || got
                .fields()
                .iter()
                .zip(expected.fields())
                .any(|(a, b)| a.name() != b.name() || a.data_type() != b.data_type())
    };
    if differs {
        return Err(bad(format!(
            "{} has schema {:?}, expected {:?}",
            entry.name,
            field_list(got),
            field_list(expected)
        )));
    }
    Ok(())
}

/// The counts the manifest states against the rows (the files are checked by then): each
/// segment's chunks as its files count them, and the live totals `inspect` shows (files, chunks,
/// bytes, symbols, references, dependencies, redactions, skipped, per language). Terms, postings
/// and resolved references count stored rows until a compaction and are not recomputed here.
fn check_counts(dir: &Path, manifest: &Manifest) -> Result<()> {
    let bad = |m: String| Error::bundle(dir, m);
    // Each segment's rows against its manifest entry are checked with the manifest
    // (`check_segments`); here its files' chunk counts against its chunks, which readers size
    // the segment's dead rows by.
    for s in &manifest.segments {
        let n: u64 = super::reader::read_files(&s.dir(dir))?
            .iter()
            .map(|f| u64::from(f.chunks))
            .sum();
        if n != s.chunks {
            return Err(bad(format!(
                "segment {}: the chunk counts of its files.parquet add up to {n}, its \
                 chunks.parquet has {} rows",
                s.id, s.chunks
            )));
        }
        // A chunk's ordinal is its row: postings name chunks by it, and a compaction or the next
        // run renumbers by it.
        let path = s.dir(dir).join("chunks.parquet");
        let mut row = 0i64;
        for batch in crate::lookup::projected(&path, &["chunk_ord"], None)? {
            let batch = batch?;
            let ords =
                super::reader::column::<arrow::array::Int32Array>(&batch, "chunk_ord", &path)?;
            for ord in ords.values().iter() {
                if i64::from(*ord) != row {
                    return Err(bad(format!(
                        "segment {}: chunks.parquet has chunk_ord {ord} in row {row} (each \
                         chunk's ordinal is its row number)",
                        s.id
                    )));
                }
                row += 1;
            }
        }
    }
    let live = super::reader::Live::read(dir, manifest)?;
    let t = super::LiveTotals::of(live.files.iter().map(|(f, _)| f), live.skipped.len() as u64);
    let (c, r) = (&manifest.counts, &t.counts);
    for (what, stated, rows) in [
        ("files", c.files, r.files),
        ("chunks", c.chunks, r.chunks),
        ("source_bytes", c.source_bytes, r.source_bytes),
        ("symbols", c.symbols, r.symbols),
        ("refs", c.refs, r.refs),
        ("deps", c.deps, r.deps),
        ("redactions", c.redactions, r.redactions),
        ("skipped", c.skipped, r.skipped),
    ] {
        if stated != rows {
            return Err(bad(format!(
                "{MANIFEST} says counts.{what} {stated}, the live rows make {rows}"
            )));
        }
    }
    if manifest.languages != t.languages {
        return Err(bad(format!(
            "{MANIFEST}'s languages do not match the live files' (run `trove inspect` to compare)"
        )));
    }
    Ok(())
}

fn field_list(s: &arrow::datatypes::Schema) -> Vec<String> {
    s.fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect()
}

/// The cheap check an incremental run makes before it adds a segment: the manifest names only
/// bundle files, lists every segment's tables, and each is present with the size it records.
/// (`verify` hashes every byte; an incremental run reads only the small tables.)
pub fn check_sizes(dir: &Path, manifest: &Manifest) -> Result<()> {
    let bad = |m: String| Error::bundle(dir, m);
    if manifest.segments.is_empty() {
        return Err(bad(format!("{MANIFEST} lists no segment")));
    }
    manifest.check_segments(dir)?;
    for name in manifest.segment_files() {
        let Some(entry) = manifest.entry(&name) else {
            return Err(bad(format!("{MANIFEST} does not list {name}")));
        };
        match std::fs::metadata(dir.join(&name)) {
            Ok(m) if m.is_file() && m.len() == entry.bytes => {}
            Ok(_) => {
                return Err(bad(format!(
                    "{name} does not have the size the manifest records"
                )));
            }
            Err(_) => return Err(bad(format!("{name} is missing"))),
        }
    }
    for entry in &manifest.files {
        if !is_bundle_file(&entry.name) || entry.name == MANIFEST {
            return Err(bad(format!(
                "{MANIFEST} names a file outside the bundle: {:?}",
                entry.name
            )));
        }
    }
    Ok(())
}
