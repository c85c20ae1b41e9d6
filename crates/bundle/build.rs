//! `TROVE_SOURCE_HASH`, stamped into manifests (`tool.build`).
use std::{fs, path::Path};

fn main() {
    source_hash();
}

/// `TROVE_SOURCE_HASH`: FNV-1a over every source and pipeline file, stamped into manifests so an
/// incremental run never reuses rows written by other code under the same version number.
fn source_hash() {
    for d in ["../../src", "../../crates", "../../pipelines"] {
        println!("cargo:rerun-if-changed={d}");
    }
    let mut files = Vec::new();
    let mut stack = vec![
        Path::new("../../src").to_path_buf(),
        Path::new("../../crates").to_path_buf(),
        Path::new("../../pipelines").to_path_buf(),
    ];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("source dir").flatten() {
            let p = e.path();
            if p.is_dir() && !p.ends_with("target") {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        let bytes = fs::read(&f).expect("source file");
        for b in f.to_string_lossy().bytes().chain([0]).chain(bytes) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=TROVE_SOURCE_HASH={h:016x}");
}
