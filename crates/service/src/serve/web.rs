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
use super::state::Lane;

/// The script of the pages: results as you type, keyboard navigation, permalink highlighting.
const APP_JS: &str = include_str!("web/app.js");
/// The style sheet of the pages.
const APP_CSS: &str = include_str!("web/app.css");

/// The search form's fields (`/?q=...&mode=...&lang=...&path=...`); `partial=1` asks for the
/// results alone (the script replaces them as the user types).
#[derive(Debug, Default, serde::Deserialize)]
pub struct SearchForm {
    q: Option<String>,
    mode: Option<String>,
    lang: Option<String>,
    path: Option<String>,
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
    if let Some(p) = form.path.as_deref().filter(|p| !p.is_empty()) {
        parsed.path = Some(path_glob(p));
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
        let chosen: Vec<&Bundle> = bundles
            .iter()
            .filter(|b| parsed.bundles.is_empty() || parsed.bundles.contains(&b.label))
            .collect();
        let results = if parsed.text.trim().is_empty() {
            None
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
        if form.partial.is_some() {
            return results_html(results.as_ref(), &parsed.text, took).into_string();
        }
        page_html(
            "trove: search",
            bundles,
            html! {
                (search_form(&q, mode, form.lang.as_deref().unwrap_or(""), form.path.as_deref().unwrap_or(""), &langs))
                div #results aria-live="polite" { (results_html(results.as_ref(), &parsed.text, took)) }
            },
        )
        .into_string()
    })
    .await;
    match page {
        Ok(body) => Html(body).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the page failed: {e}"),
        )
            .into_response(),
    }
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

fn search_form(q: &str, mode: Mode, lang: &str, path: &str, langs: &[String]) -> Markup {
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
            label for="path" { "Path" }
            input #path type="text" name="path" value=(path) placeholder="src/ or **/*.go";
            button type="submit" { "Search" }
        }
    }
}

/// The results: hits grouped by file (in the order their best hit ranks), each with its lines.
fn results_html(
    results: Option<&Result<Vec<Hit>, String>>,
    text: &str,
    took: std::time::Duration,
) -> Markup {
    let Some(results) = results else {
        return html! { p .hint { "Type to search. ↑/↓ move between results, Enter opens one." } };
    };
    let hits = match results {
        Ok(h) => h,
        Err(e) => return html! { p .error role="alert" { (e) } },
    };
    let mut files: Vec<(&str, Vec<&Hit>)> = Vec::new();
    for h in hits {
        match files.iter_mut().find(|(p, _)| *p == h.path) {
            Some((_, v)) => v.push(h),
            None => files.push((&h.path, vec![h])),
        }
    }
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect();
    html! {
        p .count { (hits.len()) " results in " (files.len()) " files, " (format!("{:.0}", took.as_secs_f64() * 1000.0)) " ms" }
        @for (path, hs) in &files {
            section .file-group {
                h2 { a href=(file_href(path, None)) { (path) } }
                @for h in hs {
                    div .hit {
                        a .open href=(file_href(path, Some((h.start_line, h.end_line)))) {
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
    let mut pieces: Vec<(bool, &str)> = Vec::new();
    let mut at = 0;
    for (a, b) in spans {
        if a < at || !line.is_char_boundary(a) || !line.is_char_boundary(b) {
            continue;
        }
        pieces.push((false, &line[at..a]));
        pieces.push((true, &line[a..b]));
        at = b;
    }
    pieces.push((false, &line[at..]));
    html! {
        @for (hit, s) in pieces {
            @if hit { mark { (s) } } @else { (s) }
        }
    }
}

/// The address of a file's page, with a line range as a permalink.
fn file_href(path: &str, lines: Option<(i64, i64)>) -> String {
    let encoded: String = path
        .split('/')
        .map(|seg| {
            seg.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/");
    match lines {
        Some((a, b)) if b > a => format!("/file/{encoded}#L{a}-L{b}"),
        Some((a, _)) => format!("/file/{encoded}#L{a}"),
        None => format!("/file/{encoded}"),
    }
}

/// `GET /file/PATH`: the file from the first bundle that holds it, every line numbered and an
/// anchor (`#L12`, `#L10-L20`).
pub async fn file_page(State(app): State<Shared>, UrlPath(path): UrlPath<String>) -> Response {
    let lease = app.served.lease(Lane::Search).await;
    let page = tokio::task::spawn_blocking(move || {
        let bundles = lease.tools().bundles();
        for b in bundles {
            match b.file_text(&path) {
                Ok(Some(text)) => {
                    let body = html! {
                        nav .crumbs { a href="/" { "search" } " / " span { (path) } " — " span .bundle { (b.label) } }
                        table .source aria-label=(format!("{path}, numbered lines")) {
                            @for (i, line) in text.lines().enumerate() {
                                tr id=(format!("L{}", i + 1)) {
                                    td .ln { a href=(format!("#L{}", i + 1)) { (i + 1) } }
                                    td { code { (line) } }
                                }
                            }
                        }
                    };
                    return (StatusCode::OK, page_html(&format!("trove: {path}"), bundles, body).into_string());
                }
                Ok(None) => continue,
                Err(e) => {
                    let body = html! { p .error role="alert" { (format!("{e:#}")) } };
                    return (StatusCode::INTERNAL_SERVER_ERROR, page_html("trove: error", bundles, body).into_string());
                }
            }
        }
        let body = html! {
            nav .crumbs { a href="/" { "search" } }
            p .error role="alert" { "No served bundle holds " code { (path) } "." }
        };
        (StatusCode::NOT_FOUND, page_html("trove: not found", bundles, body).into_string())
    })
    .await;
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
fn page_html(title: &str, bundles: &[Bundle], body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                link rel="stylesheet" href="/static/app.css";
            }
            body {
                header {
                    a .brand href="/" { "trove" }
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
                main { (body) }
                script src="/static/app.js" {}
            }
        }
    }
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
            file_href("a b/c#d.rs", Some((3, 5))),
            "/file/a%20b/c%23d.rs#L3-L5"
        );
    }
}
