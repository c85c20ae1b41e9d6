//! The web pages of `trove serve`, for people with a browser: `/` (search, results as you type,
//! grouped by file, with numbered snippets) and `/file/PATH` (the file from the bundle, numbered,
//! each line a permalink: `/file/PATH#L10-L20`). HTML is written with maud, which escapes every
//! value it is given: a file's `<script>` is text on the page. The script and the style sheet are
//! compiled into the binary (`/static/app.js`, `/static/app.css`); nothing is fetched from
//! elsewhere. The JSON API, MCP and metrics keep their routes.
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use trove_query::{Bundle, Hit, Mode, QueryOptions, search_all};

use super::Shared;
use super::state::{Lane, Lease};

/// The script of the pages: results as you type, keyboard navigation, permalink highlighting.
const APP_JS: &str = include_str!("web/app.js");
/// The style sheet of the pages.
const APP_CSS: &str = include_str!("web/app.css");

/// The search form's fields (`/?q=...&mode=...&lang=...&kind=...&path=...&bundle=...`); `partial=1` asks for the
/// results alone (the script replaces them as the user types).
#[derive(Debug, Default, serde::Deserialize)]
pub struct SearchForm {
    q: Option<String>,
    mode: Option<String>,
    lang: Option<String>,
    kind: Option<String>,
    path: Option<String>,
    bundle: Option<String>,
    partial: Option<String>,
}

/// What a query box says: the words to search and the filters written in them
/// (`lang:go path:cmd/ kind:function type:test bundle:NAME`).
#[derive(Debug, Default, PartialEq)]
pub struct Parsed {
    /// The words to search for.
    pub text: String,
    /// `lang:` values.
    pub langs: Vec<String>,
    /// `kind:` values.
    pub kinds: Vec<String>,
    /// `type:` values (code, doc, test, config).
    pub types: Vec<String>,
    /// The `path:` glob; a value without a wildcard is a folder or file prefix.
    pub path: Option<String>,
    /// `bundle:` values.
    pub bundles: Vec<String>,
}

/// Splits the filters written in a query box from its words.
pub fn parse_query(q: &str) -> Parsed {
    let mut p = Parsed::default();
    let mut words = Vec::new();
    for w in q.split_whitespace() {
        match w.split_once(':') {
            Some(("lang", v)) if !v.is_empty() => p.langs.push(v.to_string()),
            Some(("kind", v)) if !v.is_empty() => p.kinds.push(v.to_string()),
            Some(("type", v)) if !v.is_empty() => p.types.push(v.to_string()),
            Some(("bundle", v)) if !v.is_empty() => p.bundles.push(v.to_string()),
            Some(("path", v)) if !v.is_empty() => p.path = Some(path_glob(v)),
            _ => words.push(w),
        }
    }
    p.text = words.join(" ");
    p
}

/// A `path:` value as a glob: one with a wildcard as it is, `cmd/` as everything under it,
/// `src/main.rs` as that file or folder.
fn path_glob(v: &str) -> String {
    if v.contains(['*', '?', '[', '{']) {
        v.to_string()
    } else if let Some(dir) = v.strip_suffix('/') {
        format!("{dir}/**")
    } else {
        format!("{{{v},{v}/**}}")
    }
}

