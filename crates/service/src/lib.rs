//! What trove serves, shared by the CLI, MCP and HTTP: the agent tools ([`tools`]: search, map,
//! symbols, references, file text), the repository map ([`map`]), symbols, references and
//! dependencies ([`structure`]), file text ([`show`]), the research loop of `trove ask`
//! ([`ask`]), the MCP server ([`mcp`]) and the HTTP server ([`serve`]). The `trove` binary's
//! `cli/` parses arguments and calls in here.
#![warn(missing_docs)]

pub mod args;
#[cfg(feature = "openai")]
pub mod ask;
pub mod filters;
pub mod map;
pub mod mcp;
pub mod serve;
pub mod show;
pub mod structure;
pub mod tools;
