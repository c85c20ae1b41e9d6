//! The embedding cache: model vectors keyed by (model fingerprint, hash of the embedded text), so
//! re-runs, incremental runs and runs with another chunking config never send the same text to a
//! model twice.
//!
//! Layout: `<cache>/embeddings/<fingerprint>/`, one segment per process that wrote: `NAME.keys`
//! (16-byte text keys) and `NAME.vecs` (`dim` little-endian f32 per key, in the same order). A
//! process appends to its own segment only, so concurrent runs never share a file; a segment cut
//! short by a crash is read up to its last whole record. Reads are positioned reads of one record.
//!
//! Every run that embeds something adds a segment, and a run keeps each segment open: past
//! [`MAX_SEGMENTS`], the run that opens the cache first merges the finished ones (those no live
//! writer holds: a writer keeps its `.keys` file locked) into one, each key once, so the files a
//! run opens stay bounded however many runs came before (a thousand nightly runs used to need a
//! thousand open files, and failed under a 1024 limit).
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The cache key of a text: the first 16 bytes of its sha256.
pub fn text_key(text: &str) -> u128 {
    use sha2::Digest;
    let d = sha2::Sha256::digest(text.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    u128::from_le_bytes(b)
}

/// An open cache for one embedder.
pub struct Cache {
    dir: PathBuf,
    dim: usize,
    segments: Vec<File>,
    index: FxHashMap<u128, (u32, u64)>,
    writer: Mutex<Option<(BufWriter<File>, BufWriter<File>)>>,
    failed_writes: AtomicU64,
}

impl Cache {
    /// Opens (creating) the cache of the embedder `fingerprint` under `root`; `None` when the
    /// directory cannot be made (the run goes on without a cache).
    pub fn open(root: &Path, fingerprint: &str, dim: usize) -> Option<Cache> {
        let name: String = fingerprint
            .chars()
            .filter(char::is_ascii_hexdigit)
            .collect();
        let dir = root.join("embeddings").join(format!("{name}-{dim}"));
        std::fs::create_dir_all(&dir).ok()?;
        merge_segments(&dir, 4 * dim as u64);
        let mut c = Cache {
            dir,
            dim,
            segments: Vec::new(),
            index: FxHashMap::default(),
            writer: Mutex::new(None),
            failed_writes: AtomicU64::new(0),
        };
        c.load();
        Some(c)
    }

    fn record_bytes(&self) -> u64 {
        4 * self.dim as u64
    }

    /// Indexes every whole record of every segment.
    fn load(&mut self) {
        for keys_path in segment_keys(&self.dir) {
            let (Ok(keys), Ok(vecs)) = (
                std::fs::read(&keys_path),
                File::open(keys_path.with_extension("vecs")),
            ) else {
                continue;
            };
            let Ok(len) = vecs.metadata().map(|m| m.len()) else {
                continue;
            };
            let n = (keys.len() as u64 / 16).min(len / self.record_bytes());
            let seg = self.segments.len() as u32;
            for (row, k) in keys.chunks_exact(16).take(n as usize).enumerate() {
                let mut b = [0u8; 16];
                b.copy_from_slice(k);
                self.index
                    .entry(u128::from_le_bytes(b))
                    .or_insert((seg, row as u64));
            }
            self.segments.push(vecs);
        }
    }

    /// The cached vector of `key`, if any (a record that cannot be read, or holds non-finite
    /// values, is a miss).
    pub fn get(&self, key: u128) -> Option<Vec<f32>> {
        let &(seg, row) = self.index.get(&key)?;
        let mut buf = vec![0u8; self.record_bytes() as usize];
        self.segments[seg as usize]
            .read_exact_at(&mut buf, row * self.record_bytes())
            .ok()?;
        let v: Vec<f32> = buf
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        v.iter().all(|x| x.is_finite()).then_some(v)
    }

    /// Appends `v` under `key` to this process's segment (created on first use). A write that
    /// fails is counted, never fatal.
    pub fn put(&self, key: u128, v: &[f32]) {
        if v.len() != self.dim {
            return;
        }
        let Ok(mut w) = self.writer.lock() else {
            return;
        };
        if w.is_none() {
            let stem = format!(
                "{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            );
            let open = |ext: &str| File::create(self.dir.join(format!("{stem}.{ext}")));
            match (open("vecs"), open("keys")) {
                (Ok(vecs), Ok(keys)) => {
                    // Held while this process runs: a merge leaves a segment being written.
                    let _ = rustix::fs::flock(
                        &keys,
                        rustix::fs::FlockOperation::NonBlockingLockExclusive,
                    );
                    *w = Some((BufWriter::new(vecs), BufWriter::new(keys)));
                }
                _ => {
                    self.failed_writes.fetch_add(1, Relaxed);
                    return;
                }
            }
        }
        let Some((vecs, keys)) = w.as_mut() else {
            return;
        };
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        if vecs.write_all(&bytes).is_err() || keys.write_all(&key.to_le_bytes()).is_err() {
            self.failed_writes.fetch_add(1, Relaxed);
        }
    }

    /// Writes buffered records out (vectors before keys, so a key never outlives its vector).
    pub fn flush(&self) {
        if let Ok(mut w) = self.writer.lock()
            && let Some((vecs, keys)) = w.as_mut()
            && (vecs.flush().is_err() || keys.flush().is_err())
        {
            self.failed_writes.fetch_add(1, Relaxed);
        }
    }

    /// Writes that failed, if any.
    pub fn write_failures(&self) -> Option<u64> {
        let n = self.failed_writes.load(Relaxed);
        (n > 0).then_some(n)
    }
}

/// Segments past which a run merges the finished ones (see the module docs).
pub const MAX_SEGMENTS: usize = 16;

/// The `.keys` files of the segments in `dir`, sorted.
fn segment_keys(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "keys"))
        .collect();
    names.sort();
    names
}

