//! The work tree as git sees it, read once per run: `git status` of the tracked files (started
//! while the walk runs), HEAD's files and the diff from the base bundle's commit (read on a thread
//! beside it), and the uncommitted changes and dirty flag they give.
use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};

use super::git::{DiffStats, diff_paths, refuse, tracked_paths, under_root};
use crate::Result;
use crate::source;
use trove_bundle as bundle;

/// The dirty flag of `info` and the uncommitted paths it comes from (read once: `--since`
/// planning needs the same list): git status of the tracked files, and what the walk found that
/// git does not track. Changes to the bundle `out` itself do not count.
pub(super) fn git_status(
    mut info: bundle::SourceInfo,
    repo: Option<(git2::Repository, PathBuf)>,
    status: Option<TrackedStatus>,
    out: &Path,
    walked: &source::WalkResult,
) -> (bundle::SourceInfo, Result<Worktree>) {
    let (Some((repo, workdir)), Some(status)) = (repo, status) else {
        return (info, Ok(Worktree::default()));
    };
    let uncommitted = worktree_changes(
        &repo,
        &workdir,
        info.subdir.as_deref().unwrap_or(""),
        &[out.to_path_buf()],
        walked,
        status,
    );
    info.dirty = uncommitted.as_ref().is_ok_and(|w| !w.changed.is_empty());
    (info, uncommitted)
}

/// The work tree as git sees it, read once per run (the dirty flag and `--since` planning both
/// need it).
#[derive(Debug, Default)]
pub(crate) struct Worktree {
    /// Root-relative paths with uncommitted changes, sorted.
    pub changed: Vec<String>,
    /// Root-relative paths of the files tracked at HEAD (none when HEAD is unborn).
    pub tracked: FxHashSet<String>,
    /// The diff from the base bundle's commit to HEAD, read while the walk ran.
    pub diff: Option<HeadDiff>,
    /// Root-relative paths git is told not to look at in the work tree (`git update-index
    /// --assume-unchanged`, `--skip-worktree`): git status says nothing of their edits.
    pub unwatched: FxHashSet<String>,
}

/// The paths a diff between two commits touches under the root (both sides of a rename), with
/// its counts, read off the walk's critical path.
#[derive(Debug)]
pub(crate) struct HeadDiff {
    /// The commit diffed from.
    pub(super) from: git2::Oid,
    /// The commit diffed to (HEAD then).
    pub(super) to: git2::Oid,
    /// The paths and counts, or why the diff failed.
    pub(super) paths: Result<(FxHashSet<String>, DiffStats)>,
}

/// The work tree's uncommitted changes: tracked files staged, modified or deleted (git status;
/// anything under `exclude` — the bundle itself — left out), and files the walk found (indexed
/// or skipped, not ignored) that HEAD does not track and git status did not list. Untracked files
/// are read off the walk rather than a second walk by git status, which would cost as much as
/// the rest of a one-file incremental run; untracked files inside directories trove skips whole
/// are not indexed, so they do not count. A file is in git's index but not in HEAD only when it
/// is staged, and then git status lists it: HEAD's tree (cheaper to list than the index is to
/// load) answers what is untracked.
pub(crate) fn worktree_changes(
    repo: &git2::Repository,
    workdir: &Path,
    prefix: &str,
    exclude: &[PathBuf],
    walked: &crate::source::WalkResult,
    mut status: TrackedStatus,
) -> Result<Worktree> {
    let head_read = status.head.take();
    let changed = match status.paths() {
        Some(paths) => paths,
        None => {
            let mut so = git2::StatusOptions::new();
            so.include_untracked(false)
                .include_ignored(false)
                .exclude_submodules(true);
            let statuses = repo
                .statuses(Some(&mut so))
                .map_err(|e| refuse(format!("git status failed: {}", e.message())))?;
            statuses
                .iter()
                .filter_map(|e| e.path().ok().map(str::to_string))
                .collect()
        }
    };
    // The bundle (and its temp siblings) relative to the work tree, as `/`-paths.
    let skip: Vec<String> = exclude
        .iter()
        .filter_map(|p| {
            let p = p.canonicalize().unwrap_or_else(|_| p.clone());
            p.strip_prefix(workdir)
                .ok()
                .map(trove_base::util::slash_path)
        })
        .collect();
    let mut out = Vec::new();
    for p in &changed {
        let p = p.as_str();
        let inside_skip = skip.iter().any(|s| {
            p == s
                || p.strip_prefix(s.as_str())
                    .is_some_and(|r| r.starts_with('/'))
                || temp_sibling(p, s)
        });
        if inside_skip {
            continue;
        }
        if let Some(r) = under_root(Path::new(p), prefix) {
            out.push(r);
        }
    }
    let (tracked, diff, unwatched) =
        match head_read.and_then(|h| h.join().ok()).and_then(|r| r.ok()) {
            Some(HeadRead {
                tracked,
                diff,
                unwatched,
            }) => (tracked?, diff, unwatched),
            None => (head_tracked(repo, prefix)?, None, unwatched(repo, prefix)),
        };
    let found = walked.files.iter().map(|c| c.rel.as_str()).chain(
        walked
            .skipped
            .iter()
            // A name that is not UTF-8 is shown lossily, so it never equals HEAD's: whether
            // git tracks it cannot be told, and trove does not index it either way.
            .filter(|k| {
                !matches!(
                    k.reason,
                    crate::source::SkipReason::Ignored | crate::source::SkipReason::NonUtf8Name
                ) && !k.path.ends_with('/')
            })
            .map(|k| k.path.as_str()),
    );
    out.extend(found.filter(|r| !tracked.contains(*r)).map(str::to_string));
    out.sort();
    out.dedup();
    Ok(Worktree {
        changed: out,
        tracked,
        diff,
        unwatched,
    })
}

