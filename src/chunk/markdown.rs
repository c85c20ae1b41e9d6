//! Markdown by heading section: every ATX (`## Title`) or setext (`Title` over `===`/`---`)
//! heading outside a fenced code block starts a `section` chunk whose `symbol_path` is the heading
//! path (`Guide > Install > From source`). Text before the first heading is a `block`.
use super::{Builder, Meta};

struct Heading {
    /// Byte where the section starts (the heading's first line).
    start: usize,
    level: usize,
    title: String,
}

/// `## Title ##` → (2, "Title").
fn atx(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let t = &line[indent..];
    let level = t.bytes().take_while(|&b| b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim_end();
    Some((level, title.to_string()))
}

/// `===` (level 1) or `---` (level 2) under a paragraph line.
fn setext_level(line: &str) -> Option<usize> {
    let t = line.trim_end();
    let indent = t.len() - t.trim_start_matches(' ').len();
    if indent > 3 || t.trim().is_empty() {
        return None;
    }
    let t = t.trim();
    if t.bytes().all(|b| b == b'=') {
        Some(1)
    } else if t.bytes().all(|b| b == b'-') {
        Some(2)
    } else {
        None
    }
}

fn fence(line: &str) -> Option<&'static str> {
    let t = line.trim_start();
    if t.starts_with("```") {
        Some("```")
    } else if t.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

pub(super) fn chunk(b: &mut Builder<'_>) {
    let text = b.text;
    let mut headings: Vec<Heading> = Vec::new();
    let mut in_fence: Option<&str> = None;
    let mut prev: Option<(usize, &str)> = None; // previous line (start, text) if it may be a setext title
    let mut offset = 0;
    let mut first_line = true;
    let mut in_front_matter = false;
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        // YAML front matter (`---` on the first line) is not a setext underline.
        if first_line && line.trim_end() == "---" {
            in_front_matter = true;
            first_line = false;
            continue;
        }
        first_line = false;
        if in_front_matter {
            if matches!(line.trim_end(), "---" | "...") {
                in_front_matter = false;
            }
            continue;
        }
        if let Some(f) = in_fence {
            if line.trim_start().starts_with(f) {
                in_fence = None;
            }
            continue;
        }
        if let Some(f) = fence(line) {
            in_fence = Some(f);
            prev = None;
            continue;
        }
        if let Some((level, title)) = atx(line) {
            headings.push(Heading {
                start,
                level,
                title,
            });
            prev = None;
            continue;
        }
        if let (Some(level), Some((pstart, ptext))) = (setext_level(line), prev) {
            headings.push(Heading {
                start: pstart,
                level,
                title: ptext.trim().to_string(),
            });
            prev = None;
            continue;
        }
        prev = if line.trim().is_empty() {
            None
        } else {
            Some((start, line))
        };
    }
    let first = headings.first().map_or(text.len(), |h| h.start);
    b.gap(0, first, None);
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (i, h) in headings.iter().enumerate() {
        let end = headings.get(i + 1).map_or(text.len(), |n| n.start);
        while stack.last().is_some_and(|(l, _)| *l >= h.level) {
            stack.pop();
        }
        stack.push((h.level, h.title.clone()));
        let path: Vec<&str> = stack.iter().map(|(_, t)| t.as_str()).collect();
        let meta = Meta {
            kind: "section".into(),
            symbol: Some(h.title.clone()),
            symbol_path: Some(path.join(" > ")),
            signature: None,
            docs: None,
        };
        b.push_split(h.start, end, &meta, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atx_and_setext() {
        assert_eq!(atx("## Install ##"), Some((2, "Install".into())));
        assert_eq!(atx("#hashtag"), None);
        assert_eq!(atx("    # code"), None);
        assert_eq!(setext_level("====="), Some(1));
        assert_eq!(setext_level("---"), Some(2));
        assert_eq!(setext_level("- item"), None);
    }
}
