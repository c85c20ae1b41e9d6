//! The research tools an agent gets over one or more bundles — `read_map`, `search_code`,
//! `resolve_symbol`, `read_file`, `list_bundles` — shared by `trove mcp` (as MCP tools) and
//! `trove ask` (as OpenAI function tools). Each returns bounded text: at most [`MAX_LINES`]
//! lines, with a note on how to ask for more. Bad arguments, unknown paths and unknown symbols are
//! [`ToolError::Failed`] with a message written for the model; nothing reads the file system
//! beyond the bundles named.
use serde_json::{Value, json};

use trove_query::{Bundle, Mode, QueryOptions, search_all};

use crate::map::{MapFiles, MapView};
use crate::structure::{Follow, ref_line, refs_rows, symbol_line, symbols_sql};

/// Lines one tool call returns at most.
pub const MAX_LINES: usize = 200;
/// Results `search_code` returns at most.
const MAX_K: usize = 50;
/// Snippet lines per search result.
const SNIPPET_LINES: usize = 6;

/// Why a call gave no result.
#[derive(Debug)]
pub enum ToolError {
    /// No tool of that name.
    Unknown(String),
    /// A bad argument, an unknown path or symbol, or a failure reading the bundle.
    Failed(String),
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::Unknown(n) => write!(
                f,
                "unknown tool {n:?}: the tools are {}",
                TOOL_NAMES.join(", ")
            ),
            ToolError::Failed(m) => f.write_str(m),
        }
    }
}

fn failed(m: impl Into<String>) -> ToolError {
    ToolError::Failed(m.into())
}

impl From<anyhow::Error> for ToolError {
    fn from(e: anyhow::Error) -> Self {
        ToolError::Failed(format!("{e:#}"))
    }
}

impl From<trove_base::Error> for ToolError {
    fn from(e: trove_base::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

impl From<trove_query::Error> for ToolError {
    fn from(e: trove_query::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

/// The tools' names, in the order they are listed.
pub const TOOL_NAMES: &[&str] = &[
    "read_map",
    "search_code",
    "resolve_symbol",
    "read_file",
    "list_bundles",
];

/// One tool's name, description and JSON schema of its arguments.
pub struct ToolSpec {
    /// Its name.
    pub name: &'static str,
    /// What it does, for a model.
    pub description: &'static str,
    /// JSON schema of its arguments (an object).
    pub schema: Value,
}

/// The five tools.
pub fn specs() -> Vec<ToolSpec> {
    let bundle = json!({"type": "string", "description": "Which bundle (as list_bundles names it); default: every bundle, or the first that has the path."});
    vec![
        ToolSpec {
            name: "read_map",
            description: "Read the map of the repository: its folders with file, definition and language counts, and each file's one-sentence summary. Entries the rest of the code depends on most come first; tests, docs and examples come after the code they serve. Start here to learn the layout, then pass a folder as `path` to look inside it.",
            schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A folder of the repository (e.g. `src/http`); default: the whole tree."},
                    "depth": {"type": "integer", "minimum": 1, "maximum": 12, "description": "Folder levels to expand; default: as many as fit in about 60 lines."},
                    "bundle": bundle,
                },
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "search_code",
            description: "Search the code for a question or words (hybrid: BM25 keywords fused with embeddings). Returns the best chunks as `path:start-end`, with kind, symbol path and the first lines. Use plain words for concepts (`how are retries backed off`), exact identifiers with mode=bm25, and narrow with language, path or kind.",
            schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for: a question, words, or an identifier."},
                    "mode": {"type": "string", "enum": ["hybrid", "bm25", "vector"], "description": "hybrid (default), bm25 (exact words and identifiers) or vector (meaning)."},
                    "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "description": "How many results (default 10)."},
                    "language": {"type": "string", "description": "Only this language id (python, go, rust, typescript, ...)."},
                    "path": {"type": "string", "description": "Only files under this folder, or matching this glob (`src/**/*.py`)."},
                    "kind": {"type": "string", "description": "Only chunks of this kind (function, method, class, struct, section, ...)."},
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "resolve_symbol",
            description: "Follow a name through the code: `definition` (where it is defined, with signature and doc), `references` (every place that names it: calls, imports, type uses, subclasses), `callers` (calls of it), `callees` (what definitions of that name call), `subtypes` (types that extend or implement it). `name` may be a bare name or a path like `Client.send` or `Client::send`.",
            schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The symbol's name or the end of its path."},
                    "action": {"type": "string", "enum": ["definition", "references", "callers", "callees", "subtypes"]},
                    "bundle": bundle,
                },
                "required": ["name", "action"],
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "read_file",
            description: "Read a file of the repository from the bundle, with line numbers (the text as indexed; secrets are redacted). At most 200 lines per call: pass start_line/end_line to read a part, and read on from where the note says.",
            schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file's repository path, as search_code and read_map show it."},
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line (default 1)."},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line, inclusive (default: start_line + 199)."},
                    "bundle": bundle,
                },
                "required": ["path"],
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "list_bundles",
            description: "List the bundles being served: each one's name, repository, commit, when it was indexed, file/chunk/definition counts, languages and embedder.",
            schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
    ]
}

/// The bundles the tools read.
pub struct Tools {
    bundles: Vec<Bundle>,
    /// Per bundle, the rows its map is drawn from (loaded on the first read_map).
    maps: Vec<std::sync::OnceLock<MapFiles>>,
    /// How many of search_code's best hits late interaction reorders.
    rerank: usize,
}

/// The arguments of one call, checked as they are read.
struct Args<'a> {
    tool: &'a str,
    v: serde_json::Map<String, Value>,
}

