//! The text-to-image pipeline: load a diffusers model folder (or synthetic weights) onto a device,
//! then generate images exactly as diffusers' `StableDiffusionPipeline.__call__` does.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn::Dispatch;
use serde_json::{Map, Value};

use crate::checkpoint;
use crate::clip::{self, ClipTextModel};
use crate::config::{read_json, ClipConfig, UNetConfig, VaeConfig};
use crate::device::SelectedDevice;
use crate::error::{DiffusionError, Result};
use crate::image::{postprocess, RgbImage};
use crate::noise::NormalGenerator;
use crate::safetensors::SafeTensors;
use crate::scheduler::{self, SchedulerKind};
use crate::tokenizer::Tokenizer;
use crate::unet::UNet;
use crate::vae::{self, VaeDecoder};
use crate::weights::{
    choose_weights_file, FileWeights, Loader, Precision, SyntheticWeights, WeightSource,
};

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
    /// SD1.5's architecture with deterministic generated weights: no files, no download.
    Synthetic,
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
    /// The text encoder, UNet and VAE configs are SD1.5's: the model computes exactly what SD1.5
    /// does (a fine-tune's weights differ, its cost does not).
    pub sd15_architecture: bool,
}

/// How the initial latents are made.
#[derive(Debug, Clone)]
pub enum InitialNoise {
    /// Drawn from `noise::NormalGenerator` on the CPU.
    Seed(u64),
    /// Given latents, [1, C, H/f, W/f], used like diffusers' `latents=` (scaled by the scheduler's
    /// init noise sigma). Ancestral samplers draw their step noise from `step_seed`.
    Latents {
        shape: Vec<usize>,
        data: Vec<f32>,
        step_seed: u64,
    },
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
        }
    }
}

/// Progress events, in order: text encoded, each step, decoded.
#[derive(Debug, Clone)]
pub enum Progress {
    TextEncoded {
        seconds: f64,
    },
    Step {
        index: usize,
        total: usize,
        seconds: f64,
    },
    Decoded {
        seconds: f64,
    },
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
    pub unet_steps: Vec<f64>,
    pub unet_total: f64,
    pub vae_decode: f64,
    pub total: f64,
}

pub struct Generated {
    pub image: RgbImage,
    /// [H, W, 3] in [0, 1], before 8-bit quantisation (diffusers' `output_type="np"`).
    pub float_image: Vec<f32>,
    /// Decoded values that are NaN or infinite (a numeric overflow): such an image is broken.
    pub non_finite: usize,
    pub timings: StageTimings,
    pub scheduler: SchedulerKind,
}

pub struct Pipeline {
    pub device: SelectedDevice,
    pub precision: Precision,
    tokenizer: Tokenizer,
    text_encoder: ClipTextModel<B>,
    unet: UNet<B>,
    vae: VaeDecoder<B>,
    scheduler_config: Map<String, Value>,
    scheduler_path: PathBuf,
    pub info: ModelInfo,
}

/// The scheduler_config.json of stable-diffusion-v1-5, used for synthetic models.
const SD15_SCHEDULER: &str = r#"{"_class_name": "PNDMScheduler", "beta_end": 0.012, "beta_schedule": "scaled_linear",
 "beta_start": 0.00085, "num_train_timesteps": 1000, "set_alpha_to_one": false, "skip_prk_steps": true,
 "steps_offset": 1, "trained_betas": null, "clip_sample": false}"#;

impl Pipeline {
    /// Loads a model onto `device` in `precision` (`None`: f16 where the device supports it).
    pub fn load(
        source: &ModelSource,
        device: SelectedDevice,
        precision: Option<Precision>,
    ) -> Result<Self> {
        let precision = precision.unwrap_or_else(|| device.default_precision());
        if !device.supports(precision) {
            return Err(DiffusionError::BackendUnavailable {
                backend: device.kind.name().into(),
                reason: format!(
                    "{} does not support {}; use --precision f32",
                    device.name,
                    precision.name()
                ),
            });
        }
        let backend = device.kind.name().to_string();
        guard(&backend, || match source {
            ModelSource::Folder(folder) => Self::load_folder(folder, device.clone(), precision),
            ModelSource::Checkpoint { file, config } => {
                Self::load_checkpoint(file, config.as_deref(), device.clone(), precision)
            }
            ModelSource::Synthetic => Self::load_synthetic(device.clone(), precision),
        })
    }

