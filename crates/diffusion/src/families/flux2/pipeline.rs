//! `Flux2KleinPipeline`: encode the prompt (Qwen3, hidden states 9/18/27 per token), prepare
//! packed noise and the token positions, run the flow-matching Euler loop on the transformer
//! (classifier-free guidance only for models that are not step-distilled), then un-normalise,
//! unpatchify and decode the latents. Reference pictures (`crate::reference_pictures`) are encoded once and
//! ride along as extra tokens in every transformer call.

use std::path::Path;
use std::sync::MutexGuard;
use std::time::Instant;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn::DispatchDevice;
use serde_json::{Map, Value};

use super::bfl_names;
use super::latents::{self, LatentNorm};
use super::spec::Spec;
use super::transformer::{Flux2Transformer, Position, Rope, IGNORED_PREFIXES};
use super::{HIDDEN_STATE_LAYERS, PROMPT_TOKENS};
use crate::device::{self, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::image::{preprocess, RgbImage};
use crate::models::config::VaeConfig;
use crate::models::qwen3::prompt::QwenPrompt;
use crate::models::qwen3::{Qwen3TextEncoder, Qwen3Weights};
use crate::models::vae::{self, VaeDecoder, VaeEncoder};
use crate::pipeline::backend_failure::guard;
use crate::pipeline::decode::{decoded_image, DecodePlan};
use crate::pipeline::memory_need::FitContext;
use crate::pipeline::offload::{Offloadable, Slot};
use crate::pipeline::stages::{self, classifier_free, GenerationSteps, Prepared};
use crate::pipeline::three_parts::{Assembly, PartNames, ThreePartModel};
use crate::pipeline::{
    check_request, load_component, load_denoiser, tensor_to_vec, CancelToken, Family,
    FamilyPipeline, GenerateRequest, Generated, GeneratedImage, Held, LoadOptions, ModelInfo,
    ParameterCounts, Placement, Preset, Progress, StepSync, TimedCall, B,
};
use crate::reference_pictures;
use crate::scheduler::flow_match::{FlowMatchConfig, FlowSchedule};
use crate::scheduler::SchedulerKind;

pub struct Flux2Pipeline {
    pub device: SelectedDevice,
    cpu: DispatchDevice,
    prompt: Option<QwenPrompt>,
    text_encoder: Qwen3TextEncoder<B>,
    transformer: Offloadable<Flux2Transformer<B>>,
    /// The transformer's input and conditioning widths (read without locking it).
    pub(super) in_channels: usize,
    pub(super) context_dim: usize,
    vae: VaeDecoder<B>,
    /// Loaded with `LoadOptions::vae_encoder`: reference pictures need it.
    vae_encoder: Option<VaeEncoder<B>>,
    latent_norm: LatentNorm<B>,
    scheduler: FlowMatchConfig,
    /// Step-distilled (klein 4B): one transformer call per step, guidance ignored.
    is_distilled: bool,
    pub info: ModelInfo,
    fit: FitContext,
}

impl ThreePartModel for Flux2Pipeline {
    const FAMILY: Family = Family::FLUX2_KLEIN;
    type Spec = Spec;
    type Prompt = QwenPrompt;

    fn read_spec(folder: &Path, index: &Map<String, Value>) -> Result<Spec> {
        let spec = Spec::read(folder, index)?;
        spec.validate()?;
        Ok(spec)
    }

    fn built_in_spec() -> Spec {
        Spec::klein_4b()
    }

    fn vae(spec: &Spec) -> &VaeConfig {
        &spec.vae
    }

    /// The layers after the hidden states it stacks, the final norm, the head.
    fn text_unused(spec: &Spec) -> Vec<String> {
        Qwen3TextEncoder::<B>::unused_prefixes(&spec.text_encoder, spec.text_layers())
    }

    fn part_names<'a>(spec: &Spec, text_unused: &'a [String]) -> PartNames<'a> {
        PartNames {
            text_encoder: Qwen3Weights::CausalLm.file_names(),
            text_unused,
            denoiser: &bfl_names::NAMES,
            denoiser_unused: IGNORED_PREFIXES,
            vae_blocks: spec.vae.block_out_channels.len(),
            vae_encoder: vae::ENCODER_PREFIXES,
            // The latent batch norm's statistics.
            vae_uncounted: &["bn."],
        }
    }

    fn vae_unused(options: &LoadOptions) -> Vec<&'static str> {
        let mut unused = vec!["bn.num_batches_tracked"];
        if !options.vae_encoder {
            unused.extend(vae::ENCODER_PREFIXES);
        }
        unused
    }

    fn denoiser_full_precision_params(spec: &Spec) -> u64 {
        spec.transformer.full_precision_parameters()
    }

    fn load_prompt(spec: &Spec) -> Result<QwenPrompt> {
        QwenPrompt::load(spec.tokenizer.as_deref().expect("a folder has a tokenizer"))
    }

    fn assemble(parts: Assembly<'_, Spec, QwenPrompt>) -> Result<Self> {
        let Assembly {
            spec,
            size,
            sources: [te, tr, va],
            prompt,
            device,
            placement,
            options,
            source,
            weight_files,
        } = parts;
        let fit = FitContext {
            one_call_per_step: spec.is_distilled,
            ..FitContext::new(size, spec.vae.clone(), options)
        };
        fit.check_planned(&placement, &device)?;
        if let Some(prompt) = &prompt {
            prompt.check_fits(&spec.text_encoder, &spec.text_encoder_path)?;
        }
        let dev = device.device.clone();
        let cpu = device::cpu_device();
        let on = |on_cpu: bool| if on_cpu { cpu.clone() } else { dev.clone() };
        let text_encoder = load_component(
            te,
            &on(placement.text_encoders_on_cpu),
            placement.text_encoders,
            |l| {
                Qwen3TextEncoder::load(
                    &spec.text_encoder,
                    spec.text_layers(),
                    &spec.text_encoder_path,
                    l,
                )
            },
        )?;
        let transformer = load_denoiser(tr, &device, &placement, &options, |l| {
            Flux2Transformer::load(&spec.transformer, &spec.transformer_path, l)
        })?;
        let channels = 4 * spec.vae.latent_channels;
        let (vae, vae_encoder, latent_norm) =
            load_component(va, &on(placement.vae_on_cpu), placement.vae, |l| {
                let decoder = VaeDecoder::load(&spec.vae, &spec.vae_path, l)?;
                let encoder = match options.vae_encoder {
                    true => Some(VaeEncoder::load(&spec.vae, &spec.vae_path, l)?),
                    false => None,
                };
                let norm = LatentNorm::load(l, channels, spec.vae_extras.batch_norm_eps)?;
                Ok((decoder, encoder, norm))
            })?;
        let pipeline = Flux2Pipeline {
            info: ModelInfo {
                source,
                weight_files,
                default_scheduler: SchedulerKind::FlowMatchEuler,
                vae_scale_factor: vae.scale_factor(),
                latent_channels: vae.latent_channels(),
                family: Family::FLUX2_KLEIN,
                preset: spec.is_klein_4b().then_some(Preset::FLUX2_KLEIN_4B),
                placement,
            },
            device,
            cpu,
            prompt,
            text_encoder,
            in_channels: transformer.in_channels(),
            context_dim: transformer.context_dim(),
            transformer: Offloadable::new(transformer),
            vae,
            vae_encoder,
            latent_norm,
            scheduler: spec.scheduler,
            is_distilled: spec.is_distilled,
            fit,
        };
        pipeline.device.sync()?;
        Ok(pipeline)
    }
}

