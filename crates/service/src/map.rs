//! `trove map BUNDLE [PATH]`: the directory tree with counts and file summaries, sized for a screen.
use clap::Args;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use trove_query::sql::to_json;
use trove_query::{Bundle, lit};

use crate::args::OutFormat;

/// The most directory levels a map expands: `--depth` here, `depth` of `trove serve`'s `/map`.
pub const MAX_DEPTH: usize = 64;

/// Show the repository as a map: directories with their file, symbol and language counts, files
/// with their one-sentence summaries. The entries the rest of the code depends on most come first
/// (the other files whose references resolve to their definitions, then definitions, then
/// bytes), and tests, docs, examples and fixtures come after the code they serve; the rest of a
/// directory is folded into one line; chains of single directories are joined (`src/main/java/`).
///
/// Without --depth, the deepest map that fits in --lines lines is shown, so a large monorepo
/// still fits on a screen; PATH drills into a subdirectory.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove map app.bundle\n  trove map app.bundle services/billing --depth 2\n  trove map app.bundle --format json"
)]
pub struct MapArgs {
    /// The bundle (directory or packed .trove file).
    pub bundle: PathBuf,
    /// A directory of the repository to map (default: the whole tree).
    pub path: Option<String>,
    /// Directory levels to expand [default: as many as fit in --lines].
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_DEPTH as u64))]
    pub depth: Option<usize>,
    /// Entries shown per directory before the rest is folded.
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub entries: usize,
    /// Screen budget used to choose the depth.
    #[arg(long, default_value_t = 60, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub lines: usize,
    /// Output format: text (the tree), json (the tree as nested objects), jsonl (one object per
    /// directory and file, with its path).
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    pub format: OutFormat,
}

#[derive(Default, serde::Serialize)]
struct Node {
    name: String,
    /// The repository path it stands for (empty for the whole tree): the name is for display,
    /// and joins chains of single folders.
    #[serde(skip)]
    path: String,
    files: u64,
    bytes: u64,
    symbols: u64,
    /// Other files with references that resolve to definitions here (summed over a folder).
    inbound: u64,
    /// Files that are not tests, docs, examples or fixtures.
    #[serde(skip)]
    serving: u64,
    languages: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    children: Vec<Node>,
    #[serde(skip)]
    is_dir: bool,
}

impl Node {
    /// Code before what supports it (tests, docs, examples, fixtures), then what the rest of
    /// the code depends on most, then definitions, then bytes.
    fn rank(&self) -> (bool, u64, u64, u64) {
        (self.serving > 0, self.inbound, self.symbols, self.bytes)
    }

    fn add(&mut self, parts: &[&str], file: &FileRow) {
        self.files += 1;
        self.bytes += file.bytes;
        self.symbols += file.symbols;
        self.inbound += file.inbound;
        self.serving += u64::from(!file.support);
        if let Some(l) = &file.language {
            *self.languages.entry(l.clone()).or_default() += 1;
        }
        let base = self.path.clone();
        let under = |name: &str| {
            if base.is_empty() {
                name.to_string()
            } else {
                format!("{base}/{name}")
            }
        };
        match parts {
            [] => {}
            [name] => self.children.push(Node {
                name: (*name).to_string(),
                path: under(name),
                files: 1,
                languages: file.language.iter().map(|l| (l.clone(), 1)).collect(),
                bytes: file.bytes,
                symbols: file.symbols,
                inbound: file.inbound,
                serving: u64::from(!file.support),
                summary: file.summary.clone(),
                ..Node::default()
            }),
            [dir, rest @ ..] => {
                let i = match self
                    .children
                    .iter()
                    .position(|c| c.is_dir && c.name == *dir)
                {
                    Some(i) => i,
                    None => {
                        self.children.push(Node {
                            name: (*dir).to_string(),
                            path: under(dir),
                            is_dir: true,
                            ..Node::default()
                        });
                        self.children.len() - 1
                    }
                };
                self.children[i].add(rest, file);
            }
        }
    }

