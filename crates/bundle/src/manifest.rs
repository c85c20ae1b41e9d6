//! `manifest.json`: what the bundle is, how it was made, and a checksum of every file.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use crate::{Error, Result};

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";

/// A `manifest.json` read from elsewhere (a pack, a sync source) longer than this is not one: a
/// bundle of hundreds of segments lists a few hundred kB.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The whole manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Always `trove-bundle`.
    pub format: String,
    /// The legacy format number: 10 for every 1.x bundle (troves before 1.0 compare it).
    pub format_version: u32,
    /// The format's major version (1); absent before format 1.0.
    #[serde(default)]
    pub format_major: u32,
    /// The format's minor version.
    #[serde(default)]
    pub format_minor: u32,
    /// Features a reader must know to read the bundle: name → the first trove release that reads
    /// it. A reader refuses a bundle that names one it does not know.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub required_features: BTreeMap<String, String>,
    /// The tool that wrote it.
    pub tool: Tool,
    /// Every trove build whose rows the bundle holds (merge and compact may join the rows of
    /// builds of one format), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub builds: Vec<Tool>,
    /// RFC 3339 UTC time of writing (`SOURCE_DATE_EPOCH` honoured); the only non-deterministic field.
    pub created_at: String,
    /// Where the content came from.
    pub source: SourceInfo,
    /// The bundle an incremental build started from (none for a full build).
    pub base: Option<serde_json::Value>,
    /// The resolved pipeline config.
    pub pipeline: serde_json::Value,
    /// sha256 of the resolved pipeline config.
    pub pipeline_hash: String,
    /// sha256 of the language files the run loaded (built-in and the repo's own): rows are only
    /// reused between bundles with equal pipeline and language hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub languages_hash: Option<String>,
    /// The slice of the tree this bundle holds, when built with `--shard I/N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The embedder that made `embeddings.parquet`.
    pub embedder: EmbedderInfo,
    /// The SCIP indexes the run that wrote the newest segment read (`trove index --scip`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scip: Vec<ScipInput>,
    /// BM25 statistics and parameters.
    pub bm25: Bm25Info,
    /// Row counts and totals.
    pub counts: Counts,
    /// Files and chunks per language id.
    pub languages: BTreeMap<String, LangCount>,
    /// The segments, oldest first (v5; none in older bundles, whose tables sit at the root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<SegmentInfo>,
    /// Every data file with rows, bytes and sha256, by its path in the bundle.
    pub files: Vec<FileEntry>,
}

/// One segment of a bundle: a folder `segments/<id>/` of tables, immutable once written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SegmentInfo {
    /// 16 hex digits: sha256 over the segment ids before it and its tables' sha256s, so a full
    /// build at a commit always gets the same id and segments built apart get different ones.
    pub id: String,
    /// Files in the segment.
    pub files: u64,
    /// Chunks in the segment.
    pub chunks: u64,
    /// Paths this segment tombstones (`tombstones.parquet`, present only when there are some):
    /// every row of those paths in an earlier segment is dead.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tombstones: u64,
    /// The fingerprint of the embedder that made its vectors: every segment's must be the
    /// bundle's.
    #[serde(default)]
    pub embedder: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl SegmentInfo {
    /// The id of a segment whose tables have `sha256s` (in table order), following the segments
    /// `before`.
    pub fn id_for(before: &[SegmentInfo], sha256s: &[&str]) -> String {
        let mut text = String::new();
        for s in before {
            text.push_str(&s.id);
            text.push('\n');
        }
        for h in sha256s {
            text.push_str(h);
            text.push('\n');
        }
        trove_base::util::sha256_hex(text.as_bytes())[..16].to_string()
    }
}

/// The tombstones table of a segment.
pub const TOMBSTONES: &str = "tombstones";

impl SegmentInfo {
    /// The path within the bundle of this segment's `table` file
    /// (`segments/<id>/<table>.parquet`).
    pub fn file(&self, table: &str) -> String {
        format!("{}/{}/{table}.parquet", super::SEGMENTS, self.id)
    }

    /// This segment's folder in `bundle`.
    pub fn dir(&self, bundle: &Path) -> std::path::PathBuf {
        bundle.join(super::SEGMENTS).join(&self.id)
    }
}

/// The first name `names` holds twice.
fn listed_twice<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|n| !seen.insert(*n))
}

impl Manifest {
    /// Refuses a manifest that lists a segment or a file twice, whose BM25 stamp no build
    /// writes, or with a segment another embedder made (its vectors do not compare with the
    /// others').
    pub fn check_segments(&self, dir: &Path) -> Result<()> {
        if let Some(id) = listed_twice(self.segments.iter().map(|s| s.id.as_str())) {
            return Err(Error::bundle(
                dir,
                format!("manifest.json lists segment {id} twice"),
            ));
        }
        if let Some(name) = listed_twice(self.files.iter().map(|f| f.name.as_str())) {
            return Err(Error::bundle(
                dir,
                format!("manifest.json lists {name} twice"),
            ));
        }
        if self
            .files
            .iter()
            .try_fold(0u64, |sum, f| sum.checked_add(f.bytes))
            .is_none()
        {
            return Err(Error::bundle(
                dir,
                "manifest.json: its files' sizes add up to more than 2^64 bytes",
            ));
        }
        // Ids and names go into the SQL of the views and into paths: only the shapes a build
        // writes are read (a hand-made manifest must not smuggle a quote or a `..` in).
        if let Some(s) = self.segments.iter().find(|s| !is_segment_id(&s.id)) {
            return Err(Error::bundle(
                dir,
                format!(
                    "manifest.json: segment id {:?} is not 16 lowercase hex digits",
                    s.id
                ),
            ));
        }
        if let Some(f) = self
            .files
            .iter()
            .find(|f| f.name == MANIFEST || !is_bundle_file(&f.name))
        {
            return Err(Error::bundle(
                dir,
                format!(
                    "manifest.json names a file outside the bundle: {:?}",
                    f.name
                ),
            ));
        }
        // What `duckdb -init views.sql` runs must be the views of the segments listed, nothing
        // a publisher added (the file is checked against this entry's sha256). Only this
        // build's views can be derived here: another build's may differ without a format bump,
        // and its bundles are still read (and rebuilt in full by `--since`).
        if self.tool == manifest_tool()
            && let Some(e) = self.entry(super::VIEWS)
            && *e != views_entry(&views_text(&self.segments))
        {
            return Err(Error::bundle(
                dir,
                format!(
                    "{MANIFEST} does not list the {} of its own segments (it is derived from them: \
                     a bundle whose views say more is refused)",
                    super::VIEWS
                ),
            ));
        }
        if let Some(why) = self.bm25_problem() {
            return Err(Error::bundle(dir, format!("manifest.json: {why}")));
        }
        for s in &self.segments {
            self.check_segment(dir, s)?;
        }
        Ok(())
    }

