//! Extractive summaries: one sentence per chunk and per file, taken from what the code says about
//! itself, else built from what it is.
//!
//! A chunk: its doc comment's first sentence; else, for a definition, its kind, name and parent
//! plus what it calls (`Method process_payment of PaymentService; calls validate, total, charge.`);
//! for a doc section, the first sentence under its heading; else its first line. A file: its header
//! comment or module docstring (license headers skipped), else what it defines (`Defines class
//! Invoice, class PaymentService, function format_amount.`; a config file: `Configures package,
//! dependencies.`), else its first heading or line.
//! Deterministic: the same file gives the same summaries.
use trove_lang::chunk::{Chunk, Symbol};
use trove_lang::lang::Language;

/// Longest summary kept, in characters.
const MAX_CHARS: usize = 200;
/// Callees named in a chunk summary.
const MAX_CALLEES: usize = 5;
/// Definitions named in a file summary.
const MAX_DEFS: usize = 6;

/// Kinds that are definitions with a name worth a sentence.
fn is_definition(kind: &str) -> bool {
    !matches!(kind, "block" | "section" | "paragraphs" | "lines")
}

/// Whether `line` is a reStructuredText/Markdown underline, overline or banner: three or more
/// of one punctuation character (`=====`, `~~~~`, `-----`, `*****`, `#####`).
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    let mut chars = t.chars();
    match chars.next() {
        Some(c) if t.len() >= 3 && c.is_ascii_punctuation() => chars.all(|x| x == c),
        _ => false,
    }
}

/// `text` without its titles: rst titles (a line over an underline, with or without an
/// overline), Markdown headings (`# Title`) and banner lines, so a docstring that opens with
/// `requests.cookies` over `~~~~~~~~` summarizes as its first sentence of prose.
fn without_titles(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        let underlined = lines.get(i + 1).is_some_and(|n| is_rule(n)) && !t.is_empty();
        let heading = t.starts_with('#') && t.trim_start_matches('#').starts_with(' ');
        if is_rule(t) || underlined || heading {
            keep.push("");
        } else {
            keep.push(l);
        }
    }
    keep.join("\n")
}

