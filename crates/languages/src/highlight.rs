//! Syntax highlighting, of result snippets for the terminal ([`highlight`]) and of files for the
//! web pages ([`classes`]): the text is parsed with its language's tree-sitter grammar and painted
//! by the grammar crate's own `highlights.scm` query (TypeScript and C++ inherit the JavaScript and
//! C queries, as editors do). No grammar or a query that does not compile means plain text, never
//! an error.
use rustc_hash::FxHashMap;
use std::sync::{Mutex, OnceLock};
use tree_sitter::{Parser, Query, QueryCursor, StreamingIterator};

use crate::lang::{Registry, grammars};

/// ANSI reset.
const RESET: &str = "\x1b[0m";

/// The classes [`classes`] gives.
const CLASSES: [&str; 7] = [
    "keyword",
    "string",
    "comment",
    "function",
    "type",
    "constant",
    "attribute",
];

/// The class of a capture name (`keyword.function` → its first part, grouped), if it gets one:
/// 1 + its place in [`CLASSES`] (0 is unpainted).
fn class(capture: &str) -> Option<u8> {
    let head = capture.split('.').next().unwrap_or(capture);
    Some(match head {
        "keyword" | "include" | "conditional" | "repeat" | "exception" => 1,
        "string" | "character" | "escape" => 2,
        "comment" => 3,
        "function" | "method" | "constructor" => 4,
        "type" | "tag" => 5,
        "constant" | "number" | "boolean" | "float" => 6,
        "attribute" | "label" | "module" | "namespace" => 7,
        _ => return None,
    })
}

/// The terminal colour of a class.
fn ansi(class: &str) -> &'static str {
    match class {
        "keyword" => "\x1b[35m",
        "string" => "\x1b[32m",
        "comment" => "\x1b[2;3m",
        "function" => "\x1b[34m",
        "type" => "\x1b[33m",
        "constant" => "\x1b[36m",
        _ => "\x1b[31m",
    }
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
        "bash" => tree_sitter_bash::HIGHLIGHT_QUERY.to_string(),
        "c_sharp" => tree_sitter_c_sharp::HIGHLIGHTS_QUERY.to_string(),
        "cmake" => tree_sitter_cmake::HIGHLIGHTS_QUERY.to_string(),
        "css" => tree_sitter_css::HIGHLIGHTS_QUERY.to_string(),
        "dart" => tree_sitter_dart::HIGHLIGHTS_QUERY.to_string(),
        "elixir" => tree_sitter_elixir::HIGHLIGHTS_QUERY.to_string(),
        "elm" => tree_sitter_elm::HIGHLIGHTS_QUERY.to_string(),
        "fsharp" => tree_sitter_fsharp::HIGHLIGHTS_QUERY.to_string(),
        "haskell" => tree_sitter_haskell::HIGHLIGHTS_QUERY.to_string(),
        "html" => tree_sitter_html::HIGHLIGHTS_QUERY.to_string(),
        "ini" => tree_sitter_ini::HIGHLIGHTS_QUERY.to_string(),
        "json" => tree_sitter_json::HIGHLIGHTS_QUERY.to_string(),
        "lua" => tree_sitter_lua::HIGHLIGHTS_QUERY.to_string(),
        "make" => tree_sitter_make::HIGHLIGHTS_QUERY.to_string(),
        "ocaml" => tree_sitter_ocaml::HIGHLIGHTS_QUERY.to_string(),
        "php" => tree_sitter_php::HIGHLIGHTS_QUERY.to_string(),
        "powershell" => tree_sitter_powershell::HIGHLIGHTS_QUERY.to_string(),
        "r" => tree_sitter_r::HIGHLIGHTS_QUERY.to_string(),
        "ruby" => tree_sitter_ruby::HIGHLIGHTS_QUERY.to_string(),
        "scala" => tree_sitter_scala::HIGHLIGHTS_QUERY.to_string(),
        "swift" => tree_sitter_swift::HIGHLIGHTS_QUERY.to_string(),
        "toml" => tree_sitter_toml_ng::HIGHLIGHTS_QUERY.to_string(),
        "xml" => tree_sitter_xml::XML_HIGHLIGHT_QUERY.to_string(),
        "yaml" => tree_sitter_yaml::HIGHLIGHTS_QUERY.to_string(),
        "zig" => tree_sitter_zig::HIGHLIGHTS_QUERY.to_string(),
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

