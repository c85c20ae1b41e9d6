//! The per-stage account of a run: where its time went, stage by stage, in every summary
//! (`--format json`'s `timings`, and `trove index --timings` as a table).
//!
//! Each stage's time is summed over the threads that ran it (a parallel stage's seconds can pass
//! the wall time), with `Instant` around each file's step — a few clock reads per file, so the
//! account stays on. The workers also count the time they waited for a file (idle: the feeder or
//! the in-order writer held them up), and the writer the time it waited for an answer (idle: the
//! workers were slower than it). `cpu_secs` is the process's own count (user + system), against
//! which the stages' sum shows what the account misses.
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A stage of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The walk of the tree (ignore rules, skip rules) and the incremental plan.
    Walk,
    /// Reading a file, its sha256, classifying and decoding it, redacting secrets.
    Read,
    /// The tree-sitter parse.
    Parse,
    /// Cutting the file into chunks (and line windows, sections, paragraphs).
    Chunk,
    /// Definitions and references from the tree, docs, summaries, symbol and chunk rows.
    Extract,
    /// BM25 terms (and, with the hash embedder, the token hashes counted in the same pass).
    Tokenize,
    /// Vectors: the embedder (and the embedding cache).
    Embed,
    /// The writer: rows into Arrow columns, Parquet encoding and zstd, in path order.
    Encode,
    /// The end of the build: the last row groups, postings and reference resolution, the
    /// manifest, `views.sql`.
    Finish,
}

/// Every stage, in the order of a run.
pub const STAGES: [Stage; 9] = [
    Stage::Walk,
    Stage::Read,
    Stage::Parse,
    Stage::Chunk,
    Stage::Extract,
    Stage::Tokenize,
    Stage::Embed,
    Stage::Encode,
    Stage::Finish,
];

impl Stage {
    /// Its name in the account.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Walk => "walk",
            Stage::Read => "read",
            Stage::Parse => "parse",
            Stage::Chunk => "chunk",
            Stage::Extract => "extract",
            Stage::Tokenize => "tokenize",
            Stage::Embed => "embed",
            Stage::Encode => "encode",
            Stage::Finish => "finish",
        }
    }

    /// Its place in [`STAGES`] (the variants are declared in that order).
    fn index(self) -> usize {
        self as usize
    }
}

