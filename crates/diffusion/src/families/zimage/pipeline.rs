//! `ZImagePipeline`: encode the prompt (Qwen3's chat template with thinking on, the penultimate
//! hidden states of its real tokens), noise the latents, step the transformer with flow-matching
//! Euler (it sees `(1000 - t) / 1000` and predicts the velocity's negative; guidance above 0
//! combines it with the empty prompt's as `pos + g (pos - neg)`), then unscale, shift and decode.

use std::path::Path;
use std::sync::MutexGuard;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn::DispatchDevice;
use serde_json::{Map, Value};

use super::original_names;
use super::spec::Spec;
use super::transformer::{CallRope, ZImageTransformer};
use super::PROMPT_TOKENS;
use crate::device::{self, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::models::config::VaeConfig;
use crate::models::qwen3::prompt::{chat_text, QwenPrompt};
use crate::models::qwen3::Qwen3TextEncoder;
use crate::models::vae::{self, VaeDecoder};
use crate::noise::NormalGenerator;
use crate::pipeline::backend_failure::guard;
use crate::pipeline::decode::{decoded_image, DecodePlan};
use crate::pipeline::memory_need::FitContext;
use crate::pipeline::offload::{Offloadable, Slot};
use crate::pipeline::stages::{self, GenerationSteps, Prepared};
use crate::pipeline::three_parts::{Assembly, PartNames, ThreePartModel};
use crate::pipeline::{
    check_request, load_component, load_denoiser, tensor_to_vec, CancelToken, Family,
    FamilyPipeline, GenerateRequest, Generated, GeneratedImage, Held, LoadOptions, ModelInfo,
    ParameterCounts, Placement, Preset, Progress, StepSync, TimedCall, B,
};
use crate::scheduler::flow_match::{FlowMatchConfig, FlowSchedule};
use crate::scheduler::SchedulerKind;

pub struct ZImagePipeline {
    pub device: SelectedDevice,
    cpu: DispatchDevice,
    prompt: Option<QwenPrompt>,
    text_encoder: Qwen3TextEncoder<B>,
    text_layers: usize,
    transformer: Offloadable<ZImageTransformer<B>>,
    in_channels: usize,
    vae: VaeDecoder<B>,
    scheduler: FlowMatchConfig,
    pub info: ModelInfo,
    fit: FitContext,
}

impl ThreePartModel for ZImagePipeline {
    const FAMILY: Family = Family::ZIMAGE;
    type Spec = Spec;
    type Prompt = QwenPrompt;

    fn read_spec(folder: &Path, index: &Map<String, Value>) -> Result<Spec> {
        let spec = Spec::read(folder, index)?;
        spec.validate()?;
        Ok(spec)
    }

    fn built_in_spec() -> Spec {
        Spec::turbo()
    }

    fn vae(spec: &Spec) -> &VaeConfig {
        &spec.vae
    }

    /// Its last layer, the final norm.
    fn text_unused(spec: &Spec) -> Vec<String> {
        Qwen3TextEncoder::<B>::unused_prefixes_named(
            &spec.text_encoder,
            spec.text_layers(),
            spec.text_weights,
        )
    }

    fn part_names<'a>(spec: &Spec, text_unused: &'a [String]) -> PartNames<'a> {
        PartNames {
            text_encoder: spec.text_weights.file_names(),
            text_unused,
            denoiser: &original_names::NAMES,
            denoiser_unused: &[],
            vae_blocks: spec.vae.block_out_channels.len(),
            vae_encoder: vae::ENCODER_PREFIXES,
            vae_uncounted: &[],
        }
    }

    /// The pipeline runs from a prompt only: the VAE's encoder is never read.
    fn vae_unused(_options: &LoadOptions) -> Vec<&'static str> {
        vae::ENCODER_PREFIXES.to_vec()
    }

    fn denoiser_full_precision_params(_spec: &Spec) -> u64 {
        0
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
        let fit = FitContext::new(size, spec.vae.clone(), options);
        fit.check_planned(&placement, &device)?;
        if let Some(prompt) = &prompt {
            prompt.check_fits(&spec.text_encoder, &spec.text_encoder_path)?;
        }
        let dev = device.device.clone();
        let cpu = device::cpu_device();
        let on = |on_cpu: bool| if on_cpu { cpu.clone() } else { dev.clone() };
        let text_layers = spec.text_layers();
        let text_encoder = load_component(
            te,
            &on(placement.text_encoders_on_cpu),
            placement.text_encoders,
            |l| {
                Qwen3TextEncoder::load_named(
                    &spec.text_encoder,
                    text_layers,
                    spec.text_weights,
                    &spec.text_encoder_path,
                    l,
                )
            },
        )?;
        let transformer = load_denoiser(tr, &device, &placement, &options, |l| {
            ZImageTransformer::load(&spec.transformer, &spec.transformer_path, l)
        })?;
        let vae = load_component(va, &on(placement.vae_on_cpu), placement.vae, |l| {
            VaeDecoder::load(&spec.vae, &spec.vae_path, l)
        })?;
        let is_turbo = spec.transformer == Default::default()
            && spec.text_encoder == crate::models::qwen3::Qwen3Config::qwen3_4b()
            && spec.vae == super::spec::turbo_vae();
        let pipeline = ZImagePipeline {
            info: ModelInfo {
                source,
                weight_files,
                default_scheduler: SchedulerKind::FlowMatchEuler,
                vae_scale_factor: vae.scale_factor(),
                latent_channels: vae.latent_channels(),
                family: Family::ZIMAGE,
                preset: is_turbo.then_some(Preset::ZIMAGE_TURBO),
                placement,
            },
            device,
            cpu,
            prompt,
            text_encoder,
            text_layers,
            in_channels: transformer.in_channels(),
            transformer: Offloadable::new(transformer),
            vae,
            scheduler: spec.scheduler,
            fit,
        };
        pipeline.device.sync()?;
        Ok(pipeline)
    }
}

