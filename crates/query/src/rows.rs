//! The chunk rows a query ranks and prints (everything of `chunks` but the text: path, lines, symbol,
//! symbol path, kind, language, source type, signature), looked up by chunk id.
//!
//! Chunk ids are hashes, so `chunk_id IN (...)` over `chunks.parquet` prunes no row group: DuckDB
//! would decompress these columns of every row for each query (≈50 ms at 100k chunks). Instead they
//! are read once into a cache file (keyed by `chunks.parquet`'s sha256, see [`trove_bundle::cache`]) laid
//! out for lookup: ids sorted, fixed-width rows, each distinct string stored once.
//!
//! Each row also names the function or method the chunk is a piece of, when the chunker split one
//! no longer than [`crate::options::WHOLE_FUNCTION_BYTES`] (from `symbols.parquet`, read once with the
//! chunks): a query shows that function whole in place of the piece.
//!
//! Layout (little endian): magic, n (u64), strings (u64), heap bytes (u64); n sorted ids (i64);
//! n row numbers (u32, the row of the i-th sorted id); n rows of [`FIELDS`] u32 (line numbers, the
//! whole function's lines, then string numbers, `u32::MAX` = NULL); strings + 1 heap offsets (u64);
//! the heap.
use arrow::array::{Array, Int32Array, Int64Array, StringArray};
use rustc_hash::FxHashMap;
use std::path::Path;

use crate::{Error, Result};
use trove_bundle::cache::{self, Bytes, i64_at, u32_at, u64_at};
use trove_bundle::reader::column;
use trove_bundle::{Manifest, SegmentInfo};

const MAGIC: &[u8; 8] = b"TRVROW03";
const HEADER: usize = 8 + 8 + 8 + 8;
/// The string columns, in row order after the two line numbers.
const STRING_COLUMNS: [&str; 7] = [
    "path",
    "symbol",
    "symbol_path",
    "kind",
    "language",
    "source_type",
    "signature",
];
/// Line fields per row: start_line, end_line, and the whole function's first and last line.
const LINES: usize = 4;
/// String fields of the whole function, after the string columns: name, symbol path, kind.
const WHOLE_STRINGS: usize = 3;
/// u32 fields per row.
const FIELDS: usize = LINES + STRING_COLUMNS.len() + WHOLE_STRINGS;
const NULL: u32 = u32::MAX;

/// One chunk's row, borrowed from the cache.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// First line.
    pub start_line: i64,
    /// Last line.
    pub end_line: i64,
    /// Repo-relative path.
    pub path: &'a str,
    /// Symbol name.
    pub symbol: Option<&'a str>,
    /// Symbol path.
    pub symbol_path: Option<&'a str>,
    /// Kind.
    pub kind: &'a str,
    /// Language id.
    pub language: Option<&'a str>,
    /// Source type.
    pub source_type: &'a str,
    /// Signature.
    pub signature: Option<&'a str>,
    /// The function or method this chunk is a piece of, when it is to be shown whole.
    pub whole: Option<Whole<'a>>,
}

/// A split function or method, as a query shows it in place of one of its pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whole<'a> {
    /// First line: the earliest of the definition's and its pieces' (the first piece starts at
    /// the doc comment or decorator, which the definition's own range leaves out).
    pub start_line: i64,
    /// Last line of the definition.
    pub end_line: i64,
    /// Its name.
    pub name: &'a str,
    /// Its symbol path.
    pub symbol_path: &'a str,
    /// function or method.
    pub kind: &'a str,
}

/// The rows of one bundle.
pub struct Rows {
    bytes: Bytes,
    n: usize,
    strings: usize,
}

impl Rows {
    /// The rows of segment `seg` of the bundle, from the cache when present and intact, else
    /// read and cached.
    pub fn load(bundle: &Path, manifest: &Manifest, seg: &SegmentInfo) -> Result<Self> {
        let sha = cache::file_sha(bundle, manifest, seg, "chunks")?;
        let path = bundle.join(seg.file("chunks"));
        // A segment written without a symbols table (none has been) gives no whole functions.
        let symbols = cache::file_sha(bundle, manifest, seg, "symbols").ok();
        let sym_key = symbols
            .as_deref()
            .map_or("none", |s| s.get(..16).unwrap_or(s));
        let symbols_path = symbols.as_ref().map(|_| bundle.join(seg.file("symbols")));
        let bytes = cache::load(
            &format!(
                "rows-{sha}-{sym_key}-w{}.bin",
                crate::options::WHOLE_FUNCTION_BYTES
            ),
            |b| Self::check(b).is_some(),
            || build(&path, symbols_path.as_deref()),
        )?;
        let (n, strings) = Self::check(&bytes)
            .ok_or_else(|| Error::bundle(bundle, "chunk rows failed a check"))?;
        Ok(Rows { bytes, n, strings })
    }

