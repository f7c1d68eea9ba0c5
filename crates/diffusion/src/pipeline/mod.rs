//! The family-agnostic pipeline the families build on: what the bench, the memory profiles, parity,
//! timing and the app use without knowing the model's family. Each family's pipeline
//! (`families::<family>/`) implements `FamilyPipeline`: validate a request, check it fits,
//! generate with an observer and a cancel token, report its parts; `engine::Pipeline` holds one. Requests, progress events,
//! timings, placement and results are the same types for every family.

pub(crate) mod backend_failure;
pub(crate) mod cgroup_memory;
pub mod component_roles;
pub(crate) mod decode;
pub mod family;
pub mod host_memory;
pub mod limits;
pub mod memory;
pub mod memory_need;
#[cfg(test)]
pub(crate) mod memory_test_support;
pub(crate) mod offload;
pub mod op_timing;
pub mod part_files;
mod placement;
mod request;
pub(crate) mod stages;
pub(crate) mod steps;
pub mod three_parts;
pub mod workload;

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use burn::prelude::*;
use burn::Dispatch;
use serde_json::{Map, Value};

use crate::device::{self, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::image::RgbImage;
use crate::io::weights::{Precision, WeightSource};
use crate::models::config::read_json;
use crate::models::vae::VaeDecoder;
use crate::nn::loader::Loader;
use crate::scheduler::SchedulerKind;
use decode::DecodePlan;
pub use family::{Component, ComponentKind, Family, FamilyDescriptor, Preset};
use memory_need::{FitContext, RequestShape};
pub use placement::{LoadOptions, Placement};
pub(crate) use request::check_request;
pub use request::{GenerateRequest, GuidanceOptions, InitImage, InitialNoise, SkipLayerGuidance};

/// The backend every pipeline runs on: burn's runtime dispatch over flex, wgpu, CUDA and ROCm.
pub type B = Dispatch;

/// Where the model comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSource {
    /// A folder in the diffusers layout (model_index.json, tokenizer/, text_encoder/, unet/, vae/, scheduler/).
    Folder(PathBuf),
    /// A model file: a single-file checkpoint in the original Stable Diffusion layout, or a
    /// denoiser kept on its own (`.safetensors` or `.gguf`). `config`: a diffusers model folder
    /// whose configs, tokenizer and scheduler describe it (`None`: the built-in ones its family
    /// picks by the file's tensors); the folder's weights are read only for the components neither
    /// the file nor `parts` holds.
    Checkpoint {
        file: PathBuf,
        config: Option<PathBuf>,
        parts: ComponentFiles,
    },
    /// A preset's architecture with deterministic generated weights: no files, no download.
    Synthetic(Preset),
}

/// Components kept as files of their own beside a model file (`--text-encoder`, `--vae`), as
/// ComfyUI keeps them (`text_encoders/`, `vae/`): each replaces that component's weights. The
/// text encoders come in any order; the family finds which of its components each file is
/// (`component_roles::assign`). Which components a family takes this way is its own; one it
/// cannot take is refused by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentFiles {
    pub text_encoders: Vec<PathBuf>,
    pub vae: Option<PathBuf>,
}

impl ComponentFiles {
    pub fn is_empty(&self) -> bool {
        self.text_encoders.is_empty() && self.vae.is_none()
    }

    /// The one text encoder file of a model with one text encoder, `what` (`None`: none given);
    /// more than one is refused by name.
    pub fn text_encoder(&self, what: &str) -> Result<Option<&Path>> {
        match self.text_encoders.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            [_, second, ..] => Err(DiffusionError::unsupported(
                second,
                format!(
                    "the model takes one text encoder file (a {what}); {} --text-encoder files were given",
                    self.text_encoders.len()
                ),
            )),
        }
    }

    /// Every file given, with the option it was given by.
    pub fn files(&self) -> impl Iterator<Item = (&'static str, &Path)> {
        let text = self
            .text_encoders
            .iter()
            .map(|f| ("--text-encoder", f.as_path()));
        text.chain(self.vae.iter().map(|f| ("--vae", f.as_path())))
    }
}

/// What was loaded, for reports.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub source: ModelSource,
    /// The weight files read, in load order (empty for synthetic weights).
    pub weight_files: Vec<PathBuf>,
    pub default_scheduler: SchedulerKind,
    pub vae_scale_factor: usize,
    pub latent_channels: usize,
    pub family: Family,
    /// The built-in preset whose text encoder, UNet and VAE configs these are: the model computes
    /// exactly what that model does (a fine-tune's weights differ, its cost does not).
    pub preset: Option<Preset>,
    /// Each component's precision.
    pub placement: Placement,
}

/// Calls `progress` with `event` and returns how long the caller's handler took.
pub(crate) fn observe(progress: &mut dyn FnMut(&Progress), event: &Progress) -> Duration {
    let start = Instant::now();
    progress(event);
    start.elapsed()
}

