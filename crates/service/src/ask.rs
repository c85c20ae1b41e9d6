//! `trove ask BUNDLE... "question"`: the research loop. A model behind an OpenAI-compatible
//! `/v1/chat/completions` server gets the five tools of [`crate::tools`], calls them within a step
//! and token budget, and answers with `path:line` citations, which are checked against the
//! bundles. Prompts are data (`pipelines/prompts/ask.toml`).
use clap::Args;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;

use trove_base::http::{Client, endpoint};

use crate::tools::{Tools, openai_tools};

/// Largest chat reply read: a reply of the `max_tokens` a prompts file asks for is far smaller, so
/// a longer one is a server gone wrong (refused at once, not retried, not printed).
const MAX_REPLY: u64 = 8 << 20;

/// The built-in prompts.
const DEFAULT_PROMPTS: &str = include_str!("../../../pipelines/prompts/ask.toml");
/// Characters of a tool's output kept in the evidence trail.
const EVIDENCE_CHARS: usize = 300;

/// Ask a question about the code: a model researches the bundles with tools (map, search,
/// symbols, files) and answers with `path:line` citations, each checked against the bundles.
///
/// The model is any OpenAI-compatible chat completions server with tool calling (OpenAI, Azure,
/// vLLM, Ollama, LM Studio): --url, --model and the API key in $OPENAI_API_KEY (or --api-key-env).
/// The loop stops when the model answers, or when --max-steps tool calls or --max-tokens tokens are
/// spent (then the model is asked to answer from what it found). Server errors, timeouts and 429s
/// are retried (--retries) before a clear failure. --format json prints the evidence trail: each
/// step's tool, arguments and what it returned in short. Exit codes: 0 answered, 2 failure.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  OPENAI_API_KEY=sk-... trove ask app.trove \"how are failed payments retried?\"\n  trove ask app.bundle lib.bundle \"who calls parse_config?\" --url http://localhost:11434/v1 --model qwen2.5-coder\n  trove ask app.bundle \"where is the session cookie set?\" --format json"
)]
pub struct AskArgs {
    /// The bundles to research (directories or packed .trove files).
    #[arg(required = true, num_args = 1.., value_name = "BUNDLE")]
    pub bundles: Vec<PathBuf>,
    /// The question (quoted).
    #[arg(required = true, value_name = "QUESTION")]
    pub question: String,
    /// Base URL of the OpenAI-compatible server [env: TROVE_ASK_URL, else OPENAI_BASE_URL, else
    /// https://api.openai.com/v1].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Model name [env: TROVE_ASK_MODEL; default gpt-4o-mini].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Environment variable that holds the API key (none needed for a local server).
    #[arg(long, default_value = "OPENAI_API_KEY", value_name = "VAR")]
    pub api_key_env: String,
    /// Tool calls allowed before the model must answer.
    #[arg(long, default_value_t = 12, value_name = "N")]
    pub max_steps: usize,
    /// Tokens (prompt + completion, summed over the calls) allowed before the model must answer.
    #[arg(long, default_value_t = 200_000, value_name = "N")]
    pub max_tokens: u64,
    /// Seconds per call to the server.
    #[arg(long, default_value_t = 120, value_name = "S")]
    pub timeout: u64,
    /// Retries of a call that timed out or got a 429/5xx.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retries: u32,
    /// Prompts file (default: the built-in pipelines/prompts/ask.toml).
    #[arg(long, value_name = "FILE")]
    pub prompts: Option<PathBuf>,
    /// Output: text (the answer and its citations) or json (with the evidence trail).
    #[arg(long, value_enum, default_value_t = AskFormat::Text)]
    pub format: AskFormat,
    /// Reranking of the hits.
    #[command(flatten)]
    pub late: crate::args::Rerank,
    /// Where the query embedder's model is.
    #[command(flatten)]
    pub embedder_at: crate::args::EmbedderAt,
}