    /// What is wrong with the manifest's BM25 stamp (one no build writes), if anything.
    fn bm25_problem(&self) -> Option<String> {
        let bm = &self.bm25;
        if !(bm.k1.is_finite() && bm.k1 >= 0.0) {
            Some(format!("bm25.k1 {} is not a number of at least 0", bm.k1))
        } else if !(0.0..=1.0).contains(&bm.b) {
            Some(format!("bm25.b {} is not between 0 and 1", bm.b))
        } else if !(bm.avgdl.is_finite() && bm.avgdl >= 0.0) || (bm.n_docs > 0 && bm.avgdl <= 0.0) {
            Some(format!(
                "bm25.avgdl {} does not fit {} chunks",
                bm.avgdl, bm.n_docs
            ))
        } else if bm.tokenizer != crate::tokenizer::TOKENIZER {
            Some(format!(
                "bm25.tokenizer {:?} is not this trove's ({:?}): re-index with this version",
                bm.tokenizer,
                crate::tokenizer::TOKENIZER
            ))
        } else if bm.n_docs != self.counts.chunks {
            Some(format!(
                "bm25.n_docs {} is not the bundle's {} chunks",
                bm.n_docs, self.counts.chunks
            ))
        } else if bm.max_token_len == 0 {
            Some("bm25.max_token_len is 0".to_string())
        } else {
            None
        }
    }

