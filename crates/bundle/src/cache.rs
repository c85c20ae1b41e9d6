//! The query cache: derived, query-ready forms of a bundle's tables (the vector matrix, the chunk
//! rows), built on first use and kept in `$TROVE_CACHE_DIR` (else `$XDG_CACHE_HOME/trove`, else
//! `~/.cache/trove`), each file named by the sha256 of the bundle file it derives from, so a changed
//! bundle never meets a stale cache and two copies of one bundle share one.
//!
//! Cached files are memory-mapped: a query touches only the pages it reads, and the page cache holds
//! them between processes. They are written to a temporary name and renamed, so a mapping never sees
//! a file shrink under it; a file that fails its check is rebuilt; a cache that cannot be written only
//! costs speed (the data is then kept in memory for this process).
//!
//! Every new version of a bundle gets new cache files, so the old ones are removed: a file used is
//! touched (its mtime, at most once a day), and when a process writes a cache file it first removes
//! the query-cache files (and sha256 memos) nobody has used for [`UNUSED_DAYS`] days — the first
//! such process of the day, by the cache folder's [`PRUNED`] stamp. A mapping of a removed file
//! stays valid; the `refs` view of a running server writes its file again.
use std::path::Path;

use trove_base::util::cache_dir;

use crate::{Error, Result};
use crate::{Manifest, SegmentInfo};

/// A cached file's bytes: mapped from the cache, or built in memory.
pub enum Bytes {
    /// A read-only mapping of a cache file.
    Mapped(memmap2::Mmap),
    /// Built by this process (the cache could not be written).
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// The sha256 the manifest records for segment `seg`'s `table` (the cache key of what derives
/// from it).
pub fn file_sha(
    bundle: &Path,
    manifest: &Manifest,
    seg: &SegmentInfo,
    table: &str,
) -> Result<String> {
    let name = seg.file(table);
    manifest
        .entry(&name)
        .map(|f| f.sha256.clone())
        .ok_or_else(|| Error::bundle(bundle, format!("manifest lists no {name}")))
}

/// The cache file `name`, when present and `check` accepts it; else `build`'s bytes, stored under
/// `name` for the next process.
pub fn load<E>(
    name: &str,
    check: impl Fn(&[u8]) -> bool,
    build: impl FnOnce() -> std::result::Result<Vec<u8>, E>,
) -> std::result::Result<Bytes, E> {
    let dir = cache_dir();
    let path = dir.as_ref().map(|d| d.join(name));
    if let Some(p) = path.as_deref()
        && let Some(m) = map(p)
        && check(&m)
    {
        touch(p);
        return Ok(Bytes::Mapped(m));
    }
    let bytes = build()?;
    if let Some(d) = &dir {
        prune_unused(d);
    }
    if let Some(p) = &path
        && store(p, &bytes).is_ok()
        && let Some(m) = map(p)
        && check(&m)
    {
        touch(p);
        return Ok(Bytes::Mapped(m));
    }
    Ok(Bytes::Owned(bytes))
}

/// Query-cache files unused for this many days are removed (see the module docs).
pub const UNUSED_DAYS: u64 = 30;

/// The query-cache files this module may remove: those [`load`] and the `refs` view write (and
/// their temporary names, which a killed process may leave): one of these prefixes, then at least
/// 32 hex digits. Nothing else in the folder is touched, should `TROVE_CACHE_DIR` be shared.
fn pruned(name: &str) -> bool {
    ["vectors-", "rows-", "inverted-", "dead-v1-", "refs-v1-"]
        .iter()
        .any(|p| name.strip_prefix(p).is_some_and(|rest| hex_start(rest, 32)))
}

/// The sha256 memos of `verified/`: `stat-` or `bundle-` and 64 hex digits.
fn pruned_memo(name: &str) -> bool {
    ["stat-", "bundle-"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|rest| rest.len() == 64 && hex_start(rest, 64))
    })
}

