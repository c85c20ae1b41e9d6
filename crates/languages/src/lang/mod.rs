//! Languages are data: one `pipelines/languages/<id>.toml` per language, embedded at build time.
//!
//! Input: a repo-relative path and the first bytes of the file. Output: the [`Language`] that
//! chunks it and the file's source type (code | doc | test | config). Invariants: detection is by
//! file name, then extension (case-sensitive first, then lower-cased), then shebang; the registry
//! and every grammar are loaded once per process, never per file.
pub(crate) mod grammars;
pub mod refs;

pub use grammars::GRAMMAR_NAMES;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

use crate::{Error, Result};

include!(concat!(env!("OUT_DIR"), "/languages.rs"));

trove_base::named_set! {
    /// How a file is cut into chunks (a language file's `chunker`; `chunk.chunker` picks `ast`,
    /// the language's own, or `lines` for every file).
    Chunker {
        /// Syntax scopes, by the language's tree-sitter grammar.
        Ast = "ast",
        /// Markdown heading sections.
        Markdown = "markdown",
        /// reStructuredText title sections.
        Rst = "rst",
        /// AsciiDoc title sections.
        Asciidoc = "asciidoc",
        /// Regex block rules (languages without a grammar).
        Rules = "rules",
        /// Paragraphs packed up to the budget (plain text).
        Paragraphs = "paragraphs",
        /// Fixed line windows.
        Lines = "lines",
    }
}

/// A language file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageFile {
    /// Stable id (also the file name).
    pub id: String,
    /// Display name.
    pub name: String,
    /// code | doc | config (test is decided by `test_patterns`).
    pub source_type: String,
    /// Extensions without the dot.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Exact file names (`Makefile`).
    #[serde(default)]
    pub filenames: Vec<String>,
    /// Interpreter names in a `#!` line.
    #[serde(default)]
    pub shebangs: Vec<String>,
    /// Name of a linked tree-sitter grammar.
    #[serde(default)]
    pub grammar: Option<String>,
    /// How its files are cut into chunks.
    pub chunker: Chunker,
    /// Line comment markers.
    #[serde(default)]
    pub line_comments: Vec<String>,
    /// Block comment open/close pairs.
    #[serde(default)]
    pub block_comments: Vec<(String, String)>,
    /// Grammar node kinds that are comments.
    #[serde(default)]
    pub comment_nodes: Vec<String>,
    /// Node kinds (attributes) that precede a definition and belong to it.
    #[serde(default)]
    pub attached_nodes: Vec<String>,
    /// Nodes that wrap one definition and lend it their range (decorators, `export`).
    #[serde(default)]
    pub wrapper_nodes: Vec<String>,
    /// Words that never name a definition: one named so is what a parse error made of a
    /// statement (C#'s `else if (…)` between `#if` lines read as a method `if`).
    #[serde(default)]
    pub not_names: Vec<String>,
    /// Names come from declarators (C, C++): their template arguments and any words a macro
    /// left before the name (`HWY_API RemoveCvRef<T> ScalarShr`) are not part of them.
    #[serde(default)]
    pub declarator_names: bool,
    /// A comment right above a definition is its doc when it starts with one of these.
    #[serde(default)]
    pub doc_comment_prefixes: Vec<String>,
    /// Python-style docstrings (first string statement of a body).
    #[serde(default)]
    pub docstrings: bool,
    /// Path globs that make a file a test.
    #[serde(default)]
    pub test_patterns: Vec<String>,
    /// Which nodes become chunks.
    #[serde(default)]
    pub definitions: Vec<DefinitionRule>,
    /// Grammar node kinds that import a module (`use_declaration`, `import_statement` ...);
    /// `KIND.field`: a KIND that has that field (`export_statement.source`: a re-export,
    /// `export { a } from "./a"`, not `export function f`).
    #[serde(default)]
    pub import_nodes: Vec<String>,
    /// Grammar node kinds that call a function or method (`call_expression` ...).
    #[serde(default)]
    pub call_nodes: Vec<String>,
    /// Where a type names the types it extends: `KIND` (the node holds the base names),
    /// `PARENT>KIND` (only under that parent: Python's `class_definition>argument_list`) or
    /// `KIND.field` (a field of KIND holds them). Each base becomes an `inherits` reference.
    #[serde(default)]
    pub inherit_nodes: Vec<String>,
    /// The same for the interfaces or traits a type implements (`implements` references).
    #[serde(default)]
    pub implement_nodes: Vec<String>,
    /// Node kinds that name a type where it is used (`type_identifier`): `references` to types.
    #[serde(default)]
    pub type_ref_nodes: Vec<String>,
    /// Receivers that stand for the enclosing type in a method call (`self`, `this`): `self.f()`
    /// resolves to the `f` beside the calling method, never to another type's `f`. A call on
    /// any other object (`obj.f()`, `self.db.f()`) is left unresolved: its type is a type
    /// checker's to know (`trove index --scip`).
    #[serde(default)]
    pub self_receivers: Vec<String>,
    /// A method is only called on a receiver (Python, JavaScript, Rust, Go): a bare `f()` never
    /// lands on a method. Languages with an implicit `this` (Java, C#, C++) leave it false.
    #[serde(default)]
    pub methods_need_receiver: bool,
    /// A function's doc comment types its parameters (JSDoc `@param {Help} helper`): a call on
    /// such a parameter lands on that type's member, as with a declared type.
    #[serde(default)]
    pub jsdoc_types: bool,
    /// A method names its receiver in its signature (Go's `func (s *Server) Run()`): a call on
    /// that name inside it is a call on the enclosing type.
    #[serde(default)]
    pub named_receivers: bool,
    /// Method names the language's standard types define (`update`, `append`, `close`): a call
    /// of one on an object (`d.update()`) is as likely the library's as the repository's, so it
    /// never resolves by name.
    #[serde(default)]
    pub common_methods: Vec<String>,
    /// Block rules of the `rules` chunker (languages without a grammar).
    #[serde(default)]
    pub blocks: Vec<BlockRuleDef>,
}