/// `GET /`: the search page, with results when the form has a query.
pub async fn search_page(
    State(app): State<Shared>,
    form: Result<Query<SearchForm>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let form = form.map(|Query(f)| f).unwrap_or_default();
    let started = std::time::Instant::now();
    let q = form.q.clone().unwrap_or_default();
    let mut parsed = parse_query(&q);
    if let Some(l) = form.lang.as_deref().filter(|l| !l.is_empty()) {
        parsed.langs.push(l.to_string());
    }
    if let Some(k) = form.kind.as_deref().filter(|k| !k.is_empty()) {
        parsed.kinds.push(k.to_string());
    }
    if let Some(p) = form.path.as_deref().filter(|p| !p.is_empty()) {
        parsed.path = Some(path_glob(p));
    }
    if let Some(b) = form.bundle.as_deref().filter(|b| !b.is_empty()) {
        parsed.bundles.push(b.to_string());
    }
    let mode = match form.mode.as_deref() {
        Some("bm25") => Mode::Bm25,
        Some("vector") => Mode::Vector,
        _ => Mode::Hybrid,
    };
    let lease = app.served.lease(Lane::Search).await;
    let page = tokio::task::spawn_blocking(move || {
        let bundles = lease.tools().bundles();
        let langs = languages(bundles);
        let labels: Vec<String> = bundles.iter().map(|b| b.label.clone()).collect();
        let chosen: Vec<&Bundle> = bundles
            .iter()
            .filter(|b| parsed.bundles.is_empty() || parsed.bundles.contains(&b.label))
            .collect();
        let unknown: Vec<&String> = parsed
            .bundles
            .iter()
            .filter(|l| !labels.contains(l))
            .collect();
        let results = if parsed.text.trim().is_empty() {
            None
        } else if !unknown.is_empty() {
            Some(Err(format!(
                "no served bundle is named {}; served: {}",
                unknown.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(", "),
                labels.join(", ")
            )))
        } else {
            let opts = QueryOptions {
                langs: parsed.langs.clone(),
                kinds: parsed.kinds.clone(),
                types: parsed.types.clone(),
                path: parsed.path.clone(),
                content: true,
                ..QueryOptions::unfiltered(mode, 20)
            };
            Some(
                crate::filters::check_filters(chosen.iter().copied(), &opts)
                    .map_err(|e| format!("{e:#}"))
                    .and_then(|()| {
                        search_all(chosen.iter().copied(), &parsed.text, &opts)
                            .map_err(|e| format!("{e:#}"))
                    }),
            )
        };
        let took = started.elapsed();
        let multi = labels.len() > 1;
        if form.partial.is_some() {
            return results_html(results.as_ref(), &parsed.text, took, multi).into_string();
        }
        page_html(
            "trove: search",
            &lease,
            html! {
                (search_form(&form, &q, mode, &langs, &kinds(&lease), &labels))
                div #results aria-live="polite" { (results_html(results.as_ref(), &parsed.text, took, multi)) }
            },
        )
        .into_string()
    })
    .await;
    answer(page.map(|body| (StatusCode::OK, body)))
}

/// The languages of the served bundles, sorted.
fn languages(bundles: &[Bundle]) -> Vec<String> {
    let mut l: Vec<String> = bundles
        .iter()
        .flat_map(|b| b.manifest.languages.keys().cloned())
        .collect();
    l.sort();
    l.dedup();
    l
}

/// The chunk kinds of the served bundles, sorted; read once per served version (a failure reading
/// them leaves the control out).
fn kinds(lease: &Lease) -> Vec<String> {
    // Keyed by the version's number and snapshot folders: one server's one version.
    static SEEN: std::sync::Mutex<Option<(String, Vec<String>)>> = std::sync::Mutex::new(None);
    let key: Vec<String> = lease
        .generation
        .snapshots
        .iter()
        .map(|s| s.dir.display().to_string())
        .collect();
    let key = format!("{}\n{}", lease.generation.id, key.join("\n"));
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((k, kinds)) = seen.as_ref()
        && *k == key
    {
        return kinds.clone();
    }
    let mut k: Vec<String> = Vec::new();
    for b in lease.tools().bundles() {
        if let Ok((_, rows)) = b.run_sql("SELECT DISTINCT kind FROM chunks") {
            k.extend(rows.iter().map(|r| cell(&r[0])));
        }
    }
    k.sort();
    k.dedup();
    *seen = Some((key, k.clone()));
    k
}

/// The search form, filled in from the request; the bundle picker only when several are served.
fn search_form(
    form: &SearchForm,
    q: &str,
    mode: Mode,
    langs: &[String],
    kinds: &[String],
    labels: &[String],
) -> Markup {
    let lang = form.lang.as_deref().unwrap_or("");
    let kind = form.kind.as_deref().unwrap_or("");
    let path = form.path.as_deref().unwrap_or("");
    let bundle = form.bundle.as_deref().unwrap_or("");
    let modes = [
        (Mode::Hybrid, "hybrid"),
        (Mode::Bm25, "bm25"),
        (Mode::Vector, "vector"),
    ];
    html! {
        form #search role="search" action="/" method="get" {
            label for="q" class="visually-hidden" { "Search the code" }
            input #q type="search" name="q" value=(q) autofocus autocomplete="off"
                placeholder="Search code — lang:go path:cmd/ kind:function — press / to focus";
            label for="mode" { "Mode" }
            select #mode name="mode" {
                @for (m, name) in modes {
                    option value=(name) selected[m == mode] { (name) }
                }
            }
            label for="lang" { "Language" }
            select #lang name="lang" {
                option value="" selected[lang.is_empty()] { "any" }
                @for l in langs {
                    option value=(l) selected[l == lang] { (l) }
                }
            }
            @if !kinds.is_empty() {
                label for="kind" { "Kind" }
                select #kind name="kind" {
                    option value="" selected[kind.is_empty()] { "any" }
                    @for k in kinds {
                        option value=(k) selected[k == kind] { (k) }
                    }
                }
            }
            label for="path" { "Path" }
            input #path type="text" name="path" value=(path) placeholder="src/ or **/*.go";
            @if labels.len() > 1 {
                label for="bundle" { "Bundle" }
                select #bundle name="bundle" {
                    option value="" selected[bundle.is_empty()] { "all" }
                    @for l in labels {
                        option value=(l) selected[l == bundle] { (l) }
                    }
                }
            }
            button type="submit" { "Search" }
        }
    }
}