    /// (rows, strings) when the header agrees with the size.
    fn check(b: &[u8]) -> Option<(usize, usize)> {
        if !b.starts_with(MAGIC) {
            return None;
        }
        let n = usize::try_from(u64_at(b, 8)).ok()?;
        let strings = usize::try_from(u64_at(b, 16)).ok()?;
        let heap = usize::try_from(u64_at(b, 24)).ok()?;
        let size = HEADER
            .checked_add(n.checked_mul(8 + 4 + 4 * FIELDS)?)?
            .checked_add(strings.checked_add(1)?.checked_mul(8)?)?
            .checked_add(heap)?;
        (size == b.len()).then_some((n, strings))
    }

    /// Rows in the bundle.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the bundle has no chunks.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn offsets(&self) -> (usize, usize, usize, usize) {
        let order = HEADER + self.n * 8;
        let rows = order + self.n * 4;
        let soff = rows + self.n * 4 * FIELDS;
        let heap = soff + (self.strings + 1) * 8;
        (order, rows, soff, heap)
    }

    fn string(&self, k: u32) -> Option<&str> {
        if k == NULL || k as usize >= self.strings {
            return None;
        }
        let (_, _, soff, heap) = self.offsets();
        let a = u64_at(&self.bytes, soff + k as usize * 8) as usize;
        let b = u64_at(&self.bytes, soff + (k as usize + 1) * 8) as usize;
        let s = self.bytes.get(heap.checked_add(a)?..heap.checked_add(b)?)?;
        std::str::from_utf8(s).ok()
    }

    /// The row of chunk `id`, when the bundle has it.
    pub fn get(&self, id: i64) -> Option<Row<'_>> {
        self.get_with_ord(id).map(|(_, r)| r)
    }

    /// The ordinal (row number in `chunks.parquet`) and row of chunk `id`, when present.
    pub fn get_with_ord(&self, id: i64) -> Option<(usize, Row<'_>)> {
        let (order, rows, _, _) = self.offsets();
        let (mut lo, mut hi) = (0usize, self.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match i64_at(&self.bytes, HEADER + mid * 8).cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let row = u32_at(&self.bytes, order + mid * 4) as usize;
                    let f = |i: usize| u32_at(&self.bytes, rows + (row * FIELDS + i) * 4);
                    let s = |i: usize| self.string(f(LINES + i));
                    let whole = (f(2) != NULL).then(|| -> Option<Whole<'_>> {
                        let w = STRING_COLUMNS.len();
                        Some(Whole {
                            start_line: i64::from(f(2)),
                            end_line: i64::from(f(3)),
                            name: s(w)?,
                            symbol_path: s(w + 1)?,
                            kind: s(w + 2)?,
                        })
                    });
                    return Some((
                        row,
                        Row {
                            start_line: i64::from(f(0)),
                            end_line: i64::from(f(1)),
                            path: s(0)?,
                            symbol: s(1),
                            symbol_path: s(2),
                            kind: s(3)?,
                            language: s(4),
                            source_type: s(5)?,
                            signature: s(6),
                            whole: whole.flatten(),
                        },
                    ));
                }
            }
        }
        None
    }
}

/// A function or method of `symbols.parquet` short enough to be shown whole: where it is, and its
/// row (its strings are read only for the definitions some chunk is a piece of).
struct Def {
    start_byte: i64,
    end_byte: i64,
    start_line: i64,
    end_line: i64,
    row: usize,
}

