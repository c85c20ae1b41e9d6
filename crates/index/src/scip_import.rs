//! Precise cross-references from SCIP indexes (`trove index --scip FILE`).
//!
//! A SCIP index (scip-typescript, scip-python, rust-analyzer's `scip`, scip-java...) says, for each
//! document, which symbol every identifier defines or references, by a global symbol string. The
//! pipeline hands each indexed code file's document to [`apply`]:
//!
//! - **Staleness first.** Every occurrence's range must lie in the file's text, and the identifier
//!   at each range must be the symbol's name (at most one in ten may differ: an import alias, a
//!   renamed default export). A document built at another commit, or for a file changed since,
//!   fails this and keeps the syntax heuristics; it is counted and named in the summary.
//! - **Definitions.** A SCIP definition whose identifier sits on a definition's name line with
//!   that name marks that definition with its SCIP symbol string (`symbols.scip_symbol`), and
//!   gives it the index's documentation when it had none. A function, method or type the syntax
//!   rules missed is added, with the index's range, signature and documentation.
//! - **References.** The file's calls, base types and type uses found by the syntax rules are
//!   replaced by the document's occurrences: one `refs` row per occurrence of a global type,
//!   term, method or macro that is not a definition (`resolution = scip`, the target's SCIP
//!   symbol in `refs.scip_symbol`); import statements stay. An occurrence is a `call` when a `(`
//!   follows it, an `import` when the index says so, else `references`. Implementations
//!   (`is_implementation` relationships) become `implements` rows from the implementing
//!   definition. Locals, parameters and modules are not references.
//!
//! The target definition is found when the bundle is written, by SCIP symbol string, across all
//! files and segments (`resolve`): exact whatever the names, and never a guess.
use std::path::{Path, PathBuf};

use protobuf::Message;
use rustc_hash::FxHashMap;
use scip::types::descriptor::Suffix;
use scip::types::{Document, Index, Occurrence, PositionEncoding};

pub use crate::record::FileOutcome;
use crate::record::{ChunkRecord, RefKind, RefRecord, Resolution, SymbolRecord};
use crate::{Error, Result};
pub use trove_bundle::ScipInput;
pub use trove_bundle::resolution::{scip_key, scip_key_sql};

/// The SCIP file `trove index` reads from the root of the tree when present (unless `--no-scip`).
pub const DEFAULT_FILE: &str = "index.scip";

/// The share of checked occurrences whose identifier may differ from the symbol's name before a
/// document counts as stale (one in ten).
const MISMATCH_TOLERANCE: f64 = 0.1;

/// The SCIP indexes given to a run, their documents by root-relative path.
#[derive(Debug, Default)]
pub struct ScipIndex {
    docs: FxHashMap<String, (Document, Encoding)>,
    /// What was read, in the order given.
    pub inputs: Vec<ScipInput>,
}

/// How a document counts columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 bytes.
    Utf8,
    /// UTF-16 code units (LSP's unit, and what an index that does not say uses).
    Utf16,
    /// Unicode scalar values.
    Utf32,
}

impl ScipIndex {
    /// Reads `files` (SCIP indexes of the tree at `root`, the indexed directory). A document's
    /// path is relative to its index's project root: when that root is `root` or a directory
    /// above or below it, paths are rebased onto `root` (documents outside `root` are left out);
    /// when it is elsewhere (an index made on another machine), paths are taken as relative to
    /// `root`. A later file's document replaces an earlier one's for the same path.
    pub fn load(root: &Path, files: &[PathBuf]) -> Result<Self> {
        let mut out = ScipIndex::default();
        for file in files {
            let bytes = std::fs::read(file).map_err(|e| Error::io(file, e))?;
            let index = Index::parse_from_bytes(&bytes).map_err(|e| {
                Error::bad_input(format!(
                    "{}: not a SCIP index ({e}); make one with an indexer such as scip-typescript or scip-python, or index without it (--no-scip)",
                    file.display()
                ))
            })?;
            let meta = index.metadata.as_ref();
            let tool = meta
                .and_then(|m| m.tool_info.as_ref())
                .map(|t| format!("{} {}", t.name, t.version).trim().to_string())
                .unwrap_or_default();
            let project = meta.map(|m| m.project_root.as_str()).unwrap_or_default();
            let rebase = Rebase::new(root, project);
            let documents = index.documents.len();
            let mut in_tree = 0;
            for doc in index.documents {
                let Some(rel) = rebase.apply(&doc.relative_path) else {
                    continue;
                };
                in_tree += 1;
                let enc = match doc.position_encoding.enum_value() {
                    Ok(PositionEncoding::UTF8CodeUnitOffsetFromLineStart) => Encoding::Utf8,
                    Ok(PositionEncoding::UTF32CodeUnitOffsetFromLineStart) => Encoding::Utf32,
                    _ => Encoding::Utf16,
                };
                out.docs.insert(rel, (doc, enc));
            }
            out.inputs.push(ScipInput {
                file: file.display().to_string(),
                tool,
                sha256: trove_base::util::sha256_hex(&bytes),
                documents,
                in_tree,
            });
        }
        Ok(out)
    }