/// The results: hits grouped by file (in the order their best hit ranks), each with its lines.
fn results_html(
    results: Option<&Result<Vec<Hit>, String>>,
    text: &str,
    took: std::time::Duration,
    multi: bool,
) -> Markup {
    let Some(results) = results else {
        return html! { p .hint { "Type to search. ↑/↓ move between results, Enter opens one." } };
    };
    let hits = match results {
        Ok(h) => h,
        Err(e) => return html! { p .error role="alert" { (e) } },
    };
    // A file is one group per bundle (the same path in two bundles is two files).
    let mut files: Vec<(&str, &str, Vec<&Hit>)> = Vec::new();
    for h in hits {
        match files
            .iter_mut()
            .find(|(p, b, _)| *p == h.path && *b == h.bundle)
        {
            Some((_, _, v)) => v.push(h),
            None => files.push((&h.path, &h.bundle, vec![h])),
        }
    }
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect();
    html! {
        p .count { (hits.len()) " results in " (files.len()) " files, " (format!("{:.0}", took.as_secs_f64() * 1000.0)) " ms" }
        @for (path, bundle, hs) in &files {
            @let bundle = multi.then_some(*bundle);
            section .file-group {
                h2 {
                    a href=(file_href(path, bundle, None)) { (path) }
                    @if let Some(b) = bundle { " " span .bundle { (b) } }
                }
                @for h in hs {
                    div .hit {
                        a .open href=(file_href(path, bundle, Some((h.start_line, h.end_line)))) {
                            span .where { (path) ":" (h.start_line) "-" (h.end_line) }
                            " " span .kind { (h.kind) }
                            @if let Some(s) = &h.symbol_path { " " span .symbol { (s) } }
                            " " span .lang { (h.language.as_deref().unwrap_or("")) }
                        }
                        (snippet(h, &words))
                    }
                }
            }
        }
    }
}

/// A hit's first lines, numbered, with the query's words marked.
fn snippet(h: &Hit, words: &[String]) -> Markup {
    let text = h.content.as_deref().unwrap_or("");
    html! {
        table .snippet {
            @for (i, line) in text.lines().take(8).enumerate() {
                tr {
                    td .ln { (h.start_line + i as i64) }
                    td { code { (marked(line, words)) } }
                }
            }
        }
    }
}

/// `line` with the occurrences of `words` (case-insensitive, ASCII) in `<mark>`; every piece
/// escaped.
fn marked(line: &str, words: &[String]) -> Markup {
    let lower = line.to_ascii_lowercase();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for w in words {
        let mut from = 0;
        while let Some(i) = lower[from..].find(w.as_str()) {
            spans.push((from + i, from + i + w.len()));
            from += i + w.len();
        }
    }
    spans.sort();
    let spans: Vec<(usize, usize, ())> = spans.into_iter().map(|(a, b)| (a, b, ())).collect();
    html! {
        @for (hit, r) in pieces(line, 0..line.len(), &spans) {
            @if hit.is_some() { mark { (&line[r]) } } @else { (&line[r]) }
        }
    }
}

/// `range` of `line` cut at `spans` (sorted by start; one that overlaps an earlier one, or does
/// not fall on character boundaries inside `range`, is left out): the pieces in order, each with
/// the span's value or `None` between spans.
fn pieces<T: Copy>(
    line: &str,
    range: std::ops::Range<usize>,
    spans: &[(usize, usize, T)],
) -> Vec<(Option<T>, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut at = range.start;
    for &(a, b, v) in spans {
        let (a, b) = (a.max(range.start), b.min(range.end));
        if a < at || a >= b || !line.is_char_boundary(a) || !line.is_char_boundary(b) {
            continue;
        }
        if at < a {
            out.push((None, at..a));
        }
        out.push((Some(v), a..b));
        at = b;
    }
    if at < range.end {
        out.push((None, at..range.end));
    }
    out
}

