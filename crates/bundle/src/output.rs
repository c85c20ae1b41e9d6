//! The output transaction: a run holds the output's lock, builds the new bundle in a temp
//! directory beside it, and swaps it into place only when complete, so a reader sees the old
//! bundle or the new one, never a mix, and a killed run leaves the old one as it was.
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Held while a run writes a bundle: an exclusive `flock` on `<parent>/.<name>.lock`. The kernel
/// drops it when the process ends, however it ends, so a killed run never leaves it stuck.
#[derive(Debug)]
pub struct OutputLock {
    _file: std::fs::File,
}

/// Where a run given `out` writes: its absolute path, and when `out` is a symbolic link (a
/// `current -> release-42` layout), the bundle it points to. A link is followed once, here, so
/// every run names the same bundle by the same path (its lock included), and the link is never
/// replaced by a directory. A dangling link is an error: nothing sensible can be written there.
pub fn output_path(out: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(out).map_err(|e| Error::io(out, e))?;
    match std::fs::symlink_metadata(&abs) {
        Ok(m) if m.file_type().is_symlink() => abs.canonicalize().map_err(|e| {
            Error::bad_input(format!(
                "{} is a symbolic link to nothing ({e}): remove it or point it at a bundle",
                abs.display()
            ))
        }),
        _ => Ok(abs),
    }
}

/// `<parent>/.<name>.<what>`: a hidden path of a run's own beside the output `out` (its lock,
/// its temp directory, a sync's downloads).
pub fn hidden_beside(out: &Path, what: &str) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    out.with_file_name(format!(".{name}.{what}"))
}

/// `<parent>/.<name>.lock`: the output lock file of `out`.
pub fn lock_path(out: &Path) -> PathBuf {
    hidden_beside(out, "lock")
}

/// ` (pid N)` for the pid a lock holds, nothing when it holds none yet: how a message names the
/// run holding an output lock.
pub fn pid_note(pid: &str) -> String {
    if pid.is_empty() {
        String::new()
    } else {
        format!(" (pid {pid})")
    }
}

/// When a trove run holds the output lock of `out` (it is writing it): the pid it wrote there
/// (empty when not written yet). `None` when no run does, or there is no lock file to ask.
pub fn writer_active(out: &Path) -> Option<String> {
    use rustix::fs::{FlockOperation, flock};
    let out = output_path(out).unwrap_or_else(|_| out.to_path_buf());
    let mut f = std::fs::File::open(lock_path(&out)).ok()?;
    if flock(&f, FlockOperation::NonBlockingLockShared).is_ok() {
        return None;
    }
    Some(holder_pid(&mut f))
}

/// The pid a lock holder wrote into its lock file `f`. It writes it just after taking the lock,
/// so an empty file is read again for up to 100 ms before the pid is given up on (empty).
fn holder_pid(f: &mut std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut pid = String::new();
    for _ in 0..20 {
        pid.clear();
        let _ = f.rewind();
        let _ = f.read_to_string(&mut pid);
        if !pid.trim().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    pid.trim().to_string()
}

/// Waits until no trove run holds the output lock of `out`.
pub fn wait_for_writer(out: &Path) {
    use rustix::fs::{FlockOperation, flock};
    let out = output_path(out).unwrap_or_else(|_| out.to_path_buf());
    if let Ok(f) = std::fs::File::open(lock_path(&out)) {
        let _ = flock(&f, FlockOperation::LockShared);
    }
}

/// Takes the output lock of `out` (creating its parent), or refuses with the pid of the run that
/// holds it. Holding it, removes what killed runs left beside `out` (`.<name>.tmp-<pid>`).
pub fn lock_output(out: &Path) -> Result<OutputLock> {
    use rustix::fs::{FlockOperation, flock};
    use std::io::{Seek, Write};
    let parent = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let path = lock_path(out);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        let pid = holder_pid(&mut file);
        return Err(Error::failed(
            trove_base::error::ErrorKind::Locked,
            format!(
                "another trove run{} is writing {}: wait for it to finish (lock {})",
                pid_note(&pid),
                out.display(),
                path.display()
            ),
        ));
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    // No other run is writing `out`: temp directories beside it are leftovers of killed runs.
    // One killed between the two renames of a swap without exchange left the old bundle aside
    // (`.<name>.tmp-<pid>-old`) and no `out`: the old bundle goes back first.
    let prefix = hidden_beside(out, "tmp-")
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let leftovers: Vec<PathBuf> = std::fs::read_dir(parent)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    if std::fs::symlink_metadata(out).is_err()
        && let Some(aside) = leftovers
            .iter()
            .find(|p| p.to_string_lossy().ends_with(ASIDE) && super::read_manifest_json(p).is_ok())
    {
        std::fs::rename(aside, out).map_err(|e| Error::io(aside, e))?;
    }
    for p in leftovers {
        // A folder (a build's, a sync's) or a file (a pack's `.X.trove.tmp-PID`).
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => {
                let _ = std::fs::remove_dir_all(&p);
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&p);
            }
            Err(_) => {}
        }
    }
    Ok(OutputLock { _file: file })
}

