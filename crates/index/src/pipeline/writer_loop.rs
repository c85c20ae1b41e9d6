//! The threads of a build: a feeder hands the files that need reading to N workers through a
//! bounded channel, and the calling thread, the writer, takes their answers in any order and
//! writes them in path order, with the files no worker had (carried or skipped unread) in their
//! turn.
use crossbeam_channel::{Receiver, Sender, bounded};
use rustc_hash::FxHashSet;
use std::collections::HashMap;
use std::thread::{Scope, ScopedJoinHandle};

use super::hooks;
use super::incremental::Reuse;
use super::progress::Running;
use super::report::IndexSummary;
use super::route::FileRoute;
use super::timings::{Clock, Stage};
use super::worker::{FileProcessor, FileResult};
use crate::source::{Candidate, SkipReason, Skipped};
use crate::writer::BundleWriter;
use crate::{Error, Result};

/// Files read, chunked or waiting for the writer at any one time: bounds memory (each holds one
/// file's text and chunks; files are at most `max_file_bytes`) while keeping every core busy even
/// when one large file holds up the in-order writer. 256 cost ~10% more peak memory than 64 on the
/// crates corpus for no speed gain.
pub const WINDOW_FILES: usize = 64;

/// The writer's side of a build: the walked files and their routes, where their rows go, what
/// it counts, and how far it got.
pub(super) struct InOrderWriter<'w, 'b> {
    /// The walked files, in path order.
    files: &'w [Candidate],
    /// Each file's route, by its place in `files`.
    routes: &'b [FileRoute<'b>],
    /// The base bundle's rows (incremental runs).
    reuse: Option<&'w Reuse>,
    /// The segment being written.
    writer: &'b mut BundleWriter,
    /// The run's summary, counted file by file.
    summary: &'b mut IndexSummary,
    /// The progress display, advanced file by file.
    progress: &'b Running,
    /// The embedding part of a progress line.
    embed_progress: &'b dyn Fn() -> String,
    /// The per-stage account.
    clock: &'b Clock,
    /// Files kept as the base bundle has them (their rows stay in its segments).
    kept: FxHashSet<&'w str>,
    /// Files skipped when read.
    read_skips: Vec<Skipped>,
    /// The place in `files` of the next file to write.
    next: usize,
    /// Files written.
    written: u64,
}

impl<'w, 'b> InOrderWriter<'w, 'b> {
    /// A writer of `files` (routed by `routes`) into `writer`, nothing written yet; `shown`: the
    /// progress display and the embedding part of its line.
    pub(super) fn new(
        files: &'w [Candidate],
        routes: &'b [FileRoute<'b>],
        reuse: Option<&'w Reuse>,
        writer: &'b mut BundleWriter,
        summary: &'b mut IndexSummary,
        shown: (&'b Running, &'b dyn Fn() -> String),
        clock: &'b Clock,
    ) -> Self {
        let (progress, embed_progress) = shown;
        InOrderWriter {
            files,
            routes,
            reuse,
            writer,
            summary,
            progress,
            embed_progress,
            clock,
            kept: FxHashSet::default(),
            read_skips: Vec::new(),
            next: 0,
            written: 0,
        }
    }

    /// Writes the workers' `results` as they arrive, each in its turn, then the files at the end
    /// that no worker had; hands a token back on `tok_tx` per worker's file written.
    fn write_results(
        &mut self,
        results: &Receiver<(usize, FileResult)>,
        tok_tx: &Sender<()>,
    ) -> Result<()> {
        let mut pending: HashMap<usize, FileResult> = HashMap::new();
        // The results, then nothing: the files at the end that no worker had. The time spent
        // waiting for the next is the writer's idle time.
        let clock = self.clock;
        let waiting = std::cell::Cell::new(std::time::Instant::now());
        let results = std::iter::from_fn(|| {
            let got = results.recv().ok();
            clock.writer_waited(waiting.get().elapsed());
            got
        })
        .map(Some)
        .chain(std::iter::once(None));
        for got in results {
            if let Some((i, r)) = got {
                pending.insert(i, r);
            }
            self.write_ready(&mut pending, tok_tx)?;
            waiting.set(std::time::Instant::now());
        }
        Ok(())
    }

    /// Writes the files whose turn has come and whose answer is known (`pending`: the workers'
    /// answers not yet written, by place), in order.
    fn write_ready(
        &mut self,
        pending: &mut HashMap<usize, FileResult>,
        tok_tx: &Sender<()>,
    ) -> Result<()> {
        loop {
            let (r, from_worker) = match self.routes.get(self.next) {
                Some(FileRoute::Carried) => (FileResult::Carried, false),
                Some(FileRoute::Skipped(k)) => (FileResult::Skipped((*k).clone()), false),
                _ => match pending.remove(&self.next) {
                    Some(r) => (r, true),
                    None => return Ok(()),
                },
            };
            self.write_next(r)?;
            if from_worker {
                let _ = tok_tx.send(());
            }
        }
    }

    /// Writes the answer `r` for the next file: its rows, its skipped row, or its base rows
    /// kept; counts it, advances the progress and asks the fail point.
    fn write_next(&mut self, r: FileResult) -> Result<()> {
        let files = self.files;
        let bytes = files[self.next].bytes.unwrap_or(0);
        self.next += 1;
        let record = match r {
            FileResult::Indexed(f) => Ok(Some(*f)),
            FileResult::Skipped(sk) => {
                self.read_skips.push(sk);
                Ok(None)
            }
            // The file's path before the message; the failure keeps its kind (a server's is
            // remote, not internal).
            FileResult::Failed(e) => Err(Error::failed(
                e.kind(),
                format!("{}: {e}", files[self.next - 1].rel),
            )),
            FileResult::Carried => {
                let rel = &files[self.next - 1].rel;
                match self.reuse.and_then(|r| r.files.get(rel)) {
                    Some(row) => {
                        self.summary.count_kept(row);
                        self.kept.insert(rel);
                        Ok(None)
                    }
                    None => Err(Error::internal(format!("{rel}: kept without a base row"))),
                }
            }
        };
        record.and_then(|f| match f {
            Some(f) => {
                self.summary.count(&f);
                let started = std::time::Instant::now();
                let added = self.writer.add_file(f);
                self.clock.add(Stage::Encode, started.elapsed());
                added
            }
            None => Ok(()),
        })?;
        self.written += 1;
        self.progress.advance(bytes, self.embed_progress);
        hooks::file_written(self.written)
    }
}

