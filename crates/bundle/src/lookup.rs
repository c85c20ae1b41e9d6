//! Point lookups in a bundle's Parquet files that need no SQL engine: the document frequency of a
//! few terms (`terms.parquet`, sorted by term) and the content of a few chunks (`chunks.parquet`,
//! sorted by path). Each reads only the row groups whose min/max statistics can hold a key, and only
//! the columns it needs — a query reads kilobytes, not tables.
use arrow::array::{Array, Int64Array, StringArray};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::metadata::ParquetMetaData;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;

use crate::reader::column;
use crate::{Error, Result};

/// The row groups whose string column `col` may contain one of `keys` (by min/max statistics; a
/// group without statistics always qualifies).
fn groups_with(meta: &ParquetMetaData, col: usize, keys: &[&str]) -> Vec<usize> {
    (0..meta.num_row_groups())
        .filter(|&g| {
            let stats = meta.row_group(g).column(col).statistics();
            match stats.and_then(|s| Some((s.min_bytes_opt()?, s.max_bytes_opt()?))) {
                Some((min, max)) => keys
                    .iter()
                    .any(|k| min <= k.as_bytes() && k.as_bytes() <= max),
                None => true,
            }
        })
        .collect()
}

/// Opens `path` and a reader over the row groups where column `key_col` may hold one of `keys`,
/// reading only `columns`.
fn reader(
    path: &Path,
    key_col: &str,
    keys: &[&str],
    columns: &[&str],
) -> Result<crate::reader::Table> {
    projected(path, columns, Some((key_col, keys)))
}

/// Opens `path` reading only `columns`: every row group, or with `key` = (column, keys) only
/// those whose min/max statistics of that string column may hold one of the keys.
pub fn projected(
    path: &Path,
    columns: &[&str],
    key: Option<(&str, &[&str])>,
) -> Result<crate::reader::Table> {
    let corrupt = |e| crate::reader::unreadable(path, e);
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut builder = ParquetRecordBatchReaderBuilder::try_new(f).map_err(corrupt)?;
    if let Some((key_col, keys)) = key {
        let schema = builder.parquet_schema();
        let col = (0..schema.num_columns())
            .find(|&i| schema.column(i).name() == key_col)
            .ok_or_else(|| Error::bundle(path, format!("has no column {key_col}")))?;
        let groups = groups_with(builder.metadata(), col, keys);
        builder = builder.with_row_groups(groups);
    }
    let mask = ProjectionMask::columns(builder.parquet_schema(), columns.iter().copied());
    let reader = builder.with_projection(mask).build().map_err(corrupt)?;
    Ok(crate::reader::Table::new(path, reader))
}

/// Document frequency of each of `terms` found in `terms.parquet`.
pub fn document_frequencies(path: &Path, terms: &[&str]) -> Result<FxHashMap<String, i64>> {
    let wanted: FxHashSet<&str> = terms.iter().copied().collect();
    let mut out = FxHashMap::default();
    if wanted.is_empty() {
        return Ok(out);
    }
    for batch in reader(path, "term", terms, &["term", "df"])? {
        let batch = batch?;
        let term = column::<StringArray>(&batch, "term", path)?;
        let df = column::<Int64Array>(&batch, "df", path)?;
        for r in 0..batch.num_rows() {
            if wanted.contains(term.value(r)) {
                out.insert(term.value(r).to_string(), df.value(r));
            }
        }
    }
    Ok(out)
}

/// Content of the chunks `ids`, which lie in the files `paths`, from `chunks.parquet`, each with
/// the whitespace before its first line (its content starts at the code).
pub fn contents(
    path: &Path,
    ids: &[i64],
    paths: &[&str],
) -> Result<FxHashMap<i64, (String, String)>> {
    let wanted: FxHashSet<i64> = ids.iter().copied().collect();
    let mut out = FxHashMap::default();
    if wanted.is_empty() {
        return Ok(out);
    }
    for batch in reader(path, "path", paths, &["chunk_id", "content", "lead"])? {
        let batch = batch?;
        let id = column::<Int64Array>(&batch, "chunk_id", path)?;
        let content = column::<StringArray>(&batch, "content", path)?;
        let lead = column::<StringArray>(&batch, "lead", path)?;
        for r in 0..batch.num_rows() {
            if wanted.contains(&id.value(r)) && !content.is_null(r) {
                out.insert(
                    id.value(r),
                    (
                        content.value(r).to_string(),
                        indent_of((!lead.is_null(r)).then(|| lead.value(r))),
                    ),
                );
            }
        }
    }
    Ok(out)
}

/// The indentation a chunk's `lead` (the text between the chunk before it and its first code)
/// ends with: the whitespace before its first line's code.
fn indent_of(lead: Option<&str>) -> String {
    let last = lead.map_or("", |l| l.rsplit('\n').next().unwrap_or(""));
    if last.chars().all(|c| c == ' ' || c == '\t') {
        last.to_string()
    } else {
        String::new()
    }
}

/// The text of the file `path` from one segment's `chunks.parquet` and `files.parquet`: its
/// chunks' leads and contents in source order, then its tail; `None` when that segment's files
/// table has no such path.
pub fn file_text(chunks: &Path, files: &Path, path: &str) -> Result<Option<String>> {
    let keys = [path];
    let mut tail = None;
    for batch in reader(files, "path", &keys, &["path", "tail"])? {
        let batch = batch?;
        let p = column::<StringArray>(&batch, "path", files)?;
        let t = column::<StringArray>(&batch, "tail", files)?;
        if let Some(r) = (0..batch.num_rows()).find(|&r| p.value(r) == path) {
            tail = Some(if t.is_null(r) { "" } else { t.value(r) }.to_string());
            break;
        }
    }
    let Some(tail) = tail else {
        return Ok(None);
    };
    let mut pieces: Vec<(i64, String)> = Vec::new();
    for batch in reader(
        chunks,
        "path",
        &keys,
        &["path", "start_byte", "content", "lead"],
    )? {
        let batch = batch?;
        let p = column::<StringArray>(&batch, "path", chunks)?;
        let start = column::<Int64Array>(&batch, "start_byte", chunks)?;
        let content = column::<StringArray>(&batch, "content", chunks)?;
        let lead = column::<StringArray>(&batch, "lead", chunks)?;
        for r in 0..batch.num_rows() {
            if p.value(r) == path {
                let mut s = String::new();
                if !lead.is_null(r) {
                    s.push_str(lead.value(r));
                }
                s.push_str(content.value(r));
                pieces.push((start.value(r), s));
            }
        }
    }
    pieces.sort_by_key(|(at, _)| *at);
    let mut text: String = pieces.into_iter().map(|(_, s)| s).collect();
    text.push_str(&tail);
    Ok(Some(text))
}

/// The text of the file `path` in the bundle at `dir`, from the newest segment where its rows
/// are live (`dead`: per segment, the paths later segments tombstone; `None` when nothing is
/// tombstoned); `None` when the bundle has no such live file.
pub fn live_file_text(
    dir: &Path,
    manifest: &crate::Manifest,
    dead: Option<&[rustc_hash::FxHashSet<String>]>,
    path: &str,
) -> Result<Option<String>> {
    for (i, seg) in manifest.segments.iter().enumerate().rev() {
        if dead.is_some_and(|d| d[i].contains(path)) {
            continue;
        }
        let text = file_text(
            &dir.join(seg.file("chunks")),
            &dir.join(seg.file("files")),
            path,
        )?;
        if text.is_some() {
            return Ok(text);
        }
    }
    Ok(None)
}
