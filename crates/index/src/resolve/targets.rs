//! Which of a file's definitions are targets: the first of an overload set counts
//! ([`counted`]), and a definition inside a function is that function's own
//! ([`local_definitions`]).
use rustc_hash::FxHashMap;
use trove_bundle::resolution::{CODE_KINDS, ONE_FUNCTION_OVERLOADS};

use crate::record::SymbolRecord;

/// For each of a file's `symbols` (in `language`), whether it counts as a target: all but the
/// later ones of an overload set ([`ONE_FUNCTION_OVERLOADS`]): same parent, kind and name, the
/// first by (start byte, id) counting.
pub fn counted(language: Option<&str>, symbols: &[SymbolRecord]) -> Vec<bool> {
    let mut out = vec![true; symbols.len()];
    if !language.is_some_and(|l| ONE_FUNCTION_OVERLOADS.contains(&l)) {
        return out;
    }
    let mut order: Vec<usize> = (0..symbols.len()).collect();
    order.sort_unstable_by_key(|&i| (symbols[i].symbol.start_byte, symbols[i].symbol_id));
    let mut seen: rustc_hash::FxHashSet<(Option<i64>, &str, &str)> = Default::default();
    for i in order {
        let s = &symbols[i];
        out[i] = seen.insert((s.parent_id, s.symbol.kind.as_str(), s.symbol.name.as_str()));
    }
    out
}

/// The ids of `symbols` (one file's) defined inside a function or method, however deep
/// (`def test(): class Index: def head()`, a closure assigned in a function body).
pub fn local_definitions(symbols: &[SymbolRecord]) -> rustc_hash::FxHashSet<i64> {
    let by_id: FxHashMap<i64, &SymbolRecord> = symbols.iter().map(|s| (s.symbol_id, s)).collect();
    symbols
        .iter()
        .filter(|s| {
            let mut up = s.parent_id;
            // Bounded by the file's definitions, so a cycle in bad input cannot hang.
            for _ in 0..symbols.len() {
                let Some(p) = up.and_then(|p| by_id.get(&p)) else {
                    return false;
                };
                if CODE_KINDS.contains(&p.symbol.kind.as_str()) {
                    return true;
                }
                up = p.parent_id;
            }
            false
        })
        .map(|s| s.symbol_id)
        .collect()
}
