//! The vector arm's matrix: every embedding of a bundle as int8 rows with a per-row scale, read once
//! from `embeddings.parquet` and cached on disk (keyed by that file's sha256), so a query scans
//! contiguous memory instead of casting Parquet lists in SQL (≈9 s for 1M × 384 in DuckDB).
//! int8 keeps a 1M × 256 matrix at 256 MB (f32 would be 1 GB) at a cosine error far below the gaps
//! between ranks that matter.
use std::path::Path;

use crate::{Error, Result};
use trove_bundle::cache::{self, Bytes};
use trove_bundle::reader::EmbeddingCols;
use trove_bundle::{Manifest, SegmentInfo};

const MAGIC: &[u8; 8] = b"TRVVEC02";

/// Calls `row(chunk_id, vector, windows)` for each row of the `embeddings.parquet` at `path`, in
/// file order: its vector and its further windows' vectors (`windows`: a multiple of `dim`
/// floats, maybe none); vectors must have `dim` floats.
pub fn for_each_embedding(
    path: &Path,
    dim: usize,
    mut row: impl FnMut(i64, &[f32], &[f32]),
) -> Result<()> {
    for batch in trove_bundle::reader::open_parquet(path)? {
        let c = EmbeddingCols::new(&batch?, dim, path)?;
        for r in 0..c.len() {
            row(c.id(r), c.vector(r), c.windows(r));
        }
    }
    Ok(())
}

/// Embeddings as a contiguous int8 matrix, kept in its on-disk encoding (header, ids, owners,
/// scales, rows) so a cached matrix is used as mapped, with no decoding copy. Rows `0..n` are the
/// chunks' first vectors, in chunk order (row = chunk ordinal); rows `n..n + m` their further
/// windows, each with its owner's row.
pub struct Matrix {
    bytes: Bytes,
    n: usize,
    m: usize,
    dim: usize,
}

/// Header bytes: magic, chunk row count (u64), window row count (u64), dim (u32).
const HEADER: usize = 8 + 8 + 8 + 4;

/// Builds an encoded [`Matrix`] a chunk at a time (quantized as it comes: no f32 copy is kept).
struct Encoder {
    dim: usize,
    ids: Vec<i64>,
    owners: Vec<u32>,
    scales: Vec<f32>,
    data: Vec<u8>,
    w_scales: Vec<f32>,
    w_data: Vec<u8>,
}

impl Encoder {
    fn new(dim: usize) -> Self {
        Encoder {
            dim,
            ids: Vec::new(),
            owners: Vec::new(),
            scales: Vec::new(),
            data: Vec::new(),
            w_scales: Vec::new(),
            w_data: Vec::new(),
        }
    }

    /// int8 with a per-row scale (the largest magnitude maps to 127).
    fn quantize(v: &[f32], scales: &mut Vec<f32>, data: &mut Vec<u8>) {
        let max = v.iter().fold(0f32, |a, x| a.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        scales.push(scale);
        data.extend(
            v.iter()
                .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8),
        );
    }

    /// The next chunk: its id, first vector and further windows' vectors.
    fn push(&mut self, id: i64, v: &[f32], windows: &[f32]) {
        let row = self.ids.len() as u32;
        self.ids.push(id);
        Self::quantize(v, &mut self.scales, &mut self.data);
        for w in windows.chunks_exact(self.dim) {
            self.owners.push(row);
            Self::quantize(w, &mut self.w_scales, &mut self.w_data);
        }
    }

    fn finish(self) -> Vec<u8> {
        let (n, m, dim) = (self.ids.len(), self.owners.len(), self.dim);
        let mut bytes = Vec::with_capacity(HEADER + n * (12 + dim) + m * (8 + dim));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(n as u64).to_le_bytes());
        bytes.extend_from_slice(&(m as u64).to_le_bytes());
        bytes.extend_from_slice(&(dim as u32).to_le_bytes());
        self.ids
            .iter()
            .for_each(|i| bytes.extend_from_slice(&i.to_le_bytes()));
        self.owners
            .iter()
            .for_each(|o| bytes.extend_from_slice(&o.to_le_bytes()));
        self.scales
            .iter()
            .chain(&self.w_scales)
            .for_each(|s| bytes.extend_from_slice(&s.to_le_bytes()));
        bytes.extend_from_slice(&self.data);
        bytes.extend_from_slice(&self.w_data);
        bytes
    }
}

impl Matrix {
    /// The matrix of segment `seg` of the bundle, from the cache when present and intact, else
    /// built and cached.
    pub fn load(bundle: &Path, manifest: &Manifest, seg: &SegmentInfo) -> Result<Self> {
        let sha = cache::file_sha(bundle, manifest, seg, "embeddings")?;
        let dim = manifest.embedder.dim;
        let bytes = cache::load(
            &format!("vectors-{sha}.i8"),
            |b| Self::rows_in(b, dim).is_some(),
            || Self::from_parquet(&bundle.join(seg.file("embeddings")), dim),
        )?;
        let (n, m) = Self::rows_in(&bytes, dim)
            .ok_or_else(|| Error::bundle(bundle, "vector matrix failed its check"))?;
        Ok(Matrix { bytes, n, m, dim })
    }

