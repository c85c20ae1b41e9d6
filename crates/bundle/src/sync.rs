//! `trove sync SRC DEST`: brings the bundle DEST up to the published bundle SRC by fetching only
//! the files DEST lacks.
//!
//! Input: SRC, a bundle directory, a packed `.trove` file, or the `http(s)://` URL of a bundle
//! directory published as it is (`manifest.json`, `views.sql`, `segments/<id>/*.parquet`); DEST,
//! a bundle directory (or a path to create). Output: DEST equal to SRC, file for file.
//!
//! SRC's manifest is read first and checked (format, file names inside the bundle, every
//! segment's tables listed, one embedder). Segments are immutable and their files named by
//! segment id, so a file DEST already has under the same name with the sha256 SRC's manifest
//! records (checked through the stat memo) is reused by a hard link; every other file is fetched
//! and its size and sha256 checked against SRC's manifest. The new DEST is built beside the old
//! one and swapped in with SRC's manifest, byte for byte, written last: a damaged or missing file
//! on the server, or a killed run, leaves DEST as it was. Downloads gather beside DEST (in
//! `.DEST.sync-partial/`), so a sync that fails halfway (a dropped connection, a killed run) is resumed by
//! the next one: whole files are not fetched again, a file cut off is continued with an HTTP
//! range request.
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::manifest::{
    FileEntry, MANIFEST, MAX_MANIFEST_BYTES, Manifest, is_bundle_file, parse_manifest,
};
use crate::{Error, Result};

/// What a sync did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct SyncSummary {
    /// The source, as given.
    pub source: String,
    /// DEST already equalled SRC: nothing was fetched or written.
    pub up_to_date: bool,
    /// Segments of the synced bundle.
    pub segments: usize,
    /// Of those, segments DEST lacked (one or more files fetched).
    pub segments_fetched: usize,
    /// Files fetched from SRC (the manifest included).
    pub files_fetched: usize,
    /// Bytes fetched from SRC (the manifest included).
    pub bytes_fetched: u64,
    /// Bytes DEST already had and kept.
    pub bytes_reused: u64,
    /// Bytes an interrupted sync into DEST had fetched, used instead of fetching them again.
    pub bytes_resumed: u64,
    /// Bytes of the synced bundle (its data files and views).
    pub bundle_bytes: u64,
    /// Wall time in seconds.
    pub wall_secs: f64,
}

/// Options of a sync.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// Seconds before an HTTP request gives up (per try).
    pub timeout_secs: u64,
    /// Tries again after a timeout, a broken connection or a 408/429/5xx.
    pub retries: u32,
    /// A byte-count progress bar on a terminal.
    pub progress: bool,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions {
            timeout_secs: 300,
            retries: 3,
            progress: false,
        }
    }
}

/// Where the files come from.
enum Source {
    /// A bundle directory on this machine.
    Dir(PathBuf),
    /// The base URL of a published bundle directory.
    #[cfg(feature = "http")]
    Http {
        base: String,
        client: trove_base::http::Client,
    },
}

