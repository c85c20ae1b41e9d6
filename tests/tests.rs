//! Integration tests: one binary, one module per area. They run the real binary on real git
//! repositories made in temp dirs and read the bundles back with DuckDB and pyarrow.
mod agents;
mod chunking;
mod compat;
mod corrupt;
mod edges;
mod embedders;
mod history;
mod hostile;
mod incremental;
mod index;
mod layout;
mod openai_mock;
mod pack;
mod portability;
mod query;
mod release;
mod reliability;
mod scip;
mod serve;
mod sql;
mod structure;
mod sync;
mod util;
mod web;
