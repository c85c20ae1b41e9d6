//! The one path-glob dialect of trove: `trove index --include`/`--exclude` (and the `[source]`
//! globs) match with globset ([`globset`]), the query filters' `--path` inside DuckDB with the
//! regular expressions of [`glob_regex`]; both read the same syntax and match the same paths (a
//! test below holds the two matchers to each other): `*` (also across `/`), `**/` (any folders,
//! none included), `?`, `[...]`, `[!...]` or `[^...]`, `\` (the next character literally),
//! `{a,b}` alternatives, and a plain path names that file or everything under that folder.
use crate::{Error, Result};
use globset::{GlobSet, GlobSetBuilder};

/// Checks a `--path` glob (see [`expand_glob`]): what DuckDB would quietly match nothing with is
/// an error.
pub fn check_glob(glob: &str) -> Result<()> {
    expand_glob(glob).map(|_| ())
}

/// At most this many patterns from one `--path` glob's `{a,b}` alternatives.
const MAX_GLOB_PATTERNS: usize = 256;

/// At most this many `{...}` groups in one `--path` glob. Expansion recurses once per group (nested
/// or one after another), so this bounds its stack: a glob from an HTTP or MCP client must not
/// be able to overflow a worker's stack, which aborts the whole server. Nine groups of two
/// alternatives already pass [`MAX_GLOB_PATTERNS`].
const MAX_GLOB_GROUPS: usize = 64;

/// A `--path` glob as the patterns it stands for (this module's dialect), its `{a,b}`
/// alternatives (nested too, which `--include` does not take) expanded to one pattern each. An
/// empty glob, an unclosed `[` or `{`, a `}` with no `{`, a reversed range (`[z-a]`) and a
/// trailing `\` are errors: DuckDB would match nothing.
pub fn expand_glob(glob: &str) -> Result<Vec<String>> {
    let g = Glob {
        text: glob,
        c: glob.chars().collect(),
    };
    if glob.is_empty() {
        return Err(g.bad("it is empty".into()));
    }
    if glob.contains('\0') {
        return Err(g.bad("it contains a NUL character".into()));
    }
    // Paths in a bundle are relative to the repository root: `./` before one is the same path,
    // a `/` before one matches nothing.
    let rel = glob.trim_start_matches("./");
    if rel.starts_with('/') {
        return Err(g.bad(
            "paths in a bundle are relative to the repository root (write src/*.py, not /src/*.py)"
                .into(),
        ));
    }
    // Parts are what lies between slashes only outside `[...]` and escapes: such globs are
    // taken as written.
    let plain_parts = !rel.contains(['[', '\\']);
    if plain_parts && rel.split('/').any(|part| part == "..") {
        return Err(g.bad(
            "paths in a bundle are relative to the repository root and never hold `..` (write \
             the path from the root: src/*.py)"
                .into(),
        ));
    }
    // `a//b` and `a/./b` are `a/b`, as a shell has them.
    let rel: String = if plain_parts {
        rel.split('/')
            .enumerate()
            .filter(|(i, part)| *i == 0 || (!part.is_empty() && *part != "."))
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join("/")
    } else {
        rel.to_string()
    };
    let rel = rel.as_str();
    // A path with no glob characters is that file or what lies under that folder (`src/http`:
    // not `src/https`, and not nothing), as a user and an agent mean it.
    if !rel.contains(['*', '?', '[', '{', '}', '\\']) {
        let p = rel.trim_end_matches('/');
        if p.is_empty() || p == "." {
            return Ok(vec!["*".to_string()]);
        }
        return Ok(vec![p.to_string(), format!("{p}/*")]);
    }
    let g = Glob {
        text: glob,
        c: rel.chars().collect(),
    };
    let mut groups = 0;
    let mut i = 0;
    while i < g.c.len() {
        match g.c[i] {
            '\\' => i += 1,
            '[' => i = g.class_end(i)?,
            '{' => groups += 1,
            _ => {}
        }
        i += 1;
    }
    if groups > MAX_GLOB_GROUPS {
        return Err(g.bad(format!(
            "it has {groups} '{{' groups, more than {MAX_GLOB_GROUPS} (to match a literal '{{' \
             write \\{{)"
        )));
    }
    let mut out = Vec::new();
    g.expand(0, g.c.len(), String::new(), &mut out)?;
    // `web/**` is everything under `web`, so it names `web` itself too (as `--include` has it).
    let folders: Vec<String> = out
        .iter()
        .filter_map(|p| p.strip_suffix("/**"))
        .filter(|d| !d.is_empty() && !d.ends_with('\\'))
        .map(str::to_string)
        .collect();
    out.extend(folders);
    out.dedup();
    Ok(out)
}

