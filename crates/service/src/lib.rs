//! What trove serves, shared by the CLI, MCP and HTTP: the agent tools ([`tools`]: search, map,
//! symbols, references, file text), the repository map ([`map`]), symbols, references and
//! dependencies ([`structure`]), file text ([`show`]), the research loop of `trove ask`
//! ([`ask`]), the MCP server ([`mcp`]) and the HTTP server ([`serve`]). The `trove` binary's
//! `src/cli/` parses arguments and calls in here.
//!
//! ```
//! // `trove show BUNDLE PATH:START-END`: a file and a line range.
//! let t = trove_service::show::parse_target("src/lib.rs:10-20", |_| false).unwrap();
//! assert_eq!((t.path.as_str(), t.start, t.end), ("src/lib.rs", Some(10), Some(20)));
//! ```
#![warn(missing_docs)]

pub mod args;
#[cfg(feature = "openai")]
pub mod ask;
mod errors;
pub mod filters;
pub mod map;
pub mod mcp;
pub mod serve;
pub mod show;
pub mod structure;
pub mod tools;

pub use errors::kind_of;
