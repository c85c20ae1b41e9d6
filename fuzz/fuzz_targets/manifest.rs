//! The manifest reader on any bytes: an error or a manifest, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = trove::bundle::parse_manifest(std::path::Path::new("fuzz"), text);
    }
});
