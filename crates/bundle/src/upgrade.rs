//! `trove upgrade`: rewrites a bundle of an older format as the current one, in place, without
//! the source checkout — every table, embedding and file text kept — and verifies the result.
//!
//! Format 9 (the last before 1.0) has 1.0's tables and layout: its upgrade writes the manifest's
//! version keys (`format_major`, `format_minor`, `format_version` 10), lists the build that wrote
//! the rows in `builds`, rewrites `views.sql` from the segments, and commits the manifest by a
//! rename, as a run does. A future major adds its step here, after this one.
use std::path::Path;

use crate::{Error, Manifest, Result};

/// What an upgrade did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeReport {
    /// The format the bundle had (`9`, or `1.0`).
    pub from: String,
    /// The format it has now.
    pub to: String,
    /// Whether anything was rewritten (false when the bundle was already current).
    pub rewritten: bool,
}

/// `major.minor`.
fn dotted((major, minor): (u64, u64)) -> String {
    format!("{major}.{minor}")
}

/// Upgrades the bundle directory `dir` to the current format (see the module docs), holding its
/// output lock, and verifies it.
pub fn upgrade(dir: &Path) -> Result<UpgradeReport> {
    if super::is_packed(dir) {
        return Err(Error::bundle_unusable(
            dir,
            "is a packed bundle: `trove unpack` it, upgrade the directory, and `trove pack` it again",
        ));
    }
    let dir = &super::output_path(dir)?;
    let lock = super::lock_output(dir)?;
    let v = super::read_manifest_json(dir)?;
    let (major, minor) = super::format_of(&v);
    let this = super::this_format();
    if major == this.0 {
        // Readable as it is (a newer minor is read, an older one is a subset of this one).
        super::read_manifest(dir)?;
        drop(lock);
        super::verify(dir)?;
        return Ok(UpgradeReport {
            from: dotted((major, minor)),
            to: dotted((major, minor)),
            rewritten: false,
        });
    }
    if major > this.0 {
        // The reader names the trove that reads it.
        super::read_manifest(dir)?;
    }
    if major == 0 && minor != u64::from(super::UPGRADABLE_FROM) {
        return Err(Error::bundle_unusable(
            dir,
            format!(
                "is format_version {minor}: `trove upgrade` converts format_version {} and later; \
                 re-index it",
                super::UPGRADABLE_FROM
            ),
        ));
    }
    let old = super::deserialize(dir, v)?;
    let mut m = from_9(old);
    m.check_segments(dir)?;
    let views = super::write_views(dir, &m.segments)?;
    m.files.retain(|f| f.name != super::VIEWS);
    m.files.push(views);
    super::commit_manifest(dir, &m)?;
    drop(lock);
    super::verify(dir)?;
    Ok(UpgradeReport {
        from: minor.to_string(),
        to: dotted(this),
        rewritten: true,
    })
}

/// The 1.0 manifest of a format-9 one: the same tables, the version keys, and the build that
/// wrote the rows listed in `builds` (this trove writes the manifest, so it is `tool`).
fn from_9(old: Manifest) -> Manifest {
    let mut builds = old.builds.clone();
    builds.push(old.tool.clone());
    builds.dedup();
    Manifest {
        format_version: super::FORMAT_VERSION,
        format_major: super::FORMAT_MAJOR,
        format_minor: super::FORMAT_MINOR,
        required_features: Default::default(),
        tool: super::manifest_tool(),
        builds,
        ..old
    }
}