impl Flux2Pipeline {
    /// Image pixels per patched latent token side: the VAE's scale (8 for FLUX.2's VAE) times
    /// the 2x2 patches.
    fn pixels_per_token(&self) -> usize {
        2 * self.info.vae_scale_factor
    }

    /// [batch, 4 x latent channels, H/16, W/16] (FLUX.2's VAE): the noise `InitialNoise::Latents`
    /// gives.
    pub fn latent_shape(&self, request: &GenerateRequest) -> [usize; 4] {
        let p = self.pixels_per_token();
        let (h, w) = (request.height / p, request.width / p);
        [request.batch, self.in_channels, h, w]
    }

    /// The device the text encoders run on.
    fn text_device(&self) -> &DispatchDevice {
        self.info
            .placement
            .text_device(&self.device.device, &self.cpu)
    }

    /// The device the VAE runs on.
    pub(super) fn vae_device(&self) -> &DispatchDevice {
        self.info
            .placement
            .vae_device(&self.device.device, &self.cpu)
    }

    /// The prompt's conditioning [1, 512, 3 x hidden] on the transformer's device, in its dtype.
    /// Synthetic weights come without a tokenizer: the prompt's bytes stand in for token ids.
    pub fn encode_prompt(&self, prompt: &str) -> Result<Tensor<B, 3>> {
        let (ids, real) = match &self.prompt {
            Some(p) => {
                let tokens = p.encode(prompt, PROMPT_TOKENS)?;
                (tokens.ids, tokens.real)
            }
            None => {
                let text = crate::models::qwen3::prompt::chat_text(prompt, false);
                let mut ids: Vec<u32> = text.bytes().map(u32::from).take(PROMPT_TOKENS).collect();
                let real = ids.len();
                ids.resize(PROMPT_TOKENS, 0);
                (ids, real)
            }
        };
        let embeds = self.text_encoder.stacked_hidden_states(
            &ids,
            real,
            &HIDDEN_STATE_LAYERS,
            self.text_device(),
        )?;
        Ok(embeds
            .to_device(&self.device.device)
            .cast(self.info.placement.denoiser.dtype()))
    }

