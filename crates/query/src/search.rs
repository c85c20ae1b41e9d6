//! A search: the arms, their fusion, the filters, the file context, and the hits' rows; over one
//! bundle ([`Bundle::search`]) or several ([`search_all`]).
use rustc_hash::{FxHashMap, FxHashSet};
use trove_bundle::{cache, lookup};

use crate::bm25::{Df, bm25_top, idf, idf_weights, live_df};
use crate::fusion::{
    FILE_CONTEXT, RRF_K, best_first, convex, file_context, line_range, rrf, signal,
};
use crate::handle::{Bundle, loaded, open_duckdb};
use crate::model::{QueryEmbedder, QueryModel};
use crate::options::{Fusion, Hit, Mode, QueryOptions, default_vector_weight};
use crate::terms::{name_parts, prefix_expansions, query_terms};
use crate::{Result, vectors};
use trove_base::util::sql_lit as lit;

/// Chunk ids with their scores, best first.
type Scored = Vec<(i64, f64)>;

/// Candidates each arm keeps before fusion.
pub const ARM_CANDIDATES: usize = 200;

impl Bundle {
    /// (term, weight × idf) for the query terms this bundle knows: document frequencies from
    /// the `terms` table of a bundle of one segment, else counted over the live postings.
    pub fn idf(&self, terms: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
        match self.terms_path() {
            Some(p) => Ok(idf_weights(
                &Df::Terms(p),
                self.manifest.bm25.n_docs,
                terms,
            )?),
            None => self.idf_indexed(terms),
        }
    }

    /// [`Bundle::idf`] with the document frequencies from the inverted indexes (the live
    /// postings per term, which `terms.df` counts), for a query that loads them anyway.
    pub(crate) fn idf_indexed(&self, terms: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
        idf_weights(
            &Df::Live(self.live_postings()?),
            self.manifest.bm25.n_docs,
            terms,
        )
    }

    /// The prefixes of `terms`' words that the bundle holds ([`prefix_expansions`]) as BM25 terms:
    /// each weighted by its idf, capped at its word's. Every document frequency is looked up once.
    pub(crate) fn prefix_terms(&self, terms: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
        let live = self.live_postings()?;
        let n = self.manifest.bm25.n_docs;
        let mut word_idf: FxHashMap<&str, f64> = FxHashMap::default();
        Ok(prefix_expansions(terms, |t| live_df(&live, t))
            .into_iter()
            .map(|(p, w, df, word)| {
                let cap = *word_idf
                    .entry(word)
                    .or_insert_with(|| idf(n, live_df(&live, word).max(1)));
                (p, w * idf(n, df).min(cap))
            })
            .collect())
    }

    /// What turns query text into this bundle's query vector (for the SQL function `trove_embed`).
    pub fn query_embedder(&self) -> Result<QueryEmbedder> {
        Ok(QueryEmbedder {
            terms: match self.terms_path() {
                Some(p) => Df::Terms(p),
                None => Df::Live(self.live_postings()?),
            },
            n_docs: self.manifest.bm25.n_docs,
            max_len: self.manifest.bm25.max_token_len,
            embedder: self.embedder()?,
        })
    }

    /// Cosine over the bundle's matrix (`e` from [`Bundle::embedder`]); returns (chunk id, similarity), best first.
    pub fn vector(
        &self,
        e: &QueryModel,
        query: &str,
        idf: &[(String, f64)],
        allowed: Option<&FxHashSet<i64>>,
        n: usize,
    ) -> Result<Vec<(i64, f64)>> {
        let Some(q) = e.query_vector(query, idf)? else {
            return Ok(Vec::new());
        };
        let min = e.min_cosine();
        let mut out = Vec::new();
        for (i, seg) in self.segments.iter().enumerate() {
            let m = loaded(&seg.matrix, || {
                vectors::Matrix::load(&self.dir, &self.manifest, &seg.info)
            })?;
            let dead = self.dead(i)?;
            let top: Vec<(i64, f64)> = m
                .top(&q, n, allowed, dead.as_deref().map(Vec::as_slice))
                .into_iter()
                .filter(|(_, s)| *s >= min)
                .map(|(id, s)| (id, f64::from(s)))
                .collect();
            self.found_in(top.iter().map(|(id, _)| (*id, i)));
            out.extend(top);
        }
        if self.segments.len() > 1 {
            // The same order as one matrix's: by similarity (as f32), ties by chunk id.
            out.sort_by(|a, b| (b.1 as f32).total_cmp(&(a.1 as f32)).then(a.0.cmp(&b.0)));
            out.truncate(n);
        }
        Ok(out)
    }

