//! Scope chunking over a tree-sitter syntax tree.
//!
//! 1. Parse with a time bound (the caller falls back to line windows past it).
//! 2. Collect definitions (the language file's `definitions`) into a tree, iteratively — no
//!    recursion, so a 100 000-deep expression cannot overflow the stack.
//! 3. Emit: each definition within budget is one chunk; a larger one with members becomes a header
//!    chunk plus its members; a larger leaf is split on lines; code between definitions becomes
//!    `block` chunks.
use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, Parser, Tree};

use super::{Builder, Meta, nonws_chars};
use crate::lang::{DefinitionRule, KindInfo, Language, child_by_field, node_text};

/// Kinds whose nested functions are methods.
const TYPE_KINDS: &[&str] = &[
    "class",
    "struct",
    "impl",
    "trait",
    "interface",
    "enum",
    "object",
];
/// Longest signature kept, in bytes: a header, not a body.
const MAX_SIGNATURE_BYTES: usize = 300;
/// How deep the name search looks under a definition node.
const NAME_SEARCH_DEPTH: usize = 4;

thread_local! {
    /// One parser per worker thread, reused across files (creating one per file costs allocations).
    static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
}

/// A definition found in the tree.
struct Def {
    kind: String,
    name: String,
    /// Names of enclosing definitions (and qualifiers such as `Foo::` or a Go receiver).
    path: Vec<String>,
    /// Start including attached doc comments and attributes.
    range_start: usize,
    end: usize,
    signature: Option<String>,
    docs: Option<String>,
    children: Vec<usize>,
    /// Start of the definition node itself (without attached comments).
    node_start: usize,
    /// Start of its name.
    name_start: usize,
    exported: Option<bool>,
}

/// Parse work allowed for any file, in tree-sitter's progress calls (100 operations each).
const PARSE_CALLS_BASE: u64 = 20_000;
/// Further parse work allowed per byte: a call per 4 bytes, ten times the most any file of our
/// eval corpora needed (0.026 a byte; 0.006 on average, ≈16 µs a call).
const PARSE_BYTES_PER_CALL: u64 = 4;
/// The deepest syntax tree chunked by scope (nodes from the root): real code stays far below
/// (generated else-if chains of a few hundred branches included); the walks over the tree
/// recurse, and worker threads have a bounded stack.
pub const MAX_TREE_DEPTH: usize = 1500;

/// Whether a path from `root` down is longer than `limit` nodes (a cursor walk: no recursion).
fn deeper_than(root: Node<'_>, limit: usize) -> bool {
    let mut c = root.walk();
    let mut depth = 0usize;
    loop {
        if c.goto_first_child() {
            depth += 1;
            if depth > limit {
                return true;
            }
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                break;
            }
            if !c.goto_parent() {
                return false;
            }
            depth -= 1;
        }
    }
}

