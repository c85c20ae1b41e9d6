//! The endpoints of `trove serve`. Each takes a handle of the current generation, does its work on
//! a blocking thread (DuckDB and the searches are synchronous), and answers JSON; bad input is a
//! 4xx [`ApiError`] saying what is wrong.
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use trove_query::sql::to_json;
use trove_query::{Bundle, Fusion, Mode, QueryOptions, search_all};

use super::Shared;
use super::state::{Generation, Lane, Lease};
use crate::structure::{
    Follow, check_deps_filters, check_symbol_kinds, deps_sql, refs_sql, refs_sql_any_case,
    symbols_sql,
};
use crate::tools::ToolError;
use trove_base::error::ErrorKind;

/// A JSON error: `{"error": {"status", "code", "message"}}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
}

fn not_found_error(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "status": self.status.as_u16(),
            "code": self.code,
            "message": self.message,
        }});
        (self.status, Json(body)).into_response()
    }
}

/// The status and code of a trove error of kind `kind` ([`ErrorKind::http_status`]).
fn of_kind(kind: ErrorKind, message: String) -> ApiError {
    let status =
        StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    ApiError::new(status, kind.code(), message)
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        let kind = e.chain().find_map(crate::kind_of);
        of_kind(kind.unwrap_or(ErrorKind::Internal), format!("{e:#}"))
    }
}

impl From<trove_base::Error> for ApiError {
    fn from(e: trove_base::Error) -> Self {
        of_kind(e.kind(), e.to_string())
    }
}

impl From<trove_query::Error> for ApiError {
    fn from(e: trove_query::Error) -> Self {
        of_kind(e.kind(), e.to_string())
    }
}

type ApiResult = Result<Response, ApiError>;

/// JSON with the generation that answered.
fn answer(v: &Value, generation: u64) -> Response {
    let mut r = Json(v).into_response();
    r.headers_mut()
        .insert("x-trove-generation", generation.into());
    r
}

/// Runs `f` on a handle of the current generation in `lane`, on a blocking thread; its JSON, with
/// the generation that answered.
async fn on_bundles<F>(app: &Shared, lane: Lane, f: F) -> ApiResult
where
    F: FnOnce(&Lease) -> Result<Value, ApiError> + Send + 'static,
{
    let lease = app.served.lease(lane).await;
    let out = tokio::task::spawn_blocking(move || {
        test_delay();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&lease)));
        let generation = lease.generation.id;
        drop(lease);
        (r, generation)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))?;
    // An error from the bundles names the generation that gave it, as an answer does.
    let (r, g) = out;
    let e = match r {
        Ok(Ok(v)) => return Ok(answer(&v, g)),
        Ok(Err(e)) => e,
        Err(p) => ApiError::internal(format!(
            "failed inside trove: {}",
            crate::mcp::panic_text(p.as_ref())
        )),
    };
    let mut resp = e.into_response();
    resp.headers_mut().insert("x-trove-generation", g.into());
    Ok(resp)
}

/// The fail point `serve-request` (live with the `test-hooks` feature), evaluated by every
/// request: `FAILPOINTS=serve-request=sleep(1500)` slows each one down (the tests of timeouts and
/// of the concurrency limit need slow requests).
fn test_delay() {
    fail::fail_point!("serve-request");
}

/// The indexes in `served` (the served names, in order) of the bundles a request names (`None`:
/// all); an unknown name is 404, an empty list 400.
fn pick(served: &[&str], names: Option<&[String]>) -> Result<Vec<usize>, ApiError> {
    let Some(names) = names else {
        return Ok((0..served.len()).collect());
    };
    if names.is_empty() {
        return Err(bad(
            "bundles is empty: name at least one, or leave it out for all",
        ));
    }
    let mut out: Vec<usize> = Vec::with_capacity(names.len());
    for n in names {
        let i = served.iter().position(|s| s == n).ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_bundle",
                format!(
                    "no bundle named {n:?} is served (GET /bundles lists them: {})",
                    served.join(", ")
                ),
            )
        })?;
        // A bundle named twice is searched once, as `trove query b b` does.
        if !out.contains(&i) {
            out.push(i);
        }
    }
    Ok(out)
}