    /// Refuses the segment `s` when another embedder made it, or when the rows it claims are not
    /// what its tables' entries hold.
    fn check_segment(&self, dir: &Path, s: &SegmentInfo) -> Result<()> {
        if s.embedder != self.embedder.fingerprint {
            return Err(Error::bundle(
                dir,
                format!(
                    "segment {} was made with another embedder than the bundle's ({} {}): re-index it",
                    s.id, self.embedder.backend, self.embedder.model
                ),
            ));
        }
        // What a reader sizes its per-chunk state by must be what the segment's tables hold
        // (a claimed 10^18 chunks would be allocated before any table is read).
        for (table, claimed) in [
            ("chunks", s.chunks),
            ("files", s.files),
            (TOMBSTONES, s.tombstones),
        ] {
            let rows = self.entry(&s.file(table)).map(|e| e.rows);
            if rows.is_some_and(|r| r != claimed) || (rows.is_none() && claimed > 0) {
                return Err(Error::bundle(
                    dir,
                    format!(
                        "manifest.json: segment {} claims {claimed} {table} rows, and its \
                         {table}.parquet holds {}",
                        s.id,
                        rows.map_or("none (it is not listed)".to_string(), |r| r.to_string())
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The manifest entries of the files of segment `seg`.
    pub fn segment_entries(&self, seg: &SegmentInfo) -> Vec<&FileEntry> {
        let prefix = format!("{}/{}/", super::SEGMENTS, seg.id);
        self.files
            .iter()
            .filter(|e| e.name.starts_with(&prefix))
            .collect()
    }

    /// The manifest entry of the bundle file `name`.
    pub fn entry(&self, name: &str) -> Option<&FileEntry> {
        self.files.iter().find(|f| f.name == name)
    }

    /// Every data file the segments must hold: each segment's tables, and its tombstones when it
    /// has some.
    pub fn segment_files(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.segments {
            out.extend(super::TABLES.iter().map(|t| s.file(t)));
            if s.tombstones > 0 {
                out.push(s.file(TOMBSTONES));
            }
        }
        out
    }
}

/// `CREATE OR REPLACE VIEW` statements, one per table, over the live rows of `segments`: every
/// row of a path tombstoned by a later segment is left out. `literal` turns a file's path in the
/// bundle into the SQL literal that reads it (relative for `views.sql`, absolute for trove's own
/// connection). `chunks` and `postings` carry a `segment` column: chunk ordinals are local to
/// a segment, so the two join on (segment, chunk_ord). With several segments, `terms` counts the
/// live postings and references are resolved again over the live definitions of all
/// ([`crate::resolution::resolved_refs_sql`]); with one, what was stored is already that.
pub fn views_sql(segments: &[SegmentInfo], literal: impl Fn(&str) -> String) -> String {
    let several = segments.len() > 1;
    let mut sql = String::new();
    for t in super::TABLES {
        if several && *t == "terms" {
            continue;
        }
        let name = if several && *t == "refs" {
            "stored_refs"
        } else {
            t
        };
        sql.push_str(&format!(
            "CREATE OR REPLACE VIEW {name} AS {};\n",
            live_sql(segments, t, &literal)
        ));
    }
    if several {
        sql.push_str(
            "CREATE OR REPLACE VIEW terms AS SELECT term, count(*)::BIGINT AS df FROM postings \
             GROUP BY term;\n",
        );
        sql.push_str(&format!(
            "CREATE OR REPLACE VIEW refs AS {};\n",
            crate::resolution::resolved_refs_sql("stored_refs", "symbols", "deps")
        ));
    }
    sql.push_str(FILE_TEXT_VIEW);
    sql
}

/// The (redacted) text of every file: its chunks' leads and contents in source order, then its
/// tail (chunks never overlap, and what lies between them is the next one's `lead`).
const FILE_TEXT_VIEW: &str = "CREATE OR REPLACE VIEW file_text AS SELECT f.path, \
     coalesce((SELECT string_agg(coalesce(c.lead, '') || c.content, '' ORDER BY c.start_byte) \
     FROM chunks c WHERE c.path = f.path), '') || coalesce(f.tail, '') AS text FROM files f;\n";

/// A `SELECT` of the live rows of `table` (one of [`super::TABLES`]; `refs` as stored, `terms`
/// per segment) over `segments`, each segment's rows without those of the paths later segments
/// tombstone (see [`views_sql`]).
///
/// With several segments it is one `read_parquet` over every segment's file of the table (in
/// segment order, so DuckDB's `file_index` is the segment's ordinal) and one over the tombstones,
/// however many segments there are: a `UNION ALL` of a scan per segment, each with its own list of
/// later tombstones, made DuckDB bind O(segments²) scans for every view, and the `refs` view and
/// the structure macros, which name `symbols` a dozen times, took a second to open at 30 segments.
pub fn live_sql(segments: &[SegmentInfo], table: &str, literal: impl Fn(&str) -> String) -> String {
    let file = |s: &SegmentInfo, t: &str| literal(&s.file(t));
    if let [s] = segments {
        let file = file(s, table);
        return match table {
            "chunks" | "postings" => {
                format!("SELECT *, '{}' AS segment FROM read_parquet({file})", s.id)
            }
            _ => format!("SELECT * FROM read_parquet({file})"),
        };
    }
    let list = |items: Vec<String>| format!("[{}]", items.join(", "));
    let files = |t: &str| list(segments.iter().map(|s| file(s, t)).collect());
    // The segments that tombstone paths (the first one's tombstones would reach nothing), their
    // files and ordinals: a row of segment i is dead when a tombstone of a later segment names its
    // path.
    let tombstoning: Vec<(usize, &SegmentInfo)> = segments
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, s)| s.tombstones > 0)
        .collect();
    let dead = |row: &str| {
        (!tombstoning.is_empty()).then(|| {
            format!(
                "EXISTS (SELECT 1 FROM read_parquet({}) d WHERE d.path = {row}.path AND {}[d.file_index::BIGINT + 1] > {row}.file_index)",
                list(tombstoning.iter().map(|(_, s)| file(s, TOMBSTONES)).collect()),
                list(tombstoning.iter().map(|(i, _)| i.to_string()).collect()),
            )
        })
    };
    let ids = list(segments.iter().map(|s| format!("'{}'", s.id)).collect());
    let segment = format!(", {ids}[r.file_index::BIGINT + 1] AS segment");
    let scan = format!("FROM read_parquet({}) r", files(table));
    match table {
        // No `path` column: a row is dead when the chunk it belongs to (of the same segment:
        // ordinals are per segment, and an unchanged chunk's id recurs in a later one) is.
        "postings" | "embeddings" => {
            let (key, segment) = match table {
                "postings" => ("chunk_ord", segment.as_str()),
                _ => ("chunk_id", ""),
            };
            match dead("c") {
                None => format!("SELECT r.*{segment} {scan}"),
                Some(dead) => format!(
                    "SELECT r.*{segment} {scan} WHERE NOT EXISTS (SELECT 1 FROM read_parquet({}) c \
                     WHERE c.file_index = r.file_index AND c.{key} = r.{key} AND {dead})",
                    files("chunks")
                ),
            }
        }
        _ => {
            let segment = if table == "chunks" {
                segment.as_str()
            } else {
                ""
            };
            match dead("r") {
                None => format!("SELECT r.*{segment} {scan}"),
                Some(dead) => format!("SELECT r.*{segment} {scan} WHERE NOT {dead}"),
            }
        }
    }
}

/// Whether `name` is a path a bundle may hold: `manifest.json`, `views.sql`, or
/// `segments/<16 hex digits>/<table>.parquet` (a table name of lower-case letters, digits, `_`
/// and `-`). Nothing else — no `..`, no absolute path, no other folder — so a manifest or a pack
/// cannot name a file outside the bundle.
pub fn is_bundle_file(name: &str) -> bool {
    if name == MANIFEST || name == super::VIEWS {
        return true;
    }
    let parts: Vec<&str> = name.split('/').collect();
    let plain_table = |t: &str| {
        t.strip_suffix(".parquet").is_some_and(|stem| {
            !stem.is_empty()
                && stem
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        })
    };
    match parts.as_slice() {
        [dir, id, table] => *dir == super::SEGMENTS && is_segment_id(id) && plain_table(table),
        _ => false,
    }
}

/// Whether `id` has a segment id's shape: 16 lowercase hex digits.
fn is_segment_id(id: &str) -> bool {
    id.len() == 16
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Tool name and version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    /// `trove`.
    pub name: String,
    /// Crate version.
    pub version: String,
    /// Hash of the sources it was built from: rows are reused only between equal builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// The indexed tree.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SourceInfo {
    /// The root directory's name (never an absolute path).
    pub repo: String,
    /// The root relative to the git work tree, when it is a subdirectory.
    pub subdir: Option<String>,
    /// HEAD commit, when the tree is in a git repository.
    pub commit: Option<String>,
    /// Current branch name.
    pub branch: Option<String>,
    /// Whether the work tree had changes against HEAD.
    pub dirty: bool,
    /// A fingerprint of git's checkout settings outside the tree (`.git/info/attributes`,
    /// `core.attributesFile`, `core.autocrlf`, `core.eol`; `trove_index::source::checkout_settings`):
    /// `--since` reads every file again when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<String>,
}

/// `--shard I/N`: the files whose path hash falls in slice `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Shard {
    /// 1-based slice number.
    pub index: u32,
    /// Number of slices.
    pub count: u32,
}

impl Shard {
    /// Parses `I/N` (1 ≤ I ≤ N).
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("--shard {s:?}: expected I/N, e.g. 1/3"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| format!("--shard {s:?}: {i:?} is not a number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("--shard {s:?}: {n:?} is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!(
                "--shard {s:?}: I must be between 1 and N (shards are numbered 1/N .. N/N)"
            ));
        }
        Ok(Shard { index, count })
    }

    /// `I/N`, or `auto`: the slice of the CI or cluster job this process runs in
    /// ([`Shard::from_env`] over the process environment).
    pub fn parse_or_auto(s: &str) -> std::result::Result<Self, String> {
        if s.trim() == "auto" {
            Shard::from_env(|k| std::env::var(k).ok())
        } else {
            Shard::parse(s)
        }
    }

    /// The slice of the job this process runs in, read through `var`: `TROVE_SHARD` (`I/N`);
    /// a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` (0-based) with `TROVE_SHARD_COUNT` (its
    /// `completions`); Buildkite's `BUILDKITE_PARALLEL_JOB` (0-based) and
    /// `BUILDKITE_PARALLEL_JOB_COUNT`; GitLab's `CI_NODE_INDEX` (1-based) and `CI_NODE_TOTAL`.
    /// The first pair present wins; none, or a bad value, is an error that names them.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> std::result::Result<Self, String> {
        let get = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        if let Some(s) = get("TROVE_SHARD") {
            return Shard::parse(&s).map_err(|e| format!("TROVE_SHARD: {e}"));
        }
        // (index variable, count variable, whether the index is 0-based)
        let pairs = [
            ("JOB_COMPLETION_INDEX", "TROVE_SHARD_COUNT", true),
            (
                "BUILDKITE_PARALLEL_JOB",
                "BUILDKITE_PARALLEL_JOB_COUNT",
                true,
            ),
            ("CI_NODE_INDEX", "CI_NODE_TOTAL", false),
        ];
        for (iv, nv, zero_based) in pairs {
            let Some(i) = get(iv) else { continue };
            let n = get(nv).ok_or_else(|| {
                format!("--shard auto: {iv} is set but {nv} (the number of slices) is not")
            })?;
            let num = |v: &str, k: &str| {
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("--shard auto: {k}={v:?} is not a number"))
            };
            let (i, n) = (num(&i, iv)?, num(&n, nv)?);
            let index = if zero_based {
                i.checked_add(1)
            } else {
                Some(i)
            }
            .unwrap_or(0);
            return Shard::parse(&format!("{index}/{n}"))
                .map_err(|e| format!("--shard auto from {iv}/{nv}: {e}"));
        }
        Err(
            "--shard auto: no job slice in the environment (set TROVE_SHARD=I/N, or run as a \
             Kubernetes Indexed Job with TROVE_SHARD_COUNT, a Buildkite parallel job, or a \
             GitLab parallel job)"
                .into(),
        )
    }

