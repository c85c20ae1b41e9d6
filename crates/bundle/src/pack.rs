//! Packed bundles: one file to ship. A packed bundle is a tar of `manifest.json`, `views.sql` and
//! the segments' Parquet files (regular files only, fixed headers: the same bundle always packs to
//! the same bytes), compressed as one zstd frame with its content checksum.
//!
//! Reading one back checks everything before anything is used: each tar entry must be a regular
//! file with a bundle file's path ([`super::is_bundle_file`]: no `..`, no other folder, no
//! link), the zstd checksum must hold, and the
//! unpacked bundle must pass [`super::verify`] (every file's size and sha256 against the
//! manifest). Unpacking writes into a temp directory beside the target and swaps it in whole.
//! `trove query`/`sql` read a packed file directly: it is unpacked once into the cache, keyed by
//! the file's sha256.
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::manifest::{MANIFEST, MAX_MANIFEST_BYTES, Manifest};
use crate::{Error, Result};

/// The first four bytes of a zstd frame: how a packed bundle is told from anything else.
pub use crate::is_packed;
/// zstd level: the Parquet pages are already zstd-compressed, so more effort buys almost nothing.
const LEVEL: i32 = 3;

/// What `pack` wrote.
#[derive(Debug, serde::Serialize)]
pub struct PackSummary {
    /// Files packed (manifest included).
    pub files: usize,
    /// Bytes of the bundle's files.
    pub bundle_bytes: u64,
    /// Bytes of the packed file.
    pub packed_bytes: u64,
    /// sha256 of the packed file.
    pub sha256: String,
}

/// Whether `p` is `dir` or lies under it, links resolved (false when either does not exist).
fn within(p: &Path, dir: &Path) -> bool {
    matches!((p.canonicalize(), dir.canonicalize()), (Ok(p), Ok(d)) if p.starts_with(&d))
}

/// Packs the bundle at `dir` (verified first) into `out`, written under a temp name and renamed.
pub fn pack(dir: &Path, out: &Path) -> Result<PackSummary> {
    let report = super::verify(dir)?;
    // The manifest packed is the one verified (its segments' files never change): a run that
    // commits to the bundle meanwhile cannot pair a newer manifest with these files.
    let manifest_path = dir.join(MANIFEST);
    let manifest_bytes = std::fs::read(&manifest_path).map_err(|e| Error::io(&manifest_path, e))?;
    let same = std::str::from_utf8(&manifest_bytes)
        .ok()
        .and_then(|t| super::parse_manifest(dir, t).ok())
        .is_some_and(|m| m == report.manifest);
    if !same {
        return Err(Error::bundle(
            dir,
            "changed while it was checked (a run committed to it): pack it again",
        ));
    }
    check_pack_target(dir, out)?;
    let mut names = vec![MANIFEST.to_string()];
    names.extend(report.manifest.files.iter().map(|f| f.name.clone()));
    // One pack into `out` at a time; holding the lock, what a killed pack left beside it goes.
    let _lock = super::lock_output(out)?;
    let tmp = super::temp_beside(out);
    let written = write_pack(&tmp, dir, &names, &manifest_bytes);
    let bundle_bytes = match written {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, out).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(out, e)
    })?;
    let (packed_bytes, sha256) = super::table::hash_file(out)?;
    Ok(PackSummary {
        files: names.len(),
        bundle_bytes,
        packed_bytes,
        sha256,
    })
}

/// Refuses to pack the bundle at `dir` into `out` where `out` is a folder, lies inside the bundle,
/// has no folder, or is a file other than a packed bundle.
fn check_pack_target(dir: &Path, out: &Path) -> Result<()> {
    if out.is_dir() {
        return Err(Error::bad_input(format!(
            "{} is a directory: give the packed file's path (e.g. app.trove)",
            out.display()
        )));
    }
    // Inside the bundle it would replace one of the files it packs, or be one more file there.
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if within(parent, dir) {
        return Err(Error::bad_input(format!(
            "{} is inside the bundle {}: write the packed file beside it",
            out.display(),
            dir.display()
        )));
    }
    if !parent.is_dir() {
        return Err(Error::not_found(format!(
            "{}: the folder {} does not exist",
            out.display(),
            parent.display()
        )));
    }
    // A packed bundle written before is replaced; any other file is the user's.
    if (out.exists() || out.is_symlink()) && !is_packed(out) {
        return Err(Error::bad_input(format!(
            "{} exists and is not a packed bundle: trove pack replaces only a packed file \
             (remove it, or choose another path)",
            out.display()
        )));
    }
    Ok(())
}