/// Parses `text` within the work bound (deterministic) and the configured time (a safety net);
/// `None` when either is hit, the tree is too deep to chunk, or the grammar fails.
pub(super) fn parse(text: &str, lang: &Language, timeout: Duration) -> Option<Tree> {
    let grammar = lang.grammar.as_ref()?;
    PARSER.with(|p| {
        let mut parser = p.borrow_mut();
        parser.set_language(grammar).ok()?;
        let started = Instant::now();
        // Tree-sitter calls back every 100 parse operations: a count of them bounds the work the
        // same way on any machine and any load (a clock alone made the output depend on both).
        let budget = PARSE_CALLS_BASE + text.len() as u64 / PARSE_BYTES_PER_CALL;
        let mut calls = 0u64;
        let mut cancel = |_: &tree_sitter::ParseState| {
            calls += 1;
            if calls > budget || started.elapsed() > timeout {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let bytes = text.as_bytes();
        let mut read = |i: usize, _| {
            if i < bytes.len() {
                &bytes[i..]
            } else {
                &[][..]
            }
        };
        let tree = parser.parse_with_options(
            &mut read,
            None,
            Some(ParseOptions::new().progress_callback(&mut cancel)),
        );
        parser.reset();
        // A tree deeper than the chunker's walks can take (5,000 nested functions overflowed a
        // worker's stack and ended the run) is a parse that failed: the file gets line windows.
        tree.filter(|t| !deeper_than(t.root_node(), MAX_TREE_DEPTH))
    })
}

/// Chunks `b.text` by scope. Returns false when the file could not be parsed in time.
pub(super) fn chunk(b: &mut Builder<'_>, lang: &Language) -> bool {
    let timeout = Duration::from_millis(b.cfg.parse_timeout_ms.max(1));
    let started = std::time::Instant::now();
    let tree = parse(b.text, lang, timeout);
    b.parse_time += started.elapsed();
    let Some(tree) = tree else {
        return false;
    };
    let started = std::time::Instant::now();
    let (defs, top, refs) = collect(b.text, lang, tree.root_node());
    b.extract_time += started.elapsed();
    emit_region(b, &defs, &top, 0, b.text.len(), &[]);
    b.symbols = symbols(b, defs, &lang.def.id);
    b.refs = refs;
    true
}

/// The definitions as symbols, in source order, each naming its parent's index.
fn symbols(b: &Builder<'_>, defs: Vec<Def>, lang: &str) -> Vec<super::Symbol> {
    let mut parent = vec![None; defs.len()];
    for (i, d) in defs.iter().enumerate() {
        for &c in &d.children {
            parent[c] = Some(i);
        }
    }
    // JavaScript/TypeScript members carry no `export` of their own: they are as visible as their
    // class, unless private (`#x`, `private x`). Parents come before children, so one pass does.
    let mut exported: Vec<Option<bool>> = defs.iter().map(|d| d.exported).collect();
    if matches!(lang, "javascript" | "typescript" | "tsx") {
        for (i, d) in defs.iter().enumerate() {
            if let Some(p) = parent[i]
                && TYPE_KINDS.contains(&defs[p].kind.as_str())
            {
                let private = d.name.starts_with('#')
                    || d.signature
                        .as_deref()
                        .is_some_and(|s| s.starts_with("private ") || s.starts_with("protected "));
                exported[i] = exported[p].map(|e| e && !private);
            }
        }
    }
    defs.into_iter()
        .enumerate()
        .map(|(i, d)| {
            let mut path = d.path;
            path.push(d.name);
            let symbol_path = path.join(" > ");
            let name = path.pop().unwrap_or_default();
            let end = d.end.max(d.node_start);
            super::Symbol {
                kind: d.kind,
                name,
                symbol_path,
                start_byte: d.node_start,
                end_byte: end,
                start_line: b.idx.pos(d.node_start).0,
                end_line: b.idx.pos(end.saturating_sub(1).max(d.node_start)).0,
                name_line: b.idx.pos(d.name_start).0,
                signature: d.signature,
                docs: d.docs,
                parent: parent[i],
                exported: exported[i],
            }
        })
        .collect()
}

/// What the language says about a definition's visibility: `header` is the text from the
/// definition's outer node to its name.
fn exported(lang: &str, header: &str, name: &str) -> Option<bool> {
    let words = || header.split(|c: char| !c.is_alphanumeric() && c != '_');
    let has = |w: &str| words().any(|x| x == w);
    match lang {
        "go" => name.chars().next().map(char::is_uppercase),
        "python" => Some(!name.starts_with('_')),
        "rust" => Some(has("pub")),
        "javascript" | "typescript" | "tsx" => Some(has("export")),
        "java" | "csharp" | "php" => Some(has("public")),
        "kotlin" | "scala" | "swift" | "dart" => {
            let hidden =
                has("private") || has("fileprivate") || has("protected") || has("internal");
            let dart_private = lang == "dart" && name.starts_with('_');
            Some(!hidden && !dart_private)
        }
        _ => None,
    }
}

/// How the definition walk sees the children of a node.
#[derive(Clone, Copy)]
enum DefMode {
    /// Each is tested; the definitions found are children of this one (or top-level).
    Test(Option<usize>),
    /// None is visited (a wrapper's children besides its definition).
    Skip,
    /// Only the child with this node id is visited: it is definition `.1` (a wrapper's own), so
    /// it is not tested again and its children are that definition's.
    Inner(usize, usize),
}

/// What the walk carries from a node to its children.
#[derive(Clone, Copy)]
struct Frame<'t> {
    /// The node itself: its children's parent.
    node: Option<Node<'t>>,
    defs: DefMode,
    /// Whether the reference walk visits them (not under an import), and whether they are in a
    /// base-type list.
    refs: Option<bool>,
    /// Where the children's named siblings start in the walk's sibling list.
    siblings: usize,
    /// Children after the cursor's (the last needs no failed `goto_next_sibling`).
    left: u32,
}

/// One walk over the tree, without recursion (one cursor, pre-order over named nodes): every
/// definition, the top-level ones, and the file's references (`lang::refs`).
fn collect(
    text: &str,
    lang: &Language,
    root: Node<'_>,
) -> (Vec<Def>, Vec<usize>, Vec<crate::lang::refs::Reference>) {
    let mut defs: Vec<Def> = Vec::new();
    let mut top: Vec<usize> = Vec::new();
    let mut refs = crate::lang::refs::RefWalk::new(lang, text);
    let root_frame = Frame {
        node: None,
        defs: DefMode::Test(None),
        refs: lang.def.has_references().then_some(false),
        siblings: 0,
        left: 0,
    };
    // frames[i]: the frame of the cursor's node's ancestor at depth i; empty at the root.
    let mut frames: Vec<Frame<'_>> = Vec::new();
    // The named nodes visited so far at each open level, in order: a node's earlier named
    // siblings are the end of its level's run (what `prev_named_sibling` finds one by one, and
    // tree-sitter finds that by walking down from the root).
    let mut siblings: Vec<Node<'_>> = Vec::new();
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if frames.is_empty() || node.is_named() {
            let up = *frames.last().unwrap_or(&root_frame);
            let info = lang.kind_info(node);
            let mode = match up.defs {
                DefMode::Inner(id, i) if id == node.id() => DefMode::Test(Some(i)),
                DefMode::Inner(..) | DefMode::Skip => DefMode::Skip,
                DefMode::Test(parent) => {
                    let before = &siblings[up.siblings..];
                    definition(text, lang, node, before, info, parent, &mut defs, &mut top)
                }
            };
            let child_refs = up.refs.and_then(|h| refs.visit(node, info, up.node, h));
            siblings.push(node);
            let descend = child_refs.is_some() || !matches!(mode, DefMode::Skip);
            // A leaf has no children to go to (`child_count` is a field read).
            let children = if descend { node.child_count() } else { 0 };
            if children > 0 && cursor.goto_first_child() {
                frames.push(Frame {
                    node: Some(node),
                    defs: mode,
                    refs: child_refs,
                    siblings: siblings.len(),
                    left: children - 1,
                });
                continue;
            }
        }
        // Next sibling, else up until one has a next sibling.
        loop {
            let Some(f) = frames.last_mut() else {
                return (defs, top, refs.finish());
            };
            if f.left > 0 && cursor.goto_next_sibling() {
                f.left -= 1;
                break;
            }
            cursor.goto_parent();
            if let Some(f) = frames.pop() {
                siblings.truncate(f.siblings);
            }
        }
    }
}

