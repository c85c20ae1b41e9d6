//! What `trove serve` serves: for each bundle named on the command line a [`Slot`], the version of
//! it being served (a [`Snapshot`]: hard links to one manifest's files, so a publisher replacing the
//! bundle cannot change what a request in flight reads), and a [`Generation`]: pools of open
//! handles over the current snapshots, one per [`Lane`]. A reload builds, verifies and warms a new
//! generation beside the old one and swaps it in; requests in flight hold the old one until they
//! finish.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use trove_query::{Bundle, Mode, QueryOptions, search_all};

use crate::tools::Tools;

/// One bundle named on the command line.
pub struct Slot {
    /// Its name in the API: the directory's (or packed file's) file name, made unique.
    pub name: String,
    /// The path as given.
    pub path: PathBuf,
    /// Whether it is a packed `.trove` file.
    packed: bool,
    /// What its last reload attempts came to ([`Slot::status`]).
    status: Mutex<SlotStatus>,
}

impl Slot {
    /// Its reload history, locked.
    pub fn status(&self) -> std::sync::MutexGuard<'_, SlotStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A slot's reload history.
#[derive(Clone, Default)]
pub struct SlotStatus {
    /// The last version that could not be switched to, why and when; cleared by a good reload.
    pub failed: Option<Failure>,
    /// Reloads that switched.
    pub reloads_ok: u64,
    /// Reloads refused.
    pub reloads_failed: u64,
}

/// A version that could not be served.
#[derive(Clone)]
pub struct Failure {
    /// Its fingerprint (not tried again before `retry_at`, unless the bundle changes again).
    pub fingerprint: String,
    /// When the same version is tried again (a failure may have been passing: out of file
    /// handles, disk or memory).
    retry_at: std::time::Instant,
    /// Why.
    pub message: String,
    /// When (RFC 3339).
    pub at: String,
}

/// One version of a bundle, as served: a private directory of hard links to its files (or the
/// bundle itself where links cannot be made, or a packed bundle's unpacked copy, which never
/// changes).
pub struct Snapshot {
    /// What the handles open.
    pub dir: PathBuf,
    /// Whether `dir` is ours to remove when the version is no longer served.
    owned: bool,
    /// What identifies the version on disk: the manifest's sha256 (a packed file's size, mtime
    /// and inode).
    pub fingerprint: String,
    /// The manifest's sha256, first 16 hex digits: the version clients see.
    pub version: String,
    /// When it was loaded (RFC 3339).
    pub loaded_at: String,
    /// How long loading (linking, verifying) took.
    pub load_secs: f64,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if self.owned
            && let Err(e) = std::fs::remove_dir_all(&self.dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!(
                "trove serve: cannot remove the snapshot {}: {e}",
                self.dir.display()
            );
        }
    }
}

/// Open handles over one snapshot of every slot, handed out one request at a time.
pub struct Generation {
    /// Counts up from 1 with each switch.
    pub id: u64,
    /// Per [`Lane`], dropped before the snapshots (closes DuckDB before the files go).
    pools: [Pool; 2],
    /// Per slot, in slot order.
    pub snapshots: Vec<Arc<Snapshot>>,
    /// Per slot, the manifest (for `/bundles` without taking a handle).
    pub manifests: Vec<trove_bundle::Manifest>,
}

impl Drop for Generation {
    /// Closing a generation's DuckDB handles and removing its snapshot folders takes time: it
    /// happens on a thread of its own, never on the async worker that let go of it last (a
    /// `/health` answered in the moment of a switch), which would stall that worker's
    /// connections meanwhile. The handles close before the folders go.
    fn drop(&mut self) {
        let pools = std::mem::replace(
            &mut self.pools,
            [Pool::new(Vec::new()), Pool::new(Vec::new())],
        );
        let snapshots = std::mem::take(&mut self.snapshots);
        if snapshots.is_empty() && pools.iter().all(Pool::is_empty) {
            return;
        }
        let heavy = (pools, snapshots);
        // Where no thread can be started, here and now.
        let _ = std::thread::Builder::new()
            .name("trove-retire".into())
            .spawn(move || drop(heavy));
    }
}

struct Pool {
    free: Mutex<Vec<Tools>>,
    permits: Arc<tokio::sync::Semaphore>,
}

