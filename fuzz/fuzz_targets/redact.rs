//! Secret redaction on any text: it never panics, keeps the line count, and one pass finds every
//! secret (a second pass finds nothing more).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (once, _) = trove::extract::secrets::redact(&text);
    assert_eq!(once.lines().count(), text.lines().count());
    let (_, again) = trove::extract::secrets::redact(&once);
    assert!(again.is_empty(), "a second pass found {again:?}");
});
