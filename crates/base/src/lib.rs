//! trove's shared ground, below every other crate: the error type ([`Error`]), the closed sets
//! of names the bundle and the config store ([`sets`], [`named_set!`]), the built-in pipeline
//! defaults ([`defaults`]), hashing, path and text helpers ([`util`]) and, with the `http` feature, the HTTP client ([`http`]).
//!
//! ```
//! use trove_base::sets::RefKind;
//! assert_eq!(RefKind::parse("call"), Some(RefKind::Call));
//! assert_eq!(trove_base::util::floor_char_boundary("héllo", 2), 1);
//! ```
#![warn(missing_docs)]

pub mod defaults;
pub mod error;
pub mod glob;
#[cfg(feature = "http")]
pub mod http;
pub mod sets;
pub mod util;

pub use error::{Error, Result};
