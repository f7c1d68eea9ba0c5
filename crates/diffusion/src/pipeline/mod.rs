//! The pipeline: load a diffusers model folder (or synthetic weights) onto a device, then generate
//! images exactly as diffusers' `StableDiffusionPipeline.__call__` (SD1.x, SD2.x) and
//! `StableDiffusionXLPipeline.__call__` (SDXL) do, or their image-to-image pipelines when the request
//! starts from a picture.

mod backend_failure;
pub mod family;
pub mod memory;
pub mod memory_need;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn::{Dispatch, DispatchDevice};
use serde_json::{Map, Value};

use self::backend_failure::guard;
use crate::device::{self, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::checkpoint;
use crate::io::image::{postprocess, preprocess, RgbImage};
use crate::io::safetensors::{SafeTensors, StDtype};
use crate::io::weights::{
    choose_weights_file, FileWeights, Loader, Precision, SyntheticWeights, WeightSource,
};
use crate::limits;
use crate::models::clip::{self, ClipTextModel};
use crate::models::config::{read_json, ClipConfig, UNetConfig, VaeConfig};
use crate::models::tokenizer::Tokenizer;
use crate::models::unet::{Conditioning, TextTime, UNet};
use crate::models::vae::{self, VaeDecoder, VaeEncoder};
use crate::models::vae_tiling::{self, VaeTiles};
use crate::noise::NormalGenerator;
use crate::scheduler::{self, SchedulerKind};
pub use family::{Family, Preset};
use memory_need::{ModelSize, RequestShape};

/// The backend every pipeline runs on: burn's runtime dispatch over flex, wgpu, CUDA and ROCm.
pub type B = Dispatch;

/// Where the model comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSource {
    /// A folder in the diffusers layout (model_index.json, tokenizer/, text_encoder/, unet/, vae/, scheduler/).
    Folder(PathBuf),
    /// A single-file checkpoint in the original Stable Diffusion layout (`.safetensors`). `config`:
    /// a diffusers model folder whose configs, tokenizer and scheduler describe it (its weights are
    /// not read); `None`: SD1.5's, built in.
    Checkpoint {
        file: PathBuf,
        config: Option<PathBuf>,
    },
    /// A preset's architecture with deterministic generated weights: no files, no download.
    Synthetic(Preset),
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

/// Where each component runs and in which precision. The UNet runs on the pipeline's device in
/// the run's precision; the text encoders and the VAE may run on the CPU backend instead (in f32),
/// leaving the device's memory to the UNet. SDXL's VAE decodes in f32 unless its config says it is
/// safe in f16 (`force_upcast: false`, the "fp16-fix" VAE), as diffusers' SDXL pipeline does, so
/// that f16 runs never give black images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub text_encoders: Precision,
    pub unet: Precision,
    pub vae: Precision,
    pub text_encoders_on_cpu: bool,
    pub vae_on_cpu: bool,
    /// Guided steps run the UNet twice (unconditional, then conditional) on the batch instead of
    /// once on the doubled batch.
    pub sequential_cfg: bool,
    /// The VAE decodes (and encodes) tile by tile when the image is larger than its tile
    /// (`models::vae_tiling`, diffusers' `enable_vae_tiling`).
    pub vae_tiling: bool,
    /// The allocator's unused memory goes back to the device between denoising and decoding.
    pub release_memory_between_stages: bool,
    /// The UNet's weights move to host memory while the VAE decodes, and back for the next image.
    pub unet_offload: bool,
    /// The UNet's linear and convolution weights are int8 on the device, dequantized to `unet`'s
    /// precision layer by layer (W8A16, `nn::int8`).
    pub unet_int8: bool,
    /// Tiled decoding and encoding use tiles of half the VAE's own side (a quarter of its
    /// activations).
    pub small_vae_tiles: bool,
    /// The VAE's encoder is loaded (image-to-image), beside its decoder.
    pub vae_encoder: bool,
}

impl Placement {
    fn for_model(
        family: Family,
        vae: &VaeConfig,
        precision: Precision,
        options: &LoadOptions,
    ) -> Self {
        let vae_precision = if options.vae_on_cpu || (family == Family::Sdxl && vae.force_upcast) {
            Precision::F32
        } else {
            precision
        };
        Placement {
            text_encoders: if options.text_encoders_on_cpu {
                Precision::F32
            } else {
                precision
            },
            unet: precision,
            vae: vae_precision,
            text_encoders_on_cpu: options.text_encoders_on_cpu,
            vae_on_cpu: options.vae_on_cpu,
            sequential_cfg: options.sequential_cfg,
            vae_tiling: options.vae_tiling,
            release_memory_between_stages: options.release_memory_between_stages,
            unet_offload: options.unet_offload,
            unet_int8: options.unet_int8,
            small_vae_tiles: options.vae_tiling && options.small_vae_tiles,
            vae_encoder: options.vae_encoder,
        }
    }
}

/// What to load besides what text-to-image needs, and where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// The VAE encoder, which image-to-image requests need.
    pub vae_encoder: bool,
    /// Run the text encoders on the CPU backend (f32) instead of the device.
    pub text_encoders_on_cpu: bool,
    /// Run the VAE on the CPU backend (f32) instead of the device.
    pub vae_on_cpu: bool,
    /// Sequential classifier-free guidance: each guided step runs the UNet on the unconditional
    /// and then the conditional half instead of on both at once, halving the UNet's activation
    /// memory for two calls' worth of weight reads. The result is the same.
    pub sequential_cfg: bool,
    /// Tiled VAE decoding and encoding above the VAE's tile size: one tile's activation memory
    /// instead of the whole image's, at a slightly different result (diffusers' tiled output).
    pub vae_tiling: bool,
    /// Hand the allocator's unused memory back to the device after the denoising loop, so the
    /// VAE (or another program) can have what the UNet's activations used. Costs a reallocation.
    pub release_memory_between_stages: bool,
    /// Move the UNet's weights to host memory before the VAE decodes (and back before the next
    /// image's denoising), so the decode has the device's memory without them. Costs two weight
    /// transfers per image. Nothing moves when the pipeline runs on the CPU.
    pub unet_offload: bool,
    /// Store the UNet's linear and convolution weights as int8 with a scale per output channel
    /// (W8A16: about half the weight memory of f16), dequantized layer by layer. Its first and
    /// last convolutions and its embeddings stay in the run's precision (`UNet::load`).
    pub unet_int8: bool,
    /// Attention in smaller query chunks (`memory::SMALL_SCORE_BUDGET` score elements per call
    /// instead of `nn::SCORE_BUDGET`) where the backend does not tile attention itself.
    pub small_attention_chunks: bool,
    /// With `vae_tiling`, decode and encode in tiles of half the VAE's own side: a quarter of a
    /// tile's activation memory, more tiles (SDXL's VAE tiles are 1024 pixels, so a 1024x1024
    /// decode would otherwise be one piece).
    pub small_vae_tiles: bool,
    /// The request the front end will make first, which the fit check measures the placement
    /// against before any weight is read (`None`: one guided image at the family's usual size).
    /// Every request is checked again before it runs.
    pub planned: Option<RequestShape>,
}

/// How the initial latents are made.
#[derive(Debug, Clone)]
pub enum InitialNoise {
    /// Drawn from `noise::NormalGenerator` on the CPU: the whole batch from one stream, image by
    /// image (as one diffusers generator fills a batch), so image 0 of a batch is the single image.
    /// Image-to-image adds this noise to the encoded picture.
    Seed(u64),
    /// Given latents, [batch, C, H/f, W/f], used like diffusers' `latents=` (scaled by the
    /// scheduler's init noise sigma), or as the noise image-to-image adds. Ancestral samplers draw
    /// their step noise from `step_seed`.
    Latents {
        shape: Vec<usize>,
        data: Vec<f32>,
        step_seed: u64,
    },
}

