//! The model and the runtime a release ships beside the `trove` binary, found relative to the
//! running executable: `share/trove/models/<NAME>/` (a sentence-transformers folder with its ONNX
//! graph) and `lib/` (`libonnxruntime`). The places looked at, in order, are the binary's own
//! folder (an unpacked release tarball; `target/release` after `scripts/fetch-model.sh`) and its
//! parent (an install as `PREFIX/bin/trove` with `PREFIX/share` and `PREFIX/lib`).
//!
//! `--embedder local` without `--model-dir` uses [`DEFAULT_MODEL`] from here.
use std::path::{Path, PathBuf};

/// The model `--embedder local` uses when no folder is given.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// The folders a release's `share/` and `lib/` may sit in, in the order they are looked at:
/// the executable's folder and its parent (symlinks resolved).
pub fn roots() -> Vec<PathBuf> {
    let Some(exe) = std::env::current_exe()
        .ok()
        .map(|e| e.canonicalize().unwrap_or(e))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(dir) = exe.parent() {
        out.push(dir.to_path_buf());
        if let Some(up) = dir.parent() {
            out.push(up.to_path_buf());
        }
    }
    out
}

/// Where shipped models are looked for: `ROOT/share/trove/models` for each of [`roots`].
pub fn model_roots() -> Vec<PathBuf> {
    roots()
        .into_iter()
        .map(|r| r.join("share").join("trove").join("models"))
        .collect()
}

/// Where a shipped ONNX Runtime is looked for: `ROOT/lib` for each of [`roots`].
pub fn lib_dirs() -> Vec<PathBuf> {
    roots().into_iter().map(|r| r.join("lib")).collect()
}

/// The shared library's file name on this platform.
#[cfg(target_os = "macos")]
pub(crate) const LIB: &str = "libonnxruntime.dylib";
#[cfg(target_os = "windows")]
pub(crate) const LIB: &str = "onnxruntime.dll";
#[cfg(not(any(target_os = "macos", target_os = "windows")))]
pub(crate) const LIB: &str = "libonnxruntime.so";

/// `libonnxruntime.so` or a versioned `libonnxruntime.so.1.31.1` in `dir` (the highest version).
pub(crate) fn lib_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == LIB || n.starts_with(&format!("{LIB}.")))
        })
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.file_name().map(|n| n.to_os_string())));
    found.into_iter().next()
}

/// The ONNX Runtime library shipped beside the binary: the first of [`lib_dirs`] that holds one.
pub fn runtime_lib() -> Option<PathBuf> {
    lib_dirs().iter().find_map(|d| lib_in(d))
}

/// A model folder found under a [`model_roots`] folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShippedModel {
    /// The folder's name (the model's).
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// Its ONNX graphs (file name, bytes), `model.int8.onnx` first when there.
    pub onnx: Vec<(String, u64)>,
    /// Whether it has `model.safetensors` (candle can run it).
    pub safetensors: bool,
}

impl ShippedModel {
    /// How the model runs by default: `int8` (model.int8.onnx), `fp32` (model.onnx), or
    /// `safetensors` (candle).
    pub fn precision(&self) -> &'static str {
        match self.onnx.first().map(|(f, _)| f.as_str()) {
            Some("model.int8.onnx") => "int8",
            Some(_) => "fp32",
            None => "safetensors",
        }
    }
}

/// Whether `dir` looks like a sentence-transformers folder trove can load.
fn is_model(dir: &Path) -> bool {
    dir.join("config.json").is_file() && dir.join("tokenizer.json").is_file()
}

/// One model folder, described.
fn describe(name: String, dir: PathBuf) -> ShippedModel {
    let size = |f: &str| std::fs::metadata(dir.join(f)).ok().map(|m| m.len());
    let mut onnx = Vec::new();
    for f in ["model.int8.onnx", "model.onnx"] {
        if let Some(n) = size(f) {
            onnx.push((f.to_string(), n));
        }
    }
    let safetensors = dir.join("model.safetensors").is_file();
    ShippedModel {
        name,
        dir,
        onnx,
        safetensors,
    }
}

/// Every model folder under [`model_roots`], by root then name; a name found twice is listed
/// once, from the first root.
pub fn models() -> Vec<ShippedModel> {
    let mut out: Vec<ShippedModel> = Vec::new();
    for root in model_roots() {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut found: Vec<(String, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .filter(|(_, p)| is_model(p))
            .collect();
        found.sort();
        for (name, dir) in found {
            if !out.iter().any(|m| m.name == name) {
                out.push(describe(name, dir));
            }
        }
    }
    out
}

/// The folder of [`DEFAULT_MODEL`] shipped beside the binary, or a message that says where it was
/// looked for and how to get it.
pub fn default_model_dir() -> Result<PathBuf, String> {
    let roots = model_roots();
    for r in &roots {
        let d = r.join(DEFAULT_MODEL);
        if is_model(&d) {
            return Ok(d);
        }
    }
    let looked: Vec<String> = roots
        .iter()
        .map(|r| r.join(DEFAULT_MODEL).display().to_string())
        .collect();
    Err(format!(
        "no model folder given (--model-dir) and no {DEFAULT_MODEL} shipped beside trove (looked \
         in {}): a release tarball ships it; a source build gets it with scripts/fetch-model.sh; \
         or give --model-dir a sentence-transformers folder",
        if looked.is_empty() {
            "no folder: the executable's path is unknown".to_string()
        } else {
            looked.join(", ")
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_described_by_what_it_holds() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("m");
        std::fs::create_dir_all(&d).unwrap();
        for f in ["config.json", "tokenizer.json", "model.onnx"] {
            std::fs::write(d.join(f), b"{}").unwrap();
        }
        assert!(is_model(&d));
        let m = describe("m".into(), d.clone());
        assert_eq!(m.precision(), "fp32");
        std::fs::write(d.join("model.int8.onnx"), b"1234").unwrap();
        let m = describe("m".into(), d);
        assert_eq!(m.onnx[0], ("model.int8.onnx".to_string(), 4));
        assert_eq!(m.precision(), "int8");
        assert!(!is_model(t.path()));
    }
}
