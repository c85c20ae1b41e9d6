//! `trove serve BUNDLE...`: the bundles as an HTTP service (axum on hyper and tokio) — JSON
//! endpoints for search, symbols, references, maps, dependencies and file text, the MCP tools over
//! Streamable HTTP at `/mcp`, `/health`, `/metrics` and `/openapi.json`. Bundles are reloaded when
//! their manifest changes (see [`state`]); the safety rules (loopback unless a token, body limit,
//! timeouts, bounded concurrency, JSON errors) are layers here.
mod api;
mod metrics;
mod sessions;
mod state;
mod web;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tower::ServiceBuilder;

#[cfg(feature = "openai")]
use crate::ask::AskConfig;
pub use api::ApiError;
use metrics::Metrics;
use state::Served;

/// Serve bundles over HTTP: search, symbols, references, maps, dependencies and file text as
/// JSON, the MCP tools at /mcp (Streamable HTTP), /health, /metrics (Prometheus) and
/// /openapi.json.
///
/// Endpoints: POST /query, GET /symbols, /refs, /map, /deps, /files/{path}, /bundles, /health,
/// /metrics, /openapi.json, POST /ask (with --ask-url), /mcp. Errors are JSON:
/// {"error": {"status", "code", "message"}}.
///
/// Each bundle is reloaded when its manifest changes (a nightly publish, `trove sync`): the new
/// version is verified and warmed beside the old one, then switched to; requests in flight finish
/// on the old one. A version that fails verification is not switched to: the old one keeps
/// serving and /health shows the error.
///
/// Safety: the server listens on loopback by default; any other address needs a bearer token
/// (--token or $TROVE_TOKEN), or --insecure-no-auth. Without a token only loopback host names are
/// answered, and pages of other web origins are refused (403). Request bodies are limited (--max-body),
/// every request has a deadline (--timeout, then 504), and at most --max-in-flight requests are
/// handled at once: beyond that the answer is 503 with Retry-After. A connection that sends no
/// complete request headers within --timeout is closed, and at most --max-connections are open. Nothing outside the bundles
/// named is read. An access log line per request goes to stderr.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove serve app.bundle\n  curl -s localhost:7878/query -d '{\"query\": \"retry backoff\", \"k\": 5}'\n  TROVE_TOKEN=s3cret trove serve --listen 0.0.0.0:7878 /srv/bundles/*.bundle\n  claude mcp add --transport http trove http://localhost:7878/mcp"
)]
pub struct ServeArgs {
    /// The bundles to serve (directories or packed .trove files); each is named in the API by its
    /// file name.
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
    /// Address to listen on, HOST:PORT (an IP address or a name such as localhost; port 0: any
    /// free port; the address chosen is printed).
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "ADDR", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// Bearer token every request must carry (`Authorization: Bearer TOKEN`) [env: TROVE_TOKEN].
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Listen on a non-loopback address without a token.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Largest request body, in bytes (larger: 413).
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    pub max_body: usize,
    /// Seconds a request may take before it is answered 504.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub timeout: f64,
    /// Requests handled at once; more are answered 503 with Retry-After.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_in_flight: usize,
    /// Connections open at once; more are closed as they arrive. A connection that sends no
    /// complete request headers within --timeout (idle, or half-sent) is closed.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub max_connections: usize,
    /// Open handles per bundle for searches and file reads, and as many for look-ups (symbols,
    /// refs, deps, maps, /ask): each lane runs this many requests at once [default: the CPU
    /// count; at most 1024].
    #[arg(long, value_name = "N", value_parser = crate::args::threads(false))]
    pub workers: Option<usize>,
    /// Seconds between checks of the bundles' manifests for a new version (0: only on SIGHUP).
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub reload_interval: f64,
    /// Host names the server accepts in the Host header (every route; others get 403), repeatable
    /// [default: loopback names, or any when a token is required].
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// No access log lines on stderr.
    #[arg(long)]
    pub no_access_log: bool,
    /// Chat completions server for POST /ask (OpenAI-compatible) [env: TROVE_ASK_URL]; without
    /// it, /ask answers 501.
    #[arg(long, value_name = "URL")]
    pub ask_url: Option<String>,
    /// Model for /ask [env: TROVE_ASK_MODEL; default gpt-4o-mini].
    #[arg(long, value_name = "NAME")]
    pub ask_model: Option<String>,
    /// Environment variable that holds the chat server's API key.
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    pub ask_api_key_env: String,
    /// Seconds an /ask request may take (the research loop makes several model calls).
    #[arg(long, default_value_t = 300.0, value_name = "SECS")]
    pub ask_timeout: f64,
    // The default of POST /query's `rerank` and of the MCP and /ask searches.
    /// Reranking of the hits.
    #[command(flatten)]
    pub late: crate::args::Rerank,
    /// Where the query embedder's model is.
    #[command(flatten)]
    pub embedder_at: crate::args::EmbedderAt,
}