/// The root-relative paths of the index entries under `prefix` that git does not check in the
/// work tree: marked assume-unchanged (the entry's "valid" flag) or skip-worktree (sparse
/// checkouts). None when the index cannot be read.
fn unwatched(repo: &git2::Repository, prefix: &str) -> FxHashSet<String> {
    const VALID: u16 = 0x8000;
    const SKIP_WORKTREE: u16 = 0x4000;
    let Ok(index) = repo.index() else {
        return FxHashSet::default();
    };
    index
        .iter()
        .filter(|e| e.flags & VALID != 0 || e.flags_extended & SKIP_WORKTREE != 0)
        .filter_map(|e| {
            let p = std::str::from_utf8(&e.path).ok()?;
            under_root(Path::new(p), prefix)
        })
        .collect()
}

/// Root-relative paths of the files tracked at HEAD (none when HEAD is unborn).
fn head_tracked(repo: &git2::Repository, prefix: &str) -> Result<FxHashSet<String>> {
    match repo.head().and_then(|h| h.peel_to_commit()) {
        Ok(head) => tracked_paths(repo, &head, prefix),
        Err(_) => Ok(FxHashSet::default()),
    }
}

/// What a thread reads from the repository while the walk runs (tree reads that need nothing
/// from the walk): HEAD's files, and the diff from the base bundle's commit to HEAD.
struct HeadRead {
    tracked: Result<FxHashSet<String>>,
    diff: Option<HeadDiff>,
    unwatched: FxHashSet<String>,
}

impl HeadRead {
    /// Reads HEAD's files under `prefix` in the repository at `workdir`, and the diff from
    /// `base` (a commit id) to HEAD when given.
    fn read(workdir: &Path, prefix: &str, base: Option<&str>) -> Result<HeadRead> {
        let repo = git2::Repository::open(workdir)
            .map_err(|e| refuse(format!("cannot open the repository: {}", e.message())))?;
        let Ok(head) = repo.head().and_then(|h| h.peel_to_commit()) else {
            // An unborn HEAD tracks nothing, and there is nothing to diff to.
            return Ok(HeadRead {
                tracked: Ok(FxHashSet::default()),
                diff: None,
                unwatched: FxHashSet::default(),
            });
        };
        let tracked = tracked_paths(&repo, &head, prefix);
        let from = base.and_then(|b| git2::Oid::from_str(b).ok());
        let diff = match from {
            Some(from) => repo.find_commit(from).ok().map(|f| {
                let mut changed = FxHashSet::default();
                let paths = diff_paths(&repo, &f, &head, prefix, &mut changed)
                    .map(|stats| (changed, stats));
                HeadDiff {
                    from,
                    to: head.id(),
                    paths,
                }
            }),
            None => None,
        };
        let unwatched = unwatched(&repo, prefix);
        Ok(HeadRead {
            tracked,
            diff,
            unwatched,
        })
    }
}

/// `git status` of the tracked files, started in the background so that it runs while trove
/// walks the tree: the git CLI's status trusts the index's stat cache and checks files on several
/// threads, about 4× faster than libgit2's on a tree of 36k files (75 vs 280 ms — most of a
/// one-file `--since` run). [`TrackedStatus::paths`] collects it; libgit2 answers when git is not
/// on PATH or fails.
/// Beside it, a thread reads HEAD's tree (its files, and the diff from the base bundle's commit).
pub(crate) struct TrackedStatus {
    child: Option<std::process::Child>,
    head: Option<std::thread::JoinHandle<Result<HeadRead>>>,
}

impl TrackedStatus {
    /// Starts `git status` in `workdir` (nothing when git cannot be started), and the thread that
    /// lists HEAD's files under `prefix` (the root within the work tree) and diffs `base` (the
    /// base bundle's commit, for a `--since` run) to HEAD.
    pub(crate) fn start(workdir: &Path, prefix: &str, base: Option<String>) -> Self {
        let child = std::process::Command::new("git")
            .arg("-C")
            .arg(workdir)
            .args([
                "--no-optional-locks",
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=no",
                "--no-renames",
                "--ignore-submodules=all",
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok();
        let (workdir, prefix) = (workdir.to_path_buf(), prefix.to_string());
        let head = std::thread::Builder::new()
            .name("trove-git".into())
            .spawn(move || HeadRead::read(&workdir, &prefix, base.as_deref()))
            .ok();
        TrackedStatus { child, head }
    }

    /// The tracked files with changes (staged, modified, deleted), repository-relative; `None`
    /// when git was not there or failed.
    fn paths(mut self) -> Option<Vec<String>> {
        let out = self.child.take()?.wait_with_output().ok()?;
        if !out.status.success() {
            return None;
        }
        // Records `XY PATH`, each ended by NUL (no renames, so one path a record).
        let mut paths = Vec::new();
        for rec in out.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let path = rec.get(3..)?;
            paths.push(String::from_utf8_lossy(path).into_owned());
        }
        Some(paths)
    }
}

impl Drop for TrackedStatus {
    /// A run that stops before it asks (a walk error) leaves no git process behind.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Whether `p` lies in a temp directory of the bundle `bundle` (`.NAME.tmp-PID/`, left by a run
/// that was killed).
fn temp_sibling(p: &str, bundle: &str) -> bool {
    let (parent, name) = match bundle.rsplit_once('/') {
        Some((a, b)) => (format!("{a}/"), b),
        None => (String::new(), bundle),
    };
    p.strip_prefix(&parent)
        .is_some_and(|r| r.starts_with(&format!(".{name}.tmp-")))
}
