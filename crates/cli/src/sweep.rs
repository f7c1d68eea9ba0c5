//! `sdbench sweep`: one model and workload over backends, precisions, batch sizes, image sizes and
//! memory profiles; a table of every point, the fastest configuration, and one sweep file.

use std::path::PathBuf;

use anyhow::Context;
use sdbench_bench::sweep::{self, Batches, SweepAxes, SweepEvent, DEFAULT_SWEEP_FILE};
use sdbench_bench::{BenchError, Overrides, RunOptions};
use sdbench_diffusion::device::probe_all;
use sdbench_diffusion::limits::{self, batch_error, side_error};
use sdbench_diffusion::{BackendRequest, MemoryProfile};
use sdbench_hub::HubSettings;
use sdbench_session::device_memory::{memory_limit_bytes, MAX_MEMORY_LIMIT_GIB};

use crate::bench::{app_info, check_out_path, workload_and_model, BenchProgress, ModelArgs};

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The workload and model every point runs, as `bench` takes them.
    #[command(flatten)]
    chosen: ModelArgs,
    /// Backends, comma-separated (cpu, cuda, rocm, vulkan, metal, dx12, auto), or `all`: every
    /// backend usable on this machine (as `sdbench devices` lists them).
    #[arg(long, default_value = "auto", value_delimiter = ',')]
    backend: Vec<String>,
    /// Precisions, comma-separated (auto, f32, f16, bf16).
    #[arg(long, default_value = "auto", value_delimiter = ',')]
    precision: Vec<String>,
    /// Batch sizes, comma-separated, or `max`: 1, 2, 4, … until the fit check says the next does
    /// not fit (nothing is allocated for it), at most 64.
    #[arg(long, default_value = "1", value_delimiter = ',')]
    batch: Vec<String>,
    /// Image sizes, comma-separated WIDTHxHEIGHT (default: the workload's).
    #[arg(long, value_delimiter = ',')]
    size: Vec<String>,
    /// Memory profiles, comma-separated (full, balanced, low, minimal, cpu).
    #[arg(long, default_value = "full", value_delimiter = ',')]
    memory: Vec<String>,
    /// Device memory in GiB the fit check assumes instead of what the device has free.
    #[arg(long = "memory-limit", value_name = "GIB")]
    memory_limit: Option<f64>,
    /// Denoising steps of every point (default: the workload's).
    #[arg(long)]
    steps: Option<usize>,
    /// Timed images of every point (default: the workload's prompts).
    #[arg(long)]
    images: Option<usize>,
    /// Seconds of idle power sampling before each point.
    #[arg(long, default_value_t = 1.0)]
    baseline: f64,
    #[command(flatten)]
    threads: crate::threads::ThreadsArg,
    /// The sweep file: every point's result, or why it did not run.
    #[arg(long, default_value = DEFAULT_SWEEP_FILE)]
    out: PathBuf,
}

pub fn run(args: SweepArgs) -> anyhow::Result<()> {
    let axes = axes(&args)?;
    let overrides = Overrides {
        steps: args.steps,
        images: args.images,
        ..Overrides::default()
    };
    let (workload, model) = workload_and_model(&args.chosen, &overrides)?;
    check_out_path(&args.out)?;
    args.threads.apply()?;
    let steps = workload.steps;
    let mut base = RunOptions::new(workload, model, app_info());
    base.hub = HubSettings::from_env();
    base.set_baseline(args.baseline).context("--baseline")?;
    base.memory_limit = match args.memory_limit {
        None => None,
        Some(gib) => Some(memory_limit_bytes(gib).with_context(|| {
            format!("--memory-limit {gib}: give the device memory in GiB, more than 0 and at most {MAX_MEMORY_LIMIT_GIB}")
        })?),
    };
    let cancel = crate::interrupt::token();
    let mut view = BenchProgress::new(steps);
    let outcome = sweep::run(
        &base,
        &axes,
        &mut |event| match event {
            SweepEvent::Point {
                index,
                total,
                settings,
            } => {
                view.finish_line();
                view = BenchProgress::new(steps);
                let of = total.map_or(String::new(), |t| format!("/{t}"));
                eprintln!("point {}{of}: {}", index + 1, settings.describe());
            }
            SweepEvent::Run(e) => view.event(e),
            SweepEvent::Finished { point, .. } => {
                view.finish_line();
                if let Some(why) = &point.skipped {
                    eprintln!("  skipped: {why}");
                }
            }
        },
        &cancel,
    );
    view.finish_line();
    let sweep = match outcome {
        Ok(sweep) => sweep,
        Err(BenchError::Cancelled) => {
            eprintln!("cancelled: nothing was saved");
            std::process::exit(130);
        }
        Err(e) => return Err(e).context("the sweep failed"),
    };
    sweep
        .save(&args.out)
        .with_context(|| format!("saving the sweep to {} failed", args.out.display()))?;
    if let Err(warning) = remember(&sweep) {
        eprintln!("warning: the sweep's points were not added to the history: {warning}");
    }
    print!("{}", sweep::table(&sweep));
    eprintln!("sweep: {}", args.out.display());
    if sweep.points.iter().all(|p| p.result.is_none()) {
        anyhow::bail!("no point of the sweep ran");
    }
    Ok(())
}

