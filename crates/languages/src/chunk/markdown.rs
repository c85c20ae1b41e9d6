//! Documents by heading section: every heading starts a `section` chunk whose `symbol_path` is the
//! heading path (`Guide > Install > From source`); text before the first heading is a `block`.
//! Headings: Markdown ATX (`## Title`) or setext (`Title` over `===`/`---`) outside fenced code;
//! reStructuredText titles (a line underlined, optionally overlined, by one repeated punctuation
//! character; levels in order of first appearance of each style); AsciiDoc `== Title` outside
//! `----`/`....` delimited blocks.
use super::{Builder, Meta};

/// Which heading rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// Markdown: ATX and setext.
    Markdown,
    /// reStructuredText: under/overlined titles.
    Rst,
    /// AsciiDoc: `=` titles.
    Asciidoc,
}

/// An rst adornment line: one punctuation character repeated (at least 3 times) → that character.
fn rst_adornment(line: &str) -> Option<char> {
    let t = line.trim_end();
    let c = t.chars().next()?;
    (c.is_ascii_punctuation() && t.len() >= 3 && t.chars().all(|x| x == c)).then_some(c)
}

/// `== Title` → (2, "Title") (AsciiDoc; `=` is the document title, level 1).
fn asciidoc_title(line: &str) -> Option<(usize, String)> {
    let level = line.bytes().take_while(|b| *b == b'=').count();
    let rest = line.get(level..)?;
    ((1..=6).contains(&level) && rest.starts_with(' ') && !rest.trim().is_empty())
        .then(|| (level, rest.trim().to_string()))
}

/// Headings of an rst or AsciiDoc text.
fn other_headings(text: &str, style: Style) -> Vec<Heading> {
    let mut out = Vec::new();
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |off, raw| {
            let start = *off;
            *off += raw.len();
            Some((start, raw.trim_end_matches(['\n', '\r'])))
        })
        .collect();
    if style == Style::Asciidoc {
        let mut in_block: Option<&str> = None;
        for (start, line) in lines {
            let t = line.trim_end();
            if let Some(d) = in_block {
                if t == d {
                    in_block = None;
                }
                continue;
            }
            if matches!(t, "----" | "...." | "````" | "++++" | "____") {
                in_block = Some(t);
                continue;
            }
            if let Some((level, title)) = asciidoc_title(line) {
                out.push(Heading {
                    start,
                    level,
                    title,
                });
            }
        }
        return out;
    }
    // rst: (character, overlined) styles, numbered in order of first use.
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let (start, title) = lines[i];
        let under = rst_adornment(lines[i + 1].1);
        let t = title.trim();
        if let Some(c) = under
            && !t.is_empty()
            && rst_adornment(title).is_none()
            && lines[i + 1].1.trim_end().chars().count() >= t.chars().count()
        {
            let over = i > 0 && rst_adornment(lines[i - 1].1) == Some(c);
            let style = (c, over);
            let level = match styles.iter().position(|s| *s == style) {
                Some(p) => p + 1,
                None => {
                    styles.push(style);
                    styles.len()
                }
            };
            let start = if over { lines[i - 1].0 } else { start };
            out.push(Heading {
                start,
                level,
                title: t.to_string(),
            });
            i += 2;
            continue;
        }
        i += 1;
    }
    out
}

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

pub(super) fn chunk(b: &mut Builder<'_>, style: Style) {
    let text = b.text;
    let headings = if style == Style::Markdown {
        markdown_headings(text)
    } else {
        other_headings(text, style)
    };
    emit(b, &headings);
}

/// Markdown ATX and setext headings outside fenced code and front matter.
fn markdown_headings(text: &str) -> Vec<Heading> {
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
    headings
}

/// One `section` chunk per heading, to the next heading.
fn emit(b: &mut Builder<'_>, headings: &[Heading]) {
    let text = b.text;
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

    #[test]
    fn rst_levels_follow_first_use_and_overlines_count() {
        let text = "=====\nTitle\n=====\n\nIntro\n\nPart\n====\n\nSub\n---\n\nNext\n====\n\nToo short\n==\n";
        let h = other_headings(text, Style::Rst);
        let got: Vec<(usize, &str)> = h.iter().map(|h| (h.level, h.title.as_str())).collect();
        assert_eq!(got, [(1, "Title"), (2, "Part"), (3, "Sub"), (2, "Next")]);
        assert_eq!(h[0].start, 0, "an overlined title starts at its overline");
    }

    #[test]
    fn asciidoc_titles_outside_delimited_blocks() {
        let text = "= Doc\n\n== A\n----\n== not a title\n----\n=== B\n==no space\n";
        let got: Vec<(usize, String)> = other_headings(text, Style::Asciidoc)
            .into_iter()
            .map(|h| (h.level, h.title))
            .collect();
        assert_eq!(got, [(1, "Doc".into()), (2, "A".into()), (3, "B".into())]);
    }
}
