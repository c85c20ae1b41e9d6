//! The languages crate's error: the shared failures of trove-base (I/O on a path, config) and a
//! language definition that makes no sense. Its kind ([`ErrorKind`]) decides exit codes and HTTP
//! statuses, as for every trove error.
use trove_base::error::ErrorKind;

/// Everything loading the language registry can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A shared failure: I/O on a path (a language folder), a language file that does not parse.
    #[error(transparent)]
    Base(#[from] trove_base::Error),
    /// A language definition that parses but makes no sense: an unknown source type, grammar,
    /// chunker or node kind, a bad pattern.
    #[error("config: language {language}: {msg}")]
    Definition {
        /// The language's id.
        language: String,
        /// What is wrong with its definition.
        msg: String,
    },
}

trove_base::base_constructors!(Error);

impl Error {
    /// What kind of failure this is: a bad definition is bad input.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Base(e) => e.kind(),
            Error::Definition { .. } => ErrorKind::BadInput,
        }
    }
}

/// The languages crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
