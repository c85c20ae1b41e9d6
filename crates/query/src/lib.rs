//! Query stage: search one or more bundles.
//!
//! Input: bundle directories and a query text. Output: ranked [`Hit`]s. The BM25 arm scores the
//! query terms' postings from a cached inverted index of `postings.parquet` ([`inverted`]), with the
//! ranking of the `bm25_search` SQL macro that any Parquet engine can run; the vector arm embeds the
//! query with the bundle's own embedder and scans a cached int8 matrix ([`vectors`]); each arm keeps
//! its own top N and a convex combination of their normalized scores joins them (or Reciprocal
//! Rank Fusion, k = 60); each chunk's score is then joined with its file's ([`file_context`]), and a
//! piece of a split function stands for the whole function ([`rows::Whole`]). DuckDB is opened only
//! for filters and for name lookups in `symbols`.
//! Invariants: the query is tokenized by the same code as the index; a bundle made with another
//! embedder than this build can reproduce is refused.
//!
//! A bundle is opened with [`Bundle::open`] and searched with its query methods; the filters a
//! query takes are checked first, e.g. a `--path` glob:
//!
//! ```
//! assert!(trove_query::check_glob("src/**/*.rs").is_ok());
//! assert!(trove_query::check_glob("src/[").is_err());
//! ```
pub mod inverted;
pub mod rows;
pub mod sql;
pub mod vectors;

use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;

use std::sync::Arc;
pub use trove_base::{Error, Result};
use trove_bundle::tokenizer;
use trove_bundle::{Manifest, read_manifest};
use trove_bundle::{cache, lookup};
use trove_embed::{Embedder, HashEmbedder};

/// RRF's k: the usual 60 (Cormack et al.), which damps the weight of the very first ranks.
pub const RRF_K: f64 = 60.0;
/// Candidates each arm keeps before fusion.
pub const ARM_CANDIDATES: usize = 200;
/// BM25 score multiplier per query term found in the chunk's symbol path: a match on a name counts
/// for more than a match in the body.
const SYMBOL_BOOST: f64 = 0.3;
/// Weight of a query term that is a whole compound identifier (`processPayment`, `max_file_bytes`):
/// the user typed an exact name, the strongest evidence there is.
const COMPOUND_WEIGHT: f64 = 2.0;
/// Weight of a query word's prefix (see [`prefix_expansions`]) against the word itself.
const PREFIX_WEIGHT: f64 = 0.5;
/// Query words this many letters long or longer get their prefixes as extra terms.
const PREFIX_MIN_WORD: usize = 5;
/// The shortest prefix taken.
const PREFIX_MIN: usize = 3;
/// Fusion weight of a model embedder's vector arm (see [`default_vector_weight`]).
const MODEL_VECTOR_WEIGHT: f64 = 1.0;
/// Vector hits below this cosine are noise (hash-bucket collisions), not matches (dev eval: 0.12
/// gives hybrid MRR 0.451, 0.02 gives 0.422). Unknown query words give an empty query vector (no
/// idf), hence no hits at all.
const MIN_COSINE: f32 = 0.12;
/// Multipliers that push tests and docs below code with the same text score.
const TEST_WEIGHT: f64 = 0.7;
const DOC_WEIGHT: f64 = 0.85;
/// Hits (hybrid or vector) a model with word-piece vectors reorders by late interaction (see
/// [`Bundle::late_interaction`]), and the share of the new order that is late interaction's: on
/// the project's question set (scripts/eval/), 20 and 0.5 lift MRR@10 on half A, half B and the
/// dev set alike (10–20 hits and shares 0.35–0.75 all did, in hybrid mode).
pub const RERANK: usize = 20;
const RERANK_SHARE: f64 = 0.5;
/// Windows of a chunk late interaction reads (of the model's own length, 256 word pieces).
const RERANK_WINDOWS: usize = 4;
/// Share of a chunk's final score that is its file's evidence, the best score of any chunk of the
/// same file among the candidates (see [`file_context`]).
pub const FILE_CONTEXT: f64 = 0.25;
/// A piece of a split function or method stands for the whole definition in the results when the
/// definition is at most this many bytes (four times the default chunk budget of 1,800
/// non-whitespace characters: a function cut into two or three pieces, shown whole).
pub const WHOLE_FUNCTION_BYTES: i64 = 7200;
/// Question words dropped from the query (not from the index): they match comments everywhere.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "what", "when",
    "where", "which", "who", "why", "with", "there", "it's", "get", "gets", "instead",
];

/// Which arms run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Mode {
    /// BM25 and vector, fused (--fusion, --vector-weight).
    Hybrid,
    /// BM25 only.
    Bm25,
    /// Vector only.
    Vector,
}

/// How hybrid mode joins its arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum Fusion {
    /// Weighted Reciprocal Rank Fusion: ranks only.
    Rrf,
    /// A convex combination of each arm's min-max normalized scores (Bruch et al. 2023).
    #[default]
    Convex,
}

/// Filters and sizes.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// Which arms.
    pub mode: Mode,
    /// Results wanted.
    pub k: usize,
    /// Language ids (any of).
    pub langs: Vec<String>,
    /// Source types (any of).
    pub types: Vec<String>,
    /// Path glob (`*` also crosses `/`; matched character by character, see [`glob_regex`]).
    pub path: Option<String>,
    /// Chunk kinds (any of).
    pub kinds: Vec<String>,
    /// Include the chunk content in hits.
    pub content: bool,
    /// Weight of the vector arm in the fusion (BM25's is 1); `None`: the embedder's default.
    pub vector_weight: Option<f64>,
    /// How hybrid mode fuses the arms.
    pub fusion: Fusion,
    /// How many of the best hits late interaction reorders (hybrid and vector mode) when the
    /// embedder has word-piece vectors (`local`); 0: none (see [`RERANK`]).
    pub rerank: usize,
}

impl QueryOptions {
    /// The best `k` of `mode` over the whole bundle: no filters, content included, the
    /// embedder's default fusion weight.
    pub fn unfiltered(mode: Mode, k: usize) -> Self {
        QueryOptions {
            mode,
            k,
            langs: Vec::new(),
            types: Vec::new(),
            path: None,
            kinds: Vec::new(),
            content: true,
            vector_weight: None,
            fusion: Fusion::default(),
            rerank: RERANK,
        }
    }
}

/// Default fusion weight of the vector arm per embedder backend (BM25's is 1; convex fusion, so
/// the vector arm's share is w / (1 + w)). Chosen on half A of the project's own question set
/// (scripts/eval/, 64 questions over four projects) and checked on half B (64 over four others):
/// - `hash`, a bag of hashed words, adds nothing BM25 does not have: any weight > 0 lowers MRR@10
///   on half B (0.244 at 0 → 0.230 at 0.25, 0.183 at 1) and at best ties on half A. Off (0): hybrid
///   is the BM25 arm, and the vector arm is not even run.
/// - a model (`local` all-MiniLM-L6-v2; `openai` unmeasured, assumed no weaker): w = 1 is best on
///   half A (R@10 0.562, MRR 0.331 against RRF's 0.500 / 0.319) and beats both arms on half B
///   (R@10 0.422, MRR 0.263; BM25 0.406 / 0.244, vector 0.344 / 0.168).
pub fn default_vector_weight(backend: &str) -> f64 {
    match backend {
        "hash" => 0.0,
        _ => MODEL_VECTOR_WEIGHT,
    }
}

