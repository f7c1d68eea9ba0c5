//! Runs a workload: resolve the model, load it, sample an idle baseline, one untimed warm-up
//! image, then every timed image with telemetry running, and assemble the result.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sdbench_diffusion::io::image::{write_png, RgbImage};
use sdbench_diffusion::{
    choose_auto, BackendRequest, CancelToken, DeviceRequest, DiffusionError, GenerateRequest,
    InitialNoise, LoadOptions, MemoryProfile, ModelSource, Pipeline, Precision, Preset, Progress,
    RequestShape, SelectedDevice, StepSync,
};
use sdbench_hub::{DownloadProgress, Hub, HubError, HubSettings, RepoId};
use sdbench_telemetry::{discover, Sample, Sampler, SystemInfo};

use crate::checks::check_image;
use crate::device_memory::select_device;
use crate::error::{BenchError, Result};
use crate::kernels::KernelCounters;
use crate::metrics::{choose_source, compute_scores, device_vendor, ScoreInputs};
use crate::result::{
    AppInfo, BackendInfo, BenchResult, ColdStart, FileRecord, ImageRecord, ImageResult,
    ModelRecord, PlacementRecord, Stages, StepTiming, Telemetry, Window, WorkloadInfo,
    SCHEMA_VERSION, STEP_TIMING_DIAGNOSTIC_IMAGE, STEP_TIMING_EVERY_STEP,
};
use crate::vram_report::VramRecorder;
use crate::workload::Workload;

/// The generation the result's VRAM report describes.
const VRAM_REPORT_GENERATION: &str =
    "after loading, then the per-step timing image (prompt 1, a device sync after every step)";

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
    /// chosen (`memory_need::choose_auto`); the result records the one chosen.
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
        }
    }
}

/// What a front end hears while a benchmark runs.
#[derive(Debug, Clone)]
pub enum Event {
    /// Something the person should know (a renamed model id, offline fallback…).
    Note(String),
    Download(DownloadProgress),
    Loading {
        model: String,
        backend: String,
    },
    Loaded {
        seconds: f64,
        device: String,
        precision: String,
    },
    Baseline {
        seconds: f64,
    },
    /// `index` counts timed images from 1; the warm-up image is index 0.
    ImageStarted {
        index: usize,
        total: usize,
        warmup: bool,
    },
    /// `seconds`: the step's time, where it was synced on its own (the warm-up always is; timed
    /// images only on the CPU backend, see `StepSync::for_timing`); `None` where the steps were
    /// queued, and these events come at the end of the image's denoising loop.
    Step {
        index: usize,
        total: usize,
        step: usize,
        steps: usize,
        seconds: Option<f64>,
        warmup: bool,
    },
    ImageFinished {
        index: usize,
        total: usize,
        seconds: f64,
        valid: bool,
        warmup: bool,
    },
    /// How long the rest of the run will take, from the warm-up's second step (the first one
    /// carries one-off costs): sent once, early, so a person on a slow device can stop and run a
    /// quick benchmark instead.
    Estimate {
        seconds: f64,
    },
    /// The latest telemetry sample of each source, at most every `LIVE_TELEMETRY_INTERVAL` while
    /// images are generated (for a live power/VRAM view; the result keeps every sample).
    Telemetry {
        samples: Vec<Sample>,
    },
}

/// How often `Event::Telemetry` is sent during a run.
pub const LIVE_TELEMETRY_INTERVAL: Duration = Duration::from_millis(500);

pub struct RunOutput {
    pub result: BenchResult,
    /// The timed images, in order.
    pub images: Vec<RgbImage>,
}