impl LanguageFile {
    /// Whether the file declares any reference rule (imports, calls, base types, type uses).
    pub fn has_references(&self) -> bool {
        !(self.import_nodes.is_empty()
            && self.call_nodes.is_empty()
            && self.inherit_nodes.is_empty()
            && self.implement_nodes.is_empty()
            && self.type_ref_nodes.is_empty())
    }
}

/// A block rule as written: `start`/`end` regexes (a `name` group names the block), and its kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockRuleDef {
    /// Regex of a block's first line; its `name` group is the symbol.
    pub start: String,
    /// Regex of a block's last line; a `name` group must equal the start's. Without it a block
    /// runs to the next block's start.
    #[serde(default)]
    pub end: Option<String>,
    /// LSP-style kind of the block.
    pub kind: String,
}

/// A compiled block rule.
#[derive(Debug)]
pub struct BlockRule {
    /// First line.
    pub start: regex::Regex,
    /// Last line (none: up to the next block).
    pub end: Option<regex::Regex>,
    /// Kind.
    pub kind: String,
}

/// Which grammar nodes are definitions, and of what kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefinitionRule {
    /// Node kinds.
    pub nodes: Vec<String>,
    /// LSP-style kind: function, method, class, struct, enum, interface, trait, impl, module ...
    pub kind: String,
    /// Name paths tried in order (default `name`, then a search for an identifier): `/`-separated
    /// steps, each a field, `field#N` (its Nth child: `value#2`) or `@kind` (first named child of
    /// that kind), e.g. `@type_binding/name`.
    #[serde(default)]
    pub name_fields: Vec<String>,
    /// How the found name node becomes the name: `leaf` (default: down to its identifier),
    /// `whole` (its text: a CSS selector), `qualified` (its text split on `.`/`:` into a path:
    /// Lua `M.load`, Pascal `TAccount.Deposit`), `labels` (the identifiers and strings after it,
    /// unquoted and joined by `.`, else its own text: HCL `resource "aws_s3_bucket" "logs"` is
    /// `aws_s3_bucket.logs`).
    #[serde(default = "leaf")]
    pub name_style: String,
    /// When no name path finds a node: search the definition for its first identifier (`true`,
    /// the default), or (`false`) the node is not a definition — an anonymous C struct, whose
    /// search would find its first field, or a Kotlin companion object without a name.
    #[serde(default = "yes")]
    pub name_search: bool,
    /// The node counts only when it has this field (`struct foo;` is not a definition).
    #[serde(default)]
    pub requires_field: Option<String>,
    /// The node counts only when its value is one of these kinds: its `value` or `rhs` field, else
    /// its declarator's value (`const f = () => ..`, a JSON key holding an object).
    #[serde(default)]
    pub requires_value: Vec<String>,
    /// The node counts only when one of these `PATH=text` holds: a field (Elixir: `target=def`) or
    /// a name path (Common Lisp: `value#1=defstruct`, the form's first element).
    #[serde(default)]
    pub when: Vec<String>,
    /// A field naming the parent type (Go receivers).
    #[serde(default)]
    pub parent_field: Option<String>,
    /// (descendant kind, refined kind): `type X struct` is a struct; `field=text` matches a field's
    /// text instead (`declaration_kind=struct`); a path as in `name_fields` (`@kind` steps match
    /// keywords too) matches when it leads somewhere: Kotlin `@interface`, Pascal `type/@declEnum`
    /// (a direct child, where a descendant could be a nested declaration's).
    #[serde(default)]
    pub refine: Vec<(String, String)>,
}