/// One pattern of [`expand_glob`] as the regular expression (RE2, as DuckDB's
/// `regexp_full_match` reads it) that matches the same paths character by character: DuckDB's
/// `GLOB` compares bytes, so `?` and `[ü]` never matched a character of two bytes.
pub fn glob_regex(pattern: &str) -> String {
    let c: Vec<char> = pattern.chars().collect();
    let mut re = String::from("(?s)");
    let lit = |ch: char| regex::escape(ch.encode_utf8(&mut [0; 4]));
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' if i + 1 < c.len() => {
                re.push_str(&lit(c[i + 1]));
                i += 2;
            }
            // `**/` as a whole folder name: any folders, none included (`src/**/*.rs` matches
            // `src/main.rs`), as globset reads it for `--include`.
            '*' if c[i..].starts_with(&['*', '*', '/']) && (i == 0 || c[i - 1] == '/') => {
                re.push_str("(?:.*/)?");
                i += 3;
            }
            '*' => {
                re.push_str(".*");
                i += 1;
            }
            '?' => {
                re.push('.');
                i += 1;
            }
            '[' => {
                // As `Glob::class_end` reads it: `!` negates, a `]` first is a member.
                let mut j = i + 1;
                re.push('[');
                if matches!(c.get(j), Some('!' | '^')) {
                    re.push('^');
                    j += 1;
                }
                let first = j;
                while j < c.len() && (c[j] != ']' || j == first) {
                    let ch = c[j];
                    let range = ch == '-' && j > first && c.get(j + 1).is_some_and(|&n| n != ']');
                    if range {
                        re.push('-');
                    } else if matches!(ch, '\\' | ']' | '[' | '^' | '-') {
                        re.push('\\');
                        re.push(ch);
                    } else {
                        re.push(ch);
                    }
                    j += 1;
                }
                re.push(']');
                i = j + 1;
            }
            ch => {
                re.push_str(&lit(ch));
                i += 1;
            }
        }
    }
    re
}

/// A `--path` glob being read by [`expand_glob`].
struct Glob<'a> {
    text: &'a str,
    c: Vec<char>,
}

impl Glob<'_> {
    fn bad(&self, why: String) -> Error {
        Error::bad_input(format!("invalid path glob {:?}: {why}", self.text))
    }

    /// The index of the `]` that closes the `[` at `i`, its ranges checked.
    fn class_end(&self, i: usize) -> Result<usize> {
        let c = &self.c;
        let mut j = i + 1;
        if matches!(c.get(j), Some('!' | '^')) {
            j += 1;
        }
        // A `]` right after the opening is a member of the class, not its end.
        let first = j;
        if c.get(j) == Some(&']') {
            j += 1;
        }
        let Some(k) = c[j..].iter().position(|&x| x == ']') else {
            return Err(self.bad(format!(
                "the '[' at position {} is never closed (to match a literal '[' write [[])",
                i + 1
            )));
        };
        let members = &c[first..j + k];
        for w in 0..members.len().saturating_sub(2) {
            if members[w + 1] == '-' && members[w] > members[w + 2] {
                return Err(self.bad(format!(
                    "the range {}-{} at position {} is reversed",
                    members[w],
                    members[w + 2],
                    first + w + 1
                )));
            }
        }
        Ok(j + k)
    }

    /// The index of the `}` that closes the `{` at `i`, and the commas at its level.
    fn brace_end(&self, i: usize) -> Result<(usize, Vec<usize>)> {
        let (mut depth, mut commas, mut j) = (0usize, Vec::new(), i);
        while j < self.c.len() {
            match self.c[j] {
                '\\' => j += 1,
                '[' => j = self.class_end(j)?,
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok((j, commas));
                    }
                }
                ',' if depth == 1 => commas.push(j),
                _ => {}
            }
            j += 1;
        }
        Err(self.bad(format!(
            "the '{{' at position {} is never closed (to match a literal '{{' write \\{{)",
            i + 1
        )))
    }

    /// Expands `c[from..to]` after `prefix` into `out`.
    fn expand(&self, from: usize, to: usize, prefix: String, out: &mut Vec<String>) -> Result<()> {
        let c = &self.c;
        let mut p = prefix;
        let mut i = from;
        while i < to {
            match c[i] {
                '\\' => {
                    if i + 1 >= to {
                        return Err(self.bad("it ends in an escape '\\'".into()));
                    }
                    p.push('\\');
                    p.push(c[i + 1]);
                    i += 2;
                }
                '[' => {
                    let end = self.class_end(i)?;
                    p.extend(&c[i..=end]);
                    i = end + 1;
                }
                '{' => {
                    let (end, commas) = self.brace_end(i)?;
                    let starts = std::iter::once(i + 1).chain(commas.iter().map(|&k| k + 1));
                    let ends = commas.iter().copied().chain(std::iter::once(end));
                    for (s, e) in starts.zip(ends) {
                        // Each alternative, then the rest of the glob after the braces.
                        let mut heads = Vec::new();
                        self.expand(s, e, p.clone(), &mut heads)?;
                        for h in heads {
                            self.expand(end + 1, to, h, out)?;
                            if out.len() > MAX_GLOB_PATTERNS {
                                return Err(self.bad(format!(
                                    "its {{...}} alternatives make more than {MAX_GLOB_PATTERNS} \
                                     patterns"
                                )));
                            }
                        }
                    }
                    return Ok(());
                }
                '}' => {
                    return Err(self.bad(format!("the '}}' at position {} has no '{{'", i + 1)));
                }
                ch => {
                    p.push(ch);
                    i += 1;
                }
            }
        }
        out.push(p);
        Ok(())
    }
}