/// One result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Hit {
    /// 1-based rank in the final list.
    pub rank: usize,
    /// Fused (or single-arm) score.
    pub score: f64,
    /// The bundle it came from.
    pub bundle: String,
    /// Chunk id (a JSON string: see [`trove_base::util::id_as_string`]).
    #[serde(serialize_with = "trove_base::util::id_as_string")]
    pub chunk_id: i64,
    /// Repo-relative path.
    pub path: String,
    /// First line.
    pub start_line: i64,
    /// Last line.
    pub end_line: i64,
    /// Symbol name.
    pub symbol: Option<String>,
    /// Symbol path.
    pub symbol_path: Option<String>,
    /// Kind.
    pub kind: String,
    /// Language id.
    pub language: Option<String>,
    /// Source type.
    pub source_type: String,
    /// Signature.
    pub signature: Option<String>,
    /// Content (with `--content`, and always for the text output's snippet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The whitespace before the content's first line, which the content (from its first code
    /// on) leaves out: what the text output's snippet puts back to show the lines as written.
    #[serde(skip)]
    pub indent: String,
    /// Whether it defines the name the query is (promoted first in its bundle's list): kept first
    /// when several bundles' lists are merged, whatever their score scales.
    #[serde(skip)]
    pub defines: bool,
}

/// One segment of an open bundle: which of its rows later segments killed, and its query caches
/// (each built from this segment's tables alone, so a new segment costs only its own).
struct Segment {
    info: trove_bundle::SegmentInfo,
    /// Whether a later segment has tombstones (which may name paths here).
    tombstoned: bool,
    /// A flag per chunk ordinal: dead, its path tombstoned by a later segment (from the `files`
    /// table: chunks lie in path order); `None` when nothing here can be dead.
    dead: std::sync::OnceLock<Option<Arc<Vec<bool>>>>,
    /// The vector matrix, loaded on first use.
    matrix: std::sync::OnceLock<vectors::Matrix>,
    /// The BM25 inverted index, loaded on first use.
    inverted: std::sync::OnceLock<Arc<inverted::Inverted>>,
    /// The chunk rows, loaded on first use.
    rows: std::sync::OnceLock<rows::Rows>,
}

/// An open bundle: its manifest, its segments with their caches, and (opened on first use) a
/// DuckDB connection with views over the live rows of its tables.
pub struct Bundle {
    /// Where it is (for a packed bundle, its unpacked copy in the cache).
    pub dir: std::path::PathBuf,
    /// What the user named it (the packed file for a packed bundle): hits show this.
    pub label: String,
    /// Its manifest.
    pub manifest: Manifest,
    /// DuckDB with one view per table; opening DuckDB costs ≈30 ms, so a query that needs no SQL
    /// (vector mode without filters) never does.
    conn: std::sync::OnceLock<duckdb::Connection>,
    /// The segments, oldest first.
    segments: Vec<Segment>,
    /// The bundle's embedder, built on first use (a local model loads once).
    embedder: std::sync::OnceLock<QueryModel>,
    /// The segment where an arm found each chunk id (where its row is live): the first place
    /// [`Bundle::locate`] looks.
    found_in: std::sync::Mutex<FxHashMap<i64, usize>>,
    /// Per segment, the paths whose rows there are dead (read from the tombstones on first use:
    /// only a dead-row cache that must be built needs them).
    dead_paths: std::sync::OnceLock<Vec<FxHashSet<String>>>,
    /// Where the `refs` view of a bundle of several segments reads from: see
    /// [`Bundle::cache_refs`].
    refs_cache: std::sync::Mutex<RefsCache>,
}

/// What the `refs` view of a bundle of several segments reads.
enum RefsCache {
    /// Not yet asked for: the view resolves.
    Untried,
    /// The view resolves, and stays so (caching failed, or [`Bundle::keep_refs_live`]).
    Live,
    /// The view reads this cached resolution.
    File(std::path::PathBuf),
}

impl Bundle {
    /// The `terms` table of a bundle of one segment (whose stored document frequencies are the
    /// live ones).
    fn terms_path(&self) -> Option<std::path::PathBuf> {
        match self.segments.as_slice() {
            [one] => Some(self.dir.join(one.info.file("terms"))),
            _ => None,
        }
    }

    /// Segment `i`'s dead chunk ordinals (read once from its `files` table), `None` when none.
    fn dead(&self, i: usize) -> Result<Option<Arc<Vec<bool>>>> {
        let seg = &self.segments[i];
        loaded(&seg.dead, || {
            if !seg.tombstoned {
                return Ok(None);
            }
            // Cached (a byte per chunk ordinal), named by the segment's files table and the
            // tombstones of the segments after it: a process that opens a segmented bundle
            // then reads no Parquet to know its dead rows.
            let mut key = cache::file_sha(&self.dir, &self.manifest, &seg.info, "files")?;
            for later in &self.manifest.segments[i + 1..] {
                if later.tombstones > 0 {
                    key.push_str(&cache::file_sha(
                        &self.dir,
                        &self.manifest,
                        later,
                        trove_bundle::TOMBSTONES,
                    )?);
                }
            }
            let name = format!(
                "dead-v1-{}",
                &trove_base::util::sha256_hex(key.as_bytes())[..32]
            );
            let chunks = seg.info.chunks;
            let bytes = cache::load(
                &name,
                |b| b.len() as u64 == chunks,
                || {
                    let paths = &loaded(&self.dead_paths, || {
                        trove_bundle::reader::dead_paths(&self.dir, &self.manifest)
                    })?[i];
                    // The files' chunk counts must add up to the segment's chunks (its manifest
                    // entry, checked against chunks.parquet): a damaged count is refused, never
                    // allocated.
                    let wrong = || {
                        Error::bundle(
                            &self.dir,
                            format!(
                                "segment {}: the chunk counts of its files.parquet do not add up \
                                 to the {chunks} rows of its chunks.parquet (run `trove verify` \
                                 on the bundle)",
                                seg.info.id
                            ),
                        )
                    };
                    let mut dead = Vec::with_capacity(chunks as usize);
                    for f in trove_bundle::reader::read_files(&seg.info.dir(&self.dir))? {
                        let d = u8::from(paths.contains(&f.path));
                        let n = u64::from(f.chunks);
                        if dead.len() as u64 + n > chunks {
                            return Err(wrong());
                        }
                        dead.extend(std::iter::repeat_n(d, n as usize));
                    }
                    if dead.len() as u64 != chunks {
                        return Err(wrong());
                    }
                    Ok(dead)
                },
            )?;
            Ok(Some(Arc::new(bytes.iter().map(|&b| b != 0).collect())))
        })
        .cloned()
    }

    /// The (redacted) text of the file `path` as the bundle holds it, from the segment where
    /// its rows are live; `None` when the bundle has no such file.
    pub fn file_text(&self, path: &str) -> Result<Option<String>> {
        let dead = if self.segments.iter().any(|s| s.tombstoned) {
            Some(loaded(&self.dead_paths, || {
                trove_bundle::reader::dead_paths(&self.dir, &self.manifest)
            })?)
        } else {
            None
        };
        for (i, seg) in self.segments.iter().enumerate().rev() {
            if dead.is_some_and(|d| d[i].contains(path)) {
                continue;
            }
            let text = lookup::file_text(
                &self.dir.join(seg.info.file("chunks")),
                &self.dir.join(seg.info.file("files")),
                path,
            )?;
            if text.is_some() {
                return Ok(text);
            }
        }
        Ok(None)
    }