fn leaf() -> String {
    "leaf".into()
}

fn yes() -> bool {
    true
}

/// Whether every step of a name path (`@kind`, a field, either with a trailing `?`) is a node
/// kind (keywords included) or a field of the grammar.
fn path_known(g: &tree_sitter::Language, path: &str) -> bool {
    path.split('/').all(|step| {
        let step = step.strip_suffix('?').unwrap_or(step);
        let step = step.split_once('#').map_or(step, |(field, _)| field);
        match step.strip_prefix('@') {
            Some(kind) => {
                g.id_for_node_kind(kind, true) != 0 || g.id_for_node_kind(kind, false) != 0
            }
            None => g.field_id_for_name(step).is_some(),
        }
    })
}

/// Whether a `refine` condition is a name path (`@interface`, `type/@declEnum`) rather than a
/// descendant kind or a `field=text`.
pub fn is_path(when: &str) -> bool {
    !when.contains('=') && (when.starts_with('@') || when.contains('/'))
}

/// A loaded language: the file plus compiled lookups.
#[derive(Debug)]
pub struct Language {
    /// The language file.
    pub def: LanguageFile,
    /// The linked grammar, when the file names one.
    pub grammar: Option<tree_sitter::Language>,
    rules: rustc_hash::FxHashMap<String, usize>,
    /// What the file says about each of the grammar's node kinds, by kind id (empty without a
    /// grammar): the chunker and the reference walk test ids, not names.
    kinds: Vec<KindInfo>,
    /// The grammar's ids of the fields the chunker and the reference walk look up per node.
    pub(crate) fields: Fields,
    /// Every field of the grammar by name (tree-sitter finds a name by comparing it with each).
    field_ids: rustc_hash::FxHashMap<String, std::num::NonZeroU16>,
    blocks: Vec<BlockRule>,
    tests: GlobSet,
}

/// What a language file says about one node kind: its definition rule and flags.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KindInfo {
    /// Index of the definition rule for the kind.
    pub rule: Option<usize>,
    flags: u16,
}

impl KindInfo {
    const WRAPPER: u16 = 1;
    const COMMENT: u16 = 2;
    const ATTACHED: u16 = 4;
    const IMPORT: u16 = 8;
    const CALL: u16 = 16;
    const TYPE_REF: u16 = 32;
    /// The kind is the `KIND` of an `inherit_nodes`/`implement_nodes` spec.
    const HERITAGE: u16 = 64;
    /// The kind may bind parameters (a function, method, lambda, closure...: its name says so);
    /// the reference walk looks for its `parameters` field.
    const BINDS: u16 = 128;
    /// The kind binds local names (an assignment, a loop's variable, a `let`): the reference
    /// walk reads them from its `left`, `name` or `pattern` field.
    const LOCAL: u16 = 256;
    /// A comprehension or generator expression: binds its loop variables for its whole text.
    const COMPREHENSION: u16 = 512;

    fn of(name: &str, def: &LanguageFile, rules: &rustc_hash::FxHashMap<String, usize>) -> Self {
        let has = |v: &[String]| v.iter().any(|k| k == name);
        let heritage = def
            .inherit_nodes
            .iter()
            .chain(&def.implement_nodes)
            .any(|spec| {
                let kinds = spec.split_once('.').map_or(spec.as_str(), |(k, _)| k);
                kinds.split_once('>').map_or(kinds, |(_, k)| k) == name
            });
        let flags = [
            (has(&def.wrapper_nodes), Self::WRAPPER),
            (has(&def.comment_nodes), Self::COMMENT),
            (has(&def.attached_nodes), Self::ATTACHED),
            (
                def.import_nodes
                    .iter()
                    .any(|k| k.split_once('.').map_or(k.as_str(), |(k, _)| k) == name),
                Self::IMPORT,
            ),
            (has(&def.call_nodes), Self::CALL),
            (has(&def.type_ref_nodes), Self::TYPE_REF),
            (heritage, Self::HERITAGE),
            (
                [
                    "function",
                    "method",
                    "lambda",
                    "closure",
                    "constructor",
                    "arrow",
                    "func_literal",
                ]
                .iter()
                .any(|w| name.contains(w)),
                Self::BINDS,
            ),
            (refs::LOCAL_BINDINGS.contains(&name), Self::LOCAL),
            (
                name.ends_with("comprehension") || name == "generator_expression",
                Self::COMPREHENSION,
            ),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |acc, (_, f)| acc | f);
        KindInfo {
            rule: rules.get(name).copied(),
            flags,
        }
    }

