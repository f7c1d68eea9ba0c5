//! The result file, `benchmark_diffusion_result.json`, schema version 1. The committed JSON Schema
//! (`schema/benchmark_diffusion_result.v1.schema.json`) describes the same document; tests check
//! that every result this crate writes validates against it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use sdbench_telemetry::{HardwareState, Sample, SourceInfo, SystemInfo, Unavailable};

use crate::checks::ImageCheck;
use crate::error::{BenchError, Result};
use crate::stats::Stats;
use crate::workload::PromptSeed;

pub const SCHEMA_VERSION: u32 = 1;
pub const DEFAULT_FILE_NAME: &str = "benchmark_diffusion_result.json";
/// The committed JSON Schema, for validators and the desktop app.
pub const JSON_SCHEMA: &str = include_str!("../schema/benchmark_diffusion_result.v1.schema.json");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct BenchResult {
    pub schema_version: u32,
    pub run_id: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub app: AppInfo,
    pub system: SystemInfo,
    pub backend: BackendInfo,
    pub workload: WorkloadInfo,
    pub results: Vec<ImageResult>,
    pub scores: Scores,
    pub cold_start: ColdStart,
    pub telemetry: Telemetry,
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
    /// How the per-step times were measured (absent in older results, whose images each carry
    /// per-step times taken with a device sync after every step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_timing: Option<StepTiming>,
    /// The allocator's memory after each phase of one synced generation (GPU backends; absent on
    /// the CPU and in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vram_report: Option<sdbench_session::vram_report::VramReport>,
    /// The sweep this run is a point of (`sdbench sweep`), where it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_id: Option<String>,
}

/// How per-step times were measured, and what a sync after every step costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct StepTiming {
    /// `every_step`: the backend runs each operation as it is called (the CPU), so the scored
    /// images' steps are timed one by one at no cost. `diagnostic_image`: the scored images were
    /// timed with device syncs only at stage edges (the host queues every step, as applications
    /// do); `step_seconds` come from one extra image of prompt 1, after the timed region, with a
    /// sync after every step.
    pub method: String,
    /// The diagnostic image's step seconds (empty for `every_step`: see each image's).
    #[serde(default)]
    pub step_seconds: Vec<f64>,
    /// The diagnostic image's denoising loop over timed image 1's (same prompt and seed): what a
    /// sync after every step costs on this device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_cost_ratio: Option<f64>,
}

pub const STEP_TIMING_EVERY_STEP: &str = "every_step";
pub const STEP_TIMING_DIAGNOSTIC_IMAGE: &str = "diagnostic_image";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct AppInfo {
    pub name: String,
    pub version: String,
    pub commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct BackendInfo {
    /// cpu, cuda, rocm, vulkan, metal or dx12.
    pub name: String,
    pub device: String,
    /// f16, bf16 or f32.
    pub precision: String,
    /// A software implementation of a GPU API (e.g. Mesa lavapipe).
    pub software: bool,
    /// The CPU backend's worker threads (`--threads`); absent on a GPU. Runs on the CPU compare
    /// only at the same count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// The device's number among the backend's (`--device N`); absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_index: Option<usize>,
    /// Driver name and version as the backend's API reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Device memory as the backend's API reports it (CUDA, HIP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_memory_bytes: Option<u64>,
    /// The card's PCI bus id: which of `system.gpus` ran, and whose telemetry was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus: Option<String>,
    /// The memory profile (`full`, `balanced`, `low`, `minimal`, `cpu`); absent in older results, which ran
    /// as `full` does. Only `full` runs of a standard workload are standard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_profile: Option<String>,
    /// Where each component ran and how (what the profile chose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementRecord>,
}

/// The engine's placement, as a result records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct PlacementRecord {
    /// `device` or `cpu`.
    pub text_encoders: String,
    /// `device` or `cpu`.
    pub vae: String,
    /// Classifier-free guidance: `batched` (one doubled batch) or `sequential`.
    pub cfg: String,
    /// Tiled VAE decoding (and encoding) above the VAE's tile size was on; whether this run's
    /// size tiled is `vae_decode_tiles`.
    pub vae_tiling: bool,
    /// Tiles each image's VAE decode took at the workload's size (1: one piece), from tiling
    /// or from the device's largest buffer; absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vae_decode_tiles: Option<usize>,
    /// The VAE's precision: the run's, or f32 where the VAE overflows in f16 (SDXL's own VAE in an
    /// f16 run, as diffusers upcasts it) or runs on the CPU; absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vae_precision: Option<String>,
    /// The UNet's weight storage: f16, bf16 or f32 (the run's precision), or int8 (W8A16: dequantized
    /// to the run's precision layer by layer).
    pub unet_weights: String,
    /// Unused pooled memory handed back between denoising and decoding.
    pub release_between_stages: bool,
    /// The UNet's weights in host memory while the VAE decodes.
    #[serde(default)]
    pub unet_offload: bool,
    /// Tiled decoding and encoding in tiles of half the VAE's own (diffusers') side.
    #[serde(default)]
    pub small_vae_tiles: bool,
}