    /// Joins chains of single directories and orders every level by importance.
    fn settle(&mut self) {
        for c in &mut self.children {
            c.settle();
        }
        while self.is_dir && self.children.len() == 1 && self.children[0].is_dir {
            let only = self.children.remove(0);
            self.name = format!("{}/{}", self.name, only.name);
            self.path = only.path;
            self.children = only.children;
        }
        self.children.sort_by(|a, b| {
            (b.serving > 0)
                .cmp(&(a.serving > 0))
                .then(b.is_dir.cmp(&a.is_dir))
                .then(b.rank().cmp(&a.rank()))
                .then(a.name.cmp(&b.name))
        });
    }

    fn languages_line(&self) -> String {
        let mut l: Vec<(&String, &u64)> = self.languages.iter().collect();
        l.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        l.iter()
            .take(3)
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn render(&self, out: &mut Vec<String>, prefix: &str, depth: usize, entries: usize) {
        let shown = self.children.len().min(entries);
        for (i, c) in self.children.iter().take(shown).enumerate() {
            let last = i + 1 == self.children.len();
            let (branch, indent) = if last {
                ("└── ", "    ")
            } else {
                ("├── ", "│   ")
            };
            if c.is_dir {
                out.push(format!(
                    "{prefix}{branch}{}/  {} files · {} symbols · {}",
                    c.name,
                    c.files,
                    c.symbols,
                    c.languages_line()
                ));
                if depth > 1 {
                    c.render(out, &format!("{prefix}{indent}"), depth - 1, entries);
                }
            } else {
                let s = c.summary.as_deref().unwrap_or("");
                out.push(
                    format!("{prefix}{branch}{}  {s}", c.name)
                        .trim_end()
                        .to_string(),
                );
            }
        }
        if self.children.len() > shown {
            let rest = &self.children[shown..];
            let files: u64 = rest.iter().map(|c| c.files).sum();
            out.push(format!("{prefix}└── … {} more ({files} files)", rest.len()));
        }
    }
}

struct FileRow {
    path: String,
    language: Option<String>,
    bytes: u64,
    symbols: u64,
    summary: Option<String>,
    inbound: u64,
    /// A test, doc, example or fixture: after the code it serves.
    support: bool,
}

/// Folder names whose files support the code rather than being it.
const SUPPORT_DIRS: &[&str] = &[
    "test",
    "tests",
    "__tests__",
    "spec",
    "specs",
    "testing",
    "testdata",
    "fixtures",
    "fixture",
    "doc",
    "docs",
    "example",
    "examples",
    "sample",
    "samples",
    "bench",
    "benches",
    "benchmarks",
    "e2e",
    "demo",
    "demos",
];

/// Whether the file `path` (of `source_type`) is a test, doc, example or fixture.
fn is_support(path: &str, source_type: &str) -> bool {
    matches!(source_type, "test" | "doc")
        || path
            .split('/')
            .rev()
            .skip(1)
            .any(|d| SUPPORT_DIRS.contains(&d.to_ascii_lowercase().as_str()))
}

/// What the map shows and how much of it.
pub struct MapView<'a> {
    /// A directory to map (none: the whole tree).
    pub path: Option<&'a str>,
    /// Levels to expand (none: as many as fit in `lines`).
    pub depth: Option<usize>,
    /// Entries per directory before the rest is folded.
    pub entries: usize,
    /// Line budget that chooses the depth.
    pub lines: usize,
}

/// The map of bundle `b` as text lines; `None` when no indexed file is under the path.
pub fn map_lines(b: &Bundle, v: &MapView<'_>) -> anyhow::Result<Option<Vec<String>>> {
    let files = MapFiles::load(b, v.path)?;
    Ok(files.lines(&b.manifest.source.repo, v))
}

/// The rows a map is drawn from: every file under a folder (or all) with its counts, summary and
/// in-degree. Loaded once, they draw any folder's map without SQL (`trove mcp` keeps them).
pub struct MapFiles {
    rows: Vec<FileRow>,
}