/// The address of a file's page (in `bundle`, when several are served), with a line range as a
/// permalink.
fn file_href(path: &str, bundle: Option<&str>, lines: Option<(i64, i64)>) -> String {
    let encoded: Vec<String> = path.split('/').map(query_escape).collect();
    let mut href = format!("/file/{}", encoded.join("/"));
    if let Some(b) = bundle {
        href.push_str("?bundle=");
        href.push_str(&query_escape(b));
    }
    match lines {
        Some((a, b)) if b > a => href.push_str(&format!("#L{a}-L{b}")),
        Some((a, _)) => href.push_str(&format!("#L{a}")),
        None => {}
    }
    href
}

/// The file page's query: which bundle (`/file/PATH?bundle=LABEL`); without it, the first
/// served bundle that holds the file.
#[derive(Debug, Default, serde::Deserialize)]
pub struct FileForm {
    bundle: Option<String>,
}

/// `GET /file/PATH`: the file from the bundle asked for, or the first that holds it, highlighted
/// by its tree-sitter grammar, every line numbered and an anchor (`#L12`, `#L10-L20`), its
/// definitions and resolved references links, and a side panel the script fills with a
/// definition's references.
pub async fn file_page(
    State(app): State<Shared>,
    UrlPath(path): UrlPath<String>,
    form: Result<Query<FileForm>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let form = form.map(|Query(f)| f).unwrap_or_default();
    let lease = app.served.lease(Lane::Search).await;
    let page = tokio::task::spawn_blocking(move || {
        let bundles = lease.tools().bundles();
        let wanted = form.bundle.as_deref().filter(|b| !b.is_empty());
        let multi = bundles.len() > 1;
        for b in bundles
            .iter()
            .filter(|b| wanted.is_none_or(|w| w == b.label))
        {
            match b.file_text(&path) {
                Ok(Some(text)) => {
                    let body = file_body(b, &path, &text, multi.then_some(b.label.as_str()));
                    return (
                        StatusCode::OK,
                        page_html(&format!("trove: {path}"), &lease, body).into_string(),
                    );
                }
                Ok(None) => continue,
                Err(e) => {
                    let body = html! { p .error role="alert" { (format!("{e:#}")) } };
                    return (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        page_html("trove: error", &lease, body).into_string(),
                    );
                }
            }
        }
        let body = html! {
            nav .crumbs { a href="/" { "search" } }
            p .error role="alert" {
                @if let Some(w) = wanted {
                    @if bundles.iter().any(|b| b.label == w) {
                        "The bundle " code { (w) } " does not hold " code { (path) } "."
                    } @else {
                        "No served bundle is named " code { (w) } "."
                    }
                } @else {
                    "No served bundle holds " code { (path) } "."
                }
            }
        };
        (
            StatusCode::NOT_FOUND,
            page_html("trove: not found", &lease, body).into_string(),
        )
    })
    .await;
    answer(page)
}

/// The largest file the file page highlights.
const HIGHLIGHT_MAX_BYTES: usize = 1 << 20;

