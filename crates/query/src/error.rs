//! The query engine's error: a failure of a layer below it (trove-base's shared failures, the
//! bundle format, the embed stage that embeds the query), each kept whole with its kind, or a
//! failure of DuckDB, which only this crate (and the crates above it) links. Its kind
//! ([`ErrorKind`]) decides exit codes and HTTP statuses, as for every trove error.
use std::path::PathBuf;

use trove_base::error::ErrorKind;

/// Everything the query engine can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A shared failure: I/O on a path, config, bad input, internal, ...
    #[error(transparent)]
    Base(#[from] trove_base::Error),
    /// The bundle format's failure: a bundle missing, damaged, foreign or unusable, a table that
    /// does not read.
    #[error(transparent)]
    Bundle(#[from] trove_bundle::Error),
    /// The embed stage's failure: the bundle's model, an embedding server.
    #[error(transparent)]
    Embed(#[from] trove_embed::Error),
    /// DuckDB failures (a view, a filter, `trove sql`). The cause is part of the message, not a
    /// `source()`: a chained report would print it twice (and then "Error code 1: Unknown error
    /// code").
    #[error("duckdb: {0}")]
    Duck(duckdb::Error),
}

impl From<duckdb::Error> for Error {
    fn from(e: duckdb::Error) -> Self {
        Error::Duck(e)
    }
}

trove_bundle::from_format_errors!(Error);

trove_base::base_constructors!(Error);

impl Error {
    /// What kind of failure this is: the wrapped layer's own kind; DuckDB's errors carry no kind
    /// and are internal.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Base(e) => e.kind(),
            Error::Bundle(e) => e.kind(),
            Error::Embed(e) => e.kind(),
            Error::Duck(_) => ErrorKind::Internal,
        }
    }

    /// A bundle error on `path`: it is damaged, foreign or does not verify.
    pub fn bundle(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle(trove_bundle::Error::bundle(path, msg))
    }

    /// A sound bundle at `path` that cannot serve the request ([`ErrorKind::BadInput`]).
    pub fn bundle_unusable(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle(trove_bundle::Error::bundle_unusable(path, msg))
    }
}

/// The query engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