/// `path` without slashes around it; `None` for the whole tree.
fn folder(path: Option<&str>) -> Option<String> {
    path.map(|p| p.trim_matches('/').trim_start_matches("./").to_string())
        .filter(|p| !p.is_empty() && p != ".")
}

impl MapFiles {
    /// The files of `b` under the folder `path` (all when none).
    pub fn load(b: &Bundle, path: Option<&str>) -> anyhow::Result<Self> {
        let filter = match folder(path) {
            Some(p) => format!(
                "WHERE f.path LIKE {} ESCAPE '\\'",
                lit(&format!("{}/%", like_escape(&p)))
            ),
            None => String::new(),
        };
        // In-degree: the other files with a reference that resolves to a definition in the file.
        let sql = format!(
            "SELECT f.path, f.language, f.bytes, coalesce(s.n, 0) AS symbols, f.summary, \
                    coalesce(d.n, 0) AS inbound, f.source_type FROM files f \
             LEFT JOIN (SELECT path, count(*) AS n FROM symbols GROUP BY path) s USING (path) \
             LEFT JOIN (SELECT t.path, count(DISTINCT r.path) AS n FROM refs r \
                        JOIN symbols t ON t.symbol_id = r.target_symbol_id \
                        WHERE r.path <> t.path GROUP BY t.path) d USING (path) {filter} \
             ORDER BY f.path"
        );
        let (_, rows) = b.run_sql(&sql)?;
        let rows = rows
            .iter()
            .map(|r| {
                let s = |i: usize| to_json(&r[i]).as_str().map(str::to_string);
                let n = |i: usize| to_json(&r[i]).as_u64().unwrap_or(0);
                let path = s(0).unwrap_or_default();
                FileRow {
                    support: is_support(&path, &s(6).unwrap_or_default()),
                    path,
                    language: s(1),
                    bytes: n(2),
                    symbols: n(3),
                    summary: s(4),
                    inbound: n(5),
                }
            })
            .collect();
        Ok(MapFiles { rows })
    }

    /// The settled tree of the files under the folder `path`; `None` when there are none.
    fn tree(&self, repo: &str, path: Option<&str>) -> Option<Node> {
        let prefix = folder(path);
        let under = prefix.as_ref().map(|p| format!("{p}/"));
        let mut root = Node {
            name: prefix.clone().unwrap_or_else(|| repo.to_string()),
            path: prefix.clone().unwrap_or_default(),
            is_dir: true,
            ..Node::default()
        };
        let cut = under.as_ref().map_or(0, String::len);
        for f in &self.rows {
            if under
                .as_ref()
                .is_some_and(|u| !f.path.starts_with(u.as_str()))
            {
                continue;
            }
            let parts: Vec<&str> = f.path[cut..].split('/').collect();
            root.add(&parts, f);
        }
        if root.files == 0 {
            return None;
        }
        root.settle();
        Some(root)
    }

    /// The map as text lines, as deep as `v` asks or fits; `None` when no file is under its path.
    pub fn lines(&self, repo: &str, v: &MapView<'_>) -> Option<Vec<String>> {
        let root = self.tree(repo, v.path)?;
        let render = |depth: usize| {
            let mut lines = vec![format!(
                "{}/  {} files · {} symbols · {}",
                root.name,
                root.files,
                root.symbols,
                root.languages_line()
            )];
            root.render(&mut lines, "", depth, v.entries.max(1));
            lines
        };
        Some(match v.depth {
            Some(d) => render(d.max(1)),
            None => {
                let mut best = render(1);
                for d in 2..=12 {
                    let l = render(d);
                    if l.len() > v.lines || l.len() == best.len() {
                        break;
                    }
                    best = l;
                }
                best
            }
        })
    }
}

/// The tree of the files of `b` under `path` (all when none), settled; `None` when there are none.
fn map_tree(b: &Bundle, path: Option<&str>) -> anyhow::Result<Option<Node>> {
    Ok(MapFiles::load(b, path)?.tree(&b.manifest.source.repo, path))
}