impl Pool {
    fn is_empty(&self) -> bool {
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    fn new(free: Vec<Tools>) -> Self {
        Pool {
            permits: Arc::new(tokio::sync::Semaphore::new(free.len())),
            free: Mutex::new(free),
        }
    }
}

/// Which handles a request takes: searches and file reads (milliseconds) have their own, so a
/// queue of slower look-ups (SQL over the definitions and references, maps, the research loop)
/// never holds them up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// `POST /query`, `GET /files`, the MCP `search_code` and `read_file`.
    Search = 0,
    /// Everything else that reads the bundles.
    Lookup = 1,
}

/// A handle of a generation, held by one request; given back when dropped.
pub struct Lease {
    tools: Option<Tools>,
    lane: Lane,
    /// The generation it belongs to (kept alive while the lease is held).
    pub generation: Arc<Generation>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Lease {
    /// The tools (and bundles) of this generation.
    pub fn tools(&self) -> &Tools {
        self.tools
            .as_ref()
            .expect("a lease holds its tools until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Back to the pool before the permit is released (the fields drop after this).
        if let Some(t) = self.tools.take() {
            self.generation.pools[self.lane as usize]
                .free
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(t);
        }
    }
}

/// The served bundles and their current generation.
pub struct Served {
    /// The bundles named, in order.
    pub slots: Vec<Slot>,
    current: RwLock<Arc<Generation>>,
    /// Handles per lane and generation.
    workers: usize,
    /// How many hits late interaction reorders when a request does not say (`--rerank`): search_code's,
    /// POST /query's default.
    rerank: usize,
    /// The last generation id handed out.
    last_id: AtomicU64,
    /// Names snapshot folders apart.
    serial: AtomicU64,
    /// Where this process keeps its snapshots, per slot (removed at exit), and the locked file
    /// that tells other servers the folder is in use.
    roots: Vec<Option<(PathBuf, std::fs::File)>>,
    /// Whether the "cannot link" warning was printed, per slot.
    warned: Mutex<Vec<bool>>,
    /// Held by the one poll running (the timer's and SIGHUP's take turns).
    polling: Mutex<()>,
}

/// Now, as RFC 3339 (UTC, seconds).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Served {
    /// How many hits late interaction reorders when a request does not say (`--rerank`).
    pub fn rerank(&self) -> usize {
        self.rerank
    }

    /// Loads, verifies and opens every bundle (`workers` handles over them); fails on the first
    /// that cannot be served.
    pub fn open(paths: &[PathBuf], workers: usize, rerank: usize) -> anyhow::Result<Self> {
        let mut slots: Vec<Slot> = Vec::new();
        for p in paths {
            let base = p
                .canonicalize()
                .ok()
                .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
                .or_else(|| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "bundle".into());
            let mut name = base.clone();
            let mut n = 2;
            while slots.iter().any(|s| s.name == name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            if !p.exists() {
                anyhow::bail!("{}: no such bundle", p.display());
            }
            slots.push(Slot {
                name,
                path: p.clone(),
                packed: p.is_file(),
                status: Mutex::default(),
            });
        }
        let roots = slots
            .iter()
            .enumerate()
            .map(|(i, s)| claim_root(s, i))
            .collect();
        let mut served = Served {
            warned: Mutex::new(vec![false; slots.len()]),
            polling: Mutex::new(()),
            slots,
            current: RwLock::new(Arc::new(Generation {
                id: 0,
                pools: [Pool::new(Vec::new()), Pool::new(Vec::new())],
                snapshots: Vec::new(),
                manifests: Vec::new(),
            })),
            workers: workers.max(1),
            rerank,
            last_id: AtomicU64::new(0),
            serial: AtomicU64::new(0),
            roots,
        };
        let mut snaps = Vec::new();
        let opened = (0..served.slots.len())
            .try_for_each(|i| {
                snaps.push(Arc::new(served.load(i)?));
                Ok(())
            })
            .and_then(|()| served.open_generation(snaps));
        match opened {
            Ok(g) => {
                served.current = RwLock::new(Arc::new(g));
                Ok(served)
            }
            // A server that does not start leaves no folders of its own behind.
            Err(e) => {
                served.cleanup();
                Err(e)
            }
        }
    }

    /// The generation serving now.
    pub fn current(&self) -> Arc<Generation> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A handle of the current generation for `lane` (waits while all are busy).
    pub async fn lease(&self, lane: Lane) -> Lease {
        let generation = self.current();
        let pool = &generation.pools[lane as usize];
        let permit = pool
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        let tools = pool.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        Lease {
            tools: Some(tools.expect("a permit means a free handle")),
            lane,
            generation,
            _permit: permit,
        }
    }

    /// Slot `i`'s current version on disk, snapshotted, verified and tried.
    fn load(&self, i: usize) -> anyhow::Result<Snapshot> {
        let slot = &self.slots[i];
        let started = std::time::Instant::now();
        let mut snap = if slot.packed {
            let fingerprint = packed_fingerprint(&slot.path)?;
            // Unpacked into a snapshot folder of ours, removed with its version (the shared
            // cache would keep a copy of every nightly version, and another process may be
            // reading the one we would retire); where none can be made, the cache's copy.
            let (dir, owned) = match &self.roots[i] {
                Some((root, _)) => {
                    let serial = self.serial.fetch_add(1, Ordering::Relaxed) + 1;
                    (root.join(format!("{serial}-packed")), true)
                }
                None => (trove_bundle::pack::open_path(&slot.path)?, false),
            };
            Snapshot {
                dir,
                owned,
                fingerprint,
                version: String::new(),
                loaded_at: String::new(),
                load_secs: 0.0,
            }
        } else {
            match self.link_snapshot(i) {
                Ok(s) => s,
                Err(e) if disk_full(&e) => return Err(self.out_of_space(i, e)),
                Err(e) => return Err(self.in_bundle_terms(i, e)),
            }
        };
        let e = match Self::make_ready(slot, &mut snap) {
            Ok(()) => {
                snap.loaded_at = now_rfc3339();
                snap.load_secs = started.elapsed().as_secs_f64();
                return Ok(snap);
            }
            Err(e) => e,
        };
        if !disk_full(&e) {
            // Our folder goes when `snap` is dropped.
            return Err(self.in_bundle_terms(i, e));
        }
        // The disk beside the bundle is full: a pack is unpacked into the cache's shared copy
        // instead, as where no snapshot folder can be made.
        let fingerprint = snap.fingerprint.clone();
        drop(snap);
        if slot.packed
            && let Ok(dir) = trove_bundle::pack::open_path(&slot.path)
        {
            let mut shared = Snapshot {
                dir,
                owned: false,
                fingerprint,
                version: String::new(),
                loaded_at: String::new(),
                load_secs: 0.0,
            };
            if Self::make_ready(slot, &mut shared).is_ok() {
                shared.loaded_at = now_rfc3339();
                shared.load_secs = started.elapsed().as_secs_f64();
                return Ok(shared);
            }
        }
        Err(self.out_of_space(i, e))
    }

    /// Error `e`, a full disk while loading slot `i`, named as it is: the server's snapshot
    /// folder ran out of space, not the bundle.
    fn out_of_space(&self, i: usize, e: anyhow::Error) -> anyhow::Error {
        let at = self.roots[i]
            .as_ref()
            .map_or_else(|| self.slots[i].path.clone(), |(root, _)| root.clone());
        anyhow::anyhow!(
            "the disk of {} is full, where the server copies this version before serving it: \
             {e:#}; free space there and send SIGHUP (or wait a minute) to try again",
            at.display()
        )
    }

    /// Error `e` of loading slot `i` with its snapshot folders (`<root>/<serial>-…`, ours,
    /// removed with the failed version) named as the bundle they copy.
    fn in_bundle_terms(&self, i: usize, e: anyhow::Error) -> anyhow::Error {
        let text = format!("{e:#}");
        let Some((root, _)) = &self.roots[i] else {
            return anyhow::anyhow!("{text}");
        };
        let ours = format!("{}/[^/:\\s]+", regex::escape(&root.display().to_string()));
        match regex::Regex::new(&ours) {
            Ok(re) => anyhow::anyhow!(
                "{}",
                re.replace_all(
                    &text,
                    regex::NoExpand(&self.slots[i].path.display().to_string())
                )
            ),
            Err(_) => anyhow::anyhow!("{text}"),
        }
    }

    /// Fills snapshot `snap` of `slot` (a pack is unpacked into it), checks it and opens it: it
    /// must verify, open and answer a search before it is switched to.
    fn make_ready(slot: &Slot, snap: &mut Snapshot) -> anyhow::Result<()> {
        if slot.packed {
            if snap.owned {
                if snap.dir.exists() {
                    std::fs::remove_dir_all(&snap.dir)?;
                }
                trove_bundle::pack::unpack_into(&slot.path, &snap.dir)?;
            }
            let bytes = std::fs::read(snap.dir.join(trove_bundle::MANIFEST))?;
            snap.version = trove_base::util::sha256_hex(&bytes)[..16].to_string();
        }
        let report = trove_bundle::verify(&snap.dir).map_err(|e| {
            if e.kind() == trove_base::error::ErrorKind::DiskFull {
                anyhow::Error::new(e)
            } else {
                anyhow::anyhow!("verification failed: {e}")
            }
        })?;
        // Hashed once: the handles' own checks find the sums remembered.
        trove_bundle::pack::remember_bundle(&snap.dir, &report.manifest);
        let b = Bundle::open(&snap.dir).map_err(|e| anyhow::anyhow!("cannot open: {e}"))?;
        b.conn()
            .map_err(|e| anyhow::anyhow!("cannot open DuckDB: {e}"))?;
        search_all([&b], "main", &QueryOptions::unfiltered(Mode::Bm25, 1))
            .map_err(|e| anyhow::anyhow!("a test search failed: {e}"))?;
        Ok(())
    }

    /// Hard-links the files of slot `i`'s manifest, as read through one open handle of its
    /// directory (so a directory swapped in meanwhile cannot mix in), into a fresh directory of
    /// ours; where links cannot be made (another file system, no write access), the bundle is
    /// served in place.
    fn link_snapshot(&self, i: usize) -> anyhow::Result<Snapshot> {
        use rustix::fs::{AtFlags, CWD, Mode as FsMode, OFlags};
        let slot = &self.slots[i];
        let dirfd = rustix::fs::open(
            &slot.path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            FsMode::empty(),
        )
        .map_err(|e| anyhow::anyhow!("{}: cannot open: {e}", slot.path.display()))?;
        let bytes = read_at(&dirfd, trove_bundle::MANIFEST).map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot read {}: {e}",
                slot.path.display(),
                trove_bundle::MANIFEST
            )
        })?;
        let fingerprint = trove_base::util::sha256_hex(&bytes);
        let version = fingerprint[..16].to_string();
        let in_place = |why: String| {
            let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
            if !warned[i] {
                warned[i] = true;
                eprintln!(
                    "trove serve: {}: {why}; serving the bundle in place (a reload may fail requests in flight)",
                    slot.name
                );
            }
            Snapshot {
                dir: slot.path.clone(),
                owned: false,
                fingerprint: fingerprint.clone(),
                version: version.clone(),
                loaded_at: String::new(),
                load_secs: 0.0,
            }
        };
        let Some((root, _)) = &self.roots[i] else {
            return Ok(in_place(
                "no folder for snapshots can be made beside it".into(),
            ));
        };
        let serial = self.serial.fetch_add(1, Ordering::Relaxed) + 1;
        let dir = root.join(format!("{serial}-{}", &version[..8]));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        // From here the directory is ours: dropped (removed) on any failure.
        let snap = Snapshot {
            dir: dir.clone(),
            owned: true,
            fingerprint: fingerprint.clone(),
            version: version.clone(),
            loaded_at: String::new(),
            load_secs: 0.0,
        };
        let copy = dir.join(trove_bundle::MANIFEST);
        std::fs::write(&copy, &bytes).map_err(|e| trove_base::Error::io(&copy, e))?;
        let manifest = trove_bundle::read_manifest(&dir)?;
        for f in &manifest.files {
            let name = f.name.as_str();
            // The same rule `trove verify` and `trove sync` read manifests by.
            if !trove_bundle::is_bundle_file(name) || name == trove_bundle::MANIFEST {
                anyhow::bail!(
                    "{}: its manifest names a file {name:?}",
                    slot.path.display()
                );
            }
            // The views are derived from the manifest: `verify` writes them into the snapshot.
            // Linked, they could be the old ones, in the moment between an in-place run's
            // manifest commit and its views' rename, and the new version would be refused (for
            // a minute: the manifest does not change again).
            if name == trove_bundle::VIEWS {
                continue;
            }
            let to = dir.join(name);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            if let Err(e) = rustix::fs::linkat(&dirfd, name, CWD, &to, AtFlags::empty()) {
                if e == rustix::io::Errno::NOENT {
                    anyhow::bail!("{}: {name} is missing", slot.path.display());
                }
                drop(snap);
                return Ok(in_place(format!("cannot hard-link its files ({e})")));
            }
        }
        Ok(snap)
    }

    /// Opens `workers` handles per lane over the snapshots and warms each (DuckDB opened, caches
    /// loaded, one search run), as the next generation.
    fn open_generation(&self, snapshots: Vec<Arc<Snapshot>>) -> anyhow::Result<Generation> {
        let mut free: Vec<Tools> = Vec::with_capacity(2 * self.workers);
        let mut manifests = Vec::new();
        for w in 0..2 * self.workers {
            let mut bundles = Vec::with_capacity(snapshots.len());
            for (j, (s, slot)) in snapshots.iter().zip(&self.slots).enumerate() {
                let mut b = Bundle::open(&s.dir)
                    .map_err(|e| anyhow::anyhow!("{}: cannot open: {e}", slot.name))?;
                b.label = slot.name.clone();
                // One model per bundle, not per handle.
                if let Some(first) = free.first() {
                    b.share_embedder(&first.bundles()[j]);
                }
                b.conn()
                    .map_err(|e| anyhow::anyhow!("{}: cannot open DuckDB: {e}", slot.name))?;
                search_all([&b], "main", &QueryOptions::unfiltered(Mode::Bm25, 1))
                    .map_err(|e| anyhow::anyhow!("{}: a test search failed: {e}", slot.name))?;
                // A model embedder loads here, before the switch (a bundle whose embedder this
                // build cannot run still serves BM25, as `trove query` does).
                let warm = QueryOptions {
                    rerank: 0,
                    ..QueryOptions::unfiltered(Mode::Hybrid, 1)
                };
                let _ = search_all([&b], "main", &warm);
                if w == 0 {
                    manifests.push(b.manifest.clone());
                }
                bundles.push(b);
            }
            free.push(Tools::from_bundles(bundles).with_rerank(self.rerank));
        }
        let id = self.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(Generation {
            id,
            pools: [Pool::new(free.split_off(self.workers)), Pool::new(free)],
            snapshots,
            manifests,
        })
    }

    /// Looks at every slot's bundle on disk; those that changed (and did not fail before in the
    /// same version) are loaded and verified, and a new generation over them swapped in; failures
    /// are recorded in the slots' status.
    pub fn poll(&self, forced: bool) {
        let _one = self.polling.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.current();
        let mut snaps = current.snapshots.clone();
        let mut changed = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            // A bundle being replaced may be read half-way: a failure while the bundle keeps
            // changing is tried again at once, up to three times.
            for attempt in 0..3 {
                let fp = match self.fingerprint(i) {
                    Ok(f) => f,
                    Err(e) => {
                        // Logged and counted once a minute while it stays so, not every poll.
                        let told = slot.status().failed.as_ref().is_some_and(|f| {
                            f.fingerprint == UNREADABLE && std::time::Instant::now() < f.retry_at
                        });
                        if !told {
                            self.record_failure(i, UNREADABLE.into(), format!("{e:#}"));
                        }
                        break;
                    }
                };
                if fp == snaps[i].fingerprint {
                    // Back to the version served: nothing is wrong any more.
                    slot.status().failed = None;
                    break;
                }
                // SIGHUP (`forced`) tries a failed version again at once: the operator freed
                // the disk, or fixed what the error said.
                let failed_before = !forced
                    && slot.status().failed.as_ref().is_some_and(|f| {
                        f.fingerprint == fp && std::time::Instant::now() < f.retry_at
                    });
                if failed_before {
                    break;
                }
                match self.load(i) {
                    Ok(s) => {
                        changed.push((i, s.version.clone()));
                        snaps[i] = Arc::new(s);
                        break;
                    }
                    Err(e) => {
                        let still = self.fingerprint(i).ok().as_ref() == Some(&fp);
                        if still || attempt == 2 {
                            self.record_failure(i, fp, format!("{e:#}"));
                            break;
                        }
                    }
                }
            }
        }
        if changed.is_empty() {
            return;
        }
        let tried: Vec<String> = snaps.iter().map(|s| s.fingerprint.clone()).collect();
        match self.open_generation(snaps) {
            Ok(g) => {
                let id = g.id;
                for (i, v) in &changed {
                    let slot = &self.slots[*i];
                    {
                        let mut st = slot.status();
                        st.failed = None;
                        st.reloads_ok += 1;
                    }
                    let secs = g.snapshots[*i].load_secs;
                    eprintln!(
                        "trove serve: {} switched to version {v} (generation {id}; verified in {secs:.2} s)",
                        slot.name
                    );
                }
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(g);
            }
            Err(e) => {
                // Each version passed its own checks (`load`): this is the server's trouble (file
                // handles, memory), so the versions tried are tried again after the pause.
                for (i, _) in &changed {
                    let fp = tried[*i].clone();
                    self.record_failure(*i, fp, format!("{e:#}"));
                }
            }
        }
    }

    fn record_failure(&self, i: usize, fingerprint: String, message: String) {
        let slot = &self.slots[i];
        eprintln!(
            "trove serve: {}: not switched to the new version, still serving the old one: {message}",
            slot.name
        );
        let mut st = slot.status();
        st.reloads_failed += 1;
        st.failed = Some(Failure {
            fingerprint,
            message,
            at: now_rfc3339(),
            retry_at: std::time::Instant::now() + RETRY_FAILED,
        });
    }

    /// What identifies slot `i`'s bundle on disk now.
    fn fingerprint(&self, i: usize) -> anyhow::Result<String> {
        let slot = &self.slots[i];
        if slot.packed {
            return packed_fingerprint(&slot.path);
        }
        let p = slot.path.join(trove_bundle::MANIFEST);
        let bytes =
            std::fs::read(&p).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
        Ok(trove_base::util::sha256_hex(&bytes))
    }

    /// Removes this process's snapshot folders (at exit, after the last generation is gone).
    pub fn cleanup(&self) {
        for (r, _) in self.roots.iter().flatten() {
            let _ = std::fs::remove_dir_all(r);
        }
    }
}