fn hex_start(s: &str, n: usize) -> bool {
    s.len() >= n
        && s.bytes()
            .take(n)
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Marks the cache file `path` as used now (see [`trove_base::util::touch`]), so [`prune_unused`]
/// keeps it, and remembers it, so [`touch_used`] marks it again while this process runs.
pub fn touch(path: &Path) {
    trove_base::util::touch(path);
    let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
    if !used.1.iter().any(|p| p == path) {
        used.1.push(path.to_path_buf());
    }
}

/// The cache files this process uses, and when it last marked them used.
static USED: std::sync::Mutex<(Option<std::time::Instant>, Vec<std::path::PathBuf>)> =
    std::sync::Mutex::new((None, Vec::new()));

/// Marks every cache file this process has used as used now, at most once a day: a server that
/// mapped its files at start and answers from memory for weeks keeps them (a query calls this).
pub fn touch_used() {
    let day = std::time::Duration::from_secs(86_400);
    let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
    match used.0 {
        Some(t) if t.elapsed() < day => {}
        Some(_) => {
            used.0 = Some(std::time::Instant::now());
            for p in &used.1 {
                trove_base::util::touch(p);
            }
        }
        None => used.0 = Some(std::time::Instant::now()),
    }
}

/// Removes the query-cache files and sha256 memos in `dir` unused for [`UNUSED_DAYS`] days, the
/// unpacked copies of packed bundles (`packed/<sha256>/`, used when their manifest was touched)
/// unused as long, and temporary names an hour old (a killed writer's). At most once a day per
/// cache folder, across processes, by the mtime of its [`PRUNED`] stamp (a busy cache holds
/// hundreds of thousands of memos, and listing them cost every writing command half a second),
/// and once a day per process on top: a server that runs for months prunes as commands do. Other
/// files there (the embedding cache, model paths) are left alone.
pub fn prune_unused(dir: &Path) {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    let day = std::time::Duration::from_secs(86_400);
    {
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < day) {
            return;
        }
        *last = Some(std::time::Instant::now());
    }
    if !claim_prune(dir, day) {
        return;
    }
    let max = std::time::Duration::from_secs(UNUSED_DAYS * 86_400);
    // A temporary name is written and renamed within one build (seconds to minutes); one an
    // hour old is what a killed process left.
    let tmp_max = std::time::Duration::from_secs(3_600);
    let older = |m: &std::fs::Metadata, max: std::time::Duration| {
        m.modified()
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > max))
    };
    let remove_old = |d: &Path, keep: &dyn Fn(&str) -> bool| {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let max = if name.contains(".tmp-") { tmp_max } else { max };
            if !keep(&name) && e.metadata().is_ok_and(|m| m.is_file() && older(&m, max)) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    };
    remove_old(dir, &|n| !pruned(n));
    remove_old(&dir.join("verified"), &|n| !pruned_memo(n));
    let packed = dir.join("packed");
    remove_old(&packed, &|n| !pruned_memo(n));
    for e in std::fs::read_dir(&packed).into_iter().flatten().flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Ok(m) = e.metadata() else { continue };
        if !m.is_dir() {
            continue;
        }
        let unused = if name.len() == 64 && hex_start(&name, 64) {
            // Its manifest's mtime says when it was last used (`pack::open_path`).
            std::fs::metadata(e.path().join(crate::MANIFEST))
                .map_or(older(&m, max), |mm| older(&mm, max))
        } else {
            // An unpacking cut short, or a damaged copy set aside.
            name.starts_with('.')
                && (name.contains(".tmp-") || name.contains(".damaged-"))
                && older(&m, tmp_max)
        };
        if unused {
            // Out of the way at once (a reader opening it meanwhile finds none and unpacks
            // again), then removed.
            let trash = packed.join(format!(".{name}.damaged-{}", std::process::id()));
            if std::fs::rename(e.path(), &trash).is_ok() {
                let _ = std::fs::remove_dir_all(&trash);
            }
        }
    }
}

/// The stamp in a cache folder whose mtime says when a process last pruned it.
const PRUNED: &str = ".pruned";

/// Whether this process should prune `dir` now: its [`PRUNED`] stamp is missing, `every` old or
/// older, or dated in the future (a clock set back); the stamp is then dated now, before pruning,
/// so the processes that start meanwhile skip it. Two that claim it at once both prune, which
/// costs only time. A stamp that cannot be written (a read-only cache) never stops a prune.
fn claim_prune(dir: &Path, every: std::time::Duration) -> bool {
    let stamp = dir.join(PRUNED);
    let fresh = std::fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < every));
    if fresh {
        return false;
    }
    let _ = std::fs::create_dir_all(dir);
    if let Ok(f) = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&stamp)
    {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
    true
}

