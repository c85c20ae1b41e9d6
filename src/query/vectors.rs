//! The vector arm's matrix: every embedding of a bundle as int8 rows with a per-row scale, read once
//! from `embeddings.parquet` and cached on disk (keyed by that file's sha256), so a query scans
//! contiguous memory instead of casting Parquet lists in SQL (≈9 s for 1M × 384 in DuckDB).
//! int8 keeps a 1M × 256 matrix at 256 MB (f32 would be 1 GB) at a cosine error far below the gaps
//! between ranks that matter.
use arrow::array::{Array, FixedSizeListArray, Float32Array, Int64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::Path;

use super::cache::{self, Bytes};
use crate::bundle::{Manifest, SegmentInfo};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"TRVVEC01";

/// Calls `row(chunk_id, vector)` for each row of the `embeddings.parquet` at `path`, in file
/// order; its vectors must have `dim` floats.
pub fn for_each_embedding(path: &Path, dim: usize, mut row: impl FnMut(i64, &[f32])) -> Result<()> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)?.build()?;
    for batch in reader {
        let batch = batch?;
        let bad = || Error::bundle(path, "embeddings.parquet has an unexpected schema");
        let id_col = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(bad)?;
        let lists = batch
            .column(1)
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .ok_or_else(bad)?;
        let values = lists
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(bad)?;
        if lists.value_length() as usize != dim {
            return Err(bad());
        }
        let vals = values.values();
        for r in 0..batch.num_rows() {
            let start = (lists.offset() + r) * dim;
            row(id_col.value(r), &vals[start..start + dim]);
        }
    }
    Ok(())
}

/// Embeddings as a contiguous int8 matrix, kept in its on-disk encoding (header, ids, scales,
/// rows) so a cached matrix is used as mapped, with no decoding copy.
pub struct Matrix {
    bytes: Bytes,
    n: usize,
    dim: usize,
}

/// Header bytes: magic, row count (u64), dim (u32).
const HEADER: usize = 8 + 8 + 4;

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
        let n = Self::rows_in(&bytes, dim)
            .ok_or_else(|| Error::bundle(bundle, "vector matrix failed its check"))?;
        Ok(Matrix { bytes, n, dim })
    }

    /// The row count of an encoded matrix, when its header and size agree.
    fn rows_in(bytes: &[u8], dim: usize) -> Option<usize> {
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let n = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?) as usize;
        let d = u32::from_le_bytes(rest.get(8..12)?.try_into().ok()?) as usize;
        (d == dim && bytes.len() == HEADER.checked_add(n.checked_mul(12 + dim)?)?).then_some(n)
    }

    fn from_parquet(path: &Path, dim: usize) -> Result<Vec<u8>> {
        let (mut ids, mut scales, mut data) = (Vec::new(), Vec::new(), Vec::new());
        for_each_embedding(path, dim, |id, v| {
            ids.push(id);
            let max = v.iter().fold(0f32, |a, x| a.max(x.abs()));
            let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
            scales.push(scale);
            data.extend(
                v.iter()
                    .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8),
            );
        })?;
        let n = ids.len();
        let mut bytes = Vec::with_capacity(HEADER + n * (12 + dim));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(n as u64).to_le_bytes());
        bytes.extend_from_slice(&(dim as u32).to_le_bytes());
        ids.iter()
            .for_each(|i| bytes.extend_from_slice(&i.to_le_bytes()));
        scales
            .iter()
            .for_each(|s| bytes.extend_from_slice(&s.to_le_bytes()));
        bytes.extend_from_slice(&data);
        Ok(bytes)
    }

    fn id(&self, row: usize) -> i64 {
        let o = HEADER + row * 8;
        i64::from_le_bytes(self.bytes[o..o + 8].try_into().unwrap_or([0; 8]))
    }

    /// Cosine similarity of the (normalised) query with every row; rows outside `allowed` (when
    /// given) and dead rows (`dead`, by row: the chunk ordinal) are skipped. Returns the best `n`
    /// (chunk id, score), best first.
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
        let mut scored: Vec<(i64, f32)> = Vec::with_capacity(self.n);
        let scales = &self.bytes[HEADER + self.n * 8..HEADER + self.n * 12];
        let rows = &self.bytes[HEADER + self.n * 12..];
        for (row, (scale, v)) in scales
            .chunks_exact(4)
            .zip(rows.chunks_exact(self.dim))
            .enumerate()
        {
            let id = self.id(row);
            if allowed.is_some_and(|a| !a.contains(&id))
                || dead.is_some_and(|d| d.get(row).copied().unwrap_or(false))
            {
                continue;
            }
            let dot: i32 = v
                .iter()
                .zip(&qi)
                .map(|(&x, &y)| i32::from(x as i8) * i32::from(y))
                .sum();
            let scale = f32::from_le_bytes(scale.try_into().unwrap_or([0; 4]));
            scored.push((id, dot as f32 * scale * qscale));
        }
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