    /// Chunk rows for `ids` (without content), keyed by id, from the row cache ([`rows`]).
    pub(crate) fn rows(&self, ids: &[i64]) -> Result<FxHashMap<i64, Hit>> {
        if ids.is_empty() {
            return Ok(FxHashMap::default());
        }
        let bundle = self.label.clone();
        let own = |s: Option<&str>| s.map(str::to_string);
        let mut located = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some((_, r)) = self.locate(id)? {
                located.push((id, r));
            }
        }
        Ok(located
            .into_iter()
            .map(|(id, r)| {
                (
                    id,
                    Hit {
                        rank: 0,
                        score: 0.0,
                        bundle: bundle.clone(),
                        chunk_id: id,
                        path: r.path.to_string(),
                        start_line: r.start_line,
                        end_line: r.end_line,
                        symbol: own(r.symbol),
                        symbol_path: own(r.symbol_path),
                        kind: r.kind.to_string(),
                        language: own(r.language),
                        source_type: r.source_type.to_string(),
                        signature: own(r.signature),
                        content: None,
                        indent: String::new(),
                        defines: false,
                    },
                )
            })
            .collect())
    }

    /// Reads the content of the `hits` that have none yet, from only the row groups of
    /// `chunks.parquet` (sorted by path) that can hold their paths: content is most of the file.
    pub(crate) fn fill_content(&self, hits: &mut [Hit]) -> Result<()> {
        if hits.is_empty() {
            return Ok(());
        }
        // By segment: each hit's content is in the segment where its chunk is live.
        let mut by_seg: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
        for (k, h) in hits.iter().enumerate() {
            if h.content.is_some() {
                continue;
            }
            if let Some((i, _)) = self.locate(h.chunk_id)? {
                by_seg.entry(i).or_default().push(k);
            }
        }
        for (i, at) in by_seg {
            let ids: Vec<i64> = at.iter().map(|&k| hits[k].chunk_id).collect();
            let paths: Vec<&str> = at.iter().map(|&k| hits[k].path.as_str()).collect();
            let chunks = self.dir.join(self.segments[i].info.file("chunks"));
            let mut content = lookup::contents(&chunks, &ids, &paths)?;
            for k in at {
                if let Some((text, indent)) = content.remove(&hits[k].chunk_id) {
                    hits[k].content = Some(text);
                    hits[k].indent = indent;
                }
            }
        }
        Ok(())
    }

    /// The chunks holding the definitions of `query` when it is a name or a dotted/scoped path
    /// (exact name; a path must match the end of the symbol path), exported ones first.
    pub(crate) fn definition_chunks(&self, query: &str) -> Result<Vec<i64>> {
        let Some(parts) = name_parts(query) else {
            return Ok(Vec::new());
        };
        let name = parts[parts.len() - 1];
        let path = parts.join(" > ");
        let sql = format!(
            "SELECT chunk_id FROM symbols WHERE name = {n} AND chunk_id IS NOT NULL \
             AND (symbol_path = {p} OR ends_with(symbol_path, '> ' || {p}) OR {single}) \
             ORDER BY symbol_path = {p} DESC, coalesce(exported, true) DESC, path, start_line LIMIT 10",
            n = lit(name),
            p = lit(&path),
            single = parts.len() == 1,
        );
        let mut stmt = self.conn()?.prepare(&sql)?;
        let ids: Vec<i64> = stmt
            .query_map([], |r| r.get::<_, i64>(0))?
            .collect::<std::result::Result<_, _>>()?;
        let mut seen = FxHashSet::default();
        Ok(ids.into_iter().filter(|id| seen.insert(*id)).collect())
    }

    /// The vector arm's fusion weight for `o`, and the mode that runs: a hybrid query whose
    /// vector arm weighs nothing is the BM25 arm (the vector arm is not run).
    pub(crate) fn effective(&self, o: &QueryOptions) -> (f64, Mode) {
        let wv = o
            .vector_weight
            .unwrap_or_else(|| default_vector_weight(&self.manifest.embedder.backend));
        let mode = if o.mode == Mode::Hybrid && wv <= 0.0 {
            Mode::Bm25
        } else {
            o.mode
        };
        (wv, mode)
    }

    /// What the scores of this bundle's hits for `o` measure: BM25 (unbounded), a cosine, a
    /// convex fusion (0 to 1) or RRF. Bundles whose hits share a scale merge by score.
    pub fn score_scale(&self, o: &QueryOptions) -> &'static str {
        match (self.effective(o).1, o.fusion) {
            (Mode::Bm25, _) => "bm25",
            (Mode::Vector, _) => "cosine",
            (Mode::Hybrid, Fusion::Convex) => "convex",
            (Mode::Hybrid, Fusion::Rrf) => "rrf",
        }
    }

    /// Runs the query against this bundle: up to `o.k` hits, best first (ranks not yet assigned).
    pub fn search(&self, query: &str, o: &QueryOptions) -> Result<Vec<Hit>> {
        cache::touch_used();
        let terms = query_terms(query, self.manifest.bm25.max_token_len);
        let (wv, mode) = self.effective(o);
        // Refuse a foreign embedder before any work, and build ours once.
        let embedder = if mode == Mode::Bm25 {
            None
        } else {
            Some(self.embedder()?)
        };
        let (bm25, vector) = self.arms(query, &terms, mode, embedder.as_ref(), o)?;
        let mut ids: Vec<i64> = bm25.iter().chain(&vector).map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut rows = self.rows(&ids)?;
        let fused = fuse(&terms, &rows, bm25, vector, mode, o.fusion, wv);
        // A query that is a name (`processPayment`, `UserService.processPayment`) puts the chunks
        // defining it first: the symbols table knows where it is defined, whatever the text says.
        let defs = self.definition_chunks(query)?;
        // The chunks defining the name asked for are widened only to their own definition (a piece
        // of it), never to a function around them.
        let named: FxHashSet<i64> = defs.iter().copied().collect();
        let fused = self.promote(fused, defs, o, &mut rows)?;
        let ranked = fused.into_iter().filter_map(|(id, score)| {
            let mut h = rows.remove(&id)?;
            h.score = score;
            Some(h)
        });
        let (mut hits, widened) = self.rerank(ranked, query, embedder.as_ref(), mode, o, &named)?;
        if !o.content {
            // Late interaction read the reordered hits' chunk texts; they were not asked for.
            hits.iter_mut().for_each(|h| h.content = None);
        } else {
            self.widened_texts(&mut hits, widened)?;
            self.fill_content(&mut hits)?;
        }
        Ok(hits)
    }

    /// The BM25 and vector arms' best [`ARM_CANDIDATES`] each (empty for an arm `mode` does not
    /// run), with the filters applied, the arms side by side in hybrid mode.
    fn arms(
        &self,
        query: &str,
        terms: &[(String, f64)],
        mode: Mode,
        embedder: Option<&QueryModel>,
        o: &QueryOptions,
    ) -> Result<(Scored, Scored)> {
        std::thread::scope(|scope| -> Result<_> {
            // DuckDB takes ≈30 ms to start and is needed only for filters and name lookups: open
            // it on a second thread while this one looks up the terms and runs the arms.
            let needs_sql = Self::has_filters(o) || name_parts(query).is_some();
            let mut pending = (needs_sql && self.conn.get().is_none()).then(|| {
                let (dir, manifest) = (&self.dir, &self.manifest);
                scope.spawn(move || open_duckdb(dir, manifest))
            });
            let mut join = || -> Result<()> {
                if let Some(h) = pending.take() {
                    let conn = h
                        .join()
                        .map_err(|_| crate::Error::internal("opening DuckDB panicked"))??;
                    let _ = self.conn.set(conn);
                }
                Ok(())
            };
            // One lookup of the query terms' document frequencies serves both arms: from the
            // inverted index when BM25 runs (it is loaded anyway), else from `terms.parquet`.
            // The BM25 arm also scores the query words' prefixes the bundle holds; the vector
            // arm (the hash embedder's idf weights) only the query's own terms. Beside a model's
            // vector arm, which bridges `request` and `req` itself, the prefixes only add noise
            // to the fusion (measured: see README, Retrieval quality): not there.
            let with_model = matches!(embedder, Some(QueryModel::Model(_)));
            let idf = if mode == Mode::Vector {
                self.idf(terms)?
            } else {
                self.idf_indexed(terms)?
            };
            let mut expanded = idf.clone();
            if mode == Mode::Bm25 || (mode == Mode::Hybrid && !with_model) {
                expanded.extend(self.prefix_terms(terms)?);
            }
            let allowed = if Self::has_filters(o) {
                join()?;
                self.allowed(o)?
            } else {
                None
            };
            // In hybrid mode the arms run side by side: BM25 on a second thread.
            let (bm25, vector) = std::thread::scope(|arms| -> Result<_> {
                let live = if mode == Mode::Vector {
                    None
                } else {
                    Some(self.live_postings()?)
                };
                let bm25 = live.map(|live| {
                    let (idf, allowed) = (&expanded, allowed.as_ref());
                    arms.spawn(move || -> Result<_> {
                        Ok(bm25_top(&live, idf, ARM_CANDIDATES, allowed))
                    })
                });
                let vector = match embedder {
                    Some(e) => self.vector(e, query, &idf, allowed.as_ref(), ARM_CANDIDATES)?,
                    None => Vec::new(),
                };
                let bm25 = match bm25 {
                    Some(h) => {
                        let (top, segment) = h
                            .join()
                            .map_err(|_| crate::Error::internal("the BM25 arm panicked"))??;
                        self.found_in(segment);
                        top
                    }
                    None => Vec::new(),
                };
                Ok((bm25, vector))
            })?;
            join()?;
            Ok((bm25, vector))
        })
    }

    /// Puts the chunks `defs` that define the name the query is first in `fused` (with filters,
    /// only those the filtered arms kept), reading the rows of those not in `rows` yet.
    fn promote(
        &self,
        fused: Vec<(i64, f64)>,
        defs: Vec<i64>,
        o: &QueryOptions,
        rows: &mut FxHashMap<i64, Hit>,
    ) -> Result<Vec<(i64, f64)>> {
        if defs.is_empty() {
            return Ok(fused);
        }
        let present: FxHashSet<i64> = fused.iter().map(|(id, _)| *id).collect();
        // With filters, only definitions the filtered arms kept may be promoted.
        let defs: Vec<i64> = defs
            .into_iter()
            .filter(|id| !Self::has_filters(o) || present.contains(id))
            .collect();
        let missing: Vec<i64> = defs
            .iter()
            .copied()
            .filter(|id| !rows.contains_key(id))
            .collect();
        rows.extend(self.rows(&missing)?);
        let top = fused.first().map_or(1.0, |(_, s)| *s).max(1e-9);
        let n = defs.len() as f64;
        let mut out: Vec<(i64, f64)> = defs
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, top * (1.0 + 0.01 * (n - i as f64))))
            .collect();
        let promoted: FxHashSet<i64> = defs.into_iter().collect();
        out.extend(fused.into_iter().filter(|(id, _)| !promoted.contains(id)));
        Ok(out)
    }

    /// The best `o.k` of `ranked`, pieces of split functions widened to the whole function (the
    /// indexes of the widened hits returned), and late interaction's reordering of the best
    /// `o.rerank` (hybrid or vector mode) for a model embedder that has word-piece vectors; the
    /// chunks defining a name the query is (`named`) stay first.
    fn rerank(
        &self,
        ranked: impl Iterator<Item = Hit>,
        query: &str,
        embedder: Option<&QueryModel>,
        mode: Mode,
        o: &QueryOptions,
        named: &FxHashSet<i64>,
    ) -> Result<(Vec<Hit>, Vec<usize>)> {
        let model = match (embedder, mode) {
            (Some(QueryModel::Model(m)), Mode::Hybrid | Mode::Vector) if o.rerank > 0 => {
                Some(m.clone())
            }
            _ => None,
        };
        let wanted = if model.is_some() {
            o.k.max(o.rerank)
        } else {
            o.k
        };
        let (mut hits, widened) = self.whole_functions(ranked, o, named, wanted)?;
        let mut widened_at = vec![false; hits.len()];
        widened.iter().for_each(|&k| widened_at[k] = true);
        if let Some(m) = model {
            let pinned = hits
                .iter()
                .take_while(|h| named.contains(&h.chunk_id))
                .count();
            let end = hits.len().min(pinned.saturating_add(o.rerank));
            let order = self.late_interaction(m.as_ref(), query, &mut hits[pinned..end])?;
            let flags: Vec<bool> = order.iter().map(|&k| widened_at[pinned + k]).collect();
            widened_at[pinned..end].copy_from_slice(&flags);
        }
        hits.truncate(o.k);
        widened_at.truncate(o.k);
        for h in &mut hits {
            h.defines = named.contains(&h.chunk_id);
        }
        let widened: Vec<usize> = (0..hits.len()).filter(|&k| widened_at[k]).collect();
        Ok((hits, widened))
    }

    /// Gives each widened hit (`widened`: their indexes) its function's text, read once per file
    /// (where it cannot be had, `fill_content` gives it the piece's).
    fn widened_texts(&self, hits: &mut [Hit], widened: Vec<usize>) -> Result<()> {
        let mut texts: FxHashMap<String, Option<String>> = FxHashMap::default();
        for k in widened {
            let h = &mut hits[k];
            if !texts.contains_key(&h.path) {
                texts.insert(h.path.clone(), self.file_text(&h.path)?);
            }
            let Some(Some(text)) = texts.get(&h.path) else {
                continue;
            };
            // From the first line's code on, as a chunk's content starts.
            let whole = line_range(text, h.start_line, h.end_line);
            let lines = whole.trim_start_matches([' ', '\t']);
            if !lines.is_empty() {
                h.indent = whole[..whole.len() - lines.len()].to_string();
                h.content = Some(lines.to_string());
            }
        }
        Ok(())
    }
}

