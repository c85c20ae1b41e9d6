//! trove's languages: the registry of languages and its TOML schema ([`lang`]), the tree-sitter
//! grammars, detection by name and content, the chunkers that cut a file into scopes
//! ([`chunk`]), the definition and reference rules, and syntax highlighting ([`highlight`]).
//!
//! ```
//! use trove_lang::chunk::{ChunkConfig, chunk_file};
//! use trove_lang::lang::Registry;
//! let registry = Registry::load(&[]).unwrap();
//! let rust = registry.detect("src/lib.rs", b"fn main() {}");
//! let file = chunk_file("fn main() {}\n", rust, &ChunkConfig::defaults());
//! assert_eq!(file.chunks.len(), 1);
//! ```
#![warn(missing_docs)]

pub mod chunk;
pub mod error;
pub mod highlight;
pub mod lang;

pub use error::{Error, Result};