/// The suffix of the temp name the old bundle is renamed to during a swap without exchange.
const ASIDE: &str = "-old";

/// `<parent>/.<name>.tmp-<pid>`: beside the target, so the final rename stays on one filesystem.
pub fn temp_beside(out: &Path) -> PathBuf {
    hidden_beside(out, &format!("tmp-{}", std::process::id()))
}

/// Refuses an output path that is a file or a directory other than a trove bundle (an empty one
/// is fine), and creates its parent.
pub fn check_replaceable(out: &Path) -> Result<()> {
    if out.is_file() {
        return Err(Error::bad_input(format!(
            "output {} is a file: choose a directory path for the bundle",
            out.display()
        )));
    }
    if out.is_dir() {
        let empty = std::fs::read_dir(out)
            .map_err(|e| Error::io(out, e))?
            .next()
            .is_none();
        // A bundle of any format version is one (`--since` rebuilds an older one in full).
        if !empty && super::read_manifest_json(out).is_err() {
            return Err(Error::bad_input(format!(
                "refusing to overwrite {}: it exists and is not a trove bundle (remove it, or write the bundle elsewhere)",
                out.display()
            )));
        }
    }
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}

/// Builds a bundle with `build` in a fresh temp directory beside `out`, then swaps it into place;
/// on any failure the temp directory is removed and `out` is left as it was.
pub fn build_beside<T, E: From<Error>>(
    out: &Path,
    build: impl FnOnce(&Path) -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    let tmp = temp_beside(out);
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let r = build(&tmp).and_then(|v| Ok(swap_into_place(&tmp, out).map(|()| v)?));
    if r.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    r
}

/// Moves the finished bundle `tmp` to `out`. When `out` exists, the two are exchanged atomically
/// (`renameat2(RENAME_EXCHANGE)`), so a reader sees the old or the new bundle, never a mix; where
/// the filesystem cannot exchange, the old bundle is renamed aside first. The old bundle is then removed.
pub fn swap_into_place(tmp: &Path, out: &Path) -> Result<()> {
    if !out.exists() {
        return std::fs::rename(tmp, out).map_err(|e| Error::io(out, e));
    }
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    // Once the new bundle is in place the swap has happened: removing the old one is best
    // effort (what is left has a temp name, which the next run's lock clears).
    match renameat_with(CWD, tmp, CWD, out, RenameFlags::EXCHANGE) {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(tmp);
            Ok(())
        }
        Err(_) => {
            // A temp name of this output: a run killed between the renames leaves it for the
            // next run's lock to put back ([`lock_output`]).
            let mut aside = tmp.as_os_str().to_owned();
            aside.push(ASIDE);
            let aside = PathBuf::from(aside);
            std::fs::rename(out, &aside).map_err(|e| Error::io(out, e))?;
            if let Err(e) = std::fs::rename(tmp, out) {
                let _ = std::fs::rename(&aside, out);
                return Err(Error::io(out, e));
            }
            let _ = std::fs::remove_dir_all(&aside);
            Ok(())
        }
    }
}

/// Gives the bundle `to` the files of segment `seg` of the bundle `from` (their manifest
/// `entries`): each hard-linked where both sit on one filesystem (segments are immutable, so
/// sharing their bytes is safe), else copied and synced. Returns the bytes copied.
pub fn link_segment(
    from: &Path,
    to: &Path,
    seg: &super::SegmentInfo,
    entries: &[&super::FileEntry],
) -> Result<u64> {
    let dir = seg.dir(to);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut copied = 0;
    for e in entries {
        if link_or_copy(&from.join(&e.name), &to.join(&e.name))? {
            copied += e.bytes;
        }
    }
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(copied)
}

/// Puts the immutable bundle file `src` at `dst`: a hard link where both sit on one filesystem,
/// else a copy, synced. Returns whether it copied. A symbolic link at `src` is copied from what it
/// points to (a hard link would carry the link itself into the new bundle).
pub fn link_or_copy(src: &Path, dst: &Path) -> Result<bool> {
    let is_link = std::fs::symlink_metadata(src).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link && std::fs::hard_link(src, dst).is_ok() {
        return Ok(false);
    }
    std::fs::copy(src, dst).map_err(|err| {
        // A full disk is the destination's; anything else may be either side's.
        if trove_base::error::disk_full(&err) {
            Error::io(dst, err)
        } else {
            Error::failed(
                trove_base::error::io_kind(&err),
                format!("copying {} to {}: {err}", src.display(), dst.display()),
            )
        }
    })?;
    std::fs::File::open(dst)
        .and_then(|f| f.sync_all())
        .map_err(|err| Error::io(dst, err))?;
    Ok(true)
}
