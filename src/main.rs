//! The `trove` binary: parses arguments, runs the subcommand, maps errors to exit codes
//! (0 ok, 1 no results from a query, 2 bad input or failure; clap's own usage errors are 2 as well).
mod cli;

use clap::Parser;

/// mimalloc: the workers allocate many small strings and vectors per file (tokens, chunks,
/// symbols) from several threads at once, where glibc's malloc spent ~19% of the index run's
/// cycles and contended on its arena locks.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// tree-sitter's C core allocates through libc unless told otherwise; glibc's malloc/free
/// took ~10% of a parse-only pass. Hand it mimalloc too.
#[allow(unsafe_code)]
fn use_mimalloc_for_tree_sitter() {
    use libmimalloc_sys as mi;
    use std::ffi::c_void;

    /// `calloc` from mimalloc's base API: zeroed, and null when the size overflows, as libc's.
    unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
        match count.checked_mul(size) {
            // SAFETY: plain allocation of a checked size.
            Some(total) => unsafe { mi::mi_zalloc(total) },
            None => std::ptr::null_mut(),
        }
    }
    // SAFETY: the four functions are one allocator family (mimalloc), return null only where
    // libc's would (exhaustion, overflow), align as malloc does, and this runs first in `main`,
    // before any tree-sitter object exists or any other thread starts.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: mi::mi_malloc,
            calloc,
            realloc: mi::mi_realloc,
            free: mi::mi_free,
        }));
    }
}

fn main() {
    use_mimalloc_for_tree_sitter();
    trove::bundle::set_build_stamp(env!("TROVE_SOURCE_HASH"));
    // The fail points the reliability tests set through `FAILPOINTS` (test builds only).
    #[cfg(feature = "test-hooks")]
    let _fail_points = fail::FailScenario::setup();
    let cli = cli::Cli::parse();
    let mut versions = cli.versions();
    let mut result = cli::run(cli);
    // A reader whose bundle was replaced under it (files of the version it began on removed)
    // reads the new version: twice at most, and only when a bundle's version changed meanwhile
    // (a file missing from a bundle nobody is writing is an error at once).
    for _ in 0..2 {
        match &result {
            Err(e) if versions.is_some() && cli::vanished_under(e) => {
                let again = cli::Cli::parse();
                let now = again.versions();
                if now == versions {
                    break;
                }
                versions = now;
                result = cli::run(again);
            }
            _ => break,
        }
    }
    match result {
        Ok(code) => std::process::exit(code),
        // A closed pipe (`trove languages | head`) is the reader's choice, not a failure.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            std::process::exit(0)
        }
        Err(e) => {
            // Names in a message (paths, revisions, URLs) cannot move the cursor or hide text.
            eprintln!("trove: error: {}", trove::util::visible(&format!("{e:#}")));
            let kind = e.chain().find_map(trove_service::kind_of);
            std::process::exit(kind.map_or(2, |k| k.exit_code()));
        }
    }
}
