//! Incremental builds: decides what of the existing bundle a run may carry over.
//!
//! Input: the output bundle (the base), the run's config/embedder/language fingerprints and, with
//! `--since`, a git revision. Output: a [`Plan`]: either a full build (with the reason, said in the
//! summary) or a [`Reuse`] — the base's files table plus, in git mode, the set of paths that may have
//! changed since the base's commit (every other file is carried without being read), or, in
//! content-hash mode, none (every file is read and carried when its sha256 equals the base's).
//! Invariants: rows are only ever carried between bundles made by the same tool version, format,
//! pipeline config, language files, embedder, subdirectory and shard, so a carried file's rows are
//! exactly what processing it again would give; a base that does not verify is never read.
//! The git plumbing it asks is in the sibling modules `git` and `worktree`.
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};

use super::git::{self, DiffStats, REUSE_HINT, refuse, short};
use super::worktree::Worktree;
use crate::Result;
use trove_bundle::{self as bundle, Manifest, Shard, reader::FileRow};

/// `--since`: a revision, or the commit stamped in the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// The base bundle's `source.commit`.
    Auto,
    /// A git revision (`main~3`, a sha, a tag).
    Rev(String),
}

impl Since {
    /// `auto` or a revision.
    pub fn parse(s: &str) -> Self {
        if s == "auto" {
            Since::Auto
        } else {
            Since::Rev(s.to_string())
        }
    }
}

/// What must match for a base bundle's rows to be reused.
#[derive(Debug, Clone)]
pub(crate) struct Expect {
    pub pipeline_hash: String,
    pub embedder_fingerprint: String,
    pub languages_hash: String,
    pub subdir: Option<String>,
    /// This run's [`crate::source::checkout_settings`], as stamped (`None` outside git).
    pub checkout: Option<String>,
    pub shard: Option<Shard>,
    /// Whether the run reads SCIP indexes.
    pub scip: bool,
}

/// What of the base bundle stays: the run adds one segment with what changed.
#[derive(Debug)]
pub(crate) struct Reuse {
    /// The base bundle directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its live files rows by path.
    pub files: FxHashMap<String, FileRow>,
    /// Its live skipped rows.
    pub skipped: Vec<crate::source::Skipped>,
    /// Git mode: the root-relative paths git vouches are as the base's commit had them (tracked
    /// at HEAD, untouched by the diff and by uncommitted changes): carried unread when the base
    /// holds them at the same size. Every other file is read and compared by sha256. `None`:
    /// content-hash mode, every file is read.
    pub unchanged: Option<FxHashSet<String>>,
    /// Of `skipped`, the rows of files skipped for their content (binary, too large, ...), by
    /// path: a file git vouches for is skipped again without being read.
    pub content_skips: FxHashMap<String, usize>,
    /// Git mode: the root-relative folders (`""`: all of them) where git may convert a file's
    /// bytes as it checks it in (line endings under a `text` or `eol` attribute or
    /// `core.autocrlf`, a filter). There git status calls a file unchanged whose line endings
    /// alone were edited, so a file it vouches for is carried unread only at the size the base
    /// read (the walk takes no sizes in a `--since` run: the file is looked at on its own).
    pub sized: Vec<String>,
}

impl Reuse {
    /// Whether git vouches that the file at `rel` is as the base's commit had it.
    pub fn vouched(&self, rel: &str) -> bool {
        self.unchanged.as_ref().is_some_and(|u| u.contains(rel))
    }

    /// The base's skipped row of the walked file `c` when it was skipped for its content (the
    /// same reason and size a read would give again: git vouches for the content, and the
    /// pipeline that judged it is this one) and its size agrees ([`Reuse::same_size`]).
    pub fn skipped_unread(&self, c: &crate::source::Candidate) -> Option<&crate::source::Skipped> {
        let k = &self.skipped[*self.content_skips.get(&c.rel)?];
        (self.vouched(&c.rel) && self.same_size(c, k.bytes)).then_some(k)
    }

    /// Whether the walked file `c` may be as large as `bytes`, the size the base read: the
    /// walk's size when it took one; else, under a folder of [`Reuse::sized`], the file's size
    /// now; else yes (git's word is taken).
    pub fn same_size(&self, c: &crate::source::Candidate, bytes: u64) -> bool {
        match c.bytes {
            Some(n) => n == bytes,
            None if self.sized.iter().any(|f| under(&c.rel, f)) => {
                std::fs::symlink_metadata(&c.abs).is_ok_and(|m| m.is_file() && m.len() == bytes)
            }
            None => true,
        }
    }
}