/// Code signals on each arm's own scores (names that match the query up, tests and docs below
/// code with the same score), the arms fused as `mode` and `fusion` say (`wv`: the vector arm's
/// weight), then each chunk's score joined with its file's: the pieces of the file the query is
/// about rank together, above stray pieces of files that match one word.
fn fuse(
    terms: &[(String, f64)],
    rows: &FxHashMap<i64, Hit>,
    bm25: Vec<(i64, f64)>,
    vector: Vec<(i64, f64)>,
    mode: Mode,
    fusion: Fusion,
    wv: f64,
) -> Vec<(i64, f64)> {
    let term_set: FxHashSet<&str> = terms.iter().map(|(t, _)| t.as_str()).collect();
    let reweigh = |arm: Vec<(i64, f64)>| -> Vec<(i64, f64)> {
        let mut v: Vec<(i64, f64)> = arm
            .into_iter()
            .map(|(id, s)| (id, s * rows.get(&id).map_or(1.0, |h| signal(h, &term_set))))
            .collect();
        v.sort_by(best_first);
        v
    };
    let (bm25, vector) = (reweigh(bm25), reweigh(vector));
    let fused: Vec<(i64, f64)> = match mode {
        Mode::Bm25 => bm25,
        Mode::Vector => vector,
        Mode::Hybrid => match fusion {
            Fusion::Rrf => rrf(&[(&bm25, 1.0), (&vector, wv)]),
            Fusion::Convex => convex(&bm25, &vector, wv),
        },
    };
    file_context(fused, FILE_CONTEXT, |id| {
        rows.get(&id).map(|h| h.path.as_str())
    })
}

