//! trove turns a source repository into a portable index bundle: Parquet files plus a manifest,
//! queryable with trove, DuckDB or any Parquet engine without the checkout.
//!
//! The pipeline (see `ARCHITECTURE.md`): [`source`] walks and filters the tree, [`lang`] detects the
//! language, [`chunk`] cuts files into chunks by syntax scope, [`extract`] tokenizes for BM25,
//! [`embed`] turns chunks into vectors, [`bundle`] writes and checks the Parquet bundle, and
//! [`pipeline`] joins the stages with bounded channels; [`query`] searches bundles (BM25 in SQL,
//! vectors over a cached matrix, fused by RRF).
#![warn(missing_docs)]

pub mod bundle;
pub mod chunk;
pub mod config;
pub mod embed;
pub mod error;
pub mod extract;
pub mod highlight;
#[cfg(feature = "openai")]
pub mod http;
pub mod lang;
pub mod pipeline;
pub mod precise;
#[cfg(feature = "engine")]
pub mod query;
pub mod record;
pub mod resolve;
pub mod source;
pub mod summarize;
pub mod util;

pub use error::{Error, Result};
