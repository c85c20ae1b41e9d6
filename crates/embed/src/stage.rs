//! The embed stage: how the pipeline's workers reach a backend.
//!
//! Input: one file's chunk texts at a time, from any worker. Output: their vectors, in order,
//! L2-normalised and checked (count, dimension, finite values). On the way: the embedding cache
//! (a hit is never sent to the backend), and, for backends with [`Limits`], a queue that a few
//! dispatcher threads drain, batching the texts of many files into calls of up to `max_batch`
//! texts / `max_batch_tokens` estimated tokens, `concurrency` calls at once. A failed call fails
//! every file in it: the run stops rather than ship a bundle with chunks missing.
use crossbeam_channel::{Receiver, Sender, unbounded};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cache::{Cache, text_key};
use super::{Embedder, Limits, normalize};
use crate::{Error, Result};
use trove_base::error::ErrorKind;

/// How long a dispatcher waits for more files' texts before calling with a part-full batch.
const LINGER: Duration = Duration::from_millis(5);

/// A batch's vectors, or its failure's kind and message.
type BatchAnswer = std::result::Result<Vec<Vec<f32>>, (ErrorKind, String)>;

/// One worker's request: its texts and where to send their vectors.
struct Job {
    texts: Vec<String>,
    /// The vectors, or the failure of the batch (its kind and message: one failure answers
    /// every job of the batch, and an error is not `Clone`).
    reply: Sender<BatchAnswer>,
}

/// Counters shared with the dispatchers.
#[derive(Default)]
struct Shared {
    calls: AtomicU64,
    texts: AtomicU64,
    /// Chunks with a text sent to the backend (a chunk with windows has several texts).
    chunks: AtomicU64,
    /// Chunks whose end no window reached (`window_texts` ran out of windows).
    beyond: AtomicU64,
    hits: AtomicU64,
    est_tokens: AtomicU64,
    /// (calls in flight, since when some call has been in flight, busy time before that).
    busy: Mutex<(usize, Option<Instant>, Duration)>,
}

impl Shared {
    /// Runs one backend call, counting it and the time some call was in flight.
    fn call(&self, backend: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let tokens: usize = texts.iter().map(|t| t.len().div_ceil(4)).sum();
        self.counted(texts.len(), tokens, || backend.embed(texts))
    }

    /// Runs `f`, a call of `texts` texts of `tokens` estimated tokens, counting it as [`Shared::call`].
    fn counted<R>(&self, texts: usize, tokens: usize, f: impl FnOnce() -> R) -> R {
        if let Ok(mut b) = self.busy.lock() {
            if b.0 == 0 {
                b.1 = Some(Instant::now());
            }
            b.0 += 1;
        }
        self.calls.fetch_add(1, Relaxed);
        self.texts.fetch_add(texts as u64, Relaxed);
        self.est_tokens.fetch_add(tokens as u64, Relaxed);
        let r = f();
        if let Ok(mut b) = self.busy.lock() {
            b.0 -= 1;
            if b.0 == 0
                && let Some(t) = b.1.take()
            {
                b.2 += t.elapsed();
            }
        }
        r
    }
}

/// What the stage did, for the run's summary and progress lines.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EmbedStats {
    /// Calls to the backend.
    pub calls: u64,
    /// Texts sent to the backend.
    pub texts: u64,
    /// Chunks embedded: those with at least one text sent to the backend (a long chunk's
    /// windows are texts of their own: `texts` counts them all).
    pub chunks: u64,
    /// Texts answered by the embedding cache.
    pub cache_hits: u64,
    /// Tokens embedded: the backend's count, else an estimate (characters / 4).
    pub tokens: u64,
    /// Seconds during which at least one call was in flight.
    pub busy_secs: f64,
    /// Counted warnings by kind (truncated inputs, retried calls).
    pub warnings: Vec<(String, u64)>,
    /// What ran the model (`local`: ONNX Runtime or candle, and why not ONNX Runtime).
    pub runtime: Option<String>,
}