pub fn run(
    options: &RunOptions,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<RunOutput> {
    let resolve_start = Instant::now();
    let (source, mut model, downloaded_bytes) = resolve_model(options, observer, cancel)?;
    let resolve_seconds = resolve_start.elapsed().as_secs_f64();

    let select = |memory: MemoryProfile| -> Result<SelectedDevice> {
        let request = DeviceRequest {
            // The cpu profile is the CPU backend (the CLI and the app refuse it with another one).
            backend: if memory.needs_cpu_backend() {
                BackendRequest::Cpu
            } else {
                options.backend
            },
            index: options.device_index,
        };
        Ok(select_device(
            request,
            options.memory_limit,
            &options.sysfs_root,
            options.use_nvml,
        )?)
    };
    let w = &options.workload;
    // Every generation of the run has this shape (the diagnostic image too).
    let shape = RequestShape {
        width: w.width,
        height: w.height,
        batch: w.batch,
        guided: w.guidance > 1.0,
        image_to_image: false,
    };
    let mut memory = options.memory;
    let mut device = select(memory)?;
    if options.memory_auto {
        let auto = choose_auto(&source, &device, options.precision, &shape)?;
        observer(&Event::Note(format!(
            "memory profile: auto chose {} ({})",
            auto.profile, auto.reason
        )));
        memory = auto.profile;
        if memory.needs_cpu_backend() && device.kind != sdbench_diffusion::BackendKind::Cpu {
            device = select(memory)?;
        }
    }
    observer(&Event::Loading {
        model: model.id.clone(),
        backend: device.kind.name().into(),
    });
    let mut kernels = KernelCounters::start(device.kind);
    let load_start = Instant::now();
    let pipeline = Pipeline::load_with(
        &source,
        device,
        options.precision,
        memory.load_options(LoadOptions {
            planned: Some(shape),
            ..LoadOptions::default()
        }),
    )?;
    let load_seconds = load_start.elapsed().as_secs_f64();
    let dev = &pipeline.device;
    // The allocator after loading; the other phases come from the diagnostic image below.
    let mut vram_after_load = VramRecorder::new(|| dev.allocator_memory()).map(|mut recorder| {
        recorder.record("load", None);
        recorder
    });
    let mut vram_report = None;
    observer(&Event::Loaded {
        seconds: load_seconds,
        device: dev.info.name.clone(),
        precision: pipeline.precision.name().into(),
    });
    let preset = pipeline.info.preset;
    model.sd15_architecture = preset == Some(Preset::Sd15);
    model.family = Some(pipeline.info.family.name().into());
    model.preset = preset.map(|p| p.name().into());
    let workload_preset = options.workload.preset;
    let architecture_matches = preset == Some(workload_preset);
    let full_profile = memory == MemoryProfile::Full;
    if options.workload.standard && !full_profile {
        observer(&Event::Note(format!(
            "the {} memory profile is not the standard one (full), so this {} run is reported as custom",
            memory, options.workload.name
        )));
    }
    if options.workload.standard && !architecture_matches {
        observer(&Event::Note(format!(
            "{} does not have {}'s architecture (its configs differ), so this {} run is reported as custom, not standard",
            model.id,
            workload_preset.repository(),
            options.workload.name
        )));
    }
    model.files = pipeline
        .info
        .weight_files
        .iter()
        .map(|p| file_record(p))
        .collect::<Result<_>>()?;

    let workload = &options.workload;
    let system = SystemInfo::collect(&options.sysfs_root, options.use_nvml);
    let found = discover(&options.sysfs_root, options.use_nvml);
    let source_infos: Vec<_> = found.sources.iter().map(|s| s.info().clone()).collect();
    let unavailable = found.unavailable;

    // Idle baseline: telemetry runs, the device does nothing.
    let epoch = Instant::now();
    let sampler = Sampler::start(found.sources, options.sample_interval, epoch);
    let baseline_start = epoch.elapsed().as_secs_f64();
    let until = Instant::now() + options.baseline;
    while Instant::now() < until {
        if cancel.is_cancelled() {
            return Err(BenchError::Cancelled);
        }
        std::thread::sleep(
            Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())),
        );
    }
    let baseline = Window {
        start: baseline_start,
        end: epoch.elapsed().as_secs_f64(),
    };
    observer(&Event::Baseline {
        seconds: baseline.end - baseline.start,
    });

    // Untimed warm-up: a full first image compiles kernels and settles autotuning.
    let total = workload.prompts.len();
    let warmup_start = Instant::now();
    let mut live = LiveTelemetry::new(&sampler);
    observer(&Event::ImageStarted {
        index: 0,
        total,
        warmup: true,
    });
    // Scored images queue their steps on a device that queues work; the per-step times then
    // come from one more image, synced after every step, after the timed region.
    let scored_sync = StepSync::for_timing(dev);
    let diagnostic = scored_sync == StepSync::StageEdges;
    let mut estimate = EstimateFromWarmup::default();
    let warm = generate(
        &pipeline,
        workload,
        0,
        StepSync::EveryStep,
        cancel,
        &mut |step, steps, seconds| {
            observer(&Event::Step {
                index: 0,
                total,
                step,
                steps,
                seconds,
                warmup: true,
            });
            let images = total + usize::from(diagnostic);
            let compiled = sdbench_diffusion::kernel_cache::stats().compiled;
            if let Some(seconds) = estimate.after_step(step, steps, seconds, images, compiled) {
                observer(&Event::Estimate { seconds });
            }
            live.send(observer);
        },
        &mut |_| {},
    )?;
    let warmup_seconds = warmup_start.elapsed().as_secs_f64();
    kernels.warmed_up();
    observer(&Event::ImageFinished {
        index: 0,
        total,
        seconds: warm.timings.total,
        valid: true,
        warmup: true,
    });
    drop(warm);

    let allocator_reason = (dev.allocator_memory().is_none()).then(|| {
        format!(
            "the {} backend has no device memory allocator",
            dev.kind.name()
        )
    });
    let mut allocator_peak: Option<u64> = None;
    dev.sync()?;
    let timed_start = epoch.elapsed().as_secs_f64();
    let mut results = Vec::with_capacity(total);
    let mut images = Vec::with_capacity(total);
    // Timed image 1's UNet loop, against which the diagnostic image's prices per-step syncs.
    let mut first_unet_loop: Option<f64> = None;
    for (i, spec) in workload.prompts.iter().enumerate() {
        let index = i + 1;
        observer(&Event::ImageStarted {
            index,
            total,
            warmup: false,
        });
        let generated = generate(
            &pipeline,
            workload,
            i,
            scored_sync,
            cancel,
            &mut |step, steps, seconds| {
                // Pools rarely shrink, so sampling at step edges catches the peak reservation.
                if let Some(m) = dev.allocator_memory() {
                    allocator_peak = allocator_peak.max(Some(m.reserved));
                }
                observer(&Event::Step {
                    index,
                    total,
                    step,
                    steps,
                    seconds,
                    warmup: false,
                });
                live.send(observer);
            },
            &mut |_| {},
        )?;
        let t = &generated.timings;
        first_unet_loop.get_or_insert(t.unet_total);
        let checks: Vec<_> = generated
            .images
            .iter()
            .map(|image| check_image(&image.image, image.non_finite))
            .collect();
        observer(&Event::ImageFinished {
            index,
            total,
            seconds: t.total,
            valid: checks.iter().all(|c| c.valid),
            warmup: false,
        });
        // A batch's images share its time: each records an equal part, so the mean over
        // images is the time per image and images per minute counts every image.
        let share = 1.0 / generated.images.len() as f64;
        for (batch_index, check) in checks.into_iter().enumerate() {
            results.push(ImageResult {
                prompt_index: i,
                seed: spec.seed,
                batch_index,
                seconds: t.total * share,
                stages: Stages::from(t).scaled(share),
                step_seconds: t.unet_steps.clone(),
                steps_per_second: if t.unet_total > 0.0 {
                    t.steps as f64 / t.unet_total
                } else {
                    0.0
                },
                image: ImageRecord { file: None, check },
            });
        }
        images.extend(generated.images.into_iter().map(|i| i.image));
    }
    let timed = Window {
        start: timed_start,
        end: epoch.elapsed().as_secs_f64(),
    };
    // A last reading after the end of the timed region, then stop.
    let samples = sampler.stop();
    let kernels = kernels.cold_start();
    if let Some(late) = kernels
        .as_ref()
        .map(|k| k.compiled_while_timed)
        .filter(|&n| n > 0)
    {
        observer(&Event::Note(format!(
            "{late} GPU kernels were compiled during the timed images: their compilation is inside the timed figures"
        )));
    }
    let step_timing = if diagnostic {
        observer(&Event::Note(
            "timing each step: one more image of prompt 1, with a device sync after every step (not scored)".into(),
        ));
        let mut vram = vram_after_load.take();
        let synced = generate(
            &pipeline,
            workload,
            0,
            StepSync::EveryStep,
            cancel,
            &mut |_, _, _| {},
            &mut |event| {
                if let Some(recorder) = vram.as_mut() {
                    recorder.observe(event)
                }
            },
        )?;
        vram_report = vram.map(|recorder| recorder.finish(VRAM_REPORT_GENERATION));
        StepTiming {
            method: STEP_TIMING_DIAGNOSTIC_IMAGE.into(),
            sync_cost_ratio: first_unet_loop
                .filter(|&queued| queued > 0.0)
                .map(|queued| synced.timings.unet_total / queued),
            step_seconds: synced.timings.unet_steps,
        }
    } else {
        StepTiming {
            method: STEP_TIMING_EVERY_STEP.into(),
            step_seconds: Vec::new(),
            sync_cost_ratio: None,
        }
    };

    let mut invalid_reasons: Vec<String> = results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            r.image
                .check
                .reason
                .as_ref()
                .map(|why| format!("image {}: {why}", i + 1))
        })
        .collect();
    if results.is_empty() {
        invalid_reasons.push("no images were timed".into());
    }
    let valid = invalid_reasons.is_empty();
    let vendor = device_vendor(dev);
    let source = choose_source(vendor, &dev.info, &source_infos, &unavailable);
    let scores = compute_scores(&ScoreInputs {
        results: &results,
        samples: &samples,
        baseline,
        timed,
        source,
        allocator_peak,
        allocator_reason,
        valid,
    });

    let result = BenchResult {
        schema_version: SCHEMA_VERSION,
        run_id: new_run_id(),
        created_at: now_rfc3339(),
        app: options.app.clone(),
        system,
        backend: BackendInfo {
            name: dev.kind.name().into(),
            device: dev.info.name.clone(),
            precision: pipeline.precision.name().into(),
            software: dev.info.software,
            threads: dev.cpu_threads(),
            device_index: Some(dev.info.index),
            driver: dev.info.driver.clone(),
            device_memory_bytes: dev.info.memory_bytes,
            pci_bus: dev.info.pci_bus.clone(),
            memory_profile: Some(memory.name().into()),
            placement: Some(PlacementRecord::of(
                &pipeline.info.placement,
                pipeline.decode_tile_count(options.workload.width, options.workload.height),
            )),
        },
        workload: WorkloadInfo {
            name: workload.name.clone(),
            version: workload.version,
            standard: workload.standard && !model.synthetic && architecture_matches && full_profile,
            width: workload.width,
            height: workload.height,
            steps: workload.steps,
            scheduler: workload.scheduler.name().into(),
            guidance: workload.guidance,
            negative_prompt: workload.negative_prompt.clone(),
            prompts: workload.prompts.clone(),
            batch: workload.batch,
            model,
        },
        results,
        scores,
        cold_start: ColdStart {
            resolve_seconds,
            downloaded_bytes,
            load_seconds,
            warmup_seconds,
            kernels,
        },
        telemetry: Telemetry {
            interval_ms: options.sample_interval.as_millis() as u64,
            sources: source_infos,
            unavailable,
            baseline,
            timed,
            samples,
        },
        valid,
        invalid_reasons,
        step_timing: Some(step_timing),
        vram_report,
    };
    Ok(RunOutput { result, images })
}

