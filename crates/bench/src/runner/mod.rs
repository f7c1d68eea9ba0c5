//! Runs a workload: resolve the model, load it, sample an idle baseline, one untimed warm-up
//! image, then every timed image with telemetry running, and assemble the result. `run` reads as
//! the list of phases; each phase is a function in this folder.

mod assemble;
mod images;
mod load;
mod model;
mod own_weights;
mod quality;
mod telemetry;

use std::path::{Path, PathBuf};
use std::time::Duration;

use sdbench_diffusion::io::image::{write_png, RgbImage};
use sdbench_diffusion::{BackendRequest, CancelToken, MemoryProfile, ModelSource, Precision};
use sdbench_hub::{HubSettings, RepoId};
use sdbench_session::ModelName;

use crate::error::{BenchError, Result};
use crate::result::KernelColdStart;
use crate::result::{AppInfo, BenchResult};
use crate::workload::Workload;
pub use sdbench_session::events::{Event, LIVE_TELEMETRY_INTERVAL};
use telemetry::RunTelemetry;

#[derive(Debug, Clone)]
pub enum ModelChoice {
    /// A Hub repository, downloaded into (or read from) the Hugging Face cache. With
    /// `fallback_to_synthetic`, a machine with no network and no cached copy runs on synthetic
    /// weights instead (and says so).
    Hub {
        id: RepoId,
        revision: String,
        fallback_to_synthetic: bool,
    },
    /// A model on this machine (folder or single-file checkpoint), or synthetic weights.
    Local(ModelSource),
}

