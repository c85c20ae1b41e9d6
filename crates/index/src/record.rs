//! The records that flow from the pipeline into the bundle writer, and back out of a bundle's
//! reader when rows are carried or merged: one file's rows ([`FileRecord`]) with its chunks,
//! definitions and references, plus the postings streams the writer merges.
//!
//! This module sits below both `pipeline` and `bundle`, so neither depends on the other's
//! internals for its types. The closed sets that references carry ([`RefKind`], [`Resolution`])
//! are enums here; their names are what the bundle stores.

use crate::extract::deps::Dep;
pub use trove_base::named_set;
pub use trove_base::sets::{RefKind, Resolution, SkipReason, choices};
pub use trove_bundle::postings::{Group, GroupSource, Posting};
use trove_lang::chunk::{Chunk, Symbol};

/// One indexed file and its chunks, as the writer receives it.
#[derive(Debug, Clone)]
pub struct FileRecord {
    /// Repo-relative path.
    pub path: String,
    /// Language id (none for undetected text).
    pub language: Option<String>,
    /// code | doc | test | config.
    pub source_type: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Line count.
    pub lines: u64,
    /// sha256 of the content.
    pub sha256: String,
    /// Whether the AST chunker fell back to line windows.
    pub parse_fallback: bool,
    /// Secrets replaced by `[REDACTED:<kind>]` in its text.
    pub redactions: u32,
    /// Their kinds (this run's processing only; not stored).
    pub redacted_kinds: Vec<&'static str>,
    /// One-sentence summary (header comment, else what it defines).
    pub summary: Option<String>,
    /// Chunks in source order.
    pub chunks: Vec<ChunkRecord>,
    /// The text after its last chunk (all of it when it has none): with the chunks' leads and
    /// contents, the file's (redacted) text.
    pub tail: String,
    /// Definitions in source order.
    pub symbols: Vec<SymbolRecord>,
    /// Dependencies it declares (package manifests).
    pub deps: Vec<Dep>,
    /// Imports and calls in source order.
    pub refs: Vec<RefRecord>,
    /// What this run's SCIP index did for the file (not stored).
    pub scip: Option<FileOutcome>,
}

/// One chunk with its id, BM25 terms and embedding.
#[derive(Debug, Clone)]
pub struct ChunkRecord {
    /// The chunk.
    pub chunk: Chunk,
    /// The file's text between the previous chunk (or the file's start) and this one: blank lines
    /// and what no chunk holds, so the file's text is stored once (`file_text` view).
    pub lead: String,
    /// Stable id.
    pub chunk_id: i64,
    /// Where a chunk carried over from another bundle came from: (source, its `chunk_ord` there),
    /// so that source's postings can be renumbered (`BundleWriter::renumbering`).
    pub origin: Option<(usize, u32)>,
    /// Tokens in the chunk (BM25 document length).
    pub token_len: u32,
    /// (term, term frequency), any order.
    pub terms: Vec<(String, u32)>,
    /// The embedding (of the chunk's start, when the model reads only the start).
    pub embedding: Vec<f32>,
    /// The embeddings of the chunk's further windows (`trove_embed::window_texts`), one after another
    /// (a multiple of the dimension; empty when the first one read it all).
    pub windows: Vec<f32>,
    /// One-sentence summary (doc comment, else built from what it is and calls).
    pub summary: Option<String>,
}

/// One definition with its ids.
#[derive(Debug, Clone)]
pub struct SymbolRecord {
    /// The definition.
    pub symbol: Symbol,
    /// Stable id (path, kind, symbol path, start byte).
    pub symbol_id: i64,
    /// The enclosing definition's id.
    pub parent_id: Option<i64>,
    /// The chunk that holds the definition's start.
    pub chunk_id: Option<i64>,
    /// Its SCIP symbol string, when a SCIP index given to the run defines it
    /// (SCIP import, `scip_import`).
    pub scip_symbol: Option<String>,
}

