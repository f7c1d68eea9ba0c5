//! `sdbench history`: the runs SD Bench remembers (every `sdbench bench` result, and the desktop
//! app's runs and generations), shared with the app in `{data dir}/history.sqlite`.

use std::path::PathBuf;

use sdbench_bench::comparison::{check_regression, Verdict, MIN_EARLIER_RUNS};
use sdbench_bench::BenchResult;
use sdbench_history::{default_path, Filter, History, Record, RunKind};

#[derive(clap::Subcommand, Debug)]
pub enum HistoryCommand {
    /// The runs, newest first.
    List {
        /// Only benchmarks or only generations.
        #[arg(long, value_parser = ["benchmark", "generation"])]
        kind: Option<String>,
        /// Only runs on this backend (cpu, cuda, vulkan, …).
        #[arg(long)]
        backend: Option<String>,
        /// Only runs whose workload or prompt, model or device contains this text.
        #[arg(long)]
        text: Option<String>,
        /// Only valid standard runs (comparable scores).
        #[arg(long)]
        standard: bool,
        /// Only the points of this sweep (its id is in the sweep file and each point's result).
        #[arg(long, value_name = "SWEEP_ID")]
        sweep: Option<String>,
        /// At most this many runs (the newest).
        #[arg(long)]
        limit: Option<usize>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One run, whole, as JSON.
    Show {
        /// The run's id (`sdbench history list` shows them).
        id: String,
    },
    /// Regression check: is a benchmark run (default: the newest) slower than the median of the
    /// earlier runs of its key (same workload, size, steps, batch, precision, backend, device…) by
    /// more than their noise? Exit status 1 when it is.
    Check {
        /// The run to check (default: the newest benchmark).
        id: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Every benchmark run slower than the earlier runs of its key by more than their noise
    /// (`check` on each run), oldest first. Exit status 1 when there is one.
    Regressions {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget runs (their files on disk are left alone).
    Delete {
        /// The runs' ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Write runs, whole, to one JSON file.
    Export {
        /// The runs' ids.
        #[arg(required = true)]
        ids: Vec<String>,
        /// The JSON file to write.
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn run(command: HistoryCommand) -> anyhow::Result<()> {
    let history = History::open(&default_path())?;
    match command {
        HistoryCommand::List {
            kind,
            backend,
            text,
            standard,
            sweep,
            limit,
            json,
        } => {
            let filter = Filter {
                kind: kind.as_deref().and_then(RunKind::from_name),
                backend,
                text,
                standard_only: standard,
                valid_only: standard,
                sweep,
                limit,
                ..Filter::default()
            };
            let runs = history.list(&filter)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else if runs.is_empty() {
                println!("(no runs)");
            } else {
                for r in runs {
                    let score = match (r.kind, r.score) {
                        (RunKind::Generation, _) => "image".to_string(),
                        (_, Some(s)) => format!("score {s}"),
                        (_, None) if !r.valid => "invalid".to_string(),
                        (_, None) => "no score".to_string(),
                    };
                    let profile = match r.memory_profile.as_deref() {
                        Some(p) if p != "full" => format!(", {p} memory"),
                        _ => String::new(),
                    };
                    let sweep = match &r.sweep_id {
                        Some(id) => format!("  [sweep {}]", id.get(..8).unwrap_or(id)),
                        None => String::new(),
                    };
                    println!(
                        "{}  {}  {:<10}  {} on {} ({}{profile})  {}{}{sweep}",
                        r.id,
                        r.created_at,
                        score,
                        r.backend,
                        r.device,
                        r.precision,
                        r.title,
                        if r.standard { "  [standard]" } else { "" }
                    );
                }
            }
        }
        HistoryCommand::Show { id } => {
            let json = match history.get(&id)? {
                Record::Benchmark(r) => r.to_json(),
                Record::Generation(g) => serde_json::to_string_pretty(&g)?,
            };
            println!("{json}");
        }
        HistoryCommand::Check { id, json } => check(&history, id, json)?,
        HistoryCommand::Regressions { json } => regressions(&history, json)?,
        HistoryCommand::Delete { ids } => {
            for id in ids {
                if !history.delete(&id)? {
                    anyhow::bail!("no run {id} in the history");
                }
                eprintln!("deleted {id}");
            }
        }
        HistoryCommand::Export { ids, out } => {
            let n = history.export(&ids, &out)?;
            eprintln!("wrote {n} run(s) to {}", out.display());
        }
    }
    Ok(())
}

/// Every benchmark run in the history, newest first.
fn benchmark_runs(history: &History) -> anyhow::Result<Vec<BenchResult>> {
    let filter = Filter {
        kind: Some(RunKind::Benchmark),
        ..Filter::default()
    };
    let mut runs: Vec<BenchResult> = Vec::new();
    for summary in history.list(&filter)? {
        if let Record::Benchmark(result) = history.get(&summary.id)? {
            runs.push(*result);
        }
    }
    Ok(runs)
}

fn regressions(history: &History, json: bool) -> anyhow::Result<()> {
    let runs = benchmark_runs(history)?;
    let all: Vec<&BenchResult> = runs.iter().collect();
    let found: Vec<_> = runs
        .iter()
        .rev()
        .map(|run| (run, check_regression(run, &all)))
        .filter(|(_, c)| c.verdict == Verdict::Regression)
        .collect();
    if json {
        let checks: Vec<_> = found.iter().map(|(_, c)| c).collect();
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else if found.is_empty() {
        println!(
            "no regressions among {} benchmark run(s) (a verdict needs {MIN_EARLIER_RUNS} earlier runs of the same key)",
            runs.len()
        );
    } else {
        for (run, c) in &found {
            println!(
                "run {} ({}): {:.3} s/image, {:+.1}% against the median of {} earlier runs; {}",
                c.run_id,
                run.created_at,
                c.seconds_per_image,
                100.0 * c.change.unwrap_or_default(),
                c.earlier_runs,
                c.key.describe()
            );
        }
    }
    if !found.is_empty() {
        anyhow::bail!(
            "{} of {} benchmark runs are regressions",
            found.len(),
            runs.len()
        );
    }
    Ok(())
}

fn check(history: &History, id: Option<String>, json: bool) -> anyhow::Result<()> {
    let runs = benchmark_runs(history)?;
    let run = match &id {
        Some(id) => runs
            .iter()
            .find(|r| &r.run_id == id)
            .ok_or_else(|| anyhow::anyhow!("no benchmark run {id} in the history"))?,
        None => runs.first().ok_or_else(|| {
            anyhow::anyhow!("the history has no benchmark runs; run `sdbench bench` first")
        })?,
    };
    let earlier: Vec<&BenchResult> = runs.iter().collect();
    let c = check_regression(run, &earlier);
    if json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        println!(
            "run {} ({}): {:.3} s/image",
            c.run_id, run.created_at, c.seconds_per_image
        );
        println!("key: {}", c.key.describe());
        match (c.baseline, c.noise, c.change) {
            (Some(baseline), Some(noise), Some(change)) => {
                println!(
                    "earlier runs of this key: {}, median {baseline:.3} s/image, noise ±{noise:.3} s ({:.1}%)",
                    c.earlier_runs,
                    100.0 * noise / baseline
                );
                let verdict = match c.verdict {
                    Verdict::Regression => "REGRESSION: slower than the earlier runs beyond their noise",
                    Verdict::Improvement => "faster than the earlier runs beyond their noise",
                    _ => "steady: within the earlier runs' noise",
                };
                println!("{:+.1}% against the median; {verdict}", 100.0 * change);
            }
            _ if c.verdict == Verdict::Invalid => {
                println!("no verdict: the run is invalid ({})", run.invalid_reasons.join("; "))
            }
            _ => println!(
                "no verdict: {} earlier valid run(s) of this key; a verdict needs {MIN_EARLIER_RUNS}",
                c.earlier_runs
            ),
        }
    }
    if c.verdict == Verdict::Regression {
        anyhow::bail!(
            "run {} is a regression: {:+.1}% against the median of {} earlier runs of its key",
            c.run_id,
            100.0 * c.change.unwrap_or_default(),
            c.earlier_runs
        );
    }
    Ok(())
}
