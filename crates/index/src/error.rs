//! The indexing pipeline's error: a failure of one of the layers it drives (trove-base's shared
//! failures, the bundle format, the language registry, the embed stage), each kept whole with its
//! kind, and a `--since` run that cannot be made incrementally. Its kind ([`ErrorKind`]) decides
//! exit codes and HTTP statuses, as for every trove error.
use trove_base::error::ErrorKind;

/// Everything indexing can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A shared failure: I/O on a path, config, bad input, internal, ...
    #[error(transparent)]
    Base(#[from] trove_base::Error),
    /// The bundle format's failure: reading the previous bundle, writing tables, the manifest.
    #[error(transparent)]
    Bundle(#[from] trove_bundle::Error),
    /// The language registry's failure: a language file that does not load.
    #[error(transparent)]
    Lang(#[from] trove_lang::Error),
    /// The embed stage's failure: a model, a server, a backend's vectors.
    #[error(transparent)]
    Embed(#[from] trove_embed::Error),
    /// A git operation `--since` needs that failed: the diff, the listing of HEAD's files.
    #[error("{0}")]
    Git(String),
}

trove_base::base_constructors!(Error);

impl Error {
    /// What kind of failure this is: the wrapped layer's own kind; a failed git operation is
    /// bad input (the commit or repository given).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Base(e) => e.kind(),
            Error::Bundle(e) => e.kind(),
            Error::Lang(e) => e.kind(),
            Error::Embed(e) => e.kind(),
            Error::Git(_) => ErrorKind::BadInput,
        }
    }

    /// A bundle error on `path`: it is damaged, foreign or does not verify.
    pub fn bundle(path: impl Into<std::path::PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle(trove_bundle::Error::bundle(path, msg))
    }

    /// A sound bundle at `path` that cannot serve the request ([`ErrorKind::BadInput`]).
    pub fn bundle_unusable(path: impl Into<std::path::PathBuf>, msg: impl Into<String>) -> Self {
        Error::Bundle(trove_bundle::Error::bundle_unusable(path, msg))
    }
}

trove_bundle::from_format_errors!(Error);

/// The indexing pipeline's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