/// The functions and methods of at most [`crate::options::WHOLE_FUNCTION_BYTES`] in `symbols.parquet`, by
/// path, each file's by start (an enclosing definition before the ones it holds).
fn callables(path: &Path) -> Result<FxHashMap<String, Vec<Def>>> {
    let cols = [
        "path",
        "kind",
        "start_line",
        "end_line",
        "start_byte",
        "end_byte",
    ];
    let mut out: FxHashMap<String, Vec<Def>> = FxHashMap::default();
    let mut row = 0;
    for batch in trove_bundle::lookup::projected(path, &cols, None)? {
        let batch = batch?;
        let p = column::<StringArray>(&batch, "path", path)?;
        let kind = column::<StringArray>(&batch, "kind", path)?;
        let sl = column::<Int32Array>(&batch, "start_line", path)?;
        let el = column::<Int32Array>(&batch, "end_line", path)?;
        let sb = column::<Int64Array>(&batch, "start_byte", path)?;
        let eb = column::<Int64Array>(&batch, "end_byte", path)?;
        for r in 0..batch.num_rows() {
            if matches!(kind.value(r), "function" | "method")
                && eb.value(r) - sb.value(r) <= crate::options::WHOLE_FUNCTION_BYTES
            {
                let def = Def {
                    start_byte: sb.value(r),
                    end_byte: eb.value(r),
                    start_line: i64::from(sl.value(r)),
                    end_line: i64::from(el.value(r)),
                    row: row + r,
                };
                match out.get_mut(p.value(r)) {
                    Some(v) => v.push(def),
                    None => {
                        out.insert(p.value(r).to_string(), vec![def]);
                    }
                }
            }
        }
        row += batch.num_rows();
    }
    for defs in out.values_mut() {
        defs.sort_by_key(|d| (d.start_byte, std::cmp::Reverse(d.end_byte)));
    }
    Ok(out)
}

/// (name, symbol path, kind) of the rows `wanted` (ascending) of `symbols.parquet`.
fn def_strings(path: &Path, wanted: &[usize]) -> Result<FxHashMap<usize, [String; 3]>> {
    let mut out = FxHashMap::default();
    if wanted.is_empty() {
        return Ok(out);
    }
    let (mut row, mut next) = (0, 0);
    for batch in trove_bundle::lookup::projected(path, &["name", "symbol_path", "kind"], None)? {
        let batch = batch?;
        let n = batch.num_rows();
        let name = column::<StringArray>(&batch, "name", path)?;
        let sp = column::<StringArray>(&batch, "symbol_path", path)?;
        let kind = column::<StringArray>(&batch, "kind", path)?;
        while next < wanted.len() && wanted[next] < row + n {
            let r = wanted[next] - row;
            let v = |a: &StringArray| a.value(r).to_string();
            out.insert(wanted[next], [v(name), v(sp), v(kind)]);
            next += 1;
        }
        row += n;
        if next == wanted.len() {
            break;
        }
    }
    Ok(out)
}

/// For the chunks of one file, as (start byte, end byte) in source order, the index in `defs`
/// (sorted as [`callables`] sorts them) of the smallest definition each chunk is a piece of: the
/// chunk ends inside the definition — past its first byte, not past its last — and is not all of
/// it (it starts after the definition does, or ends before it does: a chunk that is the whole
/// definition with its doc comment is no piece). One sweep with a stack of the definitions open
/// at the chunk's end (definitions nest), so a file of thousands of functions costs no more than
/// its size.
fn pieces(defs: &[Def], chunks: &[(i64, i64)]) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(chunks.len());
    let mut open: Vec<usize> = Vec::new();
    let mut next = 0;
    for &(cs, ce) in chunks {
        while next < defs.len() && defs[next].start_byte < ce {
            while open
                .last()
                .is_some_and(|&t| defs[t].end_byte < defs[next].start_byte)
            {
                open.pop();
            }
            open.push(next);
            next += 1;
        }
        while open.last().is_some_and(|&t| defs[t].end_byte < ce) {
            open.pop();
        }
        // Every open definition holds the chunk's end; the innermost the chunk is not all of.
        out.push(open.iter().rev().copied().find(|&t| {
            let d = &defs[t];
            cs > d.start_byte || ce < d.end_byte
        }));
    }
    out
}