impl PlacementRecord {
    /// `placement` as recorded, for a run whose images each decoded in `vae_decode_tiles`.
    pub fn of(placement: &sdbench_diffusion::Placement, vae_decode_tiles: usize) -> Self {
        let place = |on_cpu: bool| if on_cpu { "cpu" } else { "device" }.to_string();
        PlacementRecord {
            text_encoders: place(placement.text_encoders_on_cpu),
            vae: place(placement.vae_on_cpu),
            cfg: if placement.sequential_cfg {
                "sequential"
            } else {
                "batched"
            }
            .into(),
            vae_tiling: placement.vae_tiling,
            vae_decode_tiles: Some(vae_decode_tiles),
            vae_precision: Some(placement.vae.name().into()),
            unet_weights: if placement.denoiser_int8 {
                "int8".into()
            } else {
                placement.denoiser.name().into()
            },
            release_between_stages: placement.release_memory_between_stages,
            unet_offload: placement.denoiser_offload,
            small_vae_tiles: placement.small_vae_tiles,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct WorkloadInfo {
    /// `sd15-512-30` or `custom`.
    pub name: String,
    pub version: u32,
    /// The unmodified standard workload on real weights: the only runs whose score is comparable.
    pub standard: bool,
    pub model: ModelRecord,
    pub width: usize,
    pub height: usize,
    pub steps: usize,
    pub scheduler: String,
    pub guidance: f64,
    pub negative_prompt: String,
    pub prompts: Vec<PromptSeed>,
    /// Images per generation, made together (absent in older results: 1).
    #[serde(default = "one")]
    pub batch: usize,
    /// `--min-duration`: the timed images went on in whole passes of the prompts until this
    /// many seconds had passed (absent: one pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_duration_seconds: Option<f64>,
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ModelRecord {
    /// Hub id, local folder path, or `synthetic`.
    pub id: String,
    /// The Hub commit, for Hub models.
    pub revision: Option<String>,
    /// hub, folder, checkpoint or synthetic.
    pub source: String,
    pub synthetic: bool,
    /// The model's configs are SD1.5's (a fine-tune's weights differ, its cost does not); only
    /// such runs can be standard `sd15-512-30` runs.
    pub sd15_architecture: bool,
    /// The model family: sd1, sd2, sdxl, flux2-klein, zimage, sd35-medium, sd35-large or
    /// sd3-medium (absent in results from before SDXL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The built-in preset whose configs the model's equal (sd15, sd21, sdxl-base), if any: a
    /// standard run's model matches its workload's preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The weight files read, with their sha256.
    pub files: Vec<FileRecord>,
    /// The weights' stored types other than plain floats, when any (`F8_E4M3`, `Q4_K+Q6_K`): an
    /// FP8 or GGUF file, dequantized as it loads. Such runs are never standard, and compare only
    /// with runs of the same types; absent for F32/F16/BF16 weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
}

impl ModelRecord {
    /// `quantization` of weights files whose parameters are stored in `types` (name → count).
    pub fn quantization_of<'a>(types: impl IntoIterator<Item = &'a String>) -> Option<String> {
        let mut quantized: Vec<&str> = types
            .into_iter()
            .map(String::as_str)
            .filter(|t| !sdbench_diffusion::io::tensor_file::is_plain_float(t))
            .collect();
        quantized.sort();
        quantized.dedup();
        (!quantized.is_empty()).then(|| quantized.join("+"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct FileRecord {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    /// Parameters stored per element type (`F16`, `Q8_0`, ...); absent in older results.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weight_types: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ImageResult {
    /// Index into `workload.prompts`.
    pub prompt_index: usize,
    pub seed: u64,
    /// This image's place in its batch (from 0; absent in older results: 0).
    #[serde(default)]
    pub batch_index: usize,
    /// Which pass over the prompts made it (from 0): a run with a minimum duration repeats its
    /// prompts in whole passes until it has passed (absent in older results: 0).
    #[serde(default)]
    pub pass: usize,
    /// `--quality`: the picture's CLIP score against its prompt (first-pass images only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_score: Option<f64>,
    /// Text encoder + denoising loop + VAE decode, bounded by device syncs; with a batch, the
    /// generation's seconds divided by the batch size (so the mean is the time per image).
    pub seconds: f64,
    /// The generation's stage seconds, divided by the batch size like `seconds`.
    pub stages: Stages,
    /// The generation's step seconds (each step serves the whole batch); empty where the steps
    /// were queued without per-step syncs (see `step_timing`).
    pub step_seconds: Vec<f64>,
    /// steps / UNet-loop seconds of the generation (a step serves the whole batch).
    pub steps_per_second: f64,
    pub image: ImageRecord,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Stages {
    pub text_encoder: f64,
    pub unet_loop: f64,
    pub vae_decode: f64,
}

impl Stages {
    /// Every stage times `factor` (a batch image's share).
    pub fn scaled(self, factor: f64) -> Stages {
        Stages {
            text_encoder: self.text_encoder * factor,
            unet_loop: self.unet_loop * factor,
            vae_decode: self.vae_decode * factor,
        }
    }
}

impl From<&sdbench_diffusion::pipeline::StageTimings> for Stages {
    fn from(t: &sdbench_diffusion::pipeline::StageTimings) -> Self {
        Stages {
            text_encoder: t.text_encoder,
            unet_loop: t.denoiser_total,
            vae_decode: t.vae_decode,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ImageRecord {
    /// File name beside the result JSON, once saved.
    pub file: Option<String>,
    #[serde(flatten)]
    pub check: ImageCheck,
}

/// `--quality`: the pictures scored after the timed region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Quality {
    /// The CLIP model, as given (a Hub id or a folder).
    pub clip_model: String,
    /// The mean of the first pass's pictures' CLIP scores.
    pub clip_score_mean: f64,
    /// When scoring began on the samples' clock: after the timed region and its telemetry.
    pub started_at: f64,
    pub seconds: f64,
    /// Why the score says nothing of the model, where it does not (synthetic weights).
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Scores {
    /// round(100 x images per minute); absent for invalid runs.
    pub score: Option<u64>,
    pub images_per_minute: f64,
    pub seconds_per_image: Stats,
    /// Median over images of steps / UNet-loop seconds.
    pub steps_per_second: f64,
    /// The largest of the allocator's peak and the device's used memory; absent when neither is known.
    pub vram_peak_bytes: Option<u64>,
    pub vram: Vram,
    pub power: Power,
    /// A throttle reason held for a meaningful share of the timed samples (`hardware`); never
    /// for want of readings.
    pub throttled: bool,
    /// Every throttle reason seen in the timed samples, however briefly.
    pub throttle_reasons: Vec<String>,
    /// Clocks, temperature and throttling over the timed region, or why they are unknown (absent
    /// from results made before they were recorded).
    #[serde(default)]
    pub hardware: HardwareState,
    /// `--quality`: the CLIP score of the pictures (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Quality>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Vram {
    /// Peak bytes the backend's allocator reserved from the device, sampled after every step.
    pub allocator_peak_bytes: Option<u64>,
    /// Peak device memory in use (all processes) from telemetry.
    pub device_used_peak_bytes: Option<u64>,
    pub device_source: Option<String>,
    /// Why a figure is missing.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Power {
    pub available: bool,
    pub reason: Option<String>,
    /// The telemetry source id and what it reads.
    pub source: Option<String>,
    pub method: Option<String>,
    pub avg_w: Option<f64>,
    pub min_w: Option<f64>,
    pub max_w: Option<f64>,
    /// Average power during the idle baseline before the run.
    pub idle_w: Option<f64>,
    pub energy_j_per_image: Option<f64>,
    pub images_per_minute_per_watt: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ColdStart {
    /// Finding (and downloading) the model.
    pub resolve_seconds: f64,
    pub downloaded_bytes: u64,
    /// Reading weights onto the device.
    pub load_seconds: f64,
    /// The untimed first image (kernel compilation, autotuning).
    pub warmup_seconds: f64,
    /// GPU kernels compiled, read from the kernel cache and tuned, where the backend counts them
    /// (CUDA and wgpu); absent elsewhere and in results from before they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernels: Option<KernelColdStart>,
}

/// What loading and the warm-up image spent on GPU kernels, and whether any compiled later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct KernelColdStart {
    /// Kernels compiled, and the seconds until each could run: on CUDA code generation, NVRTC
    /// and loading the module (the whole cost); on wgpu code generation and creating the pipeline,
    /// after which a driver may still compile at first use (lavapipe does: most of its cost),
    /// which only `warmup_seconds` holds.
    pub compiled: u64,
    pub compile_seconds: f64,
    /// Kernels read from the kernel cache instead, and the seconds that took (on wgpu the driver
    /// still builds the pipeline from the stored shader; its own cache, Mesa's say, may keep that).
    pub cache_hits: u64,
    pub cache_load_seconds: f64,
    /// Autotune keys tuned (their seconds include compiling the candidates, also counted above)
    /// and choices read from the cache instead.
    pub tuned: u64,
    pub tune_seconds: f64,
    pub tune_cache_hits: u64,
    /// Kernels compiled during the timed images: each one's cost is inside the timed figures.
    pub compiled_while_timed: u64,
    /// `on`, `off` (not kept between runs), or `unwritable` (kept in memory only: one warning).
    pub cache: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Telemetry {
    pub interval_ms: u64,
    pub sources: Vec<SourceInfo>,
    pub unavailable: Vec<Unavailable>,
    /// Seconds on the samples' clock.
    pub baseline: Window,
    pub timed: Window,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Window {
    pub start: f64,
    pub end: f64,
}

impl BenchResult {
    /// The precision a run is listed and ranked under: the backend's, joined with the weights'
    /// quantization where the file was FP8 or GGUF (`bf16+Q4_K`), so a quantized run never sits
    /// beside the model's own weights.
    pub fn precision_with_weights(&self) -> String {
        match &self.workload.model.quantization {
            Some(types) => format!("{}+{types}", self.backend.precision),
            None => self.backend.precision.clone(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results serialize")
    }

    /// Reads a result file, refusing other schema versions by name.
    pub fn load(path: &Path) -> Result<BenchResult> {
        let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))?;
        Self::from_json(&text).map_err(|problem| BenchError::BadResult {
            path: path.to_path_buf(),
            problem,
        })
    }

    pub fn from_json(text: &str) -> std::result::Result<BenchResult, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == SCHEMA_VERSION as u64 => {}
            Some(v) => {
                return Err(format!(
                    "schema_version {v}; this SD Bench reads version {SCHEMA_VERSION}"
                ))
            }
            None => return Err("no schema_version".into()),
        }
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    /// Writes the JSON beside `path` and renames it into place, so a failure never leaves half a file.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_atomically(path, self.to_json().as_bytes())
    }
}

/// Writes `bytes` beside `path` and renames them into place: a failure never leaves half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&tmp, bytes).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        BenchError::io(path, e)
    })?;
    std::fs::rename(&tmp, path).map_err(|e| BenchError::io(path, e))
}
