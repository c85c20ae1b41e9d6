//! HTTP: JSON for OpenAI-compatible servers (`openai` embedder, `llm` summarizer), and files of
//! published bundles (`trove sync`).
//!
//! Input: a URL, a JSON body, an optional API key. Output: the response's JSON, or a [`Failure`]
//! that says whether trying again could help. Calls that time out, cannot connect, get 408/429/5xx
//! or a 2xx whose body is not JSON are retried with exponential backoff and jitter, waiting what a
//! `Retry-After` header asks (capped at 120 s and at the call's timeout); any other 4xx is answered at once with the server's own
//! message. The API key goes into the `Authorization` header only, and is masked out of every
//! message.
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// First backoff delay; doubled per retry.
const BASE_DELAY: Duration = Duration::from_millis(250);
/// Longest wait between two tries, `Retry-After` included (and never longer than a call's
/// timeout).
const MAX_DELAY: Duration = Duration::from_secs(120);
/// Largest response body read, unless a client asks for less ([`Client::with_max_body`]).
const MAX_BODY: u64 = 256 << 20;

/// Why a call gave no JSON.
#[derive(Debug)]
pub enum Failure {
    /// The server refused the input as too long (a 4xx saying so).
    TooLong(String),
    /// A 4xx other than 408/429: trying again would not help.
    Refused(String),
    /// Retries ran out on timeouts, 429/5xx or malformed replies (the message says how many).
    Exhausted(String),
}

impl Failure {
    /// The same failure, its message through [`Client::mask`].
    fn masked(self, client: &Client) -> Failure {
        match self {
            Failure::TooLong(m) => Failure::TooLong(client.mask(&m)),
            Failure::Refused(m) => Failure::Refused(client.mask(&m)),
            Failure::Exhausted(m) => Failure::Exhausted(client.mask(&m)),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::TooLong(m) | Failure::Refused(m) => f.write_str(m),
            Failure::Exhausted(m) => f.write_str(m),
        }
    }
}

/// A client for one server.
pub struct Client {
    agent: ureq::Agent,
    /// How long one call may take: no wait between tries is longer.
    timeout: Duration,
    key: Option<String>,
    retries: u32,
    /// Largest reply body read; a longer one is refused, not tried again.
    max_body: u64,
    /// Calls tried again.
    pub retried: AtomicU64,
}

impl Client {
    /// A client as a config's `timeout_secs` (at least 1), `retries` and `api_key_env` (the
    /// variable holding the API key; empty or unset: none) ask.
    pub fn from_config(timeout_secs: u64, retries: u32, api_key_env: &str) -> Self {
        Client::new(
            Duration::from_secs(timeout_secs.max(1)),
            retries,
            key_from_env(api_key_env),
        )
    }