    /// The document of the file at `rel` (root-relative), if an index has one.
    pub fn document(&self, rel: &str) -> Option<(&Document, Encoding)> {
        self.docs.get(rel).map(|(d, e)| (d, *e))
    }

    /// Whether no index was given.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// The root-relative paths of every document in the tree, in no order.
    pub fn paths(&self) -> impl ExactSizeIterator<Item = &str> {
        self.docs.keys().map(String::as_str)
    }
}

/// How an index's document paths map onto the indexed root.
enum Rebase {
    /// Prepend this (the index was made in a directory below the root).
    Prefix(String),
    /// Strip this (the index was made above the root); other paths are outside.
    Strip(String),
}

impl Rebase {
    fn new(root: &Path, project_root: &str) -> Self {
        let project = project_root
            .strip_prefix("file://")
            .map(percent_decode)
            .map(PathBuf::from)
            .and_then(|p| p.canonicalize().ok());
        let Some(project) = project else {
            return Rebase::Prefix(String::new());
        };
        let slash = |p: &Path| {
            let s = trove_base::util::slash_path(p);
            if s.is_empty() { s } else { format!("{s}/") }
        };
        if let Ok(below) = project.strip_prefix(root) {
            Rebase::Prefix(slash(below))
        } else if let Ok(above) = root.strip_prefix(&project) {
            Rebase::Strip(slash(above))
        } else {
            Rebase::Prefix(String::new())
        }
    }

    fn apply(&self, rel: &str) -> Option<String> {
        let rel = rel.trim_start_matches("./");
        match self {
            Rebase::Prefix(p) => Some(format!("{p}{rel}")),
            Rebase::Strip(p) => rel.strip_prefix(p.as_str()).map(str::to_string),
        }
    }
}

/// `%20` and friends decoded (a `file://` URI's path).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
            && let Ok(v) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or(""), 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A SCIP symbol's parts trove uses.
struct Parsed {
    /// The name refs and symbols show: the last descriptor's (a constructor's: its type's).
    name: String,
    /// The name the identifier at an occurrence should have (`<constructor>`: none).
    checked_name: Option<String>,
    /// The last descriptor's suffix.
    suffix: Suffix,
    /// Names of the type, term, method and macro descriptors, outermost first.
    path: Vec<String>,
}

fn parse(symbol: &str) -> Option<Parsed> {
    if scip::symbol::is_local_symbol(symbol) {
        return None;
    }
    let s = scip::symbol::parse_symbol(symbol).ok()?;
    let last = s.descriptors.last()?;
    let suffix = last.suffix.enum_value().ok()?;
    let path: Vec<String> = s
        .descriptors
        .iter()
        .filter(|d| {
            matches!(
                d.suffix.enum_value(),
                Ok(Suffix::Type | Suffix::Term | Suffix::Method | Suffix::Macro)
            )
        })
        .map(|d| d.name.clone())
        .collect();
    // `<constructor>`, `<init>`, `<get>`: a name the language has no identifier for (not an
    // operator such as Ruby's `<=>`).
    let special = last.name.len() > 2
        && last.name.starts_with('<')
        && last.name.ends_with('>')
        && last.name[1..last.name.len() - 1]
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_');
    let name = if special {
        let n = s.descriptors.len();
        (n >= 2).then(|| s.descriptors[n - 2].name.clone())?
    } else {
        last.name.clone()
    };
    Some(Parsed {
        checked_name: (!special).then(|| last.name.clone()),
        name,
        suffix,
        path,
    })
}