/// Merges the finished segments of `dir` into one when there are more than [`MAX_SEGMENTS`]:
/// one merge at a time (a lock file), segments a live writer holds (or a minute old) left
/// alone, each key once
/// (the first, as [`Cache::load`] takes it), vectors written before keys (a reader meanwhile
/// sees whole records only), then the merged segments removed (a process that opened one reads
/// on through its open file). Any failure leaves what was there; a cache is only ever a speed-up.
fn merge_segments(dir: &Path, record: u64) {
    use rustix::fs::{FlockOperation, flock};
    use std::io::Read;
    if record == 0 || segment_keys(dir).len() <= MAX_SEGMENTS {
        return;
    }
    let Ok(lock) = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".merge.lock"))
    else {
        return;
    };
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        return;
    }
    // Finished segments: a writer locks its own at creation and holds it while it runs (one a
    // minute old or younger may be one that is being created). Checked one at a time, so a
    // merge opens a few files at once however many segments there are.
    let recent = std::time::Duration::from_secs(60);
    let finished: Vec<PathBuf> = segment_keys(dir)
        .into_iter()
        .filter(|k| {
            File::open(k).is_ok_and(|f| {
                let old = f
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > recent));
                old && flock(&f, FlockOperation::NonBlockingLockExclusive).is_ok()
            })
        })
        .collect();
    if finished.len() < 2 {
        return;
    }
    let stem = format!(
        "merged-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let (vecs_path, keys_path) = (
        dir.join(format!("{stem}.vecs")),
        dir.join(format!("{stem}.keys")),
    );
    let merged = (|| -> std::io::Result<()> {
        let mut seen: rustc_hash::FxHashSet<u128> = rustc_hash::FxHashSet::default();
        let mut keys_out: Vec<u8> = Vec::new();
        let mut vecs = BufWriter::new(File::create_new(&vecs_path)?);
        let mut buf = vec![0u8; record as usize];
        for k in &finished {
            let keys = std::fs::read(k)?;
            let mut v = std::io::BufReader::new(File::open(k.with_extension("vecs"))?);
            for key in keys.chunks_exact(16) {
                // Up to the last whole record (a segment cut short by a crash).
                if v.read_exact(&mut buf).is_err() {
                    break;
                }
                let mut b = [0u8; 16];
                b.copy_from_slice(key);
                if seen.insert(u128::from_le_bytes(b)) {
                    vecs.write_all(&buf)?;
                    keys_out.extend_from_slice(key);
                }
            }
        }
        vecs.flush()?;
        vecs.get_ref().sync_all()?;
        let mut keys = File::create_new(&keys_path)?;
        keys.write_all(&keys_out)?;
        keys.sync_all()
    })();
    if merged.is_err() {
        let _ = std::fs::remove_file(&keys_path);
        let _ = std::fs::remove_file(&vecs_path);
        return;
    }
    for k in &finished {
        let _ = std::fs::remove_file(k);
        let _ = std::fs::remove_file(k.with_extension("vecs"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_torn_segment() {
        let root = tempfile::tempdir().unwrap();
        let c = Cache::open(root.path(), "abc", 4).unwrap();
        c.put(text_key("a"), &[1.0, 2.0, 3.0, 4.0]);
        c.put(text_key("b"), &[5.0, 6.0, 7.0, 8.0]);
        c.flush();
        drop(c);
        let c = Cache::open(root.path(), "abc", 4).unwrap();
        assert_eq!(c.get(text_key("b")), Some(vec![5.0, 6.0, 7.0, 8.0]));
        assert_eq!(c.get(text_key("z")), None);
        // Another fingerprint or dim is another cache.
        assert!(Cache::open(root.path(), "abd", 4).unwrap().index.is_empty());
        // A crash mid-record: the last vector is cut short; it is forgotten, the first kept.
        let dir = root.path().join("embeddings/abc-4");
        let vecs = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "vecs"))
            .unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&vecs).unwrap();
        f.set_len(16 + 7).unwrap();
        let c = Cache::open(root.path(), "abc", 4).unwrap();
        assert_eq!(c.get(text_key("a")), Some(vec![1.0, 2.0, 3.0, 4.0]));
        assert_eq!(c.get(text_key("b")), None);
    }

    #[test]
    fn many_segments_are_merged_into_one_and_a_live_writers_is_left() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("embeddings/abc-2");
        // One segment per run, as 40 runs leave them (written here as a run writes them).
        for i in 0..40u32 {
            let stem = dir.join(format!("{i:04}"));
            std::fs::create_dir_all(&dir).unwrap();
            let v = [i as f32, 1.0, 7.0, 8.0];
            let mut vecs: Vec<u8> = v[..2].iter().flat_map(|x| x.to_le_bytes()).collect();
            let mut keys = text_key(&i.to_string()).to_le_bytes().to_vec();
            // Every segment also holds one shared text, and the last record of some is torn.
            vecs.extend(v[2..].iter().flat_map(|x| x.to_le_bytes()));
            keys.extend(text_key("shared").to_le_bytes());
            if i % 10 == 3 {
                vecs.truncate(12);
            }
            std::fs::write(stem.with_extension("vecs"), vecs).unwrap();
            std::fs::write(stem.with_extension("keys"), keys).unwrap();
        }
        // Segments a minute old or younger may be being created: left; older ones are merged.
        let age = |d: &Path| {
            for k in segment_keys(d) {
                let f = File::options().write(true).open(k).unwrap();
                f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(120))
                    .unwrap();
            }
        };
        assert_eq!(
            Cache::open(root.path(), "abc", 2).unwrap().segments.len(),
            40
        );
        age(&dir);
        // A live writer's segment (locked) is not merged.
        let live = Cache::open(root.path(), "abc", 2).unwrap();
        let before: Vec<_> = segment_keys(&dir);
        assert_eq!(before.len(), 1, "{before:?}");
        live.put(text_key("live"), &[3.0, 4.0]);
        live.flush();
        for i in 0..20u32 {
            let stem = dir.join(format!("x{i:04}"));
            std::fs::write(stem.with_extension("vecs"), [0u8; 8]).unwrap();
            std::fs::write(
                stem.with_extension("keys"),
                text_key(&format!("x{i}")).to_le_bytes(),
            )
            .unwrap();
        }
        age(&dir);
        let c = Cache::open(root.path(), "abc", 2).unwrap();
        let after = segment_keys(&dir);
        assert_eq!(after.len(), 2, "{after:?}");
        assert_eq!(c.get(text_key("live")), Some(vec![3.0, 4.0]));
        for i in 0..40u32 {
            assert_eq!(c.get(text_key(&i.to_string())), Some(vec![i as f32, 1.0]));
        }
        assert_eq!(c.get(text_key("shared")), Some(vec![7.0, 8.0]));
        assert_eq!(c.get(text_key("x7")), Some(vec![0.0, 0.0]));
        // 40 + 1 shared + 20: each key once in the merged segment.
        let n: u64 = after
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len() / 16)
            .sum();
        assert_eq!(n, 40 + 1 + 20 + 1, "{after:?}");
        drop(live);
    }
}