    fn load_folder(folder: &Path, device: SelectedDevice, precision: Precision) -> Result<Self> {
        let layout = ModelLayout::check(folder)?;
        let spec = ModelSpec::read(&layout)?;
        // Pick every weights file before reading any, so a missing one fails fast.
        let te_file = choose_weights_file(&layout.text_encoder, "model", precision)?;
        let unet_file = choose_weights_file(&layout.unet, "diffusion_pytorch_model", precision)?;
        let vae_file = choose_weights_file(&layout.vae, "diffusion_pytorch_model", precision)?;
        let [te, unet, vae] = &mut [
            text_encoder_weights(FileWeights::open(&te_file)?),
            FileWeights::open(&unet_file)?,
            vae_weights(FileWeights::open(&vae_file)?),
        ];
        let pipeline = Self::assemble(
            spec,
            [te, unet, vae],
            device,
            precision,
            ModelSource::Folder(folder.to_path_buf()),
            vec![te_file, unet_file, vae_file],
        )?;
        pipeline.check_compatible(folder)?;
        Ok(pipeline)
    }

    fn load_checkpoint(
        file: &Path,
        config: Option<&Path>,
        device: SelectedDevice,
        precision: Precision,
    ) -> Result<Self> {
        check_checkpoint_file(file)?;
        let spec = match config {
            Some(folder) => ModelSpec::read(&ModelLayout::check(folder)?)?,
            None => ModelSpec::sd15(),
        };
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
        let pipeline = Self::assemble(
            spec,
            [te, unet, vae],
            device,
            precision,
            ModelSource::Checkpoint {
                file: file.to_path_buf(),
                config: config.map(Path::to_path_buf),
            },
            vec![file.to_path_buf()],
        )?;
        pipeline.check_compatible(file)?;
        Ok(pipeline)
    }

    fn load_synthetic(device: SelectedDevice, precision: Precision) -> Result<Self> {
        // Each tensor's values depend only on the seed and its name.
        let seed = 0x5D_BE_AC_15;
        let [te, unet, vae] = &mut [0; 3].map(|_| SyntheticWeights::new(seed));
        Self::assemble(
            ModelSpec::sd15(),
            [te, unet, vae],
            device,
            precision,
            ModelSource::Synthetic,
            Vec::new(),
        )
    }

    /// Builds the three models from their weight sources (text encoder, UNet, VAE) and waits for
    /// the device to hold them.
    fn assemble(
        spec: ModelSpec,
        [te_source, unet_source, vae_source]: [&mut dyn WeightSource; 3],
        device: SelectedDevice,
        precision: Precision,
        source: ModelSource,
        weight_files: Vec<PathBuf>,
    ) -> Result<Self> {
        let sd15_architecture = spec.clip == ClipConfig::sd15()
            && spec.unet == UNetConfig::sd15()
            && spec.vae == VaeConfig::sd15();
        let dev = device.device.clone();
        let text_encoder = load_component(te_source, &dev, precision, |l| {
            ClipTextModel::load(&spec.clip, l)
        })?;
        let unet = load_component(unet_source, &dev, precision, |l| {
            UNet::load(&spec.unet, &spec.unet_path, l)
        })?;
        let vae = load_component(vae_source, &dev, precision, |l| {
            VaeDecoder::load(&spec.vae, &spec.vae_path, l)
        })?;
        let pipeline = Pipeline {
            precision,
            tokenizer: spec.tokenizer,
            info: ModelInfo {
                source,
                weight_files,
                default_scheduler: spec.default_scheduler,
                vae_scale_factor: vae.scale_factor(),
                latent_channels: vae.latent_channels(),
                sd15_architecture,
            },
            text_encoder,
            unet,
            vae,
            scheduler_config: spec.scheduler_config,
            scheduler_path: spec.scheduler_path,
            device,
        };
        device_sync(&pipeline.device)?;
        Ok(pipeline)
    }