impl ZImagePipeline {
    /// Image pixels per patched latent token side: the VAE's scale times the 2x2 patches.
    fn pixels_per_token(&self) -> usize {
        2 * self.info.vae_scale_factor
    }

    /// [batch, latent channels, H/f, W/f]: the noise `InitialNoise::Latents` gives.
    pub fn latent_shape(&self, request: &GenerateRequest) -> [usize; 4] {
        let f = self.info.vae_scale_factor;
        [
            request.batch,
            self.in_channels,
            request.height / f,
            request.width / f,
        ]
    }

    fn text_device(&self) -> &DispatchDevice {
        self.info
            .placement
            .text_device(&self.device.device, &self.cpu)
    }

    fn vae_device(&self) -> &DispatchDevice {
        self.info
            .placement
            .vae_device(&self.device.device, &self.cpu)
    }

    /// The prompt's text states [1, L, hidden]: the penultimate hidden states of its real tokens
    /// (at most 512), on the transformer's device in its dtype. Synthetic weights come without a
    /// tokenizer: the templated prompt's bytes stand in for token ids.
    pub fn encode_prompt(&self, prompt: &str) -> Result<Tensor<B, 3>> {
        let (ids, real) = match &self.prompt {
            Some(p) => {
                let tokens = p.encode_chat(prompt, PROMPT_TOKENS, true)?;
                (tokens.ids, tokens.real)
            }
            None => {
                let text = chat_text(prompt, true);
                let ids: Vec<u32> = text.bytes().map(u32::from).take(PROMPT_TOKENS).collect();
                let real = ids.len();
                (ids, real)
            }
        };
        let states = self.text_encoder.stacked_hidden_states(
            &ids,
            real,
            &[self.text_layers],
            self.text_device(),
        )?;
        Ok(states
            .narrow(1, 0, real)
            .to_device(&self.device.device)
            .cast(self.info.placement.denoiser.dtype()))
    }

    /// One transformer call (component access for parity tests and timing): `latents`
    /// [N, C, h, w] with `caption` [N, L, hidden], at the pipeline's `(1000 - t) / 1000`.
    pub fn run_transformer(
        &self,
        latents: Tensor<B, 4>,
        caption: Tensor<B, 3>,
        t: f32,
    ) -> Tensor<B, 4> {
        let slot = self.transformer.on_device(&self.device);
        slot.module.forward(latents, caption, t)
    }

