//! The per-file step ([`in_file`]): each reference of a file gets its enclosing definition and
//! chunk, resolves to the file's one definition of its name where it can, and else gets the
//! scope the bundle-wide step looks it up in.
use trove_bundle::resolution::{TYPE_KINDS, target_kinds};
use trove_lang::lang::LanguageFile;
use trove_lang::lang::refs::Reference;

use super::file_symbols::FileSymbols;
use super::receiver_types::ReceiverTypes;
use super::types::is_ident;
use crate::record::{ChunkRecord, RefKind, RefRecord, Resolution, Scope, SymbolRecord, chunk_at};

/// A file's imports, calls and base types with the definition and chunk each occurs in; a
/// reference whose name is one definition of this file (of a kind it can land on) resolves to
/// it here (`file`). A call on a receiver resolves by what the receiver is (`lang`'s
/// `self_receivers`, `named_receivers`): on `self`/`this`, to the one method of that name beside
/// the calling one, else (later) in the holder's one base type ([`Scope::Typed`]), as `super`'s
/// calls; on a type of this file (`T::new()`), to that type's method, else (later) to its one
/// base type's (`class Index1(View)`, `Index1.as_view()`); on a name that
/// may be an imported module, later, in that module ([`Scope::Module`]); on anything else, not
/// at all ([`Scope::Closed`]: a guess by name is wrong more often than right). The rest are
/// resolved when the bundle is written (`Definitions`).
pub fn in_file(
    path: &str,
    refs: Vec<Reference>,
    symbols: &[SymbolRecord],
    chunks: &[ChunkRecord],
    lang: Option<&LanguageFile>,
    text: &str,
) -> Vec<RefRecord> {
    let defs = FileSymbols::new(symbols, lang.map(|l| l.id.as_str()), &refs);
    let types = ReceiverTypes::new(&defs, path, lang, text, &refs);
    let file = InFile {
        defs: &defs,
        types: &types,
        chunks,
        lang,
        need_receiver: lang.is_some_and(|l| l.methods_need_receiver),
    };
    refs.into_iter().map(|r| file.record(r)).collect()
}

/// What [`in_file`] reads each of a file's references against.
struct InFile<'a> {
    /// The file's definitions.
    defs: &'a FileSymbols<'a>,
    /// The types the file's code declares for its calls' receivers.
    types: &'a ReceiverTypes<'a>,
    /// The file's chunks.
    chunks: &'a [ChunkRecord],
    /// The file's language.
    lang: Option<&'a LanguageFile>,
    /// Whether the language calls a method only on a receiver (a bare call is no method's).
    need_receiver: bool,
}

/// Whether a definition is of one of `kinds`.
fn of_kinds(kinds: &[&str]) -> impl Fn(&&SymbolRecord) -> bool {
    move |s: &&SymbolRecord| kinds.contains(&s.symbol.kind.as_str())
}