/// The bundles of `lease` a request names (`None`: all), as [`pick`] chooses them.
fn chosen<'a>(lease: &'a Lease, names: Option<&[String]>) -> Result<Vec<&'a Bundle>, ApiError> {
    let all = lease.tools().bundles();
    let labels: Vec<&str> = all.iter().map(|b| b.label.as_str()).collect();
    Ok(pick(&labels, names)?.into_iter().map(|i| &all[i]).collect())
}

/// A string or a list of strings.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn list(v: Option<OneOrMany>) -> Vec<String> {
        match v {
            None => Vec::new(),
            Some(OneOrMany::One(s)) => vec![s],
            Some(OneOrMany::Many(v)) => v,
        }
    }
}

/// The body of `POST /query`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryBody {
    query: String,
    #[serde(default)]
    mode: Option<String>,
    /// The vector arm's weight in hybrid fusion (BM25's is 1).
    #[serde(default)]
    alpha: Option<f64>,
    #[serde(default)]
    k: Option<usize>,
    #[serde(default)]
    source_type: Option<OneOrMany>,
    #[serde(default)]
    language: Option<OneOrMany>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    kind: Option<OneOrMany>,
    #[serde(default)]
    bundles: Option<Vec<String>>,
    #[serde(default)]
    content: Option<bool>,
    #[serde(default)]
    fusion: Option<String>,
    /// How many of the best hits late interaction reorders (a local model's bundle); 0: none.
    #[serde(default)]
    rerank: Option<usize>,
}

/// Most results one query returns.
const MAX_K: usize = 1000;

/// A JSON body read as `T`, or a 400/413 saying why not.
fn parse_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<T, ApiError> {
    let body = body.map_err(|e| {
        let status = e.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "payload_too_large"
        } else {
            "bad_request"
        };
        ApiError::new(status, code, e.body_text())
    })?;
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| bad(format!("the body is not the JSON expected: {e}")))?;
    // No bundle holds a NUL, and DuckDB refuses one in a statement: refused here as the GET
    // routes' parameters and the MCP tools' arguments are.
    if let Some(field) = nul_field(&v, "") {
        return Err(bad(format!("{field} must not contain a NUL character")));
    }
    serde_json::from_value(v).map_err(|e| bad(format!("the body is not the JSON expected: {e}")))
}

/// The first field of `v` (a dotted path from `at`) whose string holds a NUL, if any.
fn nul_field(v: &Value, at: &str) -> Option<String> {
    let name = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        Value::String(s) if s.contains('\0') => Some(if at.is_empty() {
            "the body".into()
        } else {
            at.into()
        }),
        Value::Array(items) => items.iter().find_map(|x| nul_field(x, at)),
        Value::Object(m) => m.iter().find_map(|(k, x)| {
            if k.contains('\0') {
                Some(format!("the field name {k:?}"))
            } else {
                nul_field(x, &name(k))
            }
        }),
        _ => None,
    }
}

fn value_enum<T: clap::ValueEnum>(what: &str, s: &str) -> Result<T, ApiError> {
    T::from_str(s, true).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
            .collect();
        bad(format!("{what} {s:?} is not one of {}", names.join(", ")))
    })
}