/// Tests `node` (whose kind is `info`, after the named siblings `before`) as a definition under
/// `parent`, records it, and returns how the definition walk sees its children.
#[allow(clippy::too_many_arguments)]
fn definition<'t>(
    text: &str,
    lang: &Language,
    node: Node<'t>,
    before: &[Node<'t>],
    info: KindInfo,
    parent: Option<usize>,
    defs: &mut Vec<Def>,
    top: &mut Vec<usize>,
) -> DefMode {
    let inner = if info.is_wrapper() {
        // A wrapper of one definition lends it its range; of several (Go's `type ( A int; B
        // struct{} )`), none: each is a definition of its own.
        let mut c = node.walk();
        let mut found = node
            .named_children(&mut c)
            .filter_map(|n| qualifies(lang, n, lang.kind_info(n), text).map(|name| (n, name)));
        match (found.next(), found.next()) {
            (Some(one), None) => Some(one),
            _ => None,
        }
    } else {
        qualifies(lang, node, info, text).map(|name| (node, name))
    };
    let Some((def_node, name_node)) = inner else {
        return DefMode::Test(parent);
    };
    let parent_path = parent.map(|p| {
        let d = &defs[p];
        let mut v = d.path.clone();
        v.push(d.name.clone());
        v
    });
    let def = make_def(
        text,
        lang,
        node,
        before,
        def_node,
        name_node,
        parent_path.unwrap_or_default(),
        parent.map(|p| defs[p].kind.as_str()),
    );
    let i = defs.len();
    defs.push(def);
    match parent {
        Some(p) => defs[p].children.push(i),
        None => top.push(i),
    }
    if def_node.id() == node.id() {
        DefMode::Test(Some(i))
    } else {
        DefMode::Inner(def_node.id(), i)
    }
}