/// Writes the packed file `tmp`: the files `names` of the bundle at `dir` (the manifest from
/// `manifest_bytes`) as a tar with fixed headers in one zstd frame, synced. Returns the bytes of
/// the bundle's files.
fn write_pack(tmp: &Path, dir: &Path, names: &[String], manifest_bytes: &[u8]) -> Result<u64> {
    let io = |e| Error::io(tmp, e);
    let f = File::create(tmp).map_err(io)?;
    let mut z = zstd::Encoder::new(BufWriter::new(f), LEVEL).map_err(io)?;
    z.include_checksum(true).map_err(io)?;
    let mut tar = tar::Builder::new(z);
    let mut bundle_bytes = 0;
    for name in names {
        let p = dir.join(name);
        // The manifest from the bytes verified; every other file from its segment.
        let (src, len): (Box<dyn Read>, u64) = if name == MANIFEST {
            (Box::new(manifest_bytes), manifest_bytes.len() as u64)
        } else {
            let f = File::open(&p).map_err(|e| Error::io(&p, e))?;
            let len = f.metadata().map_err(|e| Error::io(&p, e))?.len();
            (Box::new(f), len)
        };
        bundle_bytes += len;
        let mut h = tar::Header::new_ustar();
        h.set_path(name).map_err(io)?;
        h.set_size(len);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        tar.append(&h, BufReader::new(src)).map_err(io)?;
    }
    let z = tar.into_inner().map_err(io)?;
    let w = z.finish().map_err(io)?;
    let f = w.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)?;
    Ok(bundle_bytes)
}