/// The crate's one `unsafe`: mapping a file (as ripgrep does for search).
#[allow(unsafe_code)]
fn map(path: &Path) -> Option<memmap2::Mmap> {
    let f = std::fs::File::open(path).ok()?;
    // SAFETY: cache files are only ever replaced by rename (see `store`), never written in place,
    // so the mapped file does not change or shrink while mapped; its contents are checked before use.
    unsafe { memmap2::Mmap::map(&f) }.ok()
}

/// A temporary name beside the cache file `path`, of its own for every writer: the handles of a
/// bundle in one process (`trove serve` holds several) may build the same file at once, and two
/// writers of one name would write into the file the other had already renamed into place.
pub fn tmp_path(path: &Path) -> std::path::PathBuf {
    static WRITER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}-{n}", std::process::id()));
    path.with_file_name(name)
}

fn store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = tmp_path(path);
    // A write cut short (a full disk) or a failed rename leaves no partial file behind.
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Little-endian reads at byte offsets (cache files are plain byte layouts, no alignment assumed).
pub fn u32_at(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// The little-endian `u64` at byte `o` of `b`.
pub fn u64_at(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The little-endian `i64` at byte `o` of `b`.
pub fn i64_at(b: &[u8], o: usize) -> i64 {
    u64_at(b, o) as i64
}

#[cfg(test)]
mod tests {
    use super::{PRUNED, claim_prune, pruned, pruned_memo};
    use std::time::{Duration, SystemTime};

    #[test]
    fn one_process_a_day_prunes_a_cache_folder() {
        let dir = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        let stamp = dir.path().join(PRUNED);
        let date = |ago: Duration, ahead: Duration| {
            let f = std::fs::File::options().write(true).open(&stamp).unwrap();
            f.set_modified(SystemTime::now() - ago + ahead).unwrap();
        };
        // No stamp yet: this one prunes, and the next ones that day do not.
        assert!(claim_prune(dir.path(), day));
        assert!(stamp.is_file());
        assert!(!claim_prune(dir.path(), day));
        date(Duration::from_secs(23 * 3600), Duration::ZERO);
        assert!(!claim_prune(dir.path(), day));
        // A day later the next one prunes and dates the stamp again.
        date(Duration::from_secs(25 * 3600), Duration::ZERO);
        assert!(claim_prune(dir.path(), day));
        assert!(!claim_prune(dir.path(), day));
        // A stamp dated ahead (the clock set back) does not stop pruning for good.
        date(Duration::ZERO, 30 * day);
        assert!(claim_prune(dir.path(), day));
        assert!(!claim_prune(dir.path(), day));
        // A cache folder not made yet is made with its stamp.
        let new = dir.path().join("new");
        assert!(claim_prune(&new, day) && new.join(PRUNED).is_file());
    }

    #[test]
    fn only_the_names_the_query_cache_writes_are_pruned() {
        let h = "0123456789abcdef".repeat(4);
        for name in [
            format!("vectors-{h}.i8"),
            format!("rows-{h}-{h}-w7200.bin"),
            format!("inverted-{h}-{h}.bin"),
            format!("dead-v1-{}", &h[..32]),
            format!("refs-v1-{}.parquet", &h[..32]),
            format!("refs-v1-{}.parquet.tmp-12-0", &h[..32]),
        ] {
            assert!(pruned(&name), "{name}");
        }
        for name in [
            "rows.csv",
            "vectors.npy",
            "inverted_index.json",
            "vectors-notes.txt",
            "refs-v1-ABCDEF0123456789ABCDEF0123456789.parquet",
            "embeddings",
        ] {
            assert!(!pruned(name), "{name}");
        }
        assert!(pruned_memo(&format!("stat-{h}")) && pruned_memo(&format!("bundle-{h}")));
        assert!(!pruned_memo("stat-1") && !pruned_memo(&format!("notes-{h}")));
    }
}
