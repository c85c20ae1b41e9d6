//! Reading a bundle from another program: [`OpenBundle`] opens a bundle directory or a packed
//! `.trove` file and reads its live rows — files, chunks, symbols, references — and the text of
//! a file, with this crate alone (no DuckDB, no tree-sitter, no source checkout).
//!
//! A bundle is a list of segments, oldest first; a later segment's tombstones name the paths
//! whose rows in the segments before it are dead. Every method here returns live rows only, in
//! path order (rows of one file in their stored order), so a segmented bundle reads as the one
//! bundle a full index of the same tree would have written.
//!
//! References are the stored rows: a reference resolved while its file was indexed carries its
//! `target_symbol_id`; one left open for the whole bundle (a name defined in another file) is
//! resolved by the `refs` view of `views.sql` ([`crate::resolution`] writes that SQL), which a
//! SQL engine runs.
use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};

use arrow::array::{Int32Array, Int64Array, StringArray};

use crate::reader::{self, FileRow, column, open_table, opt_str};
use crate::{Manifest, Result};

/// An open bundle: its manifest and, per segment, the paths later segments tombstone.
#[derive(Debug)]
pub struct OpenBundle {
    dir: PathBuf,
    manifest: Manifest,
    dead: Vec<FxHashSet<String>>,
}

/// One live chunk: a piece of a file (a function, a class, a section, a window of lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The chunk's id (unique among live chunks; stable while the file's content is).
    pub chunk_id: i64,
    /// Repo-relative path of its file.
    pub path: String,
    /// Language id (`rust`, `python`, ...), `None` for a file of no known language.
    pub language: Option<String>,
    /// `function`, `method`, `class`, `section`, `lines`, ...
    pub kind: String,
    /// The name it defines, if any.
    pub symbol: Option<String>,
    /// The dotted path of that name (`Invoice.charge`), if any.
    pub symbol_path: Option<String>,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    /// Its text (from its first code on; secrets redacted).
    pub content: String,
}

/// One live definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The symbol's id (unique among live symbols).
    pub symbol_id: i64,
    /// Repo-relative path of its file.
    pub path: String,
    /// `function`, `method`, `class`, `struct`, ...
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its dotted path within the file (`Invoice.charge`).
    pub symbol_path: String,
    /// First line of the definition, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    /// The enclosing definition's id (a method's class), if any.
    pub parent_id: Option<i64>,
    /// The chunk that holds it, if any.
    pub chunk_id: Option<i64>,
}

/// One live reference (a call, an import, a type use, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    /// Repo-relative path of the file it is in.
    pub path: String,
    /// Its line, 1-based.
    pub line: u32,
    /// `call`, `import`, `type`, `inherit`, ...
    pub kind: String,
    /// The name referred to, as written.
    pub target: String,
    /// The definition it is written in, if any.
    pub from_symbol_id: Option<i64>,
    /// The definition it resolved to while its file was indexed, if it did.
    pub target_symbol_id: Option<i64>,
    /// How it was resolved (`local`, `import`, `scip`, ...), if it was.
    pub resolution: Option<String>,
}

impl OpenBundle {
    /// Opens the bundle at `path` (a directory, or a packed `.trove` file, unpacked once into
    /// the user's cache): reads its manifest (refusing a foreign or newer one), checks that
    /// every table the manifest lists is there at its recorded size, and reads the tombstones.
    ///
    /// `trove verify` checks the tables' bytes; this only refuses what cannot be read.
    pub fn open(path: &Path) -> Result<Self> {
        let dir = crate::pack::open_path(path)?;
        let manifest = crate::read_manifest(&dir)?;
        crate::check_sizes(&dir, &manifest)?;
        let dead = reader::dead_paths(&dir, &manifest)?;
        Ok(OpenBundle {
            dir,
            manifest,
            dead,
        })
    }

    /// The bundle's directory (for a packed bundle, its unpacked copy).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest: format, provenance, segments, embedder, BM25 statistics.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The live rows of the `files` table, in path order.
    pub fn files(&self) -> Result<Vec<FileRow>> {
        let live = reader::Live::read(&self.dir, &self.manifest)?;
        Ok(live.files.into_iter().map(|(f, _)| f).collect())
    }

    /// The live chunks, in path order, a file's in source order.
    pub fn chunks(&self) -> Result<Vec<Chunk>> {
        self.live_rows("chunks", |b, d, out: &mut Vec<Chunk>, keep| {
            let id = column::<Int64Array>(b, "chunk_id", d)?;
            let path = column::<StringArray>(b, "path", d)?;
            let language = column::<StringArray>(b, "language", d)?;
            let kind = column::<StringArray>(b, "kind", d)?;
            let symbol = column::<StringArray>(b, "symbol", d)?;
            let symbol_path = column::<StringArray>(b, "symbol_path", d)?;
            let start = column::<Int32Array>(b, "start_line", d)?;
            let end = column::<Int32Array>(b, "end_line", d)?;
            let content = column::<StringArray>(b, "content", d)?;
            for i in (0..b.num_rows()).filter(|&i| keep(path.value(i))) {
                out.push(Chunk {
                    chunk_id: id.value(i),
                    path: path.value(i).to_string(),
                    language: opt_str(language, i),
                    kind: kind.value(i).to_string(),
                    symbol: opt_str(symbol, i),
                    symbol_path: opt_str(symbol_path, i),
                    start_line: line(start, i),
                    end_line: line(end, i),
                    content: content.value(i).to_string(),
                });
            }
            Ok(())
        })
    }

