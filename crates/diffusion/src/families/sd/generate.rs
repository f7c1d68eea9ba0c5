//! Stable Diffusion's generation: diffusers' `StableDiffusionPipeline.__call__` (SD1.x, SD2.x) and
//! `StableDiffusionXLPipeline.__call__` (SDXL), or their image-to-image pipelines when the request
//! starts from a picture: conditioning, initial latents, the guided UNet loop, decoding; and the
//! component access parity tests and timing use.

use std::cell::Cell;
use std::sync::MutexGuard;
use std::time::Instant;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn::DispatchDevice;

use super::pipeline::SdPipeline;
use crate::device::SelectedDevice;
use crate::error::{DiffusionError, Result};
use crate::families::sd::unet::UNet;
use crate::families::sd::unet::{Conditioning, TextTime};
use crate::io::image::{preprocess, RgbImage};
use crate::noise::NormalGenerator;
use crate::pipeline::backend_failure::guard;
use crate::pipeline::decode::{decoded_image, DecodePlan};
use crate::pipeline::offload::Slot;
use crate::pipeline::stages::{self, classifier_free, GenerationSteps, Prepared};
use crate::pipeline::{
    img2img_start, tensor_to_vec, CancelToken, FamilyPipeline, GenerateRequest, Generated,
    GeneratedImage, Placement, Progress, StepSync, B,
};
use crate::scheduler::{self, SchedulerKind};

impl SdPipeline {
    /// Runs one generation through the stage driver, waiting for the device where `sync` says.
    pub(super) fn generate(
        &self,
        request: &GenerateRequest,
        sync: StepSync,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        self.validate(request)?;
        let kind = request.scheduler.unwrap_or(self.info.default_scheduler);
        // Built before any device work so a bad scheduler config fails early.
        let scheduler = scheduler::build::<B>(
            kind,
            &self.scheduler_config,
            request.steps,
            &self.scheduler_path,
        )?;
        let run = SdRun {
            pipe: self,
            kind,
            scheduler: Cell::new(Some(scheduler)),
        };
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || stages::generate(&run, request, sync, progress, cancel),
        )
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
        let mean = match self.decode_plan().tiles {
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
    fn conditioning(&self, request: &GenerateRequest, guided: bool) -> Result<Conditioning<B>> {
        let zero_negative = guided
            && self.second.is_some()
            && self.force_zeros_for_empty_prompt
            && request.negative_prompt.is_empty();
        let (context, pooled) = if guided && !zero_negative {
            self.encode_texts(&[&request.negative_prompt, &request.prompt])?
        } else {
            self.encode_texts(&[&request.prompt])?
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
        Ok(Conditioning {
            context: context.cast(self.info.placement.denoiser.dtype()),
            text_time: pooled.map(|text_embeds| TextTime {
                text_embeds,
                time_ids: vec![[h, w, 0.0, 0.0, h, w]; rows],
            }),
        })
    }

    /// Text embeddings [N, S, D] of each text and, for SDXL, the pooled embeddings [N, P]: SD1.x
    /// and SD2.x take the last hidden state; SDXL both encoders' penultimate hidden states side by
    /// side and the second one's projected pooled output.
    fn encode_texts(&self, texts: &[&str]) -> Result<(Tensor<B, 3>, Option<Tensor<B, 2>>)> {
        let ids: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.tokenizer.encode(t))
            .collect::<Result<_>>()?;
        let first = self.text_encoder.forward(self.ids_tensor(&ids));
        let (context, pooled) = match &self.second {
            None => (first.last_hidden_state, None),
            Some((tokenizer, encoder)) => {
                let ids: Vec<Vec<u32>> = texts
                    .iter()
                    .map(|t| tokenizer.encode(t))
                    .collect::<Result<_>>()?;
                let eos: Vec<usize> = ids.iter().map(|row| tokenizer.eos_position(row)).collect();
                let second = encoder.forward(self.ids_tensor(&ids));
                let pooled = encoder.pooled(second.last_hidden_state, &eos);
                let context = Tensor::cat(vec![first.penultimate, second.penultimate], 2);
                (context, Some(pooled))
            }
        };
        // To the UNet's device (nothing moves when the encoders run there too).
        let dev = &self.device.device;
        Ok((context.to_device(dev), pooled.map(|p| p.to_device(dev))))
    }

    /// The device the text encoders run on.
    fn text_device(&self) -> &DispatchDevice {
        self.info
            .placement
            .text_device(&self.device.device, &self.cpu)
    }

    /// The device the VAE runs on.
    fn vae_device(&self) -> &DispatchDevice {
        self.info
            .placement
            .vae_device(&self.device.device, &self.cpu)
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
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || {
                let (context, pooled) = self.encode_texts(&[prompt])?;
                let pooled = match pooled {
                    Some(p) => Some(tensor_to_vec(p.cast(DType::F32))?),
                    None => None,
                };
                Ok((tensor_to_vec(context.cast(DType::F32))?, pooled))
            },
        )
    }