/// The file page's body: crumbs, outline, the numbered and highlighted text, the references
/// panel. `bundle` is the label links carry when several bundles are served.
fn file_body(b: &Bundle, path: &str, text: &str, bundle: Option<&str>) -> Markup {
    // Without the structure (a failure reading it), the file is still shown.
    let facts = file_facts(b, path, bundle).unwrap_or_default();
    // A file past HIGHLIGHT_MAX_BYTES (generated, minified) is shown plain: a parse of every
    // request's whole text is what highlighting costs.
    let runs = (text.len() <= HIGHLIGHT_MAX_BYTES)
        .then(|| trove_lang::highlight::classes_for_path(path, text))
        .flatten()
        .unwrap_or_default();
    let mut runs = runs.as_slice();
    let mut offset = 0;
    let lines = text.split_inclusive('\n').enumerate().map(|(i, raw)| {
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let end = offset + line.len();
        // This line's runs, relative to it (runs never cross a line break).
        let here = runs.partition_point(|&(a, _, _)| a < end);
        let mine: Vec<(usize, usize, &'static str)> = runs[..here]
            .iter()
            .filter(|&&(a, _, _)| a >= offset)
            .map(|&(a, b, c)| (a - offset, b.min(end) - offset, c))
            .collect();
        runs = &runs[here..];
        offset += raw.len();
        let links = facts
            .links
            .get(&(i as i64 + 1))
            .map_or(&[][..], Vec::as_slice);
        (i + 1, linked(line, links, &mine))
    });
    let lines: Vec<(usize, Markup)> = lines.collect();
    html! {
        nav .crumbs { a href="/" { "search" } " / " span { (path) } " — " span .bundle { (b.label) } }
        div .file-view {
            @if !facts.outline.is_empty() {
                nav .outline aria-label="outline" {
                    h2 { "Outline" }
                    ul {
                        @for o in &facts.outline {
                            li { a href=(format!("#L{}", o.line)) { span .kind { (o.kind) } " " (o.name) } }
                        }
                    }
                }
            }
            table .source aria-label=(format!("{path}, numbered lines")) {
                @for (n, code) in &lines {
                    tr id=(format!("L{n}")) {
                        td .ln { a href=(format!("#L{n}")) { (n) } }
                        td { code { (code) } }
                    }
                }
            }
            aside #panel aria-label="references" hidden {}
        }
    }
}

/// A definition in a file's outline.
#[derive(Debug, Clone)]
struct Outlined {
    name: String,
    kind: String,
    line: i64,
}

/// A word of a line that is a link: a definition (to its references) or a resolved reference
/// (to its definition).
#[derive(Debug, Clone)]
struct Link {
    word: String,
    href: String,
    class: &'static str,
    title: String,
}

/// What the file page shows beside the text: its definitions, and the links on its lines.
#[derive(Debug, Default)]
struct FileFacts {
    outline: Vec<Outlined>,
    links: std::collections::HashMap<i64, Vec<Link>>,
}

fn cell(v: &duckdb::types::Value) -> String {
    match trove_query::sql::to_json(v) {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The definitions of `path` in `b` and the references on its lines that resolve to a
/// definition.
fn file_facts(b: &Bundle, path: &str, bundle: Option<&str>) -> trove_query::Result<FileFacts> {
    let p = trove_base::util::sql_lit(path);
    let mut facts = FileFacts::default();
    let (_, defs) = b.run_sql(&format!(
        "SELECT name, kind, start_line, coalesce(name_line, start_line), symbol_path \
         FROM symbols WHERE path = {p} ORDER BY start_line, name"
    ))?;
    for r in &defs {
        let (name, kind) = (cell(&r[0]), cell(&r[1]));
        let line: i64 = cell(&r[2]).parse().unwrap_or(1);
        let name_line: i64 = cell(&r[3]).parse().unwrap_or(line);
        let symbol_path = cell(&r[4]);
        facts.links.entry(name_line).or_default().push(Link {
            word: name.clone(),
            href: refs_href(&symbol_path, "all", bundle),
            class: "def",
            title: format!("references of {symbol_path}"),
        });
        facts.outline.push(Outlined { name, kind, line });
    }
    let (_, refs) = b.run_sql(&format!(
        "SELECT r.line, r.target, t.path, t.start_line, t.symbol_path FROM refs r \
         JOIN symbols t ON t.symbol_id = r.target_symbol_id \
         WHERE r.path = {p} AND r.kind <> 'import' ORDER BY r.line"
    ))?;
    for r in &refs {
        let line: i64 = cell(&r[0]).parse().unwrap_or(0);
        let target = cell(&r[1]);
        let leaf = target
            .rsplit(['.', ':', '>', ' '])
            .find(|s| !s.is_empty())
            .unwrap_or(&target)
            .to_string();
        let to_line: i64 = cell(&r[3]).parse().unwrap_or(1);
        facts.links.entry(line).or_default().push(Link {
            word: leaf,
            href: file_href(&cell(&r[2]), bundle, Some((to_line, to_line))),
            class: "ref",
            title: format!("definition: {}", cell(&r[4])),
        });
    }
    Ok(facts)
}

/// `s` for a query string's value.
fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `line` with the first whole-word occurrence of each link's word made a link, and its
/// highlighted `runs` (byte ranges of the line) in `<span class="tok-CLASS">`; every piece escaped.
fn linked(line: &str, links: &[Link], runs: &[(usize, usize, &'static str)]) -> Markup {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut spans: Vec<(usize, usize, &Link)> = Vec::new();
    for l in links {
        if l.word.is_empty() {
            continue;
        }
        let mut from = 0;
        while let Some(i) = line[from..].find(l.word.as_str()) {
            let (a, b) = (from + i, from + i + l.word.len());
            let before = line[..a].chars().next_back().is_some_and(ident);
            let after = line[b..].chars().next().is_some_and(ident);
            let taken = spans.iter().any(|&(x, y, _)| a < y && x < b);
            if !before && !after && !taken {
                spans.push((a, b, l));
                break;
            }
            from = b;
        }
    }
    spans.sort_by_key(|&(a, _, _)| a);
    let painted = |r: std::ops::Range<usize>| {
        html! {
            @for (class, r) in pieces(line, r, runs) {
                @if let Some(c) = class { span class=(format!("tok-{c}")) { (&line[r]) } } @else { (&line[r]) }
            }
        }
    };
    html! {
        @for (l, r) in pieces(line, 0..line.len(), &spans) {
            @if let Some(l) = l {
                a class=(l.class) href=(l.href) title=(l.title) { (painted(r)) }
            } @else {
                (painted(r))
            }
        }
    }
}

/// The address of the references page of `name`, following `follow`, in `bundle`.
fn refs_href(name: &str, follow: &str, bundle: Option<&str>) -> String {
    let mut href = format!("/refs-of?name={}&follow={follow}", query_escape(name));
    if let Some(b) = bundle {
        href.push_str("&bundle=");
        href.push_str(&query_escape(b));
    }
    href
}

/// The references page's form (`/refs-of?name=...&follow=...&bundle=...`); `partial=1` asks for
/// the tabs and the table alone (the file page's side panel).
#[derive(Debug, Default, serde::Deserialize)]
pub struct RefsForm {
    name: Option<String>,
    follow: Option<String>,
    bundle: Option<String>,
    partial: Option<String>,
}

/// `GET /refs-of?name=NAME&follow=callers|callees|subtypes|uses|imports|all`: the references of a
/// definition (in one bundle with `bundle=LABEL`), each a link to its line, with where it
/// resolves.
pub async fn refs_page(
    State(app): State<Shared>,
    form: Result<Query<RefsForm>, axum::extract::rejection::QueryRejection>,
) -> Response {
    use crate::structure::{Follow, refs_rows};
    let form = form.map(|Query(f)| f).unwrap_or_default();
    let name = form.name.unwrap_or_default();
    let follows = [
        ("all", Follow::All),
        ("callers", Follow::Callers),
        ("callees", Follow::Callees),
        ("subtypes", Follow::Subtypes),
        ("uses", Follow::Uses),
        ("imports", Follow::Imports),
    ];
    let chosen = form.follow.unwrap_or_else(|| "all".into());
    let follow = follows
        .iter()
        .find(|(n, _)| *n == chosen)
        .map_or(Follow::All, |f| f.1);
    let wanted = form.bundle.filter(|b| !b.is_empty());
    let partial = form.partial.is_some();
    let lease = app.served.lease(Lane::Lookup).await;
    let page = tokio::task::spawn_blocking(move || {
        let bundles = lease.tools().bundles();
        let multi = bundles.len() > 1;
        // (bundle label for links, the row's cells)
        let mut rows: Vec<(Option<&str>, Vec<String>)> = Vec::new();
        let mut error = None;
        if let Some(w) = wanted.as_deref().filter(|w| !bundles.iter().any(|b| b.label == *w)) {
            error = Some(format!("no served bundle is named {w}"));
        }
        if !name.trim().is_empty() {
            for b in bundles.iter().filter(|b| wanted.as_deref().is_none_or(|w| w == b.label)) {
                let label = multi.then_some(b.label.as_str());
                match refs_rows(b, &name, follow, 500) {
                    Ok((_, found)) => {
                        rows.extend(found.iter().map(|r| (label, r.iter().map(cell).collect())))
                    }
                    Err(e) => error = Some(format!("{e:#}")),
                }
            }
        }
        let in_bundle = wanted.as_deref().filter(|_| multi);
        let body = html! {
            nav .tabs aria-label="which references" {
                @for (n, _) in follows {
                    a href=(refs_href(&name, n, in_bundle))
                        aria-current=[(n == chosen).then_some("page")] { (n) }
                }
            }
            @if let Some(e) = &error { p .error role="alert" { (e) } }
            p .count { (rows.len()) " references" }
            table .refs {
                @for (label, r) in &rows {
                    @let line: i64 = r[1].parse().unwrap_or(1);
                    tr {
                        td { a href=(file_href(&r[0], *label, Some((line, line)))) { (r[0]) ":" (r[1]) } }
                        td .kind { (r[2]) }
                        td { code { (r[3]) } }
                        td { (r[4]) }
                        td {
                            @if !r[5].is_empty() {
                                @let to: i64 = r[6].parse().unwrap_or(1);
                                "→ " a href=(file_href(&r[5], *label, Some((to, to)))) { (r[5]) ":" (r[6]) }
                            }
                        }
                    }
                }
            }
        };
        if partial {
            return html! {
                div .panel-head {
                    h2 tabindex="-1" { "References of " code { (name) } }
                    button type="button" .close aria-label="close the references" { "×" }
                }
                (body)
            }
            .into_string();
        }
        let body = html! {
            nav .crumbs { a href="/" { "search" } " / references of " code { (name) } }
            (body)
        };
        page_html(&format!("trove: references of {name}"), &lease, body).into_string()
    })
    .await;
    answer(page.map(|body| (StatusCode::OK, body)))
}

/// `GET /tree`: the repository map of each served bundle as a folding tree (folders open two
/// levels down), with file, definition and inbound counts and summaries; files open their page.
pub async fn tree_page(State(app): State<Shared>) -> Response {
    let lease = app.served.lease(Lane::Lookup).await;
    let page = tokio::task::spawn_blocking(move || {
        let bundles = lease.tools().bundles();
        let multi = bundles.len() > 1;
        let mut trees = Vec::new();
        for b in bundles {
            let tree = crate::map::MapFiles::load(b, None).and_then(|files| {
                crate::map::map_json(&files, &b.manifest.source.repo, None, None)
            });
            trees.push((b.label.clone(), tree.map_err(|e| format!("{e:#}"))));
        }
        let body = html! {
            nav .crumbs { a href="/" { "search" } " / map" }
            @for (label, tree) in &trees {
                section .map aria-label=(format!("map of {label}")) {
                    h2 { (label) }
                    @match tree {
                        Ok(Some(root)) => ul .tree { (tree_node(root, "", 0, multi.then_some(label.as_str()))) },
                        Ok(None) => p { "No indexed file." },
                        Err(e) => p .error role="alert" { (e) },
                    }
                }
            }
        };
        (
            StatusCode::OK,
            page_html("trove: map", &lease, body).into_string(),
        )
    })
    .await;
    answer(page)
}

/// One entry of the map (`trove map --format json`'s node) under the folder `parent`.
fn tree_node(n: &serde_json::Value, parent: &str, depth: usize, bundle: Option<&str>) -> Markup {
    let name = n["name"].as_str().unwrap_or("");
    let kids = n["children"].as_array().filter(|k| !k.is_empty());
    let path = match (depth, parent) {
        (0, _) => String::new(),
        (_, "") => name.to_string(),
        _ => format!("{parent}/{name}"),
    };
    let counts = format!(
        "{} files · {} definitions · used by {}",
        n["files"], n["symbols"], n["inbound"]
    );
    let summary = n["summary"].as_str();
    html! {
        li {
            @if let Some(kids) = kids {
                details open[depth < 2] {
                    summary { span .dir { (name) "/" } " " span .counts { (counts) } }
                    @if let Some(s) = summary { p .summary { (s) } }
                    ul { @for k in kids { (tree_node(k, &path, depth + 1, bundle)) } }
                }
            } @else {
                a href=(file_href(&path, bundle, None)) { (name) }
                " " span .counts { (n["symbols"]) " definitions" }
                @if let Some(s) = summary { " — " span .summary { (s) } }
            }
        }
    }
}

/// A page rendered on a blocking thread, as the response; a thread that failed is a 500.
fn answer(page: Result<(StatusCode, String), tokio::task::JoinError>) -> Response {
    match page {
        Ok((status, body)) => (status, Html(body)).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the page failed: {e}"),
        )
            .into_response(),
    }
}

/// A whole page: head, the served bundles' provenance, `body`, the script.
fn page_html(title: &str, lease: &Lease, body: Markup) -> Markup {
    let bundles = lease.tools().bundles();
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                // The version of the bundles this page shows: the script compares it with the
                // server's (every answer's `x-trove-generation`) and says when a newer one is served.
                meta name="trove-generation" content=(lease.generation.id);
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                link rel="stylesheet" href="/static/app.css";
            }
            body {
                header {
                    a .brand href="/" { "trove" }
                    a href="/tree" { "map" }
                    ul .provenance aria-label="served bundles" {
                        @for b in bundles {
                            @let s = &b.manifest.source;
                            li {
                                strong { (b.label) } " "
                                (s.repo)
                                @if let Some(c) = &s.commit { " @ " code { (c.get(..12).unwrap_or(c)) } }
                                @if let Some(br) = &s.branch { " [" (br) "]" }
                                " · indexed " (b.manifest.created_at)
                                " · " (b.manifest.embedder.backend) " " (b.manifest.embedder.model)
                            }
                        }
                    }
                }
                div #reload-banner role="status" hidden {
                    "A newer version of the bundles is served. " a href="" { "Reload" }
                }
                main { (body) }
                script src="/static/app.js" {}
            }
        }
    }
}