    /// One transformer call on packed latents [N, S, C] at sigma-scale `timestep` (component
    /// access for parity tests and timing).
    pub fn run_transformer(
        &self,
        latents: Tensor<B, 3>,
        context: Tensor<B, 3>,
        timestep: f32,
        grid: (usize, usize),
    ) -> Tensor<B, 3> {
        let positions = self.positions(context.dims()[1], grid);
        let dtype = self.info.placement.denoiser.dtype();
        let slot = self.transformer.on_device(&self.device);
        let rope = slot.module.rope(&positions, dtype, &self.device.device);
        slot.module
            .forward(latents.cast(dtype), context.cast(dtype), timestep, &rope)
    }

    fn positions(&self, text: usize, (h, w): (usize, usize)) -> Vec<Position> {
        let mut positions = latents::text_positions(text);
        positions.extend(latents::image_positions(h, w));
        positions
    }

    /// A reference picture's tokens [1, h*w, 4 x latent channels] (f32, on the transformer's
    /// device) and their grid: prepared (`reference_pictures::prepare`), encoded to its latents' mean,
    /// patched and normalised.
    fn reference_tokens(&self, image: &RgbImage) -> Result<(Tensor<B, 3>, (usize, usize))> {
        let encoder = self.vae_encoder.as_ref().ok_or_else(|| {
            DiffusionError::Request(
                "reference pictures need the VAE encoder: load the pipeline with LoadOptions { vae_encoder: true }".into(),
            )
        })?;
        let image = reference_pictures::prepare(image, self.pixels_per_token())?;
        let pixels = Tensor::<B, 4>::from_data(
            TensorData::new(preprocess(&image), [1, 3, image.height, image.width]),
            (self.vae_device(), DType::F32),
        );
        let plan = DecodePlan::of(&self.vae, &self.info.placement, &self.device);
        let mean = match plan.tiles {
            Some(tiles) => encoder.encode_tiled(pixels, tiles),
            None => encoder.encode(pixels),
        };
        let patched = self.latent_norm.patchify_normalize(mean);
        let [_, _, h, w] = patched.dims();
        Ok((
            latents::pack(patched).to_device(&self.device.device),
            (h, w),
        ))
    }

