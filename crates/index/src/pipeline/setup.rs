//! Setting up a run: the checks on the root and the output, the stages it loads (languages, SCIP
//! indexes, embedder, summarizer), and what it settles before building — the git stamp, the
//! walk, git status and the reuse plan.
use std::path::{Path, PathBuf};

use super::build_bundle::BuildInputs;
use super::git::git_stamp;
use super::incremental;
use super::options::IndexOptions;
use super::walk::walk_tree;
use super::worktree::{TrackedStatus, git_status};
use crate::scip_import::ScipIndex;
use crate::source::Rules;
use crate::summarize::Summarizer;
use crate::{Error, Result};
use trove_bundle as bundle;
use trove_embed::EmbedStage;
use trove_lang::lang::Registry;

/// The stages a run loads before it walks: the languages, the SCIP indexes, the embedder and
/// the summarizer.
pub(super) struct LoadedStages {
    registry: Registry,
    scip: ScipIndex,
    embedder: EmbedStage,
    summarizer: Box<dyn Summarizer>,
}

impl LoadedStages {
    /// Loads the stages of the run `opts` at `root` (canonical).
    pub(super) fn load(root: &Path, opts: &IndexOptions) -> Result<Self> {
        let registry = load_registry(root, &opts.languages_dirs)?;
        let scip = load_scip(root, opts)?;
        let backend =
            trove_embed::from_config(&opts.config.embed, opts.config.bm25.max_token_len, None)?;
        let cache_root = opts
            .config
            .embed
            .cache
            .then(trove_base::util::cache_dir)
            .flatten();
        if opts.config.embed.backend == trove_embed::EmbedBackend::Local {
            // The folder that was loaded: the one given, or the one shipped beside trove.
            let dir = match opts.config.embed.model_dir.trim() {
                "" => trove_embed::shipped::default_model_dir()
                    .map(|d| d.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                d => d.to_string(),
            };
            if !dir.is_empty() {
                trove_embed::remember_model_dir(&backend.fingerprint(), &dir);
            }
        }
        let embedder = EmbedStage::new(backend, cache_root.as_deref());
        let summarizer = crate::summarize::from_config(&opts.config.summary)?;
        Ok(LoadedStages {
            registry,
            scip,
            embedder,
            summarizer,
        })
    }

    /// What the run `opts` at `root` (canonical) writing `out` settles before building: the git
    /// stamp, the walk, git status and the reuse plan.
    pub(super) fn prepare(
        &self,
        opts: &IndexOptions,
        root: &Path,
        out: &Path,
    ) -> Result<BuildInputs<'_>> {
        let started = std::time::Instant::now();
        let (source, repo) = git_stamp(root);
        // The walk comes first: the work tree's untracked files are read off it, so git status has
        // only the tracked files to look at.
        let mut walk_opts = opts.walk.clone();
        walk_opts.never_walk.push(out.to_path_buf());
        walk_opts.never_walk.push(bundle::temp_beside(out));
        walk_opts.never_walk.push(bundle::lock_path(out));
        walk_opts.skip_nested_repos = source.commit.is_some();
        walk_opts.lazy_sizes = opts.since.is_some();
        let rules = Rules::new(&opts.config.source, &walk_opts)?;
        // git status of the tracked files runs meanwhile, in its own process, and a thread reads
        // HEAD's tree (its files; for --since, the diff from the bundle's commit).
        let base_commit = opts
            .since
            .as_ref()
            .and_then(|_| bundle::read_manifest(out).ok())
            .and_then(|m| m.source.commit);
        let status = repo.as_ref().map(|(_, workdir)| {
            let prefix = source.subdir.as_deref().unwrap_or("");
            TrackedStatus::start(workdir, prefix, base_commit)
        });
        let walked = walk_tree(
            root,
            &rules,
            &walk_opts,
            repo.as_ref().map(|(r, w)| (r, w.as_path())),
        )?;
        let (source, uncommitted) = git_status(source, repo, status, out, &walked);
        let expect = incremental::Expect {
            pipeline_hash: opts.config.hash(),
            embedder_fingerprint: self.embedder.backend().fingerprint(),
            languages_hash: self.registry.fingerprint().to_string(),
            subdir: source.subdir.clone(),
            checkout: source.checkout.clone(),
            shard: opts.shard,
            scip: !self.scip.is_empty(),
        };
        let plan = incremental::plan(
            root,
            out,
            opts.since.as_ref(),
            opts.include_uncommitted,
            uncommitted,
            &expect,
        )?;
        let clock = super::timings::Clock::default();
        clock.add(super::timings::Stage::Walk, started.elapsed());
        Ok(BuildInputs {
            clock,
            registry: &self.registry,
            embedder: &self.embedder,
            summarizer: &*self.summarizer,
            scip: &self.scip,
            source,
            plan,
            rules,
            walked,
        })
    }
}

/// The SCIP indexes of the run: `--scip` files, and the root's `index.scip` unless `--no-scip`
/// (or it was given).
fn load_scip(root: &Path, opts: &IndexOptions) -> Result<ScipIndex> {
    let mut files = opts.scip.clone();
    let default = root.join(crate::scip_import::DEFAULT_FILE);
    if !opts.no_scip
        && default.is_file()
        && !files
            .iter()
            .any(|f| f.canonicalize().is_ok_and(|f| f == default))
    {
        files.insert(0, default);
    }
    ScipIndex::load(root, &files)
}

/// The run's root, canonical, once the configuration has passed its checks.
pub(super) fn checked_root(opts: &IndexOptions) -> Result<PathBuf> {
    opts.config.validate()?;
    opts.root
        .canonicalize()
        .map_err(|e| Error::io(&opts.root, e))
}

/// The built-in languages, then the repo's `.trove/languages`, then `--languages` directories.
pub(super) fn load_registry(root: &Path, extra: &[PathBuf]) -> Result<Registry> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let repo_langs = root.join(".trove/languages");
    if repo_langs.is_dir() {
        dirs.push(repo_langs);
    }
    dirs.extend(extra.iter().cloned());
    Ok(Registry::load(
        &dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?)
}

/// Refuses to replace anything that is not a trove bundle (or an empty directory), and an output
/// that is the indexed tree itself or contains it.
pub(super) fn check_output(out: &Path, root: &Path) -> Result<()> {
    if root.starts_with(out) {
        return Err(Error::bad_input(format!(
            "output {} would contain the indexed tree {}: choose another -o",
            out.display(),
            root.display()
        )));
    }
    Ok(bundle::check_replaceable(out)?)
}