/// Output formats of `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AskFormat {
    /// The answer, then its citations with a mark on each that does not check out.
    Text,
    /// One JSON document: answer, citations, evidence trail, usage.
    Json,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Prompts {
    #[allow(dead_code)]
    version: u32,
    temperature: f64,
    max_tokens: u64,
    system: String,
    user: String,
    #[serde(rename = "final")]
    final_: String,
    /// Said once to a model that still asks for tools after `final` (none are offered then).
    #[serde(default = "no_more_tools")]
    no_more_tools: String,
}

fn no_more_tools() -> String {
    NO_MORE_TOOLS.to_string()
}

/// One tool call of the loop.
#[derive(Debug, serde::Serialize)]
struct Step {
    step: usize,
    tool: String,
    arguments: Value,
    ok: bool,
    /// What it returned, in short.
    result: String,
    lines: usize,
}

/// One `path:line` or `path:start-end` in the answer, checked.
#[derive(Debug, serde::Serialize)]
struct Citation {
    text: String,
    path: String,
    start: usize,
    end: usize,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

/// What the research loop needs besides the tools and the question: the chat server, the model,
/// the prompts and the budgets (`trove ask` builds it from its flags, `trove serve` from its own).
pub struct AskConfig {
    /// The chat completions endpoint.
    pub url: String,
    /// The model name.
    pub model: String,
    /// The HTTP client (timeouts, retries, API key).
    pub client: Client,
    prompts: Prompts,
    /// Tool calls allowed before the model must answer (`research` may be given fewer).
    pub max_steps: usize,
    /// Tokens allowed before the model must answer.
    pub max_tokens: u64,
}

impl AskConfig {
    /// The configuration from explicit values, falling back to $TROVE_ASK_URL / $OPENAI_BASE_URL
    /// and $TROVE_ASK_MODEL; `prompts` a TOML file (default: the built-in prompts).
    pub fn new(
        url: Option<&str>,
        model: Option<&str>,
        prompts: Option<&std::path::Path>,
        timeout: u64,
        retries: u32,
        api_key_env: &str,
    ) -> anyhow::Result<Self> {
        let prompts_text = match prompts {
            Some(p) => std::fs::read_to_string(p)
                .map_err(|e| anyhow::anyhow!("cannot read --prompts {}: {e}", p.display()))?,
            None => DEFAULT_PROMPTS.to_string(),
        };
        let parsed: Prompts = toml::from_str(&prompts_text).map_err(|e| {
            anyhow::anyhow!(
                "prompts {}: {e}",
                prompts.map_or("(built-in)".into(), |p| p.display().to_string())
            )
        })?;
        let url = url
            .map(str::to_string)
            .or_else(|| std::env::var("TROVE_ASK_URL").ok())
            .or_else(|| std::env::var("OPENAI_BASE_URL").ok())
            .filter(|u| !u.trim().is_empty());
        // No server named and no key for the default one: nothing to ask (not a failed lookup).
        let keyed = std::env::var(api_key_env).is_ok_and(|k| !k.trim().is_empty());
        if url.is_none() && !keyed {
            anyhow::bail!(
                "no chat server to ask: give --url (any OpenAI-compatible server: llama.cpp, \
                 vLLM, Ollama's /v1) or $TROVE_ASK_URL, or set ${api_key_env} for \
                 https://api.openai.com/v1"
            );
        }
        let url = url.unwrap_or_else(|| "https://api.openai.com/v1".into());
        let host = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .map(|r| r.split('/').next().unwrap_or(""));
        if host.is_none_or(|h| h.is_empty() || h.contains(char::is_whitespace)) {
            anyhow::bail!(
                "the chat server's URL {:?} is not an http:// or https:// URL with a host",
                trove_base::util::hide_userinfo(&url)
            );
        }
        let model = model
            .map(str::to_string)
            .or_else(|| std::env::var("TROVE_ASK_MODEL").ok())
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| "gpt-4o-mini".into());
        Ok(AskConfig {
            url: endpoint(&url, "chat/completions"),
            model,
            client: Client::from_config(timeout, retries, api_key_env).with_max_body(MAX_REPLY),
            prompts: parsed,
            max_steps: 12,
            max_tokens: 200_000,
        })
    }
}