impl Source {
    fn open(src: &str, opts: &SyncOptions) -> Result<Source> {
        let lower = src.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            if src.contains(['?', '#']) {
                return Err(Error::bad_input(format!(
                    "{}: a URL with a query string or fragment cannot be carried over to each \
                     file of the bundle: give the plain URL of the bundle folder (an access token \
                     goes in $TROVE_SYNC_TOKEN)",
                    trove_base::util::hide_userinfo(src)
                )));
            }
            #[cfg(feature = "http")]
            {
                let base = src
                    .trim_end_matches('/')
                    .trim_end_matches(MANIFEST)
                    .trim_end_matches('/')
                    .to_string();
                let client = trove_base::http::Client::from_config(
                    opts.timeout_secs,
                    opts.retries,
                    "TROVE_SYNC_TOKEN",
                )
                .for_downloads(lower.starts_with("https://"));
                return Ok(Source::Http { base, client });
            }
            #[cfg(not(feature = "http"))]
            {
                let _ = opts;
                return Err(Error::bad_input(format!(
                    "{}: this trove was built without HTTP support (cargo feature `openai`)",
                    trove_base::util::hide_userinfo(src)
                )));
            }
        }
        let _ = opts;
        if let Some((scheme, _)) = src.split_once("://")
            && !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !Path::new(src).exists()
        {
            return Err(Error::bad_input(format!(
                "{}: trove sync reads http:// and https:// URLs, bundle directories and .trove \
                 files, not {scheme}:// (copy the bundle here first, or publish it over HTTP)",
                trove_base::util::hide_userinfo(src)
            )));
        }
        Ok(Source::Dir(super::pack::open_path(Path::new(src))?))
    }

    /// The bytes of the source file `name`, at most `limit`.
    fn read(&self, name: &str, limit: u64) -> Result<Vec<u8>> {
        match self {
            // A regular file only, read no further than the limit (the rule a bundle's own
            // manifest is read by: a FIFO or a device there is refused, not read).
            Source::Dir(d) => super::read_small(&d.join(name), limit).map_err(|e| {
                Error::bundle(
                    d,
                    format!("cannot read {name}: {e} (is this a trove bundle?)"),
                )
            }),
            #[cfg(feature = "http")]
            Source::Http { base, client } => {
                let mut out = Vec::new();
                client
                    .get_into(&format!("{base}/{name}"), &mut out, limit)
                    .map_err(|e| Error::remote(format!("cannot fetch {name}: {e}")))?;
                Ok(out)
            }
        }
    }

    /// Puts the source file of manifest entry `e` at `dst`, checked against its size and
    /// sha256: a hard link or copy from a directory, a download from a URL. A download goes
    /// through `stage` (see [`Staged`]), so what an interrupted run fetched is not fetched again.
    fn fetch(&self, e: &FileEntry, dst: &Path, stage: &Staged) -> Result<Got> {
        let _ = stage;
        let got = match self {
            Source::Dir(d) => {
                // A regular file of the size listed: a link (which a hard link would carry over
                // as it is) or a FIFO there is no bundle file.
                let p = d.join(&e.name);
                let meta = std::fs::symlink_metadata(&p).map_err(|err| Error::io(&p, err))?;
                if !meta.is_file() || meta.len() != e.bytes {
                    return Err(Error::bundle(
                        d,
                        format!(
                            "{} is not a regular file of the {} bytes its manifest records",
                            e.name, e.bytes
                        ),
                    ));
                }
                super::link_or_copy(&p, dst)?;
                check_fetched(e, dst)?;
                Got {
                    fetched: e.bytes,
                    resumed: 0,
                }
            }
            #[cfg(feature = "http")]
            Source::Http { base, client } => {
                let url = format!("{base}/{}", e.name);
                let got = stage.download(e, |f| {
                    client
                        .get_resuming(&url, f, e.bytes)
                        .map_err(|err| Error::remote(format!("cannot fetch {}: {err}", e.name)))
                })?;
                super::link_or_copy(&stage.done(e), dst)?;
                got
            }
        };
        Ok(got)
    }

    /// Whether its files are downloaded (not linked from this machine).
    fn downloads(&self) -> bool {
        !matches!(self, Source::Dir(_))
    }

    /// The source as a path for error messages.
    fn label(&self) -> PathBuf {
        match self {
            Source::Dir(d) => d.clone(),
            #[cfg(feature = "http")]
            Source::Http { base, .. } => {
                PathBuf::from(trove_base::util::hide_userinfo(base).as_ref())
            }
        }
    }
}

/// Whether `a` and `b` are on one filesystem (a hard link from one to the other can be made).
fn same_filesystem(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev(),
        _ => false,
    }
}