    /// Whether repo-relative `path` belongs to this shard: FNV-1a of the path, so the split is the
    /// same on every machine and every run.
    pub fn holds(&self, path: &str) -> bool {
        (trove_base::util::fnv1a64(path.as_bytes()) % u64::from(self.count)) as u32
            == self.index - 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Embedder stamp.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmbedderInfo {
    /// Backend name.
    pub backend: String,
    /// Model id.
    pub model: String,
    /// Vector dimension.
    pub dim: usize,
    /// Backend + model + settings fingerprint.
    pub fingerprint: String,
}

/// BM25 stamp.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Bm25Info {
    /// k1.
    pub k1: f64,
    /// b.
    pub b: f64,
    /// Average chunk length in tokens.
    pub avgdl: f64,
    /// Number of chunks (documents).
    pub n_docs: u64,
    /// Tokenizer id.
    pub tokenizer: String,
    /// Longest token indexed.
    pub max_token_len: usize,
}

/// Totals.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Counts {
    /// Files indexed.
    pub files: u64,
    /// Files and directories skipped.
    pub skipped: u64,
    /// Chunks.
    pub chunks: u64,
    /// Distinct terms.
    pub terms: u64,
    /// Postings rows.
    pub postings: u64,
    /// Bytes of indexed source.
    pub source_bytes: u64,
    /// Definitions (`symbols.parquet` rows).
    #[serde(default)]
    pub symbols: u64,
    /// Declared dependencies (`deps.parquet` rows).
    #[serde(default)]
    pub deps: u64,
    /// Imports and calls (`refs.parquet` rows).
    #[serde(default)]
    pub refs: u64,
    /// Of those, calls resolved to a definition in the repository.
    #[serde(default)]
    pub refs_resolved: u64,
    /// Secrets redacted in indexed text.
    #[serde(default)]
    pub redactions: u64,
}

