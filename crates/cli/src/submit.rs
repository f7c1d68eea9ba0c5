//! `sdbench submit`: send a result JSON to a collection endpoint (with an outbox for later).

use std::path::PathBuf;

use anyhow::Context;
use sdbench_bench::submit::{default_outbox, Outcome, Submitter};
use sdbench_bench::BenchResult;

#[derive(clap::Args, Debug)]
pub struct SubmitArgs {
    /// The result file written by `sdbench bench`.
    file: PathBuf,
    /// Where to POST it (http:// or https://).
    #[arg(long)]
    endpoint: String,
    /// Print the payload and send nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: SubmitArgs) -> anyhow::Result<()> {
    let result = BenchResult::load(&args.file)?;
    if args.dry_run {
        println!("{}", result.to_json());
        eprintln!(
            "dry run: would POST {} to {}",
            args.file.display(),
            args.endpoint
        );
        return Ok(());
    }
    let submitter = Submitter::new(&args.endpoint, default_outbox())?;
    for (path, outcome) in submitter.flush_outbox() {
        match outcome {
            Ok(status) => eprintln!("sent queued {} (HTTP {status})", path.display()),
            Err(reason) => eprintln!("still queued {}: {reason}", path.display()),
        }
    }
    match submitter.submit(&result).context("submission failed")? {
        Outcome::Sent { status } => {
            println!("submitted run {} to {} (HTTP {status})", result.run_id, args.endpoint);
            Ok(())
        }
        Outcome::Queued { path, reason } => anyhow::bail!(
            "could not reach {} ({reason}); the result is kept in {} and will be sent by the next `sdbench submit`",
            args.endpoint,
            path.display()
        ),
    }
}