    pub fn is_wrapper(self) -> bool {
        self.flags & Self::WRAPPER != 0
    }
    pub fn is_comment(self) -> bool {
        self.flags & Self::COMMENT != 0
    }
    pub fn is_attached(self) -> bool {
        self.flags & Self::ATTACHED != 0
    }
    pub fn is_import(self) -> bool {
        self.flags & Self::IMPORT != 0
    }
    pub fn is_call(self) -> bool {
        self.flags & Self::CALL != 0
    }
    pub fn is_type_ref(self) -> bool {
        self.flags & Self::TYPE_REF != 0
    }
    pub fn is_heritage(self) -> bool {
        self.flags & Self::HERITAGE != 0
    }
    pub fn binds(self) -> bool {
        self.flags & Self::BINDS != 0
    }
    pub fn binds_locals(self) -> bool {
        self.flags & Self::LOCAL != 0
    }
    pub fn is_comprehension(self) -> bool {
        self.flags & Self::COMPREHENSION != 0
    }
}

/// Field ids looked up per node (`None`: the grammar has no such field, so no node has it).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fields {
    pub name: Option<std::num::NonZeroU16>,
    pub value: Option<std::num::NonZeroU16>,
    pub rhs: Option<std::num::NonZeroU16>,
    /// `refs::CALLEE_FIELDS`, in order.
    pub callee: [Option<std::num::NonZeroU16>; 7],
    /// `refs::RECEIVER_FIELDS`, in order.
    pub receiver: [Option<std::num::NonZeroU16>; 3],
    /// A function's parameter list: `parameters`, else `parameter` (JavaScript's `x => ..`).
    pub parameters: [Option<std::num::NonZeroU16>; 2],
    /// Where a local binding's names are: `left`, `name`, `pattern`.
    pub bound: [Option<std::num::NonZeroU16>; 3],
    /// What a binding or loop takes its value from: `right` (`value` is [`Fields::value`]).
    pub right: Option<std::num::NonZeroU16>,
}

impl Fields {
    fn of(g: &tree_sitter::Language) -> Self {
        Fields {
            name: g.field_id_for_name("name"),
            value: g.field_id_for_name("value"),
            rhs: g.field_id_for_name("rhs"),
            callee: refs::CALLEE_FIELDS.map(|f| g.field_id_for_name(f)),
            receiver: refs::RECEIVER_FIELDS.map(|f| g.field_id_for_name(f)),
            parameters: ["parameters", "parameter"].map(|f| g.field_id_for_name(f)),
            bound: ["left", "name", "pattern"].map(|f| g.field_id_for_name(f)),
            right: g.field_id_for_name("right"),
        }
    }
}

/// `node`'s child in the field `id` (what `child_by_field_name` finds, without the name lookup).
pub(crate) fn child_by_field<'t>(
    node: tree_sitter::Node<'t>,
    id: Option<std::num::NonZeroU16>,
) -> Option<tree_sitter::Node<'t>> {
    id.and_then(|f| node.child_by_field_id(f.get()))
}

