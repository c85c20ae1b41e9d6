//! `trove verify`: re-hash every file, check sizes, row counts and schemas against the manifest.
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::fs::File;
use std::path::Path;

use super::manifest::{MANIFEST, Manifest, is_bundle_file, read_manifest};
use super::schema::{TABLES, expected_schema};
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
}

/// Checks the bundle at `dir`; the first problem found is the error.
pub fn verify(dir: &Path) -> Result<VerifyReport> {
    let manifest = read_manifest(dir)?;
    let bad = |m: String| Error::bundle(dir, m);
    if manifest.format_version < super::FORMAT_VERSION {
        return Err(bad(format!(
            "format_version {} was written by an older trove (this one checks {}): re-index it",
            manifest.format_version,
            super::FORMAT_VERSION
        )));
    }
    let mut bytes_hashed = 0;
    for t in TABLES {
        let name = manifest.table_file(t);
        if !manifest.files.iter().any(|f| f.name == name) {
            return Err(bad(format!("{MANIFEST} does not list {name}")));
        }
    }
    for entry in &manifest.files {
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
        let (bytes, sha) = hash_file(&p)?;
        bytes_hashed += bytes;
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
        let Some(expected) = expected_schema(table, manifest.embedder.dim) else {
            continue;
        };
        let f = File::open(&p).map_err(|e| Error::io(&p, e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .map_err(|e| bad(format!("{} is not readable Parquet: {e}", entry.name)))?;
        let rows = reader.metadata().file_metadata().num_rows();
        if rows < 0 || rows as u64 != entry.rows {
            return Err(bad(format!(
                "{} has {rows} rows, the manifest says {}",
                entry.name, entry.rows
            )));
        }
        let got = reader.schema();
        if got.fields().len() != expected.fields().len()
            || got
                .fields()
                .iter()
                .zip(expected.fields())
                .any(|(a, b)| a.name() != b.name() || a.data_type() != b.data_type())
        {
            return Err(bad(format!(
                "{} has schema {:?}, expected {:?}",
                entry.name,
                field_list(got),
                field_list(&expected)
            )));
        }
    }
    Ok(VerifyReport {
        files_checked: manifest.files.len(),
        manifest,
        bytes_hashed,
    })
}

fn field_list(s: &arrow::datatypes::Schema) -> Vec<String> {
    s.fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect()
}