/// Image-to-image: the picture to start from and how much of it to redraw.
#[derive(Debug, Clone)]
pub struct InitImage {
    /// The request's width x height.
    pub image: RgbImage,
    /// In (0, 1], diffusers' `strength`: the picture is noised to this fraction of the schedule and
    /// only the last `floor(steps * strength)` steps run; 1 starts from almost pure noise.
    pub strength: f64,
}

#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub prompt: String,
    pub negative_prompt: String,
    pub steps: usize,
    pub guidance_scale: f64,
    /// `None`: the model folder's scheduler.
    pub scheduler: Option<SchedulerKind>,
    pub width: usize,
    pub height: usize,
    pub noise: InitialNoise,
    /// Images per prompt, made in one UNet call per step (two with guidance: diffusers'
    /// `num_images_per_prompt`).
    pub batch: usize,
    /// `Some`: image-to-image from this picture.
    pub init_image: Option<InitImage>,
}

impl GenerateRequest {
    /// SD1.5's usual settings for a prompt: 512x512, 30 steps, guidance 7.5, seed 0.
    pub fn new(prompt: impl Into<String>) -> Self {
        GenerateRequest {
            prompt: prompt.into(),
            negative_prompt: String::new(),
            steps: 30,
            guidance_scale: 7.5,
            scheduler: None,
            width: 512,
            height: 512,
            noise: InitialNoise::Seed(0),
            batch: 1,
            init_image: None,
        }
    }

    /// What the memory estimate needs of this request (`LoadOptions::planned` for a load that
    /// will serve it).
    pub fn shape(&self) -> RequestShape {
        RequestShape {
            width: self.width,
            height: self.height,
            batch: self.batch,
            guided: self.guidance_scale > 1.0,
            image_to_image: self.init_image.is_some(),
        }
    }
}

