//! Reading the types code declares, from its text alone: a parameter's type in a signature or a
//! JSDoc comment, a field's in a type's body, a variable's from what is assigned to it. What a
//! call's receiver is, per file, is read with these (`ReceiverTypes`).

/// Whether `c` may be part of an identifier (letters, digits, `_`, `$`).
pub(super) fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The start of every occurrence of the identifier `x` in `s` (not inside a longer one).
pub(super) fn word_at<'a>(s: &'a str, x: &'a str) -> impl Iterator<Item = usize> + 'a {
    s.match_indices(x).map(|(i, _)| i).filter(move |&i| {
        !s[..i].chars().next_back().is_some_and(is_ident)
            && !s[i + x.len()..].chars().next().is_some_and(is_ident)
    })
}

/// A type name at the start of `s` (`Flask`, `flask.Flask`, `&mut Engine`, `*Command`,
/// `"Flask"`): its last segment, without generic arguments.
pub(super) fn type_name(s: &str) -> Option<String> {
    let mut s = s.trim_start();
    for p in ["&", "'", "mut ", "dyn ", "impl ", "*", "\"", "?"] {
        let Some(rest) = s.strip_prefix(p) else {
            continue;
        };
        s = rest.trim_start();
        // `&'a mut T`: past the lifetime's name.
        if p == "'" && s.starts_with(|c: char| c.is_alphabetic()) {
            let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
            if s[end..].starts_with(' ') {
                s = s[end..].trim_start();
            }
        }
    }
    let end = s
        .find(|c: char| !(is_ident(c) || c == '.' || c == ':'))
        .unwrap_or(s.len());
    let path = s[..end].trim_end_matches([':', '.']);
    let last = path.rsplit(['.', ':']).next()?;
    (last
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_'))
    .then(|| last.to_string())
}

/// The last word of `s` (which ends where a declared name starts, trimmed), past generic arguments
/// and `[]`: the type of `List<String> xs`, `Engine[] es`, `a.b.Engine e`.
fn type_word_before(s: &str) -> &str {
    let b = s.trim_end_matches("[]");
    let b = match b.strip_suffix('>') {
        Some(g) => g.rfind('<').map_or(g, |o| &g[..o]),
        None => b,
    };
    let start = b
        .char_indices()
        .rfind(|&(_, c)| !(is_ident(c) || c == '.'))
        .map_or(0, |(k, c)| k + c.len_utf8());
    &b[start..]
}

/// The type a signature declares for the parameter `x`: `x: T` (Python, TypeScript, Rust,
/// Kotlin, Swift), `T x` (Java, C#, C), `x *T` / `x T` (Go).
pub(super) fn declared_type(sig: &str, x: &str) -> Option<String> {
    let params = &sig[sig.find('(')?..];
    for i in word_at(params, x) {
        let after = params[i + x.len()..].trim_start();
        let after = after.strip_prefix('?').unwrap_or(after).trim_start();
        if let Some(t) = after.strip_prefix(':')
            && !t.starts_with(':')
        {
            return type_name(t);
        }
        let before = params[..i].trim_end();
        if after.starts_with([',', ')', '=']) && !before.ends_with(['(', ',']) {
            // `T x` (Java).
            let word = type_word_before(before);
            if word.chars().next().is_some_and(char::is_uppercase) {
                return type_name(word);
            }
        }
        if let Some(t) = after.strip_prefix('*').or(Some(after))
            && t.chars().next().is_some_and(char::is_uppercase)
            && before.ends_with(['(', ','])
        {
            // `c *Command` (Go).
            return type_name(t);
        }
    }
    None
}

/// The type a JSDoc comment right before `start` (blank lines between allowed) declares for the
/// parameter `x`: `@param {Help} helper`, `@param {Option} [option]`; a union with `null` or
/// `undefined` is its one other member. Other unions, generics and arrays declare nothing.
pub(super) fn jsdoc_param(text: &str, start: usize, x: &str) -> Option<String> {
    jsdoc_type(text, start, &["@param"], Some(x))
}

/// The type of the JSDoc tags `tags` right before `start`: of the one naming `x`, or (`None`) the
/// first (`@returns {Help}`). As [`jsdoc_param`] reads it.
pub(super) fn jsdoc_type(
    text: &str,
    start: usize,
    tags: &[&str],
    x: Option<&str>,
) -> Option<String> {
    let before = text.get(..start)?.trim_end();
    let body = before.strip_suffix("*/")?;
    let open = body.rfind("/**")?;
    let doc = &body[open + 3..];
    if doc.contains("*/") {
        return None;
    }
    let parts = tags.iter().flat_map(|t| doc.split(t).skip(1));
    for tag in parts {
        let tag = tag.trim_start();
        let Some(rest) = tag.strip_prefix('{') else {
            continue;
        };
        let Some((ty, after)) = rest.split_once('}') else {
            continue;
        };
        let name = after
            .trim_start()
            .trim_start_matches('[')
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .next()
            .unwrap_or("");
        if x.is_some_and(|x| name != x) {
            continue;
        }
        let mut members = ty
            .split('|')
            .map(str::trim)
            .filter(|t| !matches!(*t, "null" | "undefined" | ""));
        let (Some(one), None) = (members.next(), members.next()) else {
            return None;
        };
        let one = one.trim_start_matches('?');
        let ok = one.chars().next().is_some_and(char::is_uppercase)
            && one
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.');
        return ok.then(|| one.rsplit('.').next().unwrap_or(one).to_string());
    }
    None
}

/// The type a type's body declares for its field `x`: `T x;` / `T x =` (Java, C#), `x: T`
/// (TypeScript, Kotlin, Python class annotations), `x *T` (Go struct fields).
pub(super) fn field_type(body: &str, x: &str) -> Option<String> {
    let mut found: Option<String> = None;
    for i in word_at(body, x) {
        let line_before = body[..i].rsplit('\n').next().unwrap_or("");
        let after = body[i + x.len()..].trim_start();
        let ty = if let Some(t) = after
            .strip_prefix(['?', '!'])
            .unwrap_or(after)
            .strip_prefix(':')
        {
            // `private x: T;`: modifiers, or nothing, before it on its line.
            let words_ok = line_before.split_whitespace().all(|w| {
                matches!(
                    w,
                    "private"
                        | "public"
                        | "protected"
                        | "readonly"
                        | "static"
                        | "val"
                        | "var"
                        | "let"
                        | "lateinit"
                        | "internal"
                        | "override"
                        | "declare"
                )
            });
            (words_ok && !t.starts_with([':', '=']))
                .then(|| type_name(t))
                .flatten()
        } else if after.starts_with([';', '=']) && !after.starts_with("==") {
            // `private final T x;`.
            type_name(type_word_before(line_before.trim_end()))
        } else if line_before.trim().is_empty() && after.starts_with(['*']) {
            // Go: `db *Store`.
            type_name(after)
        } else {
            None
        };
        if let Some(t) = ty.filter(|t| t.chars().next().is_some_and(char::is_uppercase)) {
            if found.as_ref().is_some_and(|f| *f != t) {
                return None;
            }
            found = Some(t);
        }
    }
    found
}

/// The type of the last `x = T(...)` / `x = new T(...)` / `x := T{...}` / `T x = ...` in `body`
/// (a constructor by its capital).
pub(super) fn assigned_type(
    body: &str,
    x: &str,
    returns: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let mut found: Option<String> = None;
    let mut agree = true;
    let mut note = |ty: String| {
        if found.as_ref().is_some_and(|f| *f != ty) {
            agree = false;
        }
        found = Some(ty);
    };
    for i in word_at(body, x) {
        let after = body[i + x.len()..].trim_start();
        // `x: T = ...` declares it (a declaration: first on its line, or after `let`/`const`...,
        // not an object literal's key).
        let line_before = body[..i].rsplit('\n').next().unwrap_or("").trim();
        // (Or a parameter of a function inside, an arrow's: `(subscriber: Subscriber<T>) =>`.)
        let declares = line_before.is_empty()
            || line_before.ends_with('(')
            || ["let", "const", "var", "val", "mut"]
                .iter()
                .any(|k| line_before.ends_with(k));
        if let Some(t) = after.strip_prefix(':')
            && declares
            && !t.starts_with([':', '='])
            && let Some(ty) = type_name(t)
            && ty.chars().next().is_some_and(char::is_uppercase)
        {
            note(ty);
            continue;
        }
        let Some(rhs) = after
            .strip_prefix(":=")
            .or_else(|| after.strip_prefix('=').filter(|r| !r.starts_with('=')))
        else {
            continue;
        };
        let rhs = rhs.trim_start();
        let rhs = rhs.strip_prefix("new ").unwrap_or(rhs).trim_start();
        let rhs = rhs.strip_prefix('&').unwrap_or(rhs);
        let end = rhs
            .find(|c: char| !(is_ident(c) || c == '.' || c == ':'))
            .unwrap_or(rhs.len());
        if rhs[end..].starts_with(['(', '{', '<'])
            && let Some(ty) = type_name(&rhs[..end])
        {
            if ty.chars().next().is_some_and(char::is_uppercase) {
                note(ty);
            } else if rhs[end..].starts_with('(')
                && let Some(ret) = returns(&ty)
            {
                // `helper = this.createHelp()`: what the file's one `createHelp` returns.
                note(ret);
            }
        }
    }
    // Assigned two types: which one a call sees is the flow's to say.
    if agree { found } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_types_jsdoc_declares_for_a_parameter() {
        // JSDoc above a function, a blank line between allowed.
        let js = "/**\n * Pad.\n * @param {Command} cmd\n * @param {Help|undefined} [helper]\n * @param {string|number} w\n */\n\n";
        let at = js.len();
        let src = format!("{js}padWidth(cmd, helper, w) {{}}");
        let j = |x: &str| jsdoc_param(&src, at, x);
        assert_eq!(j("cmd").as_deref(), Some("Command"));
        assert_eq!(j("helper").as_deref(), Some("Help"));
        assert_eq!(j("w"), None, "a union of two types names neither");
        assert_eq!(j("other"), None);
        assert_eq!(jsdoc_param("/* not jsdoc */ f(a) {}", 16, "a"), None);
    }

    #[test]
    fn the_types_a_signature_declares_for_a_parameter() {
        let d = |sig: &str, x: &str| declared_type(sig, x);
        assert_eq!(d("def f(app: Flask, n):", "app").as_deref(), Some("Flask"));
        assert_eq!(
            d("def f(app: \"flask.Flask\"):", "app").as_deref(),
            Some("Flask")
        );
        assert_eq!(
            d("function f(s: Subscriber<T>, o?: Observer<T>)", "o").as_deref(),
            Some("Observer")
        );
        assert_eq!(d("fn f(&self, g: &mut Glob)", "g").as_deref(), Some("Glob"));
        assert_eq!(
            d(
                "public void f(CordovaWebViewEngine engine, List<String> xs)",
                "engine"
            )
            .as_deref(),
            Some("CordovaWebViewEngine")
        );
        assert_eq!(d("public void f(Map<K, V> m)", "m").as_deref(), Some("Map"));
        assert_eq!(
            d("func (s *Server) Run(c *Command, n int)", "c").as_deref(),
            Some("Command")
        );
        assert_eq!(d("def f(n):", "n"), None);
        assert_eq!(
            d("def f(appx: Flask):", "app"),
            None,
            "a longer name is another name"
        );
        assert_eq!(d("fn f(g: &'a mut Glob)", "g").as_deref(), Some("Glob"));
        assert_eq!(
            d("void f(\u{20ac}Engine e)", "e").as_deref(),
            Some("Engine"),
            "past a multibyte character, without a panic"
        );
    }

    #[test]
    fn the_types_an_assignment_declares_for_a_name() {
        let a = |body: &str, x: &str| assigned_type(body, x, &|_| None);
        assert_eq!(
            a("app = Flask(__name__)\napp.run()", "app").as_deref(),
            Some("Flask")
        );
        assert_eq!(
            a("const s = new Subscriber(o);", "s").as_deref(),
            Some("Subscriber")
        );
        assert_eq!(
            a("c := Command{Use: \"x\"}", "c").as_deref(),
            Some("Command")
        );
        assert_eq!(a("let g: Glob = make();", "g").as_deref(), Some("Glob"));
        assert_eq!(
            a("x = make()\nx == Foo()", "x"),
            None,
            "a call, and a comparison"
        );
        assert_eq!(
            a("app = Flask()\napp.run()\napp = Other()", "app"),
            None,
            "two types"
        );
        assert_eq!(
            a("def __init__(self):\n    self.db = Database()\n", "self.db").as_deref(),
            Some("Database")
        );
        assert_eq!(
            a("f({engine: Engine})", "engine"),
            None,
            "an object literal's key"
        );
    }

    #[test]
    fn the_types_a_body_declares_for_a_field() {
        let f = |body: &str, x: &str| field_type(body, x);
        assert_eq!(
            f(
                "class A {\n  protected final CordovaWebViewEngine engine;\n}",
                "engine"
            )
            .as_deref(),
            Some("CordovaWebViewEngine")
        );
        assert_eq!(
            f("class A {\n  private store: Store;\n}", "store").as_deref(),
            Some("Store")
        );
        assert_eq!(
            f("type S struct {\n\tdb *Store\n}", "db").as_deref(),
            Some("Store")
        );
        assert_eq!(f("Foo x;\nBar x;", "x"), None, "declared two ways");
        assert_eq!(f("if (x == y) { x = 1; }", "x"), None);
    }
}