/// `POST /query`: the hits of `trove query --format json`.
pub async fn query(
    State(app): State<Shared>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> ApiResult {
    let q: QueryBody = parse_body(body)?;
    let text = q.query.trim().to_string();
    if text.is_empty() {
        return Err(bad("query is empty: send {\"query\": \"what to find\"}"));
    }
    let k = q.k.unwrap_or(10);
    if !(1..=MAX_K).contains(&k) {
        return Err(bad(format!("k must be from 1 to {MAX_K}, got {k}")));
    }
    if let Some(r) = q.rerank.filter(|r| *r > MAX_K) {
        return Err(bad(format!(
            "rerank must be from 0 (off) to {MAX_K}, got {r}"
        )));
    }
    // The server's own `--rerank` is the operator's choice, unbounded like the CLI's.
    let rerank = q.rerank.unwrap_or(app.served.rerank());
    if q.alpha.is_some_and(|w| !(w.is_finite() && w >= 0.0)) {
        return Err(bad(
            "alpha (the vector arm's weight) must be a non-negative number",
        ));
    }
    let types = OneOrMany::list(q.source_type);
    if let Some(t) = types
        .iter()
        .find(|t| !["code", "doc", "test", "config"].contains(&t.as_str()))
    {
        return Err(bad(format!(
            "source_type {t:?} is not one of code, doc, test, config"
        )));
    }
    let opts = QueryOptions {
        mode: match &q.mode {
            Some(m) => value_enum::<Mode>("mode", m)?,
            None => Mode::Hybrid,
        },
        k,
        langs: OneOrMany::list(q.language),
        types,
        // An empty glob is refused by check_filters, as `trove query --path ''` is.
        path: q.path,
        kinds: OneOrMany::list(q.kind),
        content: q.content.unwrap_or(false),
        vector_weight: q.alpha,
        fusion: match &q.fusion {
            Some(f) => value_enum::<Fusion>("fusion", f)?,
            None => Fusion::default(),
        },
        rerank,
    };
    let names = q.bundles;
    on_bundles(&app, Lane::Search, move |lease| {
        let bundles = chosen(lease, names.as_deref())?;
        crate::filters::check_filters(bundles.iter().copied(), &opts)
            .map_err(|e| bad(format!("{e:#}")))?;
        let hits = search_all(bundles.iter().copied(), &text, &opts)?;
        serde_json::to_value(hits).map_err(|e| ApiError::internal(e.to_string()))
    })
    .await
}

/// Query-string parameters, read and checked (repeatable ones too).
struct Params {
    route: &'static str,
    pairs: Vec<(String, String)>,
}

impl Params {
    fn new(
        route: &'static str,
        q: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
        allowed: &[&str],
    ) -> Result<Self, ApiError> {
        let Query(pairs) = q.map_err(|e| bad(format!("{route}: {}", e.body_text())))?;
        if let Some((k, _)) = pairs.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            return Err(bad(format!(
                "{route}: unknown parameter {k:?} (it takes {})",
                allowed.join(", ")
            )));
        }
        // No bundle holds a NUL, and DuckDB refuses one in a statement.
        if let Some((k, _)) = pairs.iter().find(|(_, v)| v.contains('\0')) {
            return Err(bad(format!(
                "{route}: the parameter {k} must not contain a NUL character"
            )));
        }
        Ok(Params { route, pairs })
    }

    fn get(&self, k: &str) -> Option<String> {
        self.pairs
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    fn all(&self, k: &str) -> Vec<String> {
        self.pairs
            .iter()
            .filter(|(n, v)| n == k && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_string())
            .collect()
    }

    fn need(&self, k: &str) -> Result<String, ApiError> {
        self.get(k)
            .ok_or_else(|| bad(format!("{}: the parameter {k} is required", self.route)))
    }

    fn int(&self, k: &str, lo: usize, hi: usize, default: usize) -> Result<usize, ApiError> {
        match self.get(k) {
            None => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (lo..=hi).contains(&n) => Ok(n),
                _ => Err(bad(format!(
                    "{}: {k} must be a whole number from {lo} to {hi}, got {v:?}",
                    self.route
                ))),
            },
        }
    }

    /// The `bundle` parameter as a list of one (`None`: all).
    fn bundle(&self) -> Option<Vec<String>> {
        self.get("bundle").map(|b| vec![b])
    }
}

/// Runs `sql` on each bundle chosen; the rows as objects with their bundle's name.
fn rows_of(bundles: &[&Bundle], sql: &str) -> Result<Value, ApiError> {
    rows_upto(bundles, sql, usize::MAX)
}

/// [`rows_of`], at most `k` rows in all (each bundle's query has `k` too: a few bundles'
/// first rows, in the order the bundles are named).
fn rows_upto(bundles: &[&Bundle], sql: &str, k: usize) -> Result<Value, ApiError> {
    let mut out = Vec::new();
    for b in bundles {
        if out.len() >= k {
            break;
        }
        let (names, rows) = b.run_sql(sql)?;
        for r in rows {
            let mut o: serde_json::Map<String, Value> =
                names.iter().cloned().zip(r.iter().map(to_json)).collect();
            o.insert("bundle".into(), Value::String(b.label.clone()));
            out.push(Value::Object(o));
        }
    }
    out.truncate(k);
    Ok(Value::Array(out))
}