/// What every handler sees.
pub struct App {
    served: Served,
    metrics: Metrics,
    started: Instant,
    #[cfg(feature = "openai")]
    ask: Option<AskConfig>,
    /// `/ask` requests at once (each holds its own bundle handles for minutes).
    ask_permits: Arc<tokio::sync::Semaphore>,
    access_log: bool,
    token: Option<String>,
    /// Host names (without port) requests may name; empty: any (a token guards the server).
    hosts: Vec<String>,
    /// Host names whose pages (any port) may call the server: the ones --allow-host gives.
    origins: Vec<String>,
    /// MCP tool calls at once (rmcp runs them in its sessions, past the HTTP layers' limits).
    mcp_permits: Arc<tokio::sync::Semaphore>,
    /// A request's deadline (MCP tool calls too).
    timeout: Duration,
}

type Shared = Arc<App>;

/// `--listen`: an IP address and port, or a host name and port resolved here (its first IPv4
/// address, else its first).
fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    if !s.contains(':') {
        return Err(format!(
            "{s:?} has no port: write HOST:PORT (e.g. 127.0.0.1:7878)"
        ));
    }
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("{s:?} is not HOST:PORT that resolves here: {e}"))?
        // An IPv4 address first (localhost: 127.0.0.1, whatever the resolver's order).
        .min_by_key(|a| a.is_ipv6())
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}

