//! `sdbench bench`: the standard benchmark (or a custom variant), its summary and result JSON.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use sdbench_bench::result::{AppInfo, DEFAULT_FILE_NAME};
use sdbench_bench::runner::{self, Event};
use sdbench_bench::summary::{self, Format};
use sdbench_bench::workload::{workload_names, STANDARD_NAME};
use sdbench_bench::{BenchError, ModelChoice, Overrides, RunOptions, Workload};
use sdbench_diffusion::limits;
use sdbench_diffusion::{standard_workloads, ModelSource, SchedulerKind, FAMILIES};
use sdbench_hub::{HubSettings, RepoId};

use crate::model_arg;
use crate::progress::{format_duration, DownloadBar, RecentSteps};

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    chosen: ModelArgs,
    #[command(flatten)]
    device: crate::device_arg::DeviceArg,
    #[command(flatten)]
    memory: crate::device_arg::MemoryArg,
    /// Numeric precision: auto is f16 where the device supports it.
    #[arg(long, default_value = "auto", value_parser = limits::PRECISION_CHOICES)]
    precision: String,
    #[command(flatten)]
    threads: crate::threads::ThreadsArg,
    /// The result JSON; the images are saved beside it.
    #[arg(long, default_value = DEFAULT_FILE_NAME)]
    out: PathBuf,
    /// How to print the summary.
    #[arg(long, default_value = "table", value_parser = ["table", "md", "csv", "json"])]
    format: String,
    /// Custom run: denoising steps.
    #[arg(long)]
    steps: Option<usize>,
    /// Custom run: width (a multiple of 8, at most 2048).
    #[arg(long)]
    width: Option<usize>,
    /// Custom run: height (a multiple of 8, at most 2048).
    #[arg(long)]
    height: Option<usize>,
    /// Custom run: number of timed images (cycling through the workload's prompts).
    #[arg(long)]
    images: Option<usize>,
    #[arg(
        long,
        value_parser = clap::builder::PossibleValuesParser::new(SchedulerKind::NAMES),
        help = crate::model_arg::scheduler_help("Custom run: scheduler")
    )]
    scheduler: Option<String>,
    /// Custom run: one prompt for every image (seeds stay the standard ones).
    #[arg(long)]
    prompt: Option<String>,
    /// Custom run: images per prompt, made together (one denoiser call per step for all of them);
    /// each prompt gives this many timed images.
    #[arg(long)]
    batch: Option<usize>,
    /// Seconds of idle power sampling before the run.
    #[arg(long, default_value_t = 1.0)]
    baseline: f64,
    /// Keep timing whole passes of the workload's prompts until this many seconds have passed
    /// (MLPerf's minimum duration), so a short workload is measured at a steady temperature;
    /// the result records it, and stays standard.
    #[arg(long, value_name = "SECONDS")]
    min_duration: Option<f64>,
    /// Score every picture with CLIP after the timed region (torchmetrics' CLIPScore against its
    /// prompt) and record each score and their mean; the CLIP model is a Hub id (fetched once)
    /// or a folder.
    #[arg(long, value_name = "CLIP_MODEL", num_args = 0..=1, default_missing_value = sdbench_diffusion::quality::clip_score::DEFAULT_CLIP_MODEL)]
    quality: Option<String>,
    /// Print the allocator's in-use and reserved memory after loading, text encoding, each step
    /// and decoding (the result keeps it on GPU backends either way).
    #[arg(long)]
    vram_report: bool,
}

