//! The embedding cache: model vectors keyed by (model fingerprint, hash of the embedded text), so
//! re-runs, incremental runs and runs with another chunking config never send the same text to a
//! model twice.
//!
//! Layout: `<cache>/embeddings/<fingerprint>/`, one segment per process that wrote: `NAME.keys`
//! (16-byte text keys) and `NAME.vecs` (`dim` little-endian f32 per key, in the same order). A
//! process appends to its own segment only, so concurrent runs never share a file; a segment cut
//! short by a crash is read up to its last whole record. Reads are positioned reads of one record.
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
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut names: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "keys"))
            .collect();
        names.sort();
        for keys_path in names {
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
                (Ok(vecs), Ok(keys)) => *w = Some((BufWriter::new(vecs), BufWriter::new(keys))),
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
}