    /// The VAE decode of the denoiser's latents [1, C, h, w] (unscaled and shifted here) ->
    /// image [1, 3, H, W] in about [-1, 1].
    pub fn decode(&self, latents: Tensor<B, 4>) -> Tensor<B, 4> {
        let z = self
            .vae
            .unscale_latents(latents.to_device(self.vae_device()));
        DecodePlan::of(&self.vae, &self.info.placement, &self.device).decode(&self.vae, z)
    }
}

/// One Z-Image generation's steps for the stage driver.
struct ZImageRun<'a>(&'a ZImagePipeline);

/// The prompt's text states and, where guided, the empty negative prompt's, a row per image.
struct ZImagePrompt {
    positive: Tensor<B, 3>,
    negative: Option<Tensor<B, 3>>,
}

struct ZImageLatents {
    /// [batch, C, h, w] (f32).
    latents: Tensor<B, 4>,
    schedule: FlowSchedule,
    /// The transformer's rotary tables with the prompt's caption, and with the negative's.
    positive_rope: CallRope<B>,
    negative_rope: Option<CallRope<B>>,
}

impl GenerationSteps for ZImageRun<'_> {
    type Prompt = ZImagePrompt;
    type Latents = ZImageLatents;
    type Denoiser<'a>
        = MutexGuard<'a, Slot<ZImageTransformer<B>>>
    where
        Self: 'a;

    fn device(&self) -> &SelectedDevice {
        &self.0.device
    }

    fn placement(&self) -> &Placement {
        &self.0.info.placement
    }

    fn encode_prompt(&self, request: &GenerateRequest) -> Result<ZImagePrompt> {
        let rows = |t: Tensor<B, 3>| t.repeat_dim(0, request.batch);
        let positive = rows(self.0.encode_prompt(&request.prompt)?);
        let negative = match (super::FAMILY.guided)(request.guidance_scale) {
            true => Some(rows(self.0.encode_prompt(&request.negative_prompt)?)),
            false => None,
        };
        Ok(ZImagePrompt { positive, negative })
    }

    fn prepare_latents(
        &self,
        request: &GenerateRequest,
        prompt: &ZImagePrompt,
    ) -> Result<Prepared<ZImageLatents>> {
        let pipe = self.0;
        let shape = pipe.latent_shape(request);
        let (latents, _) = request.noise.latents(shape, &pipe.device.device);
        let tokens = shape[2] / 2 * (shape[3] / 2);
        let schedule = pipe
            .scheduler
            .schedule(request.steps, pipe.scheduler.calculate_shift(tokens));
        // Every step's positions are the same: the tables are made once.
        let rope = |caption: &Tensor<B, 3>| {
            let transformer = pipe.transformer.lock();
            let size = (shape[2], shape[3]);
            transformer
                .module
                .call_rope(size, caption.dims()[1], &pipe.device.device)
        };
        Ok(Prepared {
            latents: ZImageLatents {
                latents,
                schedule,
                positive_rope: rope(&prompt.positive),
                negative_rope: prompt.negative.as_ref().map(rope),
            },
            steps: request.steps,
            encode_seconds: 0.0,
            scheduler: SchedulerKind::FlowMatchEuler,
        })
    }

    fn denoiser(&self) -> MutexGuard<'_, Slot<ZImageTransformer<B>>> {
        self.0.transformer.on_device(&self.0.device)
    }

    fn denoise_step(
        &self,
        transformer: &MutexGuard<'_, Slot<ZImageTransformer<B>>>,
        request: &GenerateRequest,
        prompt: &ZImagePrompt,
        state: &mut ZImageLatents,
        i: usize,
    ) -> Result<()> {
        let transformer = &transformer.module;
        let t = (1000.0 - state.schedule.timesteps[i]) / 1000.0;
        let predict = |caption: &Tensor<B, 3>, rope: &CallRope<B>| {
            transformer
                .forward_with(state.latents.clone(), caption.clone(), t, rope)
                .cast(DType::F32)
        };
        let options = request.guidance_options;
        // cfg_truncation: late steps (t past the threshold) run unguided.
        let truncated = options.truncation.is_some_and(|limit| t as f64 > limit);
        let positive = predict(&prompt.positive, &state.positive_rope);
        let prediction = match (&prompt.negative, &state.negative_rope, truncated) {
            (Some(negative), Some(rope), false) => {
                let negative = predict(negative, rope);
                let guided =
                    positive.clone() + (positive.clone() - negative) * request.guidance_scale;
                match options.normalization.filter(|factor| *factor > 0.0) {
                    Some(factor) => cap_norm(guided, positive, factor),
                    None => guided,
                }
            }
            _ => positive,
        };
        // The model predicts the velocity's negative.
        state.latents = state.latents.clone() - prediction * state.schedule.step_size(i);
        Ok(())
    }

    fn offload_denoiser(&self) {
        self.0.transformer.offload(&self.0.device, &self.0.cpu);
    }

    fn decode(&self, state: &ZImageLatents, n: usize) -> Result<GeneratedImage> {
        decoded_image(self.0.decode(state.latents.clone().narrow(0, n, 1)))
    }
}