    /// A client whose calls time out after `timeout`, retried up to `retries` times.
    pub fn new(timeout: Duration, retries: u32, key: Option<String>) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Client {
            agent,
            timeout,
            key: key.filter(|k| !k.is_empty()),
            retries,
            max_body: MAX_BODY,
            retried: AtomicU64::new(0),
        }
    }

    /// The same client for large downloads (`trove sync`): its timeout bounds resolving,
    /// connecting, the wait for a reply's headers and each read of its body (a stalled
    /// transfer), not the whole transfer, which takes as long as its size needs. With `https`
    /// (an `https://` source), a redirect to plain HTTP is refused; the key follows a redirect
    /// to the same host over HTTPS (a folder URL answered with its `/`), never to another host.
    pub fn for_downloads(mut self, https: bool) -> Self {
        let t = Some(self.timeout);
        self.agent = ureq::Agent::config_builder()
            .timeout_resolve(t)
            .timeout_connect(t)
            .timeout_recv_response(t)
            .timeout_per_read(t)
            .https_only(https)
            // Bundle files are compressed already, and a range must count the stored bytes.
            .accept_encoding("identity")
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .http_status_as_error(false)
            .build()
            .into();
        self
    }

    /// The same client, refusing a reply body longer than `bytes` (the default is 256 MiB).
    pub fn with_max_body(mut self, bytes: u64) -> Self {
        self.max_body = bytes;
        self
    }

    /// `text` with the API key and the userinfo of any URL (`https://user:secret@host/`, which
    /// ureq sends as basic auth) masked.
    pub fn mask(&self, text: &str) -> String {
        let text = crate::util::hide_userinfo(text);
        match &self.key {
            Some(k) if k.len() >= 4 => text.replace(k.as_str(), "***"),
            _ => text.into_owned(),
        }
    }

    /// POSTs `body` to `url`; see the module docs for what is retried.
    pub fn post(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> std::result::Result<serde_json::Value, Failure> {
        let payload = serde_json::to_vec(body).unwrap_or_default();
        self.retrying(|| self.try_once(url, &payload))
    }

    /// GETs `url` into `out` (emptied first, and again before each retry), at most `limit`
    /// bytes; returns the bytes received. Timeouts, broken connections, 408/429/5xx are retried
    /// as for [`Client::post`]; any other status is a [`Failure::Refused`] naming it.
    pub fn get_into(
        &self,
        url: &str,
        out: &mut dyn Sink,
        limit: u64,
    ) -> std::result::Result<u64, Failure> {
        self.retrying(|| self.get_once(url, &mut *out, limit, 0))
    }

    /// GETs `url` into `file`, which holds the start of it from an earlier try or run: asks the
    /// server for the rest (`Range: bytes=LEN-`) and appends it, or starts over where the
    /// server sends the whole file (a 200: no range support) or cannot send that range (a 416,
    /// a 206 from elsewhere). Each retry resumes too, so a transfer cut halfway loses nothing.
    /// `limit` is the file's whole length; a file that has it already is not asked for. Returns
    /// the bytes of the file's start that were there before and kept (0 when it started over).
    pub fn get_resuming(
        &self,
        url: &str,
        file: &mut std::fs::File,
        limit: u64,
    ) -> std::result::Result<u64, Failure> {
        use std::io::Seek;
        let io = |e: std::io::Error| Failure::Refused(self.mask(&format!("{url}: {e}")));
        let before = file.metadata().map_err(io)?.len();
        let mut sink = Restartable { file, reset: false };
        if before > limit {
            sink.reset().map_err(io)?;
        }
        self.retrying(|| {
            let have = sink
                .file
                .seek(std::io::SeekFrom::End(0))
                .map_err(|e| Attempt::Final(io(e)))?;
            if have == limit {
                return Ok(());
            }
            self.get_once(url, &mut sink, limit, have)?;
            // A reply that ended cleanly but short (a range that stops early, a body without a
            // length) is continued as a broken one is.
            let now = sink
                .file
                .seek(std::io::SeekFrom::End(0))
                .map_err(|e| Attempt::Final(io(e)))?;
            if now < limit {
                return Err(Attempt::Again(
                    format!("{url}: the reply ended after {now} of {limit} bytes"),
                    None,
                ));
            }
            Ok(())
        })?;
        Ok(if sink.reset { 0 } else { before })
    }

    /// Runs `once` until it succeeds, fails for good, or the retries run out (exponential backoff
    /// with jitter, or what `Retry-After` asks).
    fn retrying<T>(
        &self,
        mut once: impl FnMut() -> std::result::Result<T, Attempt>,
    ) -> std::result::Result<T, Failure> {
        let mut attempt = 0u32;
        loop {
            let (problem, retry_after) = match once() {
                Ok(v) => return Ok(v),
                Err(Attempt::Final(f)) => return Err(f.masked(self)),
                Err(Attempt::Again(m, after)) => (m, after),
            };
            if attempt >= self.retries {
                let tries = match self.retries {
                    0 => " (no retries asked for)".to_string(),
                    1 => " (gave up after 1 retry)".to_string(),
                    n => format!(" (gave up after {n} retries)"),
                };
                return Err(Failure::Exhausted(self.mask(&format!("{problem}{tries}"))));
            }
            let backoff = BASE_DELAY.saturating_mul(1 << attempt.min(16));
            let wait = retry_after.unwrap_or(backoff + jitter(backoff / 2));
            // A server asking for a longer wait than a call may take is not waited for longer
            // (`Retry-After: 100000` with a 5 s timeout: 5 s).
            std::thread::sleep(wait.min(MAX_DELAY).min(self.timeout));
            self.retried.fetch_add(1, Relaxed);
            attempt += 1;
        }
    }

    /// One GET of `url` (at most `limit` bytes in all) into `out`: the whole reply, or with
    /// `from` > 0 what follows the `from` bytes `out` holds. Returns the bytes received.
    fn get_once(
        &self,
        url: &str,
        out: &mut dyn Sink,
        limit: u64,
        from: u64,
    ) -> std::result::Result<u64, Attempt> {
        let mut req = self.agent.get(url);
        if let Some(k) = &self.key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        if from > 0 {
            req = req.header("Range", format!("bytes={from}-"));
        }
        let mut resp = match req.call() {
            Ok(r) => r,
            Err(e) => return Err(transport_failure(url, e)),
        };
        let status = resp.status().as_u16();
        // A range of the bytes as stored: one of a compressed encoding could not be decoded
        // from its middle.
        let encoded = resp
            .headers()
            .get("content-encoding")
            .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
        let resumed = from > 0 && status == 206 && !encoded && range_start(&resp) == Some(from);
        let reset = |out: &mut dyn Sink| {
            out.reset()
                .map_err(|e| Attempt::Final(Failure::Refused(format!("{url}: {e}"))))
        };
        if from > 0 && !resumed && matches!(status, 206 | 416) {
            // Not the rest of what `out` holds (another range, or none the server can send):
            // the whole file again.
            drop(resp);
            reset(out)?;
            return self.get_once(url, out, limit, 0);
        }
        if !(200..=299).contains(&status) {
            // A file server's error page is HTML: the status line says it all.
            let msg = self.mask(&format!(
                "{url}: HTTP {status} {}",
                resp.status().canonical_reason().unwrap_or("")
            ));
            return Err(match status {
                408 | 429 | 500..=599 => Attempt::Again(msg, retry_after(&resp)),
                _ => Attempt::Final(Failure::Refused(msg)),
            });
        }
        // What the reply may hold: the rest after `from`, or the whole.
        let want = if resumed {
            limit.saturating_sub(from)
        } else {
            reset(out)?;
            limit
        };
        // Read one byte past `want`, to tell a reply that is too long from one that fits.
        let mut body = std::io::Read::take(
            resp.body_mut().with_config().limit(u64::MAX).reader(),
            want.saturating_add(1),
        );
        // A failed write (a full disk) is final; only the network is tried again.
        let mut sink = Tracked { out, failed: false };
        let n = std::io::copy(&mut body, &mut sink).map_err(|e| {
            if sink.failed {
                Attempt::Final(Failure::Refused(format!("{url}: writing what came: {e}")))
            } else {
                Attempt::Again(format!("{url}: reading the reply: {e}"), None)
            }
        })?;
        if n > want {
            return Err(Attempt::Final(Failure::Refused(format!(
                "{url}: the reply is longer than the {limit} bytes expected"
            ))));
        }
        Ok(n)
    }

    fn try_once(
        &self,
        url: &str,
        payload: &[u8],
    ) -> std::result::Result<serde_json::Value, Attempt> {
        let mut req = self
            .agent
            .post(url)
            .header("Content-Type", "application/json");
        if let Some(k) = &self.key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let mut resp = match req.send(payload) {
            Ok(r) => r,
            Err(e) => return Err(transport_failure(url, e)),
        };
        let status = resp.status().as_u16();
        let retry_after = retry_after(&resp);
        let text = match resp
            .body_mut()
            .with_config()
            .limit(self.max_body)
            .read_to_string()
        {
            Ok(t) => t,
            // The same server would send the same reply again.
            Err(ureq::Error::BodyExceedsLimit(n)) => {
                return Err(Attempt::Final(Failure::Refused(format!(
                    "{url}: the reply is longer than {n} bytes (HTTP {status})"
                ))));
            }
            Err(ureq::Error::Timeout(_)) => {
                return Err(Attempt::Again(
                    format!("{url}: timed out reading the reply"),
                    None,
                ));
            }
            Err(e) => {
                return Err(Attempt::Again(
                    format!("{url}: reading the reply: {e}"),
                    None,
                ));
            }
        };
        match status {
            200..=299 => serde_json::from_str(&text)
                .map_err(|e| Attempt::Again(format!("{url}: the reply is not JSON ({e})"), None)),
            408 | 429 | 500..=599 => Err(Attempt::Again(
                format!("{url}: HTTP {status}: {}", server_message(&text)),
                retry_after,
            )),
            _ => {
                let msg = self.mask(&format!("{url}: HTTP {status}: {}", server_message(&text)));
                let lower = msg.to_lowercase();
                let too_long = [
                    "too long",
                    "maximum context length",
                    "context_length",
                    "too many tokens",
                    "input length",
                    "max_tokens",
                    "token limit",
                ]
                .iter()
                .any(|p| lower.contains(p));
                Err(Attempt::Final(
                    if status == 413 || (too_long && matches!(status, 400 | 422)) {
                        Failure::TooLong(msg)
                    } else {
                        Failure::Refused(msg)
                    },
                ))
            }
        }
    }
}

