//! Embeds every `pipelines/languages/*.toml` into the crate, so adding a language whose grammar is
//! linked is adding one file: no code change, no table to edit.
use std::{env, fs, path::Path};

fn main() {
    let dir = Path::new("../../pipelines/languages");
    println!("cargo:rerun-if-changed=../../pipelines/languages");
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("pipelines/languages exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    let mut out =
        String::from("/// Built-in language files: (file name, TOML text), sorted by name.\n");
    out.push_str("pub(crate) const BUILTIN_LANGUAGES: &[(&str, &str)] = &[\n");
    for n in &names {
        println!("cargo:rerun-if-changed=../../pipelines/languages/{n}");
        // The path is resolved when the crate compiles, not baked in here: a build directory shared by
        // two checkouts (same package, same OUT_DIR) must read each checkout's own files.
        out.push_str(&format!(
            "    ({n:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {:?}))),\n",
            format!("/../../pipelines/languages/{n}")
        ));
    }
    out.push_str("];\n");
    let dest = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("languages.rs");
    fs::write(dest, out).expect("write languages.rs");
}
