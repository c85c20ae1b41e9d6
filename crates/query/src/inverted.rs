//! The BM25 arm's inverted index: `postings.parquet` (with each chunk's id and length from
//! `chunks.parquet`) read once into a cache file laid out for term-at-a-time scoring (keyed by the
//! two files' sha256, see [`trove_bundle::cache`]), so a query reads the postings of its few terms from
//! mapped memory instead of running SQL over the table.
//!
//! The ranking is the one of the `bm25_search` SQL macro (`trove sql`), which any Parquet engine can
//! run over the same bundle: Okapi BM25 with the manifest's k1, b and avgdl, each chunk's
//! `token_len`, the term weight × idf given by the caller; best score first, ties by chunk id.
//! Parquet gives it no way to reach one term's postings without decoding whole row groups; an
//! inverted index scores 1M postings in a few milliseconds.
//!
//! Layout (little endian): magic, chunks n (u64), terms t (u64), postings p (u64), heap bytes (u64);
//! n chunk ids (i64, by `chunk_ord`); n lengths (u32, by `chunk_ord`); t + 1 posting offsets (u64);
//! t + 1 heap offsets (u64, the terms in byte order); p chunk ordinals (u32, ascending within a
//! term); p term frequencies (u32); the heap (the terms' UTF-8 bytes).
use arrow::array::{Array, Int32Array, Int64Array, StringArray};
use rustc_hash::FxHashSet;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::Mutex;

use crate::{Error, Result};
use trove_bundle::cache::{self, Bytes, u64_at};
use trove_bundle::reader::column;
use trove_bundle::{Manifest, SegmentInfo};

const MAGIC: &[u8; 8] = b"TRVINV02";
const HEADER: usize = 8 + 4 * 8;

/// A bundle's postings, ready to score.
pub struct Inverted {
    bytes: Bytes,
    n: usize,
    terms: usize,
    postings: usize,
    /// BM25's term-frequency saturation (the manifest's k1).
    k1: f64,
    /// Each chunk's length normalisation, `k1 · (1 − b + b · doc_len / avgdl)`, computed once.
    norms: Vec<f64>,
    /// Score accumulators, one per chunk ordinal, all zero between queries (reused: a 1M-chunk
    /// bundle would otherwise fault in 8 MB of fresh pages per query).
    scratch: Mutex<Vec<f64>>,
}