type QueryParams = Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>;

/// `GET /symbols?name=`: definitions, as `trove symbols --format json`.
pub async fn symbols(State(app): State<Shared>, q: QueryParams) -> ApiResult {
    let p = Params::new("/symbols", q, &["name", "kind", "k", "bundle"])?;
    let name = p.need("name")?;
    let k = p.int("k", 1, MAX_K, 20)?;
    let kinds = p.all("kind");
    let sql = symbols_sql(&name, &kinds, k);
    let names = p.bundle();
    on_bundles(&app, Lane::Lookup, move |lease| {
        let bundles = chosen(lease, names.as_deref())?;
        check_symbol_kinds(bundles.iter().copied(), &kinds)
            .map_err(|e| bad(format!("/symbols: {e:#}")))?;
        rows_upto(&bundles, &sql, k)
    })
    .await
}

/// `GET /refs?name=&follow=`: references, as `trove refs --format json`.
pub async fn refs(State(app): State<Shared>, q: QueryParams) -> ApiResult {
    let p = Params::new("/refs", q, &["name", "follow", "k", "bundle"])?;
    let name = p.need("name")?;
    let follow = match p.get("follow").as_deref().unwrap_or("callers") {
        "callers" => Follow::Callers,
        "callees" => Follow::Callees,
        "imports" => Follow::Imports,
        "subtypes" => Follow::Subtypes,
        "uses" => Follow::Uses,
        "all" => Follow::All,
        other => {
            return Err(bad(format!(
                "/refs: follow {other:?} is not one of callers, callees, imports, subtypes, uses, all"
            )));
        }
    };
    let k = p.int("k", 1, 10_000, 100)?;
    let sql = refs_sql(&name, follow, k);
    let any_case = refs_sql_any_case(&name, follow, k);
    let names = p.bundle();
    on_bundles(&app, Lane::Lookup, move |lease| {
        let bundles = chosen(lease, names.as_deref())?;
        match rows_upto(&bundles, &sql, k)? {
            Value::Array(a) if a.is_empty() => rows_upto(&bundles, &any_case, k),
            found => Ok(found),
        }
    })
    .await
}

/// `GET /deps`: declared dependencies, as `trove deps --format json`.
pub async fn deps(State(app): State<Shared>, q: QueryParams) -> ApiResult {
    let p = Params::new("/deps", q, &["ecosystem", "scope", "name", "bundle"])?;
    let (ecosystems, scopes) = (p.all("ecosystem"), p.all("scope"));
    let sql = deps_sql(&ecosystems, &scopes, p.get("name").as_deref());
    let names = p.bundle();
    on_bundles(&app, Lane::Lookup, move |lease| {
        let bundles = chosen(lease, names.as_deref())?;
        check_deps_filters(bundles.iter().copied(), &ecosystems, &scopes)
            .map_err(|e| bad(format!("/deps: {e:#}")))?;
        rows_of(&bundles, &sql)
    })
    .await
}

/// The index in `lease` of the one bundle a request is about: the one named, or the only one
/// served.
fn one_bundle(lease: &Lease, name: Option<String>, route: &str) -> Result<usize, ApiError> {
    let labels: Vec<&str> = lease
        .tools()
        .bundles()
        .iter()
        .map(|b| b.label.as_str())
        .collect();
    match name {
        Some(n) => Ok(pick(&labels, Some(std::slice::from_ref(&n)))?[0]),
        None if labels.len() == 1 => Ok(0),
        None => Err(bad(format!(
            "{route}: several bundles are served: name one with ?bundle= ({})",
            labels.join(", ")
        ))),
    }
}

