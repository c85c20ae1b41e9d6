//! Which way a walked file goes before anyone reads it: to a worker, or, in an incremental run,
//! carried or skipped as the base bundle has it.
use super::incremental::Reuse;
use crate::source::{Candidate, Skipped};

/// What is known of a walked file before anyone reads it.
pub(super) enum FileRoute<'a> {
    /// A worker reads it.
    Worker,
    /// Its rows are carried from the base bundle ([`carried_unread`]).
    Carried,
    /// Skipped by its content in the base bundle, and unchanged since: skipped again, unread.
    Skipped(&'a Skipped),
}

/// What is known of the walked file `c` before anyone reads it.
pub(super) fn route<'r>(reuse: Option<&'r Reuse>, c: &Candidate) -> FileRoute<'r> {
    if carried_unread(reuse, c) {
        return FileRoute::Carried;
    }
    match reuse.and_then(|r| r.skipped_unread(c)) {
        Some(k) => FileRoute::Skipped(k),
        None => FileRoute::Worker,
    }
}

/// Whether git vouches that the file `c` is as the base bundle's commit had it (tracked,
/// untouched since, and the same size when the walk took sizes or a checkout conversion may
/// hide an edit from git: [`Reuse::same_size`]): its rows are carried without
/// reading it.
pub(super) fn carried_unread(reuse: Option<&Reuse>, c: &Candidate) -> bool {
    reuse.is_some_and(|r| {
        r.vouched(&c.rel) && r.files.get(&c.rel).is_some_and(|b| r.same_size(c, b.bytes))
    })
}