/// The run's remaining time, from the first warm-up step after the first that compiled no GPU
/// kernel (the first step, and any that compiles, carries one-off costs): sent once.
#[derive(Default)]
struct EstimateFromWarmup {
    sent: bool,
    compiled: Option<u64>,
}

impl EstimateFromWarmup {
    /// After warm-up step `step` of `steps` took `seconds`, followed by `images` timed images;
    /// `compiled`: the kernels compiled in the process so far.
    fn after_step(
        &mut self,
        step: usize,
        steps: usize,
        seconds: Option<f64>,
        images: usize,
        compiled: u64,
    ) -> Option<f64> {
        let compiling = self.compiled.is_some_and(|before| compiled > before);
        self.compiled = Some(compiled);
        let seconds = seconds.filter(|_| step >= 2 && !compiling && !self.sent)?;
        self.sent = true;
        Some(remaining_seconds(step, steps, seconds, images))
    }
}

/// The seconds left in a run after warm-up step `step` of `steps` took `seconds`, followed by
/// `images` timed images. Text encoding and decoding are left out, so it errs short.
fn remaining_seconds(step: usize, steps: usize, seconds: f64, images: usize) -> f64 {
    seconds * ((steps - step) + images * steps) as f64
}

fn generate(
    pipeline: &Pipeline,
    workload: &Workload,
    index: usize,
    sync: StepSync,
    cancel: &CancelToken,
    on_step: &mut dyn FnMut(usize, usize, Option<f64>),
    on_event: &mut dyn FnMut(&Progress),
) -> Result<sdbench_diffusion::Generated> {
    let spec = &workload.prompts[index];
    let request = GenerateRequest {
        prompt: spec.prompt.clone(),
        negative_prompt: workload.negative_prompt.clone(),
        steps: workload.steps,
        guidance_scale: workload.guidance,
        scheduler: Some(workload.scheduler),
        width: workload.width,
        height: workload.height,
        noise: InitialNoise::Seed(spec.seed),
        batch: workload.batch,
        init_image: None,
    };
    let mut progress = |p: &Progress| {
        on_event(p);
        if let Progress::Step {
            index,
            total,
            seconds,
        } = p
        {
            on_step(*index, *total, *seconds)
        }
    };
    pipeline
        .generate_with_sync(&request, sync, &mut progress, cancel)
        .map_err(|e| match e {
            DiffusionError::Cancelled => BenchError::Cancelled,
            other => other.into(),
        })
}

