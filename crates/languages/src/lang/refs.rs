//! References a file makes, by its language file's `import_nodes` and `call_nodes`: what `trove
//! chunks --explain` shows per chunk today, and what the structural index builds on.
use tree_sitter::{Node, Parser};

use std::num::NonZeroU16;

use super::{KindInfo, Language, child_by_field, node_text};
use trove_base::sets::RefKind;

/// An import or a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// Import, call, base type or type used by name.
    pub kind: RefKind,
    /// For a call, the called name (last segment: `self.gateway.charge(..)` → `charge`); for an
    /// import, the statement's text with whitespace collapsed.
    pub target: String,
    /// Byte where the reference starts.
    pub start_byte: usize,
    /// 1-based line.
    pub line: usize,
    /// For a call, what it is called on: `self.gateway.charge(..)` → `self.gateway`, `T::new()` →
    /// `T`; none for a bare `f()`.
    pub receiver: Option<String>,
    /// The receiver is a path (`serde_json::from_str`, `Regex::builder`, `Foo::bar` in C++ or
    /// PHP): a module or a type, never an object.
    pub path_call: bool,
    /// A bare call of a name a function around it binds: a parameter, a loop variable, a local
    /// (`def f(load): load(x)`, `for p in ps: p()`): a value, never the definition of that name
    /// elsewhere.
    pub local: bool,
    /// For a call on a receiver, its first name is one a function around the call binds (a
    /// parameter, a local, a loop variable: `def f(app): app.run()`), not the module's.
    pub receiver_bound: bool,
    /// The receiver is a value some call or index gave (`a.b().c()`, `xs[0].f()`), whatever
    /// names `receiver` keeps of it.
    pub chained: bool,
}

/// Fields that hold a call's callee, tried in order.
pub(crate) const CALLEE_FIELDS: [&str; 7] = [
    "function",
    "name",
    "method",
    "macro",
    "target",
    "constructor",
    "type",
];
/// Fields that hold what a call is made on when the callee field holds the name alone (Java's
/// `method_invocation`: `object` . `name`; Ruby's `receiver`; PHP's `scope` :: `name`).
pub(crate) const RECEIVER_FIELDS: [&str; 3] = ["object", "receiver", "scope"];

/// Node kinds that bind local names inside a function (their `left`, `name` or `pattern`):
/// Python's and JavaScript's assignments and loop variables, declarators, Rust's `let` and `for`, Go's
/// `:=` and `range`.
pub(crate) const LOCAL_BINDINGS: [&str; 10] = [
    "assignment",
    "for_statement",
    "for_expression",
    "for_in_statement",
    "for_in_clause",
    "variable_declarator",
    "let_declaration",
    "short_var_declaration",
    "range_clause",
    "var_spec",
];

/// Longest import text kept.
const MAX_IMPORT: usize = 120;

/// The imports and calls of `text` in source order (none without a grammar or rules).
pub fn references(lang: &Language, text: &str) -> Vec<Reference> {
    let d = &lang.def;
    let Some(g) = &lang.grammar else {
        return Vec::new();
    };
    if !d.has_references() {
        return Vec::new();
    }
    let mut parser = Parser::new();
    if parser.set_language(g).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(text, None) else {
        return Vec::new();
    };
    references_in(lang, text, tree.root_node())
}

