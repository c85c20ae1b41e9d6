//! After fusion: late interaction over a model's word-piece vectors reorders the best hits, and a
//! piece of a split function stands for the whole function.
use rustc_hash::FxHashSet;
use trove_embed::Embedder;

use crate::Result;
use crate::handle::Bundle;
use crate::options::{Hit, QueryOptions};
use crate::terms::STOPWORDS;

pub(crate) const RERANK_SHARE: f64 = 0.5;
/// Windows of a chunk late interaction reads (of the model's own length, 256 word pieces).
pub(crate) const RERANK_WINDOWS: usize = 4;

impl Bundle {
    /// Reorders `hits` (best first) by late interaction and says where each came from (the new
    /// order as old positions). ColBERT's MaxSim (Khattab & Zaharia 2020) with the embedder's
    /// own word-piece vectors, untrained for it: each query word piece (no stop word, no
    /// punctuation) is matched with its most similar piece of the chunk's path and text, and the
    /// similarities are averaged. The new order is by (1 − s)·hybrid + s·MaxSim, each min-max
    /// scaled over `hits`, s = [`RERANK_SHARE`] (the old score: the hybrid's, or the vector arm's
    /// cosine in vector mode); the new scores span the old ones' range, so hits
    /// after these and other bundles' merge as before.
    pub(crate) fn late_interaction(
        &self,
        m: &dyn Embedder,
        query: &str,
        hits: &mut [Hit],
    ) -> Result<Vec<usize>> {
        let identity = (0..hits.len()).collect();
        if hits.len() < 2 {
            return Ok(identity);
        }
        let Some(q) = m.query_token_vectors(query)? else {
            return Ok(identity);
        };
        let q: Vec<Vec<f32>> = q
            .into_iter()
            .filter(|(piece, _)| {
                // WordPiece marks a word's later pieces with `##`, SentencePiece a word's first
                // with `▁`.
                let w = piece
                    .trim_start_matches("##")
                    .trim_start_matches('\u{2581}');
                w.chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && !STOPWORDS.contains(&w)
            })
            .map(|(_, v)| v)
            .collect();
        if q.is_empty() {
            return Ok(identity);
        }
        // Each chunk's own text (a widened hit's too: the piece that matched; `search` puts the
        // function's text in its place when content is asked for).
        self.fill_content(hits)?;
        use rayon::prelude::*;
        let sims: Vec<f64> = hits
            .par_iter()
            .map(|h| -> Result<f64> {
                let text = format!("{} {}", h.path, h.content.as_deref().unwrap_or(""));
                let d = m.token_vectors(&text, RERANK_WINDOWS)?.unwrap_or_default();
                if d.is_empty() {
                    return Ok(0.0);
                }
                let total: f64 = q
                    .iter()
                    .map(|qv| {
                        d.iter()
                            .map(|(_, dv)| qv.iter().zip(dv).map(|(a, b)| a * b).sum::<f32>())
                            .fold(f32::NEG_INFINITY, f32::max) as f64
                    })
                    .sum();
                Ok(total / q.len() as f64)
            })
            .collect::<Result<_>>()?;
        let bounds = |v: &[f64]| {
            v.iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
                    (l.min(*x), h.max(*x))
                })
        };
        let scaled = |v: &[f64]| -> Vec<f64> {
            let (lo, hi) = bounds(v);
            v.iter()
                .map(|x| if hi > lo { (x - lo) / (hi - lo) } else { 1.0 })
                .collect()
        };
        let old: Vec<f64> = hits.iter().map(|h| h.score).collect();
        let (a, b) = (scaled(&old), scaled(&sims));
        let mixed: Vec<f64> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (1.0 - RERANK_SHARE) * x + RERANK_SHARE * y)
            .collect();
        let mut order: Vec<usize> = (0..hits.len()).collect();
        // Stable: equal scores keep the hybrid's order.
        order.sort_by(|&i, &j| mixed[j].total_cmp(&mixed[i]));
        let (lo, hi) = bounds(&old);
        let reordered: Vec<Hit> = order
            .iter()
            .map(|&k| Hit {
                score: lo + (hi - lo) * mixed[k],
                ..hits[k].clone()
            })
            .collect();
        hits.clone_from_slice(&reordered);
        Ok(order)
    }

    /// The best `k` of `ranked` (best first), each piece of a split function standing for the
    /// whole function: its lines, name and kind become the function's when the function is at
    /// most [`WHOLE_FUNCTION_BYTES`](crate::options::WHOLE_FUNCTION_BYTES) long (the row cache knows which, see [`rows`]), and a later
    /// hit inside a function already listed is dropped (the pieces of one function are one
    /// result). Also returns the positions of the hits that were widened (their content is the
    /// function's text, not the chunk's). With `--kind`, a hit is widened only to a definition of
    /// a kind asked for; a chunk in `named` (the definition of a name the query is) only to its own
    /// definition, never to a function around it.
    pub(crate) fn whole_functions(
        &self,
        ranked: impl Iterator<Item = Hit>,
        o: &QueryOptions,
        named: &FxHashSet<i64>,
        k: usize,
    ) -> Result<(Vec<Hit>, Vec<usize>)> {
        // `k` is the caller's (`-k` has no upper bound): reserve for what is there at most.
        let mut out: Vec<Hit> = Vec::with_capacity(k.min(1024));
        let mut widened: Vec<usize> = Vec::new();
        for mut h in ranked {
            if out.len() == k {
                break;
            }
            let whole = self.locate(h.chunk_id)?.and_then(|(_, r)| r.whole);
            let whole = whole.filter(|w| {
                (o.kinds.is_empty() || o.kinds.iter().any(|k| k == w.kind))
                    && (!named.contains(&h.chunk_id)
                        || h.symbol_path.as_deref() == Some(w.symbol_path))
            });
            if let Some(w) = whole {
                // The piece's signature is the function's only when the piece is of it.
                if h.symbol_path.as_deref() != Some(w.symbol_path) {
                    h.signature = None;
                }
                h.start_line = w.start_line;
                h.end_line = w.end_line;
                h.symbol = Some(w.name.to_string());
                h.symbol_path = Some(w.symbol_path.to_string());
                h.kind = w.kind.to_string();
            }
            let inside = widened.iter().any(|&k| {
                let f = &out[k];
                f.path == h.path && f.start_line <= h.start_line && h.end_line <= f.end_line
            });
            if inside {
                continue;
            }
            if whole.is_some() {
                widened.push(out.len());
            }
            out.push(h);
        }
        Ok((out, widened))
    }
}