/// Searches several bundles and merges their hits by score, ranks assigned.
pub fn search_all<'a>(
    bundles: impl IntoIterator<Item = &'a Bundle>,
    query: &str,
    o: &QueryOptions,
) -> Result<Vec<Hit>> {
    let mut hits = Vec::new();
    let mut scales = FxHashSet::default();
    let mut lists = Vec::new();
    for b in bundles {
        scales.insert(b.score_scale(o));
        lists.push(b.search(query, o)?);
    }
    // Scores on different scales (a hash bundle's BM25 beside a model bundle's 0-to-1 fusion)
    // do not compare: the bundles' lists are interleaved by rank instead, each hit scored
    // 1 / (RRF_K + its rank in its bundle), as reciprocal rank fusion does.
    let by_rank = scales.len() > 1;
    for list in lists {
        for (i, mut h) in list.into_iter().enumerate() {
            if by_rank {
                h.score = 1.0 / (RRF_K + i as f64 + 1.0);
            }
            hits.push(h);
        }
    }
    // The definitions of a name the query is come first, as within one bundle; equal scores by
    // chunk id, the order each bundle cut its list to k in (and `bm25_search`'s), so a hit's rank
    // does not depend on -k. The sort is stable: the same chunk in two bundles keeps their order.
    hits.sort_by(|a, b| {
        b.defines
            .cmp(&a.defines)
            .then(b.score.total_cmp(&a.score))
            .then(a.chunk_id.cmp(&b.chunk_id))
    });
    hits.truncate(o.k);
    for (i, h) in hits.iter_mut().enumerate() {
        h.rank = i + 1;
    }
    Ok(hits)
}