/// Runs `trove serve` until Ctrl-C or SIGTERM.
pub fn run(a: ServeArgs) -> anyhow::Result<i32> {
    a.embedder_at.apply();
    let token = checked_token(&a)?;
    // Bound before the bundles load: a port in use is said at once, not after minutes of loading.
    let listener = std::net::TcpListener::bind(a.listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", a.listen))?;
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let ask_url = a
        .ask_url
        .clone()
        .or_else(|| std::env::var("TROVE_ASK_URL").ok())
        .filter(|u| !u.trim().is_empty());
    #[cfg(feature = "openai")]
    let ask = match &ask_url {
        Some(url) => Some(AskConfig::new(
            Some(url),
            a.ask_model.as_deref(),
            None,
            120,
            3,
            &a.ask_api_key_env,
        )?),
        None => None,
    };
    #[cfg(not(feature = "openai"))]
    if ask_url.is_some() {
        anyhow::bail!("--ask-url needs a trove built with the `openai` feature");
    }
    let (hosts, allowed) = allowed_hosts(&a, token.is_some());
    let started = Instant::now();
    let served = Served::open(&a.bundles, workers, a.late.rerank)?;
    let names: Vec<String> = served.slots.iter().map(|s| s.name.clone()).collect();
    eprintln!(
        "trove serve: {} ready in {:.1} s ({workers} handles per lane: searches, look-ups)",
        names.join(", "),
        started.elapsed().as_secs_f64()
    );
    let app = Arc::new(App {
        served,
        metrics: Metrics::default(),
        started,
        #[cfg(feature = "openai")]
        ask,
        ask_permits: Arc::new(tokio::sync::Semaphore::new(workers)),
        access_log: !a.no_access_log,
        token,
        hosts,
        origins: allowed,
        mcp_permits: Arc::new(tokio::sync::Semaphore::new(a.max_in_flight)),
        timeout: Duration::from_secs_f64(a.timeout),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(serve(a, listener, app.clone()));
    // Blocking work still running (a reload, a slow request past its deadline) gets a moment.
    rt.shutdown_timeout(Duration::from_secs(10));
    app.served.cleanup();
    result.map(|()| 0)
}

/// The bearer token (`--token`, else $TROVE_TOKEN), once the flags are checked: a non-loopback
/// address needs one (or --insecure-no-auth), and the timeouts and limits must be positive.
fn checked_token(a: &ServeArgs) -> anyhow::Result<Option<String>> {
    let token = a
        .token
        .clone()
        .or_else(|| std::env::var("TROVE_TOKEN").ok())
        .filter(|t| !t.is_empty());
    if !a.listen.ip().is_loopback() && token.is_none() && !a.insecure_no_auth {
        anyhow::bail!(
            "{} is not a loopback address: set a token (--token or $TROVE_TOKEN) that clients send \
             as `Authorization: Bearer TOKEN`, or pass --insecure-no-auth",
            a.listen
        );
    }
    for (v, what) in [
        (a.timeout, "--timeout"),
        (a.ask_timeout, "--ask-timeout"),
        (a.reload_interval, "--reload-interval"),
    ] {
        if !(v.is_finite() && v >= 0.0) || (what != "--reload-interval" && v == 0.0) {
            anyhow::bail!("{what} must be a positive number of seconds");
        }
    }
    if a.max_in_flight == 0 || a.max_body == 0 || a.max_connections == 0 {
        anyhow::bail!("--max-in-flight, --max-connections and --max-body must be at least 1");
    }
    Ok(token)
}

/// The host names requests may name ([`App::hosts`]) and those whose pages may call the server
/// ([`App::origins`]): `--allow-host`'s, else, without a token (`tokened` false) on a loopback
/// address, the loopback names and that address, else any.
fn allowed_hosts(a: &ServeArgs, tokened: bool) -> (Vec<String>, Vec<String>) {
    // Without a token, only loopback names: a web page that rebinds its own name to 127.0.0.1
    // (DNS rebinding) is refused.
    let allowed: Vec<String> = a
        .allow_hosts
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    let hosts: Vec<String> = if !allowed.is_empty() {
        allowed.clone()
    } else if !tokened && a.listen.ip().is_loopback() {
        // And the address listened on, which any loopback address may be (127.1.2.3).
        let own = match a.listen.ip() {
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        };
        let mut hosts = ["localhost", "127.0.0.1", "[::1]", "::1"]
            .map(String::from)
            .to_vec();
        if !hosts.contains(&own) {
            hosts.push(own);
        }
        hosts
    } else {
        Vec::new()
    };
    (hosts, allowed)
}

/// The MCP tools over Streamable HTTP, as served at `/mcp`.
type McpService = rmcp::transport::streamable_http_server::StreamableHttpService<
    crate::mcp::Server<api::ServedTools>,
    sessions::Capped,
>;

/// Serves `app` on `listener` until Ctrl-C or SIGTERM (see [`accept_loop`]), reloading the
/// bundles on SIGHUP and every `--reload-interval`.
async fn serve(a: ServeArgs, listener: std::net::TcpListener, app: Shared) -> anyhow::Result<()> {
    let mcp = mcp_service(a.max_body, &app);
    let mcp_cancel = mcp.config.cancellation_token.clone();
    let router = routes(&a, &app, mcp);

    let listener = tokio::net::TcpListener::from_std(listener)?;
    let bound = listener.local_addr()?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "trove serve: listening on http://{bound}")?;
        out.flush()?;
    }
    spawn_reloads(&app, a.reload_interval);
    // In-flight requests get their longest deadline to finish, and a moment more.
    let grace = Duration::from_secs_f64(a.timeout.max(a.ask_timeout) + 5.0);
    let tool_deadline = Duration::from_secs_f64(a.timeout + 1.0);
    accept_loop(
        listener,
        router,
        a.timeout,
        a.max_connections,
        grace,
        move || {
            eprintln!("trove serve: shutting down (requests in flight finish first)");
            // MCP event streams (a client's GET /mcp) never finish on their own: the sessions
            // end once a tool call in flight has had its deadline, so they do not hold the
            // shutdown open and no call loses its answer.
            tokio::spawn(async move {
                tokio::time::sleep(tool_deadline).await;
                mcp_cancel.cancel();
            });
        },
    )
    .await;
    Ok(())
}

/// The MCP tools of `app` over Streamable HTTP, bodies up to `max_body` bytes, at most
/// [`sessions::MAX_SESSIONS`] sessions.
fn mcp_service(max_body: usize, app: &Shared) -> McpService {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    // The Host header is checked for every route by `authorize` (the same rule).
    let mcp_config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(max_body)
        .with_json_response(true)
        .disable_allowed_hosts();
    let mcp_server = crate::mcp::Server::new(api::ServedTools(app.clone()), None);
    StreamableHttpService::new(
        move || Ok(mcp_server.clone()),
        Arc::new(sessions::Capped::new(sessions::MAX_SESSIONS)),
        mcp_config,
    )
}

/// Every route, `mcp` at `/mcp`, behind the layers: the limits (concurrency, deadline, body
/// size; `/ask` apart), then `authorize` and `observe`.
fn routes(a: &ServeArgs, app: &Shared, mcp: McpService) -> Router {
    // /ask counts apart from the other routes (a bound of its own): minutes-long questions
    // queued behind --workers must not shut searches out.
    let limits = |secs: f64| {
        ServiceBuilder::new()
            .layer(HandleErrorLayer::new(overloaded))
            .layer(tower::load_shed::LoadShedLayer::new())
            .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
                a.max_in_flight,
            ))
            .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                StatusCode::GATEWAY_TIMEOUT,
                Duration::from_secs_f64(secs),
            ))
            .layer(tower_http::limit::RequestBodyLimitLayer::new(a.max_body))
    };
    let limited = Router::new()
        .route("/query", post(api::query))
        .route("/symbols", get(api::symbols))
        .route("/refs", get(api::refs))
        .route("/deps", get(api::deps))
        .route("/map", get(api::map))
        .route("/files/{*path}", get(api::file))
        .route("/files/", get(api::file_missing))
        .route("/bundles", get(api::bundles))
        .route("/openapi.json", get(api::openapi))
        .route("/", get(web::search_page))
        .route("/file/{*path}", get(web::file_page))
        .route("/refs-of", get(web::refs_page))
        .route("/tree", get(web::tree_page))
        .nest_service("/mcp", mcp)
        .layer(limits(a.timeout));
    let ask = Router::new()
        .route("/ask", post(api::ask))
        .layer(limits(a.ask_timeout));
    // Health and metrics answer even when the server is saturated.
    Router::new()
        .route("/health", get(api::health))
        .route("/metrics", get(api::metrics))
        .route("/static/app.js", get(web::app_js))
        .route("/static/app.css", get(web::app_css))
        .route("/login", get(web::login_page).post(web::login))
        .merge(limited)
        .merge(ask)
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(middleware::from_fn_with_state(app.clone(), authorize))
        .layer(middleware::from_fn_with_state(app.clone(), observe))
        .with_state(app.clone())
}

