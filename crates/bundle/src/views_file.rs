//! `views.sql`, the DuckDB views over a bundle's live rows: its text from the manifest's
//! segments, its manifest entry, and how it is written, staged beside the live one and moved in
//! after a commit, or settled when a run was killed between the two.
use std::path::{Path, PathBuf};

use crate::manifest::{FileEntry, SegmentInfo, views_entry, views_text};
use crate::{Error, Result};

/// Where the views of a segment added in place wait for its manifest's commit.
pub(crate) fn staged_views(bundle: &Path) -> PathBuf {
    bundle.join(format!(".{}.next", crate::VIEWS))
}

/// Writes `sql` where views wait to be moved in ([`install_views`]): into a file of its own, made
/// anew, never through whatever a damaged or hostile bundle left under that name (a link would
/// write outside the bundle).
pub(crate) fn stage(bundle: &Path, sql: &str) -> Result<()> {
    use std::io::Write;
    let p = staged_views(bundle);
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() => {
            return Err(Error::bundle(
                bundle,
                format!(
                    "{} is a folder: remove it (trove stages {} there)",
                    p.display(),
                    crate::VIEWS
                ),
            ));
        }
        Ok(_) => std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?,
        Err(_) => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .map_err(|e| Error::io(&p, e))?;
    // A write cut short (a full disk) leaves no half file behind.
    f.write_all(sql.as_bytes()).map_err(|e| {
        let _ = std::fs::remove_file(&p);
        Error::io(&p, e)
    })
}

/// Removes views staged beside the live ones by a run that did not commit.
pub fn discard_staged_views(bundle: &Path) {
    let _ = std::fs::remove_file(staged_views(bundle));
}

/// Writes `views.sql` ([`views_text`]) into `bundle` through a temporary name and a rename, so a
/// reader never sees half of it (`cd BUNDLE && duckdb -init views.sql`). Its entry.
pub fn write_views(bundle: &Path, segments: &[SegmentInfo]) -> Result<FileEntry> {
    let entry = stage_views(bundle, segments)?;
    install_views(bundle)?;
    Ok(entry)
}

/// Writes the views of a segment added in place beside the live ones; [`install_views`] moves
/// them in once the manifest that lists the segment is committed. Their entry.
pub fn stage_views(bundle: &Path, segments: &[SegmentInfo]) -> Result<FileEntry> {
    let sql = views_text(segments);
    stage(bundle, &sql)?;
    Ok(views_entry(&sql))
}

/// Moves staged views in (a rename, so a reader sees the old ones or the new ones whole): after
/// the commit of a manifest that added a segment in place, or at once for a new bundle.
pub fn install_views(bundle: &Path) -> Result<()> {
    let (from, to) = (staged_views(bundle), bundle.join(crate::VIEWS));
    std::fs::rename(&from, &to).map_err(|e| Error::io(&to, e))
}

/// Makes the `views.sql` of the bundle `bundle` the one its manifest `m` lists, when a run was
/// killed between its commit and [`install_views`] (the views are derived from the manifest's
/// segments, and checked against its entry before they are written). Whether it rewrote them;
/// an error when the manifest's entry is not the views of its own segments.
///
/// With `strict` (`trove verify`), a `views.sql` whose bytes changed when no run was killed (no
/// staged views of the manifest's segments wait beside it) is an error, not rewritten: a file a
/// DuckDB user may `.read` was altered after it was written. A missing one is written.
pub fn settle_views(bundle: &Path, m: &crate::Manifest, strict: bool) -> Result<bool> {
    let staged = staged_views(bundle);
    let Some(entry) = m.entry(crate::VIEWS) else {
        return Ok(false);
    };
    let p = bundle.join(crate::VIEWS);
    // A FIFO or a device there is no views file: read as changed (never blocking on it), and
    // replaced by the rename below where it may be.
    let now = crate::read_small(&p, crate::MAX_MANIFEST_BYTES).ok();
    if now
        .as_ref()
        .is_some_and(|b| trove_base::util::sha256_hex(b) == entry.sha256)
    {
        if staged.exists() {
            std::fs::remove_file(&staged).map_err(|e| Error::io(&staged, e))?;
        }
        return Ok(false);
    }
    let sql = views_text(&m.segments);
    if views_entry(&sql) != *entry {
        return Err(Error::bundle(
            bundle,
            format!(
                "{} does not list the {} of its own segments",
                crate::MANIFEST,
                crate::VIEWS
            ),
        ));
    }
    let killed =
        crate::read_small(&staged, crate::MAX_MANIFEST_BYTES).is_ok_and(|b| b == sql.as_bytes());
    if strict && now.is_some() && !killed {
        return Err(Error::bundle(
            bundle,
            format!(
                "{} does not match the sha256 {} records: it was changed after it was written \
                 (it is derived from the manifest: delete it and `trove verify` writes it anew)",
                crate::VIEWS,
                crate::MANIFEST
            ),
        ));
    }
    // `trove verify` rewrites views only when no run is writing the bundle: a run between its
    // commit and its views' rename has them staged, and they are not to be replaced under it.
    if strict && let Some(pid) = crate::writer_active(bundle) {
        return Err(Error::bundle(
            bundle,
            format!(
                "a trove run{} is writing it: verify it when that run has finished",
                crate::pid_note(&pid)
            ),
        ));
    }
    stage(bundle, &sql)?;
    install_views(bundle)?;
    Ok(true)
}
