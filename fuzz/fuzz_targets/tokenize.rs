//! The BM25 tokenizer on any text: tokens are non-empty words (no separators), never longer than
//! `max_len` before lowercasing (lowercasing a char gives at most 3), and the same as the
//! char-by-char reference (the ASCII fast path changes nothing).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let max = 1 + data.first().copied().unwrap_or(63) as usize % 64;
    let mut got = Vec::new();
    trove::extract::tokenize(&text, max, |t| {
        assert!(!t.is_empty(), "empty token");
        assert!(t.chars().count() <= 3 * max, "{t:?} longer than {max}");
        assert!(!t.chars().any(char::is_whitespace), "{t:?}");
        got.push(t.to_string());
    });
    assert_eq!(got, trove::extract::reference_tokens(&text, max));
});