/// Reads the row columns of `chunks.parquet` (never `content` or `docs`), and the functions of
/// `symbols` its chunks are pieces of, into the cache layout.
fn build(path: &Path, symbols: Option<&Path>) -> Result<Vec<u8>> {
    let defs = match symbols {
        Some(s) => callables(s)?,
        None => FxHashMap::default(),
    };
    let mut cache = Layout::new(path);
    let files = cache.read_chunks(&defs)?;
    let used = whole_definitions(&defs, files, &cache.rows);
    let mut wanted: Vec<usize> = used.keys().copied().collect();
    wanted.sort_unstable();
    let strings = match symbols {
        Some(s) => def_strings(s, &wanted)?,
        None => FxHashMap::default(),
    };
    for (d, (first, last, at)) in used {
        let Some([name, sp, kind]) = strings.get(&d) else {
            continue;
        };
        let k = [cache.intern(name)?, cache.intern(sp)?, cache.intern(kind)?];
        for row in at {
            let f = &mut cache.rows[row * FIELDS..(row + 1) * FIELDS];
            f[2] = first;
            f[3] = last;
            f[LINES + STRING_COLUMNS.len()..].copy_from_slice(&k);
        }
    }
    Ok(cache.encode())
}

/// A line number as stored in the cache (0 for a value that does not fit).
fn line(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

/// Each definition some chunk is a piece of (by its row in `symbols`): its first line (the
/// earliest of its pieces': the first piece starts at the doc comment, which the definition's
/// own range leaves out), its last, and its pieces' rows. `files`: per file with definitions,
/// its chunks as (start byte, end byte, row); `rows`: the cache's fields so far.
fn whole_definitions(
    defs: &FxHashMap<String, Vec<Def>>,
    files: FxHashMap<&str, Vec<(i64, i64, usize)>>,
    rows: &[u32],
) -> FxHashMap<usize, (u32, u32, Vec<usize>)> {
    let mut used: FxHashMap<usize, (u32, u32, Vec<usize>)> = FxHashMap::default();
    for (p, mut chunks) in files {
        let file_defs = &defs[p];
        chunks.sort_unstable();
        let spans: Vec<(i64, i64)> = chunks.iter().map(|&(s, e, _)| (s, e)).collect();
        for (&(_, _, at), d) in chunks.iter().zip(pieces(file_defs, &spans)) {
            if let Some(d) = d.map(|d| &file_defs[d]) {
                let e = used
                    .entry(d.row)
                    .or_insert_with(|| (line(d.start_line), line(d.end_line), Vec::new()));
                e.0 = e.0.min(rows[at * FIELDS]);
                e.2.push(at);
            }
        }
    }
    used
}

/// Per file with definitions, its chunks as (start byte, end byte, row).
type FileSpans<'d> = FxHashMap<&'d str, Vec<(i64, i64, usize)>>;

/// The cache being built: chunk ids, each chunk's fields, and the strings they point to,
/// interned.
struct Layout<'p> {
    /// The chunks file (for errors).
    path: &'p Path,
    ids: Vec<i64>,
    /// [`FIELDS`] per chunk, in file order.
    rows: Vec<u32>,
    interned: FxHashMap<String, u32>,
    heap: Vec<u8>,
    offsets: Vec<u64>,
}

impl<'p> Layout<'p> {
    fn new(path: &'p Path) -> Self {
        Layout {
            path,
            ids: Vec::new(),
            rows: Vec::new(),
            interned: FxHashMap::default(),
            heap: Vec::new(),
            offsets: vec![0],
        }
    }

    /// The index of string `v` in the heap, added when new.
    fn intern(&mut self, v: &str) -> Result<u32> {
        if let Some(k) = self.interned.get(v) {
            return Ok(*k);
        }
        let k = u32::try_from(self.offsets.len() - 1)
            .ok()
            .filter(|k| *k != NULL)
            .ok_or_else(|| Error::bundle(self.path, "too many distinct strings"))?;
        self.heap.extend_from_slice(v.as_bytes());
        self.offsets.push(self.heap.len() as u64);
        self.interned.insert(v.to_string(), k);
        Ok(k)
    }