/// Whether the root-relative path `p` lies under the folder `f` (`""`: the root).
fn under(p: &str, f: &str) -> bool {
    f.is_empty() || p.strip_prefix(f).is_some_and(|r| r.starts_with('/'))
}

/// The folder of a `.gitattributes` at the root-relative path `p` (`""`: the root's).
fn attributes_folder(p: &str) -> Option<&str> {
    match p.rsplit_once('/') {
        Some((folder, ".gitattributes")) => Some(folder),
        None if p == ".gitattributes" => Some(""),
        _ => None,
    }
}

/// Whether a file skipped for `reason` when it was read would be skipped again, for the same
/// reason and size, while its bytes and the pipeline stay the same (an unreadable file may be
/// readable next time; a worker's failure is a bug that may be fixed).
fn skipped_for_content(reason: crate::source::SkipReason) -> bool {
    use crate::source::SkipReason as R;
    matches!(
        reason,
        R::TooLarge | R::Binary | R::InvalidUtf8 | R::Utf16 | R::Generated | R::Minified
    )
}

/// What this run does.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub reuse: Option<Reuse>,
    /// Said in the summary: why a full build, or what was diffed.
    pub note: Option<String>,
    /// The manifest's `base` (the reuse counts are added when the run ends).
    pub base: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Why `m`'s rows cannot be reused by this run, if they cannot.
fn incompatible(m: &Manifest, e: &Expect) -> Option<String> {
    let theirs = (u64::from(m.format_major), u64::from(m.format_minor));
    if theirs != bundle::this_format() {
        return Some(format!(
            "{} (this trove writes {})",
            bundle::format_text(theirs),
            bundle::format_text(bundle::this_format())
        ));
    }
    // Every build whose rows the bundle holds (an upgraded bundle's manifest is this trove's,
    // its rows the old build's; a compaction may join builds).
    let this = bundle::manifest_tool();
    let builds = if m.builds.is_empty() {
        std::slice::from_ref(&m.tool)
    } else {
        &m.builds[..]
    };
    if let Some(other) = builds.iter().find(|b| **b != this) {
        return Some(if other.version != this.version {
            format!("trove {} (this is {})", other.version, this.version)
        } else {
            format!(
                "another build of trove {} (sources {})",
                other.version,
                other.build.as_deref().unwrap_or("unknown")
            )
        });
    }
    if m.pipeline_hash != e.pipeline_hash {
        return Some("another pipeline config".into());
    }
    if m.embedder.fingerprint != e.embedder_fingerprint {
        return Some(format!(
            "another embedder ({} {}, dim {})",
            m.embedder.backend, m.embedder.model, m.embedder.dim
        ));
    }
    if m.languages_hash.as_deref() != Some(e.languages_hash.as_str()) {
        return Some("other language files".into());
    }
    if m.source.subdir != e.subdir {
        return Some(format!(
            "another root directory ({})",
            m.source.subdir.as_deref().unwrap_or("the repository root")
        ));
    }
    if m.shard != e.shard {
        let s = |x: Option<Shard>| x.map_or("no shard".to_string(), |s| format!("shard {s}"));
        return Some(format!("{} (this run: {})", s(m.shard), s(e.shard)));
    }
    // Rows carry SCIP facts or not as a whole: a run that starts or stops reading SCIP indexes
    // rebuilds, so no file keeps facts of the other kind. (Between two runs that both read one,
    // a changed file takes its facts from this run's index, and the rest keep theirs.)
    if m.scip.is_empty() == e.scip {
        return Some(if e.scip {
            "no SCIP index (this run reads one)".to_string()
        } else {
            "SCIP indexes (this run reads none: pass --scip, or keep index.scip at the root)"
                .to_string()
        });
    }
    None
}