/// What the research loop found: the answer, its checked citations, the evidence trail.
pub struct Research {
    answer: String,
    citations: Vec<Citation>,
    steps: Vec<Step>,
    stopped: Option<&'static str>,
    calls: usize,
    tokens: u64,
}

impl Research {
    /// The JSON document of `trove ask --format json` (and of `POST /ask`).
    pub fn to_json(&self, question: &str, model: &str) -> Value {
        json!({
            "question": question,
            "answer": self.answer,
            "citations": self.citations,
            "steps": self.steps,
            "stopped": self.stopped,
            "model": model,
            "calls": self.calls,
            "tokens": self.tokens,
        })
    }
}

/// [`Prompts::no_more_tools`] when a prompts file has none.
const NO_MORE_TOOLS: &str = "No more tools can be called: your research budget is spent. Answer \
                             now, in text, from what you have found, citing path:line.";

/// Runs the research loop on `question` over `tools`, at most `max_steps` tool calls; `progress`
/// prints each step on stderr. `cancelled` is asked before every model and tool call: once it
/// says so (the HTTP client of `trove serve`'s `/ask` went away, or its deadline passed), the
/// loop stops spending the model's tokens on an answer nobody will read.
pub fn research(
    tools: &Tools,
    cfg: &AskConfig,
    question: &str,
    max_steps: usize,
    progress: bool,
    cancelled: &dyn Fn() -> bool,
) -> Result<Research, Unanswered> {
    let mut trail = Trail::default();
    let run = Run {
        max_steps,
        progress,
        cancelled,
    };
    match research_loop(tools, cfg, question, &run, &mut trail) {
        Ok(answer) => {
            let citations = check_citations(tools, &answer);
            Ok(Research {
                answer,
                citations,
                steps: trail.steps,
                stopped: trail.stopped,
                calls: trail.calls,
                tokens: trail.tokens,
            })
        }
        Err(error) => Err(Unanswered { error, trail }),
    }
}

/// What the loop has done so far: kept when it fails, so the research is not lost with it.
#[derive(Default)]
struct Trail {
    steps: Vec<Step>,
    stopped: Option<&'static str>,
    calls: usize,
    tokens: u64,
}

/// A research loop that ended without an answer: why, and the steps it made before.
pub struct Unanswered {
    /// Why it ended.
    pub error: anyhow::Error,
    trail: Trail,
}

impl Unanswered {
    /// The research steps made before the failure.
    pub fn steps(&self) -> usize {
        self.trail.steps.len()
    }

    /// The JSON document of a failed `trove ask --format json`: the question, `"answer": null`,
    /// the error and the steps made, as [`Research::to_json`] has them.
    pub fn to_json(&self, question: &str, model: &str) -> Value {
        json!({
            "question": question,
            "answer": null,
            "error": format!("{:#}", self.error),
            "citations": [],
            "steps": self.trail.steps,
            "stopped": self.trail.stopped,
            "model": model,
            "calls": self.trail.calls,
            "tokens": self.trail.tokens,
        })
    }
}

/// How one research loop runs: its step budget, whether it prints its steps, when to stop.
struct Run<'a> {
    max_steps: usize,
    progress: bool,
    cancelled: &'a dyn Fn() -> bool,
}

/// The loop of [`research`]: its answer, with what it did recorded in `trail` as it goes.
fn research_loop(
    tools: &Tools,
    cfg: &AskConfig,
    question: &str,
    run: &Run,
    trail: &mut Trail,
) -> anyhow::Result<String> {
    let max_steps = run.max_steps;
    let mut chat = Chat::new(tools, cfg, question, run);
    loop {
        let budget_left = trail.steps.len() < max_steps && trail.tokens < cfg.max_tokens;
        if !budget_left && trail.stopped.is_none() {
            trail.stopped = Some(if trail.steps.len() >= max_steps {
                "max-steps"
            } else {
                "max-tokens"
            });
            chat.messages
                .push(json!({"role": "user", "content": cfg.prompts.final_}));
        }
        let msg = chat.send(budget_left, trail)?;
        let tool_calls = msg
            .get("tool_calls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if tool_calls.is_empty() || !budget_left {
            match chat.answer(&msg, &tool_calls, trail.steps.len())? {
                Some(text) => return Ok(text),
                None => continue,
            }
        }
        chat.messages.push(json!({
            "role": "assistant",
            "content": msg.get("content").cloned().unwrap_or(Value::Null),
            "tool_calls": tool_calls,
        }));
        for call in &tool_calls {
            chat.call_tool(call, trail)?;
        }
    }
}

