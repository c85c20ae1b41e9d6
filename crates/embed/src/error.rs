//! The embed stage's error: the shared failures of trove-base and the bundle format's (the
//! embedding cache), a model folder that cannot be loaded, an embedding server that fails or
//! answers badly, and a backend that returns vectors that do not fit. Its kind ([`ErrorKind`])
//! decides exit codes and HTTP statuses, as for every trove error.
use std::path::PathBuf;

use trove_base::error::ErrorKind;

/// Everything embedding can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A shared failure: I/O on a path, config, internal, ...
    #[error(transparent)]
    Base(#[from] trove_base::Error),
    /// A failure of the bundle format's code (the embedding cache's files).
    #[error(transparent)]
    Bundle(#[from] trove_bundle::Error),
    /// A sentence-transformers folder that is missing a file or holds one that does not load.
    #[error("config: model folder {}: {msg}", dir.display())]
    Model {
        /// The model folder.
        dir: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    /// An OpenAI-compatible embedding server that failed or answered badly.
    #[error("embedding server{}: {msg}", at(url))]
    Server {
        /// The server's URL (user info hidden), when the failure is about its answer.
        url: Option<String>,
        /// What went wrong.
        msg: String,
    },
    /// A backend that returned the wrong number of vectors, or vectors of the wrong dimension or
    /// with NaN or infinite values.
    #[error("embedder {backend} returned {msg}")]
    Vectors {
        /// The backend's name.
        backend: String,
        /// What it returned.
        msg: String,
    },
}

fn at(url: &Option<String>) -> String {
    url.as_deref().map(|u| format!(" {u}")).unwrap_or_default()
}

trove_base::base_constructors!(Error);

impl Error {
    /// What kind of failure this is: a bad model folder is bad input, a server's or backend's
    /// bad answer a remote failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Base(e) => e.kind(),
            Error::Bundle(e) => e.kind(),
            Error::Model { .. } => ErrorKind::BadInput,
            Error::Server { .. } | Error::Vectors { .. } => ErrorKind::Remote,
        }
    }

    /// A failure of the server at `url` (its user info hidden here).
    #[cfg(feature = "openai")]
    pub(crate) fn server_at(url: &str, msg: impl Into<String>) -> Self {
        Error::Server {
            url: Some(trove_base::util::hide_userinfo(url).into_owned()),
            msg: msg.into(),
        }
    }

    /// A failure of the server, said without its URL (the client's own report names it).
    #[cfg(feature = "openai")]
    pub(crate) fn server(msg: impl Into<String>) -> Self {
        Error::Server {
            url: None,
            msg: msg.into(),
        }
    }
}

/// The embed stage's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