    /// The live definitions, in path order.
    pub fn symbols(&self) -> Result<Vec<Symbol>> {
        self.live_rows("symbols", |b, d, out: &mut Vec<Symbol>, keep| {
            let id = column::<Int64Array>(b, "symbol_id", d)?;
            let path = column::<StringArray>(b, "path", d)?;
            let kind = column::<StringArray>(b, "kind", d)?;
            let name = column::<StringArray>(b, "name", d)?;
            let symbol_path = column::<StringArray>(b, "symbol_path", d)?;
            let start = column::<Int32Array>(b, "start_line", d)?;
            let end = column::<Int32Array>(b, "end_line", d)?;
            let parent = column::<Int64Array>(b, "parent_id", d)?;
            let chunk = column::<Int64Array>(b, "chunk_id", d)?;
            for i in (0..b.num_rows()).filter(|&i| keep(path.value(i))) {
                out.push(Symbol {
                    symbol_id: id.value(i),
                    path: path.value(i).to_string(),
                    kind: kind.value(i).to_string(),
                    name: name.value(i).to_string(),
                    symbol_path: symbol_path.value(i).to_string(),
                    start_line: line(start, i),
                    end_line: line(end, i),
                    parent_id: reader::opt_i64(parent, i),
                    chunk_id: reader::opt_i64(chunk, i),
                });
            }
            Ok(())
        })
    }

    /// The live references as stored, in path order (see the module's note on resolution).
    pub fn refs(&self) -> Result<Vec<Ref>> {
        self.live_rows("refs", |b, d, out: &mut Vec<Ref>, keep| {
            let path = column::<StringArray>(b, "path", d)?;
            let at = column::<Int32Array>(b, "line", d)?;
            let kind = column::<StringArray>(b, "kind", d)?;
            let target = column::<StringArray>(b, "target", d)?;
            let from = column::<Int64Array>(b, "from_symbol_id", d)?;
            let to = column::<Int64Array>(b, "target_symbol_id", d)?;
            let resolution = column::<StringArray>(b, "resolution", d)?;
            for i in (0..b.num_rows()).filter(|&i| keep(path.value(i))) {
                out.push(Ref {
                    path: path.value(i).to_string(),
                    line: line(at, i),
                    kind: kind.value(i).to_string(),
                    target: target.value(i).to_string(),
                    from_symbol_id: reader::opt_i64(from, i),
                    target_symbol_id: reader::opt_i64(to, i),
                    resolution: opt_str(resolution, i),
                });
            }
            Ok(())
        })
    }

    /// The text of the file `path` as the bundle holds it (secrets redacted), from the segment
    /// where its rows are live; `None` when the bundle has no such live file.
    pub fn file_text(&self, path: &str) -> Result<Option<String>> {
        crate::lookup::live_file_text(&self.dir, &self.manifest, Some(&self.dead), path)
    }

    /// Every segment's `table`, a batch at a time through `read` (which keeps the rows whose
    /// path `keep` says is live there), the rows then put in path order. Paths are live in one
    /// segment only, and each segment's rows are in path order, so a stable sort by path keeps
    /// a file's rows in their stored order.
    fn live_rows<T, F>(&self, table: &str, mut read: F) -> Result<Vec<T>>
    where
        T: HasPath,
        F: FnMut(
            &arrow::record_batch::RecordBatch,
            &Path,
            &mut Vec<T>,
            &dyn Fn(&str) -> bool,
        ) -> Result<()>,
    {
        let mut out = Vec::new();
        for (i, seg) in self.manifest.segments.iter().enumerate() {
            let d = seg.dir(&self.dir);
            let dead = &self.dead[i];
            let keep = |p: &str| !dead.contains(p);
            for batch in open_table(&d, table)? {
                read(&batch?, &d, &mut out, &keep)?;
            }
        }
        if self.manifest.segments.len() > 1 {
            out.sort_by(|a, b| a.path().cmp(b.path()));
        }
        Ok(out)
    }
}

/// A row that belongs to a file.
trait HasPath {
    fn path(&self) -> &str;
}

impl HasPath for Chunk {
    fn path(&self) -> &str {
        &self.path
    }
}

impl HasPath for Symbol {
    fn path(&self) -> &str {
        &self.path
    }
}

impl HasPath for Ref {
    fn path(&self) -> &str {
        &self.path
    }
}

/// Row `i` of an INT32 line column (0 for a negative value, which no writer produces).
fn line(a: &Int32Array, i: usize) -> u32 {
    u32::try_from(a.value(i)).unwrap_or(0)
}
