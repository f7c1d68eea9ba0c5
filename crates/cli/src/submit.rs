//! `sdbench submit`: send a result JSON to a collection endpoint (with an outbox for later).

use std::path::PathBuf;

use anyhow::Context;
use sdbench_bench::submit::{default_outbox, Outcome, Submitter};
use sdbench_bench::BenchResult;

#[derive(clap::Args, Debug)]
pub struct SubmitArgs {
    /// The result file written by `sdbench bench`.
    file: PathBuf,
    /// Where to POST it: an SD Bench results service's `…/api/v1/results` (sdbench-server), or
    /// any http:// or https:// endpoint. There is no public service yet.
    #[arg(long, env = "SDBENCH_SUBMIT_ENDPOINT")]
    endpoint: Option<String>,
    /// Print the payload and send nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: SubmitArgs) -> anyhow::Result<()> {
    let result = BenchResult::load(&args.file)?;
    let Some(endpoint) = args.endpoint.as_deref() else {
        anyhow::bail!(
            "no results service is set and there is no public one yet: run your own              (`sdbench-server`, see docs/server.md) and pass --endpoint http://HOST:PORT/api/v1/results,              or set SDBENCH_SUBMIT_ENDPOINT"
        );
    };
    if args.dry_run {
        println!("{}", result.to_json());
        eprintln!("dry run: would POST {} to {endpoint}", args.file.display());
        return Ok(());
    }
    let submitter = Submitter::new(endpoint, default_outbox())?;
    for (path, outcome) in submitter.flush_outbox() {
        match outcome {
            Ok(status) => eprintln!("sent queued {} (HTTP {status})", path.display()),
            Err(reason) => eprintln!("still queued {}: {reason}", path.display()),
        }
    }
    match submitter.submit(&result).context("submission failed")? {
        Outcome::Sent { status, reply } => {
            println!("submitted run {} to {endpoint} (HTTP {status})", result.run_id);
            if let Some(reply) = reply {
                println!("{}", reply.describe(endpoint));
            }
            Ok(())
        }
        Outcome::Queued { path, reason } => anyhow::bail!(
            "could not reach {endpoint} ({reason}); the result is kept in {} and will be sent by the next `sdbench submit`",
            path.display()
        ),
    }
}
