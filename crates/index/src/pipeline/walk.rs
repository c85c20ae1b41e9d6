//! The walk of the indexed tree, with the files it ignored that git tracks put back.
use std::path::Path;

use super::git::subdir_of;
use crate::Result;
use crate::source::{self, Rules};

/// The walk of `root` ([`source::walk`]), and, in the repository `git` (with its work tree,
/// `root` and it canonical), the files it ignored that git tracks put back
/// ([`source::admit_tracked`]), the index read beside the walk.
pub(crate) fn walk_tree(
    root: &Path,
    rules: &Rules,
    opts: &source::WalkOptions,
    git: Option<(&git2::Repository, &Path)>,
) -> Result<source::WalkResult> {
    let git = git.filter(|_| rules.respects_gitignore());
    let workdir = git.map(|(_, w)| w);
    let index = workdir.and_then(read_index_paths);
    let excludes = git.and_then(|(r, _)| source::git_excludes_file(r));
    let mut walked = source::walk(root, rules, opts, excludes.as_deref())?;
    let Some(index) = index else {
        return Ok(walked);
    };
    let subdir = workdir.and_then(|w| subdir_of(root, w));
    source::admit_tracked(&mut walked, root, rules, opts, |ignored| {
        let tracked = index.join().unwrap_or_default();
        tracked_under(&tracked, subdir.as_deref(), ignored)
    });
    Ok(walked)
}

/// The files in the index of the repository whose work tree is `workdir` (tracked, or staged to
/// be; submodules are not files), repository-relative and sorted, read on a thread of its own so
/// that it costs the walk it runs beside nothing: [`source::admit_tracked`] needs them only when
/// the walk ignored something, and a 30,000-file index read after the walk took a one-file
/// `--since` run 20 ms.
fn read_index_paths(workdir: &Path) -> Option<std::thread::JoinHandle<Vec<String>>> {
    let workdir = workdir.to_path_buf();
    std::thread::Builder::new()
        .name("trove-git-index".into())
        .spawn(move || {
            let Ok(index) = git2::Repository::open(&workdir).and_then(|r| r.index()) else {
                return Vec::new();
            };
            let mut out: Vec<String> = index
                .iter()
                .filter(|e| e.mode != 0o160_000)
                .filter_map(|e| String::from_utf8(e.path).ok())
                .collect();
            // Sorted by byte for the binary searches: a case-insensitive repository
            // (core.ignorecase) keeps its index in another order. Conflicted paths appear once
            // per stage.
            out.sort_unstable();
            out.dedup();
            out
        })
        .ok()
}

/// The files of `tracked` (the index's paths, sorted) at or under `ignored` (paths relative to
/// the root at `subdir` of the work tree; folders end with `/`), relative to that root.
fn tracked_under(tracked: &[String], subdir: Option<&str>, ignored: &[&str]) -> Vec<String> {
    let prefix = subdir.map(|s| format!("{s}/")).unwrap_or_default();
    let mut out = Vec::new();
    for p in ignored {
        let full = format!("{prefix}{p}");
        if full.ends_with('/') {
            let from = tracked.partition_point(|t| t.as_str() < full.as_str());
            out.extend(
                tracked[from..]
                    .iter()
                    .take_while(|t| t.starts_with(&full))
                    .map(|t| t[prefix.len()..].to_string()),
            );
        } else if tracked.binary_search(&full).is_ok() {
            out.push((*p).to_string());
        }
    }
    out
}