impl Inverted {
    /// The index of segment `seg` of the bundle, from the cache when present and intact, else
    /// built and cached. Lengths are normalised by the manifest's `avgdl`, that of the whole
    /// bundle's live chunks.
    pub fn load(bundle: &Path, manifest: &Manifest, seg: &SegmentInfo) -> Result<Self> {
        let sha = cache::file_sha(bundle, manifest, seg, "postings")?;
        let chunks_sha = cache::file_sha(bundle, manifest, seg, "chunks")?;
        // The check scans every term's offsets: run once, its result kept for the bytes used.
        let checked = std::cell::Cell::new(None);
        let bytes = cache::load(
            &format!(
                "inverted-{sha}-{}.bin",
                chunks_sha.get(..16).unwrap_or(&chunks_sha)
            ),
            |b| {
                checked.set(Self::check(b));
                checked.get().is_some()
            },
            || {
                build(
                    &bundle.join(seg.file("chunks")),
                    &bundle.join(seg.file("postings")),
                )
            },
        )?;
        // Mapped bytes passed the check last run on them; bytes built in memory are checked now.
        let header = match &bytes {
            cache::Bytes::Mapped(_) => checked.get(),
            cache::Bytes::Owned(b) => Self::check(b),
        };
        let (n, terms, postings) =
            header.ok_or_else(|| Error::bundle(bundle, "inverted index failed a check"))?;
        let (k1, b, avgdl) = (
            manifest.bm25.k1,
            manifest.bm25.b,
            manifest.bm25.avgdl.max(1e-9),
        );
        let lens = Layout {
            n,
            t: terms,
            p: postings,
        }
        .lens();
        // The SQL macro's expression, operation by operation, so both give the same doubles.
        let norms = bytes[lens..lens + 4 * n]
            .chunks_exact(4)
            .map(|l| {
                let dl = f64::from(le_u32(l));
                k1 * (1.0 - b + b * dl / avgdl)
            })
            .collect();
        Ok(Inverted {
            bytes,
            n,
            terms,
            postings,
            k1,
            norms,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// (chunks, terms, postings) when the header agrees with the size and the offsets are in order.
    fn check(b: &[u8]) -> Option<(usize, usize, usize)> {
        if !b.starts_with(MAGIC) {
            return None;
        }
        let n = usize::try_from(u64_at(b, 8)).ok()?;
        let t = usize::try_from(u64_at(b, 16)).ok()?;
        let p = usize::try_from(u64_at(b, 24)).ok()?;
        let heap = usize::try_from(u64_at(b, 32)).ok()?;
        let size = HEADER
            .checked_add(n.checked_mul(12)?)?
            .checked_add(t.checked_add(1)?.checked_mul(16)?)?
            .checked_add(p.checked_mul(8)?)?
            .checked_add(heap)?;
        if size != b.len() {
            return None;
        }
        let me = Layout { n, t, p };
        // Offsets must be monotone and end at the table sizes: a lookup then never leaves its slice.
        let monotone = |at: usize, end: usize| {
            let mut prev = 0;
            for i in 0..=t {
                let o = u64_at(b, at + i * 8);
                if o < prev || o > end as u64 {
                    return false;
                }
                prev = o;
            }
            prev == end as u64
        };
        (monotone(me.post_off(), p) && monotone(me.heap_off(), heap)).then_some((n, t, p))
    }

    fn layout(&self) -> Layout {
        Layout {
            n: self.n,
            t: self.terms,
            p: self.postings,
        }
    }

    /// The posting range of `term`, when the bundle has it.
    fn range(&self, term: &str) -> Option<(usize, usize)> {
        let l = self.layout();
        let b = &self.bytes[..];
        let heap = &b[l.heap()..];
        let term_at = |i: usize| {
            let s = u64_at(b, l.heap_off() + i * 8) as usize;
            let e = u64_at(b, l.heap_off() + (i + 1) * 8) as usize;
            &heap[s..e]
        };
        let (mut lo, mut hi) = (0, self.terms);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match term_at(mid).cmp(term.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let s = u64_at(b, l.post_off() + mid * 8) as usize;
                    let e = u64_at(b, l.post_off() + (mid + 1) * 8) as usize;
                    return Some((s, e));
                }
            }
        }
        None
    }

    /// Document frequency of `term` (its postings), 0 when absent; with `dead` (by chunk
    /// ordinal), of its live postings only.
    pub fn df(&self, term: &str, dead: Option<&[bool]>) -> u64 {
        let Some((s, e)) = self.range(term) else {
            return 0;
        };
        let Some(dead) = dead else {
            return (e - s) as u64;
        };
        let l = self.layout();
        let ords = &self.bytes[l.ords() + 4 * s..l.ords() + 4 * e];
        ords.chunks_exact(4)
            .filter(|o| !dead.get(le_u32(o) as usize).copied().unwrap_or(false))
            .count() as u64
    }

    /// The chunk id of ordinal `i`.
    fn id(&self, i: usize) -> i64 {
        cache::i64_at(&self.bytes, HEADER + i * 8)
    }

    /// BM25 over `weighted` (term, weight × idf); chunks outside `allowed` (when given) and dead
    /// ones (`dead`, by chunk ordinal) are left out. Returns the best `k` (chunk id, score), best
    /// first, ties by chunk id.
    pub fn top(
        &self,
        weighted: &[(String, f64)],
        k: usize,
        allowed: Option<&FxHashSet<i64>>,
        dead: Option<&[bool]>,
    ) -> Vec<(i64, f64)> {
        let mut own = Vec::new();
        let mut guard = self.scratch.try_lock().ok();
        let scores: &mut Vec<f64> = guard.as_deref_mut().unwrap_or(&mut own);
        self.top_with(weighted, k, allowed, dead, scores)
    }

    /// [`Inverted::top`] with the caller's accumulators (all zero, any length; left all zero):
    /// the segments of a bundle, scored one after another, share one set.
    pub fn top_with(
        &self,
        weighted: &[(String, f64)],
        k: usize,
        allowed: Option<&FxHashSet<i64>>,
        dead: Option<&[bool]>,
        scores: &mut Vec<f64>,
    ) -> Vec<(i64, f64)> {
        if k == 0 || self.n == 0 {
            return Vec::new();
        }
        let l = self.layout();
        let b = &self.bytes[..];
        let ords = &b[l.ords()..l.ords() + 4 * self.postings];
        let tfs = &b[l.tfs()..l.tfs() + 4 * self.postings];
        if scores.len() < self.n {
            scores.resize(self.n, 0.0);
        }
        let scores = &mut scores[..self.n];
        let k1 = self.k1;
        let mut any = false;
        for (term, w) in weighted {
            let Some((s, e)) = self.range(term) else {
                continue;
            };
            any |= e > s;
            for (o, tf) in ords[s * 4..e * 4]
                .chunks_exact(4)
                .map(le_u32)
                .zip(tfs[s * 4..e * 4].chunks_exact(4).map(le_u32))
            {
                let o = o as usize;
                let tf = f64::from(tf);
                if let (Some(acc), Some(norm)) = (scores.get_mut(o), self.norms.get(o)) {
                    *acc += w * tf * (k1 + 1.0) / (tf + norm);
                }
            }
        }
        if !any {
            return Vec::new();
        }
        // The best k: a heap whose top is the worst kept; every accumulator is reset on the way.
        let mut heap: BinaryHeap<Worst> = BinaryHeap::with_capacity(k.min(scores.len()) + 1);
        for (o, acc) in scores.iter_mut().enumerate() {
            let s = std::mem::take(acc);
            if s == 0.0 || dead.is_some_and(|d| d.get(o).copied().unwrap_or(false)) {
                continue;
            }
            let c = Worst(s, self.id(o));
            if heap.len() == k && heap.peek().is_some_and(|w| c >= *w) {
                continue;
            }
            if allowed.is_some_and(|a| !a.contains(&c.1)) {
                continue;
            }
            heap.push(c);
            if heap.len() > k {
                heap.pop();
            }
        }
        let mut out: Vec<(i64, f64)> = heap.into_iter().map(|w| (w.1, w.0)).collect();
        out.sort_by(crate::fusion::best_first);
        out
    }
}

/// (score, chunk id), ordered so that the greatest is the worst: lower score, then higher id.
#[derive(Debug, Clone, Copy)]
struct Worst(f64, i64);

impl PartialEq for Worst {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Worst {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.total_cmp(&self.0).then(self.1.cmp(&o.1))
    }
}

fn le_u32(s: &[u8]) -> u32 {
    s.try_into().map_or(0, u32::from_le_bytes)
}

/// Section offsets of an encoded index.
struct Layout {
    n: usize,
    t: usize,
    p: usize,
}

impl Layout {
    fn lens(&self) -> usize {
        HEADER + self.n * 8
    }
    fn post_off(&self) -> usize {
        self.lens() + self.n * 4
    }
    fn heap_off(&self) -> usize {
        self.post_off() + (self.t + 1) * 8
    }
    fn ords(&self) -> usize {
        self.heap_off() + (self.t + 1) * 8
    }
    fn tfs(&self) -> usize {
        self.ords() + self.p * 4
    }
    fn heap(&self) -> usize {
        self.tfs() + self.p * 4
    }
}

/// Reads `chunks.parquet` (each chunk's id and length, by `chunk_ord`) and `postings.parquet`
/// (sorted by term, then `chunk_ord`) of a bundle, at `chunks_path` and `path`, into the cache
/// layout.
fn build(chunks_path: &Path, path: &Path) -> Result<Vec<u8>> {
    let batches =
        |path: &Path, columns: &[&str]| trove_bundle::lookup::projected(path, columns, None);
    let (mut ids, mut lens): (Vec<i64>, Vec<u32>) = (Vec::new(), Vec::new());
    for batch in batches(chunks_path, &["chunk_id", "chunk_ord", "token_len"])? {
        let batch = batch?;
        let id = column::<Int64Array>(&batch, "chunk_id", chunks_path)?;
        let ord = column::<Int32Array>(&batch, "chunk_ord", chunks_path)?;
        let len = column::<Int32Array>(&batch, "token_len", chunks_path)?;
        for r in 0..batch.num_rows() {
            if usize::try_from(ord.value(r)).ok() != Some(ids.len()) {
                return Err(Error::bundle(
                    chunks_path,
                    "chunk_ord is not the row number (run `trove verify` on the bundle)",
                ));
            }
            ids.push(id.value(r));
            lens.push(len.value(r).max(0) as u32);
        }
    }
    let (mut post_off, mut heap_off, mut heap) = (vec![0u64], vec![0u64], Vec::new());
    let (mut ords, mut tfs): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut last: Option<Vec<u8>> = None;
    for batch in batches(path, &["term", "chunk_ord", "tf"])? {
        let batch = batch?;
        let term = column::<StringArray>(&batch, "term", path)?;
        let ord = column::<Int32Array>(&batch, "chunk_ord", path)?;
        let tf = column::<Int32Array>(&batch, "tf", path)?;
        for r in 0..batch.num_rows() {
            let o = match usize::try_from(ord.value(r)) {
                Ok(o) if !term.is_null(r) && !ord.is_null(r) && o < ids.len() => o as u32,
                _ => {
                    return Err(Error::bundle(
                        path,
                        "a posting names no chunk (run `trove verify` on the bundle)",
                    ));
                }
            };
            let t = term.value(r).as_bytes();
            if last.as_deref() != Some(t) {
                if last.as_deref().is_some_and(|l| l > t) {
                    return Err(Error::bundle(
                        path,
                        "postings.parquet is not sorted by term",
                    ));
                }
                if last.is_some() {
                    post_off.push(ords.len() as u64);
                    heap_off.push(heap.len() as u64);
                }
                heap.extend_from_slice(t);
                last = Some(t.to_vec());
            }
            ords.push(o);
            tfs.push(if tf.is_null(r) {
                0
            } else {
                tf.value(r).max(0) as u32
            });
        }
    }
    if last.is_some() {
        post_off.push(ords.len() as u64);
        heap_off.push(heap.len() as u64);
    }
    let t = post_off.len() - 1;
    let l = Layout {
        n: ids.len(),
        t,
        p: ords.len(),
    };
    let mut out = Vec::with_capacity(l.heap() + heap.len());
    out.extend_from_slice(MAGIC);
    for v in [l.n, l.t, l.p, heap.len()] {
        out.extend_from_slice(&(v as u64).to_le_bytes());
    }
    ids.iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    lens.iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    post_off
        .iter()
        .chain(&heap_off)
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    ords.iter()
        .chain(&tfs)
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    out.extend_from_slice(&heap);
    Ok(out)
}
