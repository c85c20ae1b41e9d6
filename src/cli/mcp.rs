//! `trove mcp BUNDLE...`: a Model Context Protocol server over stdio (JSON-RPC 2.0, one message
//! per line), serving the research tools of [`super::tools`] over the bundles named.
//!
//! Both eras of the protocol are spoken: the `initialize` handshake (revisions 2024-11-05 to
//! 2025-11-25) and the stateless per-request envelope of 2026-07-28 (`server/discover`, then
//! `_meta` on every request). A line that is not JSON, a request that is not JSON-RPC, an
//! unknown method or tool gets a JSON-RPC error and the server reads on; a tool that fails
//! (bad argument, unknown path or symbol) answers `isError: true` with a message for the model.
use clap::Args;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::PathBuf;

use super::tools::{ToolError, Tools, specs};

/// Serve bundles to coding agents over the Model Context Protocol (stdio).
///
/// Tools: read_map (the repository's layout with file summaries), search_code (hybrid search),
/// resolve_symbol (definition, references, callers, callees, subtypes), read_file (a file's text
/// from the bundle, no checkout needed), list_bundles. Several bundles may be served at once;
/// results name their bundle. Output per call is bounded (200 lines) with a note on how to ask for
/// more. Nothing outside the bundles named is read. Logs go to stderr.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  claude mcp add trove -- trove mcp /path/to/app.trove\n  trove mcp app.bundle lib.bundle   # several bundles; results name theirs"
)]
pub struct McpArgs {
    /// The bundles to serve (directories or packed .trove files).
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
    #[command(flatten)]
    pub embedder_at: super::EmbedderAt,
}

/// Handshake-era revisions, oldest first.
const HANDSHAKE_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Revisions of the per-request envelope.
const MODERN_VERSIONS: &[&str] = &["2026-07-28"];
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

const INSTRUCTIONS: &str = "trove serves index bundles of source repositories: the code, its \
definitions and references, and every file's text, without a checkout. Research like a developer: \
read_map first for the layout, search_code for where something is done, resolve_symbol to follow \
definitions and callers, read_file to read the code. Cite code as path:line.";

/// A JSON-RPC error.
struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

fn rpc_error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
        data: None,
    }
}

/// The server's state: the tools and the negotiated era.
pub struct Server {
    tools: Tools,
}

impl Server {
    /// A server over `tools`.
    pub fn new(tools: Tools) -> Self {
        Server { tools }
    }

    fn server_info() -> Value {
        json!({"name": "trove", "title": "trove code bundles", "version": env!("CARGO_PKG_VERSION")})
    }

    fn capabilities() -> Value {
        json!({"tools": {"listChanged": false}})
    }

