//! `sdbench history`: the runs SD Bench remembers (every `sdbench bench` result, and the desktop
//! app's runs and generations), shared with the app in `{data dir}/history.sqlite`.

use std::path::PathBuf;

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
        #[arg(long)]
        limit: Option<usize>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One run, whole, as JSON.
    Show { id: String },
    /// Forget runs (their files on disk are left alone).
    Delete {
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Write runs, whole, to one JSON file.
    Export {
        #[arg(required = true)]
        ids: Vec<String>,
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
            limit,
            json,
        } => {
            let filter = Filter {
                kind: kind.as_deref().and_then(RunKind::from_name),
                backend,
                text,
                standard_only: standard,
                valid_only: standard,
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
                    println!(
                        "{}  {}  {:<10}  {} on {} ({})  {}{}",
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