    /// Component access for parity tests and tools: text encoder output for token ids, as f32.
    pub fn run_text_encoder(&self, ids: &[Vec<u32>]) -> Result<Vec<f32>> {
        let vocab = self.text_encoder.vocab_size() as u32;
        if let Some(bad) = ids.iter().flatten().find(|&&id| id >= vocab) {
            return Err(DiffusionError::Request(format!(
                "token id {bad} is outside the vocabulary ({vocab})"
            )));
        }
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || tensor_to_vec(self.encode_ids(ids).cast(DType::F32)),
        )
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
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || {
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
                let unet = self.unet.on_device(&self.device);
                tensor_to_vec(unet.module.forward(x, timestep, &cond)?.cast(DType::F32))
            },
        )
    }

    /// One VAE encode of a picture: the latent distribution's mean [1, C, H/f, W/f] (no scaling).
    pub fn run_vae_encode(&self, image: &RgbImage) -> Result<Vec<f32>> {
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || {
                let scaled = self.encode_image(image)?;
                tensor_to_vec(scaled / self.vae.scaling_factor())
            },
        )
    }

    /// One VAE decode of raw latents (no scaling), returning [N, 3, H, W] in about [-1, 1].
    pub fn run_vae_decode(&self, latents: &[f32], shape: [usize; 4]) -> Result<Vec<f32>> {
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || {
                let z = Tensor::<B, 4>::from_data(
                    TensorData::new(latents.to_vec(), shape),
                    (self.vae_device(), DType::F32),
                );
                tensor_to_vec(self.decode_latents(z).cast(DType::F32))
            },
        )
    }

    /// The decode stage's tiles and buffer limit for this placement.
    pub(super) fn decode_plan(&self) -> DecodePlan {
        DecodePlan::of(&self.vae, &self.info.placement, &self.device)
    }

    /// The VAE decode of unscaled latents, tiled when the placement says so, or when one of the
    /// decoder's tensors would be larger than the device's largest buffer.
    fn decode_latents(&self, z: Tensor<B, 4>) -> Tensor<B, 4> {
        self.decode_plan().decode(&self.vae, z)
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

/// One Stable Diffusion generation's steps for the stage driver. The scheduler moves into the
/// latents when they are prepared.
struct SdRun<'a> {
    pipe: &'a SdPipeline,
    kind: SchedulerKind,
    scheduler: Cell<Option<Box<dyn scheduler::Scheduler<B>>>>,
}

/// The UNet's conditioning: both guidance rows at once, or (sequential guidance) each half.
struct SdPrompt {
    cond: Conditioning<B>,
    halves: Option<(Conditioning<B>, Conditioning<B>)>,
    guided: bool,
}

struct SdLatents {
    /// Taken and put back each step: the scheduler consumes the latents it steps.
    current: Option<Tensor<B, 4>>,
    scheduler: Box<dyn scheduler::Scheduler<B>>,
    /// The ancestral schedulers' per-step noise.
    noise: NormalGenerator,
    /// The scheduler's index of the loop's first step: image-to-image starts part-way through.
    first: usize,
}