/// Image-to-image's first step: diffusers' `get_timesteps` runs the last `floor(steps * strength)`
/// steps of the schedule. An error when that is none.
pub fn img2img_start(steps: usize, strength: f64) -> Result<usize> {
    if !(strength > 0.0 && strength <= 1.0) {
        return Err(DiffusionError::Request(format!(
            "strength must be more than 0 and at most 1 (got {strength})"
        )));
    }
    let run = ((steps as f64 * strength).floor() as usize).min(steps);
    if run == 0 {
        return Err(DiffusionError::Request(format!(
            "strength {strength} with {steps} steps runs no step (steps x strength must be at least 1): raise --strength or --steps"
        )));
    }
    Ok(steps - run)
}

/// Progress events, in order: text encoded, each step, decoded.
#[derive(Debug, Clone)]
pub enum Progress {
    TextEncoded {
        seconds: f64,
    },
    /// A step done. `seconds`: its time, where each step ends with a device sync
    /// (`StepSync::EveryStep`); `None` where steps are queued without one, and these events come
    /// after the loop's closing sync.
    Step {
        index: usize,
        total: usize,
        seconds: Option<f64>,
    },
    Decoded {
        seconds: f64,
    },
}

/// Where the denoiser loop waits for the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSync {
    /// After every step: exact per-step times and live step progress, but the host cannot queue
    /// the next step while the device works on this one.
    EveryStep,
    /// Only at the loop's edges: the host queues every step ahead of the device, as a real
    /// application would; no per-step times, and the step events come after the loop. A
    /// progress observer never runs while the device works, so it cannot stall the queue.
    StageEdges,
}

impl StepSync {
    /// What a timed (scored) generation uses on `device`: steps queued on a device that queues
    /// work; a sync after every step on the CPU backend, which runs each operation to completion
    /// as it is called (so a sync there costs nothing and step times are exact).
    pub fn for_timing(device: &SelectedDevice) -> StepSync {
        if device.kind == crate::device::BackendKind::Cpu {
            StepSync::EveryStep
        } else {
            StepSync::StageEdges
        }
    }
}

/// A flag checked between steps; set it from any thread to stop a generation.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst)
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Seconds per stage; each region is bounded by device syncs, so queued GPU work is counted where
/// it ran.
#[derive(Debug, Clone, Default)]
pub struct StageTimings {
    pub text_encoder: f64,
    /// Image-to-image: encoding the picture and noising it (0 otherwise).
    pub vae_encode: f64,
    /// Per-step seconds, with `StepSync::EveryStep` (empty otherwise).
    pub denoiser_steps: Vec<f64>,
    /// Steps run (image-to-image runs only the last part of the schedule).
    pub steps: usize,
    pub denoiser_total: f64,
    pub vae_decode: f64,
    pub total: f64,
}

pub struct GeneratedImage {
    pub image: RgbImage,
    /// [H, W, 3] in [0, 1], before 8-bit quantisation (diffusers' `output_type="np"`).
    pub float_image: Vec<f32>,
    /// Decoded values that are NaN or infinite (a numeric overflow): such an image is broken.
    pub non_finite: usize,
}

pub struct Generated {
    /// One per image of the batch, in order.
    pub images: Vec<GeneratedImage>,
    pub timings: StageTimings,
    pub scheduler: SchedulerKind,
}

impl Generated {
    /// NaN or infinite values over the whole batch.
    pub fn non_finite(&self) -> usize {
        self.images.iter().map(|i| i.non_finite).sum()
    }
}

/// Parameters of each loaded component (the VAE: its decoder and `post_quant_conv`, the parts
/// text-to-image runs; the encoder apart, 0 when it was not loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParameterCounts {
    pub text_encoders: usize,
    pub denoiser: usize,
    pub vae: usize,
    pub vae_encoder: usize,
}

/// What every loaded pipeline holds that `FamilyPipeline`'s shared methods read.
pub struct Held<'a> {
    pub info: &'a ModelInfo,
    pub device: &'a SelectedDevice,
    pub fit: &'a FitContext,
    pub vae: &'a VaeDecoder<B>,
}

