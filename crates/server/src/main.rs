//! `sdbench-server`: the results service. With no arguments it serves on 127.0.0.1:8080 from an
//! SQLite file in its data folder; `--database postgres://…` shares one PostgreSQL database
//! between instances.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;

use sdbench_server::reference::ReferenceTable;
use sdbench_server::{Config, Service};

#[derive(Parser, Debug)]
#[command(
    name = "sdbench-server",
    version,
    about = "The SD Bench results service"
)]
struct Args {
    #[command(subcommand)]
    command: Option<Tool>,
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// A PostgreSQL URL (postgres://user:password@host/database); without it, SQLite in --data.
    #[arg(long, env = "SDBENCH_SERVER_DATABASE")]
    database: Option<String>,
    /// The data folder (the SQLite file): default `sdbench-server` in the platform's data folder
    /// (~/.local/share on Linux).
    #[arg(long)]
    data: Option<PathBuf>,
    /// A reference hash table (JSON) instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    reference_hashes: Option<PathBuf>,
    /// Submissions per client address per minute (also the burst allowed); 0: no limit.
    #[arg(long, default_value_t = 30)]
    submissions_per_minute: u32,
    /// Take clients' addresses from X-Forwarded-For (only behind a load balancer that sets it).
    #[arg(long)]
    trust_forwarded_for: bool,
}

#[derive(clap::Subcommand, Debug)]
enum Tool {
    /// Adds the images of a reference run (a result JSON of `sdbench bench` with the real weights
    /// on the CPU in f32) to a reference hash table, keyed by its model revision.
    AddReference {
        /// The reference run's result file.
        result: PathBuf,
        /// The table to update (created if missing).
        #[arg(long, default_value = "crates/server/reference-hashes.json")]
        table: PathBuf,
    },
}

fn add_reference(result: &std::path::Path, table_path: &std::path::Path) -> anyhow::Result<()> {
    let run = sdbench_bench::BenchResult::load(result)?;
    let mut table = match table_path.exists() {
        true => ReferenceTable::load(table_path)?,
        false => ReferenceTable::default(),
    };
    let key = table.add_run(&run)?;
    let temporary = table_path.with_extension("json.tmp");
    std::fs::write(&temporary, table.to_json())
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    std::fs::rename(&temporary, table_path)
        .with_context(|| format!("cannot replace {}", table_path.display()))?;
    println!(
        "{} now holds {} model(s); added {key} ({})",
        table_path.display(),
        table.len(),
        run.workload.name
    );
    Ok(())
}

/// The platform's data folder (`~/.local/share` on Linux) with `sdbench-server` in it.
fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("sdbench-server")
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if let Some(Tool::AddReference { result, table }) = &args.command {
        return add_reference(result, table);
    }
    let config = Config {
        database: args.database,
        data_dir: args.data.unwrap_or_else(default_data_dir),
        reference_hashes: args.reference_hashes,
        submissions_per_minute: args.submissions_per_minute,
        trust_forwarded_for: args.trust_forwarded_for,
    };
    let service = Service::open(&config)?;
    let engine = service.db.engine();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener.local_addr()?;
        match &config.database {
            Some(_) => eprintln!("serving on http://{address} (PostgreSQL)"),
            None => eprintln!(
                "serving on http://{address} ({engine} in {})",
                config.data_dir.display()
            ),
        }
        sdbench_server::serve(listener, Arc::new(service), shutdown_signal()).await?;
        eprintln!("stopped");
        Ok(())
    })
}

/// Ctrl-C or SIGTERM: stop taking connections and finish the requests in flight.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
}