/// The globs of a config key or an option (`what`, for errors) as one matcher, in globset's
/// syntax, which is this module's: `*` (also across `/`), `**`, `?`, `[...]`, `[!...]`, `\\`, and
/// `{a,b}` alternatives. An empty glob is an error.
pub fn globset(globs: &[String], what: &str) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        if g.trim().is_empty() {
            return Err(Error::Config(format!("{what} glob {g:?} is empty")));
        }
        b.add(globset::Glob::new(g).map_err(|e| Error::Config(format!("{what} glob {g:?}: {e}")))?);
    }
    b.build().map_err(|e| Error::Config(format!("{what}: {e}")))
}

/// `web/**` excludes everything under `web`, so it also names `web` itself: the walk then prunes the
/// directory (one `skipped` row) instead of visiting and skipping every file below it.
/// A folder's name (`web`, or `web/` as .gitignore writes it) names everything under it too
/// (`web/**`): `--exclude web/` excluded nothing, `--include src` nothing but a file named `src`.
pub fn with_dir_forms(globs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for g in globs {
        let g = match g.trim_end_matches('/') {
            "" => g.as_str(),
            t => t,
        };
        out.push(g.to_string());
        match g.strip_suffix("/**") {
            Some(d) if !d.is_empty() => out.push(d.to_string()),
            Some(_) => {}
            None => out.push(format!("{g}/**")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two matchers of the dialect agree: a `--path` glob through [`expand_glob`] and
    /// [`glob_regex`] (read here by the `regex` crate, whose syntax for these patterns is RE2's)
    /// matches the paths the same glob as an `--include` ([`globset`] over [`with_dir_forms`])
    /// does.
    #[test]
    fn path_and_include_globs_match_the_same_paths() {
        let globs = [
            "src/*.rs",
            "*.py",
            "src/**/*.rs",
            "**/test_*.py",
            "src",
            "src/",
            "web/**",
            "{api,web}/*",
            "billing/[bc]*.py",
            "billing/[!b]*.py",
            "billing/[^b]*.py",
            "a\\*b",
            "docs/?.md",
            "*/*/x.go",
            "**",
            "*",
            "src/**",
            "**/*.{py,ts}",
            "tests/**/x",
        ];
        let paths = [
            "src/main.rs",
            "src/a/b.rs",
            "src/a/b/c.rs",
            "main.rs",
            "x.py",
            "a/x.py",
            "src",
            "srcx/a.rs",
            "api/server.go",
            "web/app.ts",
            "web/a/b.ts",
            "cli/x",
            "billing/billing.py",
            "billing/charge.py",
            "billing/a.py",
            "a*b",
            "aXb",
            "docs/a.md",
            "docs/ab.md",
            "tests/test_x.py",
            "test_x.py",
            "a/test_x.py",
            "a/b/x.go",
            "a/x.go",
            "tests/x",
            "tests/a/b/x",
            "ü/ß.py",
        ];
        for g in globs {
            let include = globset(&with_dir_forms(&[g.to_string()]), "--include").unwrap();
            let res: Vec<regex::Regex> = expand_glob(g)
                .unwrap()
                .iter()
                .map(|p| regex::Regex::new(&format!("^(?:{})$", glob_regex(p))).unwrap())
                .collect();
            for p in paths {
                let by_path = res.iter().any(|r| r.is_match(p));
                assert_eq!(by_path, include.is_match(p), "glob {g:?} on {p:?}");
            }
        }
    }

    #[test]
    fn globs_with_unclosed_classes_are_refused() {
        for ok in ["src/*.rs", "[a-z]*", "[!x]y", "[]]", "a[[]b", "*"] {
            assert!(check_glob(ok).is_ok(), "{ok}");
        }
        for bad in [
            "[", "src/[a-z", "[!", "a[]", "", "**/{a", "a}", "[z-a]", "x\\", "{a,{b}", "{[}",
            "{a,b}}",
        ] {
            assert!(check_glob(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn glob_patterns_become_character_regexes() {
        let m = |glob: &str, path: &str| {
            regex::Regex::new(&format!("^(?:{})$", glob_regex(glob)))
                .unwrap()
                .is_match(path)
        };
        assert!(m("ünï/?.py", "ünï/ç.py"));
        assert!(m("[ü]nï/*", "ünï/ç.py"));
        assert!(!m("ünï/?.py", "ünï/çç.py"));
        assert!(m("src/*.rs", "src/a/b.rs"));
        assert!(m("a[!b]c", "axc") && !m("a[!b]c", "abc"));
        assert!(m("[]x]", "]") && m("[a-c]", "b") && m("[a-]", "-"));
        assert!(m("a\\*b", "a*b") && !m("a\\*b", "axb"));
        assert!(m("f(1).py", "f(1).py") && !m("f.py", "fxpy"));
    }

    #[test]
    fn globs_expand_their_alternatives() {
        let e = |g: &str| expand_glob(g).unwrap();
        assert_eq!(e("src/*.rs"), ["src/*.rs"]);
        assert_eq!(e("./src/*.rs"), ["src/*.rs"]);
        // A plain path: the file, or what lies under the folder.
        assert_eq!(e("src/http"), ["src/http", "src/http/*"]);
        assert_eq!(e("./src/http/"), ["src/http", "src/http/*"]);
        assert_eq!(e("."), ["*"]);
        assert!(expand_glob("/src").is_err() && expand_glob("/src/*.py").is_err());
        // `..` leads out of the tree: refused; doubled slashes and `.` parts are one slash.
        for up in ["../billing", "src/../x", "src/..", "**/../*.py"] {
            let err = expand_glob(up).unwrap_err().to_string();
            assert!(err.contains("never hold `..`"), "{up}: {err}");
        }
        assert_eq!(
            e("billing//billing.py"),
            ["billing/billing.py", "billing/billing.py/*"]
        );
        assert_eq!(e("src/./lib//*.rs"), ["src/lib/*.rs"]);
        // A class may hold `/` and `.`: such a glob is taken as written.
        assert_eq!(e("src[/./]x"), ["src[/./]x"]);
        assert_eq!(e("**/*.{py,go}"), ["**/*.py", "**/*.go"]);
        assert_eq!(e("{a,b{c,d}}/x"), ["a/x", "bc/x", "bd/x"]);
        assert_eq!(e("{a,}x"), ["ax", "x"]);
        // Escaped and bracketed braces are literal; the escape stays for DuckDB.
        assert_eq!(e("a\\{b,c\\}"), ["a\\{b,c\\}"]);
        assert_eq!(e("[{]x"), ["[{]x"]);
        assert_eq!(e("{[,]a,b}"), ["[,]a", "b"]);
        assert_eq!(e("[a-z]{1,2}"), ["[a-z]1", "[a-z]2"]);
        assert!(expand_glob(&"{a,b}".repeat(9)).is_err());
        assert_eq!(expand_glob(&"{a,b}".repeat(8)).unwrap().len(), 256);
        // Deep or many groups are refused before expansion recurses into them: a glob from an
        // HTTP client must not overflow the stack (which aborts the server).
        let deep = format!("{}{}", "{".repeat(30_000), "}".repeat(30_000));
        assert!(
            expand_glob(&deep)
                .unwrap_err()
                .to_string()
                .contains("more than 64")
        );
        assert!(expand_glob(&"{a}".repeat(65)).is_err());
        assert_eq!(
            expand_glob(&"{a}".repeat(64)).unwrap(),
            vec!["a".repeat(64)]
        );
        assert_eq!(expand_glob(&"\\{".repeat(100)).unwrap().len(), 1);
    }
}
