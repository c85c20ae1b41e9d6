//! Embeds every `pipelines/languages/*.toml` into the binary, so adding a language whose grammar is
//! linked is adding one file: no code change, no table to edit.
use std::{env, fs, path::Path};

fn main() {
    let dir = Path::new("pipelines/languages");
    println!("cargo:rerun-if-changed=pipelines/languages");
    println!("cargo:rerun-if-changed=pipelines/default.toml");
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
        println!("cargo:rerun-if-changed=pipelines/languages/{n}");
        // The path is resolved when the crate compiles, not baked in here: a build directory shared by
        // two checkouts (same package, same OUT_DIR) must read each checkout's own files.
        out.push_str(&format!(
            "    ({n:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {:?}))),\n",
            format!("/pipelines/languages/{n}")
        ));
    }
    out.push_str("];\n");
    let dest = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("languages.rs");
    fs::write(dest, out).expect("write languages.rs");
    source_hash();
    git_commit();
}

/// `TROVE_GIT_COMMIT`: the commit the binary was built from, for `trove --version`. Taken from
/// `$TROVE_GIT_COMMIT` when set (a build from a source tarball), else from `git rev-parse HEAD`;
/// "unknown" outside a checkout. Rebuilt when HEAD moves (the HEAD file and the ref it names).
fn git_commit() {
    println!("cargo:rerun-if-env-changed=TROVE_GIT_COMMIT");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = match env::var("TROVE_GIT_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => match git(&["rev-parse", "HEAD"]) {
            Some(c) => {
                // Watch what names the commit: HEAD, the branch ref it points to, packed refs.
                let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
                watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
                for w in watch {
                    if let Some(p) = git(&["rev-parse", "--git-path", &w])
                        && Path::new(&p).exists()
                    {
                        println!("cargo:rerun-if-changed={p}");
                    }
                }
                c
            }
            None => "unknown".to_string(),
        },
    };
    println!("cargo:rustc-env=TROVE_GIT_COMMIT={commit}");
}

/// `TROVE_SOURCE_HASH`: FNV-1a over every source and pipeline file, stamped into manifests so an
/// incremental run never reuses rows written by other code under the same version number.
fn source_hash() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    let mut stack = vec![
        Path::new("src").to_path_buf(),
        Path::new("pipelines").to_path_buf(),
    ];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("source dir").flatten() {
            let p = e.path();
            if p.is_dir() {
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
