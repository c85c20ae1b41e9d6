//! Git plumbing of a run: the source stamp of the indexed tree, and for `--since` the repository,
//! its revisions and history, the diff between two commits and the files a commit tracks.
//!
//! Every failure here that stops a run is a refusal ([`refuse`]): the bundle is left as it was.
use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};

use crate::source;
use crate::{Error, Result};
use trove_bundle as bundle;

/// A refusal: the run stops with this message (exit code 2) and the bundle is left as it was.
pub(super) fn refuse(msg: String) -> Error {
    Error::bad_input(msg)
}

/// Repo name, commit and branch of the tree at `root` (only the directory's name, never its
/// absolute path), with its repository and canonical work tree when it is in one.
pub(super) fn git_stamp(root: &Path) -> (bundle::SourceInfo, Option<(git2::Repository, PathBuf)>) {
    let mut info = bundle::SourceInfo {
        repo: root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Default::default()
    };
    let Ok(repo) = git2::Repository::discover(root) else {
        return (info, None);
    };
    let Some(workdir) = repo.workdir().and_then(|w| w.canonicalize().ok()) else {
        return (info, None);
    };
    info.subdir = subdir_of(root, &workdir);
    info.checkout = Some(source::checkout_settings(&repo));
    if let Ok(head) = repo.head() {
        info.commit = head.peel_to_commit().ok().map(|c| c.id().to_string());
        if head.is_branch() {
            info.branch = head.shorthand().ok().map(str::to_string);
        }
    }
    (info, Some((repo, workdir)))
}

/// Where `root` lies in the work tree `workdir` (both canonical), as a `/`-path; `None` at its top.
pub(super) fn subdir_of(root: &Path, workdir: &Path) -> Option<String> {
    root.strip_prefix(workdir)
        .ok()
        .map(trove_base::util::slash_path)
        .filter(|s| !s.is_empty())
}

/// Whether `commit` holds a `.gitattributes` in a folder above the root `prefix` (their
/// attributes apply under the root too).
pub(super) fn attributes_above(commit: &git2::Commit<'_>, prefix: &str) -> bool {
    if prefix.is_empty() {
        return false;
    }
    let Ok(tree) = commit.tree() else {
        // Unreadable: assume the worst.
        return true;
    };
    std::iter::once("")
        .chain(prefix.match_indices('/').map(|(i, _)| &prefix[..i]))
        .any(|f| {
            let p = if f.is_empty() {
                ".gitattributes".to_string()
            } else {
                format!("{f}/.gitattributes")
            };
            tree.get_path(Path::new(&p)).is_ok()
        })
}

/// What to do when the bundle's commit is not in HEAD's history.
pub(super) const REUSE_HINT: &str = "run without --since (the files whose content is unchanged are still \
     reused, found by content hash)";

const SHALLOW_HINT: &str = " — this clone is shallow: fetch more history (`git fetch --deepen=100`, \
     or `git fetch --unshallow`; in GitHub Actions, actions/checkout with `fetch-depth: 0`)";

pub(super) fn short(id: git2::Oid) -> String {
    id.to_string()[..12].to_string()
}

/// The repository holding `root` (refused when there is none, or no work tree).
pub(super) fn open_repo(root: &Path) -> Result<git2::Repository> {
    let repo = git2::Repository::discover(root).map_err(|_| {
        refuse(format!(
            "--since needs git history, and {} is not in a git repository (run without --since: \
             files whose content is unchanged are then reused by content hash)",
            root.display()
        ))
    })?;
    if repo.workdir().is_none() {
        return Err(refuse(
            "--since: the repository is bare (no work tree to index)".into(),
        ));
    }
    Ok(repo)
}

pub(super) fn head_id(repo: &git2::Repository) -> Result<git2::Oid> {
    repo.head()
        .and_then(|h| h.peel_to_commit())
        .map(|c| c.id())
        .map_err(|e| refuse(format!("cannot read HEAD: {}", e.message())))
}

/// Refuses unless commit `id` (given as `given`) is HEAD or one of its ancestors.
pub(super) fn check_ancestor(repo: &git2::Repository, given: &str, id: git2::Oid) -> Result<()> {
    let head = head_id(repo)?;
    if head == id {
        return Ok(());
    }
    match repo.graph_descendant_of(head, id) {
        Ok(true) => Ok(()),
        Ok(false) => Err(refuse(format!(
            "--since {given}: {} is not an ancestor of HEAD ({}): history was rewritten or another \
             branch is checked out; {REUSE_HINT}",
            short(id),
            short(head)
        ))),
        Err(e) => Err(refuse(format!(
            "--since {given}: cannot tell whether {} is an ancestor of HEAD: {}{}",
            short(id),
            e.message(),
            if repo.is_shallow() { SHALLOW_HINT } else { "" }
        ))),
    }
}

/// `rev` as a commit id, or a refusal that says why (unknown, or missing from a shallow clone).
pub(super) fn resolve(repo: &git2::Repository, rev: &str) -> Result<git2::Oid> {
    match repo.revparse_single(rev).and_then(|o| o.peel_to_commit()) {
        Ok(c) => Ok(c.id()),
        Err(e) if repo.is_shallow() => Err(refuse(format!(
            "--since {rev}: not found in this clone's history ({}){SHALLOW_HINT}",
            e.message()
        ))),
        Err(e) => Err(refuse(format!(
            "--since {rev}: unknown revision ({}); give a commit, branch or tag of this repository, \
             or `auto` for the commit stamped in the bundle",
            e.message()
        ))),
    }
}