/// The map under `path` of the bundle whose rows are `files` (its repository named `repo`) as
/// `trove map --format json` prints it, folders expanded `depth` levels (all when none); `None`
/// when no indexed file is under the path.
pub fn map_json(
    files: &MapFiles,
    repo: &str,
    path: Option<&str>,
    depth: Option<usize>,
) -> anyhow::Result<Option<serde_json::Value>> {
    files
        .tree(repo, path)
        .map(|root| tree_json(&root, depth))
        .transpose()
}

/// The map `root` as JSON, folders expanded `depth` levels (all when none).
fn tree_json(root: &Node, depth: Option<usize>) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(root)?;
    if let Some(d) = depth {
        prune(&mut v, d);
    }
    Ok(v)
}

/// Drops the children below `depth` levels (their counts stay on their folder).
fn prune(v: &mut serde_json::Value, depth: usize) {
    let Some(o) = v.as_object_mut() else {
        return;
    };
    if depth == 0 {
        o.remove("children");
    } else if let Some(serde_json::Value::Array(kids)) = o.get_mut("children") {
        for k in kids {
            prune(k, depth - 1);
        }
    }
}

/// Whether `p` is a file of the bundle (not a folder).
pub fn is_file(b: &Bundle, p: &str) -> anyhow::Result<bool> {
    let (_, rows) = b.run_sql(&format!(
        "SELECT 1 FROM files WHERE path = {} LIMIT 1",
        lit(p.trim_matches('/'))
    ))?;
    Ok(!rows.is_empty())
}

/// When a map finds no files: an empty bundle has no results (exit 1); a folder it does not
/// hold is bad input (an error, exit 2), and a file is named as one.
fn nothing_under(b: &Bundle, path: Option<&str>) -> anyhow::Result<i32> {
    let Some(p) = path else {
        eprintln!("no indexed files in the bundle");
        return Ok(1);
    };
    if !is_file(b, p)? {
        anyhow::bail!(
            "no indexed files under {p:?} (trove map BUNDLE without a path lists the top)"
        );
    }
    anyhow::bail!("{p:?} is a file, not a folder: trove show BUNDLE {p} prints it");
}

/// Runs `trove map`.
pub fn run(a: MapArgs) -> anyhow::Result<i32> {
    let b = Bundle::open(&a.bundle)?;
    let view = MapView {
        path: a.path.as_deref(),
        depth: a.depth,
        entries: a.entries,
        lines: a.lines,
    };
    let mut out = std::io::stdout().lock();
    if a.format == OutFormat::Text {
        let Some(lines) = map_lines(&b, &view)? else {
            return nothing_under(&b, a.path.as_deref());
        };
        for l in lines {
            writeln!(out, "{}", trove_base::util::visible_line(&l))?;
        }
        return Ok(0);
    }
    let Some(root) = map_tree(&b, view.path)? else {
        return nothing_under(&b, a.path.as_deref());
    };
    if a.format == OutFormat::Json {
        // `--depth` as the text map and `GET /map?depth=` have it.
        let v = tree_json(&root, a.depth)?;
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    // (node, its level: the root is 0, its entries 1.) Paths are the repository's, as `show`
    // and every table take them: the whole tree is `.`.
    let mut stack = vec![(&root, 0usize)];
    while let Some((n, level)) = stack.pop() {
        let path = if n.path.is_empty() {
            ".".to_string()
        } else {
            n.path.clone()
        };
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "path": path,
                "type": if n.is_dir { "dir" } else { "file" },
                "files": n.files,
                "bytes": n.bytes,
                "symbols": n.symbols,
                "inbound": n.inbound,
                "languages": n.languages,
                "summary": n.summary,
            })
        )?;
        if a.depth.is_none_or(|d| level < d) {
            stack.extend(n.children.iter().rev().map(|c| (c, level + 1)));
        }
    }
    Ok(0)
}

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}
