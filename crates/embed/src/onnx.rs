//! ONNX Runtime for the `local` embedder (feature `onnx`): finds `libonnxruntime` at run time
//! (`ort` with `load-dynamic`: nothing is downloaded or linked at build time) and runs an encoder
//! graph (`scripts/export-onnx.py`) one text per pass.
//!
//! Input: the ONNX file's bytes; token ids, type ids and mask of one or more texts. Output: the
//! last hidden states, `[texts, width, hidden]`, for the caller to pool. Sessions run one
//! intra-op thread each, one session per concurrent call (a pool that grows to the calls in
//! flight): a text's vector then depends only on the text, whatever `--threads` is.
//!
//! Where the library comes from, in order: `$ORT_DYLIB_PATH` (a file, or a folder holding
//! `libonnxruntime.so*`), the `lib/` folder a release ships beside the binary
//! ([`crate::shipped::lib_dirs`]), the `onnxruntime` Python package's `capi/` folder (asked of
//! `python3` on PATH), the system library path (`libonnxruntime.so`). The API level is
//! [`ort::MINOR_VERSION`] (31 = onnxruntime 1.31); an older library is refused.
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::shipped::{LIB, lib_in};

/// The process's ONNX Runtime environment and a description of the library it loaded, or why
/// none could be loaded (every place looked at).
static ENV: OnceLock<Result<(ort::environment::Environment, String), String>> = OnceLock::new();

/// Loads ONNX Runtime once per process; `Ok` holds "onnxruntime VERSION (PATH)".
pub fn runtime() -> Result<&'static str, String> {
    match ENV.get_or_init(load) {
        Ok((_, what)) => Ok(what),
        Err(e) => Err(e.clone()),
    }
}

fn load() -> Result<(ort::environment::Environment, String), String> {
    let mut tried = Vec::new();
    for (source, candidate) in candidates(&mut tried) {
        match ort::init_from(&candidate) {
            Ok(builder) => {
                let env = builder
                    .with_name("trove")
                    .with_telemetry(false)
                    .build()
                    .map_err(|e| format!("ONNX Runtime from {}: {e}", candidate.display()))?;
                let version = version_of(&candidate);
                return Ok((
                    env,
                    format!("onnxruntime {version} ({source}: {})", candidate.display()),
                ));
            }
            Err(e) if candidate.as_os_str() == LIB => {
                tried.push(format!("no {LIB} on {source} ({e})"));
            }
            Err(e) => tried.push(format!("{source} {}: {e}", candidate.display())),
        }
    }
    Err(format!(
        "ONNX Runtime (libonnxruntime, API level 1.{}) not found: {}. A release tarball ships it \
         in lib/ (a source build: scripts/fetch-model.sh); or set ORT_DYLIB_PATH to the library, \
         or `pip install onnxruntime==1.{}.*` (its capi/ folder is found through python3), or \
         install it on the system library path",
        ort::MINOR_VERSION,
        tried.join("; "),
        ort::MINOR_VERSION
    ))
}

/// The version in a library file name like `libonnxruntime.so.1.31.1`, else what the library says.
fn version_of(lib: &Path) -> String {
    let name = lib.file_name().map(|n| n.to_string_lossy().into_owned());
    name.as_deref()
        .and_then(|n| n.strip_prefix(&format!("{LIB}.")))
        .map(str::to_string)
        .unwrap_or_else(|| {
            let info = ort::info();
            info.split(|c: char| c == ',' || c.is_whitespace())
                .find_map(|w| w.strip_prefix("git-branch=rel-"))
                .unwrap_or("(version unknown)")
                .to_string()
        })
}

/// Where to look, in order, each with the name of its source; a source with nothing to offer
/// is noted in `tried`.
fn candidates(tried: &mut Vec<String>) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    match std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            match if p.is_dir() {
                lib_in(&p)
            } else {
                Some(p.clone())
            } {
                Some(f) => out.push(("ORT_DYLIB_PATH", f)),
                None => tried.push(format!("ORT_DYLIB_PATH {} has no {LIB}", p.display())),
            }
        }
        None => tried.push("ORT_DYLIB_PATH is not set".into()),
    }
    match crate::shipped::runtime_lib() {
        Some(f) => out.push(("shipped beside trove", f)),
        None => tried.push("no lib/ beside trove holds one".into()),
    }
    match python_package_capi() {
        Some(capi) => match lib_in(&capi) {
            Some(f) => out.push(("the onnxruntime Python package", f)),
            None => tried.push(format!(
                "the onnxruntime Python package's {} has no {LIB}",
                capi.display()
            )),
        },
        None => tried.push("python3 has no onnxruntime package".into()),
    }
    out.push(("the system library path", PathBuf::from(LIB)));
    out
}

/// The `capi/` folder of the `onnxruntime` package `python3` would import (found without
/// importing it).
fn python_package_capi() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('onnxruntime'); print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let d = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!d.is_empty()).then(|| PathBuf::from(d).join("capi"))
}