/// Calls `progress` with `event` and returns how long the caller's handler took.
fn observe(progress: &mut dyn FnMut(&Progress), event: &Progress) -> Duration {
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

/// Where the UNet loop waits for the device.
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
        if device.kind == crate::BackendKind::Cpu {
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
    pub unet_steps: Vec<f64>,
    /// Steps run (image-to-image runs only the last part of the schedule).
    pub steps: usize,
    pub unet_total: f64,
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
    pub unet: usize,
    pub vae: usize,
    pub vae_encoder: usize,
}

pub struct Pipeline {
    /// The device the UNet runs on (and every component the placement does not put on the CPU).
    pub device: SelectedDevice,
    /// The CPU backend, for components placed there.
    cpu: DispatchDevice,
    pub precision: Precision,
    tokenizer: Tokenizer,
    text_encoder: ClipTextModel<B>,
    /// SDXL's second tokenizer and text encoder (with projection).
    second: Option<(Tokenizer, ClipTextModel<B>)>,
    /// SDXL: an empty negative prompt is zeros rather than the encoded empty string.
    force_zeros_for_empty_prompt: bool,
    unet: Mutex<UNetSlot>,
    vae: VaeDecoder<B>,
    vae_encoder: Option<VaeEncoder<B>>,
    scheduler_config: Map<String, Value>,
    scheduler_path: PathBuf,
    pub info: ModelInfo,
    /// What the memory fit check needs to estimate a request and suggest a profile.
    fit: FitContext,
}

/// The load's choices, kept to check each request against the device's memory.
struct FitContext {
    size: ModelSize,
    vae: VaeConfig,
    options: LoadOptions,
}

/// The UNet and where its weights are (see `LoadOptions::unet_offload`).
struct UNetSlot {
    unet: UNet<B>,
    on_host: bool,
}

impl Pipeline {
    /// Loads a model onto `device` in `precision` (`None`: f16 where the device supports it) for
    /// text-to-image.
    pub fn load(
        source: &ModelSource,
        device: SelectedDevice,
        precision: Option<Precision>,
    ) -> Result<Self> {
        Self::load_with(source, device, precision, LoadOptions::default())
    }

    /// `load`, with the extra parts `options` asks for.
    pub fn load_with(
        source: &ModelSource,
        device: SelectedDevice,
        precision: Option<Precision>,
        options: LoadOptions,
    ) -> Result<Self> {
        let precision = precision.unwrap_or_else(|| device.default_precision());
        if !device.supports(precision) {
            return Err(DiffusionError::BackendUnavailable {
                backend: device.kind.name().into(),
                reason: format!(
                    "{} does not support {}; use --precision f32",
                    device.info.name,
                    precision.name()
                ),
            });
        }
        guard(
            &device,
            memory::MemoryProfile::of_options(&options),
            || match source {
                ModelSource::Folder(folder) => {
                    Self::load_folder(folder, device.clone(), precision, options)
                }
                ModelSource::Checkpoint { file, config } => Self::load_checkpoint(
                    file,
                    config.as_deref(),
                    device.clone(),
                    precision,
                    options,
                ),
                ModelSource::Synthetic(preset) => {
                    Self::load_synthetic(*preset, device.clone(), precision, options)
                }
            },
        )
    }

    fn load_folder(
        folder: &Path,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        let layout = ModelLayout::check(folder)?;
        let spec = ModelSpec::read(&layout)?;
        // Pick every weights file before reading any, so a missing one fails fast.
        let placement = Placement::for_model(spec.family, &spec.vae, precision, &options);
        let files = FolderFiles::choose(&layout, precision, placement.vae)?;
        let size = files.model_size(&spec)?;
        let FolderFiles {
            text_encoder: te_file,
            text_encoder_2: te2_file,
            unet: unet_file,
            vae: vae_file,
        } = files;
        let mut te2 = match &te2_file {
            Some(file) => Some(projected_text_encoder_weights(FileWeights::open(file)?)),
            None => None,
        };
        let [te, unet, vae] = &mut [
            text_encoder_weights(FileWeights::open(&te_file)?),
            FileWeights::open(&unet_file)?,
            vae_weights(FileWeights::open(&vae_file)?),
        ];
        let weight_files = [Some(te_file), te2_file, Some(unet_file), Some(vae_file)]
            .into_iter()
            .flatten()
            .collect();
        let pipeline = Self::assemble(
            spec,
            size,
            Sources {
                text_encoder: te,
                text_encoder_2: te2.as_mut().map(|s| s as &mut dyn WeightSource),
                unet,
                vae,
            },
            device,
            placement,
            options,
            ModelSource::Folder(folder.to_path_buf()),
            weight_files,
        )?;
        pipeline.check_compatible(folder)?;
        Ok(pipeline)
    }

    fn load_checkpoint(
        file: &Path,
        config: Option<&Path>,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        check_checkpoint_file(file)?;
        let spec = match config {
            Some(folder) => ModelSpec::read(&ModelLayout::check(folder)?)?,
            None => ModelSpec::builtin(Preset::Sd15),
        };
        if spec.family == Family::Sdxl {
            return Err(DiffusionError::Weights {
                path: file.to_path_buf(),
                problem: "is read as an SD1.x checkpoint, but --model-config describes an SDXL model; SDXL single files are not supported yet: use the diffusers folder".into(),
            });
        }
        let placement = Placement::for_model(spec.family, &spec.vae, precision, &options);
        let layout = checkpoint::Layout {
            unet_layers_per_block: spec.unet.plan(&spec.unet_path)?.layers_per_block,
            vae_blocks: spec.vae.block_out_channels.len(),
        };
        let open = |component| -> Result<FileWeights> {
            let tensors = SafeTensors::open(file)?;
            let names = checkpoint::component_names(&tensors, component, &layout)?;
            Ok(FileWeights::renamed(tensors, names))
        };
        let [te, unet, vae] = &mut [
            text_encoder_weights(open(checkpoint::Component::TextEncoder)?),
            open(checkpoint::Component::UNet)?,
            vae_weights(open(checkpoint::Component::Vae)?),
        ];
        // A checkpoint's parts are SD1.x's or SD2.x's as upstream has them (the layout above
        // reads them by those names).
        let size = ModelSize::upstream(spec.family, spec.vae.sample_size);
        let pipeline = Self::assemble(
            spec,
            size,
            Sources {
                text_encoder: te,
                text_encoder_2: None,
                unet,
                vae,
            },
            device,
            placement,
            options,
            ModelSource::Checkpoint {
                file: file.to_path_buf(),
                config: config.map(Path::to_path_buf),
            },
            vec![file.to_path_buf()],
        )?;
        pipeline.check_compatible(file)?;
        Ok(pipeline)
    }

    fn load_synthetic(
        preset: Preset,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        // Each tensor's values depend only on the seed and its name.
        let seed = 0x5D_BE_AC_15;
        let [te, te2, unet, vae] = &mut [0; 4].map(|_| SyntheticWeights::new(seed));
        let spec = ModelSpec::builtin(preset);
        let placement = Placement::for_model(spec.family, &spec.vae, precision, &options);
        let text_encoder_2: Option<&mut dyn WeightSource> = if spec.clip2.is_some() {
            Some(te2)
        } else {
            None
        };
        let size = ModelSize::upstream(spec.family, spec.vae.sample_size);
        Self::assemble(
            spec,
            size,
            Sources {
                text_encoder: te,
                text_encoder_2,
                unet,
                vae,
            },
            device,
            placement,
            options,
            ModelSource::Synthetic(preset),
            Vec::new(),
        )
    }

    /// Builds the models from their weight sources and waits for the device to hold them.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        spec: ModelSpec,
        size: ModelSize,
        sources: Sources,
        device: SelectedDevice,
        placement: Placement,
        options: LoadOptions,
        source: ModelSource,
        weight_files: Vec<PathBuf>,
    ) -> Result<Self> {
        let preset = Preset::matching(&spec.clip, spec.clip2.as_ref(), &spec.unet, &spec.vae);
        let fit = FitContext {
            size,
            vae: spec.vae.clone(),
            options,
        };
        // The request the front end plans, else one guided image at the family's usual size: a
        // placement that cannot hold it is refused before any weight is read.
        let planned = options
            .planned
            .unwrap_or_else(|| RequestShape::usual(spec.family));
        fit.check(&placement, &device, &planned)?;
        let dev = device.device.clone();
        let cpu = device::cpu_device();
        let on = |on_cpu: bool| if on_cpu { cpu.clone() } else { dev.clone() };
        let (text_dev, vae_dev) = (on(placement.text_encoders_on_cpu), on(placement.vae_on_cpu));
        let text_encoder = load_component(
            sources.text_encoder,
            &text_dev,
            placement.text_encoders,
            |l| ClipTextModel::load(&spec.clip, false, l),
        )?;
        let second = match (spec.clip2.as_ref(), spec.tokenizer2, sources.text_encoder_2) {
            (Some(config), Some(tokenizer), Some(weights)) => {
                let model = load_component(weights, &text_dev, placement.text_encoders, |l| {
                    ClipTextModel::load(config, true, l)
                })?;
                Some((tokenizer, model))
            }
            _ => None,
        };
        let score_budget = |on_cpu: bool| {
            let max_buffer = if on_cpu {
                None
            } else {
                device.max_buffer_bytes()
            };
            memory::attention_score_budget(options.small_attention_chunks, max_buffer)
        };
        let unet = load_component(sources.unet, &dev, placement.unet, |l| {
            l.int8_weights = options.unet_int8;
            l.attention_score_budget = score_budget(false);
            UNet::load(&spec.unet, &spec.unet_path, l)
        })?;
        let (vae, vae_encoder) = load_component(sources.vae, &vae_dev, placement.vae, |l| {
            l.attention_score_budget = score_budget(placement.vae_on_cpu);
            let decoder = VaeDecoder::load(&spec.vae, &spec.vae_path, l)?;
            let encoder = match options.vae_encoder {
                true => Some(VaeEncoder::load(&spec.vae, &spec.vae_path, l)?),
                false => None,
            };
            Ok((decoder, encoder))
        })?;
        let pipeline = Pipeline {
            precision: placement.unet,
            tokenizer: spec.tokenizer,
            info: ModelInfo {
                source,
                weight_files,
                default_scheduler: spec.default_scheduler,
                vae_scale_factor: vae.scale_factor(),
                latent_channels: vae.latent_channels(),
                family: spec.family,
                preset,
                placement,
            },
            text_encoder,
            second,
            force_zeros_for_empty_prompt: spec.force_zeros_for_empty_prompt,
            unet: Mutex::new(UNetSlot {
                unet,
                on_host: false,
            }),
            vae,
            vae_encoder,
            scheduler_config: spec.scheduler_config,
            scheduler_path: spec.scheduler_path,
            device,
            cpu,
            fit,
        };
        device_sync(&pipeline.device)?;
        Ok(pipeline)
    }

    /// Components whose configs disagree (e.g. a text encoder narrower than the UNet's cross
    /// attention) would fail mid-generation; say so at load time instead.
    fn check_compatible(&self, folder: &Path) -> Result<()> {
        let pooled = self.second.as_ref().map_or(0, |(_, te)| te.pooled_size());
        let slot = self.lock_unet();
        let unet = &slot.unet;
        let problem = if unet.cross_attention_dim() != self.text_encoder_width() {
            Some(format!(
                "the UNet's cross_attention_dim ({}) differs from the text encoders' hidden_size ({})",
                unet.cross_attention_dim(),
                self.text_encoder_width()
            ))
        } else if unet.needs_text_time() && unet.text_time_pooled_size() != pooled {
            Some(format!(
                "the UNet's projection_class_embeddings_input_dim expects a {}-wide pooled text embedding but text_encoder_2 gives {pooled}",
                unet.text_time_pooled_size()
            ))
        } else if unet.in_channels() != self.vae.latent_channels() {
            Some(format!(
                "the UNet takes {} channels but the VAE has {} latent channels",
                unet.in_channels(),
                self.vae.latent_channels()
            ))
        } else if self.tokenizer.max_length() > self.text_encoder.max_positions() {
            Some(format!(
                "the tokenizer pads to {} tokens but the text encoder has {} positions",
                self.tokenizer.max_length(),
                self.text_encoder.max_positions()
            ))
        } else {
            None
        };
        match problem {
            Some(problem) => Err(DiffusionError::ModelFolder {
                path: folder.to_path_buf(),
                problem: format!("has inconsistent components: {problem}"),
            }),
            None => Ok(()),
        }
    }

    fn lock_unet(&self) -> MutexGuard<'_, UNetSlot> {
        // A panic elsewhere while it was held leaves the weights as they were: still usable.
        self.unet
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The UNet, back on the device if `offload_unet` moved it to host memory.
    fn unet_on_device(&self) -> MutexGuard<'_, UNetSlot> {
        let mut slot = self.lock_unet();
        if slot.on_host {
            slot.unet = slot.unet.clone().to_device(&self.device.device);
            slot.on_host = false;
        }
        slot
    }

    /// Moves the UNet's weights to host memory (the CPU backend), freeing the device's copy.
    fn offload_unet(&self) {
        if self.device.kind == crate::BackendKind::Cpu {
            return;
        }
        let mut slot = self.lock_unet();
        if !slot.on_host {
            slot.unet = slot.unet.clone().to_device(&self.cpu);
            slot.on_host = true;
        }
    }

    /// Width of the text embeddings: SDXL's two encoders side by side.
    fn text_encoder_width(&self) -> usize {
        self.text_encoder.hidden_size() + self.second.as_ref().map_or(0, |(_, te)| te.hidden_size())
    }

    /// Parameters per component, counted from the loaded modules.
    pub fn parameter_counts(&self) -> ParameterCounts {
        ParameterCounts {
            text_encoders: self.text_encoder.num_params()
                + self.second.as_ref().map_or(0, |(_, e)| e.num_params()),
            unet: self.lock_unet().unet.num_params(),
            vae: self.vae.num_params(),
            vae_encoder: self.vae_encoder.as_ref().map_or(0, |e| e.num_params()),
        }
    }

    /// What the memory estimate needs to know of `source` (its family, parameters and VAE tile,
    /// and the VAE's config), from its configs and its weight files' headers: no weight is read.
    pub fn model_size(
        source: &ModelSource,
        precision: Precision,
    ) -> Result<(ModelSize, VaeConfig)> {
        let upstream = |spec: ModelSpec| {
            let size = ModelSize::upstream(spec.family, spec.vae.sample_size);
            (size, spec.vae)
        };
        Ok(match source {
            ModelSource::Synthetic(preset) => upstream(ModelSpec::builtin(*preset)),
            ModelSource::Folder(folder) => {
                let layout = ModelLayout::check(folder)?;
                let spec = ModelSpec::read(&layout)?;
                let placement = Placement::for_model(
                    spec.family,
                    &spec.vae,
                    precision,
                    &LoadOptions::default(),
                );
                let size =
                    FolderFiles::choose(&layout, precision, placement.vae)?.model_size(&spec)?;
                (size, spec.vae)
            }
            ModelSource::Checkpoint {
                config: Some(folder),
                ..
            } => upstream(ModelSpec::read(&ModelLayout::check(folder)?)?),
            ModelSource::Checkpoint { config: None, .. } => {
                upstream(ModelSpec::builtin(Preset::Sd15))
            }
        })
    }

    /// The memory profile the pipeline was loaded with (`None` for options no profile gives).
    pub fn memory_profile(&self) -> Option<memory::MemoryProfile> {
        self.fit.profile()
    }

    /// Bytes of the UNet's weights as stored (int8 weights count a byte each).
    pub fn unet_weight_bytes(&self) -> u64 {
        crate::nn::weight_bytes(&self.lock_unet().unet)
    }

    /// Whether image-to-image requests can run (the VAE encoder was loaded).
    pub fn has_vae_encoder(&self) -> bool {
        self.vae_encoder.is_some()
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Whether requests of `shape` fit the device's memory with this pipeline's placement (the
    /// estimate `validate` checks): an error naming the need and a profile that would fit.
    pub fn check_fits(&self, shape: &RequestShape) -> Result<()> {
        self.fit.check(&self.info.placement, &self.device, shape)
    }

    /// Checks a request against this model before any work is done.
    pub fn validate(&self, request: &GenerateRequest) -> Result<()> {
        let f = self.info.vae_scale_factor;
        for (name, side) in [("width", request.width), ("height", request.height)] {
            if let Some(problem) = limits::side_problem(side) {
                return Err(DiffusionError::Request(format!("{name} {problem}")));
            }
            if side % f != 0 {
                return Err(DiffusionError::Request(format!(
                    "{name} must be a multiple of {f}, this model's VAE scale (got {side})"
                )));
            }
        }
        if let Some(problem) = limits::steps_problem(request.steps) {
            return Err(DiffusionError::Request(format!("steps {problem}")));
        }
        if let Some(problem) = limits::batch_problem(request.batch) {
            return Err(DiffusionError::Request(format!("batch {problem}")));
        }
        self.check_fits(&request.shape())?;
        if let Some(init) = &request.init_image {
            let image = &init.image;
            if (image.width, image.height) != (request.width, request.height) {
                return Err(DiffusionError::Request(format!(
                    "the init image is {}x{} but the request is {}x{}: give the image's size, or resize the image",
                    image.width, image.height, request.width, request.height
                )));
            }
            img2img_start(request.steps, init.strength)?;
            if self.vae_encoder.is_none() {
                return Err(DiffusionError::Request(
                    "image-to-image needs the VAE encoder: load the pipeline with LoadOptions { vae_encoder: true }".into(),
                ));
            }
        }
        if !request.guidance_scale.is_finite() {
            return Err(DiffusionError::Request(
                "guidance must be a finite number".into(),
            ));
        }
        if let InitialNoise::Latents { shape, data, .. } = &request.noise {
            let expected = self.latent_shape(request);
            if shape.as_slice() != expected {
                return Err(DiffusionError::Request(format!(
                    "latents have shape {shape:?} but {}x{} needs {expected:?}",
                    request.width, request.height
                )));
            }
            if data.iter().any(|v| !v.is_finite()) {
                return Err(DiffusionError::Request(
                    "latents contain NaN or infinite values".into(),
                ));
            }
        }
        Ok(())
    }

    /// For callers that want a picture or nothing: an error when `generated` holds NaN or
    /// infinite values. (A benchmark records such an image as invalid instead.)
    pub fn require_finite(&self, generated: &Generated) -> Result<()> {
        if generated.non_finite() == 0 {
            return Ok(());
        }
        Err(DiffusionError::Backend {
            backend: self.device.kind.name().into(),
            message: format!(
                "the decoded image contains {} NaN or infinite values (numeric overflow in {}); try --precision f32",
                generated.non_finite(),
                self.precision.name()
            ),
        })
    }

    /// [batch, latent channels, H/f, W/f]
    pub fn latent_shape(&self, request: &GenerateRequest) -> [usize; 4] {
        let f = self.info.vae_scale_factor;
        [
            request.batch,
            self.info.latent_channels,
            request.height / f,
            request.width / f,
        ]
    }

    /// Runs one generation with a device sync after every step (live step progress and per-step
    /// times). `progress` receives stage and step events; `cancel` is checked between steps.
    pub fn generate(
        &self,
        request: &GenerateRequest,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        self.generate_with_sync(request, StepSync::EveryStep, progress, cancel)
    }

    /// Runs one generation, waiting for the device where `sync` says.
    pub fn generate_with_sync(
        &self,
        request: &GenerateRequest,
        sync: StepSync,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        self.validate(request)?;
        let kind = request.scheduler.unwrap_or(self.info.default_scheduler);
        // Built before any device work so a bad scheduler config fails early.
        let mut scheduler = scheduler::build::<B>(
            kind,
            &self.scheduler_config,
            request.steps,
            &self.scheduler_path,
        )?;
        guard(&self.device, self.memory_profile(), || {
            self.run(request, kind, scheduler.as_mut(), sync, progress, cancel)
        })
    }

    fn run(
        &self,
        request: &GenerateRequest,
        kind: SchedulerKind,
        scheduler: &mut dyn scheduler::Scheduler<B>,
        sync: StepSync,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        let dev = &self.device.device;
        let mut timings = StageTimings::default();
        let guided = request.guidance_scale > 1.0;
        device_sync(&self.device)?;
        let start = Instant::now();

        let cond = self.conditioning(request, guided);
        device_sync(&self.device)?;
        timings.text_encoder = start.elapsed().as_secs_f64();
        // Time spent in `progress` (the caller's drawing, events, allocator and telemetry reads)
        // is not model work: it is left out of every total it falls inside.
        let mut observing = observe(
            progress,
            &Progress::TextEncoded {
                seconds: timings.text_encoder,
            },
        );

        let shape = self.latent_shape(request);
        let count: usize = shape.iter().product();
        let (initial, mut step_noise) = match &request.noise {
            InitialNoise::Seed(seed) => {
                let mut generator = NormalGenerator::new(*seed);
                (generator.normals(count), generator)
            }
            InitialNoise::Latents {
                data, step_seed, ..
            } => (data.clone(), NormalGenerator::new(*step_seed)),
        };
        let initial = Tensor::<B, 4>::from_data(TensorData::new(initial, shape), (dev, DType::F32));
        // Text-to-image starts from scaled noise at the first step; image-to-image from the
        // encoded picture noised to the level of its first step (diffusers' img2img
        // `prepare_latents`, with the latent distribution's mean).
        let (mut latents, first) = match &request.init_image {
            None => (initial * scheduler.init_noise_sigma(), 0),
            Some(init) => {
                let encode_start = Instant::now();
                let first = img2img_start(request.steps, init.strength)?;
                let encoded = self.encode_image(&init.image)?.repeat_dim(0, request.batch);
                let latents = scheduler.add_noise(encoded, initial, first);
                device_sync(&self.device)?;
                timings.vae_encode = encode_start.elapsed().as_secs_f64();
                (latents, first)
            }
        };
        let mut noise = |dims: [usize; 4]| {
            let n: usize = dims.iter().product();
            Tensor::<B, 4>::from_data(
                TensorData::new(step_noise.normals(n), dims),
                (dev, DType::F32),
            )
        };

        let timesteps = scheduler.timesteps()[first..].to_vec();
        // Sequential guidance: the conditioning's unconditional and conditional halves.
        let halves =
            (guided && self.info.placement.sequential_cfg).then(|| cond.halves(request.batch));
        let loop_start = Instant::now();
        let mut observing_in_loop = Duration::ZERO;
        // StageEdges: step events wait for the loop's closing sync.
        let mut deferred = Vec::new();
        let unet_slot = self.unet_on_device();
        let unet = &unet_slot.unet;
        for (k, &t) in timesteps.iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(DiffusionError::Cancelled);
            }
            // The scheduler's own step index: image-to-image starts part-way through.
            let i = first + k;
            let step_start = Instant::now();
            let guided_out = match &halves {
                // The scaling is elementwise: scaling the batch once serves both halves.
                Some((uncond_cond, text_cond)) => {
                    let input = scheduler.scale_model_input(latents.clone(), i);
                    let uncond = unet
                        .forward(input.clone(), t, uncond_cond)?
                        .cast(DType::F32);
                    let text = unet.forward(input, t, text_cond)?.cast(DType::F32);
                    uncond.clone() + (text - uncond) * request.guidance_scale
                }
                None if guided => {
                    let input = Tensor::cat(vec![latents.clone(), latents.clone()], 0);
                    let input = scheduler.scale_model_input(input, i);
                    let out = unet.forward(input, t, &cond)?.cast(DType::F32);
                    let [uncond, text]: [Tensor<B, 4>; 2] =
                        out.chunk(2, 0).try_into().expect("two halves");
                    uncond.clone() + (text - uncond) * request.guidance_scale
                }
                None => {
                    let input = scheduler.scale_model_input(latents.clone(), i);
                    unet.forward(input, t, &cond)?.cast(DType::F32)
                }
            };
            latents = scheduler.step(guided_out, i, latents, &mut noise);
            let event = |seconds| Progress::Step {
                index: k + 1,
                total: timesteps.len(),
                seconds,
            };
            match sync {
                StepSync::EveryStep => {
                    device_sync(&self.device)?;
                    let seconds = step_start.elapsed().as_secs_f64();
                    timings.unet_steps.push(seconds);
                    // The device is idle while the observer runs: its time is left out.
                    let observed = observe(progress, &event(Some(seconds)));
                    observing_in_loop += observed;
                    observing += observed;
                }
                StepSync::StageEdges => deferred.push(event(None)),
            }
        }
        device_sync(&self.device)?;
        timings.unet_total = (loop_start.elapsed() - observing_in_loop).as_secs_f64();
        timings.steps = timesteps.len();
        for event in &deferred {
            observing += observe(progress, event);
        }
        if cancel.is_cancelled() {
            return Err(DiffusionError::Cancelled);
        }

        // One image at a time, as diffusers' VAE slicing does: the same numbers as one batched
        // decode, with a batch's peak memory no higher than one image's.
        let vae_start = Instant::now();
        drop(unet_slot);
        if self.info.placement.unet_offload {
            self.offload_unet();
        }
        if self.info.placement.release_memory_between_stages {
            self.device.release_unused_memory();
        }
        let latents = latents / self.vae.scaling_factor();
        let mut images = Vec::with_capacity(request.batch);
        for n in 0..request.batch {
            let one = latents.clone().narrow(0, n, 1).to_device(self.vae_device());
            let decoded = self.decode_latents(one).cast(DType::F32);
            let [_, _, h, w] = decoded.dims();
            let values = tensor_to_vec(decoded)?;
            let non_finite = values.iter().filter(|v| !v.is_finite()).count();
            let (float_image, image) = postprocess(&values, h, w);
            images.push(GeneratedImage {
                image,
                float_image,
                non_finite,
            });
        }
        timings.vae_decode = vae_start.elapsed().as_secs_f64();
        timings.total = (start.elapsed() - observing).as_secs_f64();
        progress(&Progress::Decoded {
            seconds: timings.vae_decode,
        });
        Ok(Generated {
            images,
            timings,
            scheduler: kind,
        })
    }

    /// A picture to its scaled latents [1, C, H/f, W/f] (f32): the VAE encoder's mean times the
    /// scaling factor.
    fn encode_image(&self, image: &RgbImage) -> Result<Tensor<B, 4>> {
        let encoder = self.vae_encoder.as_ref().ok_or_else(|| {
            DiffusionError::Request(
                "image-to-image needs the VAE encoder, which was not loaded".into(),
            )
        })?;
        let pixels = Tensor::<B, 4>::from_data(
            TensorData::new(preprocess(image), [1, 3, image.height, image.width]),
            (self.vae_device(), DType::F32),
        );
        let mean = match self.vae_tiles() {
            Some(tiles) => encoder.encode_tiled(pixels, tiles),
            None => encoder.encode(pixels),
        };
        let latents = mean * self.vae.scaling_factor();
        Ok(latents.to_device(&self.device.device))
    }

    /// The UNet's conditioning for a request: text embeddings of [negative x batch; prompt x batch]
    /// when guided (diffusers' order), else of the prompt alone, once per image; for SDXL also the
    /// pooled embeddings and the size/crop ids (original size = target size = the image's, no crop,
    /// as diffusers' defaults).
    fn conditioning(&self, request: &GenerateRequest, guided: bool) -> Conditioning<B> {
        let zero_negative = guided
            && self.second.is_some()
            && self.force_zeros_for_empty_prompt
            && request.negative_prompt.is_empty();
        let (context, pooled) = if guided && !zero_negative {
            self.encode_texts(&[&request.negative_prompt, &request.prompt])
        } else {
            self.encode_texts(&[&request.prompt])
        };
        let (context, pooled) = if zero_negative {
            (
                Tensor::cat(vec![context.zeros_like(), context], 0),
                pooled.map(|p| Tensor::cat(vec![p.zeros_like(), p], 0)),
            )
        } else {
            (context, pooled)
        };
        let context = repeat_rows(context, request.batch);
        let pooled = pooled.map(|p| repeat_rows(p, request.batch));
        let rows = context.dims()[0];
        let (h, w) = (request.height as f32, request.width as f32);
        Conditioning {
            context: context.cast(self.info.placement.unet.dtype()),
            text_time: pooled.map(|text_embeds| TextTime {
                text_embeds,
                time_ids: vec![[h, w, 0.0, 0.0, h, w]; rows],
            }),
        }
    }

    /// Text embeddings [N, S, D] of each text and, for SDXL, the pooled embeddings [N, P]: SD1.x
    /// and SD2.x take the last hidden state; SDXL both encoders' penultimate hidden states side by
    /// side and the second one's projected pooled output.
    fn encode_texts(&self, texts: &[&str]) -> (Tensor<B, 3>, Option<Tensor<B, 2>>) {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.tokenizer.encode(t)).collect();
        let first = self.text_encoder.forward(self.ids_tensor(&ids));
        let (context, pooled) = match &self.second {
            None => (first.last_hidden_state, None),
            Some((tokenizer, encoder)) => {
                let ids: Vec<Vec<u32>> = texts.iter().map(|t| tokenizer.encode(t)).collect();
                let eos: Vec<usize> = ids.iter().map(|row| tokenizer.eos_position(row)).collect();
                let second = encoder.forward(self.ids_tensor(&ids));
                let pooled = encoder.pooled(second.last_hidden_state, &eos);
                let context = Tensor::cat(vec![first.penultimate, second.penultimate], 2);
                (context, Some(pooled))
            }
        };
        // To the UNet's device (nothing moves when the encoders run there too).
        let dev = &self.device.device;
        (context.to_device(dev), pooled.map(|p| p.to_device(dev)))
    }

    /// The device the text encoders run on.
    fn text_device(&self) -> &DispatchDevice {
        match self.info.placement.text_encoders_on_cpu {
            true => &self.cpu,
            false => &self.device.device,
        }
    }

    /// The device the VAE runs on.
    fn vae_device(&self) -> &DispatchDevice {
        match self.info.placement.vae_on_cpu {
            true => &self.cpu,
            false => &self.device.device,
        }
    }

    /// Token id rows (each `max_length` long) as an [N, S] tensor.
    fn ids_tensor(&self, rows: &[Vec<u32>]) -> Tensor<B, 2, Int> {
        let s = rows[0].len();
        let flat: Vec<i64> = rows.iter().flatten().map(|&id| id as i64).collect();
        Tensor::<B, 2, Int>::from_data(TensorData::new(flat, [rows.len(), s]), self.text_device())
    }

    fn encode_ids(&self, rows: &[Vec<u32>]) -> Tensor<B, 3> {
        self.text_encoder
            .forward(self.ids_tensor(rows))
            .last_hidden_state
    }

    /// Component access for parity tests and tools: a prompt's conditioning as the UNet gets it
    /// (unguided): text embeddings [1, S, D] and, for SDXL, the pooled embedding [1, P], as f32.
    pub fn run_prompt_encoding(&self, prompt: &str) -> Result<(Vec<f32>, Option<Vec<f32>>)> {
        guard(&self.device, self.memory_profile(), || {
            let (context, pooled) = self.encode_texts(&[prompt]);
            let pooled = match pooled {
                Some(p) => Some(tensor_to_vec(p.cast(DType::F32))?),
                None => None,
            };
            Ok((tensor_to_vec(context.cast(DType::F32))?, pooled))
        })
    }

    /// Component access for parity tests and tools: text encoder output for token ids, as f32.
    pub fn run_text_encoder(&self, ids: &[Vec<u32>]) -> Result<Vec<f32>> {
        let vocab = self.text_encoder.vocab_size() as u32;
        if let Some(bad) = ids.iter().flatten().find(|&&id| id >= vocab) {
            return Err(DiffusionError::Request(format!(
                "token id {bad} is outside the vocabulary ({vocab})"
            )));
        }
        guard(&self.device, self.memory_profile(), || {
            tensor_to_vec(self.encode_ids(ids).cast(DType::F32))
        })
    }

    /// One UNet call on raw inputs (f32, row-major): `sample` [N, C, h, w], `context` [N, S, D],
    /// and for SDXL `text_time`: pooled text embeddings [N, P] and six ids per row.
    pub fn run_unet(
        &self,
        sample: &[f32],
        sample_shape: [usize; 4],
        timestep: f32,
        context: &[f32],
        context_shape: [usize; 3],
        text_time: Option<RawTextTime>,
    ) -> Result<Vec<f32>> {
        guard(&self.device, self.memory_profile(), || {
            let dev = &self.device.device;
            let x = Tensor::<B, 4>::from_data(
                TensorData::new(sample.to_vec(), sample_shape),
                (dev, DType::F32),
            );
            let context = Tensor::<B, 3>::from_data(
                TensorData::new(context.to_vec(), context_shape),
                (dev, self.precision.dtype()),
            );
            let text_time = text_time.map(|(pooled, shape, ids)| TextTime {
                text_embeds: Tensor::from_data(
                    TensorData::new(pooled.to_vec(), shape),
                    (dev, DType::F32),
                ),
                time_ids: ids.to_vec(),
            });
            let cond = Conditioning { context, text_time };
            let unet = self.unet_on_device();
            tensor_to_vec(unet.unet.forward(x, timestep, &cond)?.cast(DType::F32))
        })
    }

    /// One VAE encode of a picture: the latent distribution's mean [1, C, H/f, W/f] (no scaling).
    pub fn run_vae_encode(&self, image: &RgbImage) -> Result<Vec<f32>> {
        guard(&self.device, self.memory_profile(), || {
            let scaled = self.encode_image(image)?;
            tensor_to_vec(scaled / self.vae.scaling_factor())
        })
    }

    /// One VAE decode of raw latents (no scaling), returning [N, 3, H, W] in about [-1, 1].
    pub fn run_vae_decode(&self, latents: &[f32], shape: [usize; 4]) -> Result<Vec<f32>> {
        guard(&self.device, self.memory_profile(), || {
            let z = Tensor::<B, 4>::from_data(
                TensorData::new(latents.to_vec(), shape),
                (self.vae_device(), DType::F32),
            );
            tensor_to_vec(self.decode_latents(z).cast(DType::F32))
        })
    }

    /// The tiles the placement asks for, decoding and encoding: the VAE's own (diffusers'
    /// `enable_tiling`), or half their side for `small_vae_tiles`.
    fn vae_tiles(&self) -> Option<VaeTiles> {
        let p = &self.info.placement;
        let own = self.vae.tiles();
        p.vae_tiling.then(|| match p.small_vae_tiles {
            true => VaeTiles::new(own.sample / 2, self.vae.scale_factor()),
            false => own,
        })
    }

    /// The VAE decode of unscaled latents, tiled when the placement says so, or when one of the
    /// decoder's tensors would be larger than the device's largest buffer.
    fn decode_latents(&self, z: Tensor<B, 4>) -> Tensor<B, 4> {
        self.vae
            .decode_within(z, self.vae_max_buffer(), self.vae_tiles())
    }

    /// The largest buffer the VAE's device allows (`None`: no limit, as on the CPU).
    fn vae_max_buffer(&self) -> Option<u64> {
        match self.info.placement.vae_on_cpu {
            true => None,
            false => self.device.max_buffer_bytes(),
        }
    }

    /// How many tiles each image of `width` x `height` decodes in (1: one piece): tiles come from
    /// the placement (above the VAE's tile size) or from the device's largest buffer.
    pub fn decode_tile_count(&self, width: usize, height: usize) -> usize {
        let f = self.vae.scale_factor().max(1);
        let (h, w) = (height / f, width / f);
        match self
            .vae
            .decode_tile(h, w, self.vae_max_buffer(), self.vae_tiles())
        {
            Some(tile) => vae_tiling::tile_count(h, w, tile),
            None => 1,
        }
    }
}