    /// The answer to one line of input; `None` for notifications and responses.
    pub fn handle_line(&mut self, line: &str) -> Option<Value> {
        let msg: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Some(error_response(
                    Value::Null,
                    rpc_error(PARSE_ERROR, format!("Parse error: {e}")),
                ));
            }
        };
        let Value::Object(obj) = &msg else {
            return Some(error_response(
                Value::Null,
                rpc_error(
                    INVALID_REQUEST,
                    "Invalid Request: a JSON-RPC message is one object (batches are not supported)",
                ),
            ));
        };
        let id = obj.get("id").cloned();
        let method = obj.get("method");
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(error_response(
                id.unwrap_or(Value::Null),
                rpc_error(INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\""),
            ));
        }
        let Some(method) = method else {
            // A response to a request of ours (we send none) or garbage without a method.
            if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
                return None;
            }
            return Some(error_response(
                id.unwrap_or(Value::Null),
                rpc_error(INVALID_REQUEST, "Invalid Request: no method"),
            ));
        };
        let Some(method) = method.as_str() else {
            return Some(error_response(
                id.unwrap_or(Value::Null),
                rpc_error(INVALID_REQUEST, "Invalid Request: method must be a string"),
            ));
        };
        let params = obj.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = id else {
            // Notifications (initialized, cancelled, ...) need no answer.
            return None;
        };
        if !(id.is_string() || id.is_number()) {
            return Some(error_response(
                Value::Null,
                rpc_error(
                    INVALID_REQUEST,
                    "Invalid Request: id must be a string or a number",
                ),
            ));
        }
        if !(params.is_null() || params.is_object()) {
            return Some(error_response(
                id,
                rpc_error(INVALID_PARAMS, "params must be an object"),
            ));
        }
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.dispatch(method, &params)
        }))
        .unwrap_or_else(|p| {
            let what = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("panic");
            Err(rpc_error(INTERNAL_ERROR, format!("internal error: {what}")))
        });
        Some(match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => error_response(id, e),
        })
    }

    /// The protocol version a modern request names in its envelope, checked.
    fn modern_version(params: &Value) -> Result<Option<String>, RpcError> {
        let Some(v) = params
            .get("_meta")
            .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
        else {
            return Ok(None);
        };
        match v.as_str() {
            Some(s) if MODERN_VERSIONS.contains(&s) => Ok(Some(s.to_string())),
            Some(s) if HANDSHAKE_VERSIONS.contains(&s) => Ok(None),
            _ => Err(RpcError {
                code: UNSUPPORTED_PROTOCOL_VERSION,
                message: "Unsupported protocol version".into(),
                data: Some(json!({"supported": MODERN_VERSIONS, "requested": v})),
            }),
        }
    }

    fn dispatch(&mut self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let modern = Self::modern_version(params)?.is_some();
        let mut result = match method {
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str);
                let version = asked
                    .filter(|v| HANDSHAKE_VERSIONS.contains(v))
                    .unwrap_or(HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1]);
                json!({
                    "protocolVersion": version,
                    "capabilities": Self::capabilities(),
                    "serverInfo": Self::server_info(),
                    "instructions": INSTRUCTIONS,
                })
            }
            "server/discover" => {
                let mut all: Vec<&str> = HANDSHAKE_VERSIONS.to_vec();
                all.extend(MODERN_VERSIONS);
                json!({
                    "supportedVersions": all,
                    "capabilities": Self::capabilities(),
                    "instructions": INSTRUCTIONS,
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": Self::server_info()},
                })
            }
            "ping" => json!({}),
            "tools/list" => {
                let tools: Vec<Value> = specs()
                    .into_iter()
                    .map(|s| {
                        json!({
                            "name": s.name,
                            "description": s.description,
                            "inputSchema": s.schema,
                            "annotations": {"readOnlyHint": true, "openWorldHint": false},
                        })
                    })
                    .collect();
                let mut r = json!({"tools": tools});
                if modern {
                    r["ttlMs"] = json!(0);
                    r["cacheScope"] = json!("private");
                }
                r
            }
            "tools/call" => {
                let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
                    rpc_error(INVALID_PARAMS, "tools/call needs params.name (a string)")
                })?;
                let args = params.get("arguments").cloned().unwrap_or(Value::Null);
                let started = std::time::Instant::now();
                let out = self.tools.call(name, &args);
                eprintln!(
                    "trove mcp: {name} {} in {:.1} ms",
                    if out.is_ok() { "ok" } else { "failed" },
                    started.elapsed().as_secs_f64() * 1e3
                );
                match out {
                    Ok(text) => {
                        json!({"content": [{"type": "text", "text": text}], "isError": false})
                    }
                    Err(ToolError::Unknown(n)) => {
                        return Err(rpc_error(INVALID_PARAMS, ToolError::Unknown(n).to_string()));
                    }
                    Err(e) => {
                        json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true})
                    }
                }
            }
            // Nothing to list, but clients ask.
            "resources/list" => json!({"resources": []}),
            "resources/templates/list" => json!({"resourceTemplates": []}),
            "prompts/list" => json!({"prompts": []}),
            "logging/setLevel" => json!({}),
            other => {
                return Err(rpc_error(
                    METHOD_NOT_FOUND,
                    format!("Method not found: {other}"),
                ));
            }
        };
        if modern {
            result["resultType"] = json!("complete");
        }
        Ok(result)
    }
}

fn error_response(id: Value, e: RpcError) -> Value {
    let mut err = json!({"code": e.code, "message": e.message});
    if let Some(d) = e.data {
        err["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": err})
}

/// Runs `trove mcp`: serves until stdin closes.
pub fn run(a: McpArgs) -> anyhow::Result<i32> {
    a.embedder_at.apply();
    let tools = Tools::open(&a.bundles)?;
    eprintln!(
        "trove mcp: serving {} over stdio",
        tools
            .bundles()
            .iter()
            .map(|b| b.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut server = Server::new(tools);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut line = Vec::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        // Bytes that are not UTF-8 become a parse error for that line, not the end of serving.
        let text = String::from_utf8_lossy(&line);
        let l = text.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(reply) = server.handle_line(l) {
            serde_json::to_writer(&mut out, &reply)?;
            out.write_all(b"\n")?;
            out.flush()?;
        }
    }
    Ok(0)
}
