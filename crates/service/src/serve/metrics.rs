//! `/metrics`: request counts, a latency histogram per route, requests in flight and refused, in
//! the Prometheus text format (0.0.4).
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    n: u64,
}

/// The server's counters.
#[derive(Default)]
pub struct Metrics {
    /// (route, method, status) → requests.
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    /// route → latency histogram.
    latency: Mutex<BTreeMap<String, Histogram>>,
    /// Requests being handled now.
    pub in_flight: AtomicI64,
    /// Requests refused with 503 because the server was saturated.
    pub rejected: AtomicU64,
}

impl Metrics {
    /// Counts one finished request.
    pub fn observe(&self, route: &str, method: &str, status: u16, secs: f64) {
        *self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((route.to_string(), method.to_string(), status))
            .or_default() += 1;
        if status == 503 {
            self.rejected.fetch_add(1, Ordering::Relaxed);
        }
        let mut lat = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = lat.entry(route.to_string()).or_default();
        if h.counts.is_empty() {
            h.counts = vec![0; BUCKETS.len()];
        }
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            h.counts[i] += 1;
        }
        h.sum += secs;
        h.n += 1;
    }

    /// The metrics as Prometheus text, with the bundle lines `extra` appended.
    pub fn render(&self, extra: &str) -> String {
        let mut out = String::new();
        family(
            &mut out,
            "trove_http_requests_total",
            "counter",
            "HTTP requests answered, by route, method and status.",
        );
        for ((route, method, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "trove_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{status}\"}} {n}",
                esc(route),
                esc(method)
            );
        }
        family(
            &mut out,
            "trove_http_request_duration_seconds",
            "histogram",
            "Time to answer a request, by route.",
        );
        for (route, h) in self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let r = esc(route);
            let mut cum = 0;
            for (b, c) in BUCKETS.iter().zip(&h.counts) {
                cum += c;
                let _ = writeln!(
                    out,
                    "trove_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"{b}\"}} {cum}"
                );
            }
            let _ = writeln!(
                out,
                "trove_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"+Inf\"}} {}",
                h.n
            );
            let _ = writeln!(
                out,
                "trove_http_request_duration_seconds_sum{{route=\"{r}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "trove_http_request_duration_seconds_count{{route=\"{r}\"}} {}",
                h.n
            );
        }
        family(
            &mut out,
            "trove_http_in_flight",
            "gauge",
            "Requests being handled.",
        );
        let _ = writeln!(
            out,
            "trove_http_in_flight {}",
            self.in_flight.load(Ordering::Relaxed)
        );
        family(
            &mut out,
            "trove_http_rejected_total",
            "counter",
            "Requests refused with 503 (saturated).",
        );
        let _ = writeln!(
            out,
            "trove_http_rejected_total {}",
            self.rejected.load(Ordering::Relaxed)
        );
        out.push_str(extra);
        out
    }
}

/// The `# HELP` and `# TYPE` lines that open a metric family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value escaped for the text format.
pub fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