/// Whether `node` (whose kind is `info`) is a definition under the language's rules and has a
/// name: its name node.
fn qualifies<'t>(lang: &Language, node: Node<'t>, info: KindInfo, text: &str) -> Option<Node<'t>> {
    let rule = lang.rule(info.rule?);
    if let Some(f) = &rule.requires_field
        && lang.child_by_field_name(node, f).is_none()
    {
        return None;
    }
    if !rule.requires_value.is_empty() {
        // The node's own `value` (JSON/YAML pairs) or `rhs` (R's `f <- function() ..`), else its
        // declarator's value (`const f = () => ..`).
        let fields = &lang.fields;
        let mut c = node.walk();
        let value = child_by_field(node, fields.value)
            .or_else(|| child_by_field(node, fields.rhs))
            .or_else(|| {
                node.named_children(&mut c)
                    .find(|n| n.kind() == "variable_declarator")
                    .and_then(|d| child_by_field(d, fields.value))
            });
        if !value.is_some_and(|v| rule.requires_value.iter().any(|r| r == v.kind())) {
            return None;
        }
    }
    if !rule.when.is_empty() && !rule.when.iter().any(|w| field_text_is(lang, node, text, w)) {
        return None;
    }
    name_node(lang, node, rule).filter(|n| {
        let name = node_text(text, *n).trim();
        !name.is_empty() && !lang.def.not_names.iter().any(|k| k == name)
    })
}

/// Where the word `operator` starts in a C++ declarator's name (`Vec128<T> operator<<`), if it
/// is the name's last declarator: nothing but the operator and its parameters after it.
/// A qualifier right before it (`Vec::operator+=`) stays: (the start of that qualified name, where
/// `operator` starts).
fn operator_at(s: &str) -> Option<(usize, usize)> {
    let at = s.rfind("operator")?;
    // Not a C parameter named `operator` (`apply(char operator, int b)`).
    if s[..at].contains('(') {
        return None;
    }
    let before_ok = s[..at]
        .chars()
        .next_back()
        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
    let after = s[at + "operator".len()..].chars().next();
    let after_ok = after.is_none_or(|c| !(c.is_alphanumeric() || c == '_') || c == ' ');
    if !(before_ok && after_ok) {
        return None;
    }
    let start = match s[..at].strip_suffix("::") {
        Some(q) => q.rfind(char::is_whitespace).map_or(0, |w| w + 1),
        None => at,
    };
    Some((start, at))
}

/// `s` without its `<...>` groups (nested ones included); an unbalanced `>` is kept.
fn without_angle_groups(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `PATH=text` holds for `node` (the text of what the field or name path leads to,
/// trimmed, is `text`).
fn field_text_is(lang: &Language, node: Node<'_>, text: &str, cond: &str) -> bool {
    cond.split_once('=').is_some_and(|(at, want)| {
        follow(lang, node, at).is_some_and(|f| f != node && node_text(text, f).trim() == want)
    })
}

fn identifier_like(kind: &str) -> bool {
    kind.contains("identifier") || kind.ends_with("name") || kind == "word" || kind == "constant"
}

/// The node holding a definition's name: the rule's fields, then (unless the rule says
/// `name_search = false`) `declarator` chains (C/C++), then the first identifier-like node within a
/// few levels.
fn name_node<'t>(lang: &Language, node: Node<'t>, rule: &DefinitionRule) -> Option<Node<'t>> {
    let default = ["name".to_string()];
    let fields = if rule.name_fields.is_empty() {
        &default[..]
    } else {
        &rule.name_fields[..]
    };
    for f in fields {
        if let Some(c) = follow(lang, node, f) {
            return Some(if rule.name_style == "leaf" {
                leaf_name(lang, c)
            } else {
                c
            });
        }
    }
    if !rule.name_search {
        return None;
    }
    if let Some(d) = lang.child_by_field_name(node, "declarator") {
        return Some(leaf_name(lang, d));
    }
    first_identifier(node)
}

/// Follows a name path: `/`-separated steps, each a field name or `@kind` (the first child of that
/// kind, a keyword included): `name`, `@type_binding/name`, `@function_command/@argument_list/@argument`.
/// A step ending in `?` is skipped where it is absent: `@signature/@where_expression?/@call_expression`.
fn follow<'t>(lang: &Language, node: Node<'t>, path: &str) -> Option<Node<'t>> {
    let mut n = node;
    for step in path.split('/') {
        let (step, optional) = step.strip_suffix('?').map_or((step, false), |s| (s, true));
        let found = match step.strip_prefix('@') {
            Some(kind) => {
                let mut c = n.walk();
                n.children(&mut c).find(|ch| ch.kind() == kind)
            }
            None => match step.split_once('#') {
                // `value#2`: the second child in field `value` (a Lisp form's elements).
                Some((field, nth)) => {
                    let k = nth.parse::<usize>().ok()?.checked_sub(1)?;
                    let mut c = n.walk();
                    n.children_by_field_name(field, &mut c).nth(k)
                }
                None => lang.child_by_field_name(n, step),
            },
        };
        match found {
            Some(c) => n = c,
            None if optional => {}
            None => return None,
        }
    }
    Some(n)
}