/// Each row of `t` (along dimension 0) `n` times in a row: [a, b] -> [a, a, b, b] for n = 2.
fn repeat_rows<const D: usize>(t: Tensor<B, D>, n: usize) -> Tensor<B, D> {
    if n == 1 {
        return t;
    }
    let rows = t.dims()[0];
    let copies = (0..rows)
        .flat_map(|r| std::iter::repeat_n(t.clone().narrow(0, r, 1), n))
        .collect();
    Tensor::cat(copies, 0)
}

/// SDXL's added conditions as raw values: pooled text embeddings (f32, row-major), their shape
/// [N, P], and six size/crop ids per row.
pub type RawTextTime<'a> = (&'a [f32], [usize; 2], &'a [[f32; 6]]);

/// Text encoder files: transformers 5 names, and tensors the engine does not use.
fn text_encoder_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(clip::ALIASES)
        .ignoring(clip::IGNORED_PREFIXES)
}

/// `CLIPTextModelWithProjection` files (SDXL's text_encoder_2): `text_projection` is used.
fn projected_text_encoder_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(clip::ALIASES)
        .ignoring(clip::IGNORED_WITH_PROJECTION)
}

/// A model folder's weight files, one per component.
struct FolderFiles {
    text_encoder: PathBuf,
    text_encoder_2: Option<PathBuf>,
    unet: PathBuf,
    vae: PathBuf,
}

