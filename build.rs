//! `TROVE_GIT_COMMIT` for `trove --version`.
use std::{env, path::Path};

fn main() {
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