/// Whether occurrences of a symbol with this suffix are facts trove keeps (types, terms,
/// methods, macros; not modules, parameters, type parameters or locals).
fn kept(suffix: Suffix) -> bool {
    matches!(
        suffix,
        Suffix::Type | Suffix::Term | Suffix::Method | Suffix::Macro
    )
}

/// A range as (start line, start column, end line, end column), 0-based.
fn range(o: &Occurrence) -> Option<(usize, usize, usize, usize)> {
    use scip::types::occurrence::Typed_range;
    match &o.typed_range {
        Some(Typed_range::SingleLineRange(s)) => {
            span(&[s.line, s.start_character, s.end_character])
        }
        Some(Typed_range::MultiLineRange(m)) => {
            span(&[m.start_line, m.start_character, m.end_line, m.end_character])
        }
        _ => span(&o.range),
    }
}

/// A SCIP range, `[line, start, end]` or `[start line, start, end line, end]`, as (start line,
/// start column, end line, end column); none when it is neither or holds a negative number.
fn span(r: &[i32]) -> Option<(usize, usize, usize, usize)> {
    let u = |v: i32| usize::try_from(v).ok();
    match r {
        [l, a, b] => Some((u(*l)?, u(*a)?, u(*l)?, u(*b)?)),
        [l, a, m, b] => Some((u(*l)?, u(*a)?, u(*m)?, u(*b)?)),
        _ => None,
    }
}

/// The file's lines: byte offset of each line's start, and the text.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// Line `l` without its line break.
    fn line(&self, l: usize) -> Option<&'a str> {
        let start = *self.starts.get(l)?;
        let end = self
            .starts
            .get(l + 1)
            .map_or(self.text.len(), |&e| e.saturating_sub(1));
        let s = self.text.get(start..end.max(start))?;
        Some(s.strip_suffix('\r').unwrap_or(s))
    }

    /// The byte offset of column `col` of line `l`.
    fn byte(&self, l: usize, col: usize, enc: Encoding) -> Option<usize> {
        let line = self.line(l)?;
        let within = match enc {
            Encoding::Utf8 => (col <= line.len() && line.is_char_boundary(col)).then_some(col),
            Encoding::Utf16 | Encoding::Utf32 => {
                let mut units = 0;
                let mut at = None;
                for (i, ch) in line.char_indices() {
                    if units == col {
                        at = Some(i);
                        break;
                    }
                    units += match enc {
                        Encoding::Utf16 => ch.len_utf16(),
                        _ => 1,
                    };
                }
                at.or((units == col).then_some(line.len()))
            }
        }?;
        Some(self.starts[l] + within)
    }
}

/// One occurrence placed in the file's text.
struct Placed<'d> {
    occ: &'d Occurrence,
    line: usize,
    start: usize,
    end: usize,
}

/// Applies the document `doc` (columns in `enc`) to the rows of the file whose (redacted) text is
/// `text`: marks and adds definitions in `symbols`, replaces the syntax rules' calls and type
/// references in `refs` by the document's occurrences (see the module docs). `new_id` makes the
/// id of an added definition. A stale document changes nothing.
pub fn apply(
    doc: &Document,
    enc: Encoding,
    text: &str,
    symbols: &mut Vec<SymbolRecord>,
    refs: &mut Vec<RefRecord>,
    chunks: &[ChunkRecord],
    new_id: impl Fn(&trove_lang::chunk::Symbol) -> i64,
) -> FileOutcome {
    let file = match Placement::of(doc, enc, text) {
        Ok(file) => file,
        Err(why) => return FileOutcome::Stale(why),
    };
    let (matched, added, defined_at) = file.definitions(doc, symbols, chunks, new_id);
    // References: the occurrences replace the syntax rules' calls and type uses.
    refs.retain(|r| r.kind == RefKind::Import);
    let before = refs.len();
    file.occurrence_refs(symbols, chunks, refs);
    implementation_refs(doc, &defined_at, symbols, refs);
    let taken = (refs.len() - before) as u32;
    refs.sort_by_key(|r| r.line);
    FileOutcome::Applied {
        matched,
        added,
        refs: taken,
    }
}