impl Language {
    fn load(def: LanguageFile) -> Result<Self> {
        let bad = |msg: String| Error::Definition {
            language: def.id.clone(),
            msg,
        };
        if !matches!(def.source_type.as_str(), "code" | "doc" | "config") {
            return Err(bad(format!(
                "source_type {:?} is not code|doc|config",
                def.source_type
            )));
        }
        let grammar = match &def.grammar {
            Some(g) => Some(
                grammars::grammar(g).ok_or_else(|| bad(format!("grammar {g:?} is not linked")))?,
            ),
            None => None,
        };
        if def.chunker == Chunker::Ast && grammar.is_none() {
            return Err(bad("chunker \"ast\" needs a grammar".into()));
        }
        let rules = Self::definition_rules(&def, grammar.as_ref())?;
        Self::check_reference_nodes(&def, grammar.as_ref())?;
        let mut tb = GlobSetBuilder::new();
        for p in &def.test_patterns {
            tb.add(Glob::new(p).map_err(|e| bad(format!("test pattern {p:?}: {e}")))?);
        }
        let tests = tb.build().map_err(|e| bad(e.to_string()))?;
        let mut blocks = Vec::new();
        for r in &def.blocks {
            let re =
                |p: &str| regex::Regex::new(p).map_err(|e| bad(format!("block regex {p:?}: {e}")));
            blocks.push(BlockRule {
                start: re(&r.start)?,
                end: r.end.as_deref().map(re).transpose()?,
                kind: r.kind.clone(),
            });
        }
        if def.chunker == Chunker::Rules && blocks.is_empty() {
            return Err(bad("chunker \"rules\" needs [[blocks]]".into()));
        }
        let kinds = grammar.as_ref().map_or_else(Vec::new, |g| {
            (0..g.node_kind_count())
                .map(|id| {
                    g.node_kind_for_id(id as u16)
                        .map_or_else(KindInfo::default, |name| KindInfo::of(name, &def, &rules))
                })
                .collect()
        });
        let fields = grammar.as_ref().map(Fields::of).unwrap_or_default();
        let field_ids = grammar.as_ref().map_or_else(Default::default, |g| {
            (1..=g.field_count() as u16)
                .filter_map(|id| {
                    Some((
                        g.field_name_for_id(id)?.to_string(),
                        std::num::NonZeroU16::new(id)?,
                    ))
                })
                .collect()
        });
        Ok(Language {
            def,
            grammar,
            rules,
            kinds,
            fields,
            field_ids,
            blocks,
            tests,
        })
    }

    /// The definition rules by node kind, each rule's node kinds, `name_style`, name paths and
    /// `refine`/`when` conditions checked against the grammar.
    fn definition_rules(
        def: &LanguageFile,
        grammar: Option<&tree_sitter::Language>,
    ) -> Result<rustc_hash::FxHashMap<String, usize>> {
        let bad = |msg: String| Error::Definition {
            language: def.id.clone(),
            msg,
        };
        let mut rules = rustc_hash::FxHashMap::default();
        for (i, r) in def.definitions.iter().enumerate() {
            for n in &r.nodes {
                if let Some(g) = grammar
                    && g.id_for_node_kind(n, true) == 0
                {
                    return Err(bad(format!(
                        "node kind {n:?} is not in grammar {:?}",
                        def.grammar
                    )));
                }
                rules.insert(n.clone(), i);
            }
            if !["leaf", "whole", "qualified", "labels"].contains(&r.name_style.as_str()) {
                return Err(bad(format!(
                    "name_style {:?}: use leaf, whole, qualified or labels",
                    r.name_style
                )));
            }
            if let Some(g) = grammar {
                let refine_paths = r.refine.iter().map(|(w, _)| w).filter(|w| is_path(w));
                for path in r.name_fields.iter().chain(refine_paths) {
                    if !path_known(g, path) {
                        return Err(bad(format!(
                            "name path {path:?} has a step that is no node kind or field of grammar {:?}",
                            def.grammar
                        )));
                    }
                }
                let plain = r.refine.iter().map(|(w, _)| w).filter(|w| !is_path(w));
                for when in plain.chain(&r.when) {
                    let known = match when.split_once('=') {
                        Some((at, _)) => path_known(g, at),
                        None => g.id_for_node_kind(when, true) != 0,
                    };
                    if !known {
                        return Err(bad(format!(
                            "refine/when {when:?} names no node kind or field of grammar {:?}",
                            def.grammar
                        )));
                    }
                }
            }
        }
        Ok(rules)
    }