/// `GET /map`: the repository's map, as `trove map --format json`.
pub async fn map(State(app): State<Shared>, q: QueryParams) -> ApiResult {
    let p = Params::new("/map", q, &["path", "depth", "bundle"])?;
    let path = p.get("path");
    let depth = match p.get("depth") {
        None => None,
        Some(_) => Some(p.int("depth", 1, crate::map::MAX_DEPTH, 1)?),
    };
    let name = p.get("bundle");
    on_bundles(&app, Lane::Lookup, move |lease| {
        let i = one_bundle(lease, name, "/map")?;
        let b = &lease.tools().bundles()[i];
        // The map's rows are kept by the handle (as for the MCP read_map): loaded once per version.
        let files = lease.tools().map_files(i)?;
        if let Some(v) =
            crate::map::map_json(files, &b.manifest.source.repo, path.as_deref(), depth)?
        {
            return Ok(v);
        }
        match path.as_deref() {
            Some(p) if crate::map::is_file(b, p)? => Err(bad(format!(
                "/map: {p} is a file, not a folder: GET /files/{} returns it",
                p.trim_matches('/')
            ))),
            p => Err(not_found_error(format!(
                "/map: no indexed file under {}",
                p.unwrap_or("the root")
            ))),
        }
    })
    .await
}

/// A repository path from a URL: relative, no `.`/`..` parts, no backslashes or NULs.
fn repo_path(raw: &str) -> Result<String, ApiError> {
    let bad_path = |why: &str| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("/files: {raw:?} {why}: paths are the repository's, as /query shows them"),
        )
    };
    if raw.is_empty() {
        return Err(bad_path("is empty"));
    }
    if raw.starts_with('/') {
        return Err(bad_path("is absolute"));
    }
    if raw.contains('\\') || raw.contains('\0') {
        return Err(bad_path("holds a backslash or NUL"));
    }
    let p = raw.trim_start_matches("./");
    if p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(bad_path("has an empty, `.` or `..` part"));
    }
    Ok(p.to_string())
}

/// `GET /files/{path}?start=&end=`: a file's text from the bundle.
pub async fn file(
    State(app): State<Shared>,
    path: Result<UrlPath<String>, axum::extract::rejection::PathRejection>,
    q: QueryParams,
) -> ApiResult {
    let UrlPath(raw) = path.map_err(|e| bad(format!("/files: {}", e.body_text())))?;
    let path = repo_path(&raw)?;
    let p = Params::new("/files", q, &["start", "end", "bundle"])?;
    let start = p.int("start", 1, usize::MAX >> 1, 1)?;
    let end = match p.get("end") {
        None => None,
        Some(_) => Some(p.int("end", 1, usize::MAX >> 1, 1)?),
    };
    if end.is_some_and(|e| e < start) {
        return Err(bad("/files: end comes before start"));
    }
    let names = p.bundle();
    on_bundles(&app, Lane::Search, move |lease| {
        let bundles = chosen(lease, names.as_deref())?;
        for b in &bundles {
            if let Some(text) = b.file_text(&path)? {
                let (lines, total) =
                    crate::show::numbered_lines(&text, (start > 1).then_some(start), end)
                        .map_err(|e| bad(format!("/files: {e:#}")))?;
                let last = lines.last().map_or(start.saturating_sub(1), |l| l.0);
                let body: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
                return Ok(json!({
                    "bundle": b.label,
                    "path": path,
                    "start_line": start,
                    "end_line": last,
                    "total_lines": total,
                    "text": body,
                }));
            }
        }
        let why = crate::show::not_a_file_in(&bundles, &path)?;
        Err(not_found_error(format!("/files: {why:#}")))
    })
    .await
}

/// `GET /files/` without a path.
pub async fn file_missing() -> ApiError {
    bad("/files/{path}: name a file, e.g. /files/src/main.rs")
}

/// One bundle's line in `/bundles`, as generation `g` serves it.
fn bundle_info(app: &Shared, g: &Generation, i: usize) -> Value {
    let slot = &app.served.slots[i];
    let (s, m) = (&g.snapshots[i], &g.manifests[i]);
    let mut langs: Vec<(&String, u64)> = m.languages.iter().map(|(k, v)| (k, v.files)).collect();
    langs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    json!({
        "name": slot.name,
        "path": slot.path.display().to_string(),
        "version": s.version,
        "generation": g.id,
        "loaded_at": s.loaded_at,
        "repo": m.source.repo,
        "commit": m.source.commit,
        "branch": m.source.branch,
        "created_at": m.created_at,
        "files": m.counts.files,
        "chunks": m.counts.chunks,
        "symbols": m.counts.symbols,
        "refs": m.counts.refs,
        "languages": langs.into_iter().map(|(k, n)| json!({"language": k, "files": n})).collect::<Vec<_>>(),
        "embedder": {"backend": m.embedder.backend, "model": m.embedder.model, "dim": m.embedder.dim},
    })
}