/// The imports and calls under `root` (a tree already parsed with `lang`'s grammar), in source
/// order; iterative, so a deep tree cannot overflow the stack.
pub fn references_in(lang: &Language, text: &str, root: Node<'_>) -> Vec<Reference> {
    if !lang.def.has_references() {
        return Vec::new();
    }
    let mut walk = RefWalk::new(lang, text);
    // (node, its parent, inside a base-type list: its names are `inherits`/`implements`, not
    // `references`). The parent is carried down: tree-sitter's `parent()` walks from the root,
    // which made deep trees (100 000 nested brackets) quadratic.
    let mut stack = vec![(root, None::<Node<'_>>, false)];
    while let Some((n, parent, in_heritage)) = stack.pop() {
        let Some(heritage_here) = walk.visit(n, lang.kind_info(n), parent, in_heritage) else {
            continue;
        };
        // Children in reverse so they pop in source order (no per-node list).
        let mark = stack.len();
        let mut c = n.walk();
        stack.extend(
            n.named_children(&mut c)
                .map(|ch| (ch, Some(n), heritage_here)),
        );
        stack[mark..].reverse();
    }
    walk.finish()
}

/// The references of a tree, node by node, in any walk that visits the named nodes in source
/// order (pre-order) with their parents: [`references_in`], and the syntax chunker's one walk.
pub(crate) struct RefWalk<'a> {
    lang: &'a Language,
    text: &'a str,
    out: Vec<Reference>,
    /// The functions around the node visited, outermost first: where each ends, and the names
    /// it binds, each with the byte from which it is bound (0 for a parameter; for `x = f(x)`,
    /// past the value, so that `f` there is not yet `x`).
    scopes: Vec<(usize, Vec<(String, usize)>)>,
}

impl<'a> RefWalk<'a> {
    pub(crate) fn new(lang: &'a Language, text: &'a str) -> Self {
        RefWalk {
            lang,
            text,
            out: Vec::new(),
            scopes: Vec::new(),
        }
    }

    /// Whether `n`, of an `import_nodes` kind, is an import: always for a plain `KIND` entry;
    /// for `KIND.field` entries only when it has the field.
    fn imports_here(&self, n: Node<'_>) -> bool {
        let kind = n.kind();
        self.lang
            .def
            .import_nodes
            .iter()
            .any(|spec| match spec.split_once('.') {
                None => spec == kind,
                Some((k, f)) => k == kind && n.child_by_field_name(f).is_some(),
            })
    }

    /// Records `n`'s references (`info` is its kind's). Returns whether its children are in a
    /// base-type list, or `None` when they are not to be visited (an import's parts are not
    /// references of their own).
    pub(crate) fn visit(
        &mut self,
        n: Node<'_>,
        info: KindInfo,
        parent: Option<Node<'_>>,
        in_heritage: bool,
    ) -> Option<bool> {
        let text = self.text;
        self.track_scopes(n, info);
        let mut heritage_here = in_heritage;
        if info.is_heritage() && self.heritage_refs(n, parent) {
            heritage_here = true;
        }
        if info.is_import() && self.imports_here(n) {
            let t = collapse(node_text(text, n));
            let t: String = t.chars().take(MAX_IMPORT).collect();
            self.out.push(reference(RefKind::Import, t, n));
            return None;
        }
        if info.is_call() {
            self.call_ref(n);
        }
        // A type named where it is used (not where it is defined: a definition's own name).
        // The name-field lookup is asked last: it is the costly test, and most nodes are not
        // type references at all.
        if !heritage_here
            && info.is_type_ref()
            && parent
                .and_then(|p| child_by_field(p, self.lang.fields.name))
                .is_none_or(|name| name.id() != n.id())
        {
            let t = node_text(text, n).trim();
            if !t.is_empty() {
                self.out
                    .push(reference(RefKind::References, t.to_string(), n));
            }
        }
        Some(heritage_here)
    }

    /// Keeps `scopes` up to date at `n`: drops the functions the walk has left, and adds the
    /// names `n` binds (a function's parameters, a comprehension's loop variables, a local).
    fn track_scopes(&mut self, n: Node<'_>, info: KindInfo) {
        let text = self.text;
        // Functions the walk has left (it visits in source order) bind nothing here.
        while self.scopes.last().is_some_and(|s| s.0 <= n.start_byte()) {
            self.scopes.pop();
        }
        if info.binds()
            && let Some(params) = first_field(n, &self.lang.fields.parameters)
        {
            let names = bound_names(text, params).into_iter().map(|x| (x, 0));
            self.scopes.push((n.end_byte(), names.collect()));
        }
        // A comprehension binds its loop variables for its whole text (`[f() for f in fs]`:
        // the call comes first).
        if info.is_comprehension() {
            let mut c = n.walk();
            let names: Vec<(String, usize)> = n
                .named_children(&mut c)
                .filter(|ch| ch.kind() == "for_in_clause")
                .filter_map(|ch| child_by_field(ch, self.lang.fields.bound[0]))
                .flat_map(|left| bound_names(text, left))
                .map(|x| (x, 0))
                .collect();
            if !names.is_empty() {
                self.scopes.push((n.end_byte(), names));
            }
        }
        // A name the function binds as it goes (`for f in fs:`, `let g = ..`), but for a
        // function given a name (`const h = () => ..`: a definition of the file, found there).
        if info.binds_locals()
            && let Some(scope) = self.scopes.last_mut()
            && let Some(bound) = first_field(n, &self.lang.fields.bound)
        {
            let value = child_by_field(n, self.lang.fields.value)
                .or_else(|| child_by_field(n, self.lang.fields.right));
            let named_function = value.is_some_and(|v| {
                let k = v.kind();
                k.contains("function") || k.contains("arrow") || k.contains("lambda")
            });
            if !named_function {
                let from = value.map_or(n.end_byte(), |v| v.end_byte());
                scope
                    .1
                    .extend(bound_names(text, bound).into_iter().map(|x| (x, from)));
            }
        }
    }

    /// Records the base types `n` (of a heritage kind) names; returns whether any
    /// `inherit_nodes`/`implement_nodes` spec matched it, so that its children are in a base-type
    /// list.
    fn heritage_refs(&mut self, n: Node<'_>, parent: Option<Node<'_>>) -> bool {
        let (d, text) = (&self.lang.def, self.text);
        let mut matched = false;
        for (specs, rel) in [
            (&d.inherit_nodes, RefKind::Inherits),
            (&d.implement_nodes, RefKind::Implements),
        ] {
            for spec in specs {
                if let Some(holder) = heritage(n, parent, spec) {
                    matched = true;
                    for (name, at) in base_names(text, holder) {
                        self.out.push(Reference {
                            kind: rel,
                            target: name,
                            start_byte: at.start_byte(),
                            line: at.start_position().row + 1,
                            receiver: None,
                            path_call: false,
                            local: false,
                            receiver_bound: false,
                            chained: false,
                        });
                    }
                }
            }
        }
        matched
    }

    /// Records the call `n` (of a `call_nodes` kind) makes, with its receiver and whether the
    /// name or the receiver is bound by a function around it.
    fn call_ref(&mut self, n: Node<'_>) {
        let text = self.text;
        if let Some((name, receiver, path_call, chained)) =
            callee(text, n, &self.lang.fields.callee)
            // `<div>`: an element of the platform's, not a component.
            && !(n.kind().starts_with("jsx_")
                && receiver.is_none()
                && name.starts_with(|c: char| c.is_lowercase()))
        {
            let mut r = reference(RefKind::Call, name, n);
            r.path_call = path_call;
            r.chained = chained;
            r.receiver = receiver.or_else(|| {
                // The callee field is the name alone: the receiver is a field of its own.
                let f = first_field(n, &self.lang.fields.receiver)?;
                let t = callee_head(node_text(text, f));
                let t = t.trim();
                (!t.is_empty()).then(|| t.to_string())
            });
            r.local = r.receiver.is_none()
                && self.scopes.iter().any(|(_, names)| {
                    names
                        .iter()
                        .any(|(x, from)| *x == r.target && *from <= r.start_byte)
                });
            // (Bound by what the walk has met of the function so far, its value included: in
            // `x = x.f()` the `x` called on is already the function's, as Python has it.)
            r.receiver_bound = r.receiver.as_deref().is_some_and(|recv| {
                let head = recv.split(['.', ':', '-']).next().unwrap_or(recv);
                self.scopes
                    .iter()
                    .any(|(_, names)| names.iter().any(|(x, _)| x == head))
            });
            self.out.push(r);
        }
    }

    /// The references in source order.
    pub(crate) fn finish(mut self) -> Vec<Reference> {
        self.out.sort_by_key(|r| r.start_byte);
        self.out
    }
}

/// The node holding base-type names when `n` matches `spec` (`KIND`, `PARENT>KIND`, `KIND.field`).
fn heritage<'t>(n: Node<'t>, parent_node: Option<Node<'t>>, spec: &str) -> Option<Node<'t>> {
    let (kinds, field) = match spec.split_once('.') {
        Some((k, f)) => (k, Some(f)),
        None => (spec, None),
    };
    let (parent, kind) = match kinds.split_once('>') {
        Some((p, k)) => (Some(p), k),
        None => (None, kinds),
    };
    if n.kind() != kind || parent.is_some_and(|p| parent_node.is_none_or(|x| x.kind() != p)) {
        return None;
    }
    match field {
        Some(f) => n.child_by_field_name(f),
        None => Some(n),
    }
}

/// Kinds whose text is a dotted or scoped name: the base is its last segment.
const SCOPED: &[&str] = &[
    "attribute",
    "member_expression",
    "scoped_identifier",
    "scoped_type_identifier",
    "qualified_identifier",
    "qualified_name",
    "nested_type_identifier",
    "scoped_type",
];
/// Subtrees that are not base names (type arguments, `metaclass=` keywords, `public`).
const NOT_BASES: &[&str] = &[
    "type_arguments",
    "type_parameters",
    "keyword_argument",
    "access_specifier",
    "comment",
];

/// The base-type names under `holder`, each with the node it is read from, in source order.
fn base_names<'t>(text: &str, holder: Node<'t>) -> Vec<(String, Node<'t>)> {
    let mut out = Vec::new();
    let mut stack = vec![holder];
    while let Some(n) = stack.pop() {
        let k = n.kind();
        if NOT_BASES.contains(&k) {
            continue;
        }
        let leaf = k.contains("identifier") || k == "constant" || k == "name";
        if SCOPED.contains(&k)
            || (leaf && n.id() != holder.id())
            || (leaf && n.named_child_count() == 0)
        {
            let t = node_text(text, n);
            if let Some(last) = t.rsplit(['.', ':', '\\']).find(|s| !s.is_empty()) {
                out.push((last.trim().to_string(), n));
            }
            continue;
        }
        let mut c = n.walk();
        let children: Vec<Node<'_>> = n.named_children(&mut c).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

fn reference(kind: RefKind, target: String, n: Node<'_>) -> Reference {
    Reference {
        kind,
        target,
        start_byte: n.start_byte(),
        line: n.start_position().row + 1,
        receiver: None,
        path_call: false,
        local: false,
        receiver_bound: false,
        chained: false,
    }
}

/// `n`'s child in the first of the fields `ids` it has.
fn first_field<'t>(n: Node<'t>, ids: &[Option<NonZeroU16>]) -> Option<Node<'t>> {
    ids.iter().find_map(|&f| child_by_field(n, f))
}