/// Whether `o` defines its symbol.
fn is_def(o: &Occurrence) -> bool {
    o.symbol_roles & scip::types::SymbolRole::Definition as i32 != 0
}

/// A document's occurrences placed in the file's text, with their symbols parsed.
struct Placement<'d> {
    text: &'d str,
    enc: Encoding,
    lines: Lines<'d>,
    parsed: FxHashMap<&'d str, Option<Parsed>>,
    placed: Vec<Placed<'d>>,
}

impl<'d> Placement<'d> {
    /// Places every occurrence of `doc` in `text` (but those on a line with a redacted secret,
    /// whose columns moved); `Err` says why the document is stale (a range missing or outside
    /// the file, or too many identifiers that are not the names the index gives them).
    fn of(doc: &'d Document, enc: Encoding, text: &'d str) -> std::result::Result<Self, String> {
        let lines = Lines::new(text);
        let mut parsed: FxHashMap<&str, Option<Parsed>> = FxHashMap::default();
        let mut placed = Vec::with_capacity(doc.occurrences.len());
        let (mut checked, mut mismatched) = (0usize, 0usize);
        for occ in &doc.occurrences {
            let p = parsed
                .entry(occ.symbol.as_str())
                .or_insert_with(|| parse(&occ.symbol));
            let Some((l0, c0, l1, c1)) = range(occ) else {
                return Err(format!("an occurrence of {} has no range", occ.symbol));
            };
            // A secret redacted on the line moved its columns: the line's occurrences are left
            // out.
            if (l0..=l1).any(|l| lines.line(l).is_some_and(|t| t.contains("[REDACTED:"))) {
                continue;
            }
            let (Some(start), Some(end)) = (lines.byte(l0, c0, enc), lines.byte(l1, c1, enc))
            else {
                return Err(format!(
                    "line {} column {} lies outside the file",
                    l1 + 1,
                    c1 + 1
                ));
            };
            if end < start {
                return Err(format!("a range ends before it starts on line {}", l0 + 1));
            }
            if let Some(p) = p.as_ref().filter(|p| kept(p.suffix))
                && let Some(name) = &p.checked_name
                && start < end
                && scip::symbol::is_simple_identifier(name)
            {
                checked += 1;
                if &text[start..end] != name {
                    mismatched += 1;
                }
            }
            placed.push(Placed {
                occ,
                line: l0,
                start,
                end,
            });
        }
        if mismatched as f64 > MISMATCH_TOLERANCE * checked as f64 {
            return Err(format!(
                "{mismatched} of {checked} identifiers are not the names the index gives them"
            ));
        }
        Ok(Placement {
            text,
            enc,
            lines,
            parsed,
            placed,
        })
    }

    /// The parsed symbol of `pl` when it is one trove keeps.
    fn kept(&self, pl: &Placed<'_>) -> Option<&Parsed> {
        self.parsed[pl.occ.symbol.as_str()]
            .as_ref()
            .filter(|p| kept(p.suffix))
    }

