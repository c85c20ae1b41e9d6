//! An open bundle ([`Bundle`]): its manifest, its segments with their query caches (dead rows,
//! inverted indexes, vectors, chunk rows), file text, the cached resolution of `refs`, and the
//! DuckDB connection opened on first use.
use crate::{Error, Result};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;
use std::sync::Arc;
use trove_bundle::{Manifest, cache, lookup, read_manifest};

use crate::bm25::LivePostings;
use crate::model::QueryModel;
use crate::{inverted, rows, vectors};
use trove_base::util::sql_lit as lit;
use trove_embed::{Embedder, HashEmbedder};

/// One segment of an open bundle: which of its rows later segments killed, and its query caches
/// (each built from this segment's tables alone, so a new segment costs only its own).
pub(crate) struct Segment {
    pub(crate) info: trove_bundle::SegmentInfo,
    /// Whether a later segment has tombstones (which may name paths here).
    pub(crate) tombstoned: bool,
    /// A flag per chunk ordinal: dead, its path tombstoned by a later segment (from the `files`
    /// table: chunks lie in path order); `None` when nothing here can be dead.
    pub(crate) dead: std::sync::OnceLock<Option<Arc<Vec<bool>>>>,
    /// The vector matrix, loaded on first use.
    pub(crate) matrix: std::sync::OnceLock<vectors::Matrix>,
    /// The BM25 inverted index, loaded on first use.
    pub(crate) inverted: std::sync::OnceLock<Arc<inverted::Inverted>>,
    /// The chunk rows, loaded on first use.
    pub(crate) rows: std::sync::OnceLock<rows::Rows>,
}

/// An open bundle: its manifest, its segments with their caches, and (opened on first use) a
/// DuckDB connection with views over the live rows of its tables.
pub struct Bundle {
    /// Where it is (for a packed bundle, its unpacked copy in the cache).
    pub dir: std::path::PathBuf,
    /// What the user named it (the packed file for a packed bundle): hits show this.
    pub label: String,
    /// Its manifest.
    pub manifest: Manifest,
    /// DuckDB with one view per table; opening DuckDB costs ≈30 ms, so a query that needs no SQL
    /// (vector mode without filters) never does.
    pub(crate) conn: std::sync::OnceLock<duckdb::Connection>,
    /// The segments, oldest first.
    pub(crate) segments: Vec<Segment>,
    /// The bundle's embedder, built on first use (a local model loads once).
    pub(crate) embedder: std::sync::OnceLock<QueryModel>,
    /// The segment where an arm found each chunk id (where its row is live): the first place
    /// [`Bundle::locate`] looks.
    pub(crate) found_in: std::sync::Mutex<FxHashMap<i64, usize>>,
    /// Per segment, the paths whose rows there are dead (read from the tombstones on first use:
    /// only a dead-row cache that must be built needs them).
    pub(crate) dead_paths: std::sync::OnceLock<Vec<FxHashSet<String>>>,
    /// Where the `refs` view of a bundle of several segments reads from: see
    /// [`Bundle::cache_refs`].
    pub(crate) refs_cache: std::sync::Mutex<RefsCache>,
}

/// What the `refs` view of a bundle of several segments reads.
pub(crate) enum RefsCache {
    /// Not yet asked for: the view resolves.
    Untried,
    /// The view resolves, and stays so (caching failed, or [`Bundle::keep_refs_live`]).
    Live,
    /// The view reads this cached resolution.
    File(std::path::PathBuf),
}

impl Bundle {
    /// The `terms` table of a bundle of one segment (whose stored document frequencies are the
    /// live ones).
    pub(crate) fn terms_path(&self) -> Option<std::path::PathBuf> {
        match self.segments.as_slice() {
            [one] => Some(self.dir.join(one.info.file("terms"))),
            _ => None,
        }
    }