/// Refuses the file `e` fetched to `at` unless it has the size and sha256 `e` records.
fn check_fetched(e: &FileEntry, at: &Path) -> Result<()> {
    let (bytes, sha) = super::table::hash_file(at)?;
    if bytes != e.bytes || sha != e.sha256 {
        return Err(Error::failed(
            trove_base::error::ErrorKind::Corrupt,
            format!(
                "{} does not match the size and sha256 its manifest records (damaged, or changed \
             while syncing)",
                e.name
            ),
        ));
    }
    Ok(())
}

/// Where the downloads of a sync into DEST gather (`<parent>/.<name>.sync-partial/`), each named
/// by its sha256: `<sha256>.part` while it comes, `<sha256>` once whole and checked. A sync that
/// fails or is killed leaves it, and the next one (which holds DEST's lock, as this one did)
/// resumes from it: a whole file is not fetched again, a part is continued where the server
/// sends ranges. A sync that succeeds removes it.
struct Staged {
    dir: PathBuf,
    /// Whole files an earlier run left (by sha256), not yet used by this one.
    earlier: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

/// Bytes of one file fetched by this run, and fetched by an earlier one and kept.
struct Got {
    fetched: u64,
    resumed: u64,
}

impl Staged {
    /// The staging folder of `dest`. One that is there already must be a folder of this user's
    /// that no one else can write (not a link): its files are reused, linked into DEST, and
    /// removed, so a folder another user planted beside a DEST in a shared directory is refused.
    fn beside(dest: &Path) -> Result<Staged> {
        let staged = Staged {
            dir: super::output::hidden_beside(dest, "sync-partial"),
            earlier: Default::default(),
        };
        staged.check_owned()?;
        Ok(staged)
    }

    /// Refuses the folder when it exists and is not this user's own (see [`Staged::beside`]).
    fn check_owned(&self) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        let Ok(m) = std::fs::symlink_metadata(&self.dir) else {
            return Ok(());
        };
        if m.is_dir() && m.uid() == rustix::process::geteuid().as_raw() && m.mode() & 0o022 == 0 {
            return Ok(());
        }
        Err(Error::bad_input(format!(
            "refusing {}: a sync keeps its downloads there, and it is not a folder of this \
             user's that only this user can write (remove it)",
            self.dir.display()
        )))
    }

    /// The checked, whole download of `e`.
    #[cfg(feature = "http")]
    fn done(&self, e: &FileEntry) -> PathBuf {
        self.dir.join(&e.sha256)
    }

    /// Bytes held for the files of `wanted`, after removing whatever else an earlier run left
    /// (files of a manifest since replaced, anything but a file). Notes the whole files, which
    /// [`Staged::download`] counts as resumed.
    fn keep_only(&self, wanted: &[&FileEntry]) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut held = 0;
        let mut earlier = self.earlier.borrow_mut();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let sha = name.strip_suffix(".part").unwrap_or(&name);
            let size = entry.metadata().map_or(0, |m| m.len());
            let file = entry.file_type().is_ok_and(|t| t.is_file());
            match wanted.iter().find(|e| e.sha256 == sha) {
                Some(e) if file && size <= e.bytes => {
                    held += size;
                    if sha == name {
                        earlier.insert(name);
                    }
                }
                _ => {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        held
    }

    /// Bytes held now.
    fn held(&self) -> u64 {
        std::fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// Makes [`Staged::done`] of `e`: continues or starts its part with `get` (which appends
    /// to the file it is given, returning the bytes of it that were there and kept), checks
    /// it, and names it done. A resumed part that fails the check is fetched once more from
    /// its start. Returns the bytes fetched now and those an earlier run had fetched.
    #[cfg(feature = "http")]
    fn download(
        &self,
        e: &FileEntry,
        mut get: impl FnMut(&mut std::fs::File) -> Result<u64>,
    ) -> Result<Got> {
        let done = self.done(e);
        if std::fs::symlink_metadata(&done).is_ok_and(|m| m.is_file() && m.len() == e.bytes)
            && check_fetched(e, &done).is_ok()
        {
            // Fetched by an earlier run, or by this one for another entry of the same bytes.
            let earlier = self.earlier.borrow_mut().remove(&e.sha256);
            return Ok(Got {
                fetched: 0,
                resumed: if earlier { e.bytes } else { 0 },
            });
        }
        match std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&self.dir)
        {
            Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(Error::io(&self.dir, err));
            }
            _ => self.check_owned()?,
        }
        let part = self.dir.join(format!("{}.part", e.sha256));
        let mut fresh = false;
        loop {
            let mut flags = rustix::fs::OFlags::RDWR
                | rustix::fs::OFlags::CREATE
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC;
            if fresh {
                flags |= rustix::fs::OFlags::TRUNC;
            }
            let fd = rustix::fs::open(&part, flags, rustix::fs::Mode::from_raw_mode(0o600))
                .map_err(|err| Error::io(&part, err.into()))?;
            let mut f = std::fs::File::from(fd);
            let kept = get(&mut f)?;
            f.sync_all().map_err(|err| Error::io(&part, err))?;
            drop(f);
            match check_fetched(e, &part) {
                Ok(()) => {
                    std::fs::rename(&part, &done).map_err(|err| Error::io(&part, err))?;
                    return Ok(Got {
                        fetched: e.bytes - kept,
                        resumed: kept,
                    });
                }
                Err(err) => {
                    let _ = std::fs::remove_file(&part);
                    if fresh || kept == 0 {
                        return Err(err);
                    }
                    fresh = true;
                }
            }
        }
    }