/// Finds the model: cache or download for Hub ids (synthetic weights when offline and allowed),
/// a local folder as is, or synthetic weights.
fn resolve_model(
    options: &RunOptions,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<(ModelSource, ModelRecord, u64)> {
    let synthetic = || {
        let source = ModelSource::Synthetic(options.workload.preset);
        let record = local_record(&source);
        (source, record, 0)
    };
    match &options.model {
        ModelChoice::Local(source) => Ok((source.clone(), local_record(source), 0)),
        ModelChoice::Hub {
            id,
            revision,
            fallback_to_synthetic,
        } => {
            let hub = Hub::new(options.hub.clone());
            let cancelled = || cancel.is_cancelled();
            let resolved = hub.resolve(
                id,
                revision,
                &mut |p| observer(&Event::Download(p.clone())),
                &cancelled,
            );
            match resolved {
                Ok(r) => {
                    if let Some(reason) = &r.offline_reason {
                        observer(&Event::Note(format!(
                            "the Hub is not reachable ({reason}); using the cached {id} at {}",
                            short(&r.commit)
                        )));
                    }
                    Ok((
                        ModelSource::Folder(r.path),
                        model_record(&id.to_string(), Some(r.commit), "hub"),
                        r.downloaded_bytes,
                    ))
                }
                Err(HubError::Cancelled) => Err(BenchError::Cancelled),
                Err(e @ HubError::NotCached { .. }) if *fallback_to_synthetic => {
                    observer(&Event::Note(format!(
                        "{e}.\nRunning on synthetic weights instead: the timing is real, the images are noise, and the result is not a standard score."
                    )));
                    Ok(synthetic())
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// The record of a model on this machine.
fn local_record(source: &ModelSource) -> ModelRecord {
    match source {
        ModelSource::Folder(path) => model_record(&path.display().to_string(), None, "folder"),
        ModelSource::Checkpoint { file, .. } => {
            model_record(&file.display().to_string(), None, "checkpoint")
        }
        ModelSource::Synthetic(preset) => {
            let id = match preset {
                Preset::Sd15 => "synthetic".to_string(),
                other => format!("synthetic-{}", other.name()),
            };
            ModelRecord {
                synthetic: true,
                ..model_record(&id, None, "synthetic")
            }
        }
    }
}

/// What the result says of the model; its architecture and files are filled in once it is loaded.
fn model_record(id: &str, revision: Option<String>, source: &str) -> ModelRecord {
    ModelRecord {
        id: id.into(),
        revision,
        source: source.into(),
        synthetic: false,
        sd15_architecture: false,
        family: None,
        preset: None,
        files: Vec::new(),
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

/// Size and sha256 of a weights file (from the cache's blob name where it can).
fn file_record(path: &Path) -> Result<FileRecord> {
    let bytes = std::fs::metadata(path)
        .map_err(|e| BenchError::io(path, e))?
        .len();
    Ok(FileRecord {
        path: path.display().to_string(),
        bytes,
        sha256: sdbench_hub::cache::file_sha256(path)?,
    })
}

/// Sends the sampler's latest readings to the observer, at most every `LIVE_TELEMETRY_INTERVAL`.
struct LiveTelemetry<'a> {
    sampler: &'a Sampler,
    last: Option<Instant>,
}

impl<'a> LiveTelemetry<'a> {
    fn new(sampler: &'a Sampler) -> Self {
        LiveTelemetry {
            sampler,
            last: None,
        }
    }

    fn send(&mut self, observer: &mut dyn FnMut(&Event)) {
        if self
            .last
            .is_some_and(|t| t.elapsed() < LIVE_TELEMETRY_INTERVAL)
        {
            return;
        }
        self.last = Some(Instant::now());
        let samples = self.sampler.latest();
        if !samples.is_empty() {
            observer(&Event::Telemetry { samples });
        }
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

#[cfg(test)]
mod tests {
    use super::{remaining_seconds, EstimateFromWarmup};

    #[test]
    fn the_estimate_comes_once_from_the_second_warm_up_step() {
        let mut estimate = EstimateFromWarmup::default();
        assert_eq!(estimate.after_step(1, 30, Some(9.0), 5, 10), None);
        assert_eq!(
            estimate.after_step(2, 30, Some(1.5), 5, 10),
            Some(1.5 * 178.0)
        );
        assert_eq!(estimate.after_step(3, 30, Some(1.5), 5, 10), None);
        assert_eq!(remaining_seconds(2, 2, 0.5, 3), 3.0);
        let mut unsynced = EstimateFromWarmup::default();
        assert_eq!(unsynced.after_step(2, 30, None, 5, 0), None);
    }

    #[test]
    fn the_estimate_skips_steps_that_compiled_kernels() {
        let mut estimate = EstimateFromWarmup::default();
        assert_eq!(estimate.after_step(1, 30, Some(60.0), 5, 120), None);
        // Step 2 compiled 40 more kernels (a new shape, an autotune): its time is not the rate.
        assert_eq!(estimate.after_step(2, 30, Some(20.0), 5, 160), None);
        assert_eq!(estimate.after_step(3, 30, Some(1.0), 5, 160), Some(177.0));
        assert_eq!(estimate.after_step(4, 30, Some(1.0), 5, 160), None);
    }
}