/// The cookie a login sets: the server's token, sent back by the browser with each page.
const COOKIE: &str = "trove_token";

/// Routes open without the token: the login page and the assets it needs.
pub fn is_open(path: &str) -> bool {
    path == "/login" || path.starts_with("/static/")
}

/// Routes that are web pages (a login cookie reads them; GET only).
pub fn is_page(method: &axum::http::Method, path: &str) -> bool {
    method == axum::http::Method::GET
        && (path == "/" || path == "/refs-of" || path == "/tree" || path.starts_with("/file/"))
}

/// The token in the request's login cookie, if any.
pub fn cookie_token(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// What the login cookie holds for the server's token: a hash of it (the token itself, which
/// scripts send as a bearer token, is not stored in the browser, and any bytes it has are fine).
pub fn cookie_value(token: &str) -> String {
    trove_base::util::sha256_hex(format!("trove serve login\0{token}").as_bytes())
}

/// A browser without the login cookie is sent to the login page.
pub fn to_login() -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, "/login")]).into_response()
}

/// `GET /login`: the form that asks for the server's token.
pub async fn login_page() -> Response {
    Html(login_html(None).into_string()).into_response()
}

fn login_html(error: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "trove: log in" }
                link rel="stylesheet" href="/static/app.css";
            }
            body {
                header { span .brand { "trove" } }
                main {
                    form #login action="/login" method="post" {
                        h1 { "This server needs its token" }
                        @if let Some(e) = error { p .error role="alert" { (e) } }
                        label for="token" { "Token" }
                        " "
                        input #token type="password" name="token" autocomplete="current-password" autofocus;
                        " "
                        button type="submit" { "Log in" }
                    }
                }
            }
        }
    }
}

