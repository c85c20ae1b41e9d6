//! The language fixtures as (`lang/file`, text), sorted: shared by `benches/pipeline.rs` and
//! `benches/peers/benches/chunk.rs` (each includes this file by `#[path]`).
use std::path::{Path, PathBuf};

/// Every file under `fixtures/languages` of the checkout `up` directories above the including
/// crate's manifest. The manifest directory is read at run time: the bench binary may come from a
/// shared target dir built in another checkout.
pub fn language_fixtures(up: &str) -> Vec<(String, String)> {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf());
    let root = manifest_dir.join(up).join("fixtures/languages");
    let mut out = Vec::new();
    for lang in std::fs::read_dir(&root).expect("fixtures") {
        let lang = lang.expect("entry").path();
        for f in std::fs::read_dir(&lang).expect("lang dir") {
            let p = f.expect("file").path();
            let rel = format!(
                "{}/{}",
                lang.file_name().unwrap().to_string_lossy(),
                p.file_name().unwrap().to_string_lossy()
            );
            out.push((rel, std::fs::read_to_string(&p).expect("utf-8 fixture")));
        }
    }
    out.sort();
    out
}
