//! `sdbench report`: a result file as a Markdown or HTML report (with charts), or several result
//! files side by side as an HTML comparison.

use std::path::PathBuf;

use sdbench_bench::result::write_atomically;
use sdbench_bench::BenchResult;
use sdbench_report::Run;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Result files written by `sdbench bench`; two or more make a comparison.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The report to write: `.html` (with charts) or `.md` (one run only).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let results = args
        .files
        .iter()
        .map(|f| BenchResult::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let labels: Vec<String> = results
        .iter()
        .zip(&args.files)
        .map(|(r, f)| run_label(r, f))
        .collect();
    let runs: Vec<Run> = results
        .iter()
        .zip(&labels)
        .map(|(result, label)| Run { label, result })
        .collect();
    let text = sdbench_report::for_file(&runs, &args.out)
        .map_err(|e| anyhow::anyhow!("--out {}: {e}", args.out.display()))?;
    write_atomically(&args.out, text.as_bytes())?;
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// The device and precision, then the file name, so runs on one device stay apart.
fn run_label(r: &BenchResult, file: &std::path::Path) -> String {
    format!(
        "{} {} ({})",
        r.backend.device,
        r.backend.precision,
        file.file_name().unwrap_or_default().to_string_lossy()
    )
}