/// `GET /bundles`.
pub async fn bundles(State(app): State<Shared>) -> Response {
    // One generation for the whole list (a reload may swap in another meanwhile).
    let g = app.served.current();
    let list: Vec<Value> = (0..app.served.slots.len())
        .map(|i| bundle_info(&app, &g, i))
        .collect();
    answer(&Value::Array(list), g.id)
}

/// `GET /health`: ok, or degraded while a bundle's new version could not be switched to.
pub async fn health(State(app): State<Shared>) -> Response {
    let g = app.served.current();
    let mut degraded = false;
    let list: Vec<Value> = app
        .served
        .slots
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let st = slot.status().clone();
            degraded |= st.failed.is_some();
            json!({
                "name": slot.name,
                "version": g.snapshots[i].version,
                "loaded_at": g.snapshots[i].loaded_at,
                "reloads": st.reloads_ok,
                "failed_reloads": st.reloads_failed,
                "error": st.failed.map(|f| json!({"message": f.message, "at": f.at})),
            })
        })
        .collect();
    answer(
        &json!({
            "status": if degraded { "degraded" } else { "ok" },
            "generation": g.id,
            "uptime_s": app.started.elapsed().as_secs(),
            "version": env!("CARGO_PKG_VERSION"),
            "bundles": list,
        }),
        g.id,
    )
}

/// `GET /metrics`.
pub async fn metrics(State(app): State<Shared>) -> Response {
    use super::metrics::{esc, family};
    use std::fmt::Write;
    let g = app.served.current();
    let mut extra = String::new();
    family(
        &mut extra,
        "trove_bundle_info",
        "gauge",
        "The version of each bundle being served.",
    );
    for (i, slot) in app.served.slots.iter().enumerate() {
        let m = &g.manifests[i];
        let _ = writeln!(
            extra,
            "trove_bundle_info{{bundle=\"{}\",version=\"{}\",commit=\"{}\"}} 1",
            esc(&slot.name),
            esc(&g.snapshots[i].version),
            esc(m.source.commit.as_deref().unwrap_or(""))
        );
    }
    family(
        &mut extra,
        "trove_generation",
        "gauge",
        "Reload generation serving now.",
    );
    let _ = writeln!(extra, "trove_generation {}", g.id);
    family(
        &mut extra,
        "trove_reloads_total",
        "counter",
        "Reloads of a bundle, by result.",
    );
    for slot in &app.served.slots {
        let st = slot.status().clone();
        for (result, n) in [("ok", st.reloads_ok), ("failed", st.reloads_failed)] {
            let _ = writeln!(
                extra,
                "trove_reloads_total{{bundle=\"{}\",result=\"{result}\"}} {n}",
                esc(&slot.name)
            );
        }
    }
    let mut r = app.metrics.render(&extra).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

/// `GET /openapi.json`.
pub async fn openapi() -> Response {
    let mut r = OPENAPI.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

const OPENAPI: &str = include_str!("openapi.json");

/// The body of `POST /ask`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
struct AskBody {
    question: String,
    #[serde(default)]
    bundles: Option<Vec<String>>,
    #[serde(default)]
    max_steps: Option<usize>,
}

fn not_configured() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "not_configured",
        "no model server is configured: start trove serve with --ask-url (and --ask-model)",
    )
}