impl InFile<'_> {
    /// The record of the reference `r`: where it occurs, and what it lands on in the file or the
    /// scope it is looked up in later.
    fn record(&self, r: Reference) -> RefRecord {
        let at = r.start_byte;
        let from = self.defs.enclosing(at);
        let chunk_id = chunk_at(self.chunks, at);
        let (target_symbol_id, scope) = self.target(&r, from);
        RefRecord {
            line: r.line,
            kind: r.kind,
            target: r.target,
            from_symbol_id: from,
            chunk_id,
            resolution: target_symbol_id.map(|_| Resolution::File),
            target_symbol_id,
            scip_symbol: None,
            exports: None,
            scope,
        }
    }

    /// What `r` (in the definition `from`) lands on in the file, and the scope it is looked up
    /// in later.
    fn target(&self, r: &Reference, from: Option<i64>) -> (Option<i64>, Scope) {
        match (r.kind, r.receiver.as_deref()) {
            (RefKind::Call, Some(recv)) => self.call_on(r, recv, from),
            // A function defined in an enclosing function (`def test(): def index(): ..;
            // index()`): the innermost one's, however many the file has elsewhere.
            (RefKind::Call, None) if let Some(id) = self.defs.nested(from, &r.target) => {
                (id, Scope::Closed)
            }
            // A value the function binds (`def f(load): load(x)`): nothing the bundle defines.
            (RefKind::Call, None) if r.local => (None, Scope::Closed),
            _ => self.bare(r, from),
        }
    }

    /// A call on an object: by name across files, unless the standard library shares the name.
    fn on_object(&self, name: &str) -> Scope {
        if self
            .lang
            .is_some_and(|l| l.common_methods.iter().any(|m| m == name))
        {
            Scope::Closed
        } else {
            Scope::Method
        }
    }

    /// A member `name` that `h` does not define itself: in its one base type (or that type's
    /// bases), else, when the call is one on an object, the one method of the name.
    fn inherited(&self, h: Option<i64>, name: &str) -> Option<Scope> {
        self.defs
            .one_base(h)
            .map(|b| Scope::Typed(b, self.on_object(name) == Scope::Method))
    }

    /// A call `r` on the receiver `recv`: by what the receiver is.
    fn call_on(&self, r: &Reference, recv: &str, from: Option<i64>) -> (Option<i64>, Scope) {
        let selfish = self.lang.is_some_and(|l| {
            l.self_receivers.iter().any(|s| s == recv)
                || (l.named_receivers && self.defs.receiver_of(from).as_deref() == Some(recv))
        });
        if recv == "super" && !r.path_call {
            // The base type's method: the holder's one base type's member (or its
            // bases'); with several bases, which one defines it is a type checker's.
            match self.defs.one_base(self.defs.holder(from)) {
                Some(b) => (None, Scope::Typed(b, false)),
                None => (None, Scope::Closed),
            }
        } else if recv.starts_with("super.") && !r.path_call {
            (None, Scope::Closed)
        } else if selfish {
            self.on_self(r, from)
        } else if recv
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            self.on_name(r, recv, from)
        } else if r.path_call {
            (None, path_scope(recv))
        } else {
            self.on_dotted(r, recv, from)
        }
    }

    /// A call on `self`/`this`: the one member of the name beside the calling one.
    fn on_self(&self, r: &Reference, from: Option<i64>) -> (Option<i64>, Scope) {
        let kinds = target_kinds(r.kind);
        let h = self.defs.holder(from);
        let id = h.and_then(|h| {
            FileSymbols::one(
                self.defs
                    .named(&r.target)
                    .filter(of_kinds(kinds))
                    .filter(move |s| s.parent_id == Some(h)),
            )
        });
        // Not beside it: inherited, from the holder's one base type (or its
        // bases) when it has one, else a method all the same.
        match id {
            Some(_) => (id, Scope::Closed),
            None => (
                None,
                self.inherited(h, &r.target)
                    .unwrap_or_else(|| self.on_object(&r.target)),
            ),
        }
    }

    /// A call on a plain name `recv`: `T::new()`, `T.create()` on a type this file defines;
    /// else, perhaps, a module, or an object whose type the code declares.
    fn on_name(&self, r: &Reference, recv: &str, from: Option<i64>) -> (Option<i64>, Scope) {
        let ty = FileSymbols::one(
            self.defs
                .named(recv)
                .filter(|s| TYPE_KINDS.contains(&s.symbol.kind.as_str())),
        );
        match ty {
            Some(t) => self.on_type(r, recv, t),
            // Not the file's method by name, even when it defines one: measured
            // on commander and rxjs, `option.name()` lands on another type's
            // `name` as often as on the file's (see scripts/bench-refs.sh).
            // `serde_json::from_str()`, `Regex::builder()`: a path names a module
            // or a type, never an object.
            // A type's (`Glob::new()`: its one member of the name, else nowhere)
            // or a module's (`pathutil::f()`, when a `use` names it).
            None if r.path_call => (None, path_scope(recv)),
            None => {
                let or_method = self.on_object(&r.target) == Scope::Method;
                match self.types.type_of(from, recv, r.receiver_bound) {
                    Some(t) => (None, Scope::Typed(t, or_method)),
                    None => (None, Scope::Module(recv.to_string(), or_method)),
                }
            }
        }
    }

    /// A call on the file's type `t` (named `recv`): its one member of the name (in it, or in an
    /// `impl` of its name), else inherited.
    fn on_type(&self, r: &Reference, recv: &str, t: i64) -> (Option<i64>, Scope) {
        let kinds = target_kinds(r.kind);
        let members = |s: &&SymbolRecord| {
            s.parent_id == Some(t)
                || self
                    .defs
                    .get(s.parent_id)
                    .is_some_and(|p| p.symbol.name == recv && p.symbol.kind == "impl")
        };
        let mut own = self
            .defs
            .named(&r.target)
            .filter(of_kinds(kinds))
            .filter(members);
        match (own.next(), own.next()) {
            (Some(s), None) => (Some(s.symbol_id), Scope::Closed),
            (Some(_), Some(_)) => (None, Scope::Closed),
            // Not its own: inherited (`class Index1(View)`,
            // `Index1.as_view()`), from its one base type (or its bases)
            // as for an inherited `self.f()`; a method all the same when
            // it has several; nowhere when it names no base.
            (None, _) => (
                None,
                self.inherited(Some(t), &r.target).unwrap_or_else(|| {
                    if self.defs.has_bases(t) {
                        self.on_object(&r.target)
                    } else {
                        Scope::Closed
                    }
                }),
            ),
        }
    }

    /// A call on a dotted receiver (`self.db.query()`, `flask.helpers.f()`, `a.b().c()`).
    fn on_dotted(&self, r: &Reference, recv: &str, from: Option<i64>) -> (Option<i64>, Scope) {
        // `self.db.query()`: a field of the holder whose type it declares.
        let field = self.lang.and_then(|l| {
            l.self_receivers.iter().find_map(|s| {
                recv.strip_prefix(s.as_str())?
                    .strip_prefix('.')
                    .filter(|f| f.chars().all(is_ident))
            })
        });
        let or_method = self.on_object(&r.target) == Scope::Method;
        match field.and_then(|f| self.types.field_of(from, f)) {
            Some(t) => (None, Scope::Typed(t, or_method)),
            // `flask.helpers.make_response()`: in a module's submodule when
            // `flask` is an imported module, else a call on an object.
            None if field.is_none()
                && !r.chained
                && recv
                    .split('.')
                    .all(|p| !p.is_empty() && p.chars().all(is_ident)) =>
            {
                (None, Scope::Module(recv.to_string(), or_method))
            }
            None => (None, self.on_object(&r.target)),
        }
    }

    /// A bare name (a call without receiver, a base type, a type use): the file's one
    /// definition of it, else open for the bundle-wide step.
    fn bare(&self, r: &Reference, from: Option<i64>) -> (Option<i64>, Scope) {
        let kinds = target_kinds(r.kind);
        let bare_call = r.kind == RefKind::Call;
        // A base type named as the type itself is another module's
        // (`class EnvironBuilder(werkzeug.test.EnvironBuilder)`).
        let base = matches!(r.kind, RefKind::Inherits | RefKind::Implements);
        let id = FileSymbols::one(
            self.defs
                .named(&r.target)
                .filter(of_kinds(kinds))
                .filter(|s| {
                    let method = bare_call && self.need_receiver && s.symbol.kind == "method";
                    let itself = base && Some(s.symbol_id) == from;
                    !(method || itself)
                }),
        );
        (id, Scope::Open)
    }
}

/// Where a call on the path `recv` (`Glob::new`, `crate::glob::Glob::new`, `pathutil::f`) can
/// land: a type by its capital (its one member of the name), else the module the path names
/// ([`Scope::Path`]).
fn path_scope(recv: &str) -> Scope {
    let last = recv.rsplit("::").next().unwrap_or(recv);
    if last.starts_with(|c: char| c.is_uppercase()) && last.chars().all(is_ident) {
        Scope::Typed(last.to_string(), false)
    } else if recv
        .split("::")
        .all(|s| !s.is_empty() && s.chars().all(is_ident))
    {
        Scope::Path(recv.to_string())
    } else {
        Scope::Closed
    }
}
