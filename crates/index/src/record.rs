//! The records that flow from the pipeline into the bundle writer, and back out of a bundle's
//! reader when rows are carried or merged: one file's rows ([`FileRecord`]) with its chunks,
//! definitions and references, plus the postings streams the writer merges.
//!
//! This module sits below both `pipeline` and `bundle`, so neither depends on the other's
//! internals for its types. The closed sets that references carry ([`RefKind`], [`Resolution`])
//! are enums here; their names are what the bundle stores.
use crate::Result;
use crate::chunk::{Chunk, Symbol};
use crate::extract::deps::Dep;

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
    pub scip: Option<crate::precise::FileOutcome>,
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
    /// The embeddings of the chunk's further windows (`embed::window_texts`), one after another
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
    /// ([`crate::precise`]).
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
    /// The definition it resolves to (see [`crate::resolve`]); none when there are none or
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
    /// the bundle-wide step needs is stored as its [`crate::resolve::Pending`]).
    pub scope: Scope,
}

/// Where the bundle-wide step may look for a reference's target ([`crate::resolve`]).
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
    Stored(Option<crate::resolve::Pending>),
}

/// Declares a closed set of names stored as strings (in the bundle, the config, language files):
/// the enum, its stored name, the parse back (an unknown name is said by the caller), and serde
/// as that name, refusing others with the list of choices.
macro_rules! named_set {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name the bundle stores.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value a stored name stands for.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        /// Ordered by the stored name, as the rows that hold it are sorted.
        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).ok_or_else(|| {
                    serde::de::Error::custom(format!("{s:?}: choose {}", $crate::record::choices(Self::ALL.iter().map(|v| v.as_str()))))
                })
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                Self::parse(s).ok_or_else(|| {
                    format!("{s:?}: choose {}", $crate::record::choices(Self::ALL.iter().map(|v| v.as_str())))
                })
            }
        }
    };
}
pub(crate) use named_set;

/// `"a", "b" or "c"`: the names a closed set accepts, for error messages.
pub fn choices<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => v.join(""),
    }
}

named_set! {
    /// The kind of a reference (`refs.kind`).
    RefKind {
        /// An import statement (its text is the target).
        Import = "import",
        /// A call (the callee's last name segment is the target).
        Call = "call",
        /// A base class.
        Inherits = "inherits",
        /// An implemented interface or trait.
        Implements = "implements",
        /// A type used by name.
        References = "references",
    }
}

named_set! {
    /// How a reference's target definition was found (`refs.resolution`).
    Resolution {
        /// The one definition of that name in the same file.
        File = "file",
        /// The one definition of the imported name in the module file an import names.
        Import = "import",
        /// The one definition of that name in the language family across the bundle.
        Repo = "repo",
        /// A SCIP index's occurrence of the symbol: exact, whatever the names (the target is
        /// the bundle's definition of that SCIP symbol; none when it lies outside the bundle).
        Scip = "scip",
    }
}

named_set! {
    /// Why a file or directory is not indexed (`skipped.reason`).
    SkipReason {
        /// Hidden by .gitignore, .ignore or .troveignore.
        Ignored = "ignored",
        /// A directory the skip rules always leave out (`node_modules`, `.git`, ...).
        ExcludedDir = "excluded-dir",
        /// Matched an `--exclude` glob.
        Excluded = "excluded",
        /// Matched no `--include` glob.
        NotIncluded = "not-included",
        /// A lock file.
        Lockfile = "lockfile",
        /// A minified name, or a line longer than `max_line_bytes`.
        Minified = "minified",
        /// A file that holds secrets by its name (keys, `.env`, ...).
        SecretFile = "secret-file",
        /// Larger than `max_file_bytes`.
        TooLarge = "too-large",
        /// Binary content.
        Binary = "binary",
        /// Not valid UTF-8.
        InvalidUtf8 = "invalid-utf8",
        /// UTF-16 (by its byte-order mark).
        Utf16 = "utf16",
        /// Marked as generated in its first bytes.
        Generated = "generated",
        /// A symbolic link to a file inside the root (indexed where it points).
        Symlink = "symlink",
        /// A symbolic link that leads out of the root.
        SymlinkOutsideRoot = "symlink-outside-root",
        /// A symbolic link that leads nowhere: its target is missing, or links loop.
        SymlinkBroken = "symlink-broken",
        /// Neither a regular file nor a directory.
        NotAFile = "not-a-file",
        /// Could not be read.
        Unreadable = "unreadable",
        /// A file name that is not UTF-8.
        NonUtf8Name = "non-utf8-name",
        /// A nested git repository.
        Submodule = "submodule",
        /// Another trove bundle inside the tree (its `manifest.json` and `views.sql`): an index
        /// built from source, not source.
        Bundle = "bundle",
        /// The worker processing it failed (a bug, counted and said in the summary).
        InternalError = "internal-error",
    }
}

/// One posting: (chunk ordinal, term frequency).
pub type Posting = (u32, u32);
/// The postings of one term, sorted by chunk ordinal once complete.
pub type Group = (String, Vec<Posting>);
/// A stream of term groups in term order (each group's ordinals sorted): postings carried over
/// from another bundle, renumbered to this bundle's ordinals.
pub type GroupSource = Box<dyn Iterator<Item = Result<Group>> + Send>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_sets_round_trip_their_stored_names() {
        for k in RefKind::ALL {
            assert_eq!(RefKind::parse(k.as_str()), Some(*k));
        }
        for r in SkipReason::ALL {
            assert_eq!(SkipReason::parse(r.as_str()), Some(*r));
        }
        let mut by_name: Vec<SkipReason> = SkipReason::ALL.to_vec();
        by_name.sort();
        assert!(by_name.windows(2).all(|w| w[0].as_str() < w[1].as_str()));
        for r in Resolution::ALL {
            assert_eq!(Resolution::parse(r.as_str()), Some(*r));
        }
        assert_eq!(RefKind::parse("calls"), None);
        assert_eq!(Resolution::parse(""), None);
    }
}
