//! `FluxPipeline`: encode the prompt (CLIP's pooled output; T5's states over 256 or 512 tokens),
//! noise the latents and pack their 2x2 patches into tokens, step the transformer with
//! flow-matching Euler ([dev]'s guidance scale goes into the model, not into a second pass), then
//! unpack, unscale, shift and decode.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn::DispatchDevice;

use super::files::Places;
use super::generate::Flux1Run;
use super::latents::{image_positions, pack, unpack};
use super::spec::Spec;
use super::transformer::{Flux1Transformer, Position};
use crate::device::{self, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::component_file::needs_its_folder;
use crate::io::synthetic_weights::SyntheticWeights;
use crate::io::weights::{Precision, WeightSource};
use crate::models::clip::ClipTextModel;
use crate::models::config::{ClipConfig, ConfigFile, VaeConfig};
use crate::models::t5::prompt::T5Prompt;
use crate::models::t5::T5Encoder;
use crate::models::tokenizer::Tokenizer;
use crate::models::vae::VaeDecoder;
use crate::noise::NormalGenerator;
use crate::pipeline::backend_failure::guard;
use crate::pipeline::decode::DecodePlan;
use crate::pipeline::memory_need::{FitContext, ModelSize};
use crate::pipeline::offload::Offloadable;
use crate::pipeline::part_files;
use crate::pipeline::stages;
use crate::pipeline::{
    check_request, load_component, load_denoiser, tensor_to_vec, CancelToken, FamilyPipeline,
    GenerateRequest, Generated, Held, LoadOptions, ModelInfo, ModelSource, ParameterCounts,
    Placement, Progress, StepSync, TimedCall, B,
};
use crate::scheduler::flow_match::{FlowMatchConfig, FlowSchedule};
use crate::scheduler::SchedulerKind;

/// The prompt's tokenizers (synthetic weights come without: see `Flux1Pipeline::token_ids`).
struct Tokenizers {
    clip: Tokenizer,
    t5: T5Prompt,
}

pub struct Flux1Pipeline {
    pub device: SelectedDevice,
    pub(super) cpu: DispatchDevice,
    tokenizers: Option<Tokenizers>,
    clip: ClipTextModel<B>,
    t5: T5Encoder<B>,
    /// T5's sequence length (`Spec::t5_tokens`).
    t5_tokens: usize,
    pub(super) transformer: Offloadable<Flux1Transformer<B>>,
    /// The transformer's packed channels and whether it reads the guidance scale (read without
    /// locking it).
    in_channels: usize,
    pub(super) takes_guidance: bool,
    vae: VaeDecoder<B>,
    scheduler: FlowMatchConfig,
    pub info: ModelInfo,
    fit: FitContext,
}

/// Each network's weights, in load order.
struct Sources<'a> {
    clip: &'a mut dyn WeightSource,
    t5: (&'a mut dyn WeightSource, &'static str),
    transformer: &'a mut dyn WeightSource,
    vae: &'a mut dyn WeightSource,
}

impl Flux1Pipeline {
    /// Loads a FLUX.1 folder or a preset's synthetic weights (the device supports `precision`).
    pub fn load(
        source: &ModelSource,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        match source {
            ModelSource::Folder(folder) => Self::load_folder(folder, device, precision, options),
            ModelSource::Synthetic(preset) => {
                let spec = super::family::built_in_spec(*preset)?;
                spec.validate()?;
                let seed = 0x5D_BE_AC_15;
                let [c, t5, tr, va] = &mut [0; 4].map(|_| SyntheticWeights::new(seed));
                let family = preset.family();
                let placement = Placement::for_model(family, &spec.vae.value, precision, &options);
                let size = ModelSize::upstream(family, spec.vae.value.sample_size);
                let sources = Sources {
                    clip: c,
                    t5: (t5, "shared.weight"),
                    transformer: tr,
                    vae: va,
                };
                let source = ModelSource::Synthetic(*preset);
                Self::assemble(
                    spec,
                    size,
                    sources,
                    device,
                    placement,
                    options,
                    source,
                    vec![],
                )
            }
            ModelSource::Checkpoint {
                file,
                config: Some(folder),
                parts,
            } => {
                let spec = Spec::read(folder)?;
                let places = Places::transformer_file(file, folder, parts, &spec)?;
                let loaded_from = part_files::loaded_from(folder, Some(file), parts);
                Self::load_places(spec, places, loaded_from, device, precision, options)
            }
            ModelSource::Checkpoint {
                file, config: None, ..
            } => Err(needs_its_folder(file, "FLUX.1 transformer")),
        }
    }

