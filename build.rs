//! `TROVE_GIT_COMMIT` for `trove --version` and `TROVE_SOURCE_HASH`, the build stamp the binary
//! gives trove-bundle for the manifests it writes (`tool.build`).
use std::{env, fs, path::Path};

fn main() {
    git_commit();
    source_hash();
}

/// `TROVE_SOURCE_HASH`: FNV-1a over every source and pipeline file, stamped into manifests so an
/// incremental run never reuses rows written by other code under the same version number. Only
/// the binary depends on it, so an edit recompiles the crates it touches and the binary, not
/// every crate.
fn source_hash() {
    let roots = ["src", "crates", "pipelines"];
    for d in roots {
        println!("cargo:rerun-if-changed={d}");
    }
    let mut files = Vec::new();
    let mut stack: Vec<_> = roots.iter().map(|d| Path::new(d).to_path_buf()).collect();
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