/// `cfg_normalization`: each image's guided prediction scaled down where its norm exceeds
/// `factor` times the positive prediction's.
fn cap_norm(guided: Tensor<B, 4>, positive: Tensor<B, 4>, factor: f64) -> Tensor<B, 4> {
    let [n, c, h, w] = guided.dims();
    let norm = |t: Tensor<B, 4>| (t.clone() * t).reshape([n, c * h * w]).sum_dim(1).sqrt();
    let limit = norm(positive) * factor;
    let current = norm(guided.clone());
    // min(1, limit / current), where a current norm of 0 needs no scaling.
    let scale = (limit / current.clone())
        .clamp_max(1.0)
        .mask_fill(current.equal_elem(0.0), 1.0);
    guided * scale.reshape([n, 1, 1, 1])
}

impl FamilyPipeline for ZImagePipeline {
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
            || stages::generate(&ZImageRun(self), request, sync, progress, cancel),
        )
    }

    fn parameter_counts(&self) -> ParameterCounts {
        ParameterCounts {
            text_encoders: self.text_encoder.num_params(),
            denoiser: self.transformer.lock().module.num_params(),
            vae: self.vae.num_params(),
            vae_encoder: 0,
        }
    }

    fn denoiser_weight_bytes(&self) -> u64 {
        crate::nn::weight_bytes(&self.transformer.lock().module)
    }

    fn timed_calls(&self, width: usize, height: usize) -> Result<Vec<TimedCall<'_>>> {
        let f = self.info.vae_scale_factor;
        let (c, h, w) = (self.in_channels, height / f, width / f);
        if h % 2 != 0 || w % 2 != 0 {
            return Err(DiffusionError::Request(format!(
                "--width and --height must be multiples of {} for Z-Image (the VAE's {f} times 2x2 patches)",
                2 * f
            )));
        }
        let mut noise = NormalGenerator::new(1);
        let caption = self.encode_prompt("a photograph of an astronaut riding a horse")?;
        let latents = noise.normals(c * h * w);
        let z = noise.normals(c * h * w);
        let dev = self.device.device.clone();
        let tensor = move |v: &[f32]| {
            Tensor::<B, 4>::from_data(
                TensorData::new(v.to_vec(), [1, c, h, w]),
                (&dev, DType::F32),
            )
        };
        let tokens = caption.dims()[1];
        let transformer = TimedCall {
            label: format!(
                "transformer call (batch 1, {} image + {tokens} text tokens)",
                h / 2 * (w / 2)
            ),
            run: Box::new({
                let tensor = tensor.clone();
                move || {
                    tensor_to_vec(self.run_transformer(tensor(&latents), caption.clone(), 0.5))
                        .map(|_| ())
                }
            }),
        };
        let vae = TimedCall {
            label: format!("vae decode ({c}x{h}x{w} -> 3x{height}x{width})"),
            run: Box::new(move || tensor_to_vec(self.decode(tensor(&z))).map(|_| ())),
        };
        Ok(vec![transformer, vae])
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