impl EmbedStats {
    /// Texts per second of embedding time.
    pub fn chunks_per_sec(&self) -> f64 {
        self.texts as f64 / self.busy_secs.max(1e-9)
    }
    /// Tokens per second of embedding time.
    pub fn tokens_per_sec(&self) -> f64 {
        self.tokens as f64 / self.busy_secs.max(1e-9)
    }
}

/// The pipeline's handle on a backend (see the module docs).
pub struct EmbedStage {
    backend: Arc<dyn Embedder>,
    cache: Option<Cache>,
    queue: Mutex<Option<Sender<Job>>>,
    dispatchers: Mutex<Vec<JoinHandle<()>>>,
    shared: Arc<Shared>,
    limits: Option<Limits>,
}

impl EmbedStage {
    /// Wraps `backend`; with `cache_root`, model vectors are cached under it.
    pub fn new(backend: Box<dyn Embedder>, cache_root: Option<&Path>) -> Self {
        let backend: Arc<dyn Embedder> = Arc::from(backend);
        let limits = backend.limits();
        let cache = match (cache_root, limits) {
            // Inline backends (hash) are cheaper to run than to look up.
            (Some(root), Some(_)) => Cache::open(root, &backend.fingerprint(), backend.dim()),
            _ => None,
        };
        let shared = Arc::new(Shared::default());
        let mut dispatchers = Vec::new();
        let queue = limits.map(|l| {
            let (tx, rx) = unbounded::<Job>();
            for i in 0..l.concurrency.max(1) {
                let (rx, backend, shared) = (rx.clone(), backend.clone(), shared.clone());
                if let Ok(h) = std::thread::Builder::new()
                    .name(format!("trove-embed-{i}"))
                    .spawn(move || dispatch(&rx, &*backend, &shared, l))
                {
                    dispatchers.push(h);
                }
            }
            tx
        });
        EmbedStage {
            backend,
            cache,
            queue: Mutex::new(queue.filter(|_| !dispatchers.is_empty())),
            dispatchers: Mutex::new(dispatchers),
            shared,
            limits,
        }
    }

    /// The backend.
    pub fn backend(&self) -> &dyn Embedder {
        &*self.backend
    }

    /// Worker threads worth adding to the pipeline's, so that several files' texts wait in the
    /// queue at once and calls are full (0 for inline backends).
    pub fn extra_workers(&self) -> usize {
        self.limits.map_or(0, |l| (l.concurrency * 4).clamp(4, 32))
    }

    /// The hash backend when the stage calls it inline with no cache (the default): the caller
    /// may then make the vectors itself from token hashes it has (see [`EmbedStage::embed_inline`]).
    pub fn inline_hash(&self) -> Option<&super::HashEmbedder> {
        if self.cache.is_some() || self.limits.is_some() {
            return None;
        }
        self.backend.as_hash()
    }

    /// What [`EmbedStage::embed_chunks`] gives for chunks of one text each, of these byte
    /// lengths, `make` giving the vectors the backend would ([`EmbedStage::inline_hash`] only):
    /// counted, checked and normalised the same way.
    pub fn embed_inline(
        &self,
        text_lens: impl Iterator<Item = usize>,
        make: impl FnOnce() -> Vec<Vec<f32>>,
    ) -> Result<Vec<Vec<f32>>> {
        let (mut n, mut tokens) = (0, 0);
        for len in text_lens {
            n += 1;
            tokens += len.div_ceil(4);
        }
        if n == 0 {
            return Ok(Vec::new());
        }
        self.shared.chunks.fetch_add(n as u64, Relaxed);
        let mut vectors = self.shared.counted(n, tokens, make);
        self.check_count(vectors.len(), n)?;
        for v in &mut vectors {
            self.check(v)?;
            normalize(v);
        }
        Ok(vectors)
    }