    /// Removes it (the sync it served is complete).
    fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Refuses a source manifest DEST could not be made from: another format, a file name outside
/// the bundle, a file it does not list or one no segment owns, segments of another embedder.
fn check_published(src: &Path, m: &Manifest) -> Result<()> {
    let bad = |msg: String| Error::bundle(src, msg);
    // A newer minor is read and copied whole (what it adds rides along); an older major or a
    // feature this trove does not know is refused when the manifest is parsed.
    if m.segments.is_empty() {
        return Err(bad(format!("{MANIFEST} lists no segment")));
    }
    m.check_segments(src)?;
    let owned: Vec<String> = m
        .segments
        .iter()
        .map(|s| format!("{}/{}/", super::SEGMENTS, s.id))
        .collect();
    for e in &m.files {
        if !is_bundle_file(&e.name) || e.name == MANIFEST {
            return Err(bad(format!(
                "{MANIFEST} names a file outside the bundle: {:?}",
                e.name
            )));
        }
        if e.sha256.len() != 64
            || !e
                .sha256
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(bad(format!(
                "{MANIFEST} records {:?} as the sha256 of {}: not 64 lower-case hex digits",
                e.sha256.chars().take(80).collect::<String>(),
                e.name
            )));
        }
        if e.name != super::VIEWS && !owned.iter().any(|o| e.name.starts_with(o.as_str())) {
            return Err(bad(format!(
                "{MANIFEST} lists {}, which belongs to no segment it lists",
                e.name
            )));
        }
    }
    for name in m.segment_files() {
        if m.entry(&name).is_none() {
            return Err(bad(format!("{MANIFEST} does not list {name}")));
        }
    }
    Ok(())
}

/// Whether DEST's file `e.name` can be kept: DEST's manifest lists it with SRC's sha256 and size,
/// and the file still has them.
fn reusable(dest: &Path, old: Option<&Manifest>, e: &FileEntry, memo: &Path) -> bool {
    let Some(o) = old.and_then(|m| m.entry(&e.name)) else {
        return false;
    };
    if o.sha256 != e.sha256 || o.bytes != e.bytes {
        return false;
    }
    let p = dest.join(&e.name);
    std::fs::metadata(&p).is_ok_and(|m| m.is_file() && m.len() == e.bytes)
        && super::pack::content_key(&p, memo).is_ok_and(|sha| sha == e.sha256)
}