/// Decides how the run at `root` writing `out` reuses `out`'s current content. `uncommitted`: the
/// root's uncommitted paths (bundle excluded), as `worktree_changes` read them.
pub(crate) fn plan(
    root: &Path,
    out: &Path,
    since: Option<&Since>,
    include_uncommitted: bool,
    worktree: Result<Worktree>,
    expect: &Expect,
) -> Result<Plan> {
    let shown = out.display();
    // A --since run needs git, and a revision that is in its history, before anything else: say
    // so even when there is no bundle yet.
    let git = match since {
        Some(s) => Some(since_repo(root, s)?),
        None => None,
    };
    let manifest = match base_manifest(out, since, expect)? {
        Ok(m) => m,
        Err(FullBuild { note }) => {
            return Ok(Plan {
                note,
                ..Plan::default()
            });
        }
    };
    let (mut reuse, mut base) = read_base(out, manifest)?;
    let Some((repo, given)) = git else {
        base.insert("mode".into(), "content-hash".into());
        return Ok(Plan {
            reuse: Some(reuse),
            note: None,
            base: Some(base),
        });
    };
    let Some((given, rev_id)) = since_commit(&repo, given, &reuse.manifest)? else {
        base.insert("since".into(), "auto".into());
        base.insert("mode".into(), "content-hash".into());
        return Ok(Plan {
            reuse: Some(reuse),
            note: Some(format!(
                "{shown} records no git commit: unchanged files are found by content hash"
            )),
            base: Some(base),
        });
    };
    base.insert("since".into(), given.clone().into());
    let history = SinceHistory::read(&repo, given, rev_id, expect)?;
    history.check_base_commit(&reuse.manifest, &shown)?;
    let Changes {
        changed,
        stats,
        tracked,
        unwatched,
    } = history.changes(worktree, include_uncommitted, &mut base)?;
    if reuse.manifest.source.dirty {
        // Its rows may hold work-tree content that no commit has: trust nothing unread.
        base.insert("mode".into(), "content-hash".into());
        return Ok(Plan {
            reuse: Some(reuse),
            note: Some(format!(
                "{shown} was built from a dirty work tree: every file is checked by content hash"
            )),
            base: Some(base),
        });
    }
    base.insert("mode".into(), "git-diff".into());
    reuse.sized = history.sized(&tracked);
    let vouched = Vouched::of(
        tracked,
        &changed,
        &unwatched,
        &stats,
        &reuse.manifest,
        expect,
    );
    let note = vouched.note(&history, changed.len(), stats.submodules);
    reuse.unchanged = Some(vouched.unchanged);
    Ok(Plan {
        reuse: Some(reuse),
        note: Some(note),
        base: Some(base),
    })
}

/// A full build, with why (said in the summary): the base bundle's rows cannot be reused.
struct FullBuild {
    note: Option<String>,
}

/// The repository of a `--since` run, and the revision it gives with its commit (`None` for
/// `auto`): refused when there is no repository, or the revision is unknown or not in HEAD's
/// history.
fn since_repo(
    root: &Path,
    since: &Since,
) -> Result<(git2::Repository, Option<(String, git2::Oid)>)> {
    let repo = git::open_repo(root)?;
    let given = match since {
        Since::Auto => None,
        Since::Rev(r) => {
            let id = git::resolve(&repo, r)?;
            git::check_ancestor(&repo, r, id)?;
            Some((r.clone(), id))
        }
    };
    Ok((repo, given))
}