    /// A backend answered `texts` texts with one vector each.
    fn check_count(&self, vectors: usize, texts: usize) -> Result<()> {
        if vectors == texts {
            return Ok(());
        }
        Err(Error::Vectors {
            backend: self.backend.backend().to_string(),
            msg: format!("{vectors} vectors for {texts} texts"),
        })
    }

    /// A backend's vector is of the stage's dimension and finite.
    fn check(&self, v: &[f32]) -> Result<()> {
        let dim = self.backend.dim();
        if v.len() != dim {
            return Err(Error::Vectors {
                backend: self.backend.backend().to_string(),
                msg: format!("a vector of dimension {} (expected {dim})", v.len()),
            });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(Error::Vectors {
                backend: self.backend.backend().to_string(),
                msg: "a vector with NaN or infinite values".to_string(),
            });
        }
        Ok(())
    }

    /// The vectors of each chunk's texts ([`super::window_texts`]): its first text's, and the
    /// rest's one after another. `beyond`: how many of these chunks have an end that no window
    /// reached (counted as the warning `beyond-windows`).
    pub fn embed_chunks(
        &self,
        texts: &[Vec<String>],
        beyond: u64,
    ) -> Result<Vec<(Vec<f32>, Vec<f32>)>> {
        let flat: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
        let (vectors, missed) = self.embed_missed(&flat)?;
        // A chunk is embedded when one of its texts was sent (missed is in ascending order).
        let mut missed = missed.into_iter().peekable();
        let (mut at, mut embedded) = (0, 0);
        for t in texts {
            let end = at + t.len();
            if missed.peek().is_some_and(|&i| i < end) {
                embedded += 1;
                while missed.peek().is_some_and(|&i| i < end) {
                    missed.next();
                }
            }
            at = end;
        }
        self.shared.chunks.fetch_add(embedded, Relaxed);
        self.shared.beyond.fetch_add(beyond, Relaxed);
        let mut vectors = vectors.into_iter();
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vectors.by_ref().take(t.len());
                let first = v.next().unwrap_or_default();
                (first, v.flatten().collect())
            })
            .collect())
    }

    /// Vectors for `texts`, in order (see the module docs), and which texts (by index, ascending)
    /// the cache did not have.
    fn embed_missed(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, Vec<usize>)> {
        if texts.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        let keys: Vec<u128> = match &self.cache {
            Some(c) => {
                let keys: Vec<u128> = texts.iter().map(|t| text_key(t)).collect();
                for (slot, k) in out.iter_mut().zip(&keys) {
                    *slot = c.get(*k);
                }
                keys
            }
            None => Vec::new(),
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        self.shared
            .hits
            .fetch_add((texts.len() - missing.len()) as u64, Relaxed);
        if missing.is_empty() {
            return Ok((out.into_iter().flatten().collect(), missing));
        }
        let ask: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
        let sender = self.queue.lock().ok().and_then(|q| q.clone());
        let vectors = match sender {
            Some(q) => {
                let (tx, rx) = crossbeam_channel::bounded(1);
                q.send(Job {
                    texts: ask.iter().map(|t| t.to_string()).collect(),
                    reply: tx,
                })
                .map_err(|_| Error::internal("the embedding queue has stopped"))?;
                rx.recv()
                    .map_err(|_| Error::internal("an embedding dispatcher stopped"))?
                    .map_err(|(kind, msg)| Error::failed(kind, msg))?
            }
            None => self.shared.call(&*self.backend, &ask)?,
        };
        self.check_count(vectors.len(), ask.len())?;
        for (&i, mut v) in missing.iter().zip(vectors) {
            self.check(&v)?;
            normalize(&mut v);
            if let Some(c) = &self.cache {
                c.put(keys[i], &v);
            }
            out[i] = Some(v);
        }
        Ok((out.into_iter().flatten().collect(), missing))
    }

    /// Stops the dispatchers and writes the cache out.
    pub fn finish(&self) {
        if let Ok(mut q) = self.queue.lock() {
            q.take();
        }
        if let Ok(mut d) = self.dispatchers.lock() {
            for h in d.drain(..) {
                let _ = h.join();
            }
        }
        if let Some(c) = &self.cache {
            c.flush();
        }
    }

    /// What the stage has done so far.
    pub fn stats(&self) -> EmbedStats {
        let busy = self
            .shared
            .busy
            .lock()
            .map(|b| b.2 + b.1.map_or(Duration::ZERO, |t| t.elapsed()))
            .unwrap_or_default();
        let c = self.backend.counters();
        let mut warnings = c.warnings;
        warnings.push(("beyond-windows".into(), self.shared.beyond.load(Relaxed)));
        if let Some(cache) = &self.cache
            && let Some(w) = cache.write_failures()
        {
            warnings.push(("cache-write-failed".into(), w));
        }
        EmbedStats {
            calls: self.shared.calls.load(Relaxed),
            texts: self.shared.texts.load(Relaxed),
            chunks: self.shared.chunks.load(Relaxed),
            cache_hits: self.shared.hits.load(Relaxed),
            tokens: c
                .tokens
                .unwrap_or_else(|| self.shared.est_tokens.load(Relaxed)),
            busy_secs: busy.as_secs_f64(),
            warnings: warnings.into_iter().filter(|(_, n)| *n > 0).collect(),
            runtime: self.backend.runtime(),
        }
    }
}

