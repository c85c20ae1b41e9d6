//! Source stage: walk a tree and decide, per file, whether it is indexed.
//!
//! Input: a root directory, the `[source]` config, include/exclude globs. Output: the sorted list of
//! candidate files (repo-relative `/` paths) and a [`Skipped`] record for every file or directory not
//! indexed, with its reason. Invariants: symlinks are never followed; nothing outside the root is
//! read; the output bundle itself is never walked; the walk order does not matter because the result
//! is sorted by path.
use globset::GlobSet;
use ignore::WalkBuilder;
use regex::RegexSet;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use trove_base::glob::{globset, with_dir_forms};
use trove_base::util::floor_char_boundary;

use crate::config::SourceConfig;
use crate::{Error, Result};
pub use trove_base::sets::SkipReason;

/// Bytes sniffed for NULs and control characters to call a file binary (what git and ripgrep look at).
const BINARY_SNIFF_BYTES: usize = 8192;
/// Bytes searched for "generated" markers: they sit in a file's header comment.
const GENERATED_SNIFF_BYTES: usize = 1024;

/// A file that passed the walk's name and size checks.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Repo-relative path with `/` separators.
    pub rel: String,
    /// Where to read it.
    pub abs: PathBuf,
    /// Size at walk time; `None` when the walk leaves sizes to the reader
    /// ([`WalkOptions::lazy_sizes`]).
    pub bytes: Option<u64>,
}

pub use trove_bundle::reader::Skipped;

/// What the walk found.
#[derive(Debug, Default)]
pub struct WalkResult {
    /// Files to read, sorted by path.
    pub files: Vec<Candidate>,
    /// Everything not indexed, sorted by path.
    pub skipped: Vec<Skipped>,
}

/// Walk options beyond the config.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Only paths matching one of these globs are indexed (when non-empty).
    pub include: Vec<String>,
    /// Paths matching one of these globs are not indexed.
    pub exclude: Vec<String>,
    /// Absolute paths never walked (the output bundle and its temp directory).
    pub never_walk: Vec<PathBuf>,
    /// Skip directories below the root that hold a `.git` (submodules and nested repositories,
    /// reason "submodule"): set when the root is in a git work tree, whose history does not
    /// cover theirs.
    pub skip_nested_repos: bool,
    /// Do not stat every file: sizes are left unknown and the size cap is checked by the reader
    /// ([`read_capped`]). Set by `--since` runs, which read only the files git does not vouch
    /// for — a stat per file would be a good part of such a run.
    pub lazy_sizes: bool,
}

/// Compiled name rules shared by the walk and the readers.
#[derive(Debug)]
pub struct Rules {
    cfg: SourceConfig,
    exclude_dirs: HashSet<String>,
    lock: GlobSet,
    minified: GlobSet,
    secret: GlobSet,
    include: Option<GlobSet>,
    exclude: GlobSet,
    generated: RegexSet,
}

impl Rules {
    /// Compiles the config's and the options' globs and markers.
    pub fn new(cfg: &SourceConfig, opts: &WalkOptions) -> Result<Self> {
        Ok(Rules {
            cfg: cfg.clone(),
            exclude_dirs: cfg.exclude_dirs.iter().cloned().collect(),
            lock: globset(&cfg.lock_files, "lock_files")?,
            minified: globset(&cfg.minified_files, "minified_files")?,
            secret: globset(&cfg.secret_files, "secret_files")?,
            include: if opts.include.is_empty() {
                None
            } else {
                Some(globset(&with_dir_forms(&opts.include), "--include")?)
            },
            exclude: globset(&with_dir_forms(&opts.exclude), "--exclude")?,
            generated: RegexSet::new(&cfg.generated_markers)
                .map_err(|e| Error::config(format!("generated_markers: {e}")))?,
        })
    }

    /// Files larger than this are not read (`[source] max_file_bytes`).
    pub fn max_file_bytes(&self) -> u64 {
        self.cfg.max_file_bytes
    }

    /// Whether the walk honours `.gitignore` (and so may hide tracked files).
    pub fn respects_gitignore(&self) -> bool {
        self.cfg.respect_gitignore
    }