/// What the diff between the two commits held.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct DiffStats {
    added: u64,
    modified: u64,
    deleted: u64,
    renamed: u64,
    type_changed: u64,
    pub(super) submodules: u64,
    /// Whether the diff touches a `.gitattributes` above the root, which the root-relative paths
    /// it adds cannot show (see `plan`).
    #[serde(skip)]
    pub(super) attributes_above: bool,
}

/// The repo path `p` relative to the indexed root (`prefix` = the root within the work tree), or
/// `None` when it lies outside it.
pub(super) fn under_root(p: &Path, prefix: &str) -> Option<String> {
    // Git's paths are `/`-separated everywhere; `\\` is a character of the name.
    let s = p.to_string_lossy().into_owned();
    if prefix.is_empty() {
        return Some(s);
    }
    s.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('/'))
        .map(str::to_string)
}

/// Adds every path the diff `from..to` touches (both sides of a rename) under the root to `out`.
pub(super) fn diff_paths(
    repo: &git2::Repository,
    from: &git2::Commit<'_>,
    to: &git2::Commit<'_>,
    prefix: &str,
    out: &mut FxHashSet<String>,
) -> Result<DiffStats> {
    let git = |e: git2::Error| refuse(format!("git diff failed: {}", e.message()));
    // No pathspec: libgit2 reads `[`, `*`, `?` in a directory name as wildcards; `under_root`
    // keeps what lies under the root instead.
    let mut o = git2::DiffOptions::new();
    let mut diff = repo
        .diff_tree_to_tree(
            Some(&from.tree().map_err(git)?),
            Some(&to.tree().map_err(git)?),
            Some(&mut o),
        )
        .map_err(git)?;
    let mut f = git2::DiffFindOptions::new();
    f.renames(true);
    diff.find_similar(Some(&mut f)).map_err(git)?;
    let mut st = DiffStats::default();
    for d in diff.deltas() {
        let gitlink = |m: git2::FileMode| m == git2::FileMode::Commit;
        if gitlink(d.old_file().mode()) || gitlink(d.new_file().mode()) {
            // A submodule's commit moved: its files are not this repository's (the walk lists it
            // as skipped).
            st.submodules += 1;
            continue;
        }
        match d.status() {
            git2::Delta::Added | git2::Delta::Copied => st.added += 1,
            git2::Delta::Deleted => st.deleted += 1,
            git2::Delta::Renamed => st.renamed += 1,
            git2::Delta::Typechange => st.type_changed += 1,
            _ => st.modified += 1,
        }
        for p in [d.old_file().path(), d.new_file().path()]
            .into_iter()
            .flatten()
        {
            if let Some(r) = under_root(p, prefix) {
                out.insert(r);
            }
            if !prefix.is_empty() && p.file_name().is_some_and(|n| n == ".gitattributes") {
                let folder = p.parent().map(|f| f.to_string_lossy()).unwrap_or_default();
                st.attributes_above |=
                    folder.is_empty() || prefix.starts_with(&format!("{folder}/"));
            }
        }
    }
    Ok(st)
}

/// Root-relative paths of the files tracked in `commit`'s tree under the root.
pub(super) fn tracked_paths<'r>(
    repo: &'r git2::Repository,
    commit: &git2::Commit<'r>,
    prefix: &str,
) -> Result<FxHashSet<String>> {
    let git = |e: git2::Error| refuse(format!("cannot list HEAD's files: {}", e.message()));
    let mut tree = commit.tree().map_err(git)?;
    if !prefix.is_empty() {
        let Ok(entry) = tree.get_path(Path::new(prefix)) else {
            // The root is not tracked at all: git vouches for nothing under it.
            return Ok(FxHashSet::default());
        };
        let sub = entry
            .to_object(repo)
            .and_then(|o| o.peel_to_tree())
            .map_err(git)?;
        tree = sub;
    }
    let mut out = FxHashSet::default();
    blobs(repo, &tree, "", &mut out).map_err(git)?;
    Ok(out)
}

/// Adds the path of every file in `tree` (whose path is `dir`, empty or ending in `/`) to `out`.
/// A name that is not UTF-8 is passed over with what lies under it: trove indexes no such path
/// (the walk lists it as skipped), and libgit2's own tree walk fails on a folder so named.
fn blobs(
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    dir: &str,
    out: &mut FxHashSet<String>,
) -> std::result::Result<(), git2::Error> {
    for e in tree.iter() {
        let Ok(name) = std::str::from_utf8(e.name_bytes()) else {
            continue;
        };
        match e.kind() {
            Some(git2::ObjectType::Blob) => {
                out.insert(format!("{dir}{name}"));
            }
            Some(git2::ObjectType::Tree) => {
                let sub = e.to_object(repo)?.peel_to_tree()?;
                blobs(repo, &sub, &format!("{dir}{name}/"), out)?;
            }
            _ => {}
        }
    }
    Ok(())
}