impl<'a> Args<'a> {
    fn new(tool: &'a str, v: &Value, allowed: &[&str]) -> Result<Self, ToolError> {
        let v = match v {
            Value::Null => serde_json::Map::new(),
            Value::Object(m) => m.clone(),
            other => {
                return Err(failed(format!(
                    "{tool}: arguments must be an object, got {other}"
                )));
            }
        };
        if let Some(k) = v.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(failed(format!(
                "{tool}: unknown argument {k:?} (it takes {})",
                allowed.join(", ")
            )));
        }
        Ok(Args { tool, v })
    }

    fn str(&self, k: &str) -> Result<Option<String>, ToolError> {
        match self.v.get(k) {
            None | Some(Value::Null) => Ok(None),
            // No bundle holds a NUL, and DuckDB refuses one in a statement.
            Some(Value::String(s)) if s.contains('\0') => Err(failed(format!(
                "{}: {k} must not contain a NUL character",
                self.tool
            ))),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
            Some(other) => Err(failed(format!(
                "{}: {k} must be a string, got {other}",
                self.tool
            ))),
        }
    }

    fn need_str(&self, k: &str) -> Result<String, ToolError> {
        self.str(k)?.ok_or_else(|| {
            failed(format!(
                "{}: {k} is required (a non-empty string)",
                self.tool
            ))
        })
    }

    fn int(&self, k: &str, lo: usize, hi: usize) -> Result<Option<usize>, ToolError> {
        match self.v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let n = v
                    .as_u64()
                    .or_else(|| {
                        v.as_f64()
                            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                            .map(|f| f as u64)
                    })
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()));
                match n {
                    Some(n) if (lo as u64..=hi as u64).contains(&n) => Ok(Some(n as usize)),
                    _ => Err(failed(format!(
                        "{}: {k} must be a whole number from {lo} to {hi}, got {v}",
                        self.tool
                    ))),
                }
            }
        }
    }
}

/// `lines` cut to [`MAX_LINES`], with a note saying how to see the rest.
fn bounded(lines: Vec<String>, more: &str) -> String {
    bounded_with(lines, |cut| format!("[{cut} more lines not shown: {more}]"))
}

/// `lines` cut to [`MAX_LINES`], then the line `note` gives for how many were cut.
fn bounded_with(mut lines: Vec<String>, note: impl FnOnce(usize) -> String) -> String {
    if lines.len() > MAX_LINES {
        let cut = lines.len() - MAX_LINES;
        lines.truncate(MAX_LINES);
        lines.push(note(cut));
    }
    lines.join("\n")
}