    /// Whether a folder on the way to `rel` is one the walk does not enter: an excluded folder
    /// name or `--exclude` glob, another trove bundle, or (with `nested`) a nested repository.
    fn folder_skipped(&self, root: &Path, rel: &str, nested: bool) -> bool {
        folders(rel).any(|dir| {
            let name = dir.rsplit('/').next().unwrap_or(dir);
            self.exclude_dirs.contains(name)
                || self.exclude.is_match(dir)
                || (nested && root.join(dir).join(".git").exists())
                || is_bundle_dir(&root.join(dir))
        })
    }

    /// The skip reason a file's path alone gives, if any.
    fn reason_for_path(&self, rel: &str) -> Option<SkipReason> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if self.secret.is_match(name) || self.secret.is_match(rel) {
            Some(SkipReason::SecretFile)
        } else if self.exclude.is_match(rel) {
            Some(SkipReason::Excluded)
        } else if self.lock.is_match(name) {
            Some(SkipReason::Lockfile)
        } else if self.minified.is_match(name) {
            Some(SkipReason::Minified)
        } else if self.include.as_ref().is_some_and(|inc| !inc.is_match(rel)) {
            Some(SkipReason::NotIncluded)
        } else {
            None
        }
    }

    /// Classifies a file's bytes: `Ok(text)` to index it, `Err(reason)` to skip it.
    pub fn classify(&self, bytes: Vec<u8>) -> std::result::Result<String, SkipReason> {
        if bytes.len() as u64 > self.cfg.max_file_bytes {
            return Err(SkipReason::TooLarge);
        }
        if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
            return Err(SkipReason::Utf16);
        }
        if is_binary(&bytes[..bytes.len().min(BINARY_SNIFF_BYTES)]) {
            return Err(SkipReason::Binary);
        }
        let mut text = String::from_utf8(bytes).map_err(|_| SkipReason::InvalidUtf8)?;
        if text.starts_with('\u{feff}') {
            // Keep every byte offset equal to the file's: the 3-byte BOM becomes 3 spaces.
            text.replace_range(..3, "   ");
        }
        let head_end = floor_char_boundary(&text, GENERATED_SNIFF_BYTES);
        if self.generated.is_match(&text[..head_end]) {
            return Err(SkipReason::Generated);
        }
        if text.split('\n').any(|l| l.len() > self.cfg.max_line_bytes) {
            return Err(SkipReason::Minified);
        }
        Ok(text)
    }
}

/// Whether the folder `p` is a trove bundle (an earlier run's output left in the tree, or one
/// checked in): its `views.sql` and `manifest.json` (a stat of each; `views.sql` first, which
/// almost no folder has).
fn is_bundle_dir(p: &Path) -> bool {
    p.join(trove_bundle::VIEWS).is_file() && p.join(trove_bundle::MANIFEST).is_file()
}

/// Whether `p` is the lock file a run leaves beside its bundle (`.NAME.lock` next to `NAME`).
fn is_bundle_lock(p: &Path) -> bool {
    let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.strip_prefix('.')
        .and_then(|n| n.strip_suffix(".lock"))
        .is_some_and(|b| !b.is_empty() && is_bundle_dir(&p.with_file_name(b)))
}

/// Reads `path` unless it is larger than `max` bytes: `Ok(Err(size))` then. The size is that of
/// the open file, so a file that grew after the walk is still held to the cap.
pub fn read_capped(path: &Path, max: u64) -> std::io::Result<std::result::Result<Vec<u8>, u64>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let size = f.metadata()?.len();
    if size > max {
        return Ok(Err(size));
    }
    let mut buf = Vec::with_capacity(size as usize + 1);
    f.read_to_end(&mut buf)?;
    Ok(Ok(buf))
}

/// NUL bytes, or more than 10% control bytes other than whitespace and ESC, mean binary.
fn is_binary(head: &[u8]) -> bool {
    if head.contains(&0) {
        return true;
    }
    let ctrl = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
        .count();
    ctrl * 10 > head.len()
}

fn rel_string(root: &Path, p: &Path) -> Option<String> {
    let rel = p.strip_prefix(root).ok()?;
    let mut out = String::new();
    for c in rel.components() {
        let s = c.as_os_str().to_str()?;
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(s);
    }
    Some(out)
}