/// The highlighted runs of `code` for the grammar `grammar`: `(start, end, class)` byte ranges,
/// in order, none across a line break, `class` one of keyword, string, comment, function, type,
/// constant, attribute; `None` when it cannot be highlighted.
pub fn classes(grammar: &str, code: &str) -> Option<Vec<(usize, usize, &'static str)>> {
    let q = query(grammar)?;
    let mut parser = Parser::new();
    parser.set_language(&grammars::grammar(grammar)?).ok()?;
    let tree = parser.parse(code, None)?;
    // Each byte gets the class of the innermost capture over it; for one span, the earliest
    // pattern wins (the convention of highlights.scm files).
    let mut spans: Vec<(usize, usize, usize, u8)> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut captures = cursor.captures(q, tree.root_node(), code.as_bytes());
    while let Some((m, i)) = captures.next() {
        let c = m.captures()[*i];
        if let Some(s) = class(q.capture_names()[c.index as usize]) {
            spans.push((c.node.start_byte(), c.node.end_byte(), m.pattern_index, s));
        }
    }
    spans.sort_by_key(|&(a, b, p, _)| (std::cmp::Reverse(b - a), std::cmp::Reverse(p)));
    // A byte per byte of code: its class (see `class`).
    let mut paint: Vec<u8> = vec![0; code.len()];
    for (a, b, _, c) in spans {
        paint[a.min(code.len())..b.min(code.len())].fill(c);
    }
    // A line break ends a run, so every line stands alone when cut or indented.
    for (i, _) in code.match_indices('\n') {
        paint[i] = 0;
    }
    let mut runs: Vec<(usize, usize, &'static str)> = Vec::new();
    let mut at = 0;
    while at < paint.len() {
        let mut end = at + 1;
        while end < paint.len() && paint[end] == paint[at] {
            end += 1;
        }
        if paint[at] > 0 {
            runs.push((at, end, CLASSES[usize::from(paint[at] - 1)]));
        }
        at = end;
    }
    Some(runs)
}

/// `code` with ANSI colours for the grammar `grammar`; `None` when it cannot be highlighted.
pub fn highlight(grammar: &str, code: &str) -> Option<String> {
    let runs = classes(grammar, code)?;
    let mut out = String::with_capacity(code.len() * 2);
    let mut at = 0;
    for (a, b, c) in runs {
        out.push_str(&code[at..a]);
        out.push_str(ansi(c));
        out.push_str(&code[a..b]);
        out.push_str(RESET);
        at = b;
    }
    out.push_str(&code[at..]);
    Some(out)
}

/// The built-in languages, loaded once.
fn registry() -> Option<&'static Registry> {
    static REGISTRY: OnceLock<Option<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::load(&[]).ok()).as_ref()
}

/// [`classes`] for a file, its language detected from its path and first bytes by the built-in
/// languages.
pub fn classes_for_path(rel_path: &str, code: &str) -> Option<Vec<(usize, usize, &'static str)>> {
    let head = &code.as_bytes()[..code.len().min(1024)];
    let lang = registry()?.detect(rel_path, head)?;
    classes(lang.def.grammar.as_deref()?, code)
}

/// `code` highlighted by language id (the `language` column), through the built-in language files.
pub fn highlight_language(language: &str, code: &str) -> Option<String> {
    highlight(registry()?.get(language)?.def.grammar.as_deref()?, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_highlight_query_compiles() {
        for g in grammars::GRAMMAR_NAMES {
            let Some(src) = query_source(g) else { continue };
            let lang = grammars::grammar(g).unwrap();
            if let Err(e) = Query::new(&lang, &src) {
                panic!("{g}: {e}");
            }
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
        let runs = classes_for_path("src/a.rs", "fn a() {}\n// b\n").unwrap();
        assert_eq!(runs[0], (0, 2, "keyword"));
        assert!(runs.contains(&(10, 14, "comment")), "{runs:?}");
        assert!(classes_for_path("notes.unknown-ext", "x").is_none());
    }
}
