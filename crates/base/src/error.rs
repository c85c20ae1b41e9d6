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

/// The failures every layer shares: I/O on a named path, a bad configuration, and failures of a
/// stated kind. Each crate above wraps this in its own error (`trove_bundle::Error`,
/// `trove_lang::Error`, ...) beside the failures only it has.
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

    /// What kind of failure this is. I/O errors are told apart by their OS error kind, never by
    /// text.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { cause, .. } => io_kind(cause),
            Error::Config(_) => ErrorKind::BadInput,
            Error::Failed { kind, .. } => *kind,
        }
    }
}

/// The shared constructors (`io`, `config`, `failed`, `bad_input`, `not_found`, `remote`,
/// `internal`) for a crate's error that wraps [`Error`] in a `Base` variant, so each crate
/// builds the shared failures the same way and keeps its own variants beside them.
#[macro_export]
macro_rules! base_constructors {
    ($t:ty) => {
        impl $t {
            /// An I/O error on `path`.
            pub fn io(path: impl Into<std::path::PathBuf>, source: std::io::Error) -> Self {
                Self::Base($crate::Error::io(path, source))
            }
            /// A configuration that does not parse or makes no sense.
            pub fn config(msg: impl Into<String>) -> Self {
                Self::Base($crate::Error::Config(msg.into()))
            }
            /// A failure of `kind` with the message `msg`.
            pub fn failed(kind: $crate::error::ErrorKind, msg: impl Into<String>) -> Self {
                Self::Base($crate::Error::failed(kind, msg))
            }
            /// Input that is wrong (an argument, a path where something else must be).
            pub fn bad_input(msg: impl Into<String>) -> Self {
                Self::Base($crate::Error::bad_input(msg))
            }
            /// Something that is not there.
            pub fn not_found(msg: impl Into<String>) -> Self {
                Self::Base($crate::Error::not_found(msg))
            }
            /// A server that failed or answered badly.
            pub fn remote(msg: impl Into<String>) -> Self {
                Self::Base($crate::Error::remote(msg))
            }
            /// A failure inside trove (a stopped thread, a panic caught, a broken invariant).
            pub fn internal(msg: impl Into<String>) -> Self {
                Self::Base($crate::Error::internal(msg))
            }
        }
    };
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

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