/// Follows `declarator`/`name` fields down to an identifier.
fn leaf_name<'t>(lang: &Language, mut n: Node<'t>) -> Node<'t> {
    for _ in 0..16 {
        if identifier_like(n.kind()) {
            return n;
        }
        match lang
            .child_by_field_name(n, "declarator")
            .or_else(|| lang.child_by_field_name(n, "name"))
        {
            Some(d) => n = d,
            None => return first_identifier(n).unwrap_or(n),
        }
    }
    n
}

/// Breadth-first search for an identifier-like node below `node`, a few levels deep.
fn first_identifier(node: Node<'_>) -> Option<Node<'_>> {
    let mut level = vec![node];
    for _ in 0..NAME_SEARCH_DEPTH {
        let mut next = Vec::new();
        for n in level {
            let mut c = n.walk();
            for ch in n.named_children(&mut c) {
                if identifier_like(ch.kind()) {
                    return Some(ch);
                }
                next.push(ch);
            }
        }
        level = next;
    }
    None
}

/// A `labels` name: the identifiers and strings after `first` (an HCL block's type), up to the
/// first other node, unquoted and joined by `.`: `resource "aws_s3_bucket" "logs"` →
/// `aws_s3_bucket.logs`, `variable "region"` → `region`; without labels (`locals`), `first`'s text.
fn label_name(text: &str, first: Node<'_>) -> String {
    let mut labels = Vec::new();
    let mut next = first.next_named_sibling();
    while let Some(n) = next.filter(|n| identifier_like(n.kind()) || n.kind().contains("string")) {
        labels.push(node_text(text, n).trim().trim_matches('"'));
        next = n.next_named_sibling();
    }
    if labels.is_empty() {
        node_text(text, first).to_string()
    } else {
        labels.join(".")
    }
}

/// Builds a definition from `outer` (the node whose range counts: a wrapper or the node itself) and
/// `node` (the definition proper).
#[allow(clippy::too_many_arguments)]
fn make_def<'t>(
    text: &str,
    lang: &Language,
    outer: Node<'t>,
    before: &[Node<'t>],
    node: Node<'t>,
    name_node: Node<'t>,
    mut path: Vec<String>,
    parent_kind: Option<&str>,
) -> Def {
    let rule = lang.rule(
        lang.kind_info(node)
            .rule
            .expect("qualified nodes have a rule"),
    );
    let labels;
    let raw_name = if rule.name_style == "labels" {
        labels = label_name(text, name_node);
        labels.as_str()
    } else {
        node_text(text, name_node)
    };
    // `Foo::bar` (C++), and `M.load` / `M:merge` / `TAccount.Deposit` where the rule says the name
    // is qualified, become path components; a `whole` name (a CSS selector) or a `labels` one (a
    // Terraform address) stays one.
    let raw_name = unwrapped_name(raw_name);
    let raw_name = declarator_name(lang, raw_name);
    let (parts, name) = split_name(lang, rule, &raw_name);
    if let Some(f) = &rule.parent_field
        && let Some(recv) = lang.child_by_field_name(node, f)
        && let Some(t) = find_kind(recv, "type_identifier")
    {
        path.push(node_text(text, t).to_string());
    }
    // `void Matrix::multiply()` defined outside its class is still a member of it.
    let qualified = !parts.is_empty();
    path.extend(parts);
    let kind = refined_kind(text, lang, rule, node, qualified, parent_kind);
    let (range_start, mut docs) = leading_attachments(text, lang, outer, before);
    let name_start = name_node.start_byte();
    let header = text
        .get(outer.start_byte()..name_start.max(outer.start_byte()))
        .unwrap_or("");
    let exported = exported(&lang.def.id, header, &name);
    if lang.def.docstrings
        && let Some(d) = docstring(lang, text, node)
    {
        docs = Some(d);
    }
    Def {
        kind,
        name,
        path,
        range_start,
        end: with_trailing_comment(text, lang, outer.end_byte()),
        signature: signature(lang, text, outer, node),
        docs,
        children: Vec::new(),
        node_start: node.start_byte(),
        name_start,
        exported,
    }
}

/// A definition's name text trimmed and without its quoting (Zig's `@"resume"`, `` `name` ``, an
/// operator in parentheses).
fn unwrapped_name(raw_name: &str) -> &str {
    // Zig's `@"resume"` is the identifier `resume`; R's, Kotlin's and Scala's `` `name` `` is `name`.
    let raw_name = raw_name.trim();
    let raw_name = raw_name
        .strip_prefix("@\"")
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw_name)
        .trim_matches('"');
    let raw_name = match raw_name.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        Some(inner) if !inner.is_empty() => inner,
        _ => raw_name,
    };
    // An operator in parentheses (OCaml's `( +| )`, Haskell's `(<>)`) is the operator.
    match raw_name.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner)
            if !inner.trim().is_empty()
                && !inner
                    .chars()
                    .any(|c| c.is_alphanumeric() || c == '_' || c == ',' || c == '(') =>
        {
            inner.trim()
        }
        _ => raw_name,
    }
}

