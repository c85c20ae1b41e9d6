//! trove's indexing pipeline: walk a tree or take a git diff ([`source`]), detect each file's
//! language and chunk it (`trove_lang`), extract dependencies, imports, secrets and summaries
//! ([`extract`], [`summarize`]), resolve references ([`resolve`], SCIP import in [`precise`]),
//! embed (`trove_embed`) and write bundle segments ([`writer`]); incremental runs, merge and
//! compact ([`pipeline`]). The config of a run is [`config::PipelineConfig`].
#![warn(missing_docs)]

pub mod config;
pub mod extract;
pub mod pipeline;
pub mod precise;
pub mod reader;
pub mod record;
pub mod resolve;
pub mod source;
pub mod summarize;
pub mod writer;

pub use trove_base::{Error, Result};