    /// Component access for parity tests: a reference picture's tokens [h*w, 4 x latent
    /// channels] as f32 values, and their grid (h, w).
    pub fn run_reference_tokens(&self, image: &RgbImage) -> Result<(Vec<f32>, (usize, usize))> {
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || {
                let (tokens, grid) = self.reference_tokens(image)?;
                Ok((tensor_to_vec(tokens)?, grid))
            },
        )
    }

    /// The VAE decode of unpatched latents [1, C, h, w] -> image [1, 3, H, W] in about [-1, 1].
    pub fn decode(&self, z: Tensor<B, 4>) -> Tensor<B, 4> {
        DecodePlan::of(&self.vae, &self.info.placement, &self.device)
            .decode(&self.vae, z.to_device(self.vae_device()))
    }

    fn guided(&self, request: &GenerateRequest) -> bool {
        !self.is_distilled && (super::FAMILY.guided)(request.guidance_scale)
    }
}

impl FamilyPipeline for Flux2Pipeline {
    fn held(&self) -> Held<'_> {
        Held {
            info: &self.info,
            device: &self.device,
            fit: &self.fit,
            vae: &self.vae,
        }
    }

    fn validate(&self, request: &GenerateRequest) -> Result<()> {
        check_request(
            request,
            self.pixels_per_token(),
            &self.latent_shape(request),
        )?;
        super::FAMILY.check_request(request)?;
        if !request.reference_images.is_empty() && self.vae_encoder.is_none() {
            return Err(DiffusionError::Request(
                "reference pictures need the VAE encoder: load the pipeline with LoadOptions { vae_encoder: true }".into(),
            ));
        }
        self.check_fits(&request.shape(&super::FAMILY))
    }

    fn generate_with_sync(
        &self,
        request: &GenerateRequest,
        sync: StepSync,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        self.validate(request)?;
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || stages::generate(&Flux2Run(self), request, sync, progress, cancel),
        )
    }

    fn ignores_guidance(&self) -> bool {
        self.is_distilled
    }

    fn parameter_counts(&self) -> ParameterCounts {
        ParameterCounts {
            text_encoders: self.text_encoder.num_params(),
            denoiser: self.transformer.lock().module.num_params(),
            vae: self.vae.num_params(),
            vae_encoder: self.vae_encoder.as_ref().map_or(0, |e| e.num_params()),
        }
    }

    fn denoiser_weight_bytes(&self) -> u64 {
        crate::nn::weight_bytes(&self.transformer.lock().module)
    }

    fn has_vae_encoder(&self) -> bool {
        self.vae_encoder.is_some()
    }

    fn timed_calls(&self, width: usize, height: usize) -> Result<Vec<TimedCall<'_>>> {
        self.timing_calls(width, height)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// One FLUX.2 klein generation's steps for the stage driver.
struct Flux2Run<'a>(&'a Flux2Pipeline);

/// The prompt's context and, where guided, the empty negative prompt's, a row per image.
struct Flux2Prompt {
    context: Tensor<B, 3>,
    negative: Option<Tensor<B, 3>>,
}

struct Flux2Latents {
    /// Packed [batch, h*w, channels] (f32).
    latents: Tensor<B, 3>,
    /// The reference pictures' tokens, joined to the image's in every call, unchanged by the
    /// steps (only the image's tokens are read back).
    references: Option<Tensor<B, 3>>,
    rope: Rope<B>,
    schedule: FlowSchedule,
    /// The latent grid (h, w) in tokens.
    grid: (usize, usize),
}