/// One research loop's conversation with the model: the messages so far, and what the loop
/// needs to go on (the tools, the server and its prompts, the budget).
struct Chat<'a> {
    tools: &'a Tools,
    cfg: &'a AskConfig,
    run: &'a Run<'a>,
    /// The server as messages name it: without the URL's user and password (`/ask` sends them
    /// to clients).
    shown: std::borrow::Cow<'a, str>,
    /// The messages sent so far, the prompts' first.
    messages: Vec<Value>,
    /// Whether the model was told once that no more tools can be called.
    nudged: bool,
}

impl<'a> Chat<'a> {
    /// The conversation's start: the system and user prompts, filled in with the bundles, the
    /// step budget and `question`.
    fn new(tools: &'a Tools, cfg: &'a AskConfig, question: &str, run: &'a Run<'a>) -> Self {
        let max_steps = run.max_steps;
        // Messages name the server without the URL's user and password (`/ask` sends them to
        // clients).
        let shown = trove_base::util::hide_userinfo(&cfg.url);
        let listing = tools.call("list_bundles", &json!({})).unwrap_or_default();
        let fill = |t: &str| {
            t.replace("{bundles}", &listing)
                .replace("{max_steps}", &max_steps.to_string())
                .replace("{question}", question)
        };
        let messages = vec![
            json!({"role": "system", "content": fill(&cfg.prompts.system)}),
            json!({"role": "user", "content": fill(&cfg.prompts.user)}),
        ];
        Chat {
            tools,
            cfg,
            run,
            shown,
            messages,
            nudged: false,
        }
    }

    /// An error once the research is cancelled (asked before every model and tool call).
    fn give_up(&self) -> anyhow::Result<()> {
        if (self.run.cancelled)() {
            anyhow::bail!("the research was cancelled (its client went away or its time ran out)");
        }
        Ok(())
    }