/// Whether `e` is a write that found the disk (or the user's quota) full: by the kind of the
/// trove error or the OS error in its chain, never by its text.
fn disk_full(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(trove_base::error::disk_full)
            || crate::kind_of(c) == Some(trove_base::error::ErrorKind::DiskFull)
    })
}

/// A packed bundle's size, mtime and inode.
fn packed_fingerprint(p: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
    Ok(format!(
        "{}-{}.{}-{}",
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino()
    ))
}

/// The fingerprint a failure records when the bundle on disk cannot be read at all.
const UNREADABLE: &str = "unreadable";

/// How long a version that failed waits before it is tried again (when the bundle has not changed
/// meanwhile).
const RETRY_FAILED: std::time::Duration = std::time::Duration::from_secs(60);

/// The lock file inside a snapshot folder: held (locked) by the server using the folder.
const LOCK: &str = ".lock";

/// Makes `<parent>/.<name>.serve-<pid>-<nanos>-<i>`, beside the bundle so hard links stay on its
/// file system, with a locked `.lock` inside (no other server, in this or another PID namespace,
/// takes it for stale); first removes the folders of servers no longer running (whose lock can be
/// taken). `None` when no folder can be made there (read-only): the bundle is served in place.
fn claim_root(slot: &Slot, i: usize) -> Option<(PathBuf, std::fs::File)> {
    let abs = slot.path.canonicalize().ok()?;
    let parent = abs.parent()?;
    let base = abs.file_name()?.to_string_lossy().into_owned();
    let prefix = format!(".{base}.serve-");
    if let Ok(entries) = std::fs::read_dir(parent) {
        for e in entries.flatten() {
            if !e.file_name().to_string_lossy().starts_with(&prefix) {
                continue;
            }
            let stale = match std::fs::File::open(e.path().join(LOCK)) {
                Ok(f) => f.try_lock().is_ok(),
                // No lock file: a folder being made right now, or one left half-made long ago.
                Err(_) => e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > std::time::Duration::from_secs(3600)),
            };
            if stale {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let root = parent.join(format!("{prefix}{}-{nanos}-{i}", std::process::id()));
    std::fs::create_dir_all(&root).ok()?;
    let lock = std::fs::File::create(root.join(LOCK)).ok()?;
    if lock.lock().is_err() {
        let _ = std::fs::remove_dir_all(&root);
        return None;
    }
    Some((root, lock))
}

/// The file `name` in the directory `dir`: a regular file of at most a manifest's bound.
fn read_at(dir: &rustix::fd::OwnedFd, name: &str) -> std::io::Result<Vec<u8>> {
    use rustix::fs::{Mode as FsMode, OFlags};
    // Opened without blocking (a FIFO there would hold the reload thread), then read by the rule
    // every bundle manifest is read by: a regular file of bounded size.
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        FsMode::empty(),
    )?;
    trove_bundle::read_small_from(std::fs::File::from(fd), trove_bundle::MAX_MANIFEST_BYTES)
}
