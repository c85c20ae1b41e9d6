//! Reference resolution: which definition a call, base type or type use lands on.
//!
//! Two steps, both here. Per file, while the pipeline builds a file's records ([`in_file()`]):
//! each reference gets its enclosing definition and chunk, and a name defined once in the same
//! file (among the kinds the reference can land on) resolves to it (`file`). Across the bundle,
//! when the writer has seen every file ([`Definitions`] + [`Pending`]): a reference still open
//! resolves through the file's import of the name (the one definition in the module files the
//! import may name: `import`), else to the one definition of that name in its language family
//! (`repo`). Definitions inside a function (a closure, a class in a test) are that function's
//! own: only their file's references land on them. A bare call of a name an enclosing function
//! binds (a parameter, loop variable or local: `def f(load): load(x)`) lands nowhere. Two
//! candidates or none leave it unresolved: never a guess. A reference taken from a SCIP index
//! (SCIP import, `scip_import`) resolves by its SCIP symbol string alone: to the one definition
//! that carries it (`scip`), wherever it is, or to none when the symbol is defined outside the
//! bundle.
//!
//! Keys are typed ([`NameKey`], [`FileKey`]); a reference's context for the second step
//! ([`Pending`]) travels beside it, not packed into its target.
//!
//! One file per job:
//!
//! - `targets`: which of a file's definitions are targets ([`counted`], [`local_definitions`]);
//! - `candidates`: the files an import may name ([`package_key`], Go packages, TypeScript path
//!   aliases, Python submodules);
//! - `keys`: the keys definitions are counted by ([`NameKey`], [`FileKey`]);
//! - `types`: the types code declares, read from its text (signatures, JSDoc, fields,
//!   assignments);
//! - `file_symbols`: one file's definitions, indexed for the per-file step;
//! - `receiver_types`: what type a call's receiver is, in one file;
//! - `in_file`: the per-file step ([`in_file()`]);
//! - `pending`: the context an open reference carries to the bundle-wide step
//!   ([`Pending::of_file`]);
//! - `definitions`: the bundle's definitions, counted ([`Definitions`]);
//! - `in_bundle`: the bundle-wide step ([`Definitions::resolve`]).

mod candidates;
mod definitions;
mod file_symbols;
mod in_bundle;
mod in_file;
mod keys;
mod pending;
mod receiver_types;
mod targets;
mod types;

pub use crate::record::{Pending, PendingRef, chunk_at};
pub use candidates::package_key;
pub use definitions::Definitions;
pub use in_file::in_file;
pub use keys::{FileKey, NameKey};
pub use targets::{counted, local_definitions};
pub use trove_bundle::resolution::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// The base names the member lookup follows are one identifier, in Rust and in SQL alike.
    #[test]
    fn base_names_are_one_plain_identifier() {
        for ok in ["Subject", "_Base", "$Mixin", "A1"] {
            assert!(is_base_name(ok), "{ok}");
        }
        for no in ["", "1A", "pkg.Base", "Base<T>", "mixin(B)", "Bäse", "a b"] {
            assert!(!is_base_name(no), "{no}");
        }
        let conn = duckdb::Connection::open_in_memory().unwrap();
        for s in [
            "Subject", "_Base", "$Mixin", "A1", "", "1A", "pkg.Base", "Base<T>", "Bäse",
        ] {
            let sql: bool = conn
                .query_row(
                    "SELECT regexp_full_match(?, ?)",
                    duckdb::params![s, BASE_NAME_RE],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(sql, is_base_name(s), "{s}");
        }
    }
}