impl Tools {
    /// Opens the bundles.
    pub fn open(paths: &[std::path::PathBuf]) -> anyhow::Result<Self> {
        if paths.is_empty() {
            anyhow::bail!("name at least one bundle");
        }
        let bundles = paths
            .iter()
            .map(|p| Bundle::open(p))
            .collect::<trove_query::Result<Vec<_>>>()?;
        Ok(Tools::from_bundles(bundles))
    }

    /// Tools over bundles already open (their labels are the names the tools show).
    pub fn from_bundles(bundles: Vec<Bundle>) -> Self {
        let maps = bundles.iter().map(|_| std::sync::OnceLock::new()).collect();
        Tools {
            bundles,
            maps,
            rerank: trove_query::RERANK,
        }
    }

    /// These tools with search_code's late interaction reordering `n` hits (0: none).
    pub fn with_rerank(mut self, n: usize) -> Self {
        self.rerank = n;
        self
    }

    /// The rows of bundle `i`'s map, loaded on first use and kept.
    pub fn map_files(&self, i: usize) -> anyhow::Result<&MapFiles> {
        if let Some(f) = self.maps[i].get() {
            return Ok(f);
        }
        let f = MapFiles::load(&self.bundles[i], None)?;
        Ok(self.maps[i].get_or_init(|| f))
    }

    /// The open bundles.
    pub fn bundles(&self) -> &[Bundle] {
        &self.bundles
    }

    /// Runs tool `name` with `args` (a JSON object).
    pub fn call(&self, name: &str, args: &Value) -> Result<String, ToolError> {
        match name {
            "read_map" => self.read_map(&Args::new(name, args, &["path", "depth", "bundle"])?),
            "search_code" => self.search_code(&Args::new(
                name,
                args,
                &["query", "mode", "k", "language", "path", "kind"],
            )?),
            "resolve_symbol" => {
                self.resolve_symbol(&Args::new(name, args, &["name", "action", "bundle"])?)
            }
            "read_file" => self.read_file(&Args::new(
                name,
                args,
                &["path", "start_line", "end_line", "bundle"],
            )?),
            "list_bundles" => {
                Args::new(name, args, &[])?;
                Ok(self.list_bundles())
            }
            other => Err(ToolError::Unknown(other.to_string())),
        }
    }

