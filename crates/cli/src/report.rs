//! `sdbench report`: a result file as a Markdown or HTML report (with charts), several result
//! files side by side as an HTML comparison, or a sweep file as an HTML page of its points.

use std::path::PathBuf;

use anyhow::Context;
use sdbench_bench::result::write_atomically;
use sdbench_bench::sweep::Sweep;
use sdbench_bench::{BenchError, BenchResult};
use sdbench_report::Run;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Result files written by `sdbench bench` (two or more make a comparison), or one sweep file
    /// written by `sdbench sweep`.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The report to write: `.html` (with charts) or `.md` (one run only).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    // Each file is read once: it is a sweep or a result by what it says it is.
    let texts = args
        .files
        .iter()
        .map(|f| std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(sweep) = sweep_of(&args.files, &texts)? {
        let html = matches!(
            args.out
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("html" | "htm")
        );
        if !html {
            anyhow::bail!(
                "--out {}: a sweep's report is HTML: name it .html",
                args.out.display()
            );
        }
        write_atomically(&args.out, sdbench_report::sweep::report(&sweep).as_bytes())?;
        eprintln!("wrote {}", args.out.display());
        return Ok(());
    }
    let results = texts
        .iter()
        .zip(&args.files)
        .map(|(text, file)| {
            BenchResult::from_json(text).map_err(|problem| BenchError::BadResult {
                path: file.clone(),
                problem,
            })
        })
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
    // Each result's images are beside it.
    let dirs: Vec<&std::path::Path> = args
        .files
        .iter()
        .map(|f| f.parent().unwrap_or(std::path::Path::new("")))
        .collect();
    let text = sdbench_report::for_file(&runs, &dirs, &args.out)
        .map_err(|e| anyhow::anyhow!("--out {}: {e}", args.out.display()))?;
    write_atomically(&args.out, text.as_bytes())?;
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// The sweep, where the files are one sweep file; an error where a sweep comes with others.
fn sweep_of(files: &[PathBuf], texts: &[String]) -> anyhow::Result<Option<Sweep>> {
    let mut sweeps = Vec::new();
    for (file, text) in files.iter().zip(texts) {
        if Sweep::is_sweep(text) {
            sweeps.push(Sweep::from_json(text).map_err(|problem| {
                anyhow::anyhow!(
                    "{} is not a valid SD Bench sweep: {problem}",
                    file.display()
                )
            })?);
        }
    }
    match (sweeps.len(), files.len()) {
        (0, _) => Ok(None),
        (1, 1) => Ok(sweeps.pop()),
        _ => anyhow::bail!(
            "a sweep file is reported on its own: give one sweep file, or result files"
        ),
    }
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
