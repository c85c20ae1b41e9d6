//! One file's definitions, indexed for the per-file step (`in_file`): by start, by name and by
//! id; the definitions around a byte, the one holding a member, the base types each names.
use rustc_hash::FxHashMap;
use trove_bundle::resolution::{CALLABLE_KINDS, CODE_KINDS, is_base_name};
use trove_lang::lang::refs::Reference;

use super::targets::counted;
use crate::record::{RefKind, SymbolRecord};

/// A file's definitions by (start, index) and by (name, index): each reference looks up its
/// enclosing definition and its same-named ones instead of scanning them all.
pub(super) struct FileSymbols<'a> {
    /// The file's definitions.
    symbols: &'a [SymbolRecord],
    /// Indexes into `symbols` by (start byte, index).
    by_start: Vec<usize>,
    /// Indexes into `symbols` of the targets ([`counted`]) by (name, index).
    by_name: Vec<usize>,
    /// Index into `symbols` by id.
    by_id: FxHashMap<i64, usize>,
    /// The base types each definition names (`class A extends B`, `class A(B)`), by the
    /// definition's id: what `super.f()` and an inherited `this.f()` are looked up in.
    bases: FxHashMap<i64, Vec<String>>,
}

impl<'a> FileSymbols<'a> {
    /// The index of `symbols`, of a file in `language` whose references are `refs`.
    pub(super) fn new(
        symbols: &'a [SymbolRecord],
        language: Option<&str>,
        refs: &[Reference],
    ) -> Self {
        let mut by_start: Vec<usize> = (0..symbols.len()).collect();
        by_start.sort_unstable_by_key(|&i| (symbols[i].symbol.start_byte, i));
        // (An overload set's later definitions are no targets: [`counted`].)
        let targets = counted(language, symbols);
        let mut by_name: Vec<usize> = (0..symbols.len()).filter(|&i| targets[i]).collect();
        by_name.sort_unstable_by(|&a, &b| {
            (symbols[a].symbol.name.as_str(), a).cmp(&(symbols[b].symbol.name.as_str(), b))
        });
        let by_id: FxHashMap<i64, usize> = symbols
            .iter()
            .enumerate()
            .map(|(i, s)| (s.symbol_id, i))
            .collect();
        let mut file = FileSymbols {
            symbols,
            by_start,
            by_name,
            by_id,
            bases: FxHashMap::default(),
        };
        let mut bases: FxHashMap<i64, Vec<String>> = FxHashMap::default();
        for r in refs.iter().filter(|r| r.kind == RefKind::Inherits) {
            if let Some(id) = file.enclosing(r.start_byte) {
                bases.entry(id).or_default().push(r.target.clone());
            }
        }
        file.bases = bases;
        file
    }

    /// The file's definitions, in their order.
    pub(super) fn symbols(&self) -> &'a [SymbolRecord] {
        self.symbols
    }

    /// The definition of id `id`, when the file has one.
    pub(super) fn get(&self, id: Option<i64>) -> Option<&'a SymbolRecord> {
        let symbols = self.symbols;
        id.and_then(|i| self.by_id.get(&i)).map(|&i| &symbols[i])
    }

    /// The definitions from `id` outward: it, the one holding it, and so on.
    pub(super) fn up(&self, id: Option<i64>) -> impl Iterator<Item = &'a SymbolRecord> + '_ {
        std::iter::successors(self.get(id), move |s: &&SymbolRecord| self.get(s.parent_id))
    }

    /// The innermost definition holding byte `at`: the latest start at or before it whose end is
    /// past it (the last such in `symbols` order on equal starts, as `max_by_key`).
    pub(super) fn enclosing(&self, at: usize) -> Option<i64> {
        let symbols = self.symbols;
        let before = self
            .by_start
            .partition_point(|&i| symbols[i].symbol.start_byte <= at);
        self.by_start[..before]
            .iter()
            .rev()
            .find(|&&i| at < symbols[i].symbol.end_byte)
            .map(|&i| symbols[i].symbol_id)
    }

    /// The targets named `name`, by index.
    pub(super) fn named(&self, name: &str) -> impl Iterator<Item = &'a SymbolRecord> + '_ {
        let symbols = self.symbols;
        let lo = self
            .by_name
            .partition_point(|&i| symbols[i].symbol.name.as_str() < name);
        let hi = lo + self.by_name[lo..].partition_point(|&i| symbols[i].symbol.name == name);
        self.by_name[lo..hi].iter().map(move |&i| &symbols[i])
    }

    /// The id of the one definition `it` yields; none when it yields none or several.
    pub(super) fn one<'s>(mut it: impl Iterator<Item = &'s SymbolRecord>) -> Option<i64> {
        match (it.next(), it.next()) {
            (Some(s), None) => Some(s.symbol_id),
            _ => None,
        }
    }

    /// The definition holding the members beside `id`'s code: the first enclosing definition
    /// (from `id` itself) that is not a function or method.
    pub(super) fn holder(&self, id: Option<i64>) -> Option<i64> {
        self.up(id)
            .find(|s| !CODE_KINDS.contains(&s.symbol.kind.as_str()))
            .map(|s| s.symbol_id)
    }

    /// Whether the definition `id` names base types.
    pub(super) fn has_bases(&self, id: i64) -> bool {
        self.bases.contains_key(&id)
    }

    /// Its one base, when that is a name to follow and not the definition's own.
    pub(super) fn one_base(&self, id: Option<i64>) -> Option<String> {
        let id = id?;
        match self.bases.get(&id).map(Vec::as_slice) {
            Some([b])
                if is_base_name(b) && self.get(Some(id)).is_some_and(|s| &s.symbol.name != b) =>
            {
                Some(b.clone())
            }
            _ => None,
        }
    }

    /// A callable named `name` defined directly in a function or method around `from` (itself
    /// included), the innermost such: `Some(its id)`, `Some(None)` when that function defines
    /// two, `None` when none does.
    pub(super) fn nested(&self, from: Option<i64>, name: &str) -> Option<Option<i64>> {
        self.up(from)
            .filter(|s| CODE_KINDS.contains(&s.symbol.kind.as_str()))
            .find_map(|s| {
                let mut it = self.named(name).filter(|c| {
                    c.parent_id == Some(s.symbol_id)
                        && CALLABLE_KINDS.contains(&c.symbol.kind.as_str())
                });
                match (it.next(), it.next()) {
                    (Some(c), None) => Some(Some(c.symbol_id)),
                    (Some(_), Some(_)) => Some(None),
                    _ => None,
                }
            })
    }

    /// The receiver name in the signature of the method holding `id` (Go: `func (s *T) F()`).
    pub(super) fn receiver_of(&self, id: Option<i64>) -> Option<String> {
        let rest = self
            .up(id)
            .find_map(|s| s.symbol.signature.as_deref()?.strip_prefix("func ("))?;
        rest.split([' ', ')']).next().map(str::to_string)
    }
}
