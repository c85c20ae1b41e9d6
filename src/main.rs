//! The `trove` binary: parses arguments, runs the subcommand, maps errors to exit codes
//! (0 ok, 1 no results from a query, 2 bad input or failure; clap's own usage errors are 2 as well).
mod cli;

use clap::Parser;

/// mimalloc: the workers allocate many small strings and vectors per file (tokens, chunks,
/// symbols) from several threads at once, where glibc's malloc spent ~19% of the index run's
/// cycles and contended on its arena locks.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
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
            eprintln!("trove: error: {e:#}");
            std::process::exit(2);
        }
    }
}