/// The `core.excludesFile` git uses for `repo`: the value of the nearest configuration that sets
/// it (the repository's, the user's, the system's), `~/` expanded. `None` when none sets it (git
/// then reads `$XDG_CONFIG_HOME/git/ignore`, as the `ignore` crate does).
pub fn git_excludes_file(repo: &git2::Repository) -> Option<PathBuf> {
    config_path(repo, &repo.config().ok()?, "core.excludesFile")
}

/// The path `config` sets for `key` in `repo` (`~/` expanded), a relative one resolved at the work
/// tree's top, where git runs its commands.
fn config_path(repo: &git2::Repository, config: &git2::Config, key: &str) -> Option<PathBuf> {
    let path = config.get_path(key).ok()?;
    Some(match repo.workdir() {
        Some(top) if path.is_relative() => top.join(path),
        _ => path,
    })
}

/// A fingerprint of the settings outside the tree that decide which bytes git checks a file out
/// as: `$GIT_DIR/info/attributes`, the attributes file of `core.attributesFile` (else git's
/// default, `$XDG_CONFIG_HOME/git/attributes` or `~/.config/git/attributes`), `core.autocrlf` and
/// `core.eol`. When it differs from the one a bundle was built under, a fresh checkout may have
/// given unchanged content other bytes without git calling the file changed, so `--since` reads
/// every file git vouches for and compares it by content hash. Files' contents, not their paths,
/// are hashed: a bundle names nothing of the machine that made it.
pub fn checkout_settings(repo: &git2::Repository) -> String {
    let mut text: Vec<u8> = Vec::new();
    for (name, value) in checkout_parts(repo) {
        text.extend_from_slice(name.as_bytes());
        match value {
            // The length first: no value can pass for another's end and the next name.
            Some(v) => {
                text.extend_from_slice(format!("={}:", v.len()).as_bytes());
                text.extend_from_slice(&v);
            }
            None => text.push(b'-'),
        }
        text.push(b'\n');
    }
    trove_base::util::sha256_hex(&text)[..16].to_string()
}

/// Whether the settings outside the tree may make git check a file in as other bytes than the
/// work tree holds (line endings by `core.autocrlf` true or input, or whatever the attributes of
/// `$GIT_DIR/info/attributes` or the `core.attributesFile` say): then git status calls a file
/// unchanged whose bytes differ from its checkout only in what the conversion undoes.
pub fn checkout_may_convert(repo: &git2::Repository) -> bool {
    checkout_parts(repo).into_iter().any(|(name, v)| {
        let v = v.unwrap_or_default();
        match name {
            "core.autocrlf" => {
                let v = String::from_utf8_lossy(&v).trim().to_ascii_lowercase();
                !(v.is_empty() || ["false", "no", "off", "0"].contains(&v.as_str()))
            }
            // core.eol acts only on files an attribute calls text.
            "core.eol" => false,
            _ => v.iter().any(|b| !b.is_ascii_whitespace()),
        }
    })
}

