//! trove's indexing pipeline: walk a tree or take a git diff ([`source`]), detect each file's
//! language and chunk it (`trove_lang`), extract dependencies, imports, secrets and summaries
//! ([`extract`], [`summarize`]), resolve references ([`resolve`], SCIP import in [`scip_import`]),
//! embed (`trove_embed`) and write bundle segments ([`writer`]); incremental runs, merge and
//! compact ([`pipeline`]). The config of a run is [`config::PipelineConfig`].
//!
//! Indexing a tree into a bundle:
//!
//! ```
//! use trove_index::config::PipelineConfig;
//! use trove_index::pipeline::{IndexOptions, Progress, run_index};
//! use trove_index::source::WalkOptions;
//! let tree = tempfile::tempdir().unwrap();
//! std::fs::write(tree.path().join("lib.rs"), "/// Adds.\npub fn add(a: i32, b: i32) -> i32 { a + b }\n").unwrap();
//! let out = tempfile::tempdir().unwrap();
//! let opts = IndexOptions {
//!     root: tree.path().to_path_buf(),
//!     out: out.path().join("b.bundle"),
//!     config: PipelineConfig::defaults().unwrap(),
//!     walk: WalkOptions::default(),
//!     threads: 1,
//!     languages_dirs: Vec::new(),
//!     progress: Progress::Quiet,
//!     since: None,
//!     include_uncommitted: false,
//!     shard: None,
//!     compact: None,
//!     scip: Vec::new(),
//!     no_scip: false,
//! };
//! let (manifest, _summary) = run_index(&opts).unwrap();
//! assert_eq!(manifest.counts.files, 1);
//! assert_eq!(trove_bundle::read_manifest(&opts.out).unwrap().counts.chunks, manifest.counts.chunks);
//! ```
#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod extract;
pub mod pipeline;
pub mod reader;
pub mod record;
pub mod resolve;
pub mod scip_import;
pub mod source;
pub mod summarize;
pub mod writer;

pub use error::{Error, Result};
