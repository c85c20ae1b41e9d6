//! `trove mcp BUNDLE...`: a Model Context Protocol server over stdio, on the official Rust SDK
//! (`rmcp`), serving the research tools of [`super::tools`] over the bundles named.
//!
//! `rmcp` speaks the protocol: the `initialize` handshake (revisions 2024-11-05 to 2025-11-25)
//! and the per-request envelope of 2026-07-28 (`server/discover`), JSON-RPC framing, errors for
//! requests that are not JSON-RPC or name an unknown method (a line that is not JSON at all is
//! skipped, as the other official SDKs do), and serving on after each. This module lists the tools
//! and runs them: a tool that fails (bad argument, unknown path or symbol) answers `isError: true`
//! with a message for the model; an unknown tool is a JSON-RPC error. Tool calls run one at a
//! time on a blocking thread (the bundles' DuckDB connections are not shared between threads).
use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, ErrorData,
    Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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

const INSTRUCTIONS: &str = "trove serves index bundles of source repositories: the code, its \
definitions and references, and every file's text, without a checkout. Research like a developer: \
read_map first for the layout, search_code for where something is done, resolve_symbol to follow \
definitions and callers, read_file to read the code. Cite code as path:line.";

/// The MCP handler: the tools, behind a lock (one call at a time).
#[derive(Clone)]
struct Server {
    tools: Arc<Mutex<Tools>>,
    listed: Arc<Vec<Tool>>,
}

impl Server {
    fn new(tools: Tools) -> Self {
        let listed = specs()
            .into_iter()
            .map(|s| {
                let schema = match s.schema {
                    serde_json::Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                let mut t = Tool::new(s.name, s.description, Arc::new(schema));
                t.annotations = Some(
                    rmcp::model::ToolAnnotations::new()
                        .read_only(true)
                        .open_world(false),
                );
                t
            })
            .collect();
        Server {
            tools: Arc::new(Mutex::new(tools)),
            listed: Arc::new(listed),
        }
    }

    /// Runs tool `name` on a blocking thread; the call's text, or a tool error's.
    async fn run_tool(
        &self,
        name: String,
        args: serde_json::Value,
    ) -> Result<Result<String, String>, ErrorData> {
        let tools = self.tools.clone();
        let started = std::time::Instant::now();
        let label = name.clone();
        let out = tokio::task::spawn_blocking(move || {
            let t = tools.lock().unwrap_or_else(|p| p.into_inner());
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.call(&name, &args)))
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("tool task failed: {e}"), None))?;
        let out = match out {
            Ok(r) => r,
            Err(p) => {
                let what = p
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
                    .unwrap_or("panic");
                return Err(ErrorData::internal_error(
                    format!("{label} failed inside trove: {what}"),
                    None,
                ));
            }
        };
        eprintln!(
            "trove mcp: {label} {} in {:.1} ms",
            if out.is_ok() { "ok" } else { "failed" },
            started.elapsed().as_secs_f64() * 1e3
        );
        match out {
            Ok(text) => Ok(Ok(text)),
            Err(e @ ToolError::Unknown(_)) => Err(ErrorData::new(
                ErrorCode::INVALID_PARAMS,
                e.to_string(),
                None,
            )),
            Err(e) => Ok(Err(e.to_string())),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        let mut info = Implementation::from_build_env();
        info.name = "trove".into();
        info.title = Some("trove code bundles".into());
        info.version = env!("CARGO_PKG_VERSION").into();
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listed.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let result = match self.run_tool(request.name.to_string(), args).await? {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
        };
        Ok(CallToolResponse::Complete(result))
    }
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
    let server = Server::new(tools);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("MCP session did not start: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("MCP session failed: {e}"))?;
        anyhow::Ok(())
    })?;
    Ok(0)
}