/// Each point that ran goes into the history, under the sweep's id.
fn remember(sweep: &sdbench_bench::sweep::Sweep) -> anyhow::Result<()> {
    let history = sdbench_history::History::open(&sdbench_history::default_path())?;
    for result in sweep.points.iter().filter_map(|p| p.result.as_ref()) {
        history.add_benchmark(result)?;
    }
    Ok(())
}

/// The axes the arguments ask for, each value checked before anything runs.
fn axes(args: &SweepArgs) -> anyhow::Result<SweepAxes> {
    let backends = if args.backend.iter().any(|b| b == "all") {
        if args.backend.len() > 1 {
            anyhow::bail!("--backend all already names every usable backend; give it alone");
        }
        let usable: Vec<BackendRequest> = probe_all()
            .iter()
            .filter(|s| s.usable)
            .map(|s| BackendRequest::from_name(s.kind.name()))
            .collect::<Result<_, _>>()?;
        if usable.is_empty() {
            anyhow::bail!(
                "--backend all: no backend is usable on this machine (see `sdbench devices`)"
            );
        }
        usable
    } else {
        args.backend
            .iter()
            .map(|b| BackendRequest::from_name(b).with_context(|| format!("--backend {b}")))
            .collect::<anyhow::Result<_>>()?
    };
    let precisions = args
        .precision
        .iter()
        .map(|p| limits::precision_choice(p).map_err(|e| anyhow::anyhow!("--precision {p}: {e}")))
        .collect::<anyhow::Result<_>>()?;
    let batches = match args.batch.as_slice() {
        [one] if one == "max" => Batches::Max,
        list => Batches::List(
            list.iter()
                .map(|b| {
                    let n: usize = b.parse().map_err(|_| {
                        anyhow::anyhow!("--batch {b}: give whole numbers, or max alone")
                    })?;
                    match batch_error(n) {
                        Some(problem) => anyhow::bail!("--batch {b}: {problem}"),
                        None => Ok(n),
                    }
                })
                .collect::<anyhow::Result<_>>()?,
        ),
    };
    let sizes = match args.size.is_empty() {
        true => vec![None],
        false => args
            .size
            .iter()
            .map(|s| parse_size(s).map(Some))
            .collect::<anyhow::Result<_>>()?,
    };
    let memory = args
        .memory
        .iter()
        .map(|m| {
            MemoryProfile::from_name(m).ok_or_else(|| {
                anyhow::anyhow!("--memory {m}: choose full, balanced, low, minimal or cpu")
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(SweepAxes {
        backends,
        precisions,
        batches,
        sizes,
        memory,
    })
}

/// `WIDTHxHEIGHT`, each side as `--width` takes it.
fn parse_size(text: &str) -> anyhow::Result<(usize, usize)> {
    let bad = || anyhow::anyhow!("--size {text}: give WIDTHxHEIGHT, e.g. 512x768");
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: usize = w.trim().parse().map_err(|_| bad())?;
    let h: usize = h.trim().parse().map_err(|_| bad())?;
    for (name, side) in [("width", w), ("height", h)] {
        if let Some(problem) = side_error(name, side) {
            anyhow::bail!("--size {text}: {problem}");
        }
    }
    Ok((w, h))
}
