//! `trove mcp BUNDLE...`: a Model Context Protocol server over stdio, on the official Rust SDK
//! (`rmcp`), serving the research tools of [`crate::tools`] over the bundles named.
//!
//! `rmcp` speaks the protocol: the `initialize` handshake (revisions 2024-11-05 to 2025-11-25)
//! and the per-request envelope of 2026-07-28 (`server/discover`), JSON-RPC framing, errors for
//! requests that are not JSON-RPC or name an unknown method (a line that is not JSON at all is
//! skipped, as the other official SDKs do), and serving on after each; a protocol method whose
//! params do not parse reaches [`Server::on_custom_request`] here, which answers -32602. This
//! module lists the tools and runs them: a tool that fails (bad argument, unknown path or symbol)
//! answers `isError: true` with a message for the model; an unknown tool is a JSON-RPC error.
//! Tool calls run one at a time on a blocking thread (the bundles' DuckDB connections are not
//! shared between threads).
use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, ErrorData, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::tools::{ToolError, Tools, specs};

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
    /// Reranking of the hits.
    #[command(flatten)]
    pub late: crate::args::Rerank,
    /// Where the query embedder's model is.
    #[command(flatten)]
    pub embedder_at: crate::args::EmbedderAt,
}

/// What the MCP server tells an agent about itself and how to research with its tools.
pub const INSTRUCTIONS: &str = "trove serves index bundles of source repositories: the code, its \
definitions and references, and every file's text, without a checkout. Research like a developer: \
read_map first for the layout, search_code for where something is done, resolve_symbol to follow \
definitions and callers, read_file to read the code. Cite code as path:line.";

/// Where an MCP server's tool calls run: over one set of tools behind a lock (`trove mcp`), or on
/// a handle of the bundles `trove serve` serves now.
pub trait ToolHost: Clone + Send + Sync + 'static {
    /// Runs tool `name`: its result, or `Err` with what went wrong inside trove (a panic).
    fn run(
        &self,
        name: String,
        args: serde_json::Value,
    ) -> impl std::future::Future<Output = Result<Result<String, ToolError>, String>> + Send;
}

/// What a caught panic said (its message, when it has one).
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| p.downcast_ref::<&str>().copied())
        .unwrap_or("panic")
        .to_string()
}

/// Runs a tool call, a panic caught and told as text.
pub fn call_caught(
    tools: &Tools,
    name: &str,
    args: &serde_json::Value,
) -> Result<Result<String, ToolError>, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tools.call(name, args)))
        .map_err(|p| panic_text(p.as_ref()))
}

/// One set of tools, one call at a time on a blocking thread (`trove mcp`).
#[derive(Clone)]
struct Locked(Arc<Mutex<Tools>>);

impl ToolHost for Locked {
    async fn run(
        &self,
        name: String,
        args: serde_json::Value,
    ) -> Result<Result<String, ToolError>, String> {
        let tools = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let t = tools.lock().unwrap_or_else(|p| p.into_inner());
            call_caught(&t, &name, &args)
        })
        .await
        .map_err(|e| format!("tool task failed: {e}"))?
    }
}

/// The MCP handler: the tools' list, and where their calls run.
#[derive(Clone)]
pub struct Server<H: ToolHost> {
    host: H,
    listed: Arc<Vec<Tool>>,
    /// Prefix of the log line per call (none: no log; `trove serve` has its access log).
    log: Option<&'static str>,
}

impl<H: ToolHost> Server<H> {
    /// A server over `host`'s tools; `log` prefixes a log line per call (none: no log).
    pub fn new(host: H, log: Option<&'static str>) -> Self {
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
            host,
            listed: Arc::new(listed),
            log,
        }
    }

    /// Runs tool `name`; the call's text, or a tool error's.
    async fn run_tool(
        &self,
        name: String,
        args: serde_json::Value,
    ) -> Result<Result<String, String>, ErrorData> {
        let started = std::time::Instant::now();
        let label = name.clone();
        let out = self.host.run(name, args).await.map_err(|what| {
            ErrorData::internal_error(format!("{label} failed inside trove: {what}"), None)
        })?;
        if let Some(prefix) = self.log {
            eprintln!(
                "{prefix}: {label} {} in {:.1} ms",
                if out.is_ok() { "ok" } else { "failed" },
                started.elapsed().as_secs_f64() * 1e3
            );
        }
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

impl<H: ToolHost> ServerHandler for Server<H> {
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

    /// rmcp hands over a request of a protocol method whose params do not parse (`tools/call`
    /// with `arguments` a string) as a custom one: that is invalid params (-32602), not an
    /// unknown method (-32601, rmcp's answer, with only the method's name for a message).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        const PROTOCOL: &[&str] = &[
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "prompts/list",
            "prompts/get",
            "resources/list",
            "resources/read",
            "resources/templates/list",
            "resources/subscribe",
            "resources/unsubscribe",
            "completion/complete",
            "logging/setLevel",
            "server/discover",
        ];
        let m = request.method;
        Err(if PROTOCOL.contains(&m.as_str()) {
            let takes = if m == "tools/call" {
                r#": it takes {"name": a tool's name, "arguments": an object}"#
            } else {
                ""
            };
            ErrorData::new(
                ErrorCode::INVALID_PARAMS,
                format!("{m}: its params are not of the method's shape{takes}"),
                None,
            )
        } else {
            ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("no method {m:?} (trove serves tools/list and tools/call)"),
                None,
            )
        })
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
    let tools = Tools::open(&a.bundles)?.with_rerank(a.late.rerank);
    eprintln!(
        "trove mcp: serving {} over stdio",
        tools
            .bundles()
            .iter()
            .map(|b| b.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let server = Server::new(Locked(Arc::new(Mutex::new(tools))), Some("trove mcp"));
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
