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
mod bm25;
mod error;
mod filters;
mod fusion;
mod handle;
pub mod inverted;
mod model;
mod options;
mod rerank;
pub mod rows;
mod search;
pub mod sql;
mod terms;
pub mod vectors;

pub use error::{Error, Result};
pub use fusion::{FILE_CONTEXT, RRF_K, convex, file_context, rrf};
pub use handle::Bundle;
pub use model::{QueryEmbedder, QueryModel};
pub use options::{
    Fusion, Hit, Mode, QueryOptions, RERANK, WHOLE_FUNCTION_BYTES, default_vector_weight,
};
pub use search::{ARM_CANDIDATES, search_all};
pub use terms::query_terms;
pub use trove_base::glob::{check_glob, expand_glob, glob_regex};
pub use trove_base::util::sql_lit as lit;