/// The manifest of the bundle at `out` when its rows may be reused by this run, verified; else
/// why a full build (no bundle yet, another format, one that does not verify, an incompatible
/// one). A `--since` run refuses a bundle that does not verify.
fn base_manifest(
    out: &Path,
    since: Option<&Since>,
    expect: &Expect,
) -> Result<Result<Manifest, FullBuild>> {
    let shown = out.display();
    if !out.join(bundle::MANIFEST).is_file() {
        return Ok(Err(FullBuild {
            note: since.map(|_| format!("no bundle at {shown} yet: full build")),
        }));
    }
    // A bundle of another format is rebuilt in full before anything else is asked of it (an older
    // layout would not verify under this one's rules).
    if let Ok(v) = bundle::read_manifest_json(out) {
        let theirs = bundle::format_of(&v);
        let this = bundle::this_format();
        // A newer trove's bundle is not replaced by an older format's (its readers may need
        // what that format adds).
        if theirs > this {
            return Err(crate::Error::bundle_unusable(
                out,
                format!(
                    "is {}, newer than this trove writes ({}): index it with a trove that writes \
                     it, or remove it to rebuild it with this one",
                    bundle::format_text(theirs),
                    bundle::format_text(this)
                ),
            ));
        }
        if theirs != this {
            let format = match theirs {
                (0, old) => format!(
                    "{}, from before bundle format 1.0{}",
                    bundle::format_text(theirs),
                    if old == u64::from(bundle::UPGRADABLE_FROM) {
                        " (`trove upgrade` converts it without a rebuild)"
                    } else {
                        ""
                    }
                ),
                _ => format!(
                    "{} (this trove writes {})",
                    bundle::format_text(theirs),
                    bundle::format_text(this)
                ),
            };
            return Ok(Err(FullBuild {
                note: Some(format!(
                    "full rebuild: {shown} is {format}, so none of its rows can be reused"
                )),
            }));
        }
    }
    // Only the manifest and the small tables are read: an incremental run costs what changed.
    // Each file is hashed once per version (the memo of `check_hashes`; the run that wrote it
    // seeded it), so damaged bytes are refused without rehashing an unchanged bundle.
    let checked = bundle::read_manifest(out).and_then(|m| {
        bundle::check_sizes(out, &m)?;
        bundle::pack::check_hashes(out, &m)?;
        Ok(m)
    });
    let manifest = match checked {
        Ok(m) => m,
        // `--since` promises an incremental run from this bundle: a broken one is an error.
        Err(e) if since.is_some() => {
            return Err(refuse(format!(
                "cannot build on the existing bundle: {e} (remove it for a full build)"
            )));
        }
        Err(e) => {
            return Ok(Err(FullBuild {
                note: Some(format!(
                    "full build: the existing bundle does not verify ({e})"
                )),
            }));
        }
    };
    if let Some(why) = incompatible(&manifest, expect) {
        return Ok(Err(FullBuild {
            note: Some(format!(
                "full rebuild: {shown} was built with {why}, so none of its rows can be reused"
            )),
        }));
    }
    Ok(Ok(manifest))
}

/// The live rows of the base bundle at `out` (its `manifest` verified) as a content-hash
/// [`Reuse`] (git vouches for nothing yet), and the manifest's `base` as far as it is known.
fn read_base(
    out: &Path,
    manifest: Manifest,
) -> Result<(Reuse, serde_json::Map<String, serde_json::Value>)> {
    let live = bundle::reader::Live::read(out, &manifest)?;
    let files: FxHashMap<String, FileRow> = live
        .files
        .into_iter()
        .map(|(f, _)| (f.path.clone(), f))
        .collect();
    let skipped: Vec<crate::source::Skipped> = live.skipped.into_iter().map(|(k, _)| k).collect();
    let mut base = serde_json::Map::new();
    base.insert("created_at".into(), manifest.created_at.clone().into());
    base.insert(
        "commit".into(),
        manifest
            .source
            .commit
            .clone()
            .map_or(serde_json::Value::Null, Into::into),
    );
    let content_skips = skipped
        .iter()
        .enumerate()
        .filter(|(_, k)| skipped_for_content(k.reason))
        .map(|(i, k)| (k.path.clone(), i))
        .collect();
    let reuse = Reuse {
        dir: out.to_path_buf(),
        manifest,
        files,
        skipped,
        unchanged: None,
        content_skips,
        sized: Vec::new(),
    };
    Ok((reuse, base))
}

/// The revision a `--since` run diffs from (`given`, or `auto`: the commit stamped in the base
/// bundle `manifest`) and its commit; `None` when `auto` finds no stamped commit.
fn since_commit(
    repo: &git2::Repository,
    given: Option<(String, git2::Oid)>,
    manifest: &Manifest,
) -> Result<Option<(String, git2::Oid)>> {
    Ok(match (given, &manifest.source.commit) {
        (Some(g), _) => Some(g),
        (None, Some(c)) => {
            let id = git::resolve(repo, c)?;
            git::check_ancestor(repo, "auto", id)?;
            Some(("auto".to_string(), id))
        }
        (None, None) => None,
    })
}

/// The history a `--since` run builds on: the revision given (or `auto`) and its commit, HEAD,
/// and the root within the work tree.
struct SinceHistory<'r> {
    repo: &'r git2::Repository,
    /// The revision as given (`auto` for the bundle's commit).
    given: String,
    /// Its commit.
    rev_commit: git2::Commit<'r>,
    /// HEAD's commit.
    head: git2::Commit<'r>,
    /// The root within the work tree (`""`: its top).
    prefix: String,
}

/// What changed since the base bundle's commit, as git sees it.
struct Changes {
    /// Root-relative paths the diff to HEAD touches, and the uncommitted ones.
    changed: FxHashSet<String>,
    /// The diff's counts.
    stats: DiffStats,
    /// Root-relative paths of the files tracked at HEAD.
    tracked: FxHashSet<String>,
    /// Root-relative paths git is told not to look at in the work tree.
    unwatched: FxHashSet<String>,
}

