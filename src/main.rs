//! The `trove` binary: parses arguments, runs the subcommand, maps errors to exit codes
//! (0 ok, 2 bad input or failure; clap's own usage errors are 2 as well).
mod cli;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    if let Err(e) = cli::run(cli) {
        eprintln!("trove: error: {e:#}");
        std::process::exit(2);
    }
}