/// What every family's pipeline does; `Pipeline` holds one.
pub trait FamilyPipeline: Send + Sync {
    /// What the shared methods below read.
    fn held(&self) -> Held<'_>;
    fn info(&self) -> &ModelInfo {
        self.held().info
    }
    fn device(&self) -> &SelectedDevice {
        self.held().device
    }
    /// Checks a request against this model before any work is done.
    fn validate(&self, request: &GenerateRequest) -> Result<()>;
    /// Whether requests of `shape` fit the device's memory with this placement: an error naming
    /// the need and a profile that would fit.
    fn check_fits(&self, shape: &RequestShape) -> Result<()> {
        let held = self.held();
        held.fit.check(&held.info.placement, held.device, shape)
    }
    /// Runs one generation, waiting for the device where `sync` says.
    fn generate_with_sync(
        &self,
        request: &GenerateRequest,
        sync: StepSync,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated>;
    /// A step-distilled model runs without classifier-free guidance whatever the request's scale.
    fn ignores_guidance(&self) -> bool {
        false
    }
    fn parameter_counts(&self) -> ParameterCounts;
    /// The memory profile the pipeline was loaded with (`None` for options no profile gives).
    fn memory_profile(&self) -> Option<memory::MemoryProfile> {
        self.held().fit.profile()
    }
    /// Bytes of the denoiser's weights (UNet or transformer) as stored.
    fn denoiser_weight_bytes(&self) -> u64;
    /// Whether image-to-image requests can run (the VAE encoder was loaded).
    fn has_vae_encoder(&self) -> bool {
        false
    }
    /// How many tiles each image of `width` x `height` decodes in (1: one piece).
    fn decode_tile_count(&self, width: usize, height: usize) -> usize {
        let held = self.held();
        DecodePlan::of(held.vae, &held.info.placement, held.device)
            .tile_count(held.vae, width, height)
    }
    /// What the denoiser is called in reports: "unet", "transformer".
    fn denoiser_name(&self) -> &'static str {
        "transformer"
    }
    /// The calls `sdbench timing` times for an image of `width` x `height`: one denoiser call
    /// as a step makes it and one VAE decode, their inputs prepared beforehand.
    fn timed_calls(&self, width: usize, height: usize) -> Result<Vec<TimedCall<'_>>>;
    /// The family's own type, for component access (parity tests).
    fn as_any(&self) -> &dyn Any;
}

/// One call `sdbench timing` repeats: what it is, and the call.
pub struct TimedCall<'a> {
    /// "unet call (batch 2, 4x64x64 latents)".
    pub label: String,
    pub run: Box<dyn FnMut() -> Result<()> + 'a>,
}

/// A diffusers model folder's `model_index.json`, after checking the folder is one.
pub(crate) fn folder_index(folder: &Path) -> Result<Map<String, Value>> {
    let problem = |problem: String| DiffusionError::ModelFolder {
        path: folder.to_path_buf(),
        problem,
    };
    if !folder.exists() {
        return Err(problem("does not exist".into()));
    }
    if !folder.is_dir() {
        return Err(problem("is not a folder".into()));
    }
    let index = folder.join("model_index.json");
    if !index.is_file() {
        return Err(problem(
            "is not a diffusers model folder: model_index.json is missing (expected a Hub \
             repository's layout: model_index.json and a folder per component, e.g. tokenizer/, \
             text_encoder/, unet/ or transformer/, vae/, scheduler/)"
                .into(),
        ));
    }
    read_json(&index)
}

pub(crate) fn load_component<T>(
    source: &mut dyn WeightSource,
    device: &burn::tensor::Device<B>,
    precision: Precision,
    build: impl FnOnce(&mut Loader<B>) -> Result<T>,
) -> Result<T> {
    let mut loader = Loader::new(source, device, precision).with_host(&device::cpu_device());
    let model = build(&mut loader)?;
    loader.finish()?;
    Ok(model)
}

/// Loads a family's denoiser (UNet or transformer) onto the run's device as the placement and
/// options say: its precision, int8 weights where the profile asks for them, and attention
/// chunked to fit the device's largest buffer.
pub(crate) fn load_denoiser<T>(
    source: &mut dyn WeightSource,
    device: &SelectedDevice,
    placement: &Placement,
    options: &LoadOptions,
    build: impl FnOnce(&mut Loader<B>) -> Result<T>,
) -> Result<T> {
    let budget =
        memory::attention_score_budget(options.small_attention_chunks, device.max_buffer_bytes());
    load_component(source, &device.device, placement.denoiser, |l| {
        l.int8_weights = options.denoiser_int8;
        l.attention_score_budget = budget;
        build(l)
    })
}

pub(crate) fn device_sync(device: &SelectedDevice) -> Result<()> {
    device.sync()
}

/// A tensor's values as f32. The device is synced first: a failure on it (an allocation) comes
/// back from a sync, and a read alone would return memory the failed work never wrote.
pub(crate) fn tensor_to_vec<const D: usize>(t: Tensor<B, D>) -> Result<Vec<f32>> {
    let failed = |e: String| DiffusionError::Backend {
        backend: "readback".into(),
        message: e,
    };
    <B as burn::tensor::backend::Backend>::sync(&t.device()).map_err(|e| failed(e.to_string()))?;
    t.try_into_data()
        .map_err(|e| failed(format!("{e:?}")))?
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| failed(format!("{e:?}")))
}
