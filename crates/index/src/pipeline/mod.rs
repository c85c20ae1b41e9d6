//! Pipeline: joins the stages for `trove index`.
//!
//! ```text
//! walk (sorted paths) ─► feeder ─► [bounded] ─► N workers: read, classify, detect, chunk,
//!                                               tokenize, embed ─► [bounded] ─► writer (in path order)
//! ```
//! Input: [`IndexOptions`]. Output: a bundle at `opts.out` and an [`IndexSummary`]. Invariants: at
//! most [`WINDOW_FILES`] files are in flight or waiting to be written, whatever the repository size
//! (backpressure through a token channel), so memory is bounded; files reach the single writer in
//! path order, so `--threads 1` and `--threads N` write the same bytes; a per-file failure becomes a
//! `skipped` row, never an abort; the bundle is built in a temp directory beside the target and
//! swapped in whole, so a failed run leaves the previous bundle as it was.
//!
//! The files, by job: `run` (`run_index` from start to end), `setup` (checks, the stages loaded,
//! what is settled before building), `build_bundle` (one build: files written, then the manifest),
//! `writer_loop` (the feeder, the workers' threads and the in-order writer), `worker` (one file
//! into its rows), `route` (what is known of a file before it is read), `base_changes`
//! (tombstones and the unchanged end of an incremental run), `report` (the summary), `options`,
//! `progress`, `hooks` (fail points); `incremental` (the reuse plan), `git` and `worktree` (the
//! git plumbing it and the source stamp use), `walk` (the walk with git's tracked files);
//! `compact`, `merge` and `parse_only`.
mod base_changes;
mod build_bundle;
pub mod compact;
mod git;
mod hooks;
mod incremental;
mod merge;
mod options;
mod parse_only;
mod progress;
mod report;
mod route;
mod run;
mod setup;
mod timings;
mod walk;
mod worker;
mod worktree;
mod writer_loop;

pub use incremental::Since;
pub use merge::{MergeSummary, run_merge};
pub use options::IndexOptions;
pub use parse_only::{ParseOnlySummary, run_parse_only};
pub use progress::{Progress, stderr_is_tty};
pub use report::{IndexSummary, ScipSummary};
pub use run::run_index;
pub use timings::{StageTime, Timings};
pub use writer_loop::WINDOW_FILES;