    /// Segment `i`'s dead chunk ordinals (read once from its `files` table), `None` when none.
    pub(crate) fn dead(&self, i: usize) -> Result<Option<Arc<Vec<bool>>>> {
        let seg = &self.segments[i];
        loaded(&seg.dead, || {
            if !seg.tombstoned {
                return Ok(None);
            }
            // Cached (a byte per chunk ordinal), named by the segment's files table and the
            // tombstones of the segments after it: a process that opens a segmented bundle
            // then reads no Parquet to know its dead rows.
            let mut key = cache::file_sha(&self.dir, &self.manifest, &seg.info, "files")?;
            for later in &self.manifest.segments[i + 1..] {
                if later.tombstones > 0 {
                    key.push_str(&cache::file_sha(
                        &self.dir,
                        &self.manifest,
                        later,
                        trove_bundle::TOMBSTONES,
                    )?);
                }
            }
            let name = format!(
                "dead-v1-{}",
                &trove_base::util::sha256_hex(key.as_bytes())[..32]
            );
            let chunks = seg.info.chunks;
            let bytes = cache::load(
                &name,
                |b| b.len() as u64 == chunks,
                || {
                    let paths = &loaded(&self.dead_paths, || {
                        trove_bundle::reader::dead_paths(&self.dir, &self.manifest)
                    })?[i];
                    // The files' chunk counts must add up to the segment's chunks (its manifest
                    // entry, checked against chunks.parquet): a damaged count is refused, never
                    // allocated.
                    let wrong = || {
                        crate::Error::bundle(
                            &self.dir,
                            format!(
                                "segment {}: the chunk counts of its files.parquet do not add up \
                                 to the {chunks} rows of its chunks.parquet (run `trove verify` \
                                 on the bundle)",
                                seg.info.id
                            ),
                        )
                    };
                    let mut dead = Vec::with_capacity(chunks as usize);
                    for f in trove_bundle::reader::read_files(&seg.info.dir(&self.dir))? {
                        let d = u8::from(paths.contains(&f.path));
                        let n = u64::from(f.chunks);
                        if dead.len() as u64 + n > chunks {
                            return Err(wrong());
                        }
                        dead.extend(std::iter::repeat_n(d, n as usize));
                    }
                    if dead.len() as u64 != chunks {
                        return Err(wrong());
                    }
                    Ok(dead)
                },
            )?;
            Ok(Some(Arc::new(bytes.iter().map(|&b| b != 0).collect())))
        })
        .cloned()
    }

    /// The (redacted) text of the file `path` as the bundle holds it, from the segment where
    /// its rows are live; `None` when the bundle has no such file.
    pub fn file_text(&self, path: &str) -> Result<Option<String>> {
        let dead = if self.segments.iter().any(|s| s.tombstoned) {
            Some(loaded(&self.dead_paths, || {
                trove_bundle::reader::dead_paths(&self.dir, &self.manifest)
            })?)
        } else {
            None
        };
        Ok(lookup::live_file_text(
            &self.dir,
            &self.manifest,
            dead.map(Vec::as_slice),
            path,
        )?)
    }

    /// Remembers where the arms found chunk ids (only worth it with several segments).
    pub(crate) fn found_in(&self, found: impl IntoIterator<Item = (i64, usize)>) {
        if self.segments.len() > 1
            && let Ok(mut m) = self.found_in.lock()
        {
            m.extend(found);
        }
    }

    /// Segment `i`'s inverted index.
    pub(crate) fn inverted(&self, i: usize) -> Result<Arc<inverted::Inverted>> {
        let seg = &self.segments[i];
        loaded(&seg.inverted, || {
            Ok(Arc::new(inverted::Inverted::load(
                &self.dir,
                &self.manifest,
                &seg.info,
            )?))
        })
        .cloned()
    }

    /// Segment `i`'s chunk rows.
    pub(crate) fn seg_rows(&self, i: usize) -> Result<&rows::Rows> {
        let seg = &self.segments[i];
        loaded(&seg.rows, || {
            rows::Rows::load(&self.dir, &self.manifest, &seg.info)
        })
    }

