//! The built-in pipeline defaults, `pipelines/default.toml`, embedded once for every crate that
//! reads a section of it (`[chunk]` in trove-lang, `[embed]` in trove-embed, the whole file in
//! trove-index's pipeline config).
//!
//! ```
//! #[derive(serde::Deserialize)]
//! struct Chunk { max_chars: usize }
//! let chunk: Chunk = trove_base::defaults::section("chunk").unwrap();
//! assert!(chunk.max_chars > 0);
//! ```
use serde::de::DeserializeOwned;

/// The built-in defaults, fully commented in `pipelines/default.toml`.
pub const PIPELINE_TOML: &str = include_str!("../../../pipelines/default.toml");

/// One table of the built-in defaults (`chunk`, `embed`, ...), deserialized as `T`.
///
/// An error here is a bug in the shipped file (a missing table or a key `T` does not know),
/// reported as [`ErrorKind::Internal`](crate::error::ErrorKind::Internal).
pub fn section<T: DeserializeOwned>(name: &str) -> crate::Result<T> {
    let doc: toml::Table = toml::from_str(PIPELINE_TOML)
        .map_err(|e| crate::Error::internal(format!("built-in defaults: {e}")))?;
    let table = doc
        .get(name)
        .cloned()
        .ok_or_else(|| crate::Error::internal(format!("built-in defaults: no [{name}]")))?;
    table
        .try_into()
        .map_err(|e| crate::Error::internal(format!("built-in defaults: [{name}]: {e}")))
}