impl<'r> SinceHistory<'r> {
    /// Reads the commit `rev_id` (given as `given`) and HEAD's in `repo`.
    fn read(
        repo: &'r git2::Repository,
        given: String,
        rev_id: git2::Oid,
        expect: &Expect,
    ) -> Result<Self> {
        let find = |id| {
            repo.find_commit(id)
                .map_err(|e| refuse(format!("cannot read commit {id}: {}", e.message())))
        };
        let rev_commit = find(rev_id)?;
        let head = find(git::head_id(repo)?)?;
        Ok(SinceHistory {
            repo,
            given,
            rev_commit,
            head,
            prefix: expect.subdir.clone().unwrap_or_default(),
        })
    }

    /// Refuses unless the base bundle (`manifest`, at `shown`) was built from the revision's
    /// commit.
    fn check_base_commit(&self, manifest: &Manifest, shown: &std::path::Display<'_>) -> Result<()> {
        let (repo, given, rev_commit) = (self.repo, &self.given, &self.rev_commit);
        match &manifest.source.commit {
            Some(c) if *c == rev_commit.id().to_string() => Ok(()),
            Some(c) => {
                // Its commit may have left HEAD's history (an amend, a rebase, a reset): then
                // `--since` that commit would only be refused in turn.
                let in_history = git::resolve(repo, c)
                    .ok()
                    .is_some_and(|id| git::check_ancestor(repo, c, id).is_ok());
                let c = trove_base::util::short_commit(c);
                Err(refuse(if in_history {
                    format!(
                        "--since {given}: {shown} was built from commit {c}, not {given} ({}): use \
                         --since {c} (or --since auto)",
                        short(rev_commit.id()),
                    )
                } else {
                    format!(
                        "--since {given}: {shown} was built from commit {c}, which is not in HEAD's \
                         history (rewritten by an amend, a rebase or a reset, or another branch is \
                         checked out), so no --since can build on it: {REUSE_HINT}"
                    )
                }))
            }
            None => Err(refuse(format!(
                "--since {given}: {shown} records no git commit (it was built outside git); use \
                 --since auto to reuse its files by content hash"
            ))),
        }
    }

