//! The bundle format's error: the shared failures of trove-base (I/O on a path, config, a stated
//! kind) and the format's own: a bundle that is missing, damaged, foreign or unusable for the
//! request, and failures of Arrow, Parquet and the manifest's JSON. Its kind
//! ([`ErrorKind`]) decides exit codes and HTTP statuses, as for every trove error.
use std::path::PathBuf;

use trove_base::error::{ErrorKind, io_kind};

/// Everything reading or writing a bundle can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A shared failure: I/O on a path, config, bad input, internal, ...
    #[error(transparent)]
    Base(#[from] trove_base::Error),
    /// A bundle that is missing, corrupt, foreign, does not verify, or cannot serve the request.
    #[error("bundle {path}: {msg}")]
    Bundle {
        /// The bundle directory or file.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
        /// Missing ([`ErrorKind::NotFound`]), corrupt ([`ErrorKind::Corrupt`]), or sound but
        /// unusable for the request ([`ErrorKind::BadInput`]).
        kind: ErrorKind,
    },
    // The wrapped errors below are part of the message, not a `source()`: a chained report
    // (`anyhow`'s `{:#}`) would print each twice.
    /// Arrow failures (building record batches).
    #[error("arrow: {0}")]
    Arrow(arrow::error::ArrowError),
    /// Parquet failures (writing or reading files).
    #[error("parquet: {0}")]
    Parquet(parquet::errors::ParquetError),
    /// JSON (manifest) failures.
    #[error("json: {0}")]
    Json(serde_json::Error),
}

trove_base::base_constructors!(Error);

impl Error {
    /// A bundle error on `path`: it is damaged, foreign or does not verify.
    pub fn bundle(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle {
            path: path.into(),
            msg: msg.into(),
            kind: ErrorKind::Corrupt,
        }
    }
    /// A sound bundle at `path` that cannot serve the request: a packed bundle where a
    /// directory is needed, an embedder this build cannot run ([`ErrorKind::BadInput`]).
    pub fn bundle_unusable(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle {
            path: path.into(),
            msg: msg.into(),
            kind: ErrorKind::BadInput,
        }
    }
    /// A bundle that is not there at `path`.
    pub fn bundle_missing(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle {
            path: path.into(),
            msg: msg.into(),
            kind: ErrorKind::NotFound,
        }
    }

    /// What kind of failure this is. Parquet's errors are told apart by the I/O error they wrap,
    /// never by text.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Base(e) => e.kind(),
            Error::Bundle { kind, .. } => *kind,
            Error::Parquet(e) => {
                let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
                while let Some(x) = at {
                    if let Some(io) = x.downcast_ref::<std::io::Error>() {
                        return io_kind(io);
                    }
                    at = x.source();
                }
                ErrorKind::Corrupt
            }
            Error::Json(_) => ErrorKind::Corrupt,
            Error::Arrow(_) => ErrorKind::Internal,
        }
    }
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
);

/// The errors [`from_format_errors!`] converts, for crates that do not link them.
#[doc(hidden)]
pub mod wrapped {
    pub use arrow::error::ArrowError;
    pub use parquet::errors::ParquetError;
    pub use serde_json::Error as JsonError;
}

/// `From` the Arrow, Parquet and JSON errors a crate above meets (building record batches,
/// reading tables, a manifest) for its error type, as the bundle format's: the type needs a
/// `Bundle(trove_bundle::Error)` variant.
#[macro_export]
macro_rules! from_format_errors {
    ($t:ty) => {
        impl From<$crate::error::wrapped::ArrowError> for $t {
            fn from(e: $crate::error::wrapped::ArrowError) -> Self {
                Self::Bundle(e.into())
            }
        }
        impl From<$crate::error::wrapped::ParquetError> for $t {
            fn from(e: $crate::error::wrapped::ParquetError) -> Self {
                Self::Bundle(e.into())
            }
        }
        impl From<$crate::error::wrapped::JsonError> for $t {
            fn from(e: $crate::error::wrapped::JsonError) -> Self {
                Self::Bundle(e.into())
            }
        }
    };
}

/// The bundle format's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
