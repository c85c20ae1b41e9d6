//! `trove upgrade BUNDLE`.
use clap::Args;
use std::path::PathBuf;

/// Convert a bundle of an older format to this trove's, in place, without the source checkout.
///
/// A bundle written by a trove before bundle format 1.0 (format_version 9) is rewritten as format
/// 1.0: every table, embedding and file text is kept, the manifest gains the version keys and
/// lists the build that wrote the rows, views.sql is written anew, and the result is verified.
/// A bundle already of this format's major version is only verified. Older formats (8 and
/// before) cannot be converted: re-index them. A packed bundle is unpacked first (`trove
/// unpack`). Exit codes: 0 upgraded or already current, 2 refused.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  trove upgrade app.bundle\n  trove query app.bundle \"where are invoices charged\""
)]
pub struct UpgradeArgs {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// No summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `trove upgrade`.
pub fn run(a: UpgradeArgs) -> anyhow::Result<()> {
    let r = trove::bundle::upgrade::upgrade(&a.bundle)?;
    if a.json {
        super::print_json(&serde_json::json!({
            "bundle": a.bundle.display().to_string(),
            "from": r.from,
            "to": r.to,
            "rewritten": r.rewritten,
        }))?;
    } else if !a.quiet {
        if r.rewritten {
            eprintln!(
                "{}: upgraded from format_version {} to bundle format {}, verified",
                a.bundle.display(),
                r.from,
                r.to
            );
        } else {
            eprintln!(
                "{}: already bundle format {}, nothing to do (verified)",
                a.bundle.display(),
                r.to
            );
        }
    }
    Ok(())
}
