//! The code-aware BM25 tokenizer: the same function tokenizes a chunk at index time and the query
//! at query time, so both sides agree, and its name ([`TOKENIZER`]) is stamped into the manifest.
//!
//! An identifier is kept whole and also split on `_` and case changes: `parseHTTPRequest` →
//! `parsehttprequest`, `parse`, `http`, `request`. Invariants: tokens are non-empty, at most
//! `max_len` bytes, and deterministic.

/// Tokenizer name and version, stamped into the manifest; a change here changes it.
pub const TOKENIZER: &str = "code-v1";

/// Calls `emit` for each token of `text`.
pub fn tokenize(text: &str, max_len: usize, mut emit: impl FnMut(&str)) {
    let mut buf = String::new();
    let mut parts: Vec<(usize, usize)> = Vec::new();
    for word in words(text) {
        let word = trim_underscores(word);
        if word.is_empty() || word.len() > max_len {
            continue;
        }
        // Code is mostly ASCII: bytes, no char decoding or Unicode case tables. The same tokens
        // as the general path (for ASCII, the Unicode and ASCII case rules agree).
        let ascii = word.is_ascii();
        let lower = |buf: &mut String, w: &str| {
            buf.clear();
            if ascii {
                buf.push_str(w);
                buf.make_ascii_lowercase();
            } else {
                buf.extend(w.chars().flat_map(char::to_lowercase));
            }
        };
        lower(&mut buf, word);
        emit(&buf);
        // An ASCII word without `_` or capitals is one sub-word: nothing more to emit.
        if ascii && !word.bytes().any(|c| c == b'_' || c.is_ascii_uppercase()) {
            continue;
        }
        split_parts(word, ascii, &mut parts);
        if parts.len() > 1 {
            for &(s, e) in &parts {
                let part = &word[s..e];
                let short = if ascii {
                    part.len() < 2
                } else {
                    part.chars().count() < 2
                };
                if short {
                    continue;
                }
                lower(&mut buf, part);
                emit(&buf);
            }
        }
    }
}

/// `word` without its leading and trailing `_` (`trim_matches('_')` on bytes: `_` is ASCII).
fn trim_underscores(word: &str) -> &str {
    let b = word.as_bytes();
    let (mut s, mut e) = (0, b.len());
    while s < e && b[s] == b'_' {
        s += 1;
    }
    while e > s && b[e - 1] == b'_' {
        e -= 1;
    }
    &word[s..e]
}

/// Which ASCII bytes belong to a word: alphanumerics and `_`.
const ASCII_WORD: [bool; 128] = {
    let mut t = [false; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_';
        c += 1;
    }
    t
};

/// The runs of `text` made of alphanumeric characters and `_` (what `split` on every other
/// character yields, without the empty pieces), scanning ASCII as bytes.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut i = 0;
    // Whether the character at byte `i` belongs to a word, and its length.
    let at = move |i: usize| -> (bool, usize) {
        let c = b[i];
        if c.is_ascii() {
            (ASCII_WORD[c as usize], 1)
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            (ch.is_alphanumeric(), ch.len_utf8())
        }
    };
    std::iter::from_fn(move || {
        loop {
            let &c = b.get(i)?;
            if c.is_ascii() {
                if ASCII_WORD[c as usize] {
                    break;
                }
                i += 1;
            } else {
                let (word, len) = at(i);
                if word {
                    break;
                }
                i += len;
            }
        }
        let start = i;
        while let Some(&c) = b.get(i) {
            if c.is_ascii() {
                if !ASCII_WORD[c as usize] {
                    break;
                }
                i += 1;
            } else {
                let (word, len) = at(i);
                if !word {
                    break;
                }
                i += len;
            }
        }
        Some(&text[start..i])
    })
}

/// A chunk's term counts, keyed by each term's 64-bit hash (the caller's, e.g. the hash
/// embedder's FNV-1a): a term already seen costs an integer lookup and a compare, not a string
/// hash. Exact: a term whose hash is another term's is counted on its own.
#[derive(Debug, Default)]
pub struct TermCounts {
    index: rustc_hash::FxHashMap<u64, u32>,
    terms: Vec<(String, u32)>,
    collided: rustc_hash::FxHashMap<String, u32>,
}

impl TermCounts {
    /// Counts one occurrence of `term`, whose hash is `hash`.
    pub fn add(&mut self, term: &str, hash: u64) {
        match self.index.entry(hash) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let slot = &mut self.terms[*e.get() as usize];
                if slot.0 == term {
                    slot.1 += 1;
                } else {
                    *self.collided.entry(term.to_string()).or_default() += 1;
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.terms.len() as u32);
                self.terms.push((term.to_string(), 1));
            }
        }
    }

    /// The distinct terms with their counts (in no particular order).
    pub fn into_terms(self) -> Vec<(String, u32)> {
        let mut v = self.terms;
        v.extend(self.collided);
        v
    }
}

/// Tokens of `text` as owned strings (tests, queries).
pub fn tokens(text: &str, max_len: usize) -> Vec<String> {
    let mut v = Vec::new();
    tokenize(text, max_len, |t| v.push(t.to_string()));
    v
}