/// One import, call, base type or type use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefRecord {
    /// 1-based line.
    pub line: usize,
    /// What kind of reference.
    pub kind: RefKind,
    /// The called name or base type, or the import statement.
    pub target: String,
    /// The innermost definition it occurs in.
    pub from_symbol_id: Option<i64>,
    /// The chunk it occurs in.
    pub chunk_id: Option<i64>,
    /// The definition it resolves to (see `resolve`); none when there are none or
    /// several candidates (never a guess).
    pub target_symbol_id: Option<i64>,
    /// How `target_symbol_id` was found.
    pub resolution: Option<Resolution>,
    /// The SCIP symbol it names, for a reference taken from a SCIP index (`resolution` is then
    /// `scip`, and `target_symbol_id` the bundle's definition of that symbol, if it has one).
    pub scip_symbol: Option<String>,
    /// For an import statement that makes names of another module this file's (Python's
    /// `from .app import Flask`, TypeScript's `export { a } from "./a"`): the names (`local=name`,
    /// `*` for all of them) and the module's candidate files ([`crate::extract::imports::exports`]).
    /// A name imported from this file resolves through them when the file does not define it.
    pub exports: Option<(Vec<String>, Vec<String>)>,
    /// Where a reference left open in its file may still resolve (this run's; not stored: what
    /// the bundle-wide step needs is stored as its [`Pending`]).
    pub scope: Scope,
}

/// Where the bundle-wide step may look for a reference's target (`resolve`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// A bare name (`f()`, a base type): through the file's import of the name, else the one
    /// definition of the name in the language family.
    #[default]
    Open,
    /// A call on a name that may be an imported module (`storage.load()`; in Python also
    /// `flask.helpers.f()`, in the submodule): in that module's files; when the name is no
    /// module, as [`Scope::Method`] if the flag says so, else nowhere.
    Module(String, bool),
    /// A call on an object (`ctx.push()`, `self.app.route()`): the one method of that name in
    /// the language family, if there is one (its receiver's type is a type checker's to know).
    Method,
    /// A call on a name whose type the caller declares (`def f(app: Flask)`, `s: Shape`,
    /// `app = Flask(...)`, `Engine e = new Engine()`; `super.f()` and an inherited `this.f()`:
    /// the holder's one base type): the one member of that name of the type of that name, or of
    /// its nearest base type defining one; when none does, as [`Scope::Method`] if the flag
    /// says so.
    Typed(String, bool),
    /// A call on a module path (`pathutil::f()`, `crate::glob::f()`): in the module the file's
    /// `use` of the path's first name, or the path itself, names; else nowhere.
    Path(String),
    /// Nowhere beyond its file: `super().f()` in a type with no base or several, a call on
    /// `self` of a name the standard library's types also define that no base type gives, or
    /// such a name on another object (`d.update()`, `f.close()`).
    Closed,
    /// A row read back from a bundle: the context its writer stored (none: nothing more).
    Stored(Option<Pending>),
}

/// What a file's SCIP document did (summed into the run's summary; not stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// Its facts are in the file's rows.
    Applied {
        /// Definitions of the syntax rules that got a SCIP symbol.
        matched: u32,
        /// Definitions added from the index.
        added: u32,
        /// References taken from the index.
        refs: u32,
    },
    /// The document does not fit the file's text: its facts were dropped (why).
    Stale(String),
}

/// What a reference left open by [`in_file`] needs for the bundle-wide step: the family it
/// resolves in and, when its file imports the name, the imported name and the module's
/// candidate files (most likely first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// [`language_family`] of the referring file.
    pub family: String,
    /// (imported name, candidate files) when the file imports the name.
    pub import: Option<(String, Vec<String>)>,
    /// A call on an object ([`Scope::Method`]): it lands on the one method of its name.
    pub method: bool,
    /// The type the caller declares for the receiver ([`Scope::Typed`]): the call lands on that
    /// type's one member of its name (else, with `method`, on the one method of its name).
    pub member_of: Option<String>,
}

/// A reference as the writer spills it: its file's path, the record, and its [`Pending`] context
/// (none when it needs nothing more).
pub type PendingRef = (std::sync::Arc<str>, RefRecord, Option<Pending>);

/// The chunk holding byte `at`: chunks are in source order and never overlap, so a binary search
/// finds it (files with thousands of chunks, symbols and refs stay linear-logarithmic).
pub fn chunk_at(chunks: &[ChunkRecord], at: usize) -> Option<i64> {
    let i = chunks.partition_point(|c| c.chunk.start_byte <= at);
    chunks[..i]
        .last()
        .filter(|c| at < c.chunk.end_byte)
        .map(|c| c.chunk_id)
}