impl GenerationSteps for SdRun<'_> {
    type Prompt = SdPrompt;
    type Latents = SdLatents;
    type Denoiser<'a>
        = MutexGuard<'a, Slot<UNet<B>>>
    where
        Self: 'a;

    fn device(&self) -> &SelectedDevice {
        &self.pipe.device
    }

    fn placement(&self) -> &Placement {
        &self.pipe.info.placement
    }

    fn encode_prompt(&self, request: &GenerateRequest) -> Result<SdPrompt> {
        let guided = (super::FAMILY.guided)(request.guidance_scale);
        let cond = self.pipe.conditioning(request, guided)?;
        let halves =
            (guided && self.placement().sequential_cfg).then(|| cond.halves(request.batch));
        Ok(SdPrompt {
            cond,
            halves,
            guided,
        })
    }

    fn prepare_latents(
        &self,
        request: &GenerateRequest,
        _: &SdPrompt,
    ) -> Result<Prepared<SdLatents>> {
        let pipe = self.pipe;
        let scheduler = self.scheduler.take().ok_or_else(|| {
            DiffusionError::Request("a generation's scheduler serves one run".into())
        })?;
        let shape = pipe.latent_shape(request);
        let (initial, noise) = request.noise.latents(shape, &pipe.device.device);
        // Text-to-image starts from scaled noise at the first step; image-to-image from the
        // encoded picture noised to the level of its first step (diffusers' img2img
        // `prepare_latents`, with the latent distribution's mean).
        let (latents, first, encode_seconds) = match &request.init_image {
            None => (initial * scheduler.init_noise_sigma(), 0, 0.0),
            Some(init) => {
                let encode_start = Instant::now();
                let first = img2img_start(request.steps, init.strength)?;
                let encoded = pipe.encode_image(&init.image)?.repeat_dim(0, request.batch);
                let latents = scheduler.add_noise(encoded, initial, first);
                pipe.device.sync()?;
                (latents, first, encode_start.elapsed().as_secs_f64())
            }
        };
        Ok(Prepared {
            steps: scheduler.timesteps().len() - first,
            latents: SdLatents {
                current: Some(latents),
                scheduler,
                noise,
                first,
            },
            encode_seconds,
            scheduler: self.kind,
        })
    }

    fn denoiser(&self) -> MutexGuard<'_, Slot<UNet<B>>> {
        self.pipe.unet.on_device(&self.pipe.device)
    }

    fn denoise_step(
        &self,
        unet: &MutexGuard<'_, Slot<UNet<B>>>,
        request: &GenerateRequest,
        prompt: &SdPrompt,
        latents: &mut SdLatents,
        k: usize,
    ) -> Result<()> {
        let unet = &unet.module;
        let SdLatents {
            current,
            scheduler,
            noise,
            first,
        } = latents;
        let i = *first + k;
        let t = scheduler.timesteps()[i];
        let sample = current.take().ok_or_else(|| {
            DiffusionError::Request("the latents were lost by a failed step".into())
        })?;
        let scale = request.guidance_scale;
        let guided_out = match &prompt.halves {
            // The scaling is elementwise: scaling the batch once serves both halves.
            Some((uncond_cond, text_cond)) => {
                let input = scheduler.scale_model_input(sample.clone(), i);
                let uncond = unet
                    .forward(input.clone(), t, uncond_cond)?
                    .cast(DType::F32);
                let text = unet.forward(input, t, text_cond)?.cast(DType::F32);
                classifier_free(uncond, text, scale)
            }
            None if prompt.guided => {
                let input = Tensor::cat(vec![sample.clone(), sample.clone()], 0);
                let input = scheduler.scale_model_input(input, i);
                let out = unet.forward(input, t, &prompt.cond)?.cast(DType::F32);
                let [uncond, text]: [Tensor<B, 4>; 2] =
                    out.chunk(2, 0).try_into().expect("two halves");
                classifier_free(uncond, text, scale)
            }
            None => {
                let input = scheduler.scale_model_input(sample.clone(), i);
                unet.forward(input, t, &prompt.cond)?.cast(DType::F32)
            }
        };
        let dev = &self.pipe.device.device;
        let mut step_noise = |dims: [usize; 4]| {
            let n: usize = dims.iter().product();
            Tensor::<B, 4>::from_data(TensorData::new(noise.normals(n), dims), (dev, DType::F32))
        };
        *current = Some(scheduler.step(guided_out, i, sample, &mut step_noise));
        Ok(())
    }

    fn offload_denoiser(&self) {
        self.pipe.unet.offload(&self.pipe.device, &self.pipe.cpu);
    }

    fn decode(&self, latents: &SdLatents, n: usize) -> Result<GeneratedImage> {
        let pipe = self.pipe;
        let all = latents.current.as_ref().ok_or_else(|| {
            DiffusionError::Request("the latents were lost by a failed step".into())
        })?;
        let one = pipe.vae.unscale_latents(all.clone().narrow(0, n, 1));
        decoded_image(pipe.decode_latents(one.to_device(pipe.vae_device())))
    }
}
