//! What a query asks for ([`QueryOptions`]: arms, fusion, filters, sizes) and what it answers
//! ([`Hit`]).
/// Hits (hybrid or vector) a model with word-piece vectors reorders by late interaction (see
/// `Bundle::late_interaction`), and the share of the new order that is late interaction's: on
/// the project's question set (scripts/eval/), 20 and 0.5 lift MRR@10 on half A, half B and the
/// dev set alike (10–20 hits and shares 0.35–0.75 all did, in hybrid mode).
pub const RERANK: usize = 20;

/// A piece of a split function or method stands for the whole definition in the results when the
/// definition is at most this many bytes (four times the default chunk budget of 1,800
/// non-whitespace characters: a function cut into two or three pieces, shown whole).
pub const WHOLE_FUNCTION_BYTES: i64 = 7200;

/// Fusion weight of a model embedder's vector arm (see [`default_vector_weight`]).
pub(crate) const MODEL_VECTOR_WEIGHT: f64 = 1.0;

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