/// A folder of this run's, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// SRC opened: where its files come from, the path messages name it by, and for a packed SRC,
/// DEST's lock and the folder it was unpacked into.
struct Opened {
    /// DEST's lock, taken before unpacking, and the scratch folder SRC was unpacked into.
    unpacked: Option<(super::OutputLock, Scratch)>,
    source: Source,
    label: PathBuf,
}

/// Opens SRC for a sync into `dest`.
fn open_source(src: &str, dest: &Path, opts: &SyncOptions) -> Result<Opened> {
    // A packed file is unpacked beside DEST for this run (links into DEST cost nothing there) and
    // removed after, not into the shared cache, which would keep a full copy of every version
    // synced.
    let packed = Path::new(src);
    let unpacked = if !src.contains("://") && super::pack::is_packed(packed) {
        let lock = super::lock_output(dest)?;
        let mut dir = super::temp_beside(dest).into_os_string();
        dir.push("-src");
        let dir = Scratch(PathBuf::from(dir));
        super::pack::unpack_into(packed, &dir.0)?;
        Some((lock, dir))
    } else {
        None
    };
    let (source, label) = match &unpacked {
        Some((_, dir)) => (Source::Dir(dir.0.clone()), packed.to_path_buf()),
        None => {
            let s = Source::open(src, opts)?;
            let label = s.label();
            (s, label)
        }
    };
    Ok(Opened {
        unpacked,
        source,
        label,
    })
}

/// The byte-count progress bar of a sync fetching `to_fetch` bytes; hidden unless `show`.
fn progress_bar(show: bool, to_fetch: u64) -> indicatif::ProgressBar {
    if show {
        let b = indicatif::ProgressBar::with_draw_target(
            Some(to_fetch),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} syncing [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            b.set_style(style.progress_chars("=> "));
        }
        b
    } else {
        indicatif::ProgressBar::hidden()
    }
}

/// Refuses the sync before a byte is fetched where `wanted` and the manifest (`manifest_bytes`)
/// cannot fit beside `dest`, less the `held` bytes an interrupted sync fetched.
fn check_space(
    dest: &Path,
    source: &Source,
    label: &Path,
    wanted: &[&FileEntry],
    manifest_bytes: u64,
    held: u64,
) -> Result<()> {
    // Refused before a byte is fetched where it cannot fit (a server that declares more than the
    // disk holds would otherwise fill it before the first sha256 fails). Each file takes whole
    // blocks, the manifest too; a directory on DEST's filesystem is hard-linked, at no cost.
    let parent = dest.parent().unwrap_or(Path::new("."));
    let block = |n: u64| n.div_ceil(4096) * 4096;
    let copied = match source {
        Source::Dir(d) => !same_filesystem(d, parent),
        #[cfg(feature = "http")]
        Source::Http { .. } => true,
    };
    let need = if copied {
        wanted.iter().map(|e| block(e.bytes)).sum::<u64>() + block(manifest_bytes)
    } else {
        block(manifest_bytes)
    }
    .saturating_sub(held);
    if let Some(free) = super::free_bytes(parent)
        && need > free
    {
        return Err(Error::failed(
            trove_base::error::ErrorKind::DiskFull,
            format!(
                "{} needs {need} bytes {} {}, and {} has {free} free: nothing was changed",
                dest.display(),
                if source.downloads() {
                    "fetched from"
                } else {
                    "copied from"
                },
                label.display(),
                parent.display()
            ),
        ));
    }
    Ok(())
}

/// Fetches `e` from `source` to `dst`; a failure says that `dest` was not changed, and where the
/// bytes fetched so far are kept for the next sync.
fn fetch_file(
    source: &Source,
    stage: &Staged,
    label: &Path,
    dest: &Path,
    e: &FileEntry,
    dst: &Path,
) -> Result<Got> {
    source.fetch(e, dst, stage).map_err(|err| {
        let held = stage.held();
        let resume = if source.downloads() && held > 0 {
            format!(
                "; the {held} bytes fetched are kept in {} and the next sync resumes \
                 from them",
                stage.dir.display()
            )
        } else {
            String::new()
        };
        Error::bundle(
            label,
            format!("{err}: nothing was changed in {}{resume}", dest.display()),
        )
    })
}