/// Per-language totals.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LangCount {
    /// Files.
    pub files: u64,
    /// Chunks.
    pub chunks: u64,
}

/// One data file of the bundle.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileEntry {
    /// File name within the bundle.
    pub name: String,
    /// Rows.
    pub rows: u64,
    /// Size in bytes.
    pub bytes: u64,
    /// sha256 of the file.
    pub sha256: String,
}

/// Reads and checks `BUNDLE/manifest.json`: a clear error for a missing, foreign or newer bundle.
pub fn read_manifest(bundle: &Path) -> Result<Manifest> {
    parse_checked(bundle, read_manifest_json(bundle)?)
}

/// The JSON of `BUNDLE/manifest.json`, of any format version, when it is a trove bundle's
/// (`trove upgrade` reads the bundles [`read_manifest`] refuses as too old with it).
pub fn read_manifest_json(bundle: &Path) -> Result<serde_json::Value> {
    let p = bundle.join(MANIFEST);
    if !bundle.exists() {
        return Err(Error::bundle_missing(
            bundle,
            "does not exist (expected a bundle written by `trove index`, or a .trove file)",
        ));
    }
    if !bundle.is_dir() {
        return Err(if super::is_packed(bundle) {
            Error::bundle_unusable(
                bundle,
                "is a packed bundle, and this needs a bundle directory (`trove unpack` makes one)",
            )
        } else {
            Error::bundle(
                bundle,
                "is a file but not a packed bundle (expected a bundle directory written by `trove \
                 index`, or a .trove file from `trove pack`)",
            )
        });
    }
    let text = super::read_small(&p, MAX_MANIFEST_BYTES)
        .and_then(|b| String::from_utf8(b).map_err(std::io::Error::other))
        .map_err(|e| {
            Error::bundle(
                bundle,
                format!("cannot read {MANIFEST}: {e} (is this a trove bundle?)"),
            )
        })?;
    manifest_json(bundle, &text)
}

/// The manifest text `text` as JSON, when it describes a trove bundle.
fn manifest_json(bundle: &Path, text: &str) -> Result<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::bundle(bundle, format!("{MANIFEST} is not valid JSON: {e}")))?;
    if v.get("format").and_then(|f| f.as_str()) != Some(super::FORMAT) {
        return Err(Error::bundle(
            bundle,
            format!("{MANIFEST} does not describe a {} bundle", super::FORMAT),
        ));
    }
    Ok(v)
}

/// Parses and checks the text of `bundle`'s manifest (see [`read_manifest`]).
pub fn parse_manifest(bundle: &Path, text: &str) -> Result<Manifest> {
    parse_checked(bundle, manifest_json(bundle, text)?)
}

/// The manifest of the JSON `v`, when this trove reads its format.
fn parse_checked(bundle: &Path, v: serde_json::Value) -> Result<Manifest> {
    check_version(bundle, &v)?;
    deserialize(bundle, v)
}

/// The manifest of the JSON `v` of any format since segments (5), unchecked for its version:
/// what `trove upgrade` converts.
pub fn deserialize(bundle: &Path, v: serde_json::Value) -> Result<Manifest> {
    let m: Manifest = serde_json::from_value(v)
        .map_err(|e| Error::bundle(bundle, format!("{MANIFEST} is malformed: {e}")))?;
    // Every embedder trove has writes vectors; a dimension past this is no model's (and would
    // overflow the Arrow types the tables are checked against).
    if !(1..=MAX_DIM).contains(&m.embedder.dim) {
        return Err(Error::bundle(
            bundle,
            format!(
                "{MANIFEST} is malformed: embedder.dim {} is not a vector dimension (1 to {MAX_DIM})",
                m.embedder.dim
            ),
        ));
    }
    Ok(m)
}

/// The format version of a manifest's JSON `v`: (major, minor), or the legacy `format_version`
/// of a bundle from before format 1.0 as (0, version).
pub fn format_of(v: &serde_json::Value) -> (u64, u64) {
    let num = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
    match num("format_major") {
        Some(major) => (major, num("format_minor").unwrap_or(0)),
        None => (0, num("format_version").unwrap_or(0)),
    }
}

/// The format version this trove writes, as [`format_of`] gives it: (major, minor).
pub fn this_format() -> (u64, u64) {
    (
        u64::from(super::FORMAT_MAJOR),
        u64::from(super::FORMAT_MINOR),
    )
}

/// A format version ([`format_of`]) as messages name it: `bundle format 1.0`, or
/// `format_version 9` for one from before 1.0.
pub fn format_text((major, minor): (u64, u64)) -> String {
    if major == 0 {
        format!("format_version {minor}")
    } else {
        format!("bundle format {major}.{minor}")
    }
}