/// Starts the reloads: a check of the bundles for a new version on each SIGHUP, and every
/// `reload_interval` seconds (none when 0).
fn spawn_reloads(app: &Shared, reload_interval: f64) {
    // SIGHUP: look for new versions now (with --reload-interval 0, the only reload there is).
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(mut hup) => {
            let app = app.clone();
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    eprintln!("trove serve: SIGHUP: checking the bundles for a new version");
                    let app = app.clone();
                    let _ = tokio::task::spawn_blocking(move || app.served.poll(true)).await;
                }
            });
        }
        Err(e) => eprintln!("trove serve: SIGHUP will not reload ({e})"),
    }
    if reload_interval > 0.0 {
        let app = app.clone();
        let every = Duration::from_secs_f64(reload_interval);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let app = app.clone();
                let _ = tokio::task::spawn_blocking(move || app.served.poll(false)).await;
            }
        });
    }
}

/// Serves `router` on `listener` until Ctrl-C or SIGTERM, then lets the open connections finish
/// what they are doing. A connection must send a request's headers within `timeout` seconds of
/// opening or of its last answer (hyper's header read timeout: an idle or half-sent connection is
/// closed, so clients that never finish cannot hold the server's sockets), and at most
/// `max_connections` are open at once (more are closed as they are accepted). On the signal,
/// `stopping` runs, and connections still open after `grace` are dropped.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    router: Router,
    timeout: f64,
    max_connections: usize,
    grace: Duration,
    stopping: impl FnOnce(),
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt;
    let open = Arc::new(tokio::sync::Semaphore::new(max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs_f64(timeout));
    let mut stop = std::pin::pin!(shutdown_signal());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors (or a connection reset before it was taken): the
                    // open connections finish and free theirs.
                    eprintln!("trove serve: cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = router
            .clone()
            .map_request(move |mut req: Request<hyper::body::Incoming>| {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                req.map(axum::body::Body::new)
            });
        let conn = builder.serve_connection(
            TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(service),
        );
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    stopping();
    tokio::select! {
        done = tokio::time::timeout(grace, graceful.shutdown()) => if done.is_err() {
            eprintln!(
                "trove serve: connections still open after {:.0} s: closing them",
                grace.as_secs_f64()
            );
        },
        () = shutdown_signal() => eprintln!("trove serve: a second signal: closing open connections"),
    }
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// The answer to a request the concurrency limit refused (or a layer's other error).
async fn overloaded(err: tower::BoxError) -> Response {
    if err.is::<tower::load_shed::error::Overloaded>() {
        let mut r = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "the server is handling as many requests as it may (--max-in-flight): retry shortly",
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        r
    } else {
        ApiError::internal(format!("{err}")).into_response()
    }
}

/// Refuses a request without the bearer token, when one is set; and, for a server without one,
/// a request naming a host that is not loopback (DNS rebinding) or sent by a web page of another
/// origin (a browser's cross-site POST).
async fn authorize(State(app): State<Shared>, req: Request, next: Next) -> Response {
    if !app.hosts.is_empty() {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(host_name)
            .unwrap_or_default();
        // A page's origin is its scheme, host and port: another port of the same host is
        // another origin (`http://localhost:3000` is not this server).
        let authority = req
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(|h| h.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let origin = req
            .headers()
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            .map(|o| {
                let o = o.trim().trim_end_matches('/').to_ascii_lowercase();
                let rest = o.split("://").nth(1).unwrap_or(&o).to_string();
                (host_name(&rest), rest)
            });
        let refused = if !app.hosts.contains(&host) {
            Some(format!(
                "host {host:?} is not one this server answers (--allow-host adds names)"
            ))
        } else {
            origin
                .filter(|(name, whole)| *whole != authority && !app.origins.contains(name))
                .map(|(_, whole)| {
                    format!(
                        "requests from pages of {whole:?} are refused (--allow-host adds names)"
                    )
                })
        };
        if let Some(why) = refused {
            return ApiError::new(StatusCode::FORBIDDEN, "forbidden", why).into_response();
        }
    }
    if let Some(token) = &app.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let ok = given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes()));
        // The web pages: the login page and the assets are open; a page is read with the token
        // a login put in a cookie (GET only: the cookie never authorizes the API's POSTs), and a
        // browser without it is sent to the login page. The token is never in a URL.
        let path = req.uri().path();
        if web::is_open(path) {
            return next.run(req).await;
        }
        if !ok && web::is_page(req.method(), path) {
            let want = web::cookie_value(token);
            if web::cookie_token(req.headers())
                .is_some_and(|c| constant_time_eq(c.as_bytes(), want.as_bytes()))
            {
                return next.run(req).await;
            }
            return web::to_login();
        }
        if !ok {
            let mut r = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                if given.is_some() {
                    "the bearer token is wrong"
                } else {
                    "this server needs `Authorization: Bearer TOKEN`"
                },
            )
            .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"trove\""),
            );
            return r;
        }
    }
    next.run(req).await
}