/// The settings [`checkout_settings`] fingerprints, by name: each file's bytes (`None` when it
/// cannot be read) and each key's value.
fn checkout_parts(repo: &git2::Repository) -> [(&'static str, Option<Vec<u8>>); 4] {
    let config = repo.config().ok();
    let get = |key: &str| {
        config
            .as_ref()
            .and_then(|c| c.get_string(key).ok())
            .unwrap_or_default()
    };
    let attributes_file = config
        .as_ref()
        .and_then(|c| config_path(repo, c, "core.attributesFile"))
        .or_else(|| {
            let xdg = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
            Some(xdg.join("git").join("attributes"))
        });
    let read = |p: Option<PathBuf>| p.and_then(|p| std::fs::read(p).ok());
    [
        (
            "info/attributes",
            read(Some(repo.commondir().join("info").join("attributes"))),
        ),
        ("core.attributesFile", read(attributes_file)),
        ("core.autocrlf", Some(get("core.autocrlf").into_bytes())),
        ("core.eol", Some(get("core.eol").into_bytes())),
    ]
}

fn lossy_rel(root: &Path, p: &Path) -> String {
    let rel = p.strip_prefix(root).unwrap_or(p);
    trove_base::util::slash_path(rel)
}

/// Walks `root`: candidates to read and everything skipped, both sorted by path. `excludes_file`
/// is the repository's `core.excludesFile` ([`git_excludes_file`]), used in place of the one the
/// `ignore` crate would look up in the user's git configuration.
pub fn walk(
    root: &Path,
    rules: &Rules,
    opts: &WalkOptions,
    excludes_file: Option<&Path>,
) -> Result<WalkResult> {
    let root = root.canonicalize().map_err(|e| Error::io(root, e))?;
    if !root.is_dir() {
        return Err(Error::bad_input(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let dir_skips: Arc<Mutex<Vec<Skipped>>> = Arc::default();
    let wb = walker(&root, rules, opts, excludes_file, &dir_skips);
    let found = walk_parallel(wb, &root, rules, opts.lazy_sizes)?;
    let dir_skips = std::mem::take(
        &mut *dir_skips
            .lock()
            .map_err(|_| Error::internal("walk lock poisoned"))?,
    );
    let dir_skipped: HashSet<String> = dir_skips.iter().map(|s| s.path.clone()).collect();
    let hidden = hidden_by_rules(&root, &found, opts, &dir_skipped);
    let mut out = WalkResult::default();
    for item in found {
        match item {
            Found::Entry(abs, What::File(rel, bytes)) => {
                out.files.push(Candidate { rel, abs, bytes })
            }
            Found::Entry(_, What::Skip(k)) => out.skipped.push(k),
            Found::Entry(_, What::Dir | What::Other) => {}
            Found::Error(err) => {
                // An unreadable directory or a broken ignore file: record, go on.
                let path = io_path(&err)
                    .map(|p| lossy_rel(&root, &p))
                    .unwrap_or_default();
                out.skipped.push(Skipped {
                    path,
                    reason: SkipReason::Unreadable,
                    bytes: 0,
                });
            }
        }
    }
    out.skipped.extend(dir_skips);
    out.skipped.extend(hidden);
    out.files.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    out.skipped.sort();
    out.skipped.dedup();
    Ok(out)
}

/// The walker over `root`: the ignore files it honours (`.troveignore`, and git's `excludes_file`
/// in place of the user's global one), and the directories it does not enter — each one's
/// reason pushed to `dir_skips` (excluded by name or glob, a nested repository, a bundle).
fn walker(
    root: &Path,
    rules: &Rules,
    opts: &WalkOptions,
    excludes_file: Option<&Path>,
    dir_skips: &Arc<Mutex<Vec<Skipped>>>,
) -> WalkBuilder {
    let never: Vec<PathBuf> = opts.never_walk.clone();
    let respect = rules.cfg.respect_gitignore;
    let mut wb = WalkBuilder::new(root);
    wb.hidden(false)
        .parents(respect)
        .ignore(respect)
        .git_ignore(respect)
        .git_global(respect)
        .git_exclude(respect)
        .require_git(false)
        .follow_links(false);
    if respect {
        wb.add_custom_ignore_filename(".troveignore");
        // The `ignore` crate reads `core.excludesFile` from the user's own git configuration
        // only; git takes it from the repository's (and the system's) too, the nearest winning.
        if let Some(file) = excludes_file {
            wb.git_global(false);
            // A file that is not there hides nothing, as in git.
            let _ = wb.add_ignore(file);
        }
    }
    let root = root.to_path_buf();
    let dir_skips = dir_skips.clone();
    let rules_dirs = rules.exclude_dirs.clone();
    let exclude = rules.exclude.clone();
    let nested = opts.skip_nested_repos;
    wb.filter_entry(move |e| {
        let p = e.path();
        if never.iter().any(|n| p == n) {
            return false;
        }
        if e.depth() == 0 {
            return true;
        }
        if !e.file_type().is_some_and(|t| t.is_dir()) {
            // A `.git` file is a worktree's or submodule's pointer to its repository (an
            // absolute local path), not source: skipped like the `.git` folder; so is another
            // bundle's lock file (`.NAME.lock` beside it: the bundle's row stands for both).
            return e.file_name() != ".git" && !is_bundle_lock(p);
        }
        let rel = lossy_rel(&root, p);
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        let reason = if rules_dirs.contains(name) {
            Some(SkipReason::ExcludedDir)
        } else if exclude.is_match(&rel) {
            Some(SkipReason::Excluded)
        } else if nested && p.join(".git").exists() {
            Some(SkipReason::Submodule)
        } else if is_bundle_dir(p) {
            Some(SkipReason::Bundle)
        } else {
            None
        };
        match reason {
            Some(r) => {
                if let Ok(mut v) = dir_skips.lock() {
                    v.push(Skipped {
                        path: format!("{rel}/"),
                        reason: r,
                        bytes: 0,
                    });
                }
                false
            }
            None => true,
        }
    });
    wb
}

/// Runs the walk on every core (stat calls and ignore-file probes dominate a large tree), each
/// entry classified on the thread that found it; the caller sorts the result, so it does not
/// depend on the threads.
fn walk_parallel(
    mut wb: WalkBuilder,
    root: &Path,
    rules: &Rules,
    lazy: bool,
) -> Result<Vec<Found>> {
    let found: Mutex<Vec<Found>> = Mutex::default();
    wb.threads(
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8),
    )
    .build_parallel()
    .run(|| {
        let found = &found;
        Box::new(move |r| {
            let item = match r {
                Ok(e) => {
                    let what = classify_entry(root, rules, &e, lazy);
                    Found::Entry(e.into_path(), what)
                }
                Err(err) => Found::Error(err),
            };
            if let Ok(mut f) = found.lock() {
                f.push(item);
            }
            ignore::WalkState::Continue
        })
    });
    found
        .into_inner()
        .map_err(|_| Error::internal("walk lock poisoned"))
}

/// What the ignore rules hid: a child of a walked directory that the walk never yielded (and
/// that is not under a directory skipped for its own reason, `dir_skipped`).
fn hidden_by_rules(
    root: &Path,
    found: &[Found],
    opts: &WalkOptions,
    dir_skipped: &HashSet<String>,
) -> Vec<Skipped> {
    use rayon::prelude::*;
    let seen: rustc_hash::FxHashSet<&std::ffi::OsStr> = found
        .iter()
        .filter_map(|f| match f {
            Found::Entry(p, _) => Some(p.as_os_str()),
            Found::Error(_) => None,
        })
        .collect();
    let dirs: Vec<&Path> = found
        .iter()
        .filter_map(|f| match f {
            Found::Entry(p, What::Dir) => Some(p.as_path()),
            _ => None,
        })
        .collect();
    dirs.par_iter()
        .flat_map_iter(|d| {
            let mut out = Vec::new();
            let Ok(rd) = std::fs::read_dir(d) else {
                return out;
            };
            for child in rd.flatten() {
                let cp = child.path();
                if seen.contains(cp.as_os_str()) || opts.never_walk.contains(&cp) {
                    continue;
                }
                let is_dir = child.file_type().map(|t| t.is_dir()).unwrap_or(false);
                let rel = lossy_rel(root, &cp);
                let path = if is_dir { format!("{rel}/") } else { rel };
                if dir_skipped.contains(&path) {
                    continue;
                }
                let bytes = if is_dir {
                    0
                } else {
                    child.metadata().map(|m| m.len()).unwrap_or(0)
                };
                out.push(Skipped {
                    path,
                    reason: SkipReason::Ignored,
                    bytes,
                });
            }
            out
        })
        .collect()
}

/// What one entry the walk yielded is: classified on the walker's thread.
fn classify_entry(root: &Path, rules: &Rules, e: &ignore::DirEntry, lazy: bool) -> What {
    let Some(ft) = e.file_type() else {
        return What::Other;
    };
    let p = e.path();
    if e.depth() == 0 || ft.is_dir() {
        // Excluded directories were pruned (and recorded) by `filter_entry`.
        return What::Dir;
    }
    let Some(rel) = rel_string(root, p) else {
        return What::Skip(Skipped {
            path: lossy_rel(root, p),
            reason: SkipReason::NonUtf8Name,
            bytes: 0,
        });
    };
    classify_file(
        root,
        rules,
        p,
        rel,
        ft,
        || e.metadata().map(|m| m.len()).unwrap_or(0),
        lazy,
    )
}

/// What the file (or link) `p`, at `rel` under `root`, is: to read, or skipped and why.
fn classify_file(
    root: &Path,
    rules: &Rules,
    p: &Path,
    rel: String,
    ft: std::fs::FileType,
    size: impl Fn() -> u64,
    lazy: bool,
) -> What {
    let skip = |reason, bytes| {
        What::Skip(Skipped {
            path: rel.clone(),
            reason,
            bytes,
        })
    };
    if ft.is_symlink() {
        let reason = match p.canonicalize() {
            Ok(t) if t.starts_with(root) => SkipReason::Symlink,
            Ok(_) => SkipReason::SymlinkOutsideRoot,
            Err(_) => SkipReason::SymlinkBroken,
        };
        return skip(reason, 0);
    }
    if !ft.is_file() {
        return skip(SkipReason::NotAFile, 0);
    }
    if let Some(r) = rules.reason_for_path(&rel) {
        return skip(r, size());
    }
    if lazy {
        return What::File(rel, None);
    }
    let bytes = size();
    if bytes > rules.cfg.max_file_bytes {
        return skip(SkipReason::TooLarge, bytes);
    }
    What::File(rel, Some(bytes))
}

/// Git never ignores a file it tracks: `.gitignore`, `.git/info/exclude` and the global excludes
/// only keep untracked files out. The walk knows nothing of git, so it hid tracked files that such
/// a rule matches (a `build` pattern over a tracked `tools/build/gen.py`, a file added with
/// `git add -f`). `tracked_under` gets the paths the walk recorded as ignored (folders end with
/// `/`) and answers the tracked files at or under them (root-relative); each is put back through
/// the walk's own rules (excluded folders and globs, secret, lock and minified names, the size
/// cap, links, nested repositories) and trove's own ignore files (`.troveignore`, `.ignore`),
/// which do apply to tracked files. An ignored file that is admitted loses its `ignored` row; an
/// ignored folder keeps its own (for what git does not track in it).
pub fn admit_tracked(
    out: &mut WalkResult,
    root: &Path,
    rules: &Rules,
    opts: &WalkOptions,
    tracked_under: impl FnOnce(&[&str]) -> Vec<String>,
) {
    if !rules.cfg.respect_gitignore {
        return;
    }
    let Ok(root) = root.canonicalize() else {
        return;
    };
    let ignored: Vec<&str> = out
        .skipped
        .iter()
        .filter(|s| s.reason == SkipReason::Ignored)
        .map(|s| s.path.as_str())
        .collect();
    if ignored.is_empty() {
        return;
    }
    let mut tracked = tracked_under(&ignored);
    tracked.sort_unstable();
    tracked.dedup();
    let mut own = OwnIgnores::default();
    let mut admitted = HashSet::new();
    for rel in tracked {
        let abs = root.join(&rel);
        if opts.never_walk.iter().any(|n| abs.starts_with(n))
            || rel
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == ".." || c == ".git")
            || rules.folder_skipped(&root, &rel, opts.skip_nested_repos)
            || own.ignores(&root, &rel)
        {
            continue;
        }
        // Its folders must be the real ones under the root: one replaced by a link in the work
        // tree would lead outside it, and nothing outside the root is read.
        let folder = rel.rsplit_once('/').map_or("", |(d, _)| d);
        if abs
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .is_none_or(|p| p != root.join(folder))
        {
            continue;
        }
        // Gone from the work tree (deleted, not yet committed): nothing to read.
        let Ok(meta) = std::fs::symlink_metadata(&abs) else {
            continue;
        };
        match classify_file(
            &root,
            rules,
            &abs,
            rel.clone(),
            meta.file_type(),
            || meta.len(),
            opts.lazy_sizes,
        ) {
            What::File(rel, bytes) => out.files.push(Candidate { rel, abs, bytes }),
            What::Skip(k) => out.skipped.push(k),
            What::Dir | What::Other => continue,
        }
        admitted.insert(rel);
    }
    if admitted.is_empty() {
        return;
    }
    out.skipped
        .retain(|s| !(s.reason == SkipReason::Ignored && admitted.contains(&s.path)));
    out.files.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    out.skipped.sort();
    out.skipped.dedup();
}

/// The folders on the way to the `/`-path `rel`, outermost first (`a`, `a/b` for `a/b/c.py`).
fn folders(rel: &str) -> impl Iterator<Item = &str> {
    rel.match_indices('/').map(|(i, _)| &rel[..i])
}

/// trove's own ignore files (`.ignore`, then `.troveignore`, which wins), per folder, read once.
#[derive(Default)]
struct OwnIgnores {
    by_dir: std::collections::HashMap<String, Option<ignore::gitignore::Gitignore>>,
}

impl OwnIgnores {
    /// Whether the ignore files of the folders from `root` down to `rel`'s ignore `rel` (the
    /// deepest folder whose rules say anything decides, as in the walk).
    fn ignores(&mut self, root: &Path, rel: &str) -> bool {
        let abs = root.join(rel);
        let dirs: Vec<&str> = std::iter::once("").chain(folders(rel)).collect();
        for d in dirs.into_iter().rev() {
            let m = self.by_dir.entry(d.to_string()).or_insert_with(|| {
                let dir = root.join(d);
                let files: Vec<PathBuf> = [".ignore", ".troveignore"]
                    .iter()
                    .map(|n| dir.join(n))
                    .filter(|f| f.is_file())
                    .collect();
                if files.is_empty() {
                    return None;
                }
                let mut b = ignore::gitignore::GitignoreBuilder::new(&dir);
                for f in &files {
                    // A broken line is ignored here as the walk ignores it.
                    let _ = b.add(f);
                }
                b.build().ok()
            });
            if let Some(m) = m {
                let hit = m.matched_path_or_any_parents(&abs, false);
                if hit.is_ignore() {
                    return true;
                }
                if hit.is_whitelist() {
                    return false;
                }
            }
        }
        false
    }
}

/// What the parallel walk yielded: an entry and what it is, or an error.
enum Found {
    Entry(PathBuf, What),
    Error(ignore::Error),
}

/// What a walked entry is.
enum What {
    /// The root or a directory walked into.
    Dir,
    /// A file to read (its size unless the walk leaves sizes to the reader).
    File(String, Option<u64>),
    /// Not indexed, and why.
    Skip(Skipped),
    /// Of no file type the platform reports.
    Other,
}

fn io_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            io_path(err)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        let cfg = crate::config::PipelineConfig::defaults().unwrap().source;
        Rules::new(&cfg, &WalkOptions::default()).unwrap()
    }

    #[test]
    fn classify_reasons() {
        let r = rules();
        assert_eq!(r.classify(b"a\0b".to_vec()), Err(SkipReason::Binary));
        assert_eq!(
            r.classify(vec![0xff, 0xfe, b'a', 0]),
            Err(SkipReason::Utf16)
        );
        assert_eq!(
            r.classify(vec![b'a', 0xc3, 0x28]),
            Err(SkipReason::InvalidUtf8)
        );
        assert_eq!(
            r.classify(b"// Code generated by protoc. DO NOT EDIT.\n".to_vec()),
            Err(SkipReason::Generated)
        );
        assert_eq!(r.classify(vec![b'x'; 5000]), Err(SkipReason::Minified));
        assert_eq!(
            r.classify(b"fn main() {}\n".to_vec()).unwrap(),
            "fn main() {}\n"
        );
        assert_eq!(r.classify(b"\xef\xbb\xbfabc".to_vec()).unwrap(), "   abc");
    }

    #[test]
    fn path_reasons() {
        let r = rules();
        assert_eq!(r.reason_for_path(".env"), Some(SkipReason::SecretFile));
        // direnv's file exports the same variables.
        assert_eq!(
            r.reason_for_path("app/.envrc"),
            Some(SkipReason::SecretFile)
        );
        assert_eq!(r.reason_for_path("src/envrc.rs"), None);
        assert_eq!(
            r.reason_for_path("deploy/.env.production"),
            Some(SkipReason::SecretFile)
        );
        assert_eq!(
            r.reason_for_path("keys/server.pem"),
            Some(SkipReason::SecretFile)
        );
        assert_eq!(
            r.reason_for_path("home/.ssh/id_rsa"),
            Some(SkipReason::SecretFile)
        );
        assert_eq!(r.reason_for_path("Cargo.lock"), Some(SkipReason::Lockfile));
        assert_eq!(
            r.reason_for_path("web/app.min.js"),
            Some(SkipReason::Minified)
        );
        assert_eq!(r.reason_for_path("src/main.rs"), None);
    }
}