    /// What changed from the revision's commit to HEAD (the diff read beside the walk when it
    /// is of these commits) and, with `include_uncommitted`, in the work tree (refused without
    /// it). The diff's counts and the uncommitted paths go into the manifest's `base`.
    fn changes(
        &self,
        worktree: Result<Worktree>,
        include_uncommitted: bool,
        base: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<Changes> {
        let given = &self.given;
        let Worktree {
            changed: uncommitted,
            tracked,
            diff,
            unwatched,
        } = worktree?;
        let (mut changed, stats) = match diff {
            Some(d) if d.from == self.rev_commit.id() && d.to == self.head.id() => d.paths?,
            _ => {
                let mut changed = FxHashSet::default();
                let stats = git::diff_paths(
                    self.repo,
                    &self.rev_commit,
                    &self.head,
                    &self.prefix,
                    &mut changed,
                )?;
                (changed, stats)
            }
        };
        base.insert("diff".into(), serde_json::to_value(&stats)?);
        if !uncommitted.is_empty() {
            if !include_uncommitted {
                // A name with a newline must not pass for two lines of the message.
                let shown_paths: Vec<_> = uncommitted
                    .iter()
                    .take(5)
                    .map(|p| trove_base::util::visible_line(p))
                    .collect();
                return Err(refuse(format!(
                    "--since {given}: the work tree has {} uncommitted change(s) ({}{}): commit them, or \
                     pass --include-uncommitted to index them too (the bundle is then stamped dirty)",
                    uncommitted.len(),
                    shown_paths.join(", "),
                    if uncommitted.len() > 5 { ", ..." } else { "" }
                )));
            }
            base.insert("uncommitted_paths".into(), uncommitted.len().into());
            changed.extend(uncommitted);
        }
        Ok(Changes {
            changed,
            stats,
            tracked,
            unwatched,
        })
    }

    /// Where git may convert bytes as it checks them in, what it vouches for is carried at the
    /// base's size only (see `Reuse::sized`): the folders of the `.gitattributes` among `tracked`,
    /// or the whole root.
    fn sized(&self, tracked: &FxHashSet<String>) -> Vec<String> {
        let mut sized: Vec<String> = if crate::source::checkout_may_convert(self.repo)
            || git::attributes_above(&self.head, &self.prefix)
        {
            vec![String::new()]
        } else {
            tracked
                .iter()
                .filter_map(|p| attributes_folder(p))
                .map(str::to_string)
                .collect()
        };
        sized.sort_unstable();
        sized.dedup();
        sized
    }
}

/// What git vouches for in a git-diff run, and what it was not trusted with.
struct Vouched {
    /// The root-relative paths carried unread (`Reuse::unchanged`).
    unchanged: FxHashSet<String>,
    /// Files git is told not to check, read and compared by content hash instead.
    unwatched_read: usize,
    /// The folders (`""`: the root) whose files are compared by content hash: a `.gitattributes`
    /// there changed, or git's checkout settings did.
    attributes: Vec<String>,
    /// Whether git's checkout settings outside the tree changed since the base was built.
    settings_changed: bool,
    /// Files under `attributes` git would otherwise have vouched for.
    rehashed: usize,
}

impl Vouched {
    /// What git vouches for, of the files `tracked` at HEAD, given what `changed`, what git is
    /// told not to look at (`unwatched`), the diff's `stats`, and the checkout settings of the
    /// base (`manifest`) and this run.
    fn of(
        tracked: FxHashSet<String>,
        changed: &FxHashSet<String>,
        unwatched: &FxHashSet<String>,
        stats: &DiffStats,
        manifest: &Manifest,
        expect: &Expect,
    ) -> Vouched {
        // What git vouches for: tracked at HEAD (an ignored file that the walk still indexes is not
        // tracked, so it is compared by content) and not changed.
        let mut unchanged = tracked;
        unchanged.retain(|p| !changed.contains(p));
        // Files git is told not to look at: their edits are read and compared by content hash.
        let before = unchanged.len();
        unchanged.retain(|p| !unwatched.contains(p));
        let unwatched_read = before - unchanged.len();
        // Where a `.gitattributes` changed (in the diff or uncommitted; one above the root is the
        // root's), the same content may have been checked out as other bytes: the files under it are
        // compared by content hash (read, and reused when their bytes match).
        let mut attributes: Vec<String> = Vec::new();
        if stats.attributes_above {
            attributes.push(String::new());
        }
        // The same for the settings outside the tree (`.git/info/attributes`, `core.autocrlf` …),
        // which no diff shows: changed since the bundle was built, every file is compared.
        let settings_changed =
            manifest.source.checkout.is_none() || manifest.source.checkout != expect.checkout;
        if settings_changed {
            attributes.push(String::new());
        }
        attributes.extend(
            changed
                .iter()
                .filter_map(|p| attributes_folder(p))
                .map(str::to_string),
        );
        attributes.sort_unstable();
        attributes.dedup();
        let before = unchanged.len();
        unchanged.retain(|p| !attributes.iter().any(|f| under(p, f)));
        let rehashed = before - unchanged.len();
        Vouched {
            unchanged,
            unwatched_read,
            attributes,
            settings_changed,
            rehashed,
        }
    }

    /// The summary's note of a git-diff run over `history`: `changed` paths, `submodules`
    /// submodule changes skipped, and what was compared by content hash instead.
    fn note(&self, history: &SinceHistory<'_>, changed: usize, submodules: u64) -> String {
        let Vouched {
            unwatched_read,
            attributes,
            settings_changed,
            rehashed,
            ..
        } = self;
        format!(
            "incremental since {} ({}): {} path(s) changed{}{}{}",
            short(history.rev_commit.id()),
            history.given,
            changed,
            if submodules > 0 {
                format!(", {submodules} submodule change(s) skipped")
            } else {
                String::new()
            },
            if *unwatched_read > 0 {
                format!(
                    "; {unwatched_read} file(s) git is told not to check (assume-unchanged, \
                     skip-worktree) checked by content hash"
                )
            } else {
                String::new()
            },
            if attributes.is_empty() {
                String::new()
            } else if *settings_changed {
                format!(
                    "; git's checkout settings changed (.git/info/attributes, core.attributesFile, \
                     core.autocrlf or core.eol): {rehashed} other file(s) checked by content hash"
                )
            } else {
                format!(
                    "; .gitattributes changed: {rehashed} other file(s) under {} checked by content hash",
                    attributes
                        .iter()
                        .map(|f| if f.is_empty() { "the root" } else { f.as_str() })
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )
    }
}