/// Runs the build's files through `threads` workers (each file `processor` answers for) and
/// writes them in path order with `out`, at most [`WINDOW_FILES`] in flight (a token per file,
/// returned as it is written). Returns the files kept from the base bundle and the files skipped
/// when read.
pub(super) fn write_in_path_order<'w>(
    threads: usize,
    processor: &FileProcessor<'_>,
    mut out: InOrderWriter<'w, '_>,
) -> Result<(FxHashSet<&'w str>, Vec<Skipped>)> {
    std::thread::scope(|s| -> Result<()> {
        let (task_tx, task_rx) = bounded::<(usize, &Candidate)>(threads * 2);
        let (res_tx, res_rx) = bounded::<(usize, FileResult)>(WINDOW_FILES);
        let (tok_tx, tok_rx) = bounded::<()>(WINDOW_FILES);
        for _ in 0..WINDOW_FILES {
            tok_tx
                .send(())
                .map_err(|_| Error::internal("token channel closed"))?;
        }
        spawn_workers(s, threads, processor, out.clock, task_rx, res_tx)?;
        let feeder = spawn_feeder(s, out.files, out.routes, tok_rx, task_tx)?;
        // This thread is the writer: results arrive in any order and are written in path order.
        let outcome = out.write_results(&res_rx, &tok_tx);
        drop(tok_tx);
        drop(res_rx);
        let _ = feeder.join();
        outcome
    })?;
    Ok((out.kept, out.read_skips))
}

/// Starts `threads` workers: each answers the files it takes from `task_rx` with `processor`
/// and sends the answers to `res_tx`.
fn spawn_workers<'scope>(
    s: &'scope Scope<'scope, '_>,
    threads: usize,
    processor: &'scope FileProcessor<'scope>,
    clock: &'scope Clock,
    task_rx: Receiver<(usize, &'scope Candidate)>,
    res_tx: Sender<(usize, FileResult)>,
) -> Result<()> {
    for i in 0..threads {
        let task_rx: Receiver<(usize, &Candidate)> = task_rx.clone();
        let res_tx: Sender<(usize, FileResult)> = res_tx.clone();
        std::thread::Builder::new()
            .name(format!("trove-worker-{i}"))
            .spawn_scoped(s, move || {
                // The time spent waiting for a file, and for room to answer, is idle.
                let mut waiting = std::time::Instant::now();
                while let Ok((i, c)) = task_rx.recv() {
                    clock.worker_waited(waiting.elapsed());
                    // A panic on one file (a grammar or chunker bug) must not take the run
                    // down, nor leave the in-order writer waiting for that file forever.
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        processor.process(c)
                    }))
                    .unwrap_or_else(|_| {
                        FileResult::Skipped(Skipped {
                            path: c.rel.clone(),
                            reason: SkipReason::InternalError,
                            bytes: c.bytes.unwrap_or(0),
                        })
                    });
                    waiting = std::time::Instant::now();
                    if res_tx.send((i, r)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::internal(format!("cannot start a worker thread: {e}")))?;
    }
    Ok(())
}

/// Starts the feeder: it hands the files routed to a worker to `task_tx`, in path order, each
/// once a token comes from `tok_rx`.
fn spawn_feeder<'scope>(
    s: &'scope Scope<'scope, '_>,
    files: &'scope [Candidate],
    routes: &'scope [FileRoute<'scope>],
    tok_rx: Receiver<()>,
    task_tx: Sender<(usize, &'scope Candidate)>,
) -> Result<ScopedJoinHandle<'scope, ()>> {
    std::thread::Builder::new()
        .name("trove-feeder".into())
        .spawn_scoped(s, move || {
            for (i, c) in files
                .iter()
                .enumerate()
                .filter(|(i, _)| matches!(routes[*i], FileRoute::Worker))
            {
                // A token per file in flight: the writer returns one per file written.
                if tok_rx.recv().is_err() || task_tx.send((i, c)).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| Error::internal(format!("cannot start the feeder thread: {e}")))
}
