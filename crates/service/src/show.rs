//! `trove show BUNDLE PATH[:START[-END]]`: a file's text read back from the bundle.
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

use trove_query::Bundle;

/// Print a file's text from the bundle, with line numbers: no checkout needed.
///
/// The bundle holds the text of every indexed file once (as it was indexed: secrets redacted).
/// PATH is repo-relative; `PATH:START` prints from line START to the end, `PATH:START-END` lines
/// START to END (1-based, inclusive). Exit codes: 0 shown, 2 a path the bundle does not hold or
/// a bad range.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove show app.bundle src/billing.py\n  trove show app.bundle src/billing.py:40-80\n  trove show app.bundle README.md --raw > README.md"
)]
pub struct ShowArgs {
    /// The bundle (directory or packed .trove file).
    pub bundle: PathBuf,
    /// The file, optionally with a line range: `src/app.py`, `src/app.py:40`, `src/app.py:40-80`.
    pub target: String,
    /// Print the text exactly as stored, without line numbers.
    #[arg(long)]
    pub raw: bool,
}

/// A file and the lines wanted from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Repo-relative path.
    pub path: String,
    /// First line (1-based).
    pub start: Option<usize>,
    /// Last line (inclusive).
    pub end: Option<usize>,
}

/// Splits `path[:start[-end]]`. A path that itself ends in `:digits` is taken as a path when the
/// bundle holds it (`exists`).
pub fn parse_target(s: &str, exists: impl Fn(&str) -> bool) -> anyhow::Result<Target> {
    let whole = Target {
        path: s.to_string(),
        start: None,
        end: None,
    };
    let Some((path, range)) = s.rsplit_once(':') else {
        return Ok(whole);
    };
    // `path:-3`, `path:a-b` of a path the bundle holds are line ranges written wrong.
    if exists(s)
        || range.is_empty()
        || (!range.starts_with(|c: char| c.is_ascii_digit()) && !exists(path))
    {
        return Ok(whole);
    }
    let num = |t: &str| {
        t.parse::<usize>().ok().filter(|&n| n >= 1).ok_or_else(|| {
            anyhow::anyhow!(
                "bad line range {range:?}: write START or START-END, lines numbered from 1"
            )
        })
    };
    let (start, end) = match range.split_once('-') {
        Some((a, b)) => (num(a)?, Some(num(b)?)),
        None => (num(range)?, None),
    };
    if end.is_some_and(|e| e < start) {
        anyhow::bail!("bad line range {range:?}: the end comes before the start");
    }
    Ok(Target {
        path: path.to_string(),
        start: Some(start),
        end,
    })
}

/// Lines `start..=end` of `text` (1-based; `end` past the last line is the last line) with their
/// numbers, and the file's line count. An empty file has no lines; a start past the end is an
/// error.
pub fn numbered_lines(
    text: &str,
    start: Option<usize>,
    end: Option<usize>,
) -> anyhow::Result<(Vec<(usize, &str)>, usize)> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    // A line asked for must exist (an empty file has none); the whole of an empty file is empty.
    if let Some(s) = start
        && s > total
    {
        anyhow::bail!("line {s} is past the end of the file ({total} lines)");
    }
    let start = start.unwrap_or(1);
    let end = end.unwrap_or(total).min(total);
    Ok((
        (start..=end)
            .map(|n| (n, lines[n - 1].trim_end_matches(['\n', '\r'])))
            .collect(),
        total,
    ))
}

/// The error for a `path` bundle `b` does not hold, naming the files whose paths end like it
/// (`Err` only when that lookup itself fails).
pub fn not_a_file(b: &Bundle, path: &str) -> anyhow::Result<anyhow::Error> {
    not_a_file_in(&[b], path)
}