enum Attempt {
    Final(Failure),
    Again(String, Option<Duration>),
}

/// Where [`Client::get_into`] writes a reply: emptied before each try.
pub trait Sink: std::io::Write {
    /// Drops what an earlier try wrote.
    fn reset(&mut self) -> std::io::Result<()>;
}

impl Sink for Vec<u8> {
    fn reset(&mut self) -> std::io::Result<()> {
        self.clear();
        Ok(())
    }
}

impl Sink for std::fs::File {
    fn reset(&mut self) -> std::io::Result<()> {
        use std::io::Seek;
        self.set_len(0)?;
        self.rewind().map(|_| ())
    }
}

/// The file of [`Client::get_resuming`]: remembers whether it was emptied (the download started
/// over).
struct Restartable<'a> {
    file: &'a mut std::fs::File,
    reset: bool,
}

impl std::io::Write for Restartable<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Sink for Restartable<'_> {
    fn reset(&mut self) -> std::io::Result<()> {
        self.reset = true;
        self.file.reset()
    }
}

/// The first byte of a 206 reply's `Content-Range: bytes FIRST-LAST/LEN`.
fn range_start(resp: &ureq::http::Response<ureq::Body>) -> Option<u64> {
    let v = resp.headers().get("content-range")?.to_str().ok()?.trim();
    let range = v.strip_prefix("bytes")?.trim_start();
    range.split('-').next()?.trim().parse().ok()
}