    /// Every segment's inverted index with its dead ordinals: what live document frequencies
    /// are counted from.
    pub(crate) fn live_postings(&self) -> Result<LivePostings> {
        (0..self.segments.len())
            .map(|i| Ok((self.inverted(i)?, self.dead(i)?)))
            .collect::<Result<Vec<_>>>()
            .map(Arc::new)
    }

    /// The segment where chunk `id` is live (ids are unique among live rows), and its row.
    pub(crate) fn locate(&self, id: i64) -> Result<Option<(usize, rows::Row<'_>)>> {
        // Empty for a bundle of one segment (`found_in` keeps nothing then).
        let hint = self.found_in.lock().ok().and_then(|m| m.get(&id).copied());
        for i in hint.into_iter().chain((0..self.segments.len()).rev()) {
            if let Some((ord, r)) = self.seg_rows(i)?.get_with_ord(id)
                && !self
                    .dead(i)?
                    .is_some_and(|d| d.get(ord).copied().unwrap_or(false))
            {
                return Ok(Some((i, r)));
            }
        }
        Ok(None)
    }
}

impl Bundle {
    /// Opens a bundle (a directory, or a packed `.trove` file, unpacked once into the cache): reads
    /// and checks the manifest, checks every table is present with the size
    /// the manifest records (a truncated or replaced file is refused here; `trove verify` checks
    /// the bytes).
    pub fn open(path: &Path) -> Result<Self> {
        let label = path.display().to_string();
        let dir = &trove_bundle::pack::open_path(path)?;
        let manifest = read_manifest(dir)?;
        if manifest.segments.is_empty() {
            return Err(crate::Error::bundle(
                dir,
                "its manifest lists no segment (run `trove verify` on it, or re-index)",
            ));
        }
        manifest.check_segments(dir)?;
        let names = manifest.segment_files();
        for name in &names {
            let p = dir.join(name);
            let size = std::fs::metadata(&p)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            let listed = manifest.entry(name).map(|f| f.bytes);
            let problem = match (size, listed) {
                (None, _) => "is missing",
                (_, None) => "is not in the manifest",
                (Some(a), Some(b)) if a != b => "does not have the size the manifest records",
                _ => continue,
            };
            return Err(crate::Error::bundle(
                dir,
                format!("{name} {problem} (run `trove verify` on it, or re-index)"),
            ));
        }
        // Every table's sha256 against the manifest: hashed once per file version (remembered in
        // the cache by path, size, mtime and inode), so damaged bytes are refused, not queried.
        trove_bundle::pack::check_hashes(dir, &manifest)?;
        // Each segment's rows of the paths a later segment tombstones are dead.
        let segments: Vec<Segment> = manifest
            .segments
            .iter()
            .enumerate()
            .map(|(i, info)| Segment {
                info: info.clone(),
                tombstoned: manifest.segments[i + 1..].iter().any(|s| s.tombstones > 0),
                dead: std::sync::OnceLock::new(),
                matrix: std::sync::OnceLock::new(),
                inverted: std::sync::OnceLock::new(),
                rows: std::sync::OnceLock::new(),
            })
            .collect();
        Ok(Bundle {
            dir: dir.to_path_buf(),
            label,
            manifest,
            conn: std::sync::OnceLock::new(),
            segments,
            embedder: std::sync::OnceLock::new(),
            dead_paths: std::sync::OnceLock::new(),
            found_in: std::sync::Mutex::default(),
            refs_cache: std::sync::Mutex::new(RefsCache::Untried),
        })
    }