/// Refuses a manifest this trove cannot read, saying what can: a bundle from before format 1.0
/// (`trove upgrade` converts format 9), one of a newer major, one that needs a feature this trove
/// does not know. A newer minor of this major is read (what it adds is ignored).
fn check_version(bundle: &Path, v: &serde_json::Value) -> Result<()> {
    let this = format!("trove {}", env!("CARGO_PKG_VERSION"));
    match format_of(v) {
        (0, old) if old == u64::from(super::UPGRADABLE_FROM) => Err(Error::bundle_unusable(
            bundle,
            format!(
                "is format_version {old}, from before bundle format 1.0: run `trove upgrade {}` \
                 to convert it (no source checkout needed; embeddings and file text are kept)",
                bundle.display()
            ),
        )),
        (0, old) if old < u64::from(super::UPGRADABLE_FROM) => Err(Error::bundle_unusable(
            bundle,
            format!(
                "is format_version {old}, older than `trove upgrade` converts (format_version \
                 {}): re-index it",
                super::UPGRADABLE_FROM
            ),
        )),
        (0, old) => Err(Error::bundle(
            bundle,
            format!("format_version {old} without format_major: no trove writes that"),
        )),
        (major, minor) if major > u64::from(super::FORMAT_MAJOR) => Err(Error::bundle_unusable(
            bundle,
            format!(
                "is bundle format {major}.{minor}, newer than {this} reads ({}.x): read it with a \
                 newer trove",
                super::FORMAT_MAJOR
            ),
        )),
        (major, minor) if major < u64::from(super::FORMAT_MAJOR) => Err(Error::bundle_unusable(
            bundle,
            format!(
                "is bundle format {major}.{minor}: run `trove upgrade {}` to convert it to {}.{}",
                bundle.display(),
                super::FORMAT_MAJOR,
                super::FORMAT_MINOR
            ),
        )),
        _ => {
            let features = v.get("required_features").and_then(|f| f.as_object());
            for (name, release) in features.into_iter().flatten() {
                if !super::KNOWN_FEATURES.contains(&name.as_str()) {
                    let release = release.as_str().unwrap_or("a newer trove");
                    return Err(Error::bundle_unusable(
                        bundle,
                        format!(
                            "needs the bundle feature `{name}`, which {this} does not read: read \
                             it with {release} or later"
                        ),
                    ));
                }
            }
            Ok(())
        }
    }
}

impl Manifest {
    /// Refuses to append to or rewrite a bundle of a newer minor than this trove writes: what
    /// that minor adds would be lost or left inconsistent (`what` names the operation).
    pub fn check_writable(&self, dir: &Path, what: &str) -> Result<()> {
        let mine = (u64::from(self.format_major), u64::from(self.format_minor));
        if mine > this_format() {
            return Err(Error::bundle_unusable(
                dir,
                format!(
                    "is {}, newer than trove {} writes ({}): it can be read, but {what} needs a \
                     trove that writes {}",
                    format_text(mine),
                    env!("CARGO_PKG_VERSION"),
                    format_text(this_format()),
                    format_text(mine),
                ),
            ));
        }
        Ok(())
    }
}

/// The largest vector dimension a manifest may record.
pub const MAX_DIM: usize = 1 << 16;

/// What a run knows of the bundle it writes beyond what the writer counted: where the rows came
/// from and how they were made. With the writer's [`Finished`] it makes the manifest
/// ([`Provenance::manifest`]), the one assembly that index and merge share.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// The indexed tree.
    pub source: SourceInfo,
    /// The bundle(s) the run started from.
    pub base: Option<serde_json::Value>,
    /// The resolved pipeline config.
    pub pipeline: serde_json::Value,
    /// Its sha256.
    pub pipeline_hash: String,
    /// sha256 of the language files.
    pub languages_hash: Option<String>,
    /// `--shard I/N`.
    pub shard: Option<Shard>,
    /// The embedder's stamp.
    pub embedder: EmbedderInfo,
    /// The SCIP indexes read.
    pub scip: Vec<ScipInput>,
    /// BM25 parameters and tokenizer; `avgdl` and `n_docs` are replaced by the rows written.
    pub bm25: Bm25Info,
    /// The builds of the rows the run carried over from other bundles (this build is added).
    pub builds: Vec<Tool>,
}

/// The live totals of a bundle, from its live `files` rows ([`crate::schema::FileRow`])
/// and skipped rows: what a run that added a segment writes in the manifest.
pub struct LiveTotals {
    /// Counts (files, chunks, bytes, symbols, refs, deps, redactions, skipped).
    pub counts: Counts,
    /// Per language.
    pub languages: BTreeMap<String, LangCount>,
    /// BM25 tokens over the live chunks.
    pub tokens: u64,
}

impl LiveTotals {
    /// Totals of `files` and `skipped` live rows.
    pub fn of<'a>(
        files: impl IntoIterator<Item = &'a crate::schema::FileRow>,
        skipped: u64,
    ) -> Self {
        let mut t = LiveTotals {
            counts: Counts {
                skipped,
                ..Counts::default()
            },
            languages: BTreeMap::new(),
            tokens: 0,
        };
        for f in files {
            let c = &mut t.counts;
            c.files += 1;
            c.chunks += u64::from(f.chunks);
            c.source_bytes += f.bytes;
            c.symbols += f.symbols;
            c.refs += f.refs;
            c.deps += f.deps;
            c.redactions += u64::from(f.redactions);
            t.tokens += f.tokens;
            let l = t
                .languages
                .entry(f.language.clone().unwrap_or_else(|| "(none)".into()))
                .or_default();
            l.files += 1;
            l.chunks += u64::from(f.chunks);
        }
        t
    }
}

impl Provenance {
    /// The manifest of `base` after a run added the segment its writer finished with `f`:
    /// `live` are the totals of the live rows after the change. Terms, postings and resolved
    /// references count stored rows (dead ones included) until a compaction.
    pub fn manifest_appended(mut self, base: &Manifest, f: Finished, live: LiveTotals) -> Manifest {
        self.builds.extend(base.builds.iter().cloned());
        let mut files: Vec<FileEntry> = base
            .files
            .iter()
            .filter(|e| e.name != super::VIEWS)
            .cloned()
            .collect();
        files.extend(f.entries);
        let mut segments = base.segments.clone();
        segments.push(f.segment);
        let stored = [&base.counts, &f.counts];
        self.manifest_of_segments(segments, files, live, &stored)
    }