/// A [`Sink`] that remembers whether a write to it failed.
struct Tracked<'a> {
    out: &'a mut dyn Sink,
    failed: bool,
}

impl std::io::Write for Tracked<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf).inspect_err(|_| self.failed = true)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().inspect_err(|_| self.failed = true)
    }
}

/// A call that got no reply: a malformed URL or request is final, anything else (timeouts,
/// refused or broken connections) worth another try.
fn transport_failure(url: &str, e: ureq::Error) -> Attempt {
    match e {
        ureq::Error::Timeout(_) => Attempt::Again(format!("{url}: timed out"), None),
        e @ (ureq::Error::BadUri(_) | ureq::Error::Http(_)) => {
            Attempt::Final(Failure::Refused(format!("{url}: {e}")))
        }
        e => Attempt::Again(format!("{url}: {e}"), None),
    }
}

/// The wait a reply's `Retry-After` header (in seconds) asks for, capped.
fn retry_after(resp: &ureq::http::Response<ureq::Body>) -> Option<Duration> {
    resp.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(MAX_DELAY.as_secs_f64())))
}

/// The `error.message` of an OpenAI-style error body, else the body's start.
fn server_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let msg = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str().map(str::to_string))
    });
    match msg {
        Some(m) => m,
        None => body
            .chars()
            .take(200)
            .collect::<String>()
            .trim()
            .to_string(),
    }
}

/// A pseudo-random duration in `[0, max)`: spreads retries of concurrent calls apart.
fn jitter(max: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    let r = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    max.mul_f64(r)
}

/// The endpoint URL: `base` as given when it already ends with `/path`, else `base/path`.
pub fn endpoint(base: &str, path: &str) -> String {
    let b = base.trim().trim_end_matches('/');
    if b.ends_with(&format!("/{path}")) {
        b.to_string()
    } else {
        format!("{b}/{path}")
    }
}

/// The API key from the environment variable `var` (empty or unset: none).
fn key_from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.trim().is_empty())
}