pub fn app_info() -> AppInfo {
    let commit = env!("SDBENCH_GIT_COMMIT");
    AppInfo {
        name: "sdbench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        commit: (!commit.is_empty()).then(|| commit.to_string()),
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let overrides = Overrides {
        steps: args.steps,
        width: args.width,
        height: args.height,
        images: args.images,
        scheduler: args
            .scheduler
            .as_deref()
            .map(SchedulerKind::from_name)
            .transpose()?,
        prompt: args.prompt.clone(),
        batch: args.batch,
    };
    let (workload, model) = workload_and_model(&args.chosen, &overrides)?;
    let format = Format::from_name(&args.format).expect("clap checked the format");
    check_out_path(&args.out)?;
    args.threads.apply()?;
    let mut options = RunOptions::new(workload, model, app_info());
    let device = args.memory.device_request(&args.device)?;
    (options.backend, options.device_index) = (device.backend, device.index);
    options.memory = args.memory.profile();
    options.memory_auto = args.memory.is_auto();
    options.memory_limit = args.memory.limit_bytes()?;
    options.precision = limits::precision_choice(&args.precision).map_err(anyhow::Error::msg)?;
    options.hub = HubSettings::from_env();
    options.set_baseline(args.baseline).context("--baseline")?;
    if let Some(name) = &args.quality {
        options.quality = Some(runner::QualityModel {
            name: name.clone(),
            folder: crate::clip_score::model_folder(name)?,
        });
    }
    if let Some(seconds) = args.min_duration {
        options
            .set_min_duration(seconds)
            .context("--min-duration")?;
    }

    let cancel = crate::interrupt::token();
    let mut view = BenchProgress::new(options.workload.steps);
    let outcome = runner::run(&options, &mut |e| view.event(e), &cancel);
    view.finish_line();
    let mut output = match outcome {
        Ok(output) => output,
        Err(BenchError::Cancelled) => {
            eprintln!("cancelled: nothing was saved");
            std::process::exit(130);
        }
        Err(e) => return Err(e).context("the benchmark failed"),
    };
    let saved =
        sdbench_history::save_benchmark(&mut output, &args.out, &sdbench_history::default_path())
            .with_context(|| format!("saving the result to {} failed", args.out.display()))?;
    if let Some(warning) = &saved.history_warning {
        eprintln!("warning: the run was not added to the history: {warning}");
    }
    print!("{}", summary::render(&output.result, format));
    std::io::stdout().flush()?;
    if args.vram_report {
        match &output.result.vram_report {
            Some(report) => eprint!("{}", report.table()),
            None => eprintln!("{}", no_vram_report(&output.result.backend.name)),
        }
    }
    eprintln!(
        "result: {} (images: {})",
        args.out.display(),
        saved
            .images
            .iter()
            .map(|p| p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !output.result.valid {
        anyhow::bail!(
            "the run is invalid and has no score: {}",
            output.result.invalid_reasons.join("; ")
        );
    }
    Ok(())
}

/// What names the model and workload, as `bench` and `sweep` take them.
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    #[arg(
        long,
        value_parser = clap::builder::PossibleValuesParser::new(workload_names()),
        help = workload_help()
    )]
    workload: Option<String>,
    #[arg(long, help = model_help())]
    model: Option<String>,
    #[command(flatten)]
    model_files: crate::model_arg::ModelFileArgs,
    /// Run on synthetic weights of the workload's architecture (no download; never a standard
    /// score).
    #[arg(long, conflicts_with = "model")]
    synthetic: bool,
    /// Hub revision (branch or commit).
    #[arg(long, default_value = "main")]
    revision: String,
}

/// The workload `--workload` names, else the one made for `--model`'s architecture (with a note
/// saying so), else the standard one, with `overrides`; and the model to run it on.
pub fn workload_and_model(
    args: &ModelArgs,
    overrides: &Overrides,
) -> anyhow::Result<(Workload, ModelChoice)> {
    let named = match args.model.as_deref() {
        Some(text) => Some((text, model_arg::parse(text, &args.model_files)?)),
        None => None,
    };
    let workload = match (args.workload.as_deref(), &named) {
        (Some(name), _) => Workload::named(name)?,
        (None, Some((text, name))) => {
            let hub = HubSettings::from_env();
            let (workload, why) = Workload::standard_for_model(name, text, &hub, &args.revision)?;
            eprintln!("note: running --workload {}, {why}", workload.name);
            workload
        }
        (None, None) => Workload::named(STANDARD_NAME)?,
    };
    let workload = workload.with_overrides(overrides)?;
    let model = if args.synthetic {
        ModelChoice::Local(ModelSource::Synthetic(workload.preset))
    } else {
        match named {
            None => ModelChoice::Hub {
                id: RepoId::parse(workload.preset.repository())?.0,
                revision: args.revision.clone(),
                fallback_to_synthetic: true,
            },
            Some((_, name)) => ModelChoice::from_name(name, &args.revision, false),
        }
    };
    Ok((workload, model))
}

/// Fails before any work when the result could not be written.
pub(crate) fn check_out_path(out: &std::path::Path) -> anyhow::Result<()> {
    if out.extension().and_then(|e| e.to_str()) != Some("json") {
        anyhow::bail!("--out {}: the result file must end in .json", out.display());
    }
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !dir.is_dir() {
        anyhow::bail!(
            "--out {}: folder {} does not exist",
            out.display(),
            dir.display()
        );
    }
    if out.is_dir() {
        anyhow::bail!("--out {} is a folder", out.display());
    }
    Ok(())
}

/// The run's progress on stderr: image i/N, step j/S, it/s, elapsed and ETA.
pub(crate) struct BenchProgress {
    terminal: bool,
    start: Instant,
    steps: usize,
    recent: RecentSteps,
    download: DownloadBar,
    open_line: bool,
}

/// A run estimated to take longer than this is told how to run a quick benchmark instead.
const QUICK_RUN_HINT_SECONDS: f64 = 600.0;

impl BenchProgress {
    pub(crate) fn new(steps: usize) -> Self {
        BenchProgress {
            terminal: std::io::stderr().is_terminal(),
            start: Instant::now(),
            steps,
            recent: RecentSteps::default(),
            download: DownloadBar::new(),
            open_line: false,
        }
    }

    fn say(&mut self, text: &str) {
        self.finish_line();
        eprintln!("{text}");
    }

