//! The grammar table: grammar name (as written in a language file's `grammar = "..."`) to the
//! statically linked tree-sitter grammar. Adding a grammar = one Cargo dependency + one line here.
use tree_sitter::Language;

/// Every linked grammar, by name.
pub(crate) fn grammar(name: &str) -> Option<Language> {
    let f = match name {
        "rust" => tree_sitter_rust::LANGUAGE,
        "python" => tree_sitter_python::LANGUAGE,
        "javascript" => tree_sitter_javascript::LANGUAGE,
        "typescript" => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
        "tsx" => tree_sitter_typescript::LANGUAGE_TSX,
        "go" => tree_sitter_go::LANGUAGE,
        "java" => tree_sitter_java::LANGUAGE,
        "c" => tree_sitter_c::LANGUAGE,
        "cpp" => tree_sitter_cpp::LANGUAGE,
        _ => return None,
    };
    Some(f.into())
}

/// Names of every linked grammar (for `trove languages` and tests).
pub const GRAMMAR_NAMES: &[&str] = &[
    "rust",
    "python",
    "javascript",
    "typescript",
    "tsx",
    "go",
    "java",
    "c",
    "cpp",
];