impl Drop for EmbedStage {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A dispatcher: takes the jobs waiting (lingering briefly for a fuller batch), sorts their texts
/// by length (less padding for models), calls the backend in batches within the limits, and
/// answers every job.
fn dispatch(rx: &Receiver<Job>, backend: &dyn Embedder, shared: &Shared, l: Limits) {
    while let Ok(first) = rx.recv() {
        let mut n = first.texts.len();
        let mut jobs = vec![first];
        let deadline = Instant::now() + LINGER;
        while n < l.max_batch {
            match rx.recv_deadline(deadline) {
                Ok(j) => {
                    n += j.texts.len();
                    jobs.push(j);
                }
                Err(_) => break,
            }
        }
        let mut items: Vec<(usize, usize)> = jobs
            .iter()
            .enumerate()
            .flat_map(|(j, job)| (0..job.texts.len()).map(move |i| (j, i)))
            .collect();
        items.sort_by_key(|&(j, i)| std::cmp::Reverse(jobs[j].texts[i].len()));
        let mut results: Vec<Vec<Option<Vec<f32>>>> =
            jobs.iter().map(|j| vec![None; j.texts.len()]).collect();
        let mut failed: Option<(ErrorKind, String)> = None;
        let mut start = 0;
        while start < items.len() && failed.is_none() {
            let mut end = start;
            let mut tokens = 0;
            while end < items.len() && end - start < l.max_batch.max(1) {
                let (j, i) = items[end];
                let t = jobs[j].texts[i].len().div_ceil(4);
                if end > start && tokens + t > l.max_batch_tokens {
                    break;
                }
                tokens += t;
                end += 1;
            }
            let batch: Vec<&str> = items[start..end]
                .iter()
                .map(|&(j, i)| jobs[j].texts[i].as_str())
                .collect();
            match shared.call(backend, &batch) {
                Ok(vs) if vs.len() == batch.len() => {
                    for (&(j, i), v) in items[start..end].iter().zip(vs) {
                        results[j][i] = Some(v);
                    }
                }
                Ok(vs) => {
                    failed = Some((
                        ErrorKind::Internal,
                        format!(
                            "embedder {} returned {} vectors for {} texts",
                            backend.backend(),
                            vs.len(),
                            batch.len()
                        ),
                    ))
                }
                Err(e) => failed = Some((e.kind(), e.to_string())),
            }
            start = end;
        }
        for (job, r) in jobs.into_iter().zip(results) {
            let answer = match &failed {
                Some(e) => Err(e.clone()),
                None => Ok(r.into_iter().flatten().collect()),
            };
            let _ = job.reply.send(answer);
        }
    }
}
