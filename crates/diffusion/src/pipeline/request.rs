//! A generation request as every family takes it, and the checks every family makes of it.

use burn::tensor::{DType, Tensor, TensorData};

use crate::error::{DiffusionError, Result};
use crate::io::image::RgbImage;
use crate::pipeline::limits;
use crate::scheduler::SchedulerKind;

use super::family::FamilyDescriptor;
use super::memory_need::RequestShape;
use super::B;
use crate::noise::NormalGenerator;

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

impl InitialNoise {
    /// The initial latents of `shape` in f32 on `device` (drawn, or as given: `check_request`
    /// compared their shape), and the generator that continues the draws (ancestral samplers'
    /// step noise).
    pub(crate) fn latents(
        &self,
        shape: [usize; 4],
        device: &burn::tensor::Device<B>,
    ) -> (Tensor<B, 4>, NormalGenerator) {
        let (values, generator) = match self {
            InitialNoise::Seed(seed) => {
                let mut generator = NormalGenerator::new(*seed);
                (generator.normals(shape.iter().product()), generator)
            }
            InitialNoise::Latents {
                data, step_seed, ..
            } => (data.clone(), NormalGenerator::new(*step_seed)),
        };
        let latents = Tensor::from_data(TensorData::new(values, shape), (device, DType::F32));
        (latents, generator)
    }
}

/// How classifier-free guidance is shaped beyond its scale (diffusers' `ZImagePipeline` and
/// `StableDiffusion3Pipeline` options; a family that has none refuses them). The defaults change
/// nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GuidanceOptions {
    /// `cfg_truncation`: steps whose `(1000 - t) / 1000` is above this run unguided.
    pub truncation: Option<f64>,
    /// `cfg_normalization`: the guided prediction's norm is capped at this many times the
    /// positive prediction's, per image.
    pub normalization: Option<f64>,
    /// Skip-layer guidance (SD3.5's `skip_guidance_layers`).
    pub skip_layers: Option<SkipLayerGuidance>,
    /// True classifier-free guidance beside a guidance scale the model reads as an input
    /// (diffusers' `true_cfg_scale`): above 1, each step adds a pass on the negative prompt (the
    /// empty one unless given) and combines them as `uncond + s (cond - uncond)`.
    pub true_cfg: Option<f64>,
}

impl GuidanceOptions {
    pub fn is_default(&self) -> bool {
        *self == GuidanceOptions::default()
    }

    /// Whether truncation or normalization is asked for.
    pub fn shapes_the_scale(&self) -> bool {
        self.truncation.is_some() || self.normalization.is_some()
    }
}

/// diffusers' skip-layer guidance: on guided steps `i` with `start x steps < i < stop x steps`, a
/// third denoiser pass on the prompt skips `layers`, and the prediction moves by `scale` times the
/// prompt's prediction less that pass's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SkipLayerGuidance {
    /// The denoiser blocks skipped, as a set of indices below 64 (bit `k`: block `k`).
    pub layers: u64,
    pub scale: f64,
    pub start: f64,
    pub stop: f64,
}

impl SkipLayerGuidance {
    /// The largest block index `layers` can hold.
    pub const MAX_LAYER: usize = 63;

    /// diffusers' defaults (scale 2.8 from 1% to 20% of the steps) over `layers`; `None` when a
    /// layer is past `MAX_LAYER`.
    pub fn new(layers: &[usize]) -> Option<Self> {
        let mut set = 0u64;
        for &layer in layers {
            set |= 1u64.checked_shl(u32::try_from(layer).ok()?)?;
        }
        Some(SkipLayerGuidance {
            layers: set,
            scale: 2.8,
            start: 0.01,
            stop: 0.2,
        })
    }

    /// The skipped blocks, in order.
    pub fn layer_list(&self) -> Vec<usize> {
        (0..=Self::MAX_LAYER)
            .filter(|k| self.layers >> k & 1 == 1)
            .collect()
    }

    /// Whether step `i` of `steps` adds the skip-layer term (diffusers' strict bounds).
    pub fn applies(&self, i: usize, steps: usize) -> bool {
        let (i, steps) = (i as f64, steps as f64);
        i > steps * self.start && i < steps * self.stop
    }
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
    /// Images per prompt, made in one denoiser call per step (two with guidance: diffusers'
    /// `num_images_per_prompt`).
    pub batch: usize,
    /// `Some`: image-to-image from this picture.
    pub init_image: Option<InitImage>,
    /// Pictures the image is conditioned on, as given (FLUX.2 klein's `image=`; its pipeline
    /// prepares them). Empty: none.
    pub reference_images: Vec<RgbImage>,
    pub guidance_options: GuidanceOptions,
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
            reference_images: Vec::new(),
            guidance_options: GuidanceOptions::default(),
        }
    }

    /// Whether true classifier-free guidance runs (`GuidanceOptions::true_cfg` above 1): a
    /// second denoiser pass a step, on the negative prompt.
    pub fn runs_true_cfg(&self) -> bool {
        self.guidance_options.true_cfg.is_some_and(|s| s > 1.0)
    }

    /// What the memory estimate needs of this request to a model of `family`
    /// (`LoadOptions::planned` for a load that will serve it).
    pub fn shape(&self, family: &FamilyDescriptor) -> RequestShape {
        RequestShape {
            width: self.width,
            height: self.height,
            batch: self.batch,
            guided: (family.guided)(self.guidance_scale) || self.runs_true_cfg(),
            image_to_image: self.init_image.is_some() || !self.reference_images.is_empty(),
            reference_pixels: self.reference_images.iter().map(reference_pixels).sum(),
        }
    }
}

/// The pixels a reference picture reaches the model with (at most about 1024x1024: larger
/// pictures are resized), for the memory estimate.
fn reference_pixels(image: &RgbImage) -> usize {
    let (w, h) = crate::reference_pictures::area_limited_size(image.width, image.height);
    w * h
}

/// The checks every family makes of a request: image sides (a multiple of `multiple` pixels),
/// steps, batch, a finite guidance scale, and given latents of `latent_shape` with finite values.
pub(crate) fn check_request(
    request: &GenerateRequest,
    multiple: usize,
    latent_shape: &[usize],
) -> Result<()> {
    for (name, side) in [("width", request.width), ("height", request.height)] {
        if let Some(problem) = limits::side_error(name, side) {
            return Err(DiffusionError::Request(problem));
        }
        if side % multiple != 0 {
            return Err(DiffusionError::Request(format!(
                "{name} must be a multiple of {multiple} for this model (got {side})"
            )));
        }
    }
    let problem = limits::steps_error(request.steps)
        .or_else(|| limits::batch_error(request.batch))
        .or_else(|| limits::guidance_error(request.guidance_scale));
    if let Some(problem) = problem {
        return Err(DiffusionError::Request(problem));
    }
    if let InitialNoise::Latents { shape, data, .. } = &request.noise {
        if shape.as_slice() != latent_shape {
            return Err(DiffusionError::Request(format!(
                "latents have shape {shape:?} but {}x{} needs {latent_shape:?}",
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
