//! What `trove index` was asked to do: [`IndexOptions`].
use std::path::PathBuf;

use super::incremental::Since;
use super::progress::Progress;
use crate::config::PipelineConfig;
use crate::source::WalkOptions;
use trove_bundle::Shard;

/// What `trove index` was asked to do.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// The tree to index.
    pub root: PathBuf,
    /// The bundle directory to write.
    pub out: PathBuf,
    /// Resolved pipeline config.
    pub config: PipelineConfig,
    /// Include/exclude globs.
    pub walk: WalkOptions,
    /// Worker threads (0 = one per core).
    pub threads: usize,
    /// Extra language directories (after the built-ins and the repo's `.trove/languages`).
    pub languages_dirs: Vec<PathBuf>,
    /// How progress is shown.
    pub progress: Progress,
    /// `--since`: build on the existing bundle from this git revision.
    pub since: Option<Since>,
    /// `--include-uncommitted`: with `since`, also index the work tree's uncommitted changes.
    pub include_uncommitted: bool,
    /// `--shard I/N`: index only this slice of the tree.
    pub shard: Option<Shard>,
    /// `--compact` (`Some(true)`) / `--no-compact` (`Some(false)`): whether an incremental run
    /// compacts the bundle afterwards; `None`: when the `[bundle]` bounds say so.
    pub compact: Option<bool>,
    /// `--scip FILE`: SCIP indexes whose facts the run takes ([`crate::scip_import`]).
    pub scip: Vec<PathBuf>,
    /// `--no-scip`: leave the root's `index.scip` unread.
    pub no_scip: bool,
}
