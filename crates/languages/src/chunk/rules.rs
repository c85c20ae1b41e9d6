//! Languages without a usable grammar (Oberon, BASIC ...): declarative block rules from the
//! language file. A block opens on a line matching a rule's `start` regex (its `name` group, else its
//! first matching group, is the symbol) and closes on a line matching that rule's `end` (when `end`
//! has a `name` group it must name the same block, so nested blocks close correctly); a rule without
//! `end` runs to the next block's start (Dockerfile stages). Each outermost block is one chunk (split
//! by lines when over budget) with the comment lines right above it; text between blocks is a
//! `block` chunk. A block never closed runs to the end of the file.
use super::{Builder, Meta};
use crate::lang::{BlockRule, Language};

/// A found outermost block.
struct Found {
    start: usize,
    end: usize,
    rule: usize,
    name: String,
    signature: String,
}

/// An open block: (rule, name, start byte, signature).
type Open = (usize, String, usize, String);

pub(super) fn chunk(b: &mut Builder<'_>, lang: &Language) {
    let text = b.text;
    let rules = lang.block_rules();
    // Comment lines start with a line-comment marker or a block-comment opener.
    let markers: Vec<&str> = lang
        .def
        .line_comments
        .iter()
        .map(String::as_str)
        .chain(
            lang.def
                .block_comments
                .iter()
                .map(|(open, _)| open.as_str()),
        )
        .collect();
    let blocks = find(text, rules, &markers);
    let mut done = 0;
    for f in blocks {
        b.gap(done, f.start, None);
        let meta = Meta {
            kind: rules[f.rule].kind.clone(),
            symbol: (!f.name.is_empty()).then(|| f.name.clone()),
            symbol_path: (!f.name.is_empty()).then(|| f.name.clone()),
            signature: Some(f.signature),
            docs: None,
        };
        b.push_split(f.start, f.end, &meta, true);
        done = f.end;
    }
    b.gap(done, text.len(), None);
}

fn find(text: &str, rules: &[BlockRule], comment_markers: &[&str]) -> Vec<Found> {
    let is_comment = |line: &str| {
        let t = line.trim_start();
        !t.is_empty() && comment_markers.iter().any(|c| t.starts_with(c))
    };
    let mut out = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    let mut outer_start = 0;
    let mut comments_from: Option<usize> = None;
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        if let Some((i, name)) = starts(rules, line) {
            // A block without an `end` rule (a Dockerfile stage) runs to the next block's start.
            // Comment lines right above the next start go with the next block.
            if open.len() == 1 && rules[open[0].0].end.is_none() {
                let o = open.pop().expect("one open");
                out.push(found(o, outer_start, comments_from.unwrap_or(start)));
            }
            if open.is_empty() {
                outer_start = comments_from.unwrap_or(start);
            }
            open.push((i, name, start, line.trim().to_string()));
            comments_from = None;
            // A one-line block (`CREATE INDEX i ON t (c);`) ends where it starts.
            if ends(rules, &open[open.len() - 1..], line) == Some(0) {
                let o = open.pop().expect("just pushed");
                if open.is_empty() {
                    out.push(found(o, outer_start, offset));
                }
            }
            continue;
        }
        let open_ended = open.len() == 1 && rules[open[0].0].end.is_none();
        if open.is_empty() || open_ended {
            comments_from = if is_comment(line) {
                comments_from.or(Some(start))
            } else {
                None
            };
            if open.is_empty() {
                continue;
            }
        }
        if let Some(keep) = ends(rules, &open, line) {
            if keep == 0 {
                let o = open.swap_remove(0);
                out.push(found(o, outer_start, offset));
            }
            open.truncate(keep);
        }
    }
    if let Some(o) = open.into_iter().next() {
        out.push(found(o, outer_start, text.len()));
    }
    out
}

/// The found block of the outermost open block `o`, spanning `start..end`.
fn found((rule, name, _, signature): Open, start: usize, end: usize) -> Found {
    Found {
        start,
        end,
        rule,
        name,
        signature,
    }
}

/// The first rule whose `start` matches `line`, with the block's name.
fn starts(rules: &[BlockRule], line: &str) -> Option<(usize, String)> {
    rules.iter().enumerate().find_map(|(i, r)| {
        let c = r.start.captures(line)?;
        // The `name` group, else the first group that matched (`FROM img AS stage` / `FROM img`).
        let name = c
            .name("name")
            .or_else(|| c.iter().skip(1).flatten().next())
            .map_or("", |m| m.as_str())
            .to_string();
        Some((i, name))
    })
}

/// When `line` closes an open block: how many blocks stay open.
fn ends(rules: &[BlockRule], open: &[Open], line: &str) -> Option<usize> {
    for depth in (0..open.len()).rev() {
        let (rule, name, _, _) = &open[depth];
        let Some(c) = rules[*rule].end.as_ref().and_then(|e| e.captures(line)) else {
            continue;
        };
        match c.name("name") {
            Some(n) if n.as_str() != name => continue,
            _ => return Some(depth),
        }
    }
    None
}
