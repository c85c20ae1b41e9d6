//! trove as a library: the crates of the workspace under the module names the binary, the tests
//! and the benches use. Each layer is its own crate (ARCHITECTURE.md): [`bundle`] is the format
//! (`trove-bundle`), [`lang`] and [`chunk`] the languages (`trove-lang`), [`embed`] the embedders
//! (`trove-embed`), [`pipeline`] and its stages the indexing (`trove-index`), [`query`] the
//! engine (`trove-query`); [`util`] and [`error`] are `trove-base`.
#![warn(missing_docs)]

#[cfg(feature = "openai")]
pub use trove_base::http;
pub use trove_base::{Error, Result, error, sets, util};
pub use trove_bundle as bundle;
pub use trove_embed as embed;
pub use trove_index::{
    config, extract, pipeline, reader, record, resolve, scip_import, source, summarize, writer,
};
pub use trove_lang::{chunk, highlight, lang};
#[cfg(feature = "engine")]
pub use trove_query as query;