/// The error for a `path` none of `bundles` holds: why, when a bundle skipped it (its reason in
/// `skipped`), else the files of each whose paths end in its file name (else contain it), with
/// their bundle when there are several.
pub fn not_a_file_in(bundles: &[&Bundle], path: &str) -> anyhow::Result<anyhow::Error> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let labelled = |b: &Bundle, p: String| {
        if bundles.len() > 1 {
            format!("{}: {p}", b.label)
        } else {
            p
        }
    };
    let text = |v: &duckdb::types::Value| trove_query::sql::to_json(v).as_str().map(String::from);
    for b in bundles {
        let (_, rows) = b.run_sql(&format!(
            "SELECT reason FROM skipped WHERE path = {} LIMIT 1",
            trove_query::lit(path)
        ))?;
        if let Some(reason) = rows.first().and_then(|r| text(&r[0])) {
            return Ok(anyhow::anyhow!(
                "{} was not indexed (skipped: {reason}), so its text is not in the bundle",
                labelled(b, path.to_string())
            ));
        }
    }
    let mut near: Vec<String> = Vec::new();
    // A folder or an empty path has no file name to look for.
    if !name.is_empty() {
        let lit = trove_query::lit(name);
        for test in [
            format!("path = {lit} OR ends_with(path, '/' || {lit})"),
            format!("contains(path, {lit})"),
        ] {
            for b in bundles {
                let (_, rows) = b.run_sql(&format!(
                    "SELECT path FROM files WHERE {test} ORDER BY length(path), path LIMIT 5"
                ))?;
                near.extend(rows.iter().filter_map(|r| Some(labelled(b, text(&r[0])?))));
            }
            if !near.is_empty() {
                break;
            }
        }
    }
    let labels: Vec<&str> = bundles.iter().map(|b| b.label.as_str()).collect();
    let of = match labels.as_slice() {
        [one] => format!("the bundle {one}"),
        many => format!("the bundles {}", many.join(", ")),
    };
    if near.is_empty() {
        return Ok(anyhow::anyhow!("{path} is not a file of {of}"));
    }
    near.truncate(5);
    Ok(anyhow::anyhow!(
        "{path} is not a file of {of} (did you mean {}?)",
        near.join(", ")
    ))
}

/// Runs `trove show`.
pub fn run(a: ShowArgs) -> anyhow::Result<i32> {
    let b = Bundle::open(&a.bundle)?;
    let target = a.target.trim_start_matches("./");
    let whole = b.file_text(target)?;
    let t = parse_target(target, |p| {
        if p == target {
            whole.is_some()
        } else {
            b.file_text(p).is_ok_and(|t| t.is_some())
        }
    })?;
    // Read again only when a line range was split off the path.
    let text = match whole {
        Some(text) => Some(text),
        None if t.start.is_some() => b.file_text(&t.path)?,
        None => None,
    };
    let Some(text) = text else {
        return Err(not_a_file(&b, &t.path)?);
    };
    let mut out = std::io::stdout().lock();
    if a.raw && t.start.is_none() {
        out.write_all(text.as_bytes())?;
        return Ok(0);
    }
    let (lines, total) = numbered_lines(&text, t.start, t.end)?;
    if a.raw {
        let first = lines.first().map_or(0, |l| l.0);
        let all: Vec<&str> = text.split_inclusive('\n').collect();
        for l in all.iter().skip(first.saturating_sub(1)).take(lines.len()) {
            out.write_all(l.as_bytes())?;
        }
        return Ok(0);
    }
    let width = total.max(1).to_string().len();
    for (n, l) in lines {
        // Control characters as escapes: a file's bytes must not drive the terminal (`--raw`
        // gives them as they are).
        writeln!(out, "{n:>width$}  {}", trove_base::util::visible(l))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_a_line_range_off_unless_the_path_has_it() {
        let t = parse_target("src/a.py:40-80", |_| false).unwrap();
        assert_eq!(
            (t.path.as_str(), t.start, t.end),
            ("src/a.py", Some(40), Some(80))
        );
        let t = parse_target("src/a.py:7", |_| false).unwrap();
        assert_eq!((t.start, t.end), (Some(7), None));
        assert_eq!(parse_target("a:1", |p| p == "a:1").unwrap().path, "a:1");
        assert_eq!(parse_target("c:/x", |_| false).unwrap().path, "c:/x");
        assert!(parse_target("a.py:0", |_| false).is_err());
        assert!(parse_target("a.py:9-3", |_| false).is_err());
        assert!(parse_target("a.py:3-x", |_| false).is_err());
        // A file the bundle holds, with a range written wrong: refused, not taken as a path.
        for wrong in ["a.py:-3", "a.py:a-b"] {
            let e = parse_target(wrong, |p| p == "a.py").unwrap_err();
            assert!(e.to_string().contains("bad line range"), "{e}");
        }
        assert_eq!(parse_target("a.py:x", |_| false).unwrap().path, "a.py:x");
    }

    #[test]
    fn line_ranges_are_clamped_at_the_end_and_refused_past_it() {
        let (l, n) = numbered_lines("a\nb\r\nc", Some(2), Some(9)).unwrap();
        assert_eq!((l, n), (vec![(2, "b"), (3, "c")], 3));
        assert!(numbered_lines("a\n", Some(3), None).is_err());
        assert_eq!(numbered_lines("", None, None).unwrap().0, vec![]);
        assert!(numbered_lines("", Some(1), None).is_err());
    }
}