    /// The manifest of a bundle of `segments` (whose data files are `files`) written by other
    /// runs — an appended segment, or the shards a merge lists: `live` are the totals of the live
    /// rows; terms, postings and resolved references are the sums of the `stored` counts of the
    /// parts (dead rows included until a compaction).
    pub fn manifest_of_segments(
        self,
        segments: Vec<SegmentInfo>,
        files: Vec<FileEntry>,
        live: LiveTotals,
        stored: &[&Counts],
    ) -> Manifest {
        let mut counts = live.counts;
        counts.terms = stored.iter().map(|c| c.terms).sum();
        counts.postings = stored.iter().map(|c| c.postings).sum();
        counts.refs_resolved = stored.iter().map(|c| c.refs_resolved).sum();
        let n_docs = counts.chunks;
        // As the writer computes it, so a compaction gives the same double.
        let avgdl = if n_docs == 0 {
            0.0
        } else {
            live.tokens as f64 / n_docs as f64
        };
        self.assemble(counts, live.languages, avgdl, segments, files)
    }

    /// The manifest of a bundle whose writer finished with `f`: this build's tool stamp, the
    /// time of writing, the counts, and BM25 statistics of the rows written.
    pub fn manifest(self, f: Finished) -> Manifest {
        self.assemble(f.counts, f.languages, f.avgdl, vec![f.segment], f.entries)
    }

    /// The one manifest assembly of index, merge, compact and incremental runs: this build's
    /// tool stamp, the time of writing, `n_docs` = the live chunks of `counts`, and the newest
    /// segment stamped with this run's embedder.
    fn assemble(
        self,
        counts: Counts,
        languages: BTreeMap<String, LangCount>,
        avgdl: f64,
        mut segments: Vec<SegmentInfo>,
        files: Vec<FileEntry>,
    ) -> Manifest {
        if let Some(last) = segments.last_mut() {
            last.embedder = self.embedder.fingerprint.clone();
        }
        let mut builds = self.builds;
        builds.push(manifest_tool());
        builds
            .sort_by(|a, b| (&a.name, &a.version, &a.build).cmp(&(&b.name, &b.version, &b.build)));
        builds.dedup();
        Manifest {
            format: super::FORMAT.into(),
            format_version: super::FORMAT_VERSION,
            format_major: super::FORMAT_MAJOR,
            format_minor: super::FORMAT_MINOR,
            required_features: BTreeMap::new(),
            tool: manifest_tool(),
            builds,
            created_at: created_at(),
            source: self.source,
            base: self.base,
            pipeline: self.pipeline,
            pipeline_hash: self.pipeline_hash,
            languages_hash: self.languages_hash,
            shard: self.shard,
            embedder: self.embedder,
            scip: self.scip,
            bm25: Bm25Info {
                avgdl,
                n_docs: counts.chunks,
                ..self.bm25
            },
            counts,
            languages,
            segments,
            files,
        }
    }
}

/// Writes `manifest.json` into the live bundle `dir` through a temporary name and a rename: the
/// commit point of a run that added a segment (readers see the old manifest or the new one).
pub fn commit_manifest(dir: &Path, m: &Manifest) -> Result<()> {
    let tmp = dir.join(format!(".{MANIFEST}.tmp"));
    let mut text = serde_json::to_string_pretty(m)?;
    text.push('\n');
    // A failure before the rename (a full disk) leaves no half-written temporary behind.
    let written = std::fs::write(&tmp, text)
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .map_err(|e| Error::io(&tmp, e));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let p = dir.join(MANIFEST);
    std::fs::rename(&tmp, &p).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(&p, e)
    })?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes what the manifest of the bundle `dir` does not list under `segments/`: folders of
/// segments a killed run wrote but never committed, or that a compaction replaced, and any file
/// or link put there (a Finder `.DS_Store`: a link is removed, never followed).
pub fn remove_garbage(dir: &Path, m: &Manifest) -> Result<()> {
    for p in unlisted_segments(dir, m) {
        let folder = std::fs::symlink_metadata(&p).is_ok_and(|md| md.is_dir());
        let r = if folder {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        match r {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&p, e)),
            _ => {}
        }
    }
    Ok(())
}