/// For languages with `declarator_names` (C, C++): a declarator's name without its template
/// arguments, an operator named from `operator` on; other languages' names unchanged.
fn declarator_name<'a>(lang: &Language, raw_name: &'a str) -> Cow<'a, str> {
    // A declarator's name (C, C++) without its template arguments: `Read<int, T::K>` is `Read`,
    // and the `::` inside them splits nothing.
    // An operator (`operator<<`, behind a macro-made prefix too) is named from `operator` on.
    let operator = lang
        .def
        .declarator_names
        .then(|| operator_at(raw_name))
        .flatten();
    match operator {
        Some((start, at)) => {
            // `Vec<T>::operator+=`: the qualifier without its template arguments.
            Cow::Owned(format!(
                "{}{}",
                without_angle_groups(&raw_name[start..at]),
                &raw_name[at..]
            ))
        }
        None if lang.def.declarator_names => Cow::Owned(without_angle_groups(raw_name)),
        None => Cow::Borrowed(raw_name),
    }
}

/// A cleaned name split by the rule's `name_style`: (the qualifiers, which become path
/// components, the name).
fn split_name(lang: &Language, rule: &DefinitionRule, raw_name: &str) -> (Vec<String>, String) {
    // An operator (Scala's `#::`) is one name, not a path.
    let whole = matches!(rule.name_style.as_str(), "whole" | "labels")
        || !raw_name.chars().any(char::is_alphanumeric);
    let split: Vec<&str> = match rule.name_style.as_str() {
        _ if whole => vec![raw_name],
        "qualified" => raw_name.split([':', '.']).collect(),
        _ => raw_name.split("::").collect(),
    };
    let mut parts: Vec<String> = split
        .into_iter()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .collect();
    let mut name = parts.pop().unwrap_or_else(|| raw_name.trim().to_string());
    // A C/C++ declarator behind a macro the parser took for a type (`HWY_API constexpr
    // RemoveCvRef<T> ScalarShr(`) keeps the words before the name: the name is the last word.
    if lang.def.declarator_names
        && !name.starts_with("operator")
        && !name.contains('(')
        && let Some((_, last)) = name.rsplit_once(' ')
    {
        let last = last.trim_start_matches(['*', '&']);
        if last.chars().all(|c| c.is_alphanumeric() || c == '_') && !last.is_empty() {
            name = last.to_string();
        }
    }
    // A declarator the parser could not take apart (a C function behind an unknown attribute
    // macro) comes back whole: `utf8_int8_t *utf8chr(const char *s)` → `utf8chr`.
    if !whole
        && let Some((head, _)) = name.split_once('(')
        && let Some(id) = head
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
            .find(|s| !s.is_empty())
    {
        name = id.to_string();
    }
    (parts, name)
}

/// A definition's kind: the rule's, refined by its first matching `refine` entry, and a function
/// qualified by a type or nested in one is a method.
fn refined_kind(
    text: &str,
    lang: &Language,
    rule: &DefinitionRule,
    node: Node<'_>,
    qualified: bool,
    parent_kind: Option<&str>,
) -> String {
    let mut kind = rule.kind.clone();
    for (when, refined) in &rule.refine {
        // `field=text` matches a field's text (Swift's `declaration_kind=struct`); else a
        // descendant of that kind.
        let hit = if when.contains('=') {
            field_text_is(lang, node, text, when)
        } else if crate::lang::is_path(when) {
            follow(lang, node, when).is_some()
        } else {
            find_kind(node, when).is_some()
        };
        if hit {
            kind = refined.clone();
            break;
        }
    }
    if kind == "function" && (qualified || parent_kind.is_some_and(|k| TYPE_KINDS.contains(&k))) {
        kind = "method".into();
    }
    kind
}