impl FolderFiles {
    /// Each component's file for a run in `precision` with the VAE in `vae_precision` (the
    /// `.fp16` variants first in f16).
    fn choose(
        layout: &ModelLayout,
        precision: Precision,
        vae_precision: Precision,
    ) -> Result<Self> {
        Ok(FolderFiles {
            text_encoder: choose_weights_file(&layout.text_encoder, "model", precision)?,
            text_encoder_2: match &layout.text_encoder_2 {
                Some(folder) => Some(choose_weights_file(folder, "model", precision)?),
                None => None,
            },
            unet: choose_weights_file(&layout.unet, "diffusion_pytorch_model", precision)?,
            vae: choose_weights_file(&layout.vae, "diffusion_pytorch_model", vae_precision)?,
        })
    }

    /// The model's size for the memory estimate: the parameters the files' headers list (a
    /// distilled or otherwise smaller model counts as what it is), the family and VAE tile from
    /// the configs.
    fn model_size(&self, spec: &ModelSpec) -> Result<ModelSize> {
        let used = |ignored: &'static [&'static str]| {
            move |name: &str| !ignored.iter().any(|p| name.starts_with(p))
        };
        let mut text_encoder_params =
            stored_parameters(&self.text_encoder, used(clip::IGNORED_PREFIXES))?;
        if let Some(file) = &self.text_encoder_2 {
            text_encoder_params += stored_parameters(file, used(clip::IGNORED_WITH_PROJECTION))?;
        }
        let encoder = |name: &str| name.starts_with("encoder.") || name.starts_with("quant_conv.");
        Ok(ModelSize {
            family: spec.family,
            text_encoder_params,
            unet_params: stored_parameters(&self.unet, |_| true)?,
            vae_decoder_params: stored_parameters(&self.vae, |name| !encoder(name))?,
            vae_encoder_params: stored_parameters(&self.vae, encoder)?,
            vae_tile: spec.vae.sample_size,
        })
    }
}

