//! Progress for long runs: an indicatif bar on a terminal, a plain line every few seconds in CI logs,
//! nothing with `--quiet`.
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use trove_embed::EmbedStats;

/// Seconds between plain progress lines when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// An indicatif bar (stderr is a terminal).
    Bar,
    /// A plain line every few seconds (CI logs).
    Lines,
    /// Nothing.
    Quiet,
}

/// A running progress display.
pub(crate) struct Running {
    mode: Progress,
    bar: Option<ProgressBar>,
    state: Mutex<(u64, u64, Instant)>,
    total_files: u64,
    total_bytes: u64,
    /// Sizes are unknown (a `--since` walk does not stat files): the bar counts files.
    by_files: bool,
    started: Instant,
}

impl Progress {
    pub(crate) fn start(self, total_files: u64, total_bytes: u64) -> Running {
        let by_files = total_bytes == 0;
        let bar = (self == Progress::Bar).then(|| {
            let (len, template) = if by_files {
                (total_files, "{spinner} indexing [{bar:30}] {msg} eta {eta}")
            } else {
                (
                    total_bytes,
                    "{spinner} indexing [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg} eta {eta}",
                )
            };
            let b = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(template) {
                b.set_style(style.progress_chars("=> "));
            }
            b
        });
        Running {
            mode: self,
            bar,
            state: Mutex::new((0, 0, Instant::now())),
            total_files,
            total_bytes,
            by_files,
            started: Instant::now(),
        }
    }
}

impl Running {
    /// One more file done, `bytes` long.
    pub(crate) fn advance(&self, bytes: u64, extra: &dyn Fn() -> String) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        st.0 += 1;
        st.1 += bytes;
        match self.mode {
            Progress::Bar => {
                if let Some(b) = &self.bar {
                    b.set_position(if self.by_files { st.0 } else { st.1 });
                    b.set_message(format!("{}/{} files{}", st.0, self.total_files, extra()));
                }
            }
            Progress::Lines if st.2.elapsed() >= PLAIN_EVERY => {
                st.2 = Instant::now();
                let secs = self.started.elapsed().as_secs_f64().max(1e-3);
                eprintln!(
                    "trove: {}/{} files, {:.1}/{:.1} MB, {:.1} MB/s{}",
                    st.0,
                    self.total_files,
                    st.1 as f64 / 1e6,
                    self.total_bytes as f64 / 1e6,
                    st.1 as f64 / 1e6 / secs,
                    extra()
                );
            }
            _ => {}
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The embedding part of a progress line (empty until something was embedded or cached).
pub(super) fn embed_line(s: &EmbedStats) -> String {
    if s.texts + s.cache_hits == 0 {
        return String::new();
    }
    format!(
        ", embedded {} texts ({:.0} texts/s, {:.0} tokens/s), {} cache hits",
        s.texts,
        s.chunks_per_sec(),
        s.tokens_per_sec(),
        s.cache_hits
    )
}

/// Whether stderr is a terminal (progress bars, colours).
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}