    /// With several segments the `refs` view resolves every reference again over all segments'
    /// definitions (see [`trove_bundle::views_sql`]): about a second on a bundle of 50k chunks and
    /// 120k references, for every `refs`, `map` or `callers`. Its result depends only on the
    /// segments' `refs`, `symbols`, `deps` and `tombstones` tables and on the views' SQL, so
    /// the first use writes it to the query cache (`refs-v1-<sha256 of those>.parquet`, by
    /// temporary name and rename) and the view then reads that file: the same rows. A cache that
    /// cannot be written or read leaves the view resolving as before; a file removed under a
    /// long-lived handle (`trove serve`, a cache cleaner) is written again on the next use. One
    /// segment: nothing to do.
    pub fn cache_refs(&self) {
        if self.manifest.segments.len() < 2 {
            return;
        }
        let mut state = self.refs_cache.lock().unwrap_or_else(|e| e.into_inner());
        let was_file = match &*state {
            RefsCache::Live => return,
            RefsCache::File(p) if p.is_file() => {
                cache::touch_used();
                return;
            }
            RefsCache::File(_) => true,
            RefsCache::Untried => false,
        };
        *state = match self.try_cache_refs() {
            Ok(p) => RefsCache::File(p),
            Err(_) => {
                // The view may read the vanished file: it resolves again.
                if was_file && let Ok(conn) = self.conn() {
                    let _ = conn.execute_batch(&format!(
                        "CREATE OR REPLACE VIEW refs AS {}",
                        trove_bundle::resolution::resolved_refs_sql(
                            "stored_refs",
                            "symbols",
                            "deps"
                        )
                    ));
                }
                RefsCache::Live
            }
        };
    }

