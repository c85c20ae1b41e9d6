//! Extract stage: what the pipeline takes from a file besides its chunks — dependencies from
//! package manifests ([`deps`]), imports ([`imports`]), secrets ([`secrets`]) and summaries
//! ([`summary`]). The BM25 tokenizer is the bundle format's ([`trove_bundle::tokenizer`]),
//! re-exported here.

pub mod deps;
pub mod imports;
pub mod secrets;
pub mod summary;

pub use trove_bundle::tokenizer::*;