    /// Definitions: marks the syntax rules' own with their SCIP symbol, adds what they missed.
    /// Returns (matched, added, the line each SCIP symbol is defined on).
    fn definitions(
        &self,
        doc: &'d Document,
        symbols: &mut Vec<SymbolRecord>,
        chunks: &[ChunkRecord],
        new_id: impl Fn(&trove_lang::chunk::Symbol) -> i64,
    ) -> (u32, u32, FxHashMap<&'d str, usize>) {
        let (text, lines, enc) = (self.text, &self.lines, self.enc);
        let infos: FxHashMap<&str, &scip::types::SymbolInformation> =
            doc.symbols.iter().map(|s| (s.symbol.as_str(), s)).collect();
        let (mut matched, mut added) = (0u32, 0u32);
        let mut defined_at: FxHashMap<&str, usize> = FxHashMap::default();
        for pl in self.placed.iter().filter(|pl| is_def(pl.occ)) {
            let Some(p) = self.kept(pl) else {
                continue;
            };
            // One definition per symbol: overloads (`@overload`, TypeScript signatures) define it
            // again, and a symbol on two definitions would resolve to neither.
            if defined_at.contains_key(pl.occ.symbol.as_str()) {
                continue;
            }
            defined_at.insert(pl.occ.symbol.as_str(), pl.line);
            let ident = &text[pl.start..pl.end];
            let info = infos.get(pl.occ.symbol.as_str()).copied();
            // A method on a callable, a type on a type; a constructor by its own identifier, never
            // on its class.
            let fits = |kind: &str| match p.suffix {
                Suffix::Method | Suffix::Macro => {
                    trove_bundle::resolution::CALLABLE_KINDS.contains(&kind)
                }
                Suffix::Type => trove_bundle::resolution::TYPE_KINDS.contains(&kind),
                _ => true,
            };
            let found = symbols.iter_mut().find(|s| {
                s.scip_symbol.is_none()
                    && s.symbol.name_line == pl.line + 1
                    && fits(&s.symbol.kind)
                    && (s.symbol.name == ident
                        || (p.checked_name.is_some() && s.symbol.name == p.name))
            });
            if let Some(s) = found {
                s.scip_symbol = Some(pl.occ.symbol.clone());
                if s.symbol.docs.is_none() {
                    s.symbol.docs = info.and_then(documentation);
                }
                matched += 1;
                continue;
            }
            let Some(kind) = added_kind(p, info) else {
                continue;
            };
            let (start, end) = match enclosing(pl.occ, lines, enc) {
                Some((s, e)) if s <= pl.start && pl.end <= e => (s, e),
                _ => (pl.start, pl.end),
            };
            let line_of = |b: usize| lines.starts.partition_point(|&s| s <= b);
            let sym = trove_lang::chunk::Symbol {
                kind: kind.to_string(),
                name: p.name.clone(),
                symbol_path: p.path.join(" > "),
                start_byte: start,
                end_byte: end,
                start_line: line_of(start),
                end_line: line_of(end.saturating_sub(1).max(start)),
                name_line: pl.line + 1,
                signature: info.and_then(signature),
                docs: info.and_then(documentation),
                parent: None,
                exported: None,
            };
            let parent_id = innermost(symbols, start, end);
            symbols.push(SymbolRecord {
                symbol_id: new_id(&sym),
                parent_id,
                chunk_id: crate::record::chunk_at(chunks, start),
                scip_symbol: Some(pl.occ.symbol.clone()),
                symbol: sym,
            });
            added += 1;
        }
        if added > 0 {
            symbols.sort_by_key(|s| s.symbol.start_byte);
        }
        (matched, added, defined_at)
    }

    /// The occurrences that are not definitions, as references (imports, calls, other uses).
    fn occurrence_refs(
        &self,
        symbols: &[SymbolRecord],
        chunks: &[ChunkRecord],
        refs: &mut Vec<RefRecord>,
    ) {
        let from = |at: usize| innermost(symbols, at, at + 1);
        for pl in self.placed.iter().filter(|pl| !is_def(pl.occ)) {
            let Some(p) = self.kept(pl) else {
                continue;
            };
            let kind = if pl.occ.symbol_roles & scip::types::SymbolRole::Import as i32 != 0 {
                RefKind::Import
            } else if self.text[pl.end..].trim_start().starts_with('(') {
                RefKind::Call
            } else {
                RefKind::References
            };
            refs.push(scip_ref(
                pl.line + 1,
                kind,
                p,
                &pl.occ.symbol,
                from(pl.start),
                crate::record::chunk_at(chunks, pl.start),
            ));
        }
    }
}

/// Implementations, from the implementing definition (`defined_at`: the line each SCIP symbol
/// is defined on).
fn implementation_refs(
    doc: &Document,
    defined_at: &FxHashMap<&str, usize>,
    symbols: &[SymbolRecord],
    refs: &mut Vec<RefRecord>,
) {
    for info in &doc.symbols {
        let Some(&line) = defined_at.get(info.symbol.as_str()) else {
            continue;
        };
        let from_symbol = symbols
            .iter()
            .find(|s| s.scip_symbol.as_deref() == Some(info.symbol.as_str()));
        for rel in info.relationships.iter().filter(|r| r.is_implementation) {
            let Some(p) = parse(&rel.symbol) else {
                continue;
            };
            refs.push(scip_ref(
                line + 1,
                RefKind::Implements,
                &p,
                &rel.symbol,
                from_symbol.map(|s| s.symbol_id),
                from_symbol.and_then(|s| s.chunk_id),
            ));
        }
    }
}