    /// Checks the reference rules' node kinds and fields (`import_nodes`, `call_nodes`,
    /// `type_ref_nodes`, `inherit_nodes`, `implement_nodes`) against the grammar; without one,
    /// a language may have none.
    fn check_reference_nodes(
        def: &LanguageFile,
        grammar: Option<&tree_sitter::Language>,
    ) -> Result<()> {
        let bad = |msg: String| Error::Definition {
            language: def.id.clone(),
            msg,
        };
        if let Some(g) = grammar {
            for spec in def
                .import_nodes
                .iter()
                .chain(&def.call_nodes)
                .chain(&def.type_ref_nodes)
            {
                let (n, field) = match spec.split_once('.') {
                    Some((k, f)) => (k, Some(f)),
                    None => (spec.as_str(), None),
                };
                if let Some(f) = field
                    && g.field_id_for_name(f).is_none()
                {
                    return Err(bad(format!(
                        "import node field {f:?} is not in grammar {:?}",
                        def.grammar
                    )));
                }
                if g.id_for_node_kind(n, true) == 0 {
                    return Err(bad(format!(
                        "import/call node kind {n:?} is not in grammar {:?}",
                        def.grammar
                    )));
                }
            }
            for spec in def.inherit_nodes.iter().chain(&def.implement_nodes) {
                let (kinds, field) = match spec.split_once('.') {
                    Some((k, f)) => (k, Some(f)),
                    None => (spec.as_str(), None),
                };
                for k in kinds.split('>') {
                    if g.id_for_node_kind(k, true) == 0 {
                        return Err(bad(format!(
                            "inherit/implement node kind {k:?} (in {spec:?}) is not in grammar {:?}",
                            def.grammar
                        )));
                    }
                }
                if let Some(f) = field
                    && g.field_id_for_name(f).is_none()
                {
                    return Err(bad(format!(
                        "inherit/implement field {f:?} (in {spec:?}) is not in grammar {:?}",
                        def.grammar
                    )));
                }
            }
        } else if def.has_references() {
            return Err(bad("import_nodes/call_nodes need a grammar".into()));
        }
        Ok(())
    }

    /// The compiled block rules (`rules` chunker).
    pub fn block_rules(&self) -> &[BlockRule] {
        &self.blocks
    }

    /// The definition rule for a node kind, if the node kind is a definition.
    pub fn rule_for(&self, node_kind: &str) -> Option<&DefinitionRule> {
        self.rules.get(node_kind).map(|&i| &self.def.definitions[i])
    }

    /// What the language file says about `node`'s kind (by its id; a kind past the table, such
    /// as `ERROR`, by its name).
    pub(crate) fn kind_info(&self, node: tree_sitter::Node<'_>) -> KindInfo {
        match self.kinds.get(node.kind_id() as usize) {
            Some(k) => *k,
            None => KindInfo::of(node.kind(), &self.def, &self.rules),
        }
    }

    /// `node.child_by_field_name(name)`, the name looked up in a hash map.
    pub(crate) fn child_by_field_name<'t>(
        &self,
        node: tree_sitter::Node<'t>,
        name: &str,
    ) -> Option<tree_sitter::Node<'t>> {
        child_by_field(node, self.field_ids.get(name).copied())
    }

    /// The definition rule at `i` (a [`KindInfo::rule`]).
    pub(crate) fn rule(&self, i: usize) -> &DefinitionRule {
        &self.def.definitions[i]
    }

    /// Whether a node kind is a comment.
    pub fn is_comment(&self, node_kind: &str) -> bool {
        self.def.comment_nodes.iter().any(|c| c == node_kind)
    }

    /// Whether a node kind is an attribute that sticks to the next definition.
    pub fn is_attached(&self, node_kind: &str) -> bool {
        self.def.attached_nodes.iter().any(|c| c == node_kind)
    }

    /// Whether a node kind wraps a definition.
    pub fn is_wrapper(&self, node_kind: &str) -> bool {
        self.def.wrapper_nodes.iter().any(|c| c == node_kind)
    }

    /// code | doc | config | test for a file of this language at `rel_path`.
    pub fn source_type(&self, rel_path: &str) -> &'static str {
        if self.def.source_type == "code" && self.tests.is_match(rel_path) {
            return "test";
        }
        match self.def.source_type.as_str() {
            "doc" => "doc",
            "config" => "config",
            _ => "code",
        }
    }
}

/// Every known language, with lookup tables.
#[derive(Debug)]
pub struct Registry {
    langs: Vec<Language>,
    by_ext: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
    by_shebang: HashMap<String, usize>,
    fingerprint: String,
}