    fn load_folder(
        folder: &Path,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        let spec = Spec::read(folder)?;
        let places = Places::folder(folder);
        let source = ModelSource::Folder(folder.to_path_buf());
        Self::load_places(spec, places, source, device, precision, options)
    }

    /// Loads the networks from where `places` says they are.
    fn load_places(
        spec: Spec,
        places: Places,
        source: ModelSource,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        spec.validate()?;
        let family = super::family::family_of(&spec.transformer.value);
        let placement = Placement::for_model(family, &spec.vae.value, precision, &options);
        let text = placement.text_encoders;
        let (mut clip, clip_file) = places.clip_weights(text)?;
        let (mut t5, embedding, mut files) = places.t5_weights(text)?;
        files.insert(0, clip_file);
        let (mut transformer, transformer_files) =
            places.transformer_weights(placement.denoiser)?;
        let blocks = spec.vae.value.block_out_channels.len();
        let (mut vae, vae_files) = places.vae_weights(blocks, placement.vae)?;
        files.extend(transformer_files);
        files.extend(vae_files);
        let size = places.size(&spec, precision)?;
        let sources = Sources {
            clip: &mut clip,
            t5: (t5.as_mut(), embedding),
            transformer: transformer.as_mut(),
            vae: vae.as_mut(),
        };
        Self::assemble(
            spec, size, sources, device, placement, options, source, files,
        )
    }