/// The first sentence of `text` (whitespace collapsed, titles and banners left out), at most
/// [`MAX_CHARS`] characters.
pub fn first_sentence(text: &str) -> Option<String> {
    let mut stripped = without_titles(text);
    if stripped.trim().is_empty() {
        // Titles only: keep them, without their underlines and banners.
        stripped = text
            .lines()
            .filter(|l| !is_rule(l))
            .collect::<Vec<_>>()
            .join("\n");
    }
    let text = stripped.as_str();
    // A blank line ends the first paragraph; inside it, ". " ends the sentence.
    let para = text.trim().split("\n\n").next().unwrap_or("");
    let flat = para.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .find(|&i| i > 12)
        .unwrap_or(flat.len());
    let s = &flat[..end];
    let s = if s.chars().count() > MAX_CHARS {
        let cut: String = s.chars().take(MAX_CHARS - 1).collect();
        format!("{}…", cut.trim_end())
    } else {
        s.to_string()
    };
    (!s.is_empty()).then_some(s)
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// One chunk's summary. `calls` are the names it calls, in source order.
pub fn chunk_summary(chunk: &Chunk, calls: &[&str]) -> Option<String> {
    if let Some(d) = chunk.docs.as_deref().and_then(first_sentence) {
        return Some(d);
    }
    let mut seen: Vec<&str> = Vec::new();
    for c in calls {
        if !seen.contains(c) && seen.len() < MAX_CALLEES {
            seen.push(c);
        }
    }
    let calls_part = if seen.is_empty() {
        String::new()
    } else {
        format!("; calls {}", seen.join(", "))
    };
    match (chunk.kind.as_str(), &chunk.symbol) {
        ("section", _) => {
            // The heading line, then the section's first sentence.
            let body = chunk.content.trim_start();
            let rest = body.split_once('\n').map_or("", |(_, r)| r);
            let rest = rest.trim_start_matches(['=', '-', '~', '^', '#', '*', '\n', ' ']);
            first_sentence(rest).or_else(|| chunk.symbol_path.clone())
        }
        (kind, Some(name)) if is_definition(kind) => {
            let parent = chunk
                .symbol_path
                .as_deref()
                .and_then(|p| p.rsplit_once(" > "))
                .map(|(parent, _)| format!(" of {}", parent.replace(" > ", ".")))
                .unwrap_or_default();
            Some(format!("{} {name}{parent}{calls_part}.", capitalised(kind)))
        }
        ("block", _) if !seen.is_empty() => Some(format!("Top-level code{calls_part}.")),
        _ => chunk
            .content
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .and_then(first_sentence),
    }
}

/// The header comment or module docstring at the top of `text`, markers stripped; license and
/// copyright blocks are skipped.
fn header_comment(text: &str, lang: &Language, first_def: Option<usize>) -> Option<String> {
    let d = &lang.def;
    let mut rest = text.trim_start_matches('\u{feff}');
    if rest.starts_with("#!") {
        rest = rest.split_once('\n').map_or("", |(_, r)| r);
    }
    for _ in 0..4 {
        rest = rest.trim_start();
        let module_marker = rest.starts_with("//!") || rest.starts_with("/*!");
        let docstring = d.docstrings && (rest.starts_with("\"\"\"") || rest.starts_with("'''"));
        let in_block = !docstring
            && d.block_comments
                .iter()
                .any(|(o, _)| rest.starts_with(o.as_str()));
        let (block, after) = if let Some(q) = ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| d.docstrings && rest.starts_with(q))
        {
            let body = &rest[3..];
            let end = body.find(q)?;
            (body[..end].to_string(), &body[end + 3..])
        } else if let Some((open, close)) = d
            .block_comments
            .iter()
            .find(|(o, _)| rest.starts_with(o.as_str()))
        {
            let body = &rest[open.len()..];
            let end = body.find(close.as_str())?;
            let lines: Vec<&str> = body[..end]
                .lines()
                .map(|l| l.trim().trim_start_matches(['*', '!']).trim())
                .collect();
            (lines.join("\n"), &body[end + close.len()..])
        } else if let Some(marker) = d
            .line_comments
            .iter()
            .find(|m| rest.starts_with(m.as_str()))
        {
            // One block runs over blank lines between its comment lines: a banner, credits and
            // a copyright notice set apart by blank lines are one license header.
            let mut lines = Vec::new();
            let mut consumed = 0;
            let all: Vec<&str> = rest.split_inclusive('\n').collect();
            for (i, l) in all.iter().enumerate() {
                let t = l.trim();
                match t.strip_prefix(marker.as_str()) {
                    Some(body) => {
                        lines.push(body.trim_start_matches(['/', '!', '#', '-', ';']).trim());
                        consumed += l.len();
                    }
                    None if t.is_empty()
                        && all[i + 1..]
                            .iter()
                            .map(|n| n.trim())
                            .find(|n| !n.is_empty())
                            .and_then(|n| n.strip_prefix(marker.as_str()))
                            // `//!` and `///` after a blank line are docs, not more header.
                            .is_some_and(|rest| !rest.starts_with(['!', '/'])) =>
                    {
                        lines.push("");
                        consumed += l.len();
                    }
                    None => break,
                }
            }
            (lines.join("\n"), rest.get(consumed..).unwrap_or(""))
        } else {
            return None;
        };
        // A comment right above the first definition is that definition's doc, not the file's.
        let next_start = text.len() - after.len()
            + if in_block {
                after.find('\n').map_or(after.len(), |i| i + 1)
            } else {
                0
            };
        let next_end = text[next_start..]
            .find('\n')
            .map_or(text.len(), |i| next_start + i);
        if !module_marker
            && !docstring
            && first_def.is_some_and(|d| next_start <= d && d <= next_end)
        {
            return None;
        }
        let lower = block.to_lowercase();
        let license = lower.contains("copyright")
            || lower.contains("spdx-license")
            || lower.contains("licensed under")
            || lower.contains("license");
        if !license && let Some(s) = first_sentence(&block) {
            return Some(s);
        }
        rest = after;
    }
    None
}