impl Registry {
    /// The built-in languages, then the `*.toml` files of `extra_dirs` in order (a file with the id of
    /// an earlier language replaces it).
    pub fn load(extra_dirs: &[&Path]) -> Result<Self> {
        let mut files: Vec<(String, String)> = BUILTIN_LANGUAGES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        for dir in extra_dirs {
            let mut names = Vec::new();
            let rd = std::fs::read_dir(dir).map_err(|e| Error::io(*dir, e))?;
            for e in rd {
                let p = e.map_err(|e| Error::io(*dir, e))?.path();
                if p.extension().is_some_and(|x| x == "toml") {
                    names.push(p);
                }
            }
            names.sort();
            for p in names {
                let t = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
                files.push((p.display().to_string(), t));
            }
        }
        // What the loaded definitions say, not where they came from: a bundle built with other
        // language files cannot reuse this one's rows.
        let mut h = Vec::new();
        for (_, text) in &files {
            h.extend_from_slice(text.as_bytes());
            h.push(0);
        }
        let fingerprint = trove_base::util::sha256_hex(&h);
        let mut langs: Vec<Language> = Vec::new();
        for (name, text) in files {
            let def: LanguageFile =
                toml::from_str(&text).map_err(|e| Error::config(format!("{name}: {e}")))?;
            let lang = Language::load(def)?;
            match langs.iter().position(|l| l.def.id == lang.def.id) {
                Some(i) => langs[i] = lang,
                None => langs.push(lang),
            }
        }
        let mut reg = Registry {
            langs,
            by_ext: HashMap::new(),
            by_name: HashMap::new(),
            by_shebang: HashMap::new(),
            fingerprint,
        };
        for (i, l) in reg.langs.iter().enumerate() {
            for e in &l.def.extensions {
                reg.by_ext.insert(e.clone(), i);
            }
            for n in &l.def.filenames {
                reg.by_name.insert(n.clone(), i);
            }
            for s in &l.def.shebangs {
                reg.by_shebang.insert(s.clone(), i);
            }
        }
        Ok(reg)
    }

    /// sha256 over every loaded language file's text, in load order: equal fingerprints detect and
    /// chunk alike.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Every language, in load order.
    pub fn languages(&self) -> &[Language] {
        &self.langs
    }

    /// The language with this id.
    pub fn get(&self, id: &str) -> Option<&Language> {
        self.langs.iter().find(|l| l.def.id == id)
    }

    /// Detects the language of `rel_path` whose content starts with `head`.
    pub fn detect(&self, rel_path: &str, head: &[u8]) -> Option<&Language> {
        self.detect_why(rel_path, head).map(|(l, _)| l)
    }

    /// [`Registry::detect`], with how the language was chosen (`file name Makefile`,
    /// `extension .rs`, `.h with C++ syntax`, `#! python3`), for `trove chunks --explain`.
    pub fn detect_why(&self, rel_path: &str, head: &[u8]) -> Option<(&Language, String)> {
        let file_name = rel_path.rsplit('/').next().unwrap_or(rel_path);
        if let Some(&i) = self.by_name.get(file_name) {
            return Some((&self.langs[i], format!("file name {file_name}")));
        }
        if let Some((_, ext)) = file_name.rsplit_once('.')
            && let Some(&i) = self
                .by_ext
                .get(ext)
                .or_else(|| self.by_ext.get(&ext.to_ascii_lowercase()))
        {
            let lang = &self.langs[i];
            // `.h` is C unless the header uses C++-only syntax.
            if lang.def.id == "c"
                && ext == "h"
                && looks_like_cpp(head)
                && let Some(cpp) = self.get("cpp")
            {
                return Some((cpp, ".h with C++ syntax".into()));
            }
            return Some((lang, format!("extension .{ext}")));
        }
        let prog = shebang_interpreter(head)?;
        let &i = self.by_shebang.get(prog)?;
        Some((&self.langs[i], format!("#! {prog}")))
    }
}

/// The source text of a syntax node (empty if its range is not in `text`).
pub(crate) fn node_text<'t>(text: &'t str, n: tree_sitter::Node<'_>) -> &'t str {
    text.get(n.start_byte()..n.end_byte()).unwrap_or("")
}

/// The interpreter named by a `#!` line: `#!/usr/bin/env python3` → `python3`.
fn shebang_interpreter(head: &[u8]) -> Option<&str> {
    let rest = head.strip_prefix(b"#!")?;
    let line = rest.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let prog = first.rsplit('/').next()?;
    let prog = if prog == "env" {
        words.find(|w| !w.starts_with('-'))?
    } else {
        prog
    };
    Some(prog)
}