/// The names a function's parameter list `params` binds: its identifiers, but for types,
/// default values (`x=load`, `x = load`) and annotations.
fn bound_names(text: &str, params: Node<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![params];
    while let Some(n) = stack.pop() {
        let kind = n.kind();
        // A type (`type_identifier`, `type_annotation`), not a typed parameter; an attribute
        // (`self.x = ..`, `a[i] = ..`) binds no name.
        if (kind.contains("type") && !kind.contains("parameter"))
            || [
                "attribute",
                "member",
                "subscript",
                "field_expression",
                "selector",
                "index",
            ]
            .iter()
            .any(|w| kind.contains(w))
        {
            continue;
        }
        if n.named_child_count() == 0 {
            if kind.contains("identifier") {
                out.push(node_text(text, n).to_string());
            }
            continue;
        }
        let mut c = n.walk();
        if !c.goto_first_child() {
            continue;
        }
        loop {
            let child = c.node();
            // `value` is a default (`x=1`) but in a pattern (`{ key: value }`), the name bound.
            let skip = match c.field_name() {
                Some("type" | "default" | "default_value" | "right" | "return_type") => true,
                Some("value") => !kind.contains("pattern"),
                _ => false,
            };
            if child.is_named() && !skip {
                stack.push(child);
            }
            if !c.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The called name: a callee field's text (else the first named child's), its last path segment;
/// what precedes it, the receiver (none for a bare name); whether that is a path; and whether
/// the callee's text holds a call or an index (`a.b().c`: the receiver is a value).
fn callee(
    text: &str,
    n: Node<'_>,
    fields: &[Option<NonZeroU16>],
) -> Option<(String, Option<String>, bool, bool)> {
    let f = match first_field(n, fields) {
        Some(f) => f,
        None => n.named_children(&mut n.walk()).next()?,
    };
    let raw = node_text(text, f);
    let chained = raw.contains(['(', '[']);
    let head = callee_head(raw);
    let seps = ['.', ':', '>', '-', ' ', '\n', '\t'];
    let head = head.trim_end_matches(seps);
    let last = head.rsplit(seps).find(|s| !s.is_empty())?;
    let name = last.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'));
    let joined = &head[..head.len() - last.len()];
    let path_call = joined.ends_with("::");
    let before = joined
        .trim_end_matches(seps)
        .trim_start_matches(|c: char| c.is_whitespace() || c == '@' || c == '&' || c == '*');
    let receiver = if !before.is_empty() {
        // An optional or asserted step is the same object (`this.source?.subscribe()`,
        // `scheduler!.now()`, Kotlin's `a!!.b()`): `this.source`, `scheduler`, `a`.
        let plain = before
            .replace("?.", ".")
            .replace("!!.", ".")
            .replace("!.", ".");
        Some(plain.trim_end_matches(['?', '!']).to_string())
    } else if !joined.trim().is_empty() {
        // `((Closeable) o).close()`, `(a or b).f()`: an object in parentheses.
        Some("()".to_string())
    } else {
        None
    };
    (!name.is_empty()).then(|| (name.to_string(), receiver, path_call, chained))
}

/// A callee's text without its groups: `a.b.c`, `a::b`, `a->b`, `a:b` keep their segments,
/// generic arguments go; in a chain (`env::args().skip(1).collect`) the groups of the earlier
/// calls are dropped, so the last segment is `collect`, not `args`.
fn callee_head(t: &str) -> String {
    let mut head = String::with_capacity(t.len());
    let mut depth = 0usize;
    let mut prev = ' ';
    for ch in t.chars() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            '<' if prev != '<' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            // `->` is an arrow, not the end of generic arguments.
            '>' if prev != '-' && depth > 0 => depth -= 1,
            '!' => {}
            _ if depth == 0 => head.push(ch),
            _ => {}
        }
        prev = ch;
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::Registry;

    /// The calls of `src`: (called name, receiver).
    fn calls(lang: &Language, src: &str) -> Vec<(String, Option<String>)> {
        references(lang, src)
            .into_iter()
            .filter(|r| r.kind == RefKind::Call)
            .map(|r| (r.target, r.receiver))
            .collect()
    }

    /// The bare calls of `src` that call a name a function around them binds.
    fn locals(lang: &Language, src: &str) -> Vec<String> {
        references(lang, src)
            .into_iter()
            .filter(|r| r.local)
            .map(|r| r.target)
            .collect()
    }

    #[test]
    fn parameters_are_local_names() {
        let reg = Registry::load(&[]).unwrap();
        let ts = reg.get("typescript").unwrap();
        // Bound: plain, typed, destructured, defaulted, a lambda's; not a default's value, a
        // type, a call on a receiver, nor a call after the function ends.
        let src = "function f(a: Foo, { b, c: d }, e = g, ...h: H[]) {\n\
                   a(); b(); d(); e(); g(); h(); Foo(); x.a();\n\
                   return [1].map((k) => k()).map(m => m());\n}\na();\n";
        assert_eq!(locals(ts, src), ["a", "b", "d", "e", "h", "k", "m"]);
        let rs = reg.get("rust").unwrap();
        assert_eq!(
            locals(
                rs,
                "fn f(g: impl Fn(), mut h: H) { g(); h(); i(); let c = |j: u8| j(); }"
            ),
            ["g", "h", "j"]
        );
        let go = reg.get("go").unwrap();
        assert_eq!(
            locals(
                go,
                "package p\nfunc f(g func(), h, i int) { g(); h(); j() }\n"
            ),
            ["g", "h"]
        );
        // Bound as the function goes, from past the value: `x = x()` calls the outer `x`.
        assert_eq!(
            locals(
                rs,
                "fn f() { let (c, d) = c(); c(); let g = |x: u8| x; g(1); for k in k() { k(); } }"
            ),
            ["c", "g", "k"]
        );
        assert_eq!(
            locals(
                ts,
                "function f() { let a = a(); a(); const h = () => 1; h(); for (const k of ks) k(); }"
            ),
            ["a", "k"]
        );
        let py = reg.get("python").unwrap();
        assert_eq!(
            locals(
                py,
                "def f(fs):\n    g = g()\n    g()\n    self.h = 1\n    h()\n    for k in fs:\n        k()\n    return [m() for m in fs]\ng = 1\ng()\n"
            ),
            ["g", "k", "m"]
        );
        assert_eq!(
            locals(
                py,
                "def f(a, b: int, *c, d=e, f: T = g, **h):\n    a(); b(); c(); d(); e(); f(); g(); h()\n    def inner():\n        a()\n    return lambda i: i()\na()\n"
            ),
            ["a", "b", "c", "d", "f", "h", "a", "i"]
        );
    }

    #[test]
    fn imports_and_calls_by_the_language_file() {
        let reg = Registry::load(&[]).unwrap();
        let py = reg.get("python").unwrap();
        let src = "import os\nfrom a.b import c\n\ndef f(g):\n    g.charge(os.getcwd())\n    print(len([]))\n";
        let got: Vec<(&str, String, usize)> = references(py, src)
            .into_iter()
            .map(|r| (r.kind.as_str(), r.target, r.line))
            .collect();
        assert_eq!(
            got,
            [
                ("import", "import os".into(), 1),
                ("import", "from a.b import c".into(), 2),
                ("call", "charge".into(), 5),
                ("call", "getcwd".into(), 5),
                ("call", "print".into(), 6),
                ("call", "len".into(), 6),
            ]
        );
        // What each call is made on.
        let receivers: Vec<Option<String>> = calls(py, src).into_iter().map(|c| c.1).collect();
        assert_eq!(
            receivers,
            [Some("g".to_string()), Some("os".to_string()), None, None]
        );
        let chained = calls(
            py,
            "def f(self):\n    super().save()\n    self.db.rows(1).first()\n",
        );
        assert_eq!(
            chained,
            [
                ("save".to_string(), Some("super".to_string())),
                ("super".to_string(), None),
                ("first".to_string(), Some("self.db.rows".to_string())),
                ("rows".to_string(), Some("self.db".to_string())),
            ]
        );
        // Java keeps the receiver in a field of its own (`object`).
        let java = reg.get("java").unwrap();
        let got = calls(
            java,
            "class A { void f() { engine.getView(); super.onCreate(); this.g(); h(); } }",
        );
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            got,
            [
                ("getView".to_string(), s("engine")),
                ("onCreate".to_string(), s("super")),
                ("g".to_string(), s("this")),
                ("h".to_string(), None),
            ]
        );
        let rs = reg.get("rust").unwrap();
        let got: Vec<String> = references(
            rs,
            "use std::fmt;\nfn f() { a::b::<u8>(); v.push(1); println!(\"x\"); env::args().skip(1).collect(); }",
        )
        .into_iter()
        .map(|r| r.target)
        .collect();
        assert_eq!(
            got,
            [
                "use std::fmt;",
                "b",
                "push",
                "println",
                "collect",
                "skip",
                "args"
            ]
        );
    }
}
