//! Syntax highlighting of result snippets for the terminal: the snippet is parsed with its
//! language's tree-sitter grammar and painted by the grammar crate's own `highlights.scm` query
//! (TypeScript and C++ inherit the JavaScript and C queries, as editors do). No grammar or a query
//! that does not compile means plain text, never an error.
use rustc_hash::FxHashMap;
use std::sync::{Mutex, OnceLock};
use tree_sitter::{Parser, Query, QueryCursor, StreamingIterator};

use crate::lang::{Registry, grammars};

/// ANSI reset.
const RESET: &str = "\x1b[0m";

/// The colour of a capture name (`keyword.function` → its first part), if it gets one.
fn style(capture: &str) -> Option<&'static str> {
    let head = capture.split('.').next().unwrap_or(capture);
    Some(match head {
        "keyword" | "include" | "conditional" | "repeat" | "exception" => "\x1b[35m",
        "string" | "character" | "escape" => "\x1b[32m",
        "comment" => "\x1b[2;3m",
        "function" | "method" | "constructor" => "\x1b[34m",
        "type" | "tag" => "\x1b[33m",
        "constant" | "number" | "boolean" | "float" => "\x1b[36m",
        "attribute" | "label" | "module" | "namespace" => "\x1b[31m",
        _ => return None,
    })
}

/// The highlight query source of a grammar, with what it inherits.
fn query_source(grammar: &str) -> Option<String> {
    let js = tree_sitter_javascript::HIGHLIGHT_QUERY;
    Some(match grammar {
        "rust" => tree_sitter_rust::HIGHLIGHTS_QUERY.to_string(),
        "python" => tree_sitter_python::HIGHLIGHTS_QUERY.to_string(),
        "javascript" => format!("{js}\n{}", tree_sitter_javascript::JSX_HIGHLIGHT_QUERY),
        "typescript" => format!("{}\n{js}", tree_sitter_typescript::HIGHLIGHTS_QUERY),
        "tsx" => format!(
            "{}\n{js}\n{}",
            tree_sitter_typescript::HIGHLIGHTS_QUERY,
            tree_sitter_javascript::JSX_HIGHLIGHT_QUERY
        ),
        "go" => tree_sitter_go::HIGHLIGHTS_QUERY.to_string(),
        "java" => tree_sitter_java::HIGHLIGHTS_QUERY.to_string(),
        "c" => tree_sitter_c::HIGHLIGHT_QUERY.to_string(),
        "cpp" => format!(
            "{}\n{}",
            tree_sitter_cpp::HIGHLIGHT_QUERY,
            tree_sitter_c::HIGHLIGHT_QUERY
        ),
        _ => return None,
    })
}

/// Compiled queries, once per grammar per process (`None`: this grammar is not highlighted).
fn query(grammar: &str) -> Option<&'static Query> {
    static QUERIES: OnceLock<Mutex<FxHashMap<String, Option<&'static Query>>>> = OnceLock::new();
    let mut map = QUERIES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    *map.entry(grammar.to_string()).or_insert_with(|| {
        let lang = grammars::grammar(grammar)?;
        let q = Query::new(&lang, &query_source(grammar)?).ok()?;
        // A handful of grammars per process, each compiled once: kept for the process's life.
        Some(&*Box::leak(Box::new(q)))
    })
}

/// `code` with ANSI colours for the grammar `grammar`; `None` when it cannot be highlighted.
pub fn highlight(grammar: &str, code: &str) -> Option<String> {
    let q = query(grammar)?;
    let mut parser = Parser::new();
    parser.set_language(&grammars::grammar(grammar)?).ok()?;
    let tree = parser.parse(code, None)?;
    // Each byte gets the colour of the innermost capture over it; for one span, the earliest
    // pattern wins (the convention of highlights.scm files).
    let mut spans: Vec<(usize, usize, usize, &'static str)> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut captures = cursor.captures(q, tree.root_node(), code.as_bytes());
    while let Some((m, i)) = captures.next() {
        let c = m.captures()[*i];
        if let Some(s) = style(q.capture_names()[c.index as usize]) {
            spans.push((c.node.start_byte(), c.node.end_byte(), m.pattern_index, s));
        }
    }
    spans.sort_by_key(|&(a, b, p, _)| (std::cmp::Reverse(b - a), std::cmp::Reverse(p)));
    let mut paint: Vec<Option<&'static str>> = vec![None; code.len()];
    for (a, b, _, s) in spans {
        paint[a.min(code.len())..b.min(code.len())].fill(Some(s));
    }
    let mut out = String::with_capacity(code.len() * 2);
    let mut current: Option<&str> = None;
    for (i, ch) in code.char_indices() {
        // A line break resets, so every line stands alone when cut or indented.
        let want = if ch == '\n' { None } else { paint[i] };
        if want != current {
            if current.is_some() {
                out.push_str(RESET);
            }
            if let Some(s) = want {
                out.push_str(s);
            }
            current = want;
        }
        out.push(ch);
    }
    if current.is_some() {
        out.push_str(RESET);
    }
    Some(out)
}

/// `code` highlighted by language id (the `language` column), through the built-in language files.
pub fn highlight_language(language: &str, code: &str) -> Option<String> {
    static REGISTRY: OnceLock<Option<Registry>> = OnceLock::new();
    let registry = REGISTRY.get_or_init(|| Registry::load(&[]).ok()).as_ref()?;
    highlight(registry.get(language)?.def.grammar.as_deref()?, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_linked_grammar_has_a_compiling_query() {
        for g in grammars::GRAMMAR_NAMES {
            assert!(query(g).is_some(), "{g}");
        }
    }

    #[test]
    fn paints_keywords_strings_and_comments() {
        let out = highlight("rust", "fn main() {\n    // hi\n    let s = \"x\";\n}\n").unwrap();
        assert!(out.contains("\x1b[35mfn\x1b[0m"), "{out:?}");
        assert!(out.contains("\x1b[32m\"x\"\x1b[0m"), "{out:?}");
        assert!(out.contains("\x1b[2;3m// hi"), "{out:?}");
        let plain = regex::Regex::new("\x1b\\[[0-9;]*m")
            .unwrap()
            .replace_all(&out, "")
            .into_owned();
        assert_eq!(plain, "fn main() {\n    // hi\n    let s = \"x\";\n}\n");
        assert!(highlight("nope", "x").is_none());
    }
}