/// The tokenizer char by char, without the ASCII fast path: the reference [`tokenize`] must agree
/// with (the unit tests and the `tokenize` fuzz target compare them).
#[doc(hidden)]
pub fn reference_tokens(text: &str, max_len: usize) -> Vec<String> {
    let mut v = Vec::new();
    let mut parts = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.trim_matches('_');
        if word.is_empty() || word.len() > max_len {
            continue;
        }
        v.push(word.chars().flat_map(char::to_lowercase).collect());
        split_parts(word, false, &mut parts);
        if parts.len() > 1 {
            for &(s, e) in &parts {
                let part = &word[s..e];
                if part.chars().count() >= 2 {
                    v.push(part.chars().flat_map(char::to_lowercase).collect());
                }
            }
        }
    }
    v
}

/// What a character is to the sub-word rule.
#[derive(Clone, Copy, PartialEq)]
enum Case {
    Lower,
    Upper,
    Digit,
    Underscore,
    Other,
}

/// Byte ranges of the sub-words of an identifier: split at `_`, at lower→upper (`fooBar`), at the
/// end of an acronym (`HTTPServer` → `HTTP`, `Server`) and between letters and digits runs are kept.
/// `ascii`: the word is ASCII and is read as bytes (the same cases: for ASCII, the Unicode and
/// ASCII case rules agree), else char by char.
fn split_parts(word: &str, ascii: bool, out: &mut Vec<(usize, usize)>) {
    if ascii {
        let case = |b: u8| match b {
            b'_' => Case::Underscore,
            b'a'..=b'z' => Case::Lower,
            b'A'..=b'Z' => Case::Upper,
            b'0'..=b'9' => Case::Digit,
            _ => Case::Other,
        };
        split_by_case(word.bytes().map(case).enumerate(), word.len(), out);
    } else {
        let case = |(i, c): (usize, char)| {
            let k = if c == '_' {
                Case::Underscore
            } else if c.is_lowercase() {
                Case::Lower
            } else if c.is_uppercase() {
                Case::Upper
            } else if c.is_ascii_digit() {
                Case::Digit
            } else {
                Case::Other
            };
            (i, k)
        };
        split_by_case(word.char_indices().map(case), word.len(), out);
    }
}

/// [`split_parts`] over (byte offset, case) of each character of a word `len` bytes long.
fn split_by_case(
    cases: impl Iterator<Item = (usize, Case)>,
    len: usize,
    out: &mut Vec<(usize, usize)>,
) {
    out.clear();
    let mut cases = cases.peekable();
    let mut start: Option<usize> = None;
    let mut prev = Case::Other;
    while let Some((i, c)) = cases.next() {
        let was = std::mem::replace(&mut prev, c);
        if c == Case::Underscore {
            if let Some(s) = start.take() {
                out.push((s, i));
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let next = cases.peek().map(|&(_, n)| n);
        let boundary = matches!(was, Case::Lower | Case::Digit) && c == Case::Upper
            || was == Case::Upper && c == Case::Upper && next == Some(Case::Lower);
        if boundary {
            out.push((s, i));
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push((s, len));
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
    fn fast_path_gives_the_reference_tokens() {
        let samples = [
            "fn parseHTTPRequest(max_file_bytes: u64) -> Result<XMLHttpRequest2> { a.b(c) }",
            "__init__ _x_ x__y HTTPServer getX2Y v2Api ABCdef aB Ab AB a1B2 ___",
            "Größe straße ÄÖÜ naïveCase caféBar ΣΊΣΥΦΟΣ 日本語テキスト mixedÉtat_Ünter",
            "tabs\tand\r\nlines; punctuation!@#$%^&*()[]{}<>?/\\|`~'\" 123 4.5e6 0xFF",
            "a\u{2028}b\u{00a0}c é\u{301} emoji🙂word x_🙂_y ſ K İstanbul",
            "",
        ];
        for s in samples {
            for max in [64, 5, 1] {
                assert_eq!(tokens(s, max), reference_tokens(s, max), "{s:?} max {max}");
            }
        }
        // Every byte sequence that is valid UTF-8 in a pseudo-random stream of mixed scripts.
        let alphabet: Vec<char> = "aZ_9 .éÉßİſK🙂日_Xy\n\tQ".chars().collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            let mut s = String::new();
            for _ in 0..24 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            assert_eq!(tokens(&s, 64), reference_tokens(&s, 64), "{s:?}");
        }
    }

    #[test]
    fn term_counts_are_exact_when_hashes_collide() {
        let mut c = TermCounts::default();
        for (t, h) in [("a", 1), ("b", 1), ("a", 1), ("c", 2), ("b", 1)] {
            c.add(t, h);
        }
        let mut v = c.into_terms();
        v.sort();
        assert_eq!(v, [("a".into(), 2), ("b".into(), 2), ("c".into(), 1)]);
    }

    #[test]
    fn long_tokens_dropped_unicode_lowered() {
        let long = "x".repeat(65);
        assert!(tokens(&long, 64).is_empty());
        assert_eq!(tokens("Größe", 64), ["größe"]);
    }
}