    /// Keeps the `refs` view resolving over the connection's own views for this bundle's life
    /// (`trove sql` with several statements: one of them may redefine what it resolves over).
    pub fn keep_refs_live(&self) {
        let mut state = self.refs_cache.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*state, RefsCache::Untried) {
            *state = RefsCache::Live;
        }
    }

    /// Writes (or finds) the cached resolution and points the view at it: its path.
    pub(crate) fn try_cache_refs(&self) -> Result<std::path::PathBuf> {
        let dir = trove_base::util::cache_dir()
            .ok_or_else(|| crate::Error::not_found("no cache directory"))?;
        // The views' own text (the live rows and the resolution rules, by this build) and the
        // tables' sha256s.
        let mut key = format!(
            "refs-v1\n{}\n",
            trove_bundle::views_sql(&self.manifest.segments, |rel| format!("'{rel}'"))
        );
        for seg in &self.manifest.segments {
            key.push_str(&seg.id);
            for table in ["refs", "symbols", "deps"] {
                key.push_str(&cache::file_sha(&self.dir, &self.manifest, seg, table)?);
            }
            if seg.tombstones > 0 {
                key.push_str(&cache::file_sha(
                    &self.dir,
                    &self.manifest,
                    seg,
                    trove_bundle::TOMBSTONES,
                )?);
            }
            key.push('\n');
        }
        let path = dir.join(format!(
            "refs-v1-{}.parquet",
            &trove_base::util::sha256_hex(key.as_bytes())[..32]
        ));
        let conn = self.conn()?;
        let view = |p: &Path| {
            conn.execute_batch(&format!(
                "CREATE OR REPLACE VIEW refs AS SELECT * FROM read_parquet({})",
                lit(&p.to_string_lossy())
            ))
        };
        // A file another handle or process puts in place is whole or absent, and once there it is
        // never replaced (below); one that does not read (damaged on disk) is written again.
        if path.is_file() {
            // Marked used before the view reads it: a pruning process then leaves it.
            cache::touch(&path);
            if view(&path).is_ok() {
                return Ok(path);
            }
            let _ = std::fs::remove_file(&path);
        }
        cache::prune_unused(&dir);
        let io =
            |e: std::io::Error| crate::Error::failed(trove_base::error::io_kind(&e), e.to_string());
        std::fs::create_dir_all(&dir).map_err(io)?;
        let tmp = cache::tmp_path(&path);
        // Resolved on a connection of its own, never on one a user's statements may have changed
        // (`trove sql`, `/sql`): the file serves every later process.
        let fresh = open_duckdb(&self.dir, &self.manifest)?;
        let written = fresh
            .execute_batch(&format!(
                "COPY (SELECT * FROM refs) TO {} (FORMAT parquet, COMPRESSION zstd)",
                lit(&tmp.to_string_lossy())
            ))
            .map_err(Error::from)
            .and_then(|()| {
                // Put in place only where none is: two handles of one server (or two processes)
                // that resolve the same key at once write different bytes (DuckDB's COPY does not
                // keep row order), and DuckDB reads a file in several opens within one query —
                // replacing the file between them read one copy at the other's offsets
                // ("TProtocolException: Invalid data"). A hard link never replaces; the loser
                // uses the winner's file. Where links cannot be made, a rename as before.
                match std::fs::hard_link(&tmp, &path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                    Err(_) if path.is_file() => Ok(()),
                    Err(_) => std::fs::rename(&tmp, &path).map_err(io),
                }
            });
        let _ = std::fs::remove_file(&tmp);
        written?;
        cache::touch(&path);
        view(&path)?;
        Ok(path)
    }

    /// The DuckDB connection, with one view per table (opened on first use).
    pub fn conn(&self) -> Result<&duckdb::Connection> {
        loaded(&self.conn, || open_duckdb(&self.dir, &self.manifest))
    }

    /// The embedder that made this bundle, when this build can run it (built once per bundle: a
    /// local model is loaded on first use).
    pub fn embedder(&self) -> Result<QueryModel> {
        if let Some(e) = self.embedder.get() {
            return Ok(e.clone());
        }
        let e = &self.manifest.embedder;
        let model = if e.backend == "hash" {
            let ours = HashEmbedder::new(e.dim, self.manifest.bm25.max_token_len);
            (ours.model() == e.model && ours.fingerprint() == e.fingerprint)
                .then_some(QueryModel::Hash(ours))
                .ok_or_else(|| "its hash embedder differs from this trove's".to_string())
        } else {
            trove_embed::for_manifest(&self.manifest).map(|m| QueryModel::Model(Arc::from(m)))
        };
        let model = model.map_err(|why| {
            crate::Error::bundle_unusable(
                &self.dir,
                format!(
                    "made with embedder {} {} (dim {}): {why}; query with --mode bm25, or re-index",
                    e.backend, e.model, e.dim
                ),
            )
        })?;
        Ok(self.embedder.get_or_init(|| model).clone())
    }

    /// Uses the embedder `other` has built (a bundle opened again, e.g. one handle per thread of
    /// a server: a local model is loaded once, not per handle). Nothing when `other` has none.
    pub fn share_embedder(&self, other: &Bundle) {
        if let Some(e) = other.embedder.get() {
            let _ = self.embedder.set(e.clone());
        }
    }
}

/// The value in `cell`, loaded by `load` on first use (a failed load leaves the cell empty).
pub(crate) fn loaded<T, E>(
    cell: &std::sync::OnceLock<T>,
    load: impl FnOnce() -> Result<T, E>,
) -> Result<&T, E> {
    if let Some(v) = cell.get() {
        return Ok(v);
    }
    let v = load()?;
    Ok(cell.get_or_init(|| v))
}

/// A DuckDB connection with one view per table of the bundle `dir`.
pub(crate) fn open_duckdb(dir: &Path, manifest: &Manifest) -> Result<duckdb::Connection> {
    let conn = duckdb::Connection::open_in_memory()?;
    // No download at run time: a function of an extension not compiled in (`current_date` needs
    // icu) fails with DuckDB's message instead of reaching for extensions.duckdb.org.
    conn.execute_batch("SET autoinstall_known_extensions = false;")?;
    let sql = trove_bundle::views_sql(&manifest.segments, |rel| {
        lit(&dir.join(rel).to_string_lossy())
    });
    conn.execute_batch(&sql)?;
    Ok(conn)
}