/// The clock a run's threads add their stages' time to.
#[derive(Debug, Default)]
pub struct Clock {
    busy: [AtomicU64; STAGES.len()],
    worker_idle: AtomicU64,
    writer_idle: AtomicU64,
    workers: AtomicU64,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Clock {
    /// Adds `d` to `stage`.
    pub fn add(&self, stage: Stage, d: Duration) {
        self.busy[stage.index()].fetch_add(nanos(d), Relaxed);
    }

    /// Runs `f`, adding its time to `stage`.
    pub fn time<T>(&self, stage: Stage, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        self.add(stage, started.elapsed());
        out
    }

    /// Notes the number of worker threads.
    pub fn set_workers(&self, n: usize) {
        self.workers.store(n as u64, Relaxed);
    }

    /// Adds time a worker waited for a file.
    pub fn worker_waited(&self, d: Duration) {
        self.worker_idle.fetch_add(nanos(d), Relaxed);
    }

    /// Adds time the writer waited for an answer.
    pub fn writer_waited(&self, d: Duration) {
        self.writer_idle.fetch_add(nanos(d), Relaxed);
    }

    /// The account of a run that took `wall_secs`, `cpu_secs` of the process's CPU time (when
    /// known).
    pub fn account(&self, wall_secs: f64, cpu_secs: Option<f64>) -> Timings {
        let workers = self.workers.load(Relaxed) as usize;
        let secs = |n: &AtomicU64| n.load(Relaxed) as f64 / 1e9;
        let stages: Vec<StageTime> = STAGES
            .iter()
            .map(|&s| {
                let cpu = secs(&self.busy[s.index()]);
                StageTime {
                    stage: s.name(),
                    secs: cpu,
                    share: if wall_secs > 0.0 {
                        cpu / wall_secs
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        // The workers' stages: all but the walk (before them) and the writer's.
        let in_workers: f64 = STAGES
            .iter()
            .filter(|s| !matches!(s, Stage::Walk | Stage::Encode | Stage::Finish))
            .map(|s| secs(&self.busy[s.index()]))
            .sum();
        Timings {
            wall_secs,
            cpu_secs,
            stages_secs: stages.iter().map(|s| s.secs).sum(),
            stages,
            workers,
            worker_busy_secs: in_workers,
            worker_idle_secs: secs(&self.worker_idle),
            writer_busy_secs: secs(&self.busy[Stage::Encode.index()]),
            writer_idle_secs: secs(&self.writer_idle),
        }
    }
}

/// One stage's time.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StageTime {
    /// The stage.
    pub stage: &'static str,
    /// Seconds, summed over the threads that ran it.
    pub secs: f64,
    /// Those seconds over the run's wall time (above 1: more than one thread at a time).
    pub share: f64,
}

/// Where a run's time went.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Timings {
    /// The run's wall time.
    pub wall_secs: f64,
    /// The process's CPU time (user + system), when known.
    pub cpu_secs: Option<f64>,
    /// The stages' seconds summed.
    pub stages_secs: f64,
    /// Each stage, in the order of a run.
    pub stages: Vec<StageTime>,
    /// Worker threads.
    pub workers: usize,
    /// Seconds the workers spent on files (read to embed), summed.
    pub worker_busy_secs: f64,
    /// Seconds the workers waited for a file, summed.
    pub worker_idle_secs: f64,
    /// Seconds the writer spent encoding rows.
    pub writer_busy_secs: f64,
    /// Seconds the writer waited for the workers' answers.
    pub writer_idle_secs: f64,
}

impl Timings {
    /// The account as a table, for `--timings`.
    pub fn table(&self) -> String {
        let mut out = format!("{:<10} {:>9} {:>7}\n", "stage", "seconds", "× wall");
        for s in &self.stages {
            out.push_str(&format!(
                "{:<10} {:>9.2} {:>7.2}\n",
                s.stage, s.secs, s.share
            ));
        }
        out.push_str(&format!(
            "{:<10} {:>9.2}   (cpu {}; wall {:.2} s)\n",
            "sum",
            self.stages_secs,
            self.cpu_secs
                .map_or("unknown".to_string(), |c| format!("{c:.2} s")),
            self.wall_secs
        ));
        out.push_str(&format!(
            "workers ({}): busy {:.2} s, idle {:.2} s; writer: busy {:.2} s, idle {:.2} s",
            self.workers,
            self.worker_busy_secs,
            self.worker_idle_secs,
            self.writer_busy_secs,
            self.writer_idle_secs
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_add_up_and_the_table_names_each() {
        let c = Clock::default();
        c.add(Stage::Parse, Duration::from_millis(1500));
        c.add(Stage::Parse, Duration::from_millis(500));
        c.time(Stage::Encode, || {
            std::thread::sleep(Duration::from_millis(5))
        });
        c.worker_waited(Duration::from_millis(250));
        c.set_workers(2);
        let t = c.account(4.0, Some(3.0));
        assert_eq!(t.workers, 2);
        let parse = t.stages.iter().find(|s| s.stage == "parse").unwrap();
        assert!((parse.secs - 2.0).abs() < 1e-9 && (parse.share - 0.5).abs() < 1e-9);
        assert!(t.writer_busy_secs >= 0.005);
        assert!((t.worker_idle_secs - 0.25).abs() < 1e-9);
        assert!((t.worker_busy_secs - 2.0).abs() < 1e-9);
        assert!(STAGES.iter().enumerate().all(|(i, s)| s.index() == i));
        let table = t.table();
        for s in STAGES {
            assert!(table.contains(s.name()), "{table}");
        }
    }
}