    /// Remembers where the arms found chunk ids (only worth it with several segments).
    fn found_in(&self, found: impl IntoIterator<Item = (i64, usize)>) {
        if self.segments.len() > 1
            && let Ok(mut m) = self.found_in.lock()
        {
            m.extend(found);
        }
    }

    /// Segment `i`'s inverted index.
    fn inverted(&self, i: usize) -> Result<Arc<inverted::Inverted>> {
        let seg = &self.segments[i];
        loaded(&seg.inverted, || {
            inverted::Inverted::load(&self.dir, &self.manifest, &seg.info).map(Arc::new)
        })
        .cloned()
    }

    /// Segment `i`'s chunk rows.
    fn seg_rows(&self, i: usize) -> Result<&rows::Rows> {
        let seg = &self.segments[i];
        loaded(&seg.rows, || {
            rows::Rows::load(&self.dir, &self.manifest, &seg.info)
        })
    }

    /// Every segment's inverted index with its dead ordinals: what live document frequencies
    /// are counted from.
    fn live_postings(&self) -> Result<LivePostings> {
        (0..self.segments.len())
            .map(|i| Ok((self.inverted(i)?, self.dead(i)?)))
            .collect::<Result<Vec<_>>>()
            .map(Arc::new)
    }

    /// The segment where chunk `id` is live (ids are unique among live rows), and its row.
    fn locate(&self, id: i64) -> Result<Option<(usize, rows::Row<'_>)>> {
        // Empty for a bundle of one segment (`found_in` keeps nothing then).
        let hint = self.found_in.lock().ok().and_then(|m| m.get(&id).copied());
        for i in hint.into_iter().chain((0..self.segments.len()).rev()) {
            if let Some((ord, r)) = self.seg_rows(i)?.get_with_ord(id)
                && !self
                    .dead(i)?
                    .is_some_and(|d| d.get(ord).copied().unwrap_or(false))
            {
                return Ok(Some((i, r)));
            }
        }
        Ok(None)
    }
}

/// Per segment: its inverted index and dead chunk ordinals.
type LivePostings = Arc<Vec<(Arc<inverted::Inverted>, Option<Arc<Vec<bool>>>)>>;

/// (chunk id, segment index): where an arm found a chunk.
type Found = Vec<(i64, usize)>;

