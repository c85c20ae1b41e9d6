//! Release artifacts: `scripts/release.sh` packages the binary these tests built with the local
//! embedder's model and ONNX Runtime; the tarball runs the example job from a temp dir outside
//! the checkout — semantic search included, with no Python on PATH; `scripts/install.sh` installs
//! it by version, checked against its sha256; the nightly script installs through it.
use crate::util::{commit, git, repo};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::{Command, Output};

/// Runs `cmd` with a clean environment (only PATH and HOME), so nothing from the checkout, cargo
/// or the test harness reaches it.
fn clean(cmd: &mut Command, home: &Path) -> Output {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .output()
        .unwrap()
}

fn ok(o: &Output, what: &str) -> String {
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{what} failed:\n{out}\n{err}");
    format!("{out}{err}")
}

#[test]
fn release_tarball_runs_the_example_job_and_installs_by_version() {
    let scratch = tempfile::tempdir().unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let dist = scratch.path().join("dist");
    // Package the binary the tests built; --check also runs it unpacked, as the release workflow does.
    let o = Command::new("bash")
        .arg(repo().join("scripts/release.sh"))
        .args(["--bin", env!("CARGO_BIN_EXE_trove"), "--platform", "test-x"])
        .arg("--out")
        .arg(&dist)
        .arg("--check")
        .output()
        .unwrap();
    let log = ok(&o, "release.sh");
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("trove-{version}-test-x");
    let tarball = dist.join(format!("{name}.tar.gz"));
    assert!(log.contains("checked"), "{log}");

    // The .sha256 beside it is right, in `sha256sum -c` format.
    let bytes = std::fs::read(&tarball).unwrap();
    let sum = std::fs::read_to_string(dist.join(format!("{name}.tar.gz.sha256"))).unwrap();
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(sum.trim(), format!("{hex}  {name}.tar.gz"));

    // Unpacked in a temp dir with no checkout: the binary, README, licences, example.
    let run_dir = tempfile::tempdir().unwrap();
    ok(
        &Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .current_dir(run_dir.path())
            .output()
            .unwrap(),
        "tar",
    );
    // As trove sees its own folder (symlinks resolved: macOS's /var is one).
    let root = run_dir.path().join(&name).canonicalize().unwrap();
    for f in [
        "trove",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "share/trove/models/all-MiniLM-L6-v2/model.int8.onnx",
        "share/trove/models/all-MiniLM-L6-v2/tokenizer.json",
        "share/trove/models/all-MiniLM-L6-v2/1_Pooling/config.json",
        "share/trove/licenses/onnxruntime/LICENSE",
        "share/trove/licenses/onnxruntime/ThirdPartyNotices.txt",
        "share/trove/licenses/all-MiniLM-L6-v2/LICENSE",
    ] {
        assert!(root.join(f).is_file(), "{f} missing from the tarball");
    }
    // Only the int8 graph: the fp32 one and the safetensors weights stay out.
    let model = root.join("share/trove/models/all-MiniLM-L6-v2");
    assert!(!model.join("model.onnx").exists() && !model.join("model.safetensors").exists());
    let libs: Vec<String> = std::fs::read_dir(root.join("lib"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        libs.len() == 1 && libs[0].starts_with("libonnxruntime."),
        "{libs:?}"
    );
    let v = ok(
        &clean(Command::new(root.join("trove")).arg("--version"), &home),
        "trove --version",
    );
    assert!(
        v.starts_with(&format!("trove {version} (commit ")) && v.contains("features: engine"),
        "{v}"
    );
    assert!(
        v.contains("\nmodel: all-MiniLM-L6-v2 (int8) in ")
            && v.contains(&format!("\nruntime: {}", root.join("lib").display())),
        "{v}"
    );
    let trove = |args: &[&str]| {
        clean(
            Command::new(root.join("trove"))
                .args(args)
                .current_dir(&root),
            &home,
        )
    };
    ok(
        &trove(&["index", "example/sample-repo", "-o", "sample.bundle"]),
        "index",
    );
    ok(&trove(&["verify", "sample.bundle"]), "verify");
    let hits = ok(
        &trove(&[
            "query",
            "sample.bundle",
            "how is an invoice charged",
            "--format",
            "jsonl",
        ]),
        "query",
    );
    assert!(hits.contains("billing/"), "{hits}");

    // Semantic search in one flag, with no Python on PATH (an empty folder): the shipped model
    // on the shipped runtime, found beside the binary.
    let no_path = scratch.path().join("empty-path");
    std::fs::create_dir_all(&no_path).unwrap();
    let bare = |args: &[&str]| {
        Command::new(root.join("trove"))
            .args(args)
            .current_dir(&root)
            .env_clear()
            .env("PATH", &no_path)
            .env("HOME", &home)
            .output()
            .unwrap()
    };
    let models = ok(&bare(&["models", "--format", "json"]), "trove models");
    let models: serde_json::Value = serde_json::from_str(&models).unwrap();
    assert_eq!(models["models"][0]["name"], "all-MiniLM-L6-v2", "{models}");
    assert_eq!(models["models"][0]["precision"], "int8", "{models}");
    assert_eq!(models["runtime"]["found"], true, "{models}");
    assert!(
        models["runtime"]["what"]
            .as_str()
            .unwrap()
            .contains("shipped beside trove"),
        "{models}"
    );
    ok(
        &bare(&[
            "index",
            "example/sample-repo",
            "-o",
            "s.bundle",
            "--embedder",
            "local",
        ]),
        "index --embedder local",
    );
    let m: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("s.bundle/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(m["embedder"]["backend"], "local");
    assert_eq!(
        m["pipeline"]["embed"]["runtime"], "onnx",
        "{}",
        m["pipeline"]
    );
    let hits = ok(
        &bare(&[
            "query",
            "s.bundle",
            "how is an invoice charged",
            "--format",
            "jsonl",
        ]),
        "semantic query",
    );
    let first: serde_json::Value = serde_json::from_str(hits.lines().next().unwrap()).unwrap();
    assert!(
        first["path"].as_str().unwrap().starts_with("billing/"),
        "{hits}"
    );
    // The vector arm alone finds it too: the model answered, not only BM25.
    let hits = ok(
        &bare(&[
            "query",
            "s.bundle",
            "how is an invoice charged",
            "--mode",
            "vector",
            "--format",
            "jsonl",
        ]),
        "vector query",
    );
    assert!(
        hits.lines().take(3).any(|l| l.contains("billing/")),
        "{hits}"
    );

    // install.sh by version from a release URL (file:// here), checked against the .sha256.
    let releases = scratch.path().join("releases");
    let tag = releases.join(format!("v{version}"));
    std::fs::create_dir_all(&tag).unwrap();
    for f in [format!("{name}.tar.gz"), format!("{name}.tar.gz.sha256")] {
        std::fs::copy(dist.join(&f), tag.join(&f)).unwrap();
    }
    let url = format!("file://{}", releases.display());
    let install = |args: &[&str], dir: &Path| {
        let mut c = Command::new("bash");
        c.arg(root.join("scripts/install.sh"))
            .args(args)
            .arg(version)
            .arg(dir);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("TROVE_RELEASE_URL", &url)
            .env("TROVE_PLATFORM", "test-x")
            .output()
            .unwrap()
    };
    let bin = scratch.path().join("bin");
    assert!(ok(&install(&[], &bin), "install").contains("installed trove"));
    // The installed binary finds the model and runtime installed beside it.
    let v = ok(
        &clean(Command::new(bin.join("trove")).arg("--version"), &home),
        "installed --version",
    );
    assert!(
        v.contains("model: all-MiniLM-L6-v2 (int8) in ") && v.contains("runtime: "),
        "{v}"
    );
    assert!(ok(&install(&[], &bin), "install again").contains("already in"));
    // A pinned sha256 that does not match: refused, nothing installed.
    let bad = scratch.path().join("bad");
    let o = install(&["--sha256", &"0".repeat(64)], &bad);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("refusing"));
    assert!(!bad.join("trove").exists());
    // The right pin installs.
    ok(
        &install(&["--sha256", &hex.to_uppercase()], &bad),
        "install pinned",
    );

    // The nightly script from the tarball installs that version into its cache, then indexes.
    let example = run_dir.path().join("app");
    crate::util::copy_dir(&root.join("example/sample-repo"), &example);
    git(&example, &["init", "-q"]);
    commit(&example, "first");
    let publish = scratch.path().join("published");
    let cache = scratch.path().join("bin-cache");
    let o = Command::new("bash")
        .arg(root.join("scripts/nightly-ci.sh"))
        .arg(&example)
        .arg(&publish)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("TROVE_VERSION", version)
        .env("TROVE_BIN_CACHE", &cache)
        .env("TROVE_RELEASE_URL", &url)
        .env("TROVE_PLATFORM", "test-x")
        .env("TROVE_CACHE_DIR", scratch.path().join("q"))
        .output()
        .unwrap();
    let log = ok(&o, "nightly-ci.sh");
    assert!(log.contains(&format!("installed trove {version}")), "{log}");
    assert!(cache.join(version).join("trove").is_file());
    assert!(publish.join("app.trove").is_file());
}