/// The login form's body.
#[derive(serde::Deserialize)]
pub struct LoginForm {
    token: String,
}

/// `POST /login`: with the right token, a cookie that holds it (HttpOnly, SameSite=Strict) and
/// the search page; with a wrong one, the form again, 401.
pub async fn login(
    State(app): State<Shared>,
    form: Result<axum::extract::Form<LoginForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    let given = form.map(|f| f.0.token).unwrap_or_default();
    let Some(token) = app.token.as_deref() else {
        return (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    };
    if given.len() != token.len()
        || given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            != 0
    {
        let page = login_html(Some("That is not this server's token.")).into_string();
        return (StatusCode::UNAUTHORIZED, Html(page)).into_response();
    }
    let cookie = format!(
        "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
        cookie_value(token)
    );
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, "/".to_string()),
            (header::SET_COOKIE, cookie),
        ],
    )
        .into_response()
}

/// `GET /static/app.js`.
pub async fn app_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

/// `GET /static/app.css`.
pub async fn app_css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_out_of_the_query_box() {
        let p = parse_query("lang:go  retry path:cmd/ kind:function backoff type:test bundle:a");
        assert_eq!(p.text, "retry backoff");
        assert_eq!(p.langs, ["go"]);
        assert_eq!(p.kinds, ["function"]);
        assert_eq!(p.types, ["test"]);
        assert_eq!(p.bundles, ["a"]);
        assert_eq!(p.path.as_deref(), Some("cmd/**"));
        assert_eq!(
            parse_query("path:src/*.rs x").path.as_deref(),
            Some("src/*.rs")
        );
        assert_eq!(
            parse_query("path:a.rs x").path.as_deref(),
            Some("{a.rs,a.rs/**}")
        );
        assert_eq!(parse_query("std::io").text, "std::io");
    }

    #[test]
    fn marked_text_is_escaped_and_marks_words() {
        let m = marked("<script>charge(x)</script>", &["charge".into()]).into_string();
        assert_eq!(m, "&lt;script&gt;<mark>charge</mark>(x)&lt;/script&gt;");
        assert_eq!(
            file_href("a b/c#d.rs", None, Some((3, 5))),
            "/file/a%20b/c%23d.rs#L3-L5"
        );
        assert_eq!(
            file_href("a.rs", Some("x y"), Some((3, 3))),
            "/file/a.rs?bundle=x%20y#L3"
        );
    }

    #[test]
    fn a_line_is_linked_and_highlighted_in_one_pass() {
        let link = Link {
            word: "charge".into(),
            href: "/file/b.rs#L2".into(),
            class: "ref",
            title: "definition: charge".into(),
        };
        // `fn` a keyword, `charge` a link and a function, `<x>` text.
        let runs = [(0, 2, "keyword"), (3, 9, "function")];
        let m = linked("fn charge<x>()", &[link], &runs).into_string();
        assert_eq!(
            m,
            "<span class=\"tok-keyword\">fn</span> <a class=\"ref\" href=\"/file/b.rs#L2\" \
             title=\"definition: charge\"><span class=\"tok-function\">charge</span></a>&lt;x&gt;()"
        );
        // Overlapping or misplaced spans are left out, never a panic.
        let p = pieces("héllo", 0..6, &[(0, 2, 1), (1, 3, 2), (2, 4, 4), (3, 9, 3)]);
        assert_eq!(p, vec![(None, 0..1), (Some(2), 1..3), (Some(3), 3..6)]);
    }
}