impl ModelChoice {
    /// The model a person named, as the runner takes it; a Hub model is read at `revision`, and
    /// with `fallback_to_synthetic` runs on synthetic weights when it is neither cached nor
    /// downloadable.
    pub fn from_name(name: ModelName, revision: &str, fallback_to_synthetic: bool) -> ModelChoice {
        match name {
            ModelName::Local(source) => ModelChoice::Local(source),
            ModelName::Hub { id, .. } => ModelChoice::Hub {
                id,
                revision: revision.into(),
                fallback_to_synthetic,
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub workload: Workload,
    pub model: ModelChoice,
    pub backend: BackendRequest,
    /// Which of the backend's devices (`--device N`); `None`: its best.
    pub device_index: Option<usize>,
    /// `None`: f16 where the device supports it.
    pub precision: Option<Precision>,
    /// How the pipeline is placed to save device memory; only `Full` runs are standard. `Cpu`
    /// runs on the CPU backend whatever `backend` says.
    pub memory: MemoryProfile,
    /// `--memory auto`: `memory` is ignored and the fastest profile that fits the device is
    /// chosen (`engine::choose_auto`); the result records the one chosen.
    pub memory_auto: bool,
    /// Device memory the fit check and auto assume instead of the driver's figure.
    pub memory_limit: Option<u64>,
    pub hub: HubSettings,
    pub app: AppInfo,
    /// `/` on a real machine; a recorded tree in tests.
    pub sysfs_root: PathBuf,
    pub use_nvml: bool,
    pub sample_interval: Duration,
    /// Idle sampling before the run.
    pub baseline: Duration,
    /// `--min-duration`: repeat the timed prompts in whole passes until this much has passed.
    pub min_duration: Option<Duration>,
    /// `--quality`: score the pictures with this CLIP model after the timed region.
    pub quality: Option<QualityModel>,
}

/// A CLIP model to score pictures with: its name as given, and its folder.
#[derive(Debug, Clone)]
pub struct QualityModel {
    pub name: String,
    pub folder: PathBuf,
}

impl RunOptions {
    pub fn new(workload: Workload, model: ModelChoice, app: AppInfo) -> RunOptions {
        RunOptions {
            workload,
            model,
            backend: BackendRequest::Auto,
            device_index: None,
            precision: None,
            memory: MemoryProfile::Full,
            memory_auto: false,
            memory_limit: None,
            hub: HubSettings::from_env(),
            app,
            sysfs_root: PathBuf::from("/"),
            use_nvml: true,
            sample_interval: sdbench_telemetry::sampler::DEFAULT_INTERVAL,
            baseline: Duration::from_secs(1),
            min_duration: None,
            quality: None,
        }
    }

    /// Sets the idle baseline sampled before the run, in seconds: 0 (none) to
    /// `MAX_BASELINE_SECONDS`.
    pub fn set_baseline(&mut self, seconds: f64) -> Result<()> {
        if !(0.0..=MAX_BASELINE_SECONDS).contains(&seconds) {
            return Err(BenchError::Workload(format!(
                "an idle baseline of {seconds} s is out of range: use 0 to {MAX_BASELINE_SECONDS} seconds"
            )));
        }
        self.baseline = Duration::from_secs_f64(seconds);
        Ok(())
    }
}

/// The longest idle baseline a run samples.
pub const MAX_BASELINE_SECONDS: f64 = 60.0;
/// The longest minimum duration a run takes (MLPerf's is 600 s).
pub const MAX_MIN_DURATION_SECONDS: f64 = 3600.0;

impl RunOptions {
    /// Sets the timed region's minimum duration, in seconds: more than 0, up to
    /// `MAX_MIN_DURATION_SECONDS`.
    pub fn set_min_duration(&mut self, seconds: f64) -> Result<()> {
        if !(seconds > 0.0 && seconds <= MAX_MIN_DURATION_SECONDS) {
            return Err(BenchError::Workload(format!(
                "a minimum duration of {seconds} s is out of range: use more than 0, up to {MAX_MIN_DURATION_SECONDS} seconds"
            )));
        }
        self.min_duration = Some(Duration::from_secs_f64(seconds));
        Ok(())
    }
}

pub struct RunOutput {
    pub result: BenchResult,
    /// The timed images, in order.
    pub images: Vec<RgbImage>,
}

/// Runs `options.workload`, phase by phase: find the model, choose the device and memory profile,
/// load, judge the run's standing, start telemetry and sample an idle baseline, one untimed
/// warm-up image, the timed images, per-step timing, then the result.
pub fn run(
    options: &RunOptions,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<RunOutput> {
    let workload = &options.workload;
    let mut model = model::resolve(options, observer, cancel)?;
    images::check_family_can_run(&model.source, workload, &model.record.id)?;
    let shape = workload.request_shape();
    let placement = load::choose_placement(options, &model.source, &shape, observer)?;
    let mut loaded = load::load(options, &model, placement, shape, observer)?;
    let standard = load::standing(options, &loaded, &mut model, observer)?;
    images::check_model_can_run(&loaded.pipeline, workload, &model.record.id)?;
    let telemetry = RunTelemetry::start(options);
    let baseline = telemetry.idle_baseline(options.baseline, observer, cancel)?;
    let pipeline = &loaded.pipeline;
    let warmup_seconds = images::warm_up(pipeline, workload, &telemetry, observer, cancel)?;
    loaded.kernels.warmed_up();
    let mut timed = images::timed_images(
        pipeline,
        workload,
        options.min_duration,
        &telemetry,
        observer,
        cancel,
    )?;
    let (samples, telemetry) = telemetry.stop();
    let epoch = telemetry.epoch;
    let kernels = loaded.kernels.cold_start();
    note_late_kernels(kernels.as_ref(), observer);
    let (step_timing, vram_report) = images::step_timing(
        &loaded.pipeline,
        workload,
        timed.first_loop_seconds,
        loaded.vram_after_load.take(),
        observer,
        cancel,
    )?;
    let measured = assemble::Measured {
        model,
        standard,
        load_seconds: loaded.seconds,
        warmup_seconds,
        kernels,
        baseline,
        samples,
        telemetry,
        step_timing,
        vram_report,
    };
    let mut result = assemble::result(options, &loaded, &mut timed, measured);
    if let Some(model) = &options.quality {
        quality::score(model, &loaded, &mut result, &timed.images, epoch, observer)?;
    }
    Ok(RunOutput {
        result,
        images: timed.images,
    })
}

/// Kernels compiled while images were timed are inside the timed figures: say so.
fn note_late_kernels(kernels: Option<&KernelColdStart>, observer: &mut dyn FnMut(&Event)) {
    if let Some(late) = kernels.map(|k| k.compiled_while_timed).filter(|&n| n > 0) {
        observer(&Event::note(format!(
            "{late} GPU kernels were compiled during the timed images: their compilation is inside the timed figures"
        )));
    }
}

/// The time now, RFC 3339 in UTC, as results and the history record it.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A new run id.
pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Saves the images beside `json_path` (`{stem}-1.png`, …) and then the result JSON, which names
/// them. Returns the image paths.
pub fn save(output: &mut RunOutput, json_path: &Path) -> Result<Vec<PathBuf>> {
    let dir = json_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
    let stem = json_path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    let w = &output.result.workload;
    let mut paths = Vec::new();
    // The images are the first pass's, which are the results' first entries.
    for (i, image) in output.images.iter().enumerate() {
        let name = format!("{stem}-{}.png", i + 1);
        let path = dir.join(&name);
        let spec = &w.prompts[output.result.results[i].prompt_index];
        let parameters = format!(
            "{}\nNegative prompt: {}\nSteps: {}, Sampler: {}, CFG scale: {}, Seed: {}, Size: {}x{}, Model: {}",
            spec.prompt, w.negative_prompt, w.steps, w.scheduler, w.guidance, spec.seed, w.width, w.height, w.model.id
        );
        write_png(
            &path,
            image,
            &[
                ("parameters", parameters),
                ("sdbench_run_id", output.result.run_id.clone()),
            ],
        )?;
        output.result.results[i].image.file = Some(name);
        paths.push(path);
    }
    output.result.save(json_path)?;
    Ok(paths)
}
