//! One error type for the library; each variant says which file or input was wrong and how, and
//! each error has a kind ([`ErrorKind`]: not found, bad input, corrupt bundle, locked, disk full,
//! remote failure, internal) that callers decide by — the exit code of the CLI and the HTTP status
//! of the server are mapped from the kind here, in one place ([`ErrorKind::exit_code`],
//! [`ErrorKind::http_status`]), never from an error's text.
use std::path::PathBuf;

/// What kind of failure an error is: what a caller decides by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A file, bundle, path or name that is not there.
    NotFound,
    /// Input that is wrong: an argument, a config, a glob, a path where something else must be.
    BadInput,
    /// A bundle or table that is damaged, foreign or does not verify.
    Corrupt,
    /// Another trove run holds the output.
    Locked,
    /// The disk (or the user's quota) is full.
    DiskFull,
    /// A server trove talked to (an embedding server, a sync source) failed or answered badly.
    Remote,
    /// A failure inside trove or a library it uses.
    Internal,
}

impl ErrorKind {
    /// The CLI's exit code for an error of this kind: 2, whatever the kind (0 is success, 1 a
    /// query without results, 3 and 4 `index --strict` and `--compact` outcomes).
    pub fn exit_code(self) -> i32 {
        2
    }

    /// The HTTP status `trove serve` answers an error of this kind with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::NotFound => 404,
            ErrorKind::BadInput => 400,
            ErrorKind::Locked => 503,
            ErrorKind::DiskFull => 507,
            ErrorKind::Remote => 502,
            ErrorKind::Corrupt | ErrorKind::Internal => 500,
        }
    }

    /// The code beside the status in the server's JSON errors.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::BadInput => "bad_request",
            ErrorKind::Locked => "locked",
            ErrorKind::DiskFull => "disk_full",
            ErrorKind::Remote => "bad_gateway",
            ErrorKind::Corrupt | ErrorKind::Internal => "internal",
        }
    }
}

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
        /// Missing ([`ErrorKind::NotFound`]), corrupt ([`ErrorKind::Corrupt`]), or sound but
        /// unusable for the request ([`ErrorKind::BadInput`]).
        kind: ErrorKind,
    },
    // The wrapped errors below are part of the message, not a `source()`, as for `Io`: a chained
    // report would print each twice.
    /// Arrow failures (building record batches).
    #[error("arrow: {0}")]
    Arrow(arrow::error::ArrowError),
    /// Parquet failures (writing or reading files).
    #[error("parquet: {0}")]
    Parquet(parquet::errors::ParquetError),
    /// JSON (manifest) failures.
    #[error("json: {0}")]
    Json(serde_json::Error),
    /// A walk failure from the `ignore` crate.
    #[error("walk: {0}")]
    Walk(ignore::Error),
    /// A failure of another kind, with its message.
    #[error("{msg}")]
    Failed {
        /// What kind of failure.
        kind: ErrorKind,
        /// What failed, and what to do.
        msg: String,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            cause: source,
        }
    }
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
    /// A failure of `kind` with the message `msg`.
    pub fn failed(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error::Failed {
            kind,
            msg: msg.into(),
        }
    }
    /// Input that is wrong (an argument, a path where something else must be).
    pub fn bad_input(msg: impl Into<String>) -> Self {
        Self::failed(ErrorKind::BadInput, msg)
    }
    /// Something that is not there.
    pub fn not_found(msg: impl Into<String>) -> Self {
        Self::failed(ErrorKind::NotFound, msg)
    }
    /// A server that failed or answered badly.
    pub fn remote(msg: impl Into<String>) -> Self {
        Self::failed(ErrorKind::Remote, msg)
    }
    /// A failure inside trove (a stopped thread, a panic caught, a broken invariant).
    pub fn internal(msg: impl Into<String>) -> Self {
        Self::failed(ErrorKind::Internal, msg)
    }

    /// What kind of failure this is. I/O errors are told apart by their OS error kind, Parquet's
    /// by the I/O error they wrap, never by text.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { cause, .. } => io_kind(cause),
            Error::Config(_) => ErrorKind::BadInput,
            Error::Bundle { kind, .. } | Error::Failed { kind, .. } => *kind,
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
            Error::Walk(e) => e.io_error().map_or(ErrorKind::Internal, io_kind),
            Error::Arrow(_) => ErrorKind::Internal,
        }
    }
}

/// The kind of an I/O error, by its OS error kind.
pub fn io_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as K;
    match e.kind() {
        _ if disk_full(e) => ErrorKind::DiskFull,
        K::NotFound => ErrorKind::NotFound,
        K::NotADirectory | K::IsADirectory | K::InvalidInput | K::AlreadyExists => {
            ErrorKind::BadInput
        }
        _ => ErrorKind::Internal,
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

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