/// `POST /ask`: the research loop (`trove ask --format json`) over the bundles. It opens bundle
/// handles of its own over the current version (it holds them for minutes of model calls: the
/// pools stay free), at most `--workers` loops at once.
#[cfg(feature = "openai")]
pub async fn ask(
    State(app): State<Shared>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> ApiResult {
    if app.ask.is_none() {
        return Err(not_configured());
    }
    let b: AskBody = parse_body(body)?;
    let question = b.question.trim().to_string();
    if question.is_empty() {
        return Err(bad("question is empty"));
    }
    let steps = b.max_steps.unwrap_or(12);
    if !(1..=50).contains(&steps) {
        return Err(bad("max_steps must be from 1 to 50"));
    }
    let generation = app.served.current();
    let names: Vec<String> = app.served.slots.iter().map(|s| s.name.clone()).collect();
    let picked = pick(
        &names.iter().map(String::as_str).collect::<Vec<_>>(),
        b.bundles.as_deref(),
    )?;
    let permit = app
        .ask_permits
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let app2 = app.clone();
    let g = generation.id;
    // Set when this handler's future is dropped (the client went away, or --ask-timeout's 504
    // answered first): the loop then stops before its next model or tool call.
    let gone = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _on_drop = SetOnDrop(gone.clone());
    let out = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let cancelled = || gone.load(std::sync::atomic::Ordering::Relaxed);
        test_delay();
        let run = || -> Result<Value, ApiError> {
            let cfg = app2.ask.as_ref().expect("checked above");
            let opened = picked
                .iter()
                .map(|&i| {
                    let mut o = Bundle::open(&generation.snapshots[i].dir)?;
                    o.label = names[i].clone();
                    Ok(o)
                })
                .collect::<trove_query::Result<Vec<_>>>()?;
            let tools = crate::tools::Tools::from_bundles(opened).with_rerank(app2.served.rerank());
            let r = crate::ask::research(&tools, cfg, &question, steps, false, &cancelled)
                .map_err(|u| {
                    ApiError::new(
                        StatusCode::BAD_GATEWAY,
                        "model_failed",
                        format!("{:#} (after {} research steps)", u.error, u.steps()),
                    )
                })?;
            Ok(r.to_json(&question, &cfg.model))
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| Err(ApiError::internal("the research loop failed inside trove")))
    })
    .await
    .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))?;
    out.map(|v| answer(&v, g))
}

/// Sets its flag when dropped.
#[cfg(feature = "openai")]
struct SetOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);

#[cfg(feature = "openai")]
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `POST /ask` in a build without the `openai` feature: no model client.
#[cfg(not(feature = "openai"))]
pub async fn ask(State(_app): State<Shared>) -> ApiError {
    not_configured()
}

/// Unknown route.
pub async fn not_found() -> ApiError {
    not_found_error(
        "no such endpoint: POST /query, GET /symbols /refs /map /deps /files/{path} /bundles \
         /health /metrics /openapi.json, POST /ask, /mcp",
    )
}

/// Known route, wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method (GET /openapi.json describes them)",
    )
}

/// The MCP tools on handles of the current generation.
#[derive(Clone)]
pub struct ServedTools(pub Shared);

impl crate::mcp::ToolHost for ServedTools {
    /// Bounded as HTTP requests are (rmcp runs tool calls inside its sessions, past the HTTP
    /// layers): at most `--max-in-flight` at once, each within `--timeout`.
    async fn run(&self, name: String, args: Value) -> Result<Result<String, ToolError>, String> {
        let Ok(_permit) = self.0.mcp_permits.clone().try_acquire_owned() else {
            return Ok(Err(ToolError::Failed(
                "the server is handling as many tool calls as it may: retry shortly".into(),
            )));
        };
        let lane = if name == "search_code" || name == "read_file" {
            Lane::Search
        } else {
            Lane::Lookup
        };
        let app = self.0.clone();
        let work = async move {
            let lease = app.served.lease(lane).await;
            tokio::task::spawn_blocking(move || {
                test_delay();
                crate::mcp::call_caught(lease.tools(), &name, &args)
            })
            .await
            .map_err(|e| format!("tool task failed: {e}"))?
        };
        match tokio::time::timeout(self.0.timeout, work).await {
            Ok(r) => r,
            Err(_) => Ok(Err(ToolError::Failed(format!(
                "the call took longer than the server allows ({:.0} s): narrow it (a path, a kind, fewer results)",
                self.0.timeout.as_secs_f64()
            )))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/openapi.json` states the limits and defaults `POST /query` applies.
    #[test]
    fn openapi_states_the_query_limits_the_handler_applies() {
        let o: Value = serde_json::from_str(OPENAPI).unwrap();
        let p = &o["components"]["schemas"]["QueryRequest"]["properties"];
        assert_eq!(p["k"]["maximum"], MAX_K);
        assert_eq!(p["rerank"]["maximum"], MAX_K);
        assert_eq!(p["rerank"]["default"], trove_query::RERANK);
        assert_eq!(p["k"]["default"], 10);
    }
}
