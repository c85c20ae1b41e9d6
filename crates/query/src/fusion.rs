//! Joining the arms' lists (convex combination or Reciprocal Rank Fusion), a chunk's own signal
//! (symbol matches, tests and docs weighed down) and its file's evidence ([`file_context`]).
use rustc_hash::{FxHashMap, FxHashSet};
use trove_bundle::tokenizer;

use crate::options::Hit;

/// RRF's k: the usual 60 (Cormack et al.), which damps the weight of the very first ranks.
pub const RRF_K: f64 = 60.0;

/// BM25 score multiplier per query term found in the chunk's symbol path: a match on a name counts
/// for more than a match in the body.
pub(crate) const SYMBOL_BOOST: f64 = 0.3;

/// Multipliers that push tests and docs below code with the same text score.
pub(crate) const TEST_WEIGHT: f64 = 0.7;
pub(crate) const DOC_WEIGHT: f64 = 0.85;

/// Share of a chunk's final score that is its file's evidence, the best score of any chunk of the
/// same file among the candidates (see [`file_context`]).
pub const FILE_CONTEXT: f64 = 0.25;

/// The ranking multiplier of a chunk: symbol-path matches up, tests and docs down.
pub(crate) fn signal(h: &Hit, terms: &FxHashSet<&str>) -> f64 {
    let mut w = 1.0;
    // Only code has symbols: a doc section's path is its headings and a config chunk's its keys
    // (`tool.flit.module`), and their repeating query words is no sign of the definition asked for.
    if matches!(h.source_type.as_str(), "code" | "test")
        && let Some(sp) = &h.symbol_path
    {
        let sym: FxHashSet<String> = tokenizer::tokens(sp, 64).into_iter().collect();
        let matched = terms.iter().filter(|t| sym.contains(**t)).count();
        w *= 1.0 + SYMBOL_BOOST * matched as f64;
    }
    match h.source_type.as_str() {
        "test" => w * TEST_WEIGHT,
        "doc" => w * DOC_WEIGHT,
        _ => w,
    }
}

/// Weighted Reciprocal Rank Fusion over ranked lists: Σ w / (k + rank), full outer union.
pub fn rrf(lists: &[(&[(i64, f64)], f64)]) -> Vec<(i64, f64)> {
    let mut acc: FxHashMap<i64, f64> = FxHashMap::default();
    for (list, w) in lists {
        for (rank, (id, _)) in list.iter().enumerate() {
            *acc.entry(*id).or_default() += w / (RRF_K + rank as f64 + 1.0);
        }
    }
    let mut v: Vec<(i64, f64)> = acc.into_iter().collect();
    v.sort_by(best_first);
    v
}

/// Convex combination of two ranked lists' min-max normalized scores: (1 − α)·bm25 + α·vector with
/// α = w / (1 + w), full outer union (a chunk one arm did not return gets 0 from it). Unlike RRF it
/// keeps how far ahead an arm's best hits are, and at w = 0 it is the BM25 arm exactly.
pub fn convex(bm25: &[(i64, f64)], vector: &[(i64, f64)], w: f64) -> Vec<(i64, f64)> {
    let alpha = w / (1.0 + w);
    let mut acc: FxHashMap<i64, f64> = FxHashMap::default();
    for (list, weight) in [(bm25, 1.0 - alpha), (vector, alpha)] {
        if weight <= 0.0 {
            continue;
        }
        let hi = list.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
        let lo = list.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let span = hi - lo;
        for (id, s) in list {
            let n = if span > 0.0 { (s - lo) / span } else { 1.0 };
            *acc.entry(*id).or_default() += weight * n;
        }
    }
    let mut v: Vec<(i64, f64)> = acc.into_iter().collect();
    v.sort_by(best_first);
    v
}

