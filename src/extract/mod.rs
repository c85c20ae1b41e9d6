//! Extract stage: the code-aware BM25 tokenizer, and ([`deps`]) dependencies from package manifests.
//!
//! Input: text (a chunk at index time, the query at query time — the same function, so both sides
//! agree). Output: lower-cased tokens. An identifier is kept whole and also split on `_` and case
//! changes: `parseHTTPRequest` → `parsehttprequest`, `parse`, `http`, `request`. Invariants: tokens are
//! non-empty, at most `max_len` bytes, and deterministic.

pub mod deps;
pub mod imports;
pub mod secrets;
pub mod summary;

/// Tokenizer name and version, stamped into the manifest; a change here changes it.
pub const TOKENIZER: &str = "code-v1";

/// Calls `emit` for each token of `text`.
pub fn tokenize(text: &str, max_len: usize, mut emit: impl FnMut(&str)) {
    let mut buf = String::new();
    let mut parts: Vec<(usize, usize)> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.trim_matches('_');
        if word.is_empty() || word.len() > max_len {
            continue;
        }
        buf.clear();
        buf.extend(word.chars().flat_map(char::to_lowercase));
        emit(&buf);
        split_parts(word, &mut parts);
        if parts.len() > 1 {
            for &(s, e) in &parts {
                let part = &word[s..e];
                if part.chars().count() < 2 {
                    continue;
                }
                buf.clear();
                buf.extend(part.chars().flat_map(char::to_lowercase));
                emit(&buf);
            }
        }
    }
}

/// Tokens of `text` as owned strings (tests, queries).
pub fn tokens(text: &str, max_len: usize) -> Vec<String> {
    let mut v = Vec::new();
    tokenize(text, max_len, |t| v.push(t.to_string()));
    v
}

/// Byte ranges of the sub-words of an identifier: split at `_`, at lower→upper (`fooBar`), at the
/// end of an acronym (`HTTPServer` → `HTTP`, `Server`) and between letters and digits runs are kept.
fn split_parts(word: &str, out: &mut Vec<(usize, usize)>) {
    out.clear();
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut start: Option<usize> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c == '_' {
            if let Some(s) = start.take() {
                out.push((s, i));
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let prev = chars[k - 1].1;
        let next = chars.get(k + 1).map(|&(_, n)| n);
        let boundary = (prev.is_lowercase() || prev.is_ascii_digit()) && c.is_uppercase()
            || prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
        if boundary {
            out.push((s, i));
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push((s, word.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_whole_and_split() {
        assert_eq!(
            tokens("parseHTTPRequest", 64),
            ["parsehttprequest", "parse", "http", "request"]
        );
        assert_eq!(
            tokens("max_file_bytes", 64),
            ["max_file_bytes", "max", "file", "bytes"]
        );
        assert_eq!(tokens("__init__", 64), ["init"]);
        assert_eq!(tokens("a.b(c)", 64), ["a", "b", "c"]);
        assert_eq!(
            tokens("UserService::new", 64),
            ["userservice", "user", "service", "new"]
        );
    }

    #[test]
    fn long_tokens_dropped_unicode_lowered() {
        let long = "x".repeat(65);
        assert!(tokens(&long, 64).is_empty());
        assert_eq!(tokens("Größe", 64), ["größe"]);
    }
}
