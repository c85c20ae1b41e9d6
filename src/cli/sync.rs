//! `trove sync SRC DEST`.
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;

use super::human_bytes;

/// Bring a bundle up to a published one, fetching only the segments it lacks.
///
/// SRC is a bundle directory, a packed .trove file, or the http(s):// URL of a bundle directory
/// published as it is (manifest.json, views.sql, segments/). Segments never change once written,
/// so after a nightly `trove index --since` only the new segment and the manifest travel. Every
/// fetched file is checked against the sha256 SRC's manifest records; the new DEST is built beside
/// the old one and swapped in, so a damaged or missing file on the server, a lost connection or a
/// killed run leaves DEST as it was. What such a run fetched is kept beside DEST
/// (.DEST.sync-partial/) and the next sync resumes from it: files it got whole are not fetched
/// again, one cut off is continued (HTTP range requests; a server without them sends it again).
/// A bearer token for the server, if it needs one, is read from
/// $TROVE_SYNC_TOKEN. Exit codes: 0 synced (or already up to date), 2 refused or failed.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  trove sync https://ci.example.com/bundles/app/ app.bundle\n  trove sync /mnt/shared/app.bundle app.bundle\n\nPublishing (the nightly job): copy the bundle directory to the web server's folder, segments first\nand manifest.json last, e.g.\n  rsync -a --exclude manifest.json app.bundle/ host:/srv/bundles/app/ && rsync -a app.bundle/manifest.json host:/srv/bundles/app/"
)]
pub struct SyncArgs {
    /// The published bundle: a directory, a .trove file, or an http(s):// URL of a bundle directory.
    pub source: String,
    /// The bundle directory to bring up to SRC (created if missing).
    pub dest: PathBuf,
    /// Seconds an HTTP request may wait to connect, for a reply, or for the next bytes of a
    /// download before it gives up (at least 1); a download that keeps coming takes as long as
    /// it needs.
    #[arg(long, default_value_t = 300, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Tries again after a timeout, a broken connection or an HTTP 408/429/5xx.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retries: u32,
    /// No progress, no summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `trove sync`.
pub fn run(a: SyncArgs) -> anyhow::Result<()> {
    let opts = trove::bundle::sync::SyncOptions {
        timeout_secs: a.timeout,
        retries: a.retries,
        progress: !a.quiet && std::io::stderr().is_terminal(),
    };
    if let Some(why) = cleartext_credentials(&a.source) {
        eprintln!("trove: warning: {why}");
    }
    let (_, s) = trove::bundle::sync::run_sync(&a.source, &a.dest, &opts)?;
    if a.json {
        super::print_json(&s)?;
    } else if !a.quiet {
        if s.up_to_date {
            eprintln!(
                "{} is up to date with {} ({} segments, {})",
                a.dest.display(),
                s.source,
                s.segments,
                human_bytes(s.bundle_bytes)
            );
        } else {
            let resumed = if s.bytes_resumed > 0 {
                format!(
                    ", {} of them fetched by an interrupted sync",
                    human_bytes(s.bytes_resumed)
                )
            } else {
                String::new()
            };
            eprintln!(
                "synced {} from {}: fetched {} files of {} new segments ({}{resumed}), kept {}, \
                 in {:.2}s",
                a.dest.display(),
                s.source,
                s.files_fetched,
                s.segments_fetched,
                human_bytes(s.bytes_fetched + s.bytes_resumed),
                human_bytes(s.bytes_reused),
                s.wall_secs
            );
        }
    }
    Ok(())
}

/// Why credentials would cross the network unencrypted, if they would: $TROVE_SYNC_TOKEN or a
/// URL's user and password sent over plain `http://` to a host other than this machine.
fn cleartext_credentials(source: &str) -> Option<String> {
    let rest = source
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &source[7..])?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => (true, &authority[at + 1..]),
        None => (false, authority),
    };
    let host = match hostport.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => hostport.split(':').next().unwrap_or(""),
    };
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let token = std::env::var_os("TROVE_SYNC_TOKEN").is_some_and(|t| !t.is_empty());
    let what = match (token, userinfo) {
        (true, true) => "$TROVE_SYNC_TOKEN and the URL's user and password",
        (true, false) => "$TROVE_SYNC_TOKEN",
        (false, true) => "the URL's user and password",
        (false, false) => return None,
    };
    (!local).then(|| {
        format!(
            "{what} will be sent unencrypted to {host} (plain http://): anyone on the way can \
             read and reuse them; publish the bundle over https://"
        )
    })
}