    /// What the memory estimate needs of `source`, from its configs and weight headers.
    pub fn model_size(
        source: &ModelSource,
        precision: Precision,
    ) -> Result<(ModelSize, VaeConfig)> {
        match source {
            ModelSource::Folder(folder) => {
                let spec = Spec::read(folder)?;
                spec.validate()?;
                let size = Places::folder(folder).size(&spec, precision)?;
                Ok((size, spec.vae.value))
            }
            ModelSource::Synthetic(preset) => {
                let spec = super::family::built_in_spec(*preset)?;
                let size = ModelSize::upstream(preset.family(), spec.vae.value.sample_size);
                Ok((size, spec.vae.value))
            }
            ModelSource::Checkpoint {
                file,
                config: Some(folder),
                parts,
            } => {
                let spec = Spec::read(folder)?;
                spec.validate()?;
                let places = Places::transformer_file(file, folder, parts, &spec)?;
                Ok((places.size(&spec, precision)?, spec.vae.value))
            }
            ModelSource::Checkpoint {
                file, config: None, ..
            } => Err(needs_its_folder(file, "FLUX.1 transformer")),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        spec: Spec,
        size: ModelSize,
        sources: Sources,
        device: SelectedDevice,
        placement: Placement,
        options: LoadOptions,
        source: ModelSource,
        weight_files: Vec<PathBuf>,
    ) -> Result<Self> {
        let family = super::family::family_of(&spec.transformer.value);
        let fit = FitContext::new(size, spec.vae.value.clone(), options);
        fit.check_planned(&placement, &device)?;
        let tokenizers = match &spec.tokenizers {
            Some(folders) => Some(Tokenizers {
                clip: Tokenizer::from_folder(&folders.clip)?,
                t5: T5Prompt::load(&folders.t5)?,
            }),
            None => None,
        };
        let dev = device.device.clone();
        let cpu = device::cpu_device();
        let on = |on_cpu: bool| if on_cpu { cpu.clone() } else { dev.clone() };
        let text_device = on(placement.text_encoders_on_cpu);
        let clip_config: &ConfigFile<ClipConfig> = &spec.clip;
        let clip = load_component(sources.clip, &text_device, placement.text_encoders, |l| {
            ClipTextModel::load(&clip_config.value, false, l)
        })?;
        let (t5_weights, embedding) = sources.t5;
        let t5 = load_component(t5_weights, &text_device, placement.text_encoders, |l| {
            T5Encoder::load(&spec.t5.value, embedding, &spec.t5.path, l)
        })?;
        let transformer = load_denoiser(sources.transformer, &device, &placement, &options, |l| {
            Flux1Transformer::load(&spec.transformer.value, &spec.transformer.path, l)
        })?;
        let vae = load_component(sources.vae, &on(placement.vae_on_cpu), placement.vae, |l| {
            VaeDecoder::load(&spec.vae.value, &spec.vae.path, l)
        })?;
        let pipeline = Flux1Pipeline {
            info: ModelInfo {
                source,
                weight_files,
                default_scheduler: SchedulerKind::FlowMatchEuler,
                vae_scale_factor: vae.scale_factor(),
                latent_channels: vae.latent_channels(),
                family,
                preset: super::family::matching_preset(&spec),
                placement,
            },
            device,
            cpu,
            tokenizers,
            clip,
            t5,
            t5_tokens: spec.t5_tokens(),
            in_channels: transformer.in_channels(),
            takes_guidance: transformer.takes_guidance(),
            transformer: Offloadable::new(transformer),
            vae,
            scheduler: spec.scheduler,
            fit,
        };
        pipeline.device.sync()?;
        Ok(pipeline)
    }

    /// Image pixels per token side: the VAE's scale times the 2x2 patches.
    fn pixels_per_token(&self) -> usize {
        2 * self.info.vae_scale_factor
    }

    /// [batch, latent channels, H/f, W/f]: the unpacked noise `InitialNoise::Latents` gives.
    pub fn latent_shape(&self, request: &GenerateRequest) -> [usize; 4] {
        let f = self.info.vae_scale_factor;
        [
            request.batch,
            self.in_channels / 4,
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

    /// The prompt's ids for CLIP (77) and T5 (`t5_tokens`). Synthetic weights come without
    /// tokenizer files: CLIP's built-in tokenizer, and the prompt's bytes for T5.
    fn token_ids(&self, prompt: &str) -> Result<[Vec<u32>; 2]> {
        match &self.tokenizers {
            Some(t) => Ok([
                t.clip.encode(prompt)?,
                t.t5.encode(prompt, self.t5_tokens)?.ids,
            ]),
            None => {
                let clip = Tokenizer::builtin_sd15().encode(prompt)?;
                let mut t5: Vec<u32> = prompt
                    .bytes()
                    .map(u32::from)
                    .take(self.t5_tokens - 1)
                    .collect();
                t5.push(1);
                t5.resize(self.t5_tokens, 0);
                Ok([clip, t5])
            }
        }
    }

    fn ids_tensor(&self, ids: &[u32]) -> Tensor<B, 2, Int> {
        let flat: Vec<i64> = ids.iter().map(|&id| id as i64).collect();
        Tensor::from_data(TensorData::new(flat, [1, ids.len()]), self.text_device())
    }

    /// The prompt's conditioning as the transformer takes it, on its device in its dtype: T5's
    /// states [1, t5 tokens, joint width] and CLIP's pooled output [1, CLIP width].
    pub fn encode_prompt(&self, prompt: &str) -> Result<(Tensor<B, 3>, Tensor<B, 2>)> {
        let [clip_ids, t5_ids] = self.token_ids(prompt)?;
        let eos = match &self.tokenizers {
            Some(t) => t.clip.eos_position(&clip_ids),
            None => Tokenizer::builtin_sd15().eos_position(&clip_ids),
        };
        let out = self.clip.forward(self.ids_tensor(&clip_ids));
        let pooled = self.clip.pooled(out.last_hidden_state, &[eos]);
        let states = self.t5.forward(self.ids_tensor(&t5_ids));
        let dev = &self.device.device;
        let dtype = self.info.placement.denoiser.dtype();
        Ok((
            states.to_device(dev).cast(dtype),
            pooled.to_device(dev).cast(dtype),
        ))
    }

    /// The token positions of a call on latents of `h` x `w`: the text's (all zero), then the
    /// image's (`latents::image_positions`).
    pub(super) fn positions(&self, (h, w): (usize, usize)) -> Vec<Position> {
        let mut positions = vec![[0.0; 3]; self.t5_tokens];
        positions.extend(image_positions(h / 2, w / 2));
        positions
    }

    /// One transformer call (component access for parity tests and timing): `latents`
    /// [N, C, h, w] with `states` [N, L, joint width] and `pooled` [N, P] at `sigma` (the
    /// pipeline's `timestep / 1000`) and, for a model with a guidance embedding, `guidance`.
    /// -> the velocity [N, C, h, w].
    pub fn run_transformer(
        &self,
        latents: Tensor<B, 4>,
        states: Tensor<B, 3>,
        pooled: Tensor<B, 2>,
        sigma: f32,
        guidance: Option<f32>,
    ) -> Tensor<B, 4> {
        let [_, _, h, w] = latents.dims();
        let slot = self.transformer.on_device(&self.device);
        let dtype = self.info.placement.denoiser.dtype();
        let rope = slot
            .module
            .rope(&self.positions((h, w)), dtype, &self.device.device);
        let out = slot.module.forward(
            pack(latents.cast(dtype)),
            states,
            pooled,
            sigma,
            guidance,
            &rope,
        );
        unpack(out, h, w)
    }

    /// The VAE decode of the transformer's latents [1, C, h, w] (unscaled and shifted here) ->
    /// image [1, 3, H, W] in about [-1, 1].
    pub fn decode(&self, latents: Tensor<B, 4>) -> Tensor<B, 4> {
        let z = self
            .vae
            .unscale_latents(latents.to_device(self.vae_device()));
        DecodePlan::of(&self.vae, &self.info.placement, &self.device).decode(&self.vae, z)
    }

    /// The schedule of `steps` for latents of `h` x `w`: `linspace(1, 1/steps, steps)`, shifted
    /// by `mu` from the image's tokens where the scheduler shifts dynamically ([dev]), else by its
    /// static shift (schnell's 1).
    pub(super) fn schedule(&self, steps: usize, (h, w): (usize, usize)) -> FlowSchedule {
        let mu = self.scheduler.calculate_shift(h / 2 * (w / 2));
        self.scheduler.schedule(steps, mu)
    }
}

impl FamilyPipeline for Flux1Pipeline {
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
            || stages::generate(&Flux1Run(self), request, sync, progress, cancel),
        )
    }

    fn parameter_counts(&self) -> ParameterCounts {
        ParameterCounts {
            text_encoders: self.clip.num_params() + self.t5.num_params(),
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
        let c = self.in_channels / 4;
        let (h, w) = (height / f, width / f);
        if h % 2 != 0 || w % 2 != 0 {
            return Err(DiffusionError::Request(format!(
                "--width and --height must be multiples of {} for FLUX.1 (the VAE's {f} times 2x2 patches)",
                2 * f
            )));
        }
        let prompt = "a photograph of an astronaut riding a horse";
        let mut noise = NormalGenerator::new(1);
        let (states, pooled) = self.encode_prompt(prompt)?;
        let latents = noise.normals(c * h * w);
        let z = noise.normals(c * h * w);
        let dev = self.device.device.clone();
        let tensor = move |v: &[f32]| {
            Tensor::<B, 4>::from_data(
                TensorData::new(v.to_vec(), [1, c, h, w]),
                (&dev, DType::F32),
            )
        };
        let guidance = self.takes_guidance.then_some(3.5);
        let transformer = TimedCall {
            label: format!(
                "transformer call (batch 1, {} image + {} text tokens)",
                h / 2 * (w / 2),
                self.t5_tokens
            ),
            run: Box::new({
                let tensor = tensor.clone();
                move || {
                    let out = self.run_transformer(
                        tensor(&latents),
                        states.clone(),
                        pooled.clone(),
                        0.5,
                        guidance,
                    );
                    tensor_to_vec(out).map(|_| ())
                }
            }),
        };
        let vae = TimedCall {
            label: format!("vae decode ({c}x{h}x{w} -> 3x{height}x{width})"),
            run: Box::new(move || tensor_to_vec(self.decode(tensor(&z))).map(|_| ())),
        };
        let [_, ids] = self.token_ids(prompt)?;
        let t5 = TimedCall {
            label: format!("t5 call ({} tokens)", self.t5_tokens),
            run: Box::new(move || {
                tensor_to_vec(self.t5.forward(self.ids_tensor(&ids))).map(|_| ())
            }),
        };
        Ok(vec![transformer, vae, t5])
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