impl GenerationSteps for Flux2Run<'_> {
    type Prompt = Flux2Prompt;
    type Latents = Flux2Latents;
    type Denoiser<'a>
        = MutexGuard<'a, Slot<Flux2Transformer<B>>>
    where
        Self: 'a;

    fn device(&self) -> &SelectedDevice {
        &self.0.device
    }

    fn placement(&self) -> &Placement {
        &self.0.info.placement
    }

    fn encode_prompt(&self, request: &GenerateRequest) -> Result<Flux2Prompt> {
        let repeat = |t: Tensor<B, 3>| t.repeat_dim(0, request.batch);
        let context = repeat(self.0.encode_prompt(&request.prompt)?);
        let negative = match self.0.guided(request) {
            true => Some(repeat(self.0.encode_prompt("")?)),
            false => None,
        };
        Ok(Flux2Prompt { context, negative })
    }

    fn prepare_latents(
        &self,
        request: &GenerateRequest,
        _: &Flux2Prompt,
    ) -> Result<Prepared<Flux2Latents>> {
        let pipe = self.0;
        let dev = &pipe.device.device;
        let shape = pipe.latent_shape(request);
        let (noise, _) = request.noise.latents(shape, dev);
        let (gh, gw) = (shape[2], shape[3]);
        let mut positions = pipe.positions(PROMPT_TOKENS, (gh, gw));
        let dtype = pipe.info.placement.denoiser.dtype();
        let encode_start = Instant::now();
        let mut pictures = Vec::with_capacity(request.reference_images.len());
        for (i, image) in request.reference_images.iter().enumerate() {
            let (tokens, (h, w)) = pipe.reference_tokens(image)?;
            positions.extend(latents::reference_positions(i, h, w));
            pictures.push(tokens.cast(dtype).repeat_dim(0, request.batch));
        }
        // All pictures' tokens in one tensor, joined to the image's at each step.
        let references = (!pictures.is_empty()).then(|| Tensor::cat(pictures, 1));
        let mut encode_seconds = 0.0;
        if references.is_some() {
            pipe.device.sync()?;
            encode_seconds = encode_start.elapsed().as_secs_f64();
        }
        // The rotary tables depend on the transformer's config only, not on its weights' place.
        let rope = pipe.transformer.lock().module.rope(&positions, dtype, dev);
        let schedule = pipe
            .scheduler
            .schedule(request.steps, super::empirical_mu(gh * gw, request.steps));
        Ok(Prepared {
            latents: Flux2Latents {
                latents: latents::pack(noise),
                references,
                rope,
                schedule,
                grid: (gh, gw),
            },
            steps: request.steps,
            encode_seconds,
            scheduler: SchedulerKind::FlowMatchEuler,
        })
    }

    fn denoiser(&self) -> MutexGuard<'_, Slot<Flux2Transformer<B>>> {
        self.0.transformer.on_device(&self.0.device)
    }

    fn denoise_step(
        &self,
        transformer: &MutexGuard<'_, Slot<Flux2Transformer<B>>>,
        request: &GenerateRequest,
        prompt: &Flux2Prompt,
        state: &mut Flux2Latents,
        i: usize,
    ) -> Result<()> {
        let transformer = &transformer.module;
        let t = state.schedule.model_timestep(i);
        let mut input = state
            .latents
            .clone()
            .cast(self.placement().denoiser.dtype());
        if let Some(references) = &state.references {
            input = Tensor::cat(vec![input, references.clone()], 1);
        }
        let image_tokens = state.grid.0 * state.grid.1;
        let image_part = |out: Tensor<B, 3>| out.narrow(1, 0, image_tokens).cast(DType::F32);
        let forward = |input, context: &Tensor<B, 3>| {
            image_part(transformer.forward(input, context.clone(), t, &state.rope))
        };
        let mut velocity = forward(input.clone(), &prompt.context);
        if let Some(negative) = &prompt.negative {
            let uncond = forward(input, negative);
            let scale = request.guidance_scale;
            velocity = classifier_free(uncond, velocity, scale);
        }
        state.latents = state.latents.clone() + velocity * state.schedule.step_size(i);
        Ok(())
    }

    fn offload_denoiser(&self) {
        self.0.transformer.offload(&self.0.device, &self.0.cpu);
    }

    fn decode(&self, state: &Flux2Latents, n: usize) -> Result<GeneratedImage> {
        let pipe = self.0;
        let (gh, gw) = state.grid;
        let one = latents::unpack(state.latents.clone().narrow(0, n, 1), gh, gw);
        let z = pipe
            .latent_norm
            .denormalize_unpatchify(one.to_device(pipe.vae_device()));
        decoded_image(pipe.decode(z))
    }
}