/// Unpacks `file` into the directory `dir` (created if missing; it must be empty): entries checked one by
/// one, then the whole bundle verified. Nothing is written outside `dir`.
fn extract(file: &Path, dir: &Path) -> Result<Manifest> {
    let damaged = |what: String| {
        Error::bundle(
            file,
            format!("packed bundle is damaged or not a trove pack: {what}"),
        )
    };
    let f = File::open(file).map_err(|e| Error::io(file, e))?;
    if !is_packed(file) {
        return Err(Error::bundle(
            file,
            "is not a packed bundle (it does not start with a zstd frame; expected a .trove file from `trove pack`)",
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let z = zstd::Decoder::new(BufReader::new(f)).map_err(|e| damaged(e.to_string()))?;
    let mut archive = tar::Archive::new(z);
    let mut seen: Vec<String> = Vec::new();
    let mut listed: Option<Manifest> = None;
    for entry in archive.entries().map_err(|e| damaged(e.to_string()))? {
        let mut e = entry.map_err(|e| damaged(e.to_string()))?;
        let raw = e.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw).into_owned();
        if e.header().entry_type() != tar::EntryType::Regular {
            return Err(damaged(format!(
                "entry {name:?} is not a regular file ({:?})",
                e.header().entry_type()
            )));
        }
        check_entry_name(&name, &seen, &damaged)?;
        // The manifest comes first (`pack` writes it first): every later entry must be a file it
        // lists, at the size it records, so a crafted pack cannot fill the disk before the
        // checksums are read.
        let size = e.header().size().map_err(|e| damaged(e.to_string()))?;
        check_listed(listed.as_ref(), &name, size, &damaged)?;
        let p = dir.join(&name);
        write_entry(&mut e, &p, &name, &damaged)?;
        if listed.is_none() {
            listed = Some(read_listed(file, dir, &damaged)?);
        }
        seen.push(name);
    }
    // Read to the end of the frame, so a damaged tail fails zstd's checksum here.
    let mut z = archive.into_inner();
    std::io::copy(&mut z, &mut std::io::sink()).map_err(|e| damaged(e.to_string()))?;
    if listed.is_none() {
        return Err(damaged(format!("it holds no {MANIFEST}")));
    }
    // Every file the manifest lists, sha256 included.
    let m = super::verify(dir)
        .map(|r| r.manifest)
        .map_err(|e| damaged_unless_full(e, &damaged))?;
    Ok(m)
}

/// Refuses a pack entry named `name` unless it is a bundle file's name not `seen` before.
fn check_entry_name(name: &str, seen: &[String], damaged: &dyn Fn(String) -> Error) -> Result<()> {
    let plain = super::is_bundle_file(name);
    let older = !name.contains('/')
        && name
            .strip_suffix(".parquet")
            .is_some_and(|t| super::TABLES.contains(&t));
    if older {
        return Err(damaged(format!(
            "entry {name:?} is a table of an older bundle format (before v5, tables sat at the root): unpack it with the trove that packed it and re-index"
        )));
    }
    if !plain {
        return Err(damaged(format!(
            "entry {name:?} is not a bundle file name (paths, `..` and other files are refused)"
        )));
    }
    if seen.iter().any(|s| s == name) {
        return Err(damaged(format!("entry {name:?} appears twice")));
    }
    Ok(())
}

/// Refuses a pack entry `name` of `size` bytes unless it is the manifest, first, within
/// [`MAX_MANIFEST_BYTES`], or a file the manifest (`listed`, once read) lists at that size.
fn check_listed(
    listed: Option<&Manifest>,
    name: &str,
    size: u64,
    damaged: &dyn Fn(String) -> Error,
) -> Result<()> {
    match listed {
        None if name != MANIFEST => {
            return Err(damaged(format!(
                "its first entry is {name:?}, not {MANIFEST} (`trove pack` writes that first)"
            )));
        }
        None if size > MAX_MANIFEST_BYTES => {
            return Err(damaged(format!(
                "its {MANIFEST} is {size} bytes (more than {MAX_MANIFEST_BYTES})"
            )));
        }
        None => {}
        Some(m) => match m.files.iter().find(|f| f.name == name) {
            None => {
                return Err(damaged(format!(
                    "entry {name:?} is not a file its {MANIFEST} lists"
                )));
            }
            Some(f) if f.bytes != size => {
                return Err(damaged(format!(
                    "entry {name:?} is {size} bytes, its {MANIFEST} says {}",
                    f.bytes
                )));
            }
            Some(_) => {}
        },
    }
    Ok(())
}

/// Writes the pack entry `e` (named `name`) to the new file `p`, synced.
fn write_entry(
    e: &mut impl Read,
    p: &Path,
    name: &str,
    damaged: &dyn Fn(String) -> Error,
) -> Result<()> {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let mut w = File::create_new(p).map_err(|e| Error::io(p, e))?;
    // A read that fails is the pack's fault; a write that fails (a full disk) is the
    // destination's, and says so with its path.
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = e
            .read(&mut buf)
            .map_err(|e| damaged(format!("{name}: {e}")))?;
        if n == 0 {
            break;
        }
        w.write_all(&buf[..n]).map_err(|e| Error::io(p, e))?;
    }
    w.sync_all().map_err(|e| Error::io(p, e))?;
    Ok(())
}

/// The manifest just unpacked into `dir` from the pack `file`, checked, and refused where what it
/// lists cannot fit on `dir`'s disk.
fn read_listed(file: &Path, dir: &Path, damaged: &dyn Fn(String) -> Error) -> Result<Manifest> {
    let m = super::read_manifest(dir).map_err(|e| damaged_unless_full(e, damaged))?;
    m.check_segments(dir)
        .map_err(|e| damaged_unless_full(e, damaged))?;
    // What the manifest lists must fit where it is unpacked (a pack whose zeros
    // decompress to more than the disk holds would fill it before a sha256 is checked).
    let need: u64 = m.files.iter().map(|f| f.bytes).sum();
    if let Some(free) = super::free_bytes(dir)
        && need > free
    {
        // A full disk, typed as one: a server then unpacks into the cache instead.
        return Err(Error::io(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!(
                    "{} unpacks to {need} bytes, and this folder's disk has {free} free",
                    file.display()
                ),
            ),
        ));
    }
    Ok(m)
}