    /// The indexes of the bundles a call covers: the one named, else all.
    fn chosen(&self, a: &Args<'_>) -> Result<Vec<usize>, ToolError> {
        match a.str("bundle")? {
            None => Ok((0..self.bundles.len()).collect()),
            Some(name) => self
                .bundles
                .iter()
                .position(|b| b.label == name || b.manifest.source.repo == name)
                .map(|i| vec![i])
                .ok_or_else(|| {
                    failed(format!(
                        "{}: no bundle named {name:?} (list_bundles names them: {})",
                        a.tool,
                        self.bundles
                            .iter()
                            .map(|b| b.label.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }),
        }
    }

    fn several(&self) -> bool {
        self.bundles.len() > 1
    }

    fn read_map(&self, a: &Args<'_>) -> Result<String, ToolError> {
        let path = a.str("path")?;
        let depth = a.int("depth", 1, 12)?;
        let mut out = Vec::new();
        let chosen = self.chosen(a)?;
        for &i in &chosen {
            let b = &self.bundles[i];
            let view = MapView {
                path: path.as_deref(),
                depth,
                entries: 10,
                lines: 60,
            };
            let files = self.map_files(i)?;
            if let Some(lines) = files.lines(&b.manifest.source.repo, &view) {
                if chosen.len() > 1 {
                    out.push(format!("# bundle {}", b.label));
                }
                out.extend(lines);
            }
        }
        if out.is_empty() {
            for &i in &chosen {
                if let Some(p) = path.as_deref()
                    && crate::map::is_file(&self.bundles[i], p)?
                {
                    return Err(failed(format!(
                        "read_map: {p:?} is a file, not a folder: read_file reads it"
                    )));
                }
            }
            return Err(failed(format!(
                "read_map: no indexed file under {:?} (call read_map without a path for the top level)",
                path.unwrap_or_default()
            )));
        }
        Ok(bounded(out, "pass a folder as path, or a smaller depth"))
    }

    fn search_code(&self, a: &Args<'_>) -> Result<String, ToolError> {
        let query = a.need_str("query")?;
        let mode = match a.str("mode")?.as_deref() {
            None | Some("hybrid") => Mode::Hybrid,
            Some("bm25") => Mode::Bm25,
            Some("vector") => Mode::Vector,
            Some(m) => {
                return Err(failed(format!(
                    "search_code: mode must be hybrid, bm25 or vector, got {m:?}"
                )));
            }
        };
        let k = a.int("k", 1, MAX_K)?.unwrap_or(10);
        let mut o = QueryOptions::unfiltered(mode, k);
        o.rerank = self.rerank;
        o.langs = a.str("language")?.into_iter().collect();
        o.kinds = a.str("kind")?.into_iter().collect();
        // An empty glob is bad input, as for `trove query --path ''`: leave it out for every file.
        if matches!(a.v.get("path"), Some(Value::String(p)) if p.trim().is_empty()) {
            return Err(failed(
                "search_code: path is empty: leave it out to search every file",
            ));
        }
        // A plain path is that file or what lies under that folder (`expand_glob`).
        o.path = a.str("path")?;
        crate::filters::check_filters(&self.bundles, &o)
            .map_err(|e| failed(format!("search_code: {e:#}")))?;
        let hits = search_all(&self.bundles, &query, &o)?;
        if hits.is_empty() {
            return Ok(format!(
                "No results for {query:?}. Try other words (what the code would say), mode=bm25 for an exact identifier, or fewer filters."
            ));
        }
        let mut out = Vec::new();
        for h in &hits {
            let bundle = if self.several() {
                format!("[{}] ", h.bundle)
            } else {
                String::new()
            };
            out.push(format!(
                "{bundle}{}:{}-{}  {} {}  (score {:.3})",
                h.path,
                h.start_line,
                h.end_line,
                h.kind,
                h.symbol_path.as_deref().unwrap_or("-"),
                h.score
            ));
            if let Some(c) = &h.content {
                let lines: Vec<&str> = c.lines().collect();
                for (i, l) in lines.iter().take(SNIPPET_LINES).enumerate() {
                    out.push(format!("  {:>5}  {}", h.start_line as usize + i, l));
                }
                if lines.len() > SNIPPET_LINES {
                    out.push(format!(
                        "         … {} more lines (read_file path={} start_line={})",
                        lines.len() - SNIPPET_LINES,
                        h.path,
                        h.start_line as usize + SNIPPET_LINES
                    ));
                }
            }
        }
        Ok(bounded(out, "ask for a smaller k"))
    }

    fn resolve_symbol(&self, a: &Args<'_>) -> Result<String, ToolError> {
        let name = a.need_str("name")?;
        let action = a.need_str("action")?;
        let follow = match action.as_str() {
            "definition" => None,
            "references" => Some(Follow::All),
            "callers" => Some(Follow::Callers),
            "callees" => Some(Follow::Callees),
            "subtypes" => Some(Follow::Subtypes),
            other => {
                return Err(failed(format!(
                    "resolve_symbol: action must be definition, references, callers, callees or subtypes, got {other:?}"
                )));
            }
        };
        let mut out = Vec::new();
        let mut defined = false;
        let chosen = self.chosen(a)?;
        for &i in &chosen {
            let b = &self.bundles[i];
            let (_, defs) = b.run_sql(&symbols_sql(&name, &[], 20))?;
            defined |= !defs.is_empty();
            let rows = match follow {
                None => defs,
                Some(f) => refs_rows(b, &name, f, MAX_LINES + 1)?.1,
            };
            if rows.is_empty() {
                continue;
            }
            if chosen.len() > 1 {
                out.push(format!("# bundle {}", b.label));
            }
            for r in &rows {
                out.extend(
                    match follow {
                        None => symbol_line(r),
                        Some(_) => ref_line(r),
                    }
                    .lines()
                    .map(str::to_string),
                );
            }
        }
        if out.is_empty() {
            if !defined {
                return Err(failed(format!(
                    "resolve_symbol: no symbol named {name:?} is defined in the bundle (search_code finds code by words; names are case-sensitive, try the exact identifier)"
                )));
            }
            return Ok(format!(
                "{name} is defined (action=definition shows where), but no {action} of it were found."
            ));
        }
        // The references were read up to one past what is shown: how many more is not known.
        Ok(bounded_with(out, |_| {
            "[more lines not shown: use a more qualified name, like Class.method]".to_string()
        }))
    }

    fn read_file(&self, a: &Args<'_>) -> Result<String, ToolError> {
        let path = a.need_str("path")?;
        let path = path.trim_start_matches("./").to_string();
        let start = a.int("start_line", 1, usize::MAX >> 1)?.unwrap_or(1);
        let end = a.int("end_line", 1, usize::MAX >> 1)?;
        if end.is_some_and(|e| e < start) {
            return Err(failed("read_file: end_line comes before start_line"));
        }
        let chosen = self.chosen(a)?;
        let mut found = None;
        for &i in &chosen {
            let b = &self.bundles[i];
            if let Some(t) = b.file_text(&path)? {
                found = Some((b, t));
                break;
            }
        }
        let Some((b, text)) = found else {
            let among: Vec<&Bundle> = chosen.iter().map(|&i| &self.bundles[i]).collect();
            let err = crate::show::not_a_file_in(&among, &path)?;
            return Err(failed(format!(
                "read_file: {err:#} (read_map and search_code show the paths)"
            )));
        };
        let end = end
            .unwrap_or(start + MAX_LINES - 1)
            .min(start + MAX_LINES - 1);
        let (lines, total) =
            crate::show::numbered_lines(&text, (start > 1).then_some(start), Some(end))
                .map_err(|e| failed(format!("read_file: {e:#}")))?;
        let width = total.max(1).to_string().len();
        let mut out = Vec::with_capacity(lines.len() + 2);
        let last = lines.last().map_or(0, |l| l.0);
        out.push(format!(
            "{}{path} (lines {start}-{last} of {total})",
            if self.several() {
                format!("[{}] ", b.label)
            } else {
                String::new()
            }
        ));
        out.extend(lines.iter().map(|(n, l)| format!("{n:>width$}  {l}")));
        if last < total {
            out.push(format!(
                "[{} more lines: read_file path={path} start_line={}]",
                total - last,
                last + 1
            ));
        }
        Ok(out.join("\n"))
    }

    fn list_bundles(&self) -> String {
        let mut out = Vec::new();
        for b in &self.bundles {
            let m = &b.manifest;
            let mut langs: Vec<(&String, u64)> =
                m.languages.iter().map(|(k, v)| (k, v.files)).collect();
            langs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let langs: Vec<String> = langs
                .iter()
                .take(8)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            out.push(b.label.clone());
            out.push(format!(
                "  repository {}{}  commit {}{}  indexed {}",
                m.source.repo,
                m.source
                    .subdir
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default(),
                m.source
                    .commit
                    .as_deref()
                    .map_or_else(|| "none".to_string(), trove_base::util::short_commit),
                m.source
                    .branch
                    .as_deref()
                    .map(|br| format!(" on {br}"))
                    .unwrap_or_default(),
                m.created_at
            ));
            out.push(format!(
                "  {} files, {} chunks, {} definitions, {} references; embedder {} ({})",
                m.counts.files,
                m.counts.chunks,
                m.counts.symbols,
                m.counts.refs,
                m.embedder.backend,
                m.embedder.model
            ));
            out.push(format!("  languages: {}", langs.join(", ")));
        }
        out.join("\n")
    }
}

/// The tools as OpenAI function tools (`tools` of a chat completion request).
pub fn openai_tools() -> Value {
    Value::Array(
        specs()
            .into_iter()
            .map(|s| {
                json!({
                    "type": "function",
                    "function": {"name": s.name, "description": s.description, "parameters": s.schema},
                })
            })
            .collect(),
    )
}