/// The weights a safetensors file stores under the names `counted` picks, from its header
/// (floating-point tensors: integer buffers such as CLIP's position ids are not weights).
fn stored_parameters(path: &Path, counted: impl Fn(&str) -> bool) -> Result<u64> {
    let file = SafeTensors::open(path)?;
    Ok(file
        .names()
        .filter(|name| counted(name))
        .filter_map(|name| file.info(name))
        .filter(|info| !matches!(info.dtype, StDtype::Other(_)))
        .map(|info| info.shape.iter().product::<usize>() as u64)
        .sum())
}

/// Where each component's weights come from.
struct Sources<'a> {
    text_encoder: &'a mut dyn WeightSource,
    text_encoder_2: Option<&'a mut dyn WeightSource>,
    unet: &'a mut dyn WeightSource,
    vae: &'a mut dyn WeightSource,
}

/// VAE files: legacy attention names, and the encoder, which text-to-image does not read.
fn vae_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(vae::LEGACY_ALIASES)
        .ignoring(vae::ENCODER_PREFIXES)
}

/// Everything a pipeline needs besides its weights: configs, tokenizer and scheduler settings.
struct ModelSpec {
    family: Family,
    clip: ClipConfig,
    /// SDXL's second text encoder and tokenizer.
    clip2: Option<ClipConfig>,
    tokenizer2: Option<Tokenizer>,
    force_zeros_for_empty_prompt: bool,
    unet: UNetConfig,
    unet_path: PathBuf,
    vae: VaeConfig,
    vae_path: PathBuf,
    tokenizer: Tokenizer,
    scheduler_config: Map<String, Value>,
    scheduler_path: PathBuf,
    default_scheduler: SchedulerKind,
}

