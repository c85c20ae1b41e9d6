//! One error type for the library; each variant says which file or input was wrong and how.
use std::path::PathBuf;

/// Everything the library can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O failure on a named path.
    // The cause is part of the message, not a `source()`: chained error reports (`anyhow`'s
    // `{:#}`) would print it twice.
    #[error("{path}: {cause}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        cause: std::io::Error,
    },
    /// A configuration or language file that does not parse or makes no sense.
    #[error("config: {0}")]
    Config(String),
    /// A bundle that is missing, corrupt, foreign or does not verify.
    #[error("bundle {path}: {msg}")]
    Bundle {
        /// The bundle directory or file.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    // The wrapped errors below are part of the message, not a `source()`, as for `Io`: a chained
    // report would print each twice (DuckDB's twice and then "Error code 1: Unknown error code").
    /// Arrow failures (building record batches).
    #[error("arrow: {0}")]
    Arrow(arrow::error::ArrowError),
    /// Parquet failures (writing or reading files).
    #[error("parquet: {0}")]
    Parquet(parquet::errors::ParquetError),
    /// JSON (manifest) failures.
    #[error("json: {0}")]
    Json(serde_json::Error),
    /// DuckDB failures (query engine).
    #[cfg(feature = "duckdb")]
    #[error("duckdb: {0}")]
    Duck(duckdb::Error),
    /// A walk failure from the `ignore` crate.
    #[error("walk: {0}")]
    Walk(ignore::Error),
    /// Anything else, with a message.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            cause: source,
        }
    }
    /// A bundle error on `path`.
    pub fn bundle(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle {
            path: path.into(),
            msg: msg.into(),
        }
    }
}

/// Whether `e` is a write that found the disk (or the user's quota) full.
pub fn disk_full(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

/// `From` for the wrapped errors, without making them a `source()` (see the variants).
macro_rules! wraps {
    ($($variant:ident($t:ty)),* $(,)?) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::$variant(e)
            }
        }
    )*};
}
wraps!(
    Arrow(arrow::error::ArrowError),
    Parquet(parquet::errors::ParquetError),
    Json(serde_json::Error),
    Walk(ignore::Error),
);
#[cfg(feature = "duckdb")]
wraps!(Duck(duckdb::Error));

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
