//! The query engine's error: trove-base's shared error (I/O, config, bundle, Parquet, ...) or a
//! failure of DuckDB, which only this crate (and the crates above it) links. Its kind
//! ([`ErrorKind`]) decides exit codes and HTTP statuses, as for every trove error.
use trove_base::error::ErrorKind;

/// Everything the query engine can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A failure from below: I/O, config, a bad bundle, Parquet, bad input, ...
    #[error(transparent)]
    Base(#[from] trove_base::Error),
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

impl Error {
    /// What kind of failure this is: the shared error's own kind; DuckDB's errors carry no kind
    /// and are internal.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Base(e) => e.kind(),
            Error::Duck(_) => ErrorKind::Internal,
        }
    }
}

/// The query engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The kind of `e` when it is a trove error (the query engine's or trove-base's), for callers
/// that hold errors as `dyn Error` (an `anyhow` chain: `e.chain().find_map(kind_of)`).
pub fn kind_of(e: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    e.downcast_ref::<Error>().map(Error::kind).or_else(|| {
        e.downcast_ref::<trove_base::Error>()
            .map(trove_base::Error::kind)
    })
}