impl ModelSpec {
    /// The configs of a diffusers model folder, each checked against what the engine implements.
    fn read(layout: &ModelLayout) -> Result<Self> {
        let clip_path = layout.text_encoder.join("config.json");
        let clip: ClipConfig = read_json(&clip_path)?;
        clip.validate(&clip_path)?;
        let (clip2, tokenizer2) = match (&layout.text_encoder_2, &layout.tokenizer_2) {
            (Some(te), Some(tok)) => {
                let path = te.join("config.json");
                let config: ClipConfig = read_json(&path)?;
                config.validate(&path)?;
                (Some(config), Some(Tokenizer::from_folder(tok)?))
            }
            _ => (None, None),
        };
        let family = if clip2.is_some() {
            Family::Sdxl
        } else if clip.hidden_act == "gelu" {
            Family::Sd2
        } else {
            Family::Sd1
        };
        let unet_path = layout.unet.join("config.json");
        let unet: UNetConfig = read_json(&unet_path)?;
        unet.plan(&unet_path)?;
        // Checked before any weights are read: SDXL's UNet takes the pooled embedding and size ids.
        let text_time = unet.addition_embed_type.is_some();
        if text_time != (family == Family::Sdxl) {
            let problem = if text_time {
                "the UNet's config has addition_embed_type \"text_time\" (SDXL) but the pipeline has one text encoder"
            } else {
                "the pipeline has two text encoders (SDXL) but the UNet's config has no addition_embed_type \"text_time\""
            };
            return Err(DiffusionError::config(&unet_path, problem));
        }
        let vae_path = layout.vae.join("config.json");
        let vae: VaeConfig = read_json(&vae_path)?;
        vae.validate(&vae_path)?;
        let scheduler_path = layout.scheduler.join("scheduler_config.json");
        let scheduler_config: Map<String, Value> = read_json(&scheduler_path)?;
        let default_scheduler = default_scheduler(&scheduler_config, &scheduler_path)?;
        Ok(ModelSpec {
            family,
            clip,
            clip2,
            tokenizer2,
            force_zeros_for_empty_prompt: layout.force_zeros_for_empty_prompt,
            unet,
            unet_path,
            vae,
            vae_path,
            tokenizer: Tokenizer::from_folder(&layout.tokenizer)?,
            scheduler_config,
            scheduler_path,
            default_scheduler,
        })
    }