    /// The (chunk, window) row counts of an encoded matrix, when its header and size agree.
    fn rows_in(bytes: &[u8], dim: usize) -> Option<(usize, usize)> {
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let n = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?) as usize;
        let m = u64::from_le_bytes(rest.get(8..16)?.try_into().ok()?) as usize;
        let d = u32::from_le_bytes(rest.get(16..20)?.try_into().ok()?) as usize;
        let size = n
            .checked_mul(12 + dim)?
            .checked_add(m.checked_mul(8 + dim)?)?
            .checked_add(HEADER)?;
        (d == dim && bytes.len() == size).then_some((n, m))
    }

    fn from_parquet(path: &Path, dim: usize) -> Result<Vec<u8>> {
        let mut e = Encoder::new(dim);
        for_each_embedding(path, dim, |id, v, windows| e.push(id, v, windows))?;
        Ok(e.finish())
    }

    fn id(&self, row: usize) -> i64 {
        let o = HEADER + row * 8;
        i64::from_le_bytes(self.bytes[o..o + 8].try_into().unwrap_or([0; 8]))
    }

    /// Cosine similarity of the (normalised) query with every chunk — its best window's, when it
    /// has several (MaxP); chunks outside `allowed` (when given) and dead ones (`dead`, by chunk
    /// ordinal) are skipped. Returns the best `n` (chunk id, score), best first.
    pub fn top(
        &self,
        q: &[f32],
        n: usize,
        allowed: Option<&rustc_hash::FxHashSet<i64>>,
        dead: Option<&[bool]>,
    ) -> Vec<(i64, f32)> {
        // The query as i16 (its own scale): an integer dot product, which the compiler vectorises
        // (a float sum it may not reorder), at a rounding error of 1/32767 of the largest weight.
        let max = q.iter().fold(0f32, |a, x| a.max(x.abs()));
        let qscale = if max > 0.0 { max / 32767.0 } else { 1.0 };
        let qi: Vec<i16> = q.iter().map(|x| (x / qscale).round() as i16).collect();
        let dot = |v: &[u8], scale: &[u8]| -> f32 {
            let dot: i32 = v
                .iter()
                .zip(&qi)
                .map(|(&x, &y)| i32::from(x as i8) * i32::from(y))
                .sum();
            dot as f32 * f32::from_le_bytes(scale.try_into().unwrap_or([0; 4])) * qscale
        };
        let (ids_end, owners_end) = (HEADER + self.n * 8, HEADER + self.n * 8 + self.m * 4);
        let scales_end = owners_end + (self.n + self.m) * 4;
        let scales = &self.bytes[owners_end..scales_end];
        let rows = &self.bytes[scales_end..];
        // A chunk's score, NaN for a chunk skipped.
        let mut best: Vec<f32> = scales[..self.n * 4]
            .chunks_exact(4)
            .zip(rows.chunks_exact(self.dim))
            .enumerate()
            .map(|(row, (scale, v))| {
                let skip = allowed.is_some_and(|a| !a.contains(&self.id(row)))
                    || dead.is_some_and(|d| d.get(row).copied().unwrap_or(false));
                if skip { f32::NAN } else { dot(v, scale) }
            })
            .collect();
        let owners = self.bytes[ids_end..owners_end].chunks_exact(4);
        for ((owner, scale), v) in owners
            .zip(scales[self.n * 4..].chunks_exact(4))
            .zip(rows[self.n * self.dim..].chunks_exact(self.dim))
        {
            let o = u32::from_le_bytes(owner.try_into().unwrap_or([0; 4])) as usize;
            if let Some(b) = best.get_mut(o)
                && !b.is_nan()
            {
                *b = b.max(dot(v, scale));
            }
        }
        let mut scored: Vec<(i64, f32)> = best
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_nan())
            .map(|(row, &s)| (self.id(row), s))
            .collect();
        let n = n.min(scored.len());
        if n == 0 {
            return Vec::new();
        }
        let by_score = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        scored.select_nth_unstable_by(n - 1, by_score);
        scored.truncate(n);
        scored.sort_by(by_score);
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn a_chunk_scores_its_best_window_and_dead_or_filtered_chunks_none() {
        // Chunk 10's first vector is far from the query, its second window on it; chunk 20 is
        // half-way with no windows; chunk 30 (dead) and chunk 40 (filtered out) have windows on it.
        let q = unit(&[1.0, 0.0, 0.0]);
        let rows = vec![
            (
                10,
                unit(&[0.0, 1.0, 0.0]),
                [unit(&[0.0, 0.0, 1.0]), unit(&[1.0, 0.1, 0.0])].concat(),
            ),
            (20, unit(&[1.0, 1.0, 0.0]), Vec::new()),
            (30, unit(&[0.0, 1.0, 0.0]), q.clone()),
            (40, unit(&[0.0, 0.0, 1.0]), q.clone()),
        ];
        let mut e = Encoder::new(3);
        for (id, v, w) in &rows {
            e.push(*id, v, w);
        }
        let bytes = e.finish();
        assert_eq!(Matrix::rows_in(&bytes, 3), Some((4, 4)));
        assert_eq!(Matrix::rows_in(&bytes[..bytes.len() - 1], 3), None);
        assert_eq!(Matrix::rows_in(&bytes, 4), None);
        let m = Matrix {
            bytes: Bytes::Owned(bytes),
            n: 4,
            m: 4,
            dim: 3,
        };
        let all = m.top(&q, 10, None, None);
        let ids: Vec<i64> = all.iter().map(|x| x.0).collect();
        assert_eq!(ids, [30, 40, 10, 20], "{all:?}");
        assert!(
            (all[2].1 - unit(&[1.0, 0.1, 0.0])[0]).abs() < 0.01,
            "{all:?}"
        );
        assert!(
            (all[3].1 - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.01,
            "{all:?}"
        );
        // Dead by chunk ordinal (row), allowed by id: a window never revives its chunk.
        let allowed: rustc_hash::FxHashSet<i64> = [10, 20, 30].into_iter().collect();
        let got = m.top(&q, 10, Some(&allowed), Some(&[false, false, true, false]));
        assert_eq!(
            got.iter().map(|x| x.0).collect::<Vec<_>>(),
            [10, 20],
            "{got:?}"
        );
        assert_eq!(m.top(&q, 1, None, None).len(), 1);
    }
}