/// Brings the bundle at `dest` up to `src`; see the module docs.
pub fn run_sync(src: &str, dest: &Path, opts: &SyncOptions) -> Result<(Manifest, SyncSummary)> {
    let started = Instant::now();
    let dest = super::output_path(dest)?;
    let Opened {
        unpacked,
        source,
        label,
    } = open_source(src, &dest, opts)?;
    let text = source.read(MANIFEST, MAX_MANIFEST_BYTES)?;
    let text = String::from_utf8(text)
        .map_err(|_| Error::bundle(&label, format!("{MANIFEST} is not UTF-8 text")))?;
    let m = parse_manifest(&label, &text)?;
    check_published(&label, &m)?;
    let _lock = match unpacked {
        Some((lock, dir)) => (lock, Some(dir)),
        None => (super::lock_output(&dest)?, None),
    };
    super::check_replaceable(&dest)?;
    let old = super::read_manifest(&dest).ok();
    let memo = super::pack::memo_root();
    let mut summary = SyncSummary {
        source: trove_base::util::hide_userinfo(src).into_owned(),
        segments: m.segments.len(),
        bundle_bytes: m.files.iter().map(|e| e.bytes).sum(),
        ..SyncSummary::default()
    };
    let keep: Vec<bool> = m
        .files
        .iter()
        .map(|e| reusable(&dest, old.as_ref(), e, &memo))
        .collect();
    let same_manifest = std::fs::read_to_string(dest.join(MANIFEST)).is_ok_and(|t| t == text);
    let stage = Staged::beside(&dest)?;
    if same_manifest && keep.iter().all(|k| *k) {
        stage.remove();
        summary.up_to_date = true;
        summary.bytes_reused = summary.bundle_bytes;
        summary.wall_secs = started.elapsed().as_secs_f64();
        return Ok((m, summary));
    }
    let wanted: Vec<&FileEntry> = m
        .files
        .iter()
        .zip(&keep)
        .filter(|(_, k)| !**k)
        .map(|(e, _)| e)
        .collect();
    let to_fetch: u64 = wanted.iter().map(|e| e.bytes).sum();
    // What an interrupted sync fetched of these is on disk already.
    let held = if source.downloads() {
        stage.keep_only(&wanted)
    } else {
        0
    };
    let bar = progress_bar(opts.progress, to_fetch);
    check_space(&dest, &source, &label, &wanted, text.len() as u64, held)?;
    let mut fetched_segments = std::collections::BTreeSet::new();
    super::build_beside(&dest, |tmp| {
        for (e, keep) in m.files.iter().zip(&keep) {
            let dst = tmp.join(&e.name);
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent).map_err(|err| Error::io(parent, err))?;
            }
            if *keep {
                super::link_or_copy(&dest.join(&e.name), &dst)?;
                summary.bytes_reused += e.bytes;
                continue;
            }
            let got = fetch_file(&source, &stage, &label, &dest, e, &dst)?;
            super::pack::remember(&dst, &e.sha256, &memo);
            summary.files_fetched += 1;
            summary.bytes_fetched += got.fetched;
            summary.bytes_resumed += got.resumed;
            if let Some(seg) = e.name.split('/').nth(1)
                && e.name.starts_with(super::SEGMENTS)
            {
                fetched_segments.insert(seg.to_string());
            }
            bar.inc(e.bytes);
        }
        super::manifest::write_manifest_text(tmp, &text)
    })
    .inspect_err(|_| bar.abandon())?;
    stage.remove();
    bar.finish_and_clear();
    super::pack::remember_bundle(&dest, &m);
    summary.files_fetched += 1;
    summary.bytes_fetched += text.len() as u64;
    summary.segments_fetched = fetched_segments.len();
    summary.wall_secs = started.elapsed().as_secs_f64();
    Ok((m, summary))
}