/// `Host`/authority without its port, lower-cased (`[::1]:7878` → `[::1]`).
fn host_name(authority: &str) -> String {
    let a = authority.trim().trim_end_matches('/').to_ascii_lowercase();
    if a.starts_with('[') {
        return a.split_inclusive(']').next().unwrap_or("").to_string();
    }
    a.rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(a.clone(), |(h, _)| h.to_string())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Access log, metrics, the generation header, and JSON bodies for errors a layer answered in
/// plain text (413, 504, 405...).
async fn observe(State(app): State<Shared>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    // Only the methods HTTP defines are labels (a client cannot grow the metrics).
    let method = match req.method().as_str() {
        m @ ("GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS") => m.to_string(),
        _ => "other".to_string(),
    };
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| route_of(req.uri().path()));
    let target = req.uri().to_string();
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.to_string())
        .unwrap_or_else(|| "-".into());
    let mut resp = {
        // Counted down when the request ends, answered or not (a client that hangs up drops it).
        let _in_flight = InFlight::enter(&app.metrics);
        next.run(req).await
    };
    let status = resp.status();
    // A web page's error is a page (`web`); the API's are JSON; anything else is made JSON.
    if (status.is_client_error() || status.is_server_error()) && !is_json(&resp) && !is_html(&resp)
    {
        let (code, message) = match status {
            StatusCode::PAYLOAD_TOO_LARGE => (
                "payload_too_large",
                "the request body is larger than the server takes (--max-body)",
            ),
            StatusCode::GATEWAY_TIMEOUT if route == "/ask" => (
                "timeout",
                "the request took longer than the server allows (--ask-timeout)",
            ),
            StatusCode::GATEWAY_TIMEOUT => (
                "timeout",
                "the request took longer than the server allows (--timeout)",
            ),
            StatusCode::METHOD_NOT_ALLOWED => (
                "method_not_allowed",
                "this endpoint does not take that method",
            ),
            StatusCode::NOT_FOUND => ("not_found", "not found"),
            s if s.is_server_error() => ("internal", "the server failed to answer"),
            _ => ("bad_request", "the request was refused"),
        };
        let headers = resp.headers().clone();
        // A layer's or rmcp's own words, when short text, say more than the generic message.
        let own = axum::body::to_bytes(std::mem::take(resp.body_mut()), 2048)
            .await
            .ok()
            .and_then(|b| String::from_utf8(b.to_vec()).ok())
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty() && !t.contains('<'));
        let text = match own {
            Some(t) => format!("{message}: {t}"),
            None => message.to_string(),
        };
        let mut fresh = ApiError::new(status, code, text).into_response();
        for (k, v) in headers.iter() {
            if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
                fresh.headers_mut().insert(k.clone(), v.clone());
            }
        }
        resp = fresh;
    }
    if !resp.headers().contains_key("x-trove-generation") {
        let g = app.served.current().id;
        resp.headers_mut().insert("x-trove-generation", g.into());
    }
    let secs = started.elapsed().as_secs_f64();
    app.metrics.observe(&route, &method, status.as_u16(), secs);
    if app.access_log {
        let bytes = {
            use axum::body::HttpBody;
            resp.body()
                .size_hint()
                .exact()
                .map_or_else(|| "-".to_string(), |n| n.to_string())
        };
        eprintln!(
            "{} {peer} {method} {target} {} {bytes} {:.1}ms",
            state::now_rfc3339(),
            status.as_u16(),
            secs * 1e3
        );
    }
    resp
}

/// One request in flight, for the gauge.
struct InFlight<'a>(&'a Metrics);

impl<'a> InFlight<'a> {
    fn enter(m: &'a Metrics) -> Self {
        m.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(m)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

fn is_json(r: &Response) -> bool {
    r.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// Whether `r` is a web page (`text/html`), which keeps its own error text.
fn is_html(r: &Response) -> bool {
    r.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"))
}

/// A route label for a path no route matched (bounded: no user text in metrics).
fn route_of(path: &str) -> String {
    if path == "/mcp" || path.starts_with("/mcp/") {
        "/mcp".into()
    } else if path.starts_with("/files/") {
        "/files/{*path}".into()
    } else {
        "other".into()
    }
}