    /// Sends the conversation to the model, with the tools while `budget_left`, and returns the
    /// message it replied; the call and its tokens are counted in `trail`.
    fn send(&self, budget_left: bool, trail: &mut Trail) -> anyhow::Result<Value> {
        let (url, model, client, prompts) = (
            &self.cfg.url,
            &self.cfg.model,
            &self.cfg.client,
            &self.cfg.prompts,
        );
        let shown = &self.shown;
        let mut body = json!({
            "model": model,
            "messages": self.messages,
            "temperature": prompts.temperature,
            "max_tokens": prompts.max_tokens,
        });
        if budget_left {
            body["tools"] = openai_tools();
            body["tool_choice"] = json!("auto");
        }
        self.give_up()?;
        trail.calls += 1;
        let reply = client
            .post(url, &body)
            .map_err(|e| anyhow::anyhow!("chat server {e}"))?;
        trail.tokens += usage_tokens(&reply, &body);
        let msg = reply
            .pointer("/choices/0/message")
            .cloned()
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "chat server {shown}: the reply has no choices[0].message: {}",
                    cut(&reply.to_string(), 300)
                )
            })?;
        Ok(msg)
    }

    /// The answer in the model's message `msg`, which has no tool calls or came past the
    /// budget: `None` when the model, still asking for `tool_calls`, is told once more that
    /// none can be called (the loop goes on); an error when it gives no answer after
    /// `steps` research steps.
    fn answer(
        &mut self,
        msg: &Value,
        tool_calls: &[Value],
        steps: usize,
    ) -> anyhow::Result<Option<String>> {
        let text = msg
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        if text.is_empty() && !tool_calls.is_empty() && !self.nudged {
            // Tools past the budget: told once more that none can be called.
            self.nudged = true;
            self.messages
                .push(json!({"role": "user", "content": self.cfg.prompts.no_more_tools}));
            return Ok(None);
        }
        let shown = &self.shown;
        if text.is_empty() && !tool_calls.is_empty() {
            anyhow::bail!(
                "chat server {shown}: the model kept asking for tools after its budget was spent \
                 ({} research steps) and gave no answer",
                steps
            );
        }
        if text.is_empty() {
            anyhow::bail!(
                "chat server {shown}: the model gave neither an answer nor a tool call ({})",
                cut(&msg.to_string(), 300)
            );
        }
        Ok(Some(text))
    }

    /// Runs one of the model's tool calls (unless the step budget is spent or its arguments are
    /// not JSON), records it in `trail` as a step, and gives the model its output.
    fn call_tool(&mut self, call: &Value, trail: &mut Trail) -> anyhow::Result<()> {
        let (max_steps, steps) = (self.run.max_steps, &mut trail.steps);
        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let raw = call
            .pointer("/function/arguments")
            .cloned()
            .unwrap_or(Value::Null);
        // Arguments come as a JSON string (some servers send the object itself).
        let parsed = match &raw {
            Value::String(s) if s.trim().is_empty() => Ok(json!({})),
            Value::String(s) => serde_json::from_str::<Value>(s)
                .map_err(|e| format!("the arguments are not JSON ({e}): {}", cut(s, 200))),
            Value::Null => Ok(json!({})),
            v => Ok(v.clone()),
        };
        let over = steps.len() >= max_steps;
        let out = match parsed.clone() {
            _ if over => Err(format!(
                "step budget spent ({} tool calls): answer now",
                max_steps
            )),
            Err(e) => Err(e),
            Ok(args) => {
                self.give_up()?;
                self.tools.call(name, &args).map_err(|e| e.to_string())
            }
        };
        let (ok, content) = match &out {
            Ok(t) => (true, t.clone()),
            Err(e) => (false, format!("ERROR: {e}")),
        };
        if !over {
            steps.push(Step {
                step: steps.len() + 1,
                tool: name.to_string(),
                arguments: parsed.unwrap_or(raw),
                ok,
                result: cut(&content, EVIDENCE_CHARS),
                lines: content.lines().count(),
            });
        }
        if self.run.progress {
            eprintln!(
                "trove ask: step {}: {name} {}",
                steps.len(),
                if ok { "ok" } else { "failed" }
            );
        }
        self.messages
            .push(json!({"role": "tool", "tool_call_id": id, "content": content}));
        Ok(())
    }
}