/// A code file's own header comment or module docstring, when it has one.
pub fn file_docs(
    text: &str,
    lang: Option<&Language>,
    source_type: &str,
    symbols: &[Symbol],
) -> Option<String> {
    let l = lang?;
    if source_type == "doc" {
        return None;
    }
    header_comment(text, l, symbols.iter().map(|s| s.start_byte).min())
}

/// One file's summary.
pub fn file_summary(
    text: &str,
    lang: Option<&Language>,
    source_type: &str,
    symbols: &[Symbol],
    chunks: &[Chunk],
) -> Option<String> {
    if let Some(h) = file_docs(text, lang, source_type, symbols) {
        return Some(h);
    }
    let top: Vec<&Symbol> = symbols.iter().filter(|s| s.parent.is_none()).collect();
    if !top.is_empty() {
        let named: Vec<String> = top
            .iter()
            .take(MAX_DEFS)
            .map(|s| format!("{} {}", s.kind, s.name))
            .collect();
        let more = if top.len() > MAX_DEFS {
            format!(" and {} more", top.len() - MAX_DEFS)
        } else {
            String::new()
        };
        if source_type == "config" {
            let keys: Vec<&str> = top.iter().take(MAX_DEFS).map(|s| s.name.as_str()).collect();
            return Some(format!("Configures {}{more}.", keys.join(", ")));
        }
        return Some(format!("Defines {}{more}.", named.join(", ")));
    }
    if source_type == "doc"
        && let Some(c) = chunks.iter().find(|c| c.kind == "section")
    {
        let title = c.symbol_path.as_deref().unwrap_or("");
        return match chunk_summary(c, &[]) {
            Some(s) if !title.is_empty() && s != title => Some(format!("{title}: {s}")),
            Some(s) => Some(s),
            None => (!title.is_empty()).then(|| title.to_string()),
        };
    }
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .and_then(first_sentence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences() {
        assert_eq!(
            first_sentence("Charges an invoice. Retries twice.").as_deref(),
            Some("Charges an invoice.")
        );
        assert_eq!(
            first_sentence("Line one\ncontinues here.\n\nNext para.").as_deref(),
            Some("Line one continues here.")
        );
        assert_eq!(first_sentence("  \n"), None);
        assert!(first_sentence(&"x ".repeat(300)).unwrap().chars().count() <= MAX_CHARS);
    }

    #[test]
    fn titles_and_banners_are_not_the_summary() {
        let rst = "\nrequests.cookies\n~~~~~~~~~~~~~~~~\n\nCompatibility code to use a CookieJar. More.\n";
        assert_eq!(
            first_sentence(rst).as_deref(),
            Some("Compatibility code to use a CookieJar.")
        );
        let over = "=====\nTitle\n=====\nBody text here.";
        assert_eq!(first_sentence(over).as_deref(), Some("Body text here."));
        let md = "# Billing\n\nCharges invoices.";
        assert_eq!(first_sentence(md).as_deref(), Some("Charges invoices."));
        let banner = "**********\nThe parser.\n**********";
        assert_eq!(first_sentence(banner).as_deref(), Some("The parser."));
        // A title alone is still better than nothing.
        assert_eq!(first_sentence("Title\n=====").as_deref(), Some("Title"));
        // `#define`, `#!` and the like are not headings.
        assert_eq!(
            first_sentence("#define X 1").as_deref(),
            Some("#define X 1")
        );
    }

    #[test]
    fn file_headers_skip_licenses() {
        let reg = trove_lang::lang::Registry::load(&[]).unwrap();
        let rs = reg.get("rust").unwrap();
        let py = reg.get("python").unwrap();
        let src = "// Copyright 2024 Example.\n// Licensed under MIT.\n\n//! Parses configs. More.\nfn f() {}\n";
        assert_eq!(
            header_comment(src, rs, Some(src.find("fn").unwrap())).as_deref(),
            Some("Parses configs.")
        );
        let src = "/// A shape.\npub struct Circle;\n";
        assert_eq!(header_comment(src, rs, Some(14)), None);
        let src = "#!/usr/bin/env python\n\"\"\"Billing helpers.\n\nLong text.\"\"\"\nimport os\n";
        assert_eq!(
            header_comment(src, py, None).as_deref(),
            Some("Billing helpers.")
        );
        assert_eq!(header_comment("fn main() {}\n", rs, Some(0)), None);
    }
}