/// `e` as a damaged pack's error, unless it is a write that found the disk full (the pack is
/// fine; where it was unpacked is not).
fn damaged_unless_full(e: Error, damaged: &dyn Fn(String) -> Error) -> Error {
    match &e {
        _ if e.kind() == trove_base::error::ErrorKind::DiskFull => e,
        _ => damaged(e.to_string()),
    }
}

/// Unpacks `file` into the new directory `dir` (entries checked one by one, then the whole
/// bundle verified), for a reader that wants a copy of its own rather than the cache's (`trove
/// sync`, which removes it after).
pub fn unpack_into(file: &Path, dir: &Path) -> Result<Manifest> {
    extract(file, dir)
}

/// Checks a packed file end to end (entries, checksum, and the unpacked bundle's verify) in a
/// scratch directory that is removed afterwards.
pub fn check(file: &Path) -> Result<Manifest> {
    let scratch = std::env::temp_dir().join(format!(
        "trove-check-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let r = extract(file, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    r
}

/// Unpacks `file` to the bundle directory `out` (replaced atomically if it is a bundle already).
pub fn unpack(file: &Path, out: &Path) -> Result<Manifest> {
    let out = super::output_path(out)?;
    // Replacing `out` would delete the packed file read from inside it.
    if within(file, &out) {
        return Err(Error::bad_input(format!(
            "{} is inside {}, which unpacking replaces: unpack it elsewhere",
            file.display(),
            out.display()
        )));
    }
    let _lock = super::lock_output(&out)?;
    super::check_replaceable(&out)?;
    super::build_beside(&out, |tmp| extract(file, tmp))
}

/// The bundle directory behind `p`: `p` itself when it is a directory; for a packed file, its
/// unpacked copy in the cache (`<cache>/packed/<sha256 of the file>/`), unpacked on first use.
pub fn open_path(p: &Path) -> Result<PathBuf> {
    if p.is_dir() || !p.exists() {
        // Missing paths get the bundle reader's own error.
        return Ok(p.to_path_buf());
    }
    if !is_packed(p) {
        return Err(Error::bundle(
            p,
            "is a file but not a packed bundle (expected a bundle directory or a .trove file from `trove pack`)",
        ));
    }
    let root = trove_base::util::cache_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("trove-cache"))
        .join("packed");
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    let sha = content_key(p, &root)?;
    let dir = root.join(&sha);
    if dir.join(MANIFEST).is_file() {
        // An unpacked copy whose files are not all there at their sizes (a cache cleaner, a full
        // disk) is unpacked again from the file, which stays the truth.
        let whole =
            super::read_manifest(&dir).and_then(|m| super::check_sizes(&dir, &m).map(|()| m));
        if whole.is_ok() {
            // Used now: kept by the cache's pruning for another 30 days.
            crate::cache::touch(&dir.join(MANIFEST));
            return Ok(dir);
        }
        let trash = root.join(format!(".{sha}.damaged-{}", std::process::id()));
        if std::fs::rename(&dir, &trash).is_ok() {
            let _ = std::fs::remove_dir_all(&trash);
        }
    }
    let tmp = root.join(format!(".{sha}.tmp-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    if let Err(e) = extract(p, &tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if std::fs::rename(&tmp, &dir).is_err() {
        // Another process unpacked the same file first: use theirs.
        let _ = std::fs::remove_dir_all(&tmp);
        if !dir.join(MANIFEST).is_file() {
            return Err(Error::internal(format!(
                "cannot place the unpacked bundle at {}",
                dir.display()
            )));
        }
    }
    Ok(dir)
}

/// The sha256 of the file at `p`, remembered under `root` by (path, size, mtime, inode) so a file
/// that has not changed is hashed once.
pub(crate) fn content_key(p: &Path, root: &Path) -> Result<String> {
    memo_sha(&p.canonicalize().map_err(|e| Error::io(p, e))?, root)
}

/// [`content_key`] of a canonical path.
fn memo_sha(p: &Path, root: &Path) -> Result<String> {
    let memo = root.join(format!("stat-{}", stat_key(p)?));
    if let Ok(s) = std::fs::read_to_string(&memo)
        && s.len() == 64
        && s.bytes().all(|b| b.is_ascii_hexdigit())
    {
        trove_base::util::touch(&memo);
        return Ok(s);
    }
    let (_, sha) = super::table::hash_file(p)?;
    write_memo(root, &format!("stat-{}", stat_key(p)?), sha.as_bytes());
    Ok(sha)
}

/// The folder of the sha256 memos of bundle files (see [`content_key`]).
pub(crate) fn memo_root() -> std::path::PathBuf {
    let d = trove_base::util::cache_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("trove-cache"))
        .join("verified");
    let _ = std::fs::create_dir_all(&d);
    d
}

/// Writes the memo `name` under `root`: a process that writes memos prunes the cache as one that
/// writes query-cache files does (index, sync and verify write memos and nothing else there).
fn write_memo(root: &Path, name: &str, body: &[u8]) {
    if let Some(cache) = root.parent() {
        crate::cache::prune_unused(cache);
    }
    let _ = std::fs::write(root.join(name), body);
}

/// Records that the file `p`, as it is now, has sha256 `sha` (a file this process just wrote and
/// hashed): later checks of it cost a stat.
pub(crate) fn remember(p: &Path, sha: &str, root: &Path) {
    if let Ok(c) = p.canonicalize() {
        remember_at(&c, sha, root);
    }
}

/// [`remember`] of a canonical path.
fn remember_at(p: &Path, sha: &str, root: &Path) {
    if let Ok(k) = stat_key(p) {
        write_memo(root, &format!("stat-{k}"), sha.as_bytes());
    }
}

/// Checks every segment file the manifest of the bundle `dir` lists against its sha256, through
/// the memo (a file is hashed once per version: path, size, mtime, inode). A bundle whose every
/// file is as a past check found it costs one stat a file and one memo lookup in all.
pub fn check_hashes(dir: &Path, m: &super::Manifest) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let root = memo_root();
    // Canonical once: the bundle's own file names hold no link or `..` (`is_bundle_file`).
    let canonical = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let files: Vec<_> = m.files.iter().filter(|e| e.name != super::VIEWS).collect();
    let mut versions = format!("{}\n", canonical.display());
    for e in &files {
        let p = canonical.join(&e.name);
        let meta = std::fs::metadata(&p).map_err(|err| Error::io(&p, err))?;
        versions.push_str(&format!(
            "{}|{}|{}|{}|{}|{}\n",
            e.name,
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ino(),
            e.sha256
        ));
    }
    let whole = root.join(format!(
        "bundle-{}",
        trove_base::util::sha256_hex(versions.as_bytes())
    ));
    if whole.is_file() {
        trove_base::util::touch(&whole);
        return Ok(());
    }
    for e in files {
        let p = canonical.join(&e.name);
        let mut sha = memo_sha(&p, &root)?;
        if sha != e.sha256 {
            // A damaged memo must not condemn a good file: hash it again before refusing.
            sha = super::table::hash_file(&p)?.1;
        }
        if sha != e.sha256 {
            return Err(Error::bundle(
                dir,
                format!(
                    "{} does not match the sha256 its manifest records (damaged or changed since it was written): run `trove verify` on it, or re-index",
                    e.name
                ),
            ));
        }
    }
    if let Some(name) = whole.file_name() {
        write_memo(&root, &name.to_string_lossy(), b"");
    }
    Ok(())
}

/// Seeds the memo with the files of a bundle this process just wrote (`m` its manifest).
pub fn remember_bundle(dir: &Path, m: &super::Manifest) {
    let root = memo_root();
    let Ok(dir) = dir.canonicalize() else {
        return;
    };
    for e in &m.files {
        remember_at(&dir.join(&e.name), &e.sha256, &root);
    }
}

/// What identifies a version of the file at the canonical path `p`: the path, size, mtime and
/// inode.
fn stat_key(p: &Path) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
    let stat = trove_base::util::sha256_hex(
        format!(
            "{}|{}|{}|{}|{}",
            p.display(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ino()
        )
        .as_bytes(),
    );
    Ok(stat)
}
