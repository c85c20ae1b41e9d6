//! `trove models`.
use clap::Args;

use trove::embed::shipped;

use super::Format;

/// List the embedding models and the ONNX Runtime shipped beside this trove (a release tarball's
/// share/trove/models/ and lib/, or target/release after scripts/fetch-model.sh), and where each
/// was found. `trove index --embedder local` uses all-MiniLM-L6-v2 from here unless --model-dir
/// names another folder.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs `trove models`.
pub fn run(a: ModelsArgs) -> anyhow::Result<()> {
    let models = shipped::models();
    let runtime = trove::embed::onnx_runtime();
    if a.format == Format::Json {
        let list: Vec<serde_json::Value> = models
            .iter()
            .map(|m| {
                serde_json::json!({
                    "name": m.name,
                    "dir": m.dir.display().to_string(),
                    "precision": m.precision(),
                    "onnx": m.onnx.iter().map(|(f, n)| serde_json::json!({"file": f, "bytes": n})).collect::<Vec<_>>(),
                    "safetensors": m.safetensors,
                    "default": m.name == shipped::DEFAULT_MODEL,
                })
            })
            .collect();
        let shown = |v: Vec<std::path::PathBuf>| -> Vec<String> {
            v.iter().map(|p| p.display().to_string()).collect()
        };
        return super::print_json(&serde_json::json!({
            "models": list,
            "runtime": match &runtime {
                Ok(what) => serde_json::json!({"found": true, "what": what}),
                Err(why) => serde_json::json!({"found": false, "error": why}),
            },
            "looked_in": {
                "models": shown(shipped::model_roots()),
                "lib": shown(shipped::lib_dirs()),
            },
        }));
    }
    println!("{}", text(&models, &runtime));
    Ok(())
}

/// The text of `trove models`.
fn text(models: &[shipped::ShippedModel], runtime: &Result<String, String>) -> String {
    let mut out = String::from("models\n");
    if models.is_empty() {
        let looked: Vec<String> = shipped::model_roots()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        out.push_str(&format!(
            "  none shipped beside this trove (looked in {}): a release tarball ships {}; a \
             source build gets it with scripts/fetch-model.sh\n",
            looked.join(", "),
            shipped::DEFAULT_MODEL
        ));
    }
    for m in models {
        let files: Vec<String> = m
            .onnx
            .iter()
            .map(|(f, n)| format!("{f} {:.1} MB", *n as f64 / 1e6))
            .chain(m.safetensors.then(|| "model.safetensors".to_string()))
            .collect();
        let default = if m.name == shipped::DEFAULT_MODEL {
            " (the default of --embedder local)"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {} ({}){default}\n    {}\n    {}\n",
            m.name,
            m.precision(),
            m.dir.display(),
            files.join(", ")
        ));
    }
    out.push_str("runtime\n");
    match runtime {
        Ok(what) => out.push_str(&format!("  {what}\n")),
        Err(why) => out.push_str(&format!("  none: {why}\n")),
    }
    out.trim_end().to_string()
}
