//! The BM25 arm: document frequencies (from a one-segment bundle's `terms` table or counted over
//! the live postings), idf weights, and the best chunks over every segment's live postings.
use crate::Result;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;
use trove_bundle::lookup;

use crate::fusion::best_first;
use crate::inverted;

/// Per segment: its inverted index and dead chunk ordinals.
pub(crate) type LivePostings = Arc<Vec<(Arc<inverted::Inverted>, Option<Arc<Vec<bool>>>)>>;

/// (chunk id, segment index): where an arm found a chunk.
pub(crate) type Found = Vec<(i64, usize)>;

/// BM25 over every segment's live chunks: the best `n` (chunk id, score), best first, and the
/// segment of each.
pub(crate) fn bm25_top(
    live: &LivePostings,
    idf: &[(String, f64)],
    n: usize,
    allowed: Option<&FxHashSet<i64>>,
) -> (Vec<(i64, f64)>, Found) {
    let mut out = Vec::new();
    let mut segment = Vec::new();
    // One set of accumulators for all segments, sized for the largest.
    let mut scores = Vec::new();
    for (i, (index, dead)) in live.iter().enumerate() {
        let top = index.top_with(
            idf,
            n,
            allowed,
            dead.as_deref().map(Vec::as_slice),
            &mut scores,
        );
        segment.extend(top.iter().map(|(id, _)| (*id, i)));
        out.extend(top);
    }
    if live.len() > 1 {
        out.sort_by(best_first);
        out.truncate(n);
    }
    (out, segment)
}

/// The live document frequency of `term` over `live`'s segments.
pub(crate) fn live_df(live: &LivePostings, term: &str) -> u64 {
    live.iter()
        .map(|(ix, dead)| ix.df(term, dead.as_deref().map(Vec::as_slice)))
        .sum()
}

/// BM25's idf of a term in `df` of `n` chunks (as the `bm25_search` SQL macro computes it).
pub(crate) fn idf(n: u64, df: u64) -> f64 {
    let (n, d) = (n as f64, df as f64);
    (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
}

/// Where a bundle's document frequencies come from.
#[derive(Clone)]
pub(crate) enum Df {
    /// The `terms` table of a bundle of one segment: point reads.
    Terms(std::path::PathBuf),
    /// The live postings of every segment.
    Live(LivePostings),
}

/// (term, weight × idf) for the `terms` a bundle (of `n_docs` chunks) knows.
pub(crate) fn idf_weights(
    df: &Df,
    n_docs: u64,
    terms: &[(String, f64)],
) -> Result<Vec<(String, f64)>> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = terms.iter().map(|(t, _)| t.as_str()).collect();
    let counts: FxHashMap<String, u64> = match df {
        Df::Terms(p) => lookup::document_frequencies(p, &names)?
            .into_iter()
            .filter_map(|(t, d)| Some((t, u64::try_from(d).ok()?)))
            .collect(),
        Df::Live(live) => names
            .iter()
            .map(|t| (t.to_string(), live_df(live, t)))
            .collect(),
    };
    Ok(terms
        .iter()
        .filter_map(|(t, w)| {
            let d = *counts.get(t.as_str())?;
            (d > 0).then(|| (t.clone(), w * idf(n_docs, d)))
        })
        .collect())
}