/// Runs `trove ask`.
pub fn run(a: AskArgs) -> anyhow::Result<i32> {
    a.embedder_at.apply();
    let question = a.question.trim();
    if question.is_empty() {
        anyhow::bail!("the question is empty: trove ask BUNDLE... \"question\"");
    }
    if a.max_steps == 0 {
        anyhow::bail!("--max-steps must be at least 1");
    }
    if a.timeout == 0 {
        anyhow::bail!("--timeout must be at least 1 second");
    }
    // The flags first: a mistyped URL or prompts file says so before the bundles are opened.
    let mut cfg = AskConfig::new(
        a.url.as_deref(),
        a.model.as_deref(),
        a.prompts.as_deref(),
        a.timeout,
        a.retries,
        &a.api_key_env,
    )?;
    cfg.max_steps = a.max_steps;
    cfg.max_tokens = a.max_tokens;
    let tools = Tools::open(&a.bundles)?.with_rerank(a.late.rerank);
    let r = match research(
        &tools,
        &cfg,
        question,
        cfg.max_steps,
        a.format == AskFormat::Text,
        &|| false,
    ) {
        Ok(r) => r,
        // The research made before a failure is kept: the JSON document with `"answer": null`
        // and the error, or (text) the steps on stderr; the exit code is still the failure's.
        Err(u) => {
            match a.format {
                AskFormat::Json => {
                    let doc = u.to_json(question, &cfg.model);
                    writeln!(
                        std::io::stdout().lock(),
                        "{}",
                        serde_json::to_string_pretty(&doc)?
                    )?;
                }
                AskFormat::Text if u.steps() > 0 => {
                    eprintln!("trove ask: the research before the failure:");
                    for s in &u.trail.steps {
                        eprintln!(
                            "  {}. {} {} ({}, {} lines)",
                            s.step,
                            s.tool,
                            cut(&s.arguments.to_string(), 200),
                            if s.ok { "ok" } else { "failed" },
                            s.lines
                        );
                    }
                }
                AskFormat::Text => {}
            }
            return Err(u.error);
        }
    };
    let mut out = std::io::stdout().lock();
    match a.format {
        AskFormat::Json => {
            let doc = r.to_json(question, &cfg.model);
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        }
        AskFormat::Text => {
            writeln!(out, "{}", r.answer)?;
            if !r.citations.is_empty() {
                writeln!(out, "\nCitations:")?;
                for c in &r.citations {
                    match &c.problem {
                        None => writeln!(out, "  ✓ {}", c.text)?,
                        Some(p) => writeln!(out, "  ✗ {} ({p})", c.text)?,
                    }
                }
            }
            if let Some(s) = r.stopped {
                writeln!(
                    out,
                    "\n(stopped by the {s} budget: the answer rests on {} tool calls)",
                    r.steps.len()
                )?;
            }
        }
    }
    Ok(0)
}

/// Tokens a call used: the server's `usage.total_tokens`, else an estimate (4 characters a
/// token) of what was sent and received.
fn usage_tokens(reply: &Value, body: &Value) -> u64 {
    reply
        .pointer("/usage/total_tokens")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| ((body.to_string().len() + reply.to_string().len()) / 4) as u64)
}

/// At most `n` characters of `s`, with `…` when cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

/// The `path:line` and `path:start-end` citations in `answer`, each checked: the path must be a
/// file of one of the bundles and the lines inside it.
fn check_citations(tools: &Tools, answer: &str) -> Vec<Citation> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"([A-Za-z0-9_.\-][A-Za-z0-9_./\-]*):(\d+)(?:-(\d+))?").expect("valid")
    });
    let mut out: Vec<Citation> = Vec::new();
    // Line counts by path (`None`: no bundle has it): an answer cites a file many times.
    let mut files: rustc_hash::FxHashMap<String, Option<usize>> = Default::default();
    for m in RE.captures_iter(answer) {
        let path = m[1].trim_start_matches("./").to_string();
        // A URL's host:port or a time like 10:30 is not a citation.
        if !path.contains('.') && !path.contains('/') {
            continue;
        }
        if m.get(0)
            .is_some_and(|g| answer[..g.start()].ends_with("//"))
        {
            continue;
        }
        // A number past usize is past any file's end (not 0, not "no end given").
        let start: usize = m[2].parse().unwrap_or(usize::MAX);
        let end: usize = m
            .get(3)
            .map_or(start, |e| e.as_str().parse().unwrap_or(usize::MAX));
        let text = m[0].to_string();
        if out.iter().any(|c| c.text == text) {
            continue;
        }
        let lines = *files.entry(path.clone()).or_insert_with(|| {
            tools
                .bundles()
                .iter()
                .find_map(|b| b.file_text(&path).ok().flatten())
                .map(|t| t.split_inclusive('\n').count())
        });
        let problem = match lines {
            None => Some("no such file in the bundle".to_string()),
            Some(_) if start == 0 || end < start => Some("not a line range".to_string()),
            Some(n) if end > n => Some(format!("the file has {n} lines")),
            Some(_) => None,
        };
        out.push(Citation {
            text,
            path,
            start,
            end,
            valid: problem.is_none(),
            problem,
        });
    }
    out
}