fn scip_ref(
    line: usize,
    kind: RefKind,
    p: &Parsed,
    symbol: &str,
    from_symbol_id: Option<i64>,
    chunk_id: Option<i64>,
) -> RefRecord {
    RefRecord {
        line,
        kind,
        target: p.name.clone(),
        from_symbol_id,
        chunk_id,
        target_symbol_id: None,
        resolution: Some(Resolution::Scip),
        scip_symbol: Some(symbol.to_string()),
        exports: None,
        scope: crate::record::Scope::Open,
    }
}

/// The id of the innermost definition of `symbols` holding `start..end`.
fn innermost(symbols: &[SymbolRecord], start: usize, end: usize) -> Option<i64> {
    // The smallest; on equal ranges the last, as `resolve::in_file` picks.
    symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| s.symbol.start_byte <= start && end <= s.symbol.end_byte)
        .min_by_key(|(i, s)| {
            (
                s.symbol.end_byte - s.symbol.start_byte,
                std::cmp::Reverse(*i),
            )
        })
        .map(|(_, s)| s.symbol_id)
}

/// An occurrence's enclosing range (the whole definition) as bytes, when the index gives one.
fn enclosing(o: &Occurrence, lines: &Lines<'_>, enc: Encoding) -> Option<(usize, usize)> {
    use scip::types::occurrence::Typed_enclosing_range as T;
    let (l0, c0, l1, c1) = match &o.typed_enclosing_range {
        Some(T::SingleLineEnclosingRange(s)) => span(&[s.line, s.start_character, s.end_character]),
        Some(T::MultiLineEnclosingRange(m)) => {
            span(&[m.start_line, m.start_character, m.end_line, m.end_character])
        }
        _ => span(&o.enclosing_range),
    }?;
    Some((lines.byte(l0, c0, enc)?, lines.byte(l1, c1, enc)?))
}

/// The kind of a definition the syntax rules missed, when trove keeps such definitions: functions,
/// methods, macros and types (not fields or variables).
fn added_kind(p: &Parsed, info: Option<&scip::types::SymbolInformation>) -> Option<&'static str> {
    use scip::types::symbol_information::Kind as K;
    if let Some(k) = info.and_then(|i| i.kind.enum_value().ok()) {
        let kind = match k {
            K::Class | K::SingletonClass => "class",
            K::Interface | K::Protocol => "interface",
            K::Struct => "struct",
            K::Enum => "enum",
            K::Trait | K::TypeClass => "trait",
            K::TypeAlias | K::Type => "type",
            K::Method
            | K::StaticMethod
            | K::AbstractMethod
            | K::TraitMethod
            | K::ProtocolMethod
            | K::SingletonMethod => "method",
            K::Function => "function",
            K::Constructor => "constructor",
            K::Macro => "macro",
            _ => "",
        };
        if !kind.is_empty() {
            return Some(kind);
        }
    }
    match p.suffix {
        Suffix::Method if p.checked_name.is_none() => Some("constructor"),
        Suffix::Method if p.path.len() > 1 => Some("method"),
        Suffix::Method => Some("function"),
        Suffix::Macro => Some("macro"),
        Suffix::Type => {
            // The declaration's keyword, as the index's hover text shows it.
            let sig = info.and_then(signature).unwrap_or_default();
            let word = sig.split_whitespace().next().unwrap_or_default();
            Some(match word {
                "interface" => "interface",
                "enum" => "enum",
                "type" => "type",
                "struct" => "struct",
                "trait" => "trait",
                _ => "class",
            })
        }
        _ => None,
    }
}