/// `}  // namespace foo`: a comment after a definition's end, on the same line, belongs to it.
fn with_trailing_comment(text: &str, lang: &Language, end: usize) -> usize {
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let rest = &text[end..line_end];
    let trimmed = rest.trim_start();
    if lang
        .def
        .line_comments
        .iter()
        .any(|m| trimmed.starts_with(m.as_str()))
    {
        end + rest.trim_end().len()
    } else {
        end
    }
}

/// Breadth-first search for a node of `kind` within a few levels.
fn find_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut level = vec![node];
    for _ in 0..NAME_SEARCH_DEPTH {
        let mut next = Vec::new();
        for n in level {
            if n.kind() == kind {
                return Some(n);
            }
            let mut c = n.walk();
            next.extend(n.named_children(&mut c));
        }
        level = next;
    }
    None
}

/// Comments and attributes directly above `node` (no blank line between, each on its own line),
/// among its earlier named siblings `before`: the start of the definition's range, and its doc
/// comment.
fn leading_attachments(
    text: &str,
    lang: &Language,
    node: Node<'_>,
    before: &[Node<'_>],
) -> (usize, Option<String>) {
    let mut start = node.start_byte();
    let mut start_row = node.start_position().row;
    let mut docs: Vec<&str> = Vec::new();
    for &prev in before.iter().rev() {
        let info = lang.kind_info(prev);
        let is_comment = info.is_comment();
        if !(is_comment || info.is_attached()) {
            break;
        }
        if start_row > prev.end_position().row + 1 || !starts_line(text, prev.start_byte()) {
            break;
        }
        let t = node_text(text, prev);
        if is_comment {
            if !lang
                .def
                .doc_comment_prefixes
                .iter()
                .any(|p| t.starts_with(p.as_str()))
            {
                break;
            }
            docs.push(t);
        }
        start = prev.start_byte();
        start_row = prev.start_position().row;
    }
    docs.reverse();
    let doc = clean_comment(&docs.join("\n"), lang);
    (start, (!doc.is_empty()).then_some(doc))
}

/// Whether only whitespace precedes `byte` on its line.
fn starts_line(text: &str, byte: usize) -> bool {
    let line_start = text[..byte].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..byte].trim().is_empty()
}

/// Strips comment markers from each line of a doc comment: the language's doc prefixes, line
/// comment markers and block comment delimiters, longest first, plus the C family's.
fn clean_comment(raw: &str, lang: &Language) -> String {
    let d = &lang.def;
    let mut opens: Vec<&str> = ["///", "//!", "/**", "/*!", "//", "/*", "#"]
        .into_iter()
        .chain(d.doc_comment_prefixes.iter().map(String::as_str))
        .chain(d.line_comments.iter().map(String::as_str))
        .chain(d.block_comments.iter().map(|(o, _)| o.as_str()))
        .filter(|m| !m.trim().is_empty())
        .collect();
    opens.sort_by_key(|m| std::cmp::Reverse(m.len()));
    let closes: Vec<&str> = std::iter::once("*/")
        .chain(d.block_comments.iter().map(|(_, c)| c.as_str()))
        .collect();
    let mut lines = Vec::new();
    for l in raw.lines() {
        let mut l = l.trim();
        for p in &opens {
            if let Some(r) = l.strip_prefix(p) {
                l = r;
                break;
            }
        }
        for c in &closes {
            if let Some(r) = l.strip_suffix(c) {
                l = r;
                break;
            }
        }
        l = l.trim_end();
        if let Some(r) = l.trim_start().strip_prefix('*') {
            l = r;
        }
        lines.push(l.strip_prefix(' ').unwrap_or(l));
    }
    lines.join("\n").trim().to_string()
}

/// A Python-style docstring: the first statement of the body, when it is a string.
fn docstring(lang: &Language, text: &str, node: Node<'_>) -> Option<String> {
    let body = lang.child_by_field_name(node, "body")?;
    let mut c = body.walk();
    let first = body
        .named_children(&mut c)
        .find(|n| !n.kind().contains("comment"))?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let s = first.named_child(0)?;
    if s.kind() != "string" && s.kind() != "concatenated_string" {
        return None;
    }
    let raw = node_text(text, s).trim();
    let raw = raw.trim_start_matches(|c: char| "rRuUbBfF".contains(c));
    let inner = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| raw.strip_prefix(q).and_then(|r| r.strip_suffix(q)))
        .unwrap_or(raw);
    let doc = dedent(inner);
    (!doc.is_empty()).then_some(doc)
}

/// Removes the common indentation of a docstring's lines after the first.
fn dedent(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        out.push(if i == 0 {
            l.trim()
        } else {
            l.get(indent..).unwrap_or(l.trim())
        });
    }
    out.join("\n").trim().to_string()
}