    pub(crate) fn finish_line(&mut self) {
        if self.open_line {
            eprintln!();
            self.open_line = false;
        }
        self.download.finish();
    }

    pub(crate) fn event(&mut self, event: &Event) {
        match event {
            Event::Note { text } => self.say(&format!("note: {text}")),
            Event::Download(p) => self.download.update(p),
            Event::Loading { model, backend } => {
                self.say(&format!("loading {model} on {backend}…"))
            }
            Event::Loaded {
                seconds,
                device,
                precision,
            } => self.say(&format!("loaded in {seconds:.1} s: {device}, {precision}")),
            Event::Baseline { seconds } => {
                self.say(&format!("idle baseline sampled for {seconds:.1} s"))
            }
            Event::ImageStarted { warmup: true, .. } => {
                self.say("warm-up image (untimed: compiles kernels and tunes them)…")
            }
            Event::ImageStarted { index: 1, .. } => {
                // Elapsed counts the timed run.
                self.start = Instant::now();
                self.recent.clear();
            }
            Event::ImageStarted { .. } => self.recent.clear(),
            // Queued steps (timed images on a GPU) have no time of their own and arrive together
            // at the end of the loop: the image's line says its time.
            Event::Step { seconds: None, .. } => {}
            Event::Step {
                index,
                total,
                step,
                steps,
                seconds: Some(seconds),
                warmup,
            } => {
                let step_time = self.recent.push(*seconds);
                let rate = 1.0 / step_time.max(1e-9);
                let label = if *warmup {
                    "warm-up".to_string()
                } else {
                    format!("image {index}/{total}")
                };
                let remaining_steps = if *warmup {
                    steps - step
                } else {
                    (steps - step) + (total - index) * self.steps
                };
                let line = format!(
                    "{label}  step {step}/{steps}  {rate:.2} it/s  elapsed {}  ETA {}",
                    format_duration(self.start.elapsed().as_secs_f64()),
                    format_duration(remaining_steps as f64 * step_time)
                );
                if self.terminal {
                    eprint!("\r{line:<78}");
                    self.open_line = true;
                } else if step == steps || step % 10 == 0 || *step == 1 {
                    eprintln!("{line}");
                }
            }
            Event::ImageFinished {
                index,
                total,
                seconds,
                valid,
                warmup,
            } => {
                let what = if *warmup {
                    "warm-up".to_string()
                } else {
                    format!("image {index}/{total}")
                };
                let check = if *valid { "" } else { "  INVALID" };
                self.say(&format!("{what} done in {seconds:.2} s{check}"));
            }
            Event::Estimate { seconds } => {
                self.say(&format!(
                    "estimated time left: about {} (from the warm-up's step time)",
                    format_duration(*seconds)
                ));
                if *seconds > QUICK_RUN_HINT_SECONDS {
                    self.say(
                        "for a quick look instead: Ctrl-C, then `sdbench bench --steps 4 --width 256 \
                         --height 256 --images 2` (a custom run; its score is not comparable)",
                    );
                }
            }
            // The terminal view shows power in the summary; the live feed is for the app's chart.
            // The stage and memory events are a single generation's.
            Event::Telemetry { .. }
            | Event::TextEncoded { .. }
            | Event::Decoded { .. }
            | Event::Vram { .. } => {}
        }
    }
}

/// Why there is no VRAM report.
/// `--workload`'s help: each standard workload the model families declare.
fn workload_help() -> String {
    let each: Vec<String> = standard_workloads()
        .map(|w| {
            format!(
                "{} ({}, {}x{}, {} steps, guidance {})",
                w.name,
                w.preset.long_label(),
                w.width,
                w.height,
                w.steps,
                w.guidance
            )
        })
        .collect();
    format!(
        "The standard workload: {}. Scores of different workloads are never compared. Default: the one made for --model's architecture, or {STANDARD_NAME}.",
        or_list(&each)
    )
}

/// `--model`'s help, with each standard workload's model.
fn model_help() -> String {
    let repositories: Vec<String> = standard_workloads()
        .map(|w| w.preset.repository().to_string())
        .collect();
    // What the family that reads single files says its pipelines hold ("SD1.x, SD2.x", ...).
    let checkpoints: Vec<String> = FAMILIES
        .iter()
        .filter(|family| family.checkpoints.is_some())
        .flat_map(|family| family.classes.iter().map(|(_, what)| what.to_string()))
        .collect();
    format!(
        "A Hub id (downloaded into the Hugging Face cache on first use), a local diffusers folder, a single-file {} checkpoint (.safetensors or .gguf), or `synthetic`. Default: the workload's model ({}).",
        or_list(&checkpoints),
        or_list(&repositories)
    )
}

/// "a, b or c".
fn or_list(items: &[String]) -> String {
    match items.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

pub fn no_vram_report(backend: &str) -> String {
    format!("no VRAM report: the {backend} backend has no device memory allocator to ask")
}