    /// Components whose configs disagree (e.g. a text encoder narrower than the UNet's cross
    /// attention) would fail mid-generation; say so at load time instead.
    fn check_compatible(&self, folder: &Path) -> Result<()> {
        let problem = if self.unet.cross_attention_dim() != self.text_encoder_width() {
            Some(format!(
                "the UNet's cross_attention_dim ({}) differs from the text encoder's hidden_size ({})",
                self.unet.cross_attention_dim(),
                self.text_encoder_width()
            ))
        } else if self.unet.in_channels() != self.vae.latent_channels() {
            Some(format!(
                "the UNet takes {} channels but the VAE has {} latent channels",
                self.unet.in_channels(),
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

    fn text_encoder_width(&self) -> usize {
        self.text_encoder.hidden_size()
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Checks a request against this model before any work is done.
    pub fn validate(&self, request: &GenerateRequest) -> Result<()> {
        let f = self.info.vae_scale_factor;
        for (name, side) in [("width", request.width), ("height", request.height)] {
            if side == 0 || side % 8 != 0 || side % f != 0 {
                return Err(DiffusionError::Request(format!(
                    "{name} must be a positive multiple of 8 (got {side})"
                )));
            }
            if side > 4096 {
                return Err(DiffusionError::Request(format!(
                    "{name} {side} is larger than 4096"
                )));
            }
        }
        if request.steps == 0 {
            return Err(DiffusionError::Request("steps must be at least 1".into()));
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
        if generated.non_finite == 0 {
            return Ok(());
        }
        Err(DiffusionError::Backend {
            backend: self.device.kind.name().into(),
            message: format!(
                "the decoded image contains {} NaN or infinite values (numeric overflow in {}); try --precision f32",
                generated.non_finite,
                self.precision.name()
            ),
        })
    }

    /// [1, latent channels, H/f, W/f]
    pub fn latent_shape(&self, request: &GenerateRequest) -> [usize; 4] {
        let f = self.info.vae_scale_factor;
        [
            1,
            self.info.latent_channels,
            request.height / f,
            request.width / f,
        ]
    }

    /// Runs one generation. `progress` receives stage and step events; `cancel` is checked
    /// between steps.
    pub fn generate(
        &self,
        request: &GenerateRequest,
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
        let backend = self.device.kind.name().to_string();
        guard(&backend, || {
            self.run(request, kind, scheduler.as_mut(), progress, cancel)
        })
    }

    fn run(
        &self,
        request: &GenerateRequest,
        kind: SchedulerKind,
        scheduler: &mut dyn scheduler::Scheduler<B>,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        let dev = &self.device.device;
        let mut timings = StageTimings::default();
        let guided = request.guidance_scale > 1.0;
        device_sync(&self.device)?;
        let start = Instant::now();

        // Text: [negative; positive] when guided (diffusers' order), else the prompt alone.
        let context = if guided {
            let ids = [
                self.tokenizer.encode(&request.negative_prompt),
                self.tokenizer.encode(&request.prompt),
            ];
            self.encode_ids(&ids)
        } else {
            self.encode_ids(&[self.tokenizer.encode(&request.prompt)])
        };
        device_sync(&self.device)?;
        timings.text_encoder = start.elapsed().as_secs_f64();
        progress(&Progress::TextEncoded {
            seconds: timings.text_encoder,
        });

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
        let mut latents =
            Tensor::<B, 4>::from_data(TensorData::new(initial, shape), (dev, DType::F32))
                * scheduler.init_noise_sigma();
        let mut noise = |dims: [usize; 4]| {
            let n: usize = dims.iter().product();
            Tensor::<B, 4>::from_data(
                TensorData::new(step_noise.normals(n), dims),
                (dev, DType::F32),
            )
        };

        let timesteps = scheduler.timesteps().to_vec();
        let loop_start = Instant::now();
        for (i, &t) in timesteps.iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(DiffusionError::Cancelled);
            }
            let step_start = Instant::now();
            let input = if guided {
                Tensor::cat(vec![latents.clone(), latents.clone()], 0)
            } else {
                latents.clone()
            };
            let input = scheduler.scale_model_input(input, i);
            let out = self.unet.forward(input, t, &context).cast(DType::F32);
            let guided_out = if guided {
                let [uncond, text]: [Tensor<B, 4>; 2] =
                    out.chunk(2, 0).try_into().expect("batch of two");
                uncond.clone() + (text - uncond) * request.guidance_scale
            } else {
                out
            };
            latents = scheduler.step(guided_out, i, latents, &mut noise);
            device_sync(&self.device)?;
            let seconds = step_start.elapsed().as_secs_f64();
            timings.unet_steps.push(seconds);
            progress(&Progress::Step {
                index: i + 1,
                total: timesteps.len(),
                seconds,
            });
        }
        timings.unet_total = loop_start.elapsed().as_secs_f64();
        if cancel.is_cancelled() {
            return Err(DiffusionError::Cancelled);
        }

        let vae_start = Instant::now();
        let decoded = self
            .vae
            .decode(latents / self.vae.scaling_factor())
            .cast(DType::F32);
        let [_, _, h, w] = decoded.dims();
        let values = tensor_to_vec(decoded)?;
        timings.vae_decode = vae_start.elapsed().as_secs_f64();
        timings.total = start.elapsed().as_secs_f64();
        progress(&Progress::Decoded {
            seconds: timings.vae_decode,
        });
        let non_finite = values.iter().filter(|v| !v.is_finite()).count();
        let (float_image, image) = postprocess(&values, h, w);
        Ok(Generated {
            image,
            float_image,
            non_finite,
            timings,
            scheduler: kind,
        })
    }

    /// Token ids (each row `max_length` long) -> text embeddings [N, S, hidden] in the activation
    /// dtype.
    fn encode_ids(&self, rows: &[Vec<u32>]) -> Tensor<B, 3> {
        let s = rows[0].len();
        let flat: Vec<i64> = rows.iter().flatten().map(|&id| id as i64).collect();
        let ids = Tensor::<B, 2, Int>::from_data(
            TensorData::new(flat, [rows.len(), s]),
            &self.device.device,
        );
        self.text_encoder.forward(ids)
    }

    /// Component access for parity tests and tools: text encoder output for token ids, as f32.
    pub fn run_text_encoder(&self, ids: &[Vec<u32>]) -> Result<Vec<f32>> {
        let vocab = self.text_encoder.vocab_size() as u32;
        if let Some(bad) = ids.iter().flatten().find(|&&id| id >= vocab) {
            return Err(DiffusionError::Request(format!(
                "token id {bad} is outside the vocabulary ({vocab})"
            )));
        }
        guard(self.device.kind.name(), || {
            tensor_to_vec(self.encode_ids(ids).cast(DType::F32))
        })
    }

    /// One UNet call on raw inputs (f32, row-major): `sample` [N, C, h, w], `context` [N, S, D].
    pub fn run_unet(
        &self,
        sample: &[f32],
        sample_shape: [usize; 4],
        timestep: f32,
        context: &[f32],
        context_shape: [usize; 3],
    ) -> Result<Vec<f32>> {
        guard(self.device.kind.name(), || {
            let dev = &self.device.device;
            let x = Tensor::<B, 4>::from_data(
                TensorData::new(sample.to_vec(), sample_shape),
                (dev, DType::F32),
            );
            let c = Tensor::<B, 3>::from_data(
                TensorData::new(context.to_vec(), context_shape),
                (dev, self.precision.dtype()),
            );
            tensor_to_vec(self.unet.forward(x, timestep, &c).cast(DType::F32))
        })
    }

    /// One VAE decode of raw latents (no scaling), returning [N, 3, H, W] in about [-1, 1].
    pub fn run_vae_decode(&self, latents: &[f32], shape: [usize; 4]) -> Result<Vec<f32>> {
        guard(self.device.kind.name(), || {
            let z = Tensor::<B, 4>::from_data(
                TensorData::new(latents.to_vec(), shape),
                (&self.device.device, DType::F32),
            );
            tensor_to_vec(self.vae.decode(z).cast(DType::F32))
        })
    }
}

/// Text encoder files: transformers 5 names, and tensors the engine does not use.
fn text_encoder_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(clip::ALIASES)
        .ignoring(clip::IGNORED_PREFIXES)
}

/// VAE files: legacy attention names, and the encoder the engine does not use.
fn vae_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(vae::LEGACY_ALIASES)
        .ignoring(vae::IGNORED_PREFIXES)
}

/// Everything a pipeline needs besides its weights: configs, tokenizer and scheduler settings.
struct ModelSpec {
    clip: ClipConfig,
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
        let unet_path = layout.unet.join("config.json");
        let unet: UNetConfig = read_json(&unet_path)?;
        unet.plan(&unet_path)?;
        let vae_path = layout.vae.join("config.json");
        let vae: VaeConfig = read_json(&vae_path)?;
        vae.validate(&vae_path)?;
        let scheduler_path = layout.scheduler.join("scheduler_config.json");
        let scheduler_config: Map<String, Value> = read_json(&scheduler_path)?;
        let default_scheduler = default_scheduler(&scheduler_config, &scheduler_path)?;
        Ok(ModelSpec {
            clip,
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

    /// stable-diffusion-v1-5's configs, tokenizer and scheduler, built in.
    fn sd15() -> Self {
        let here = PathBuf::from("<built-in SD1.5 config>");
        let scheduler_config: Map<String, Value> =
            serde_json::from_str(SD15_SCHEDULER).expect("built-in JSON");
        ModelSpec {
            clip: ClipConfig::sd15(),
            unet: UNetConfig::sd15(),
            unet_path: here.clone(),
            vae: VaeConfig::sd15(),
            vae_path: here.clone(),
            tokenizer: Tokenizer::builtin_sd15(),
            default_scheduler: default_scheduler(&scheduler_config, &here)
                .expect("built-in scheduler config"),
            scheduler_config,
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
        let _: Map<String, Value> = read_json(&index)?;
        let sub = |name: &str| -> Result<PathBuf> {
            let p = folder.join(name);
            if p.is_dir() {
                Ok(p)
            } else {
                Err(problem(format!("has no {name}/ folder")))
            }
        };
        Ok(ModelLayout {
            tokenizer: sub("tokenizer")?,
            text_encoder: sub("text_encoder")?,
            unet: sub("unet")?,
            vae: sub("vae")?,
            scheduler: sub("scheduler")?,
        })
    }
}

fn load_component<T>(
    source: &mut dyn WeightSource,
    device: &burn::tensor::Device<B>,
    precision: Precision,
    build: impl FnOnce(&mut Loader<B>) -> Result<T>,
) -> Result<T> {
    let mut loader = Loader::new(source, device, precision);
    let model = build(&mut loader)?;
    loader.finish()?;
    Ok(model)
}

fn device_sync(device: &SelectedDevice) -> Result<()> {
    device.sync()
}

pub(crate) fn tensor_to_vec<const D: usize>(t: Tensor<B, D>) -> Result<Vec<f32>> {
    t.into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| DiffusionError::Backend {
            backend: "readback".into(),
            message: format!("{e:?}"),
        })
}

/// Runs backend work, turning a backend panic (out of memory, a driver error) into an error.
fn guard<T>(backend: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown failure".into());
            Err(DiffusionError::Backend {
                backend: backend.into(),
                message: explain_backend_failure(&message),
            })
        }
    }
}

fn explain_backend_failure(message: &str) -> String {
    let lower = message.to_lowercase();
    if lower.contains("out of memory") || lower.contains("outofmemory") || lower.contains("oom") {
        format!("out of device memory ({message}); try a smaller size, --precision f16, or --backend cpu")
    } else {
        message.to_string()
    }
}