    /// A preset's configs, tokenizers and scheduler, built in.
    fn builtin(preset: Preset) -> Self {
        let here = PathBuf::from(format!("<built-in {} config>", preset.repository()));
        let c = preset.configs();
        let tokenizer = |exclamation: bool| {
            let t = Tokenizer::builtin_sd15();
            if exclamation {
                t.padding_with_exclamation()
            } else {
                t
            }
        };
        ModelSpec {
            family: preset.family(),
            clip: c.text_encoder,
            tokenizer2: c
                .text_encoder_2
                .as_ref()
                .map(|_| tokenizer(c.pad_with_exclamation[1])),
            clip2: c.text_encoder_2,
            force_zeros_for_empty_prompt: preset.family() == Family::Sdxl,
            unet: c.unet,
            unet_path: here.clone(),
            vae: c.vae,
            vae_path: here.clone(),
            tokenizer: tokenizer(c.pad_with_exclamation[0]),
            default_scheduler: default_scheduler(&c.scheduler, &here)
                .expect("built-in scheduler config"),
            scheduler_config: c.scheduler,
            scheduler_path: here,
        }
    }
}

fn default_scheduler(config: &Map<String, Value>, path: &Path) -> Result<SchedulerKind> {
    let class = config
        .get("_class_name")
        .and_then(Value::as_str)
        .ok_or_else(|| DiffusionError::config(path, "`_class_name` is missing"))?;
    SchedulerKind::from_class_name(class, config, path)
}

/// A single-file checkpoint must be a safetensors file; pickles (`.ckpt`, `.pt`, `.bin`) can run
/// code when loaded and are refused.
fn check_checkpoint_file(file: &Path) -> Result<()> {
    let problem = |problem: &str| {
        Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: problem.to_string(),
        })
    };
    if !file.exists() {
        return problem("does not exist");
    }
    if !file.is_file() {
        return problem("is not a file");
    }
    match file.extension().and_then(|e| e.to_str()) {
        Some("safetensors") => Ok(()),
        Some("ckpt" | "pt" | "pth" | "bin") => problem(
            "is a PyTorch pickle checkpoint; SD Bench reads .safetensors checkpoints (most model sites offer one, or convert it with safetensors' convert tool)",
        ),
        _ => problem("is not a .safetensors checkpoint"),
    }
}

/// The component folders of a diffusers model folder, checked to exist.
struct ModelLayout {
    tokenizer: PathBuf,
    text_encoder: PathBuf,
    /// SDXL's second tokenizer and text encoder.
    tokenizer_2: Option<PathBuf>,
    text_encoder_2: Option<PathBuf>,
    /// model_index.json's `force_zeros_for_empty_prompt` (SDXL; diffusers' default true).
    force_zeros_for_empty_prompt: bool,
    unet: PathBuf,
    vae: PathBuf,
    scheduler: PathBuf,
}

impl ModelLayout {
    fn check(folder: &Path) -> Result<Self> {
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
                "is not a diffusers model folder: model_index.json is missing (expected the layout of \
                 stable-diffusion-v1-5/stable-diffusion-v1-5: model_index.json, tokenizer/, text_encoder/, unet/, vae/, scheduler/)"
                    .into(),
            ));
        }
        let index: Map<String, Value> = read_json(&index)?;
        let class = index.get("_class_name").and_then(Value::as_str);
        let sdxl = match class {
            None | Some("StableDiffusionPipeline") => false,
            Some("StableDiffusionXLPipeline") => true,
            Some(other) => {
                return Err(problem(format!(
                    "holds a `{other}` (model_index.json); SD Bench runs StableDiffusionPipeline (SD1.x, SD2.x) and StableDiffusionXLPipeline (SDXL base) models"
                )))
            }
        };
        let sub = |name: &str| -> Result<PathBuf> {
            let p = folder.join(name);
            if p.is_dir() {
                Ok(p)
            } else {
                Err(problem(format!("has no {name}/ folder")))
            }
        };
        let second = |name: &str| -> Result<Option<PathBuf>> {
            if !sdxl {
                return Ok(None);
            }
            sub(name).map(Some).map_err(|_| {
                problem(format!(
                    "has no {name}/ folder, which an SDXL pipeline (StableDiffusionXLPipeline) needs: download the whole model again"
                ))
            })
        };
        Ok(ModelLayout {
            tokenizer: sub("tokenizer")?,
            text_encoder: sub("text_encoder")?,
            tokenizer_2: second("tokenizer_2")?,
            text_encoder_2: second("text_encoder_2")?,
            force_zeros_for_empty_prompt: index
                .get("force_zeros_for_empty_prompt")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            unet: sub("unet")?,
            vae: sub("vae")?,
            scheduler: sub("scheduler")?,
        })
    }
}

impl FitContext {
    /// The profile whose options these are (the `cpu` profile's are `full`'s: told apart by
    /// the backend).
    fn profile(&self) -> Option<memory::MemoryProfile> {
        memory::MemoryProfile::of_options(&self.options)
    }

    /// Refuses work that will not fit the device's memory, naming what it needs and the profile
    /// that would fit. Checked where the device's memory size is known (the free memory NVML or
    /// amdgpu's sysfs report, the CUDA or HIP driver's total, or `--memory-limit`).
    fn check(
        &self,
        placement: &Placement,
        device: &SelectedDevice,
        work: &RequestShape,
    ) -> Result<()> {
        let Some(available) = device.memory_for_fit() else {
            return Ok(());
        };
        let size = &self.size;
        let need = memory_need::estimate(size, placement, work);
        if need.peak() <= available {
            return Ok(());
        }
        let base = LoadOptions {
            vae_encoder: self.options.vae_encoder,
            ..LoadOptions::default()
        };
        let placement_of = |profile: memory::MemoryProfile| {
            Placement::for_model(
                size.family,
                &self.vae,
                placement.unet,
                &profile.load_options(base),
            )
        };
        let current = self.profile().map_or("this placement".to_string(), |p| {
            format!("the {p} memory profile")
        });
        let fitting = memory_need::first_fitting(available, |p| {
            memory_need::estimate(size, &placement_of(p), work)
        });
        let advice = match fitting {
            Some((profile, need)) => format!(
                "--memory {profile} needs about {} (in the app: System, Memory profile)",
                memory_need::gib(need.peak())
            ),
            None => "no profile on this device fits: use --memory cpu, a smaller size or fewer \
                     images per batch"
                .to_string(),
        };
        Err(DiffusionError::DoesNotFit(format!(
            "out of device memory before starting: {current} needs about {} for {} \
             ({}, {}) but {} has {} ({}); {advice}",
            memory_need::gib(need.peak()),
            work.describe(),
            size.family,
            placement.unet.name(),
            device.info.name,
            memory_need::gib(available),
            device.memory_for_fit_meaning(),
        )))
    }
}

fn load_component<T>(
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

fn device_sync(device: &SelectedDevice) -> Result<()> {
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