    /// Reads every chunk's row (the whole function's lines and strings left for later); returns,
    /// per file with definitions (`defs`), its chunks as (start byte, end byte, row).
    fn read_chunks<'d>(&mut self, defs: &'d FxHashMap<String, Vec<Def>>) -> Result<FileSpans<'d>> {
        let path = self.path;
        let wanted: Vec<&str> = [
            "chunk_id",
            "start_line",
            "end_line",
            "start_byte",
            "end_byte",
        ]
        .into_iter()
        .chain(STRING_COLUMNS)
        .collect();
        let reader = trove_bundle::lookup::projected(path, &wanted, None)?;
        let mut files: FxHashMap<&str, Vec<(i64, i64, usize)>> = FxHashMap::default();
        for batch in reader {
            let batch = batch?;
            let id = column::<Int64Array>(&batch, "chunk_id", path)?;
            let start = column::<Int32Array>(&batch, "start_line", path)?;
            let end = column::<Int32Array>(&batch, "end_line", path)?;
            let sb = column::<Int64Array>(&batch, "start_byte", path)?;
            let eb = column::<Int64Array>(&batch, "end_byte", path)?;
            let strs = STRING_COLUMNS
                .iter()
                .map(|c| column::<StringArray>(&batch, c, path))
                .collect::<trove_bundle::Result<Vec<_>>>()?;
            for r in 0..batch.num_rows() {
                if let Some((p, _)) = defs.get_key_value(strs[0].value(r)) {
                    files.entry(p.as_str()).or_default().push((
                        sb.value(r),
                        eb.value(r),
                        self.ids.len(),
                    ));
                }
                self.ids.push(id.value(r));
                self.rows.push(line(i64::from(start.value(r))));
                self.rows.push(line(i64::from(end.value(r))));
                // The whole function's lines and strings: filled in later.
                self.rows.extend([NULL, NULL]);
                for col in &strs {
                    let v = if col.is_null(r) {
                        NULL
                    } else {
                        self.intern(col.value(r))?
                    };
                    self.rows.push(v);
                }
                self.rows.extend([NULL; WHOLE_STRINGS]);
            }
        }
        Ok(files)
    }

    /// The cache file's bytes: header, ids sorted with their rows' order, the rows, the string
    /// offsets and the heap.
    fn encode(self) -> Vec<u8> {
        let n = self.ids.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&i| self.ids[i as usize]);
        let strings = self.offsets.len() - 1;
        let mut out = Vec::with_capacity(
            HEADER + n * (12 + 4 * FIELDS) + self.offsets.len() * 8 + self.heap.len(),
        );
        out.extend_from_slice(MAGIC);
        for v in [n as u64, strings as u64, self.heap.len() as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        order
            .iter()
            .for_each(|&i| out.extend_from_slice(&self.ids[i as usize].to_le_bytes()));
        order
            .iter()
            .for_each(|i| out.extend_from_slice(&i.to_le_bytes()));
        self.rows
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        self.offsets
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        out.extend_from_slice(&self.heap);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_a_piece_of_the_smallest_definition_reaching_past_it() {
        let def = |start_byte, end_byte, row| Def {
            start_byte,
            end_byte,
            start_line: 0,
            end_line: 0,
            row,
        };
        // outer [100, 800) holds inner [300, 500); then two one-line functions side by side.
        let names = ["outer", "inner", "f", "g"];
        let defs = [
            def(100, 800, 0),
            def(300, 500, 1),
            def(900, 950, 2),
            def(960, 990, 3),
        ];
        let of = |chunks: &[(i64, i64)]| -> Vec<Option<&str>> {
            pieces(&defs, chunks)
                .into_iter()
                .map(|d| d.map(|d| names[defs[d].row]))
                .collect()
        };
        // The whole definition with its doc comment is no piece; a whole nested function, the
        // head (from the doc comment), the tail are pieces of outer; a piece of the nested
        // function is the nested function's.
        assert_eq!(of(&[(80, 800)]), [None]);
        assert_eq!(
            of(&[(80, 299), (300, 400), (401, 500), (501, 800)]),
            [Some("outer"), Some("inner"), Some("inner"), Some("outer")]
        );
        assert_eq!(of(&[(80, 299), (300, 500), (501, 800)])[1], Some("outer"));
        // Code that ends where a definition starts, a whole function beside another, and code
        // after everything: no piece.
        assert_eq!(
            of(&[(0, 100), (900, 950), (960, 990), (995, 999)]),
            [None; 4]
        );
    }
}