/// What lies under the bundle `dir`'s `segments/` that its manifest `m` does not list, sorted
/// (none when there is no such folder).
pub fn unlisted_segments(dir: &Path, m: &Manifest) -> Vec<std::path::PathBuf> {
    let listed: std::collections::HashSet<&str> =
        m.segments.iter().map(|s| s.id.as_str()).collect();
    let mut out: Vec<std::path::PathBuf> = std::fs::read_dir(dir.join(super::SEGMENTS))
        .map(|rd| {
            rd.flatten()
                .filter(|e| !listed.contains(e.file_name().to_string_lossy().as_ref()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// RFC 3339 UTC; `SOURCE_DATE_EPOCH` (reproducible builds) wins over the clock.
pub fn created_at() -> String {
    let t = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .unwrap_or_else(chrono::Utc::now);
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// This build's tool stamp.
pub fn manifest_tool() -> Tool {
    Tool {
        name: "trove".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        build: crate::build_stamp().map(Into::into),
    }
}

/// Writes `manifest.json` into `dir` (last, after every data file) and syncs it and the directory.
pub fn write_manifest(dir: &Path, m: &Manifest) -> Result<()> {
    let mut text = serde_json::to_string_pretty(m)?;
    text.push('\n');
    write_manifest_text(dir, &text)
}

/// Writes `text` as `dir`'s `manifest.json` and syncs it and the directory.
pub fn write_manifest_text(dir: &Path, text: &str) -> Result<()> {
    let p = dir.join(MANIFEST);
    std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
    let f = std::fs::File::open(&p).map_err(|e| Error::io(&p, e))?;
    f.sync_all().map_err(|e| Error::io(&p, e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// One SCIP file a run read: stamped in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScipInput {
    /// The file, as given (or `index.scip` at the root).
    pub file: String,
    /// The indexer that wrote it: name and version.
    pub tool: String,
    /// sha256 of its bytes.
    pub sha256: String,
    /// Documents it holds.
    pub documents: usize,
    /// Of those, documents inside the indexed tree.
    pub in_tree: usize,
}

/// What a finished writer reports for the manifest.
pub struct Finished {
    /// File entries of the segment written: the tables in [`crate::TABLES`] order, its
    /// tombstones when it has some, then `views.sql` (over every live segment).
    pub entries: Vec<FileEntry>,
    /// The segment written.
    pub segment: SegmentInfo,
    /// Totals.
    pub counts: Counts,
    /// Files and chunks per language.
    pub languages: BTreeMap<String, LangCount>,
    /// Average chunk length in tokens.
    pub avgdl: f64,
}

/// The text of `views.sql` for `segments`: a DuckDB view per table over the live rows of the
/// segments' Parquet files, by paths relative to the bundle folder.
pub fn views_text(segments: &[SegmentInfo]) -> String {
    let mut sql = String::from(
        "-- trove bundle views: every table of the bundle's segments, by paths relative to this\n\
         -- folder. Use: cd BUNDLE && duckdb -init views.sql\n",
    );
    sql.push_str(&crate::views_sql(segments, |rel| format!("'{rel}'")));
    sql
}

/// The manifest entry of a `views.sql` whose text is `sql`.
pub fn views_entry(sql: &str) -> FileEntry {
    FileEntry {
        name: super::VIEWS.into(),
        rows: 0,
        bytes: sql.len() as u64,
        sha256: trove_base::util::sha256_hex(sql.as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::{SegmentInfo, Shard, is_bundle_file};

    #[test]
    fn bundle_file_paths_are_the_manifest_views_and_segment_tables_only() {
        for ok in [
            "manifest.json",
            "views.sql",
            "segments/0123456789abcdef/chunks.parquet",
            "segments/0123456789abcdef/refs-raw.parquet",
        ] {
            assert!(is_bundle_file(ok), "{ok}");
        }
        for bad in [
            "",
            "chunks.parquet",
            "../chunks.parquet",
            "/etc/passwd",
            "segments/0123456789abcdef/../../x.parquet",
            "segments/0123456789ABCDEF/chunks.parquet",
            "segments/0123456789abcde/chunks.parquet",
            "segments/0123456789abcdef/chunks.txt",
            "segments/0123456789abcdef/.parquet",
            "segments/0123456789abcdef/sub/chunks.parquet",
            "other/0123456789abcdef/chunks.parquet",
            "segments/0123456789abcdef/Chunks.parquet",
        ] {
            assert!(!is_bundle_file(bad), "{bad}");
        }
    }

    #[test]
    fn segment_ids_follow_content_and_what_came_before() {
        let a = SegmentInfo::id_for(&[], &["aa", "bb"]);
        assert_eq!(a, SegmentInfo::id_for(&[], &["aa", "bb"]));
        assert_eq!(a.len(), 16);
        assert_ne!(a, SegmentInfo::id_for(&[], &["aa", "bc"]));
        let first = SegmentInfo {
            id: a.clone(),
            files: 1,
            chunks: 1,
            tombstones: 0,
            embedder: String::new(),
        };
        // The same content after another segment is another segment.
        assert_ne!(a, SegmentInfo::id_for(&[first], &["aa", "bb"]));
    }

    #[test]
    fn shards_parse_and_split_every_path_once() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "x/3", "3", "1/y"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let env = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(name, _)| name == k)
                    .map(|(_, v)| v.clone())
            }
        };
        let s = |index, count| Ok(Shard { index, count });
        assert_eq!(Shard::from_env(env(&[("TROVE_SHARD", "2/5")])), s(2, 5));
        let k8s = [("JOB_COMPLETION_INDEX", "0"), ("TROVE_SHARD_COUNT", "8")];
        assert_eq!(Shard::from_env(env(&k8s)), s(1, 8));
        let bk = [
            ("BUILDKITE_PARALLEL_JOB", "3"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "4"),
        ];
        assert_eq!(Shard::from_env(env(&bk)), s(4, 4));
        let gl = [("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")];
        assert_eq!(Shard::from_env(env(&gl)), s(2, 3));
        for bad in [
            &[][..],
            &[("JOB_COMPLETION_INDEX", "1")][..],
            &[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "3")][..],
            &[
                ("BUILDKITE_PARALLEL_JOB", "4"),
                ("BUILDKITE_PARALLEL_JOB_COUNT", "4"),
            ][..],
            &[("CI_NODE_INDEX", "x"), ("CI_NODE_TOTAL", "3")][..],
        ] {
            assert!(Shard::from_env(env(bad)).is_err(), "{bad:?}");
        }
        let shards: Vec<Shard> = (1..=3).map(|i| Shard { index: i, count: 3 }).collect();
        let mut sizes = [0usize; 3];
        for i in 0..300 {
            let p = format!("src/m{}/f{i}.rs", i % 7);
            let holders: Vec<usize> = (0..3).filter(|&k| shards[k].holds(&p)).collect();
            assert_eq!(holders.len(), 1, "{p} is in exactly one shard");
            sizes[holders[0]] += 1;
        }
        assert!(sizes.iter().all(|&n| n > 60), "roughly even: {sizes:?}");
    }
}