/// One encoder graph, run by a pool of single-threaded sessions.
pub struct OnnxModel {
    bytes: Vec<u8>,
    free: Mutex<Vec<Session>>,
    /// The graph's inputs, in its order, as the tensors we feed.
    inputs: Vec<Input>,
    output: String,
}

#[derive(Debug, Clone, Copy)]
enum Input {
    Ids,
    Mask,
    Types,
}

impl OnnxModel {
    /// Loads ONNX Runtime (once per process) and checks the graph's inputs and output.
    pub fn load(bytes: Vec<u8>) -> Result<Self, String> {
        runtime()?;
        let session = build(&bytes)?;
        let inputs = session
            .inputs()
            .iter()
            .map(|i| match i.name() {
                "input_ids" => Ok(Input::Ids),
                "attention_mask" => Ok(Input::Mask),
                "token_type_ids" => Ok(Input::Types),
                other => Err(format!(
                    "the graph has an input {other:?}; an encoder takes input_ids, attention_mask and \
                     token_type_ids"
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !inputs.iter().any(|i| matches!(i, Input::Ids)) {
            return Err("the graph has no input_ids input".into());
        }
        let outputs = session.outputs();
        let output = outputs
            .iter()
            .find(|o| o.name() == "last_hidden_state")
            .or_else(|| outputs.first())
            .map(|o| o.name().to_string())
            .ok_or("the graph has no output")?;
        Ok(OnnxModel {
            bytes,
            free: Mutex::new(vec![session]),
            inputs,
            output,
        })
    }

    /// Runs `n` texts padded to `width` tokens: hidden states, `n * width * hidden` floats.
    pub fn forward(
        &self,
        n: usize,
        width: usize,
        ids: &[u32],
        types: &[u32],
        mask: &[u32],
    ) -> Result<(usize, Vec<f32>), String> {
        let taken = self.free.lock().map_err(|e| e.to_string())?.pop();
        let mut session = match taken {
            Some(s) => s,
            None => build(&self.bytes)?,
        };
        let result = self.run(&mut session, n, width, ids, types, mask);
        if let Ok(mut free) = self.free.lock() {
            free.push(session);
        }
        result
    }

    fn run(
        &self,
        session: &mut Session,
        n: usize,
        width: usize,
        ids: &[u32],
        types: &[u32],
        mask: &[u32],
    ) -> Result<(usize, Vec<f32>), String> {
        let tensor = |v: &[u32]| {
            let data: Vec<i64> = v.iter().map(|&x| i64::from(x)).collect();
            Tensor::from_array(([n, width], data)).map_err(|e| e.to_string())
        };
        let mut feed: Vec<(String, ort::session::SessionInputValue<'_>)> = Vec::new();
        for (input, name) in self
            .inputs
            .iter()
            .zip(session.inputs().iter().map(|i| i.name().to_string()))
        {
            let t = match input {
                Input::Ids => tensor(ids)?,
                Input::Mask => tensor(mask)?,
                Input::Types => tensor(types)?,
            };
            feed.push((name, t.into()));
        }
        let outputs = session.run(feed).map_err(|e| e.to_string())?;
        let (shape, data) = outputs[self.output.as_str()]
            .try_extract_tensor::<f32>()
            .map_err(|e| e.to_string())?;
        if shape.len() != 3 || shape[0] as usize != n || shape[1] as usize != width {
            return Err(format!(
                "the graph's output {} has shape {shape:?}, not [{n}, {width}, hidden]",
                self.output
            ));
        }
        Ok((shape[2] as usize, data.to_vec()))
    }
}

/// Graph rewrites trove's sessions skip. ONNX Runtime 1.31 fuses each residual Add into the
/// LayerNormalization after it (SkipLayerNormalization); on the int8 graph, one text per pass on
/// one thread, that fused kernel took 23% of the time, and all-MiniLM-L6-v2 int8 runs ~1.3× faster
/// at 128 tokens (~1.15× at 256) without it. The vectors agree with the fused ones to 4 digits; the
/// fp32 graph never fuses there, so it is unchanged. scripts/bench-onnx-peer.py measures the Python
/// package both with its defaults and with this setting.
const DISABLED_OPTIMIZERS: &str = "SkipLayerNormFusion";

fn build(bytes: &[u8]) -> Result<Session, String> {
    let (env, _) = ENV
        .get_or_init(load)
        .as_ref()
        .map_err(std::clone::Clone::clone)?;
    Session::builder(env)
        .map_err(|e| e.to_string())?
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(|e| e.to_string())?
        .with_intra_threads(1)
        .map_err(|e| e.to_string())?
        .with_inter_threads(1)
        .map_err(|e| e.to_string())?
        .with_config_entry(
            "optimization.disable_specified_optimizers",
            DISABLED_OPTIMIZERS,
        )
        .map_err(|e| e.to_string())?
        .commit_from_memory(bytes)
        .map_err(|e| format!("the ONNX file: {e}"))
}