/// The declaration the index shows for a symbol: its first documentation entry's code block,
/// whitespace collapsed.
fn signature(info: &scip::types::SymbolInformation) -> Option<String> {
    if let Some(s) = info.signature_documentation.as_ref()
        && !s.text.trim().is_empty()
    {
        return Some(s.text.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    let first = info.documentation.first()?.trim();
    let body = first.strip_prefix("```")?;
    let body = body.split_once('\n').map_or("", |(_, b)| b);
    let body = body.trim_end().strip_suffix("```").unwrap_or(body);
    let s = body.split_whitespace().collect::<Vec<_>>().join(" ");
    (!s.is_empty()).then_some(s)
}

/// The index's documentation of a symbol: its entries other than code blocks and module headers.
fn documentation(info: &scip::types::SymbolInformation) -> Option<String> {
    let parts: Vec<&str> = info
        .documentation
        .iter()
        .map(|d| d.trim())
        .filter(|d| !d.is_empty() && !d.starts_with("```") && !d.starts_with("(module)"))
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_in_the_document_encoding() {
        let text = "let é = f(x);\nnext\n";
        let lines = Lines::new(text);
        // `f` is the 9th character: byte 9 (é is two bytes), UTF-16 unit 8.
        assert_eq!(lines.byte(0, 8, Encoding::Utf16), Some(9));
        assert_eq!(lines.byte(0, 8, Encoding::Utf32), Some(9));
        assert_eq!(lines.byte(0, 9, Encoding::Utf8), Some(9));
        assert_eq!(lines.byte(0, 5, Encoding::Utf8), None, "inside é");
        assert_eq!(lines.byte(1, 4, Encoding::Utf8), Some(19));
        assert_eq!(
            lines.byte(1, 5, Encoding::Utf8),
            None,
            "past the line's end"
        );
        assert_eq!(lines.byte(3, 0, Encoding::Utf8), None, "past the last line");
    }

    #[test]
    fn symbols_name_their_last_descriptor_and_constructors_their_type() {
        let p = parse("scip-typescript npm demo 1.0.0 src/`a.ts`/Circle#area().").unwrap();
        assert_eq!((p.name.as_str(), p.suffix), ("area", Suffix::Method));
        assert_eq!(p.path, ["Circle", "area"]);
        let c =
            parse("scip-typescript npm demo 1.0.0 src/`a.ts`/Circle#`<constructor>`().").unwrap();
        assert_eq!((c.name.as_str(), c.checked_name), ("Circle", None));
        assert!(parse("local 3").is_none());
        assert_eq!(
            scip_key("scip-python python Flask 3.1.3 `flask.cli`/find_best_app().").as_deref(),
            Some("scip-python python flask `flask.cli`/find_best_app().")
        );
        assert_eq!(
            scip_key("scip-python python flask 0 `flask.cli`/find_best_app()."),
            scip_key("scip-python python Flask 3.1.3 `flask.cli`/find_best_app().")
        );
        assert_eq!(
            scip_key("rust-analyzer cargo my  crate 1.0 a/B#").as_deref(),
            Some("rust-analyzer cargo my  crate a/B#")
        );
        assert_eq!(scip_key("local 3"), None);
        assert!(!kept(
            parse("scip-python python shop 1 `shop.models`/__init__:")
                .unwrap()
                .suffix
        ));
    }

    #[test]
    fn paths_rebase_onto_the_indexed_root() {
        let dir = std::env::temp_dir().join(format!("trove-rebase-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("web/src")).unwrap();
        let dir = dir.canonicalize().unwrap();
        let uri = |p: &Path| format!("file://{}", p.display());
        // Index made at the repo root, trove indexing web/.
        let r = Rebase::new(&dir.join("web"), &uri(&dir));
        assert_eq!(r.apply("web/src/a.ts").as_deref(), Some("src/a.ts"));
        assert_eq!(r.apply("api/b.ts"), None);
        // Index made in web/, trove indexing the repo.
        let r = Rebase::new(&dir, &uri(&dir.join("web")));
        assert_eq!(r.apply("src/a.ts").as_deref(), Some("web/src/a.ts"));
        // Made elsewhere: taken as relative to the root.
        let r = Rebase::new(&dir, "file:///nowhere/at/all");
        assert_eq!(r.apply("src/a.ts").as_deref(), Some("src/a.ts"));
        assert_eq!(percent_decode("/a%20b/c"), "/a b/c");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
