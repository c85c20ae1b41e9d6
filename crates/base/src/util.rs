//! Small helpers shared by the stages: hashing, process memory, clocks, the cache directory.
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// Where trove keeps what it can rebuild (query matrices, embeddings, summaries, model paths,
/// unpacked bundles): `$TROVE_CACHE_DIR`, else `$XDG_CACHE_HOME/trove`, else `~/.cache/trove`.
/// A variable set to the empty string counts as unset (it would be the working directory).
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("TROVE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("trove"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache/trove"))
}

/// Sets the mtime of the file `path` to now when it is a day old or more: a cache file's mtime
/// says when it was last used, and unused ones are removed (`trove_bundle::cache::prune_unused`).
pub fn touch(path: &std::path::Path) {
    let day = std::time::Duration::from_secs(86_400);
    let stale = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= day));
    if stale && let Ok(f) = std::fs::OpenOptions::new().write(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// `s` safe to print on a terminal: control characters other than tab (ESC, a lone CR,
/// backspace, the C1 set) written as `\x1b`-style escapes, so a file's or a name's bytes cannot
/// move the cursor, retitle the window or hide text. Text output of `query` and `show` goes
/// through it; `--raw` and JSON do not (JSON escapes them itself).
pub fn visible(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(s, true)
}

/// A commit id as a manifest records it, cut to 12 characters for display (by characters: a
/// hand-edited manifest may hold anything there).
pub fn short_commit(c: &str) -> String {
    c.chars().take(12).collect()
}

/// `text` with the user name and password of every URL in it (`https://user:secret@host/…`)
/// written as `***`: a URL's userinfo is a credential (HTTP basic auth), and messages and
/// summaries that name the URL end up in CI logs. A password may hold an unescaped `/`, `?` or
/// `#` (`ci:ab/cd@host`), so when the host part has no `@`, everything up to the URL's last `@` is
/// masked if a `:` comes before it; a path with an `@` after a port (`host:8080/@scope`) is then
/// masked too, which costs nothing but a less useful message.
pub fn hide_userinfo(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The URL ends at whitespace (or where the text ends); its host part at the path, query
        // or fragment.
        let url = tail.find(char::is_whitespace).unwrap_or(tail.len());
        let host = tail[..url].find(['/', '?', '#']).unwrap_or(url);
        let at = tail[..host].rfind('@').or_else(|| {
            tail[..url]
                .rfind('@')
                .filter(|&at| tail[..at].contains(':'))
        });
        let end = match at.filter(|&at| at > 0) {
            Some(at) => {
                out.push_str("***");
                at
            }
            None => 0,
        };
        rest = &tail[end..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// [`visible`] for what is printed on one line (a path, a name, a row of `map` or `symbols`):
/// a newline is escaped too (`\x0a`), so a file named with one cannot pass for two lines.
pub fn visible_line(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(s, false)
}

fn escaped(s: &str, newlines: bool) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| (c.is_control() && c != '\t' && !(newlines && c == '\n')) || c == '\u{7f}';
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            let n = c as u32;
            if n < 0x100 {
                out.push_str(&format!("\\x{n:02x}"));
            } else {
                out.push_str(&format!("\\u{{{n:x}}}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Writes a 64-bit id (`chunk_id`, `symbol_id`: hashes, nearly all beyond 2^53) as a JSON string:
/// JavaScript's `JSON.parse`, jq 1.6 and every parser that reads numbers as doubles would round it
/// to another id (protobuf's JSON mapping writes 64-bit integers as strings for the same reason).
/// SQL takes it back as it is: DuckDB casts `chunk_id = '6901299116625241180'` to the BIGINT.
pub fn id_as_string<S: serde::Serializer>(id: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// A stable 63-bit id from the sha256 of `parts` joined by NUL (non-negative, so every Parquet
/// engine reads it as a plain BIGINT).
pub fn stable_id(parts: &[&[u8]]) -> i64 {
    let mut h = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(p);
    }
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    (u64::from_le_bytes(b) >> 1) as i64
}

/// Peak resident memory of this process in bytes (VmHWM), where the OS reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// CPU seconds the process has used so far (user + system, every thread), when known (Linux:
/// `/proc/self/stat`, in the kernel's 100 Hz user ticks).
pub fn cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces, so split after its closing paren):
    // utime and stime are the 14th and 15th of the line, the 12th and 13th after it.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// 64-bit FNV-1a: a tiny, stable, platform-independent hash for feature hashing (the hash embedder
/// must give the same vector on every machine and every version, which std's hasher does not promise).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// `p` as a `/`-separated path string (lossy where it is not UTF-8). Only on Windows is `\` a
/// separator to turn into `/`: elsewhere it is a character a file name may hold (`a\b.py`).
pub fn slash_path(p: &std::path::Path) -> String {
    let s = p.to_string_lossy();
    if cfg!(windows) {
        s.replace('\\', "/")
    } else {
        s.into_owned()
    }
}

/// The largest char boundary at or below `i`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `s` as an SQL string literal: in single quotes, a quote doubled.
pub fn sql_lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::hide_userinfo;

    #[test]
    fn userinfo_is_hidden_wherever_a_url_stands() {
        assert_eq!(
            hide_userinfo("https://ci:s3cr@t@example.com:8443/b/manifest.json: HTTP 404"),
            "https://***@example.com:8443/b/manifest.json: HTTP 404"
        );
        assert_eq!(
            hide_userinfo("from http://u@h and ftp://x:y@z?q=a@b, mail a@b"),
            "from http://***@h and ftp://***@z?q=a@b, mail a@b"
        );
        // A password with a `/`, `?` or `#` in it, unescaped.
        assert_eq!(
            hide_userinfo("fetch https://ci:ab/c?d#e@h/b/manifest.json failed"),
            "fetch https://***@h/b/manifest.json failed"
        );
        assert_eq!(hide_userinfo("é https://u:p@h é"), "é https://***@h é");
        for plain in [
            "https://example.com/a@b",
            "no url @ all",
            "http://h",
            "",
            "://@",
        ] {
            assert_eq!(hide_userinfo(plain), plain);
        }
    }
}