/// BM25 over every segment's live chunks: the best `n` (chunk id, score), best first, and the
/// segment of each.
fn bm25_top(
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
fn live_df(live: &LivePostings, term: &str) -> u64 {
    live.iter()
        .map(|(ix, dead)| ix.df(term, dead.as_deref().map(Vec::as_slice)))
        .sum()
}

/// SQL string literal.
pub fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl Bundle {
    /// Opens a bundle (a directory, or a packed `.trove` file, unpacked once into the cache): reads
    /// and checks the manifest, checks every table is present with the size
    /// the manifest records (a truncated or replaced file is refused here; `trove verify` checks
    /// the bytes).
    pub fn open(path: &Path) -> Result<Self> {
        let label = path.display().to_string();
        let dir = &trove_bundle::pack::open_path(path)?;
        let manifest = read_manifest(dir)?;
        if manifest.format_version < trove_bundle::FORMAT_VERSION {
            return Err(Error::bundle(
                dir,
                format!(
                    "format_version {} was written by an older trove (this one reads {}): re-index it",
                    manifest.format_version,
                    trove_bundle::FORMAT_VERSION
                ),
            ));
        }
        if manifest.segments.is_empty() {
            return Err(Error::bundle(
                dir,
                "its manifest lists no segment (run `trove verify` on it, or re-index)",
            ));
        }
        manifest.check_segments(dir)?;
        let names = manifest.segment_files();
        for name in &names {
            let p = dir.join(name);
            let size = std::fs::metadata(&p)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            let listed = manifest.entry(name).map(|f| f.bytes);
            let problem = match (size, listed) {
                (None, _) => "is missing",
                (_, None) => "is not in the manifest",
                (Some(a), Some(b)) if a != b => "does not have the size the manifest records",
                _ => continue,
            };
            return Err(Error::bundle(
                dir,
                format!("{name} {problem} (run `trove verify` on it, or re-index)"),
            ));
        }
        // Every table's sha256 against the manifest: hashed once per file version (remembered in
        // the cache by path, size, mtime and inode), so damaged bytes are refused, not queried.
        trove_bundle::pack::check_hashes(dir, &manifest)?;
        // Each segment's rows of the paths a later segment tombstones are dead.
        let segments: Vec<Segment> = manifest
            .segments
            .iter()
            .enumerate()
            .map(|(i, info)| Segment {
                info: info.clone(),
                tombstoned: manifest.segments[i + 1..].iter().any(|s| s.tombstones > 0),
                dead: std::sync::OnceLock::new(),
                matrix: std::sync::OnceLock::new(),
                inverted: std::sync::OnceLock::new(),
                rows: std::sync::OnceLock::new(),
            })
            .collect();
        Ok(Bundle {
            dir: dir.to_path_buf(),
            label,
            manifest,
            conn: std::sync::OnceLock::new(),
            segments,
            embedder: std::sync::OnceLock::new(),
            dead_paths: std::sync::OnceLock::new(),
            found_in: std::sync::Mutex::default(),
            refs_cache: std::sync::Mutex::new(RefsCache::Untried),
        })
    }

    /// With several segments the `refs` view resolves every reference again over all segments'
    /// definitions (see [`trove_bundle::views_sql`]): about a second on a bundle of 50k chunks and
    /// 120k references, for every `refs`, `map` or `callers`. Its result depends only on the
    /// segments' `refs`, `symbols`, `deps` and `tombstones` tables and on the views' SQL, so
    /// the first use writes it to the query cache (`refs-v1-<sha256 of those>.parquet`, by
    /// temporary name and rename) and the view then reads that file: the same rows. A cache that
    /// cannot be written or read leaves the view resolving as before; a file removed under a
    /// long-lived handle (`trove serve`, a cache cleaner) is written again on the next use. One
    /// segment: nothing to do.
    pub fn cache_refs(&self) {
        if self.manifest.segments.len() < 2 {
            return;
        }
        let mut state = self.refs_cache.lock().unwrap_or_else(|e| e.into_inner());
        let was_file = match &*state {
            RefsCache::Live => return,
            RefsCache::File(p) if p.is_file() => {
                cache::touch_used();
                return;
            }
            RefsCache::File(_) => true,
            RefsCache::Untried => false,
        };
        *state = match self.try_cache_refs() {
            Ok(p) => RefsCache::File(p),
            Err(_) => {
                // The view may read the vanished file: it resolves again.
                if was_file && let Ok(conn) = self.conn() {
                    let _ = conn.execute_batch(&format!(
                        "CREATE OR REPLACE VIEW refs AS {}",
                        trove_bundle::resolution::resolved_refs_sql(
                            "stored_refs",
                            "symbols",
                            "deps"
                        )
                    ));
                }
                RefsCache::Live
            }
        };
    }

    /// Keeps the `refs` view resolving over the connection's own views for this bundle's life
    /// (`trove sql` with several statements: one of them may redefine what it resolves over).
    pub fn keep_refs_live(&self) {
        let mut state = self.refs_cache.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*state, RefsCache::Untried) {
            *state = RefsCache::Live;
        }
    }

    /// Writes (or finds) the cached resolution and points the view at it: its path.
    fn try_cache_refs(&self) -> Result<std::path::PathBuf> {
        let dir =
            trove_base::util::cache_dir().ok_or_else(|| Error::not_found("no cache directory"))?;
        // The views' own text (the live rows and the resolution rules, by this build) and the
        // tables' sha256s.
        let mut key = format!(
            "refs-v1\n{}\n",
            trove_bundle::views_sql(&self.manifest.segments, |rel| format!("'{rel}'"))
        );
        for seg in &self.manifest.segments {
            key.push_str(&seg.id);
            for table in ["refs", "symbols", "deps"] {
                key.push_str(&cache::file_sha(&self.dir, &self.manifest, seg, table)?);
            }
            if seg.tombstones > 0 {
                key.push_str(&cache::file_sha(
                    &self.dir,
                    &self.manifest,
                    seg,
                    trove_bundle::TOMBSTONES,
                )?);
            }
            key.push('\n');
        }
        let path = dir.join(format!(
            "refs-v1-{}.parquet",
            &trove_base::util::sha256_hex(key.as_bytes())[..32]
        ));
        let conn = self.conn()?;
        let view = |p: &Path| {
            conn.execute_batch(&format!(
                "CREATE OR REPLACE VIEW refs AS SELECT * FROM read_parquet({})",
                lit(&p.to_string_lossy())
            ))
        };
        // A file another handle or process puts in place is whole or absent, and once there it is
        // never replaced (below); one that does not read (damaged on disk) is written again.
        if path.is_file() {
            // Marked used before the view reads it: a pruning process then leaves it.
            cache::touch(&path);
            if view(&path).is_ok() {
                return Ok(path);
            }
            let _ = std::fs::remove_file(&path);
        }
        cache::prune_unused(&dir);
        let io = |e: std::io::Error| Error::failed(trove_base::error::io_kind(&e), e.to_string());
        std::fs::create_dir_all(&dir).map_err(io)?;
        let tmp = cache::tmp_path(&path);
        // Resolved on a connection of its own, never on one a user's statements may have changed
        // (`trove sql`, `/sql`): the file serves every later process.
        let fresh = open_duckdb(&self.dir, &self.manifest)?;
        let written = fresh
            .execute_batch(&format!(
                "COPY (SELECT * FROM refs) TO {} (FORMAT parquet, COMPRESSION zstd)",
                lit(&tmp.to_string_lossy())
            ))
            .map_err(Error::from)
            .and_then(|()| {
                // Put in place only where none is: two handles of one server (or two processes)
                // that resolve the same key at once write different bytes (DuckDB's COPY does not
                // keep row order), and DuckDB reads a file in several opens within one query —
                // replacing the file between them read one copy at the other's offsets
                // ("TProtocolException: Invalid data"). A hard link never replaces; the loser
                // uses the winner's file. Where links cannot be made, a rename as before.
                match std::fs::hard_link(&tmp, &path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                    Err(_) if path.is_file() => Ok(()),
                    Err(_) => std::fs::rename(&tmp, &path).map_err(io),
                }
            });
        let _ = std::fs::remove_file(&tmp);
        written?;
        cache::touch(&path);
        view(&path)?;
        Ok(path)
    }

    /// The DuckDB connection, with one view per table (opened on first use).
    pub fn conn(&self) -> Result<&duckdb::Connection> {
        loaded(&self.conn, || open_duckdb(&self.dir, &self.manifest))
    }

    /// The embedder that made this bundle, when this build can run it (built once per bundle: a
    /// local model is loaded on first use).
    pub fn embedder(&self) -> Result<QueryModel> {
        if let Some(e) = self.embedder.get() {
            return Ok(e.clone());
        }
        let e = &self.manifest.embedder;
        let model = if e.backend == "hash" {
            let ours = HashEmbedder::new(e.dim, self.manifest.bm25.max_token_len);
            (ours.model() == e.model && ours.fingerprint() == e.fingerprint)
                .then_some(QueryModel::Hash(ours))
                .ok_or_else(|| "its hash embedder differs from this trove's".to_string())
        } else {
            trove_embed::for_manifest(&self.manifest).map(|m| QueryModel::Model(Arc::from(m)))
        };
        let model = model.map_err(|why| {
            Error::bundle(
                &self.dir,
                format!(
                    "made with embedder {} {} (dim {}): {why}; query with --mode bm25, or re-index",
                    e.backend, e.model, e.dim
                ),
            )
        })?;
        Ok(self.embedder.get_or_init(|| model).clone())
    }

    /// Uses the embedder `other` has built (a bundle opened again, e.g. one handle per thread of
    /// a server: a local model is loaded once, not per handle). Nothing when `other` has none.
    pub fn share_embedder(&self, other: &Bundle) {
        if let Some(e) = other.embedder.get() {
            let _ = self.embedder.set(e.clone());
        }
    }

    /// `WHERE` conditions on `chunks` (alias `c`) for the filters.
    fn filter_sql(o: &QueryOptions) -> String {
        let mut conds = vec!["TRUE".to_string()];
        let list = |v: &[String]| v.iter().map(|s| lit(s)).collect::<Vec<_>>().join(", ");
        if !o.langs.is_empty() {
            conds.push(format!("c.language IN ({})", list(&o.langs)));
        }
        if !o.types.is_empty() {
            conds.push(format!("c.source_type IN ({})", list(&o.types)));
        }
        if !o.kinds.is_empty() {
            conds.push(format!("c.kind IN ({})", list(&o.kinds)));
        }
        if let Some(g) = &o.path {
            // Checked before a search (`check_filters`); a glob that still fails matches nothing.
            let any = expand_glob(g)
                .unwrap_or_default()
                .iter()
                .map(|p| format!("regexp_full_match(c.path, {})", lit(&glob_regex(p))))
                .collect::<Vec<_>>();
            conds.push(if any.is_empty() {
                "FALSE".to_string()
            } else {
                format!("({})", any.join(" OR "))
            });
        }
        conds.join(" AND ")
    }

    fn has_filters(o: &QueryOptions) -> bool {
        !(o.langs.is_empty() && o.types.is_empty() && o.kinds.is_empty() && o.path.is_none())
    }

    /// The chunk kinds this bundle's chunks have (function, method, section, ...), sorted.
    pub fn kinds(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn()?
            .prepare("SELECT DISTINCT kind FROM chunks ORDER BY kind")?;
        let kinds = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<std::result::Result<_, _>>()?;
        Ok(kinds)
    }

    /// The ids of the chunks that pass the filters, `None` without filters.
    fn allowed(&self, o: &QueryOptions) -> Result<Option<FxHashSet<i64>>> {
        if !Self::has_filters(o) {
            return Ok(None);
        }
        let sql = format!(
            "SELECT chunk_id FROM chunks c WHERE {}",
            Self::filter_sql(o)
        );
        // As Arrow batches: a filter that keeps most of a 1M-chunk bundle returns 1M ids,
        // which row-by-row conversion takes ≈200 ms to deliver.
        let mut stmt = self.conn()?.prepare(&sql)?;
        let mut ids = FxHashSet::default();
        for batch in stmt.query_arrow([])? {
            let col = batch
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .ok_or_else(|| Error::bundle(&self.dir, "chunk_id is not BIGINT"))?;
            ids.extend(col.values().iter().copied());
        }
        Ok(Some(ids))
    }

    /// (term, weight × idf) for the query terms this bundle knows: document frequencies from
    /// the `terms` table of a bundle of one segment, else counted over the live postings.
    pub fn idf(&self, terms: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
        match self.terms_path() {
            Some(p) => idf_weights(&Df::Terms(p), self.manifest.bm25.n_docs, terms),
            None => self.idf_indexed(terms),
        }
    }

    /// [`Bundle::idf`] with the document frequencies from the inverted indexes (the live
    /// postings per term, which `terms.df` counts), for a query that loads them anyway.
    fn idf_indexed(&self, terms: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
        idf_weights(
            &Df::Live(self.live_postings()?),
            self.manifest.bm25.n_docs,
            terms,
        )
    }

    /// The prefixes of `terms`' words that the bundle holds ([`prefix_expansions`]) as BM25 terms:
    /// each weighted by its idf, capped at its word's. Every document frequency is looked up once.
    fn prefix_terms(&self, terms: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
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
    fn rows(&self, ids: &[i64]) -> Result<FxHashMap<i64, Hit>> {
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
    fn fill_content(&self, hits: &mut [Hit]) -> Result<()> {
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
    fn definition_chunks(&self, query: &str) -> Result<Vec<i64>> {
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
    fn effective(&self, o: &QueryOptions) -> (f64, Mode) {
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
        let (bm25, vector) = std::thread::scope(|scope| -> Result<_> {
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
                        .map_err(|_| Error::internal("opening DuckDB panicked"))??;
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
                self.idf(&terms)?
            } else {
                self.idf_indexed(&terms)?
            };
            let mut expanded = idf.clone();
            if mode == Mode::Bm25 || (mode == Mode::Hybrid && !with_model) {
                expanded.extend(self.prefix_terms(&terms)?);
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
                let vector = match &embedder {
                    Some(e) => self.vector(e, query, &idf, allowed.as_ref(), ARM_CANDIDATES)?,
                    None => Vec::new(),
                };
                let bm25 = match bm25 {
                    Some(h) => {
                        let (top, segment) = h
                            .join()
                            .map_err(|_| Error::internal("the BM25 arm panicked"))??;
                        self.found_in(segment);
                        top
                    }
                    None => Vec::new(),
                };
                Ok((bm25, vector))
            })?;
            join()?;
            Ok((bm25, vector))
        })?;
        let mut ids: Vec<i64> = bm25.iter().chain(&vector).map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut rows = self.rows(&ids)?;
        // Code signals on each arm's own scores, before fusion: names that match the query up,
        // tests and docs below code with the same score.
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
            Mode::Hybrid => match o.fusion {
                Fusion::Rrf => rrf(&[(&bm25, 1.0), (&vector, wv)]),
                Fusion::Convex => convex(&bm25, &vector, wv),
            },
        };
        // Passage evidence joined with its file's: the pieces of the file the query is about rank
        // together, above stray pieces of files that match one word.
        let fused = file_context(fused, FILE_CONTEXT, |id| {
            rows.get(&id).map(|h| h.path.as_str())
        });
        // A query that is a name (`processPayment`, `UserService.processPayment`) puts the chunks
        // defining it first: the symbols table knows where it is defined, whatever the text says.
        let defs = self.definition_chunks(query)?;
        // The chunks defining the name asked for are widened only to their own definition (a piece
        // of it), never to a function around them.
        let named: FxHashSet<i64> = defs.iter().copied().collect();
        let fused = if defs.is_empty() {
            fused
        } else {
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
            out
        };
        let ranked = fused.into_iter().filter_map(|(id, score)| {
            let mut h = rows.remove(&id)?;
            h.score = score;
            Some(h)
        });
        // Late interaction reorders the best `o.rerank` hits (hybrid or vector) of a model
        // embedder that has word-piece vectors; the chunks defining a name the query is stay first.
        let model = match (&embedder, mode) {
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
        let (mut hits, widened) = self.whole_functions(ranked, o, &named, wanted)?;
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
        if !o.content {
            // Late interaction read the reordered hits' chunk texts; they were not asked for.
            hits.iter_mut().for_each(|h| h.content = None);
        } else {
            // A widened hit's text is its function's, read once per file (where it cannot be had,
            // `fill_content` below gives it the piece's); the other hits' is their chunk's.
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
            self.fill_content(&mut hits)?;
        }
        Ok(hits)
    }

    /// Reorders `hits` (best first) by late interaction and says where each came from (the new
    /// order as old positions). ColBERT's MaxSim (Khattab & Zaharia 2020) with the embedder's
    /// own word-piece vectors, untrained for it: each query word piece (no stop word, no
    /// punctuation) is matched with its most similar piece of the chunk's path and text, and the
    /// similarities are averaged. The new order is by (1 − s)·hybrid + s·MaxSim, each min-max
    /// scaled over `hits`, s = [`RERANK_SHARE`] (the old score: the hybrid's, or the vector arm's
    /// cosine in vector mode); the new scores span the old ones' range, so hits
    /// after these and other bundles' merge as before.
    fn late_interaction(
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
    /// most [`WHOLE_FUNCTION_BYTES`] long (the row cache knows which, see [`rows`]), and a later
    /// hit inside a function already listed is dropped (the pieces of one function are one
    /// result). Also returns the positions of the hits that were widened (their content is the
    /// function's text, not the chunk's). With `--kind`, a hit is widened only to a definition of
    /// a kind asked for; a chunk in `named` (the definition of a name the query is) only to its own
    /// definition, never to a function around it.
    fn whole_functions(
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

/// The parts of `query` when it is a name or a dotted/scoped path of up to four identifiers
/// (`processPayment`, `UserService.processPayment`, `a::b`, `Outer > inner`); `None` for text.
fn name_parts(query: &str) -> Option<Vec<&str>> {
    let q = query.trim();
    let parts: Vec<&str> = q
        .split(['.', ':', '>', ' '])
        .filter(|p| !p.is_empty())
        .collect();
    let ident = |p: &str| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && p.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    let joined_ok = q
        .chars()
        .all(|c| c.is_alphanumeric() || "_$.:> ".contains(c));
    if parts.is_empty() || parts.len() > 4 || !joined_ok || !parts.iter().all(|p| ident(p)) {
        return None;
    }
    // A multi-word query is text, not a name (`retry backoff`), unless joined by `>`.
    if q.contains(' ') && !q.contains('>') {
        return None;
    }
    Some(parts)
}

/// BM25's idf of a term in `df` of `n` chunks (as the `bm25_search` SQL macro computes it).
fn idf(n: u64, df: u64) -> f64 {
    let (n, d) = (n as f64, df as f64);
    (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
}

/// Where a bundle's document frequencies come from.
#[derive(Clone)]
enum Df {
    /// The `terms` table of a bundle of one segment: point reads.
    Terms(std::path::PathBuf),
    /// The live postings of every segment.
    Live(LivePostings),
}

/// (term, weight × idf) for the `terms` a bundle (of `n_docs` chunks) knows.
fn idf_weights(df: &Df, n_docs: u64, terms: &[(String, f64)]) -> Result<Vec<(String, f64)>> {
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

/// A bundle's embedder, as the query side uses it.
#[derive(Clone)]
pub enum QueryModel {
    /// The hash embedder: the query's terms are weighted by the bundle's idf.
    Hash(HashEmbedder),
    /// A model backend (`local`, `openai`): the query text is embedded as it is.
    Model(Arc<dyn Embedder>),
}

impl QueryModel {
    /// The query vector, `None` when there is nothing to rank by (no known term for `hash`).
    pub fn query_vector(&self, query: &str, idf: &[(String, f64)]) -> Result<Option<Vec<f32>>> {
        let q = match self {
            // The hash embedder has no notion of rare words; weighting the query's features by
            // the bundle's own idf turns its cosine into a tf-idf cosine.
            QueryModel::Hash(h) => h.embed_weighted(idf),
            QueryModel::Model(m) => {
                if query.trim().is_empty() {
                    return Ok(None);
                }
                let mut v = m.embed_query(query)?;
                if v.len() != m.dim() || v.iter().any(|x| !x.is_finite()) {
                    return Err(Error::remote(format!(
                        "embedder {} returned a bad query vector (dimension {}, expected {})",
                        m.backend(),
                        v.len(),
                        m.dim()
                    )));
                }
                trove_embed::normalize(&mut v);
                v
            }
        };
        Ok(q.iter().any(|x| *x != 0.0).then_some(q))
    }

    /// Vector hits below this cosine are dropped: hash-bucket collisions are noise; a model's
    /// similarities are all evidence (RRF only uses their order).
    fn min_cosine(&self) -> f32 {
        match self {
            QueryModel::Hash(_) => MIN_COSINE,
            QueryModel::Model(_) => f32::MIN,
        }
    }
}

/// Query text → the vector the vector arm ranks by, embedded with the bundle's own embedder.
/// Holds no connection, so SQL functions can share it.
#[derive(Clone)]
pub struct QueryEmbedder {
    /// The bundle's document frequencies.
    terms: Df,
    n_docs: u64,
    max_len: usize,
    embedder: QueryModel,
}

impl QueryEmbedder {
    /// The query vector of `text`; `None` when there is nothing to rank by.
    pub fn embed(&self, text: &str) -> Result<Option<Vec<f32>>> {
        let idf = match &self.embedder {
            QueryModel::Hash(_) => {
                idf_weights(&self.terms, self.n_docs, &query_terms(text, self.max_len))?
            }
            QueryModel::Model(_) => Vec::new(),
        };
        self.embedder.query_vector(text, &idf)
    }
}

/// The value in `cell`, loaded by `load` on first use (a failed load leaves the cell empty).
fn loaded<T>(cell: &std::sync::OnceLock<T>, load: impl FnOnce() -> Result<T>) -> Result<&T> {
    if let Some(v) = cell.get() {
        return Ok(v);
    }
    let v = load()?;
    Ok(cell.get_or_init(|| v))
}

/// A DuckDB connection with one view per table of the bundle `dir`.
fn open_duckdb(dir: &Path, manifest: &Manifest) -> Result<duckdb::Connection> {
    let conn = duckdb::Connection::open_in_memory()?;
    // No download at run time: a function of an extension not compiled in (`current_date` needs
    // icu) fails with DuckDB's message instead of reaching for extensions.duckdb.org.
    conn.execute_batch("SET autoinstall_known_extensions = false;")?;
    let sql = trove_bundle::views_sql(&manifest.segments, |rel| {
        lit(&dir.join(rel).to_string_lossy())
    });
    conn.execute_batch(&sql)?;
    Ok(conn)
}

/// The ranking multiplier of a chunk: symbol-path matches up, tests and docs down.
fn signal(h: &Hit, terms: &FxHashSet<&str>) -> f64 {
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

/// Checks a `--path` glob (see [`expand_glob`]): what DuckDB would quietly match nothing with is
/// an error.
pub fn check_glob(glob: &str) -> Result<()> {
    expand_glob(glob).map(|_| ())
}

/// At most this many patterns from one `--path` glob's `{a,b}` alternatives.
const MAX_GLOB_PATTERNS: usize = 256;

/// At most this many `{...}` groups in one `--path` glob. Expansion recurses once per group (nested
/// or one after another), so this bounds its stack: a glob from an HTTP or MCP client must not
/// be able to overflow a worker's stack, which aborts the whole server. Nine groups of two
/// alternatives already pass [`MAX_GLOB_PATTERNS`].
const MAX_GLOB_GROUPS: usize = 64;

/// A `--path` glob as the GLOB patterns it stands for: `*` (also across `/`), `?`,
/// `[...]`, `[!...]` and `\` (the next character literally) as DuckDB has them, and `{a,b}`
/// alternatives (nested too) as in `trove index --include`, expanded to one pattern each. An
/// empty glob, an unclosed `[` or `{`, a `}` with no `{`, a reversed range (`[z-a]`) and a
/// trailing `\` are errors: DuckDB would match nothing.
pub fn expand_glob(glob: &str) -> Result<Vec<String>> {
    let g = Glob {
        text: glob,
        c: glob.chars().collect(),
    };
    if glob.is_empty() {
        return Err(g.bad("it is empty".into()));
    }
    if glob.contains('\0') {
        return Err(g.bad("it contains a NUL character".into()));
    }
    // Paths in a bundle are relative to the repository root: `./` before one is the same path,
    // a `/` before one matches nothing.
    let rel = glob.trim_start_matches("./");
    if rel.starts_with('/') {
        return Err(g.bad(
            "paths in a bundle are relative to the repository root (write src/*.py, not /src/*.py)"
                .into(),
        ));
    }
    // Parts are what lies between slashes only outside `[...]` and escapes: such globs are
    // taken as written.
    let plain_parts = !rel.contains(['[', '\\']);
    if plain_parts && rel.split('/').any(|part| part == "..") {
        return Err(g.bad(
            "paths in a bundle are relative to the repository root and never hold `..` (write \
             the path from the root: src/*.py)"
                .into(),
        ));
    }
    // `a//b` and `a/./b` are `a/b`, as a shell has them.
    let rel: String = if plain_parts {
        rel.split('/')
            .enumerate()
            .filter(|(i, part)| *i == 0 || (!part.is_empty() && *part != "."))
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join("/")
    } else {
        rel.to_string()
    };
    let rel = rel.as_str();
    // A path with no glob characters is that file or what lies under that folder (`src/http`:
    // not `src/https`, and not nothing), as a user and an agent mean it.
    if !rel.contains(['*', '?', '[', '{', '}', '\\']) {
        let p = rel.trim_end_matches('/');
        if p.is_empty() || p == "." {
            return Ok(vec!["*".to_string()]);
        }
        return Ok(vec![p.to_string(), format!("{p}/*")]);
    }
    let g = Glob {
        text: glob,
        c: rel.chars().collect(),
    };
    let mut groups = 0;
    let mut i = 0;
    while i < g.c.len() {
        match g.c[i] {
            '\\' => i += 1,
            '[' => i = g.class_end(i)?,
            '{' => groups += 1,
            _ => {}
        }
        i += 1;
    }
    if groups > MAX_GLOB_GROUPS {
        return Err(g.bad(format!(
            "it has {groups} '{{' groups, more than {MAX_GLOB_GROUPS} (to match a literal '{{' \
             write \\{{)"
        )));
    }
    let mut out = Vec::new();
    g.expand(0, g.c.len(), String::new(), &mut out)?;
    out.dedup();
    Ok(out)
}

/// One pattern of [`expand_glob`] as the regular expression (RE2, as DuckDB's
/// `regexp_full_match` reads it) that matches the same paths character by character: DuckDB's
/// `GLOB` compares bytes, so `?` and `[ü]` never matched a character of two bytes.
pub fn glob_regex(pattern: &str) -> String {
    let c: Vec<char> = pattern.chars().collect();
    let mut re = String::from("(?s)");
    let lit = |ch: char| regex::escape(ch.encode_utf8(&mut [0; 4]));
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' if i + 1 < c.len() => {
                re.push_str(&lit(c[i + 1]));
                i += 2;
            }
            '*' => {
                re.push_str(".*");
                i += 1;
            }
            '?' => {
                re.push('.');
                i += 1;
            }
            '[' => {
                // As `Glob::class_end` reads it: `!` negates, a `]` first is a member.
                let mut j = i + 1;
                re.push('[');
                if c.get(j) == Some(&'!') {
                    re.push('^');
                    j += 1;
                }
                let first = j;
                while j < c.len() && (c[j] != ']' || j == first) {
                    let ch = c[j];
                    let range = ch == '-' && j > first && c.get(j + 1).is_some_and(|&n| n != ']');
                    if range {
                        re.push('-');
                    } else if matches!(ch, '\\' | ']' | '[' | '^' | '-') {
                        re.push('\\');
                        re.push(ch);
                    } else {
                        re.push(ch);
                    }
                    j += 1;
                }
                re.push(']');
                i = j + 1;
            }
            ch => {
                re.push_str(&lit(ch));
                i += 1;
            }
        }
    }
    re
}

/// A `--path` glob being read by [`expand_glob`].
struct Glob<'a> {
    text: &'a str,
    c: Vec<char>,
}

impl Glob<'_> {
    fn bad(&self, why: String) -> Error {
        Error::bad_input(format!("invalid path glob {:?}: {why}", self.text))
    }

    /// The index of the `]` that closes the `[` at `i`, its ranges checked.
    fn class_end(&self, i: usize) -> Result<usize> {
        let c = &self.c;
        let mut j = i + 1;
        if c.get(j) == Some(&'!') {
            j += 1;
        }
        // A `]` right after the opening is a member of the class, not its end.
        let first = j;
        if c.get(j) == Some(&']') {
            j += 1;
        }
        let Some(k) = c[j..].iter().position(|&x| x == ']') else {
            return Err(self.bad(format!(
                "the '[' at position {} is never closed (to match a literal '[' write [[])",
                i + 1
            )));
        };
        let members = &c[first..j + k];
        for w in 0..members.len().saturating_sub(2) {
            if members[w + 1] == '-' && members[w] > members[w + 2] {
                return Err(self.bad(format!(
                    "the range {}-{} at position {} is reversed",
                    members[w],
                    members[w + 2],
                    first + w + 1
                )));
            }
        }
        Ok(j + k)
    }

    /// The index of the `}` that closes the `{` at `i`, and the commas at its level.
    fn brace_end(&self, i: usize) -> Result<(usize, Vec<usize>)> {
        let (mut depth, mut commas, mut j) = (0usize, Vec::new(), i);
        while j < self.c.len() {
            match self.c[j] {
                '\\' => j += 1,
                '[' => j = self.class_end(j)?,
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok((j, commas));
                    }
                }
                ',' if depth == 1 => commas.push(j),
                _ => {}
            }
            j += 1;
        }
        Err(self.bad(format!(
            "the '{{' at position {} is never closed (to match a literal '{{' write \\{{)",
            i + 1
        )))
    }

    /// Expands `c[from..to]` after `prefix` into `out`.
    fn expand(&self, from: usize, to: usize, prefix: String, out: &mut Vec<String>) -> Result<()> {
        let c = &self.c;
        let mut p = prefix;
        let mut i = from;
        while i < to {
            match c[i] {
                '\\' => {
                    if i + 1 >= to {
                        return Err(self.bad("it ends in an escape '\\'".into()));
                    }
                    p.push('\\');
                    p.push(c[i + 1]);
                    i += 2;
                }
                '[' => {
                    let end = self.class_end(i)?;
                    p.extend(&c[i..=end]);
                    i = end + 1;
                }
                '{' => {
                    let (end, commas) = self.brace_end(i)?;
                    let starts = std::iter::once(i + 1).chain(commas.iter().map(|&k| k + 1));
                    let ends = commas.iter().copied().chain(std::iter::once(end));
                    for (s, e) in starts.zip(ends) {
                        // Each alternative, then the rest of the glob after the braces.
                        let mut heads = Vec::new();
                        self.expand(s, e, p.clone(), &mut heads)?;
                        for h in heads {
                            self.expand(end + 1, to, h, out)?;
                            if out.len() > MAX_GLOB_PATTERNS {
                                return Err(self.bad(format!(
                                    "its {{...}} alternatives make more than {MAX_GLOB_PATTERNS} \
                                     patterns"
                                )));
                            }
                        }
                    }
                    return Ok(());
                }
                '}' => {
                    return Err(self.bad(format!("the '}}' at position {} has no '{{'", i + 1)));
                }
                ch => {
                    p.push(ch);
                    i += 1;
                }
            }
        }
        out.push(p);
        Ok(())
    }
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
fn line_range(text: &str, start: i64, end: i64) -> String {
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

/// The BM25 terms of a query with their weights: the index tokenizer, deduplicated, question words
/// dropped (unless nothing else is left), whole compound identifiers weighted up.
pub fn query_terms(query: &str, max_len: usize) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut seen = FxHashSet::default();
    for word in query.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let toks = tokenizer::tokens(word, max_len);
        for (i, t) in toks.iter().enumerate() {
            if seen.insert(t.clone()) {
                let w = if i == 0 && toks.len() > 1 {
                    COMPOUND_WEIGHT
                } else {
                    1.0
                };
                out.push((t.clone(), w));
            }
        }
    }
    let content: Vec<(String, f64)> = out
        .iter()
        .filter(|(t, _)| !STOPWORDS.contains(&t.as_str()))
        .cloned()
        .collect();
    if content.is_empty() { out } else { content }
}

/// The prefixes of the query's words that the bundle holds (`exists`), as extra BM25 terms: for
/// each word of [`PREFIX_MIN_WORD`] letters or more (not a question word), every prefix of
/// [`PREFIX_MIN`] letters up to one letter short of the word that is not itself a query term.
/// Each is (prefix, weight, its document frequency `df` gives, the word): its weight is the
/// word's × [`PREFIX_WEIGHT`], and the caller caps its idf at the word's, so a rare truncation
/// never outweighs the word.
///
/// Code shortens the words a question spells out: `request` is `req`, `configuration`
/// `config`, `parameters` `param`, `characters` `char`, `length` `len`; and a question's
/// inflections (`routes`, `matching`, `formatted`) reach the code's stems (`route`, `match`,
/// `format`). Only the query side changes: the index and its statistics stay as they are.
fn prefix_expansions(
    terms: &[(String, f64)],
    df: impl Fn(&str) -> u64,
) -> Vec<(String, f64, u64, &str)> {
    let own: FxHashSet<&str> = terms.iter().map(|(t, _)| t.as_str()).collect();
    let mut out: Vec<(String, f64, u64, &str)> = Vec::new();
    for (word, w) in terms {
        let letters = word.chars().count();
        if letters < PREFIX_MIN_WORD
            || STOPWORDS.contains(&word.as_str())
            || !word.chars().all(char::is_alphabetic)
        {
            continue;
        }
        for (end, _) in word
            .char_indices()
            .skip(PREFIX_MIN)
            .take(letters - PREFIX_MIN)
        {
            let p = &word[..end];
            if STOPWORDS.contains(&p) || own.contains(p) || out.iter().any(|(q, ..)| q == p) {
                continue;
            }
            let d = df(p);
            if d > 0 {
                out.push((p.to_string(), w * PREFIX_WEIGHT, d, word.as_str()));
            }
        }
    }
    out
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
    fn globs_with_unclosed_classes_are_refused() {
        for ok in ["src/*.rs", "[a-z]*", "[!x]y", "[]]", "a[[]b", "*"] {
            assert!(check_glob(ok).is_ok(), "{ok}");
        }
        for bad in [
            "[", "src/[a-z", "[!", "a[]", "", "**/{a", "a}", "[z-a]", "x\\", "{a,{b}", "{[}",
            "{a,b}}",
        ] {
            assert!(check_glob(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn glob_patterns_become_character_regexes() {
        let m = |glob: &str, path: &str| {
            regex::Regex::new(&format!("^(?:{})$", glob_regex(glob)))
                .unwrap()
                .is_match(path)
        };
        assert!(m("ünï/?.py", "ünï/ç.py"));
        assert!(m("[ü]nï/*", "ünï/ç.py"));
        assert!(!m("ünï/?.py", "ünï/çç.py"));
        assert!(m("src/*.rs", "src/a/b.rs"));
        assert!(m("a[!b]c", "axc") && !m("a[!b]c", "abc"));
        assert!(m("[]x]", "]") && m("[a-c]", "b") && m("[a-]", "-"));
        assert!(m("a\\*b", "a*b") && !m("a\\*b", "axb"));
        assert!(m("f(1).py", "f(1).py") && !m("f.py", "fxpy"));
    }

    #[test]
    fn globs_expand_their_alternatives() {
        let e = |g: &str| expand_glob(g).unwrap();
        assert_eq!(e("src/*.rs"), ["src/*.rs"]);
        assert_eq!(e("./src/*.rs"), ["src/*.rs"]);
        // A plain path: the file, or what lies under the folder.
        assert_eq!(e("src/http"), ["src/http", "src/http/*"]);
        assert_eq!(e("./src/http/"), ["src/http", "src/http/*"]);
        assert_eq!(e("."), ["*"]);
        assert!(expand_glob("/src").is_err() && expand_glob("/src/*.py").is_err());
        // `..` leads out of the tree: refused; doubled slashes and `.` parts are one slash.
        for up in ["../billing", "src/../x", "src/..", "**/../*.py"] {
            let err = expand_glob(up).unwrap_err().to_string();
            assert!(err.contains("never hold `..`"), "{up}: {err}");
        }
        assert_eq!(
            e("billing//billing.py"),
            ["billing/billing.py", "billing/billing.py/*"]
        );
        assert_eq!(e("src/./lib//*.rs"), ["src/lib/*.rs"]);
        // A class may hold `/` and `.`: such a glob is taken as written.
        assert_eq!(e("src[/./]x"), ["src[/./]x"]);
        assert_eq!(e("**/*.{py,go}"), ["**/*.py", "**/*.go"]);
        assert_eq!(e("{a,b{c,d}}/x"), ["a/x", "bc/x", "bd/x"]);
        assert_eq!(e("{a,}x"), ["ax", "x"]);
        // Escaped and bracketed braces are literal; the escape stays for DuckDB.
        assert_eq!(e("a\\{b,c\\}"), ["a\\{b,c\\}"]);
        assert_eq!(e("[{]x"), ["[{]x"]);
        assert_eq!(e("{[,]a,b}"), ["[,]a", "b"]);
        assert_eq!(e("[a-z]{1,2}"), ["[a-z]1", "[a-z]2"]);
        assert!(expand_glob(&"{a,b}".repeat(9)).is_err());
        assert_eq!(expand_glob(&"{a,b}".repeat(8)).unwrap().len(), 256);
        // Deep or many groups are refused before expansion recurses into them: a glob from an
        // HTTP client must not overflow the stack (which aborts the server).
        let deep = format!("{}{}", "{".repeat(30_000), "}".repeat(30_000));
        assert!(
            expand_glob(&deep)
                .unwrap_err()
                .to_string()
                .contains("more than 64")
        );
        assert!(expand_glob(&"{a}".repeat(65)).is_err());
        assert_eq!(
            expand_glob(&"{a}".repeat(64)).unwrap(),
            vec!["a".repeat(64)]
        );
        assert_eq!(expand_glob(&"\\{".repeat(100)).unwrap().len(), 1);
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

    #[test]
    fn question_words_dropped_unless_alone() {
        let names = |q: &str| {
            query_terms(q, 64)
                .into_iter()
                .map(|(t, _)| t)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("How does the session get saved?"),
            ["session", "saved"]
        );
        assert_eq!(names("the"), ["the"]);
        assert_eq!(
            query_terms("processPayment", 64)[0],
            ("processpayment".to_string(), COMPOUND_WEIGHT)
        );
    }

    #[test]
    fn long_query_words_reach_the_prefixes_the_bundle_holds() {
        let held = [
            "req", "request", "config", "con", "conf", "par", "param", "rou", "route", "with",
        ];
        let terms = query_terms(
            "how is the request routed with its configuration parameters",
            64,
        );
        let got = prefix_expansions(&terms, |t| u64::from(held.contains(&t)));
        let got: Vec<(&str, f64, &str)> = got
            .iter()
            .map(|(p, w, _, o)| (p.as_str(), *w, *o))
            .collect();
        assert_eq!(
            got,
            [
                // `request` is a query term of its own: its prefix `req` only.
                ("req", PREFIX_WEIGHT, "request"),
                ("rou", PREFIX_WEIGHT, "routed"),
                ("route", PREFIX_WEIGHT, "routed"),
                ("con", PREFIX_WEIGHT, "configuration"),
                ("conf", PREFIX_WEIGHT, "configuration"),
                ("config", PREFIX_WEIGHT, "configuration"),
                ("par", PREFIX_WEIGHT, "parameters"),
                ("param", PREFIX_WEIGHT, "parameters"),
            ]
        );
        // Short words, question words, numbers and names with digits get none; a compound's
        // weight carries over.
        assert!(prefix_expansions(&query_terms("what is a path v2 12345", 64), |_| 1).is_empty());
        let max_retries = query_terms("maxRetries", 64);
        let compound = prefix_expansions(&max_retries, |t| u64::from(t == "maxr"));
        assert_eq!(compound[0].1, COMPOUND_WEIGHT * PREFIX_WEIGHT);
        // Letters, not bytes: `ünïcode` gives `ünï`, `ünïc`, `ünïco`, `ünïcod`.
        let unicode = query_terms("ünïcode", 64);
        let u = prefix_expansions(&unicode, |_| 1);
        assert_eq!(u.len(), 4);
        assert_eq!(u[0].0, "ünï");
    }
}
