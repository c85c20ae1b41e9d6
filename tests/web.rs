//! The web pages of `trove serve` in a real browser (Debian's Chromium through Selenium,
//! `tests/web_client.py`): search as you type, results grouped by file, filters in the box and
//! as controls, the keyboard alone, a result opened at its lines, permalinks that survive a
//! reload, highlighting, references in a side panel, a bundle picker, and a file's `<script>`
//! shown as text, never run.
use crate::serve::Server;
use crate::util::*;

#[test]
fn the_search_and_file_pages_work_in_a_browser() {
    let t = sample_repo();
    write(
        t.path(),
        "web/evil.html",
        b"<p>invoice preview</p>\n<script>window.pwned = 1</script>\n",
    );
    commit(t.path(), "a page with a script");
    let scratch = tempfile::tempdir().unwrap();
    let b = scratch.path().join("sample.bundle");
    index(t.path(), &b, &[]);
    let server = Server::start(&[b.to_str().unwrap()], &[]);
    // The pages are photographed each run (the pictures of docs/serve.md: set
    // TROVE_WEB_SCREENSHOTS=docs/img to replace them).
    let shots = std::env::var_os("TROVE_WEB_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| scratch.path().join("shots"));
    let shots_arg = shots.to_str().unwrap().to_string();
    drive(&server, &[&server.url(), &shots_arg]);
    drop(server);
    // With --token: the login form, a cookie, and the API still wants its bearer token.
    let server = Server::start(&[b.to_str().unwrap(), "--token", "s3cret-t0ken"], &[]);
    drive(&server, &["--login", "s3cret-t0ken", &server.url()]);
    drop(server);
    // Two bundles: the bundle picker.
    let langs = scratch.path().join("langs.bundle");
    index(&repo().join("fixtures/languages"), &langs, &[]);
    let server = Server::start(&[b.to_str().unwrap(), langs.to_str().unwrap()], &[]);
    drive(&server, &["--bundles", &server.url()]);
    drop(server);
    // A page open while a newer version is swapped in says so.
    let server = Server::start(&[b.to_str().unwrap(), "--reload-interval", "1"], &[]);
    let mut client = std::process::Command::new("python3")
        .arg(repo().join("tests/web_client.py"))
        .args(["--banner", &server.url()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(client.stdout.take().unwrap()));
    let mut said = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line == "READY" {
            break;
        }
    }
    write(
        t.path(),
        "billing/late.py",
        b"def late_fee(days):\n    return days * 5\n",
    );
    commit(t.path(), "late fee");
    index(t.path(), &b, &[]);
    said.extend(lines.map_while(Result::ok).map(|l| l + "\n"));
    let out = client.wait_with_output().unwrap();
    assert!(
        out.status.success() && said.contains("READY"),
        "{said}\n{}\n--- server log ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    for name in ["web-search.png", "web-file.png", "web-map.png"] {
        let png = std::fs::read(shots.join(name)).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 2000, "{name}");
    }
}

/// Runs tests/web_client.py with `args` against `server`; its checks, and the server's log, on
/// failure.
fn drive(server: &Server, args: &[&str]) {
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/web_client.py"))
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}\n{}\n--- server log ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
}