/// The header of a definition: from its start to its body, whitespace collapsed.
fn signature(lang: &Language, text: &str, outer: Node<'_>, node: Node<'_>) -> Option<String> {
    let start = outer.start_byte();
    let end = match lang.child_by_field_name(node, "body") {
        Some(b) if b.start_byte() > start => b.start_byte(),
        _ => text[start..node.end_byte()]
            .find('\n')
            .map_or(node.end_byte(), |i| start + i),
    };
    let raw = &text[start..end];
    // Decorators and attributes above the definition are not its signature.
    let raw = raw.lines().skip_while(|l| {
        let t = l.trim_start();
        t.starts_with('@') || t.starts_with("#[")
    });
    // The lines' words, one space between (as if the lines were joined and whitespace collapsed).
    let mut sig = String::with_capacity(end - start);
    for w in raw.flat_map(str::split_whitespace) {
        if !sig.is_empty() {
            sig.push(' ');
        }
        sig.push_str(w);
    }
    if sig.len() > MAX_SIGNATURE_BYTES {
        let cut = trove_base::util::floor_char_boundary(&sig, MAX_SIGNATURE_BYTES);
        sig.truncate(cut);
        sig.push('…');
    }
    (!sig.is_empty()).then_some(sig)
}

fn joined(path: &[String], name: Option<&str>) -> Option<String> {
    let mut parts: Vec<&str> = path.iter().map(String::as_str).collect();
    parts.extend(name);
    (!parts.is_empty()).then(|| parts.join(" > "))
}

/// Emits the definitions `ids` (in order) and the gaps between them within `[start, end)`.
fn emit_region(
    b: &mut Builder<'_>,
    defs: &[Def],
    ids: &[usize],
    start: usize,
    end: usize,
    ctx: &[String],
) {
    let ctx_path = joined(ctx, None);
    let mut cursor = start;
    for &i in ids {
        let d = &defs[i];
        if d.end <= cursor {
            continue; // nested oddity of a broken tree: already emitted
        }
        let ds = d.range_start.max(cursor);
        b.gap(cursor, ds, ctx_path.as_deref());
        emit_def(b, defs, i, ds);
        cursor = d.end;
    }
    b.gap(cursor, end, ctx_path.as_deref());
}

/// Emits one definition starting at `start`: whole, split by members, or split on lines.
fn emit_def(b: &mut Builder<'_>, defs: &[Def], i: usize, start: usize) {
    let d = &defs[i];
    let meta = Meta {
        kind: d.kind.clone(),
        symbol: Some(d.name.clone()),
        symbol_path: joined(&d.path, Some(&d.name)),
        signature: d.signature.clone(),
        docs: d.docs.clone(),
    };
    if nonws_chars(&b.text[start..d.end]) <= b.cfg.max_chars {
        b.push(start, d.end, &meta);
        return;
    }
    let first_child = d
        .children
        .iter()
        .map(|&c| defs[c].range_start)
        .find(|&s| s >= start && s < d.end);
    match first_child {
        Some(fc) => {
            // The header (signature, fields, docstring) keeps the definition's own kind and name.
            if nonws_chars(&b.text[start..fc]) >= b.cfg.min_block_chars {
                b.push_split(start, fc, &meta, false);
            }
            let mut ctx = d.path.clone();
            ctx.push(d.name.clone());
            emit_region(b, defs, &d.children, fc, d.end, &ctx);
        }
        None => b.push_split(start, d.end, &meta, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_comment_strips_markers() {
        let reg = crate::lang::Registry::load(&[]).unwrap();
        let l = |id: &str| reg.get(id).unwrap();
        assert_eq!(
            clean_comment("/// Adds two.\n/// Returns the sum.", l("rust")),
            "Adds two.\nReturns the sum."
        );
        assert_eq!(clean_comment("/**\n * Greets.\n */", l("java")), "Greets.");
        assert_eq!(clean_comment("# a\n# b", l("python")), "a\nb");
        // The language's own markers, longest first.
        assert_eq!(clean_comment("--- Reads.", l("lua")), "Reads.");
        assert_eq!(clean_comment("-- | Pops.", l("haskell")), "Pops.");
        assert_eq!(clean_comment("(** Makes. *)", l("ocaml")), "Makes.");
    }

    #[test]
    fn dedent_docstring() {
        assert_eq!(
            dedent("Summary.\n\n    More text.\n    "),
            "Summary.\n\nMore text."
        );
    }
}