/// C++-only constructs in the first bytes of a header.
fn looks_like_cpp(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&head[..head.len().min(16 * 1024)]);
    if text.contains("#include <iostream>") {
        return true;
    }
    // Only code counts: C headers say `class` in comments and `#define x constexpr` behind
    // `__cplusplus` guards.
    let mut in_comment = false;
    text.lines().any(|line| {
        let mut l = line.trim_start();
        if in_comment {
            match l.find("*/") {
                Some(i) => {
                    in_comment = false;
                    l = &l[i + 2..];
                }
                None => return false,
            }
        }
        // Drop `/* .. */` spans on the line; an unclosed one runs on to later lines.
        let mut code = String::new();
        while let Some(i) = l.find("/*") {
            code.push_str(&l[..i]);
            match l[i + 2..].find("*/") {
                Some(j) => l = &l[i + 2 + j + 2..],
                None => {
                    in_comment = true;
                    l = "";
                }
            }
        }
        code.push_str(l);
        let code = code.split("//").next().unwrap_or("");
        if code.trim_start().starts_with('#') {
            return false;
        }
        [
            "namespace ",
            "class ",
            "template<",
            "template <",
            "std::",
            "public:",
            "private:",
            "constexpr ",
        ]
        .iter()
        .any(|m| code.contains(m))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_headers_by_code_not_comments() {
        let c = b"/* a character class */\n#ifdef __cplusplus\n#define k constexpr\n#endif\n/* constexpr and weak */ int f(void);\n// class of errors\nint g(void);\n";
        assert!(!looks_like_cpp(c));
        assert!(looks_like_cpp(b"/* x */\nnamespace a { int f(); }\n"));
        assert!(looks_like_cpp(b"class A { public: int x; };\n"));
        assert!(looks_like_cpp(
            b"/* open\n still a comment */ template <typename T> T id(T);\n"
        ));
    }

    #[test]
    fn every_builtin_language_loads() {
        let r = Registry::load(&[]).unwrap();
        assert!(r.languages().len() >= 10);
        for g in GRAMMAR_NAMES {
            assert!(
                r.languages()
                    .iter()
                    .any(|l| l.def.grammar.as_deref() == Some(*g)),
                "grammar {g} unused"
            );
        }
    }

    /// A name path (in `name_fields` or `refine`) with a step the grammar does not have is refused
    /// when languages load, instead of silently falling back to the search for an identifier.
    #[test]
    fn name_paths_are_checked_against_the_grammar() {
        let ini = include_str!("../../../../pipelines/languages/ini.toml");
        for (good, bad) in [
            ("@section_name/@text", "@section_nme/@text"),
            ("@section_name/@text", "@section_name?/@txt"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let text = ini
                .replace("id = \"ini\"", "id = \"ini2\"")
                .replace(good, bad);
            assert!(text.contains(bad));
            std::fs::write(dir.path().join("ini2.toml"), text).unwrap();
            let err = Registry::load(&[dir.path()]).unwrap_err().to_string();
            assert!(err.contains("name path") && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn detects_by_extension_name_and_shebang() {
        let r = Registry::load(&[]).unwrap();
        assert_eq!(r.detect("src/a.rs", b"").unwrap().def.id, "rust");
        assert_eq!(r.detect("Makefile", b"").unwrap().def.id, "make");
        assert_eq!(
            r.detect("bin/tool", b"#!/usr/bin/env python3\n")
                .unwrap()
                .def
                .id,
            "python"
        );
        assert_eq!(
            r.detect("x.h", b"namespace a { class B {}; }")
                .unwrap()
                .def
                .id,
            "cpp"
        );
        assert_eq!(r.detect("x.h", b"int f(void);").unwrap().def.id, "c");
        assert!(r.detect("x.unknownext", b"").is_none());
        // And why, as `trove chunks --explain` says it.
        let why = |p: &str, head: &[u8]| r.detect_why(p, head).map(|(l, w)| (l.def.id.clone(), w));
        assert_eq!(
            why("Makefile", b""),
            Some(("make".into(), "file name Makefile".into()))
        );
        assert_eq!(
            why("a/b.rs", b""),
            Some(("rust".into(), "extension .rs".into()))
        );
        assert_eq!(
            why("x.h", b"namespace a {}"),
            Some(("cpp".into(), ".h with C++ syntax".into()))
        );
        assert_eq!(
            why("tool", b"#!/usr/bin/env python3\n"),
            Some(("python".into(), "#! python3".into()))
        );
    }

    #[test]
    fn test_patterns_make_tests() {
        let r = Registry::load(&[]).unwrap();
        let go = r.get("go").unwrap();
        assert_eq!(go.source_type("pkg/a_test.go"), "test");
        assert_eq!(go.source_type("pkg/a.go"), "code");
    }
}