/// Each chunk's score joined with its file's: (1 − γ)·s + γ·F, where F is the best score of any
/// candidate from the same file (the passage-plus-document evidence of passage retrieval, Callan
/// 1994). A chunk of a file that matches the query well as a whole moves up past a chunk that is
/// the one match of its file; the file's best chunk keeps its score, so at γ = 0 it is the input.
/// Linear in the scores, so it keeps the order of any rescaled list (several bundles merge by
/// score). `path_of` gives a candidate's file (`None`: left alone).
pub fn file_context<'a>(
    list: Vec<(i64, f64)>,
    gamma: f64,
    path_of: impl Fn(i64) -> Option<&'a str>,
) -> Vec<(i64, f64)> {
    if gamma <= 0.0 {
        return list;
    }
    let mut best: FxHashMap<&str, f64> = FxHashMap::default();
    for (id, s) in &list {
        if let Some(p) = path_of(*id) {
            let b = best.entry(p).or_insert(*s);
            *b = b.max(*s);
        }
    }
    let mut v: Vec<(i64, f64)> = list
        .into_iter()
        .map(|(id, s)| {
            let f = path_of(id).and_then(|p| best.get(p)).copied().unwrap_or(s);
            (id, (1.0 - gamma) * s + gamma * f)
        })
        .collect();
    v.sort_by(best_first);
    v
}

/// Lines `start..=end` (1-based) of `text`, without the last line's newline.
pub(crate) fn line_range(text: &str, start: i64, end: i64) -> String {
    let from = usize::try_from(start.max(1) - 1).unwrap_or(0);
    let n = usize::try_from(end - start.max(1) + 1).unwrap_or(0);
    let s: String = text.split_inclusive('\n').skip(from).take(n).collect();
    let s = s.strip_suffix('\n').unwrap_or(&s);
    s.strip_suffix('\r').unwrap_or(s).to_string()
}

/// Order of a ranked (chunk id, score) list: best score first, ties by id (deterministic).
pub(crate) fn best_first(a: &(i64, f64), b: &(i64, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convex_is_bm25_at_weight_0_and_a_union_above() {
        let bm25 = [(1, 9.0), (2, 5.0), (4, 1.0)];
        let vector = [(3, 0.9), (2, 0.8), (1, 0.1)];
        let ids = |v: Vec<(i64, f64)>| v.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        assert_eq!(ids(convex(&bm25, &vector, 0.0)), vec![1, 2, 4]);
        // Equal weights: 2 is good in both arms, 1 and 3 top one arm each.
        let f = convex(&bm25, &vector, 1.0);
        assert_eq!(f[0].0, 2);
        assert_eq!(ids(f.clone()).len(), 4);
        assert!(f.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
    }

    #[test]
    fn file_context_lifts_a_files_other_chunks_and_keeps_its_best() {
        let paths: FxHashMap<i64, &str> = [(1, "a.rs"), (2, "b.rs"), (3, "a.rs"), (4, "c.rs")]
            .into_iter()
            .collect();
        let list = vec![(1, 10.0), (2, 8.0), (3, 6.0), (4, 7.0)];
        let out = file_context(list.clone(), 0.25, |id| paths.get(&id).copied());
        // a.rs's best keeps 10; its second chunk gets 0.75·6 + 0.25·10 = 7, past c.rs's 7 only on
        // the id tie-break, and b.rs and c.rs, alone in their files, keep theirs.
        assert_eq!(out, vec![(1, 10.0), (2, 8.0), (3, 7.0), (4, 7.0)]);
        let out = file_context(list.clone(), 0.5, |id| paths.get(&id).copied());
        assert_eq!(out, vec![(1, 10.0), (2, 8.0), (3, 8.0), (4, 7.0)]);
        // γ = 0 is the input; a chunk of no known file keeps its score.
        assert_eq!(file_context(list.clone(), 0.0, |_| None), list);
        let mut sorted = list.clone();
        sorted.sort_by(best_first);
        assert_eq!(file_context(list, 0.5, |_| None), sorted);
    }

    #[test]
    fn rrf_is_a_full_outer_union() {
        let a = [(1, 9.0), (2, 5.0)];
        let b = [(3, 0.9), (1, 0.8)];
        let f = rrf(&[(&a, 1.0), (&b, 1.0)]);
        assert_eq!(f[0].0, 1);
        assert_eq!(f.len(), 3);
        assert!((f[0].1 - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-12);
    }
}
