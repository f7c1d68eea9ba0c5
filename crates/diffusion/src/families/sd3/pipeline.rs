//! `StableDiffusion3Pipeline`: encode the prompt with both CLIPs (their penultimate hidden states
//! side by side, padded to T5's width, then T5's 256 tokens along the sequence; their projected
//! pooled outputs side by side), noise the latents, step the MMDiT with flow-matching Euler
//! (guidance above 1 combines it with the negative prompt's as `uncond + g (cond - uncond)`,
//! skip-layer guidance adds a pass without some blocks), then unscale, shift and decode.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use burn::DispatchDevice;

use super::files::{self, Place, Places};
use super::generate::Sd3Run;
use super::spec::Spec;
use super::transformer::Sd3Transformer;
use super::{CLIP_TOKENS, T5_TOKENS};
use crate::device::{self, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::synthetic_weights::SyntheticWeights;
use crate::io::weights::{Precision, WeightSource};
use crate::models::clip::ClipTextModel;
use crate::models::config::{ClipConfig, ConfigFile, VaeConfig};
use crate::models::t5::prompt::T5Prompt;
use crate::models::t5::{T5Encoder, TIED_EMBEDDING};
use crate::models::tokenizer::Tokenizer;
use crate::models::vae::{self, VaeDecoder};
use crate::noise::NormalGenerator;
use crate::pipeline::backend_failure::guard;
use crate::pipeline::decode::DecodePlan;
use crate::pipeline::family::FilePart;
use crate::pipeline::memory_need::{FitContext, ModelSize};
use crate::pipeline::offload::Offloadable;
use crate::pipeline::stages;
use crate::pipeline::{
    check_request, folder_index, load_component, load_denoiser, tensor_to_vec, CancelToken, Family,
    FamilyPipeline, GenerateRequest, Generated, Held, LoadOptions, ModelInfo, ModelSource,
    ParameterCounts, Placement, Progress, StepSync, TimedCall, B,
};
use crate::scheduler::flow_match::{FlowMatchConfig, FlowSchedule};
use crate::scheduler::SchedulerKind;

/// The prompt's tokenizers (synthetic weights come without: see `Sd3Pipeline::token_ids`).
struct Tokenizers {
    clip_l: Tokenizer,
    clip_g: Tokenizer,
    t5: Option<T5Prompt>,
}

pub struct Sd3Pipeline {
    pub device: SelectedDevice,
    pub(super) cpu: DispatchDevice,
    tokenizers: Option<Tokenizers>,
    clip_l: ClipTextModel<B>,
    clip_g: ClipTextModel<B>,
    /// `None`: the model goes without T5, whose part of the conditioning is zeros.
    t5: Option<T5Encoder<B>>,
    /// The transformer's text width (T5's).
    joint_width: usize,
    pub(super) transformer: Offloadable<Sd3Transformer<B>>,
    vae: VaeDecoder<B>,
    pub(super) scheduler: FlowMatchConfig,
    pub info: ModelInfo,
    fit: FitContext,
}

/// Each network's weights, in load order.
struct Sources<'a> {
    clip_l: &'a mut dyn WeightSource,
    clip_g: &'a mut dyn WeightSource,
    t5: Option<(&'a mut dyn WeightSource, &'static str)>,
    transformer: &'a mut dyn WeightSource,
    vae: &'a mut dyn WeightSource,
}

impl Sd3Pipeline {
    /// Loads an SD3 folder or a preset's synthetic weights (the device supports `precision`).
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
                let [l, g, t5, tr, va] = &mut [0; 5].map(|_| SyntheticWeights::new(seed));
                let family = preset.family();
                let placement = Self::placement(family, &spec.vae.value, precision, &options);
                let size = ModelSize::upstream(family, spec.vae.value.sample_size);
                let sources = Sources {
                    clip_l: l,
                    clip_g: g,
                    t5: Some((t5, "shared.weight")),
                    transformer: tr,
                    vae: va,
                };
                Self::assemble(
                    spec,
                    family,
                    size,
                    sources,
                    device,
                    placement,
                    options,
                    ModelSource::Synthetic(*preset),
                    Vec::new(),
                )
            }
            ModelSource::Checkpoint {
                file,
                config: Some(folder),
                parts,
            } => {
                let spec = Spec::read(folder, &folder_index(folder)?)?;
                let places = Places::single_file(file, folder, parts, &spec)?;
                let source = ModelSource::Checkpoint {
                    file: file.clone(),
                    config: Some(folder.clone()),
                    parts: parts.clone(),
                };
                Self::load_places(spec, places, source, device, precision, options)
            }
            ModelSource::Checkpoint {
                file, config: None, ..
            } => Err(needs_configs(file)),
        }
    }

    fn load_folder(
        folder: &Path,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        let spec = Spec::read(folder, &folder_index(folder)?)?;
        let places = Places::folder(folder, &spec);
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
        let placement = Self::placement(family, &spec.vae.value, precision, &options);
        let text = placement.text_encoders;
        let (mut clip_l, mut files) = files::clip_weights(&places.clip_l, text)?;
        let (mut clip_g, clip_g_files) = files::clip_weights(&places.clip_g, text)?;
        files.extend(clip_g_files);
        let mut t5 = match &places.t5 {
            Some(place) => {
                let (weights, embedding, t5_files) = files::t5_weights(place, text)?;
                files.extend(t5_files);
                Some((weights, embedding))
            }
            None => None,
        };
        let (mut transformer, transformer_files) =
            files::transformer_weights(&places.transformer, placement.denoiser)?;
        files.extend(transformer_files);
        let blocks = spec.vae.value.block_out_channels.len();
        let (mut vae, vae_files) = files::vae_weights(&places.vae, blocks, placement.vae)?;
        files.extend(vae_files);
        // A single file holds several networks: each file once, where it was first read.
        let mut seen = std::collections::BTreeSet::new();
        files.retain(|f| seen.insert(f.clone()));
        let size = Self::size_of(&spec, &places, precision)?;
        let sources = Sources {
            clip_l: clip_l.as_mut(),
            clip_g: clip_g.as_mut(),
            t5: match &mut t5 {
                Some((weights, embedding)) => {
                    Some((weights.as_mut() as &mut dyn WeightSource, *embedding))
                }
                None => None,
            },
            transformer: transformer.as_mut(),
            vae: vae.as_mut(),
        };
        Self::assemble(
            spec, family, size, sources, device, placement, options, source, files,
        )
    }

    /// What the memory estimate needs of `source`, from its configs and weight headers.
    pub fn model_size(
        source: &ModelSource,
        precision: Precision,
    ) -> Result<(ModelSize, VaeConfig)> {
        match source {
            ModelSource::Folder(folder) => {
                let spec = Spec::read(folder, &folder_index(folder)?)?;
                spec.validate()?;
                let size = Self::size_of(&spec, &Places::folder(folder, &spec), precision)?;
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
                let spec = Spec::read(folder, &folder_index(folder)?)?;
                spec.validate()?;
                let places = Places::single_file(file, folder, parts, &spec)?;
                let size = Self::size_of(&spec, &places, precision)?;
                Ok((size, spec.vae.value))
            }
            ModelSource::Checkpoint {
                file, config: None, ..
            } => Err(needs_configs(file)),
        }
    }

    /// Parameters of the parts that run, from the weight files' headers.
    fn size_of(spec: &Spec, places: &Places, precision: Precision) -> Result<ModelSize> {
        let family = super::family::family_of(&spec.transformer.value);
        let blocks = spec.vae.value.block_out_channels.len();
        let count = |place: &Place, kind: FilePart, counted: &dyn Fn(&str) -> bool| {
            files::parameters(place, kind, blocks, precision, counted)
        };
        let all = |_: &str| true;
        let text = FilePart::TextEncoder;
        let mut text_params =
            count(&places.clip_l, text, &all)? + count(&places.clip_g, text, &all)?;
        if let Some(t5) = &places.t5 {
            text_params += count(t5, text, &|n| n != TIED_EMBEDDING)?;
        }
        let encoder = |n: &str| vae::ENCODER_PREFIXES.iter().any(|p| n.starts_with(p));
        let (file_params, denoiser_kept) = files::transformer_size(&places.transformer, precision)?;
        // What the device holds: the positional table stays on the host.
        let table = spec.transformer.value.table_parameters();
        let denoiser_params = file_params.saturating_sub(table);
        let vae = FilePart::Vae;
        Ok(ModelSize {
            text_encoder_params: text_params,
            denoiser_params,
            denoiser_full_precision_params: 0,
            denoiser_kept,
            vae_decoder_params: count(&places.vae, vae, &|n| !encoder(n))?,
            vae_encoder_params: count(&places.vae, vae, &encoder)?,
            ..ModelSize::upstream(family, spec.vae.value.sample_size)
        })
    }

    fn placement(
        family: Family,
        vae: &VaeConfig,
        precision: Precision,
        options: &LoadOptions,
    ) -> Placement {
        Placement::for_model(family, vae, precision, options)
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        spec: Spec,
        family: Family,
        size: ModelSize,
        sources: Sources,
        device: SelectedDevice,
        placement: Placement,
        options: LoadOptions,
        source: ModelSource,
        weight_files: Vec<PathBuf>,
    ) -> Result<Self> {
        let fit = FitContext::new(size, spec.vae.value.clone(), options);
        fit.check_planned(&placement, &device)?;
        let tokenizers = match &spec.tokenizers {
            Some(folders) => Some(Tokenizers {
                clip_l: Tokenizer::from_folder(&folders.clip_l)?,
                clip_g: Tokenizer::from_folder(&folders.clip_g)?,
                t5: folders.t5.as_deref().map(T5Prompt::load).transpose()?,
            }),
            None => None,
        };
        let dev = device.device.clone();
        let cpu = device::cpu_device();
        let on = |on_cpu: bool| if on_cpu { cpu.clone() } else { dev.clone() };
        let text_device = on(placement.text_encoders_on_cpu);
        let clip = |weights: &mut dyn WeightSource, config: &ConfigFile<ClipConfig>| {
            load_component(weights, &text_device, placement.text_encoders, |l| {
                ClipTextModel::load(&config.value, true, l)
            })
        };
        let clip_l = clip(sources.clip_l, &spec.clip_l)?;
        let clip_g = clip(sources.clip_g, &spec.clip_g)?;
        let t5 = match (sources.t5, &spec.t5) {
            (Some((weights, embedding)), Some(config)) => Some(load_component(
                weights,
                &text_device,
                placement.text_encoders,
                |l| T5Encoder::load(&config.value, embedding, &config.path, l),
            )?),
            _ => None,
        };
        let transformer = load_denoiser(sources.transformer, &device, &placement, &options, |l| {
            Sd3Transformer::load(&spec.transformer.value, &spec.transformer.path, l)
        })?;
        let vae = load_component(sources.vae, &on(placement.vae_on_cpu), placement.vae, |l| {
            VaeDecoder::load(&spec.vae.value, &spec.vae.path, l)
        })?;
        let pipeline = Sd3Pipeline {
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
            clip_l,
            clip_g,
            t5,
            joint_width: spec.transformer.value.joint_attention_dim,
            transformer: Offloadable::new(transformer),
            vae,
            scheduler: spec.scheduler,
            fit,
        };
        pipeline.device.sync()?;
        Ok(pipeline)
    }

    /// Image pixels per patched latent token side: the VAE's scale times the 2x2 patches.
    fn pixels_per_token(&self) -> usize {
        2 * self.info.vae_scale_factor
    }

    /// [batch, latent channels, H/f, W/f]: the noise `InitialNoise::Latents` gives.
    pub fn latent_shape(&self, request: &GenerateRequest) -> [usize; 4] {
        let f = self.info.vae_scale_factor;
        let c = self.transformer.lock().module.in_channels();
        [request.batch, c, request.height / f, request.width / f]
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

    /// The prompt's ids for CLIP-L, CLIP-G and T5 (77, 77 and 256). Synthetic weights come
    /// without tokenizer files: CLIP's built-in tokenizer, and the prompt's bytes for T5.
    fn token_ids(&self, prompt: &str) -> Result<[Vec<u32>; 3]> {
        match &self.tokenizers {
            Some(t) => {
                let t5 = match &t.t5 {
                    Some(t5) => t5.encode(prompt, T5_TOKENS)?.ids,
                    None => Vec::new(),
                };
                Ok([t.clip_l.encode(prompt)?, t.clip_g.encode(prompt)?, t5])
            }
            None => {
                let clip = Tokenizer::builtin_sd15();
                let l = clip.encode(prompt)?;
                let g = clip.padding_with_exclamation().encode(prompt)?;
                let mut t5: Vec<u32> = prompt.bytes().map(u32::from).take(T5_TOKENS - 1).collect();
                t5.push(1);
                t5.resize(T5_TOKENS, 0);
                Ok([l, g, t5])
            }
        }
    }

    fn ids_tensor(&self, ids: &[u32]) -> Tensor<B, 2, Int> {
        let flat: Vec<i64> = ids.iter().map(|&id| id as i64).collect();
        Tensor::from_data(TensorData::new(flat, [1, ids.len()]), self.text_device())
    }

    /// The prompt's conditioning as the transformer takes it, on its device in its dtype: the
    /// text states [1, 77 + 256, joint width] and the pooled embedding [1, pooled width].
    pub fn encode_prompt(&self, prompt: &str) -> Result<(Tensor<B, 3>, Tensor<B, 2>)> {
        let [l_ids, g_ids, t5_ids] = self.token_ids(prompt)?;
        let eos = |ids: &[u32], tokenizer: Option<&Tokenizer>| match tokenizer {
            Some(t) => t.eos_position(ids),
            None => Tokenizer::builtin_sd15().eos_position(ids),
        };
        let clip = |model: &ClipTextModel<B>, ids: &[u32], eos: usize| {
            let out = model.forward(self.ids_tensor(ids));
            let pooled = model.pooled(out.last_hidden_state, &[eos]);
            (out.penultimate, pooled)
        };
        let tokenizers = self.tokenizers.as_ref();
        let (l, pooled_l) = clip(
            &self.clip_l,
            &l_ids,
            eos(&l_ids, tokenizers.map(|t| &t.clip_l)),
        );
        let (g, pooled_g) = clip(
            &self.clip_g,
            &g_ids,
            eos(&g_ids, tokenizers.map(|t| &t.clip_g)),
        );
        let clip_states = Tensor::cat(vec![l, g], 2);
        let [_, tokens, width] = clip_states.dims();
        let padding =
            Tensor::<B, 3>::zeros([1, tokens, self.joint_width - width], &clip_states.device())
                .cast(clip_states.dtype());
        let clip_states = Tensor::cat(vec![clip_states, padding], 2);
        let t5_states = match &self.t5 {
            Some(t5) => t5.forward(self.ids_tensor(&t5_ids)),
            None => Tensor::<B, 3>::zeros([1, T5_TOKENS, self.joint_width], self.text_device())
                .cast(clip_states.dtype()),
        };
        let dev = &self.device.device;
        let dtype = self.info.placement.denoiser.dtype();
        let states = Tensor::cat(
            vec![
                clip_states.to_device(dev).cast(dtype),
                t5_states.to_device(dev).cast(dtype),
            ],
            1,
        );
        let pooled = Tensor::cat(vec![pooled_l, pooled_g], 1)
            .to_device(dev)
            .cast(dtype);
        Ok((states, pooled))
    }

    /// One transformer call (component access for parity tests and timing): `latents`
    /// [N, C, h, w] with `states` [N, L, joint width] and `pooled` [N, P] at `timestep`
    /// (`1000 x sigma`), skipping the blocks `skip` lists.
    pub fn run_transformer(
        &self,
        latents: Tensor<B, 4>,
        states: Tensor<B, 3>,
        pooled: Tensor<B, 2>,
        timestep: f32,
        skip: &[usize],
    ) -> Tensor<B, 4> {
        let slot = self.transformer.on_device(&self.device);
        let positions = slot.module.positions(&latents);
        slot.module
            .forward(latents, positions, states, pooled, timestep, skip)
    }

    /// The VAE decode of the transformer's latents [1, C, h, w] (unscaled and shifted here) ->
    /// image [1, 3, H, W] in about [-1, 1].
    pub fn decode(&self, latents: Tensor<B, 4>) -> Tensor<B, 4> {
        let z = self
            .vae
            .unscale_latents(latents.to_device(self.vae_device()));
        DecodePlan::of(&self.vae, &self.info.placement, &self.device).decode(&self.vae, z)
    }

    /// The schedule of `steps` for latents of `h` x `w` (the image's tokens set `mu` where the
    /// scheduler shifts dynamically).
    pub(super) fn schedule(&self, steps: usize, (h, w): (usize, usize)) -> FlowSchedule {
        let mu = self.scheduler.calculate_shift(h / 2 * (w / 2));
        self.scheduler.schedule_over_range(steps, mu)
    }
}

impl FamilyPipeline for Sd3Pipeline {
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
        let transformer = self.transformer.lock();
        let largest = transformer.module.max_latent_side() * self.info.vae_scale_factor;
        if request.width > largest || request.height > largest {
            return Err(DiffusionError::Request(format!(
                "{}x{} is past what this model's positional table covers: at most {largest} pixels a side",
                request.width, request.height
            )));
        }
        if let Some(skip) = &request.guidance_options.skip_layers {
            let blocks = transformer.module.block_count();
            if let Some(layer) = skip.layer_list().into_iter().find(|&l| l >= blocks) {
                return Err(DiffusionError::Request(format!(
                    "skip-layer guidance names layer {layer}, but the transformer has {blocks} (0 to {})",
                    blocks - 1
                )));
            }
        }
        drop(transformer);
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
            || stages::generate(&Sd3Run(self), request, sync, progress, cancel),
        )
    }

    fn parameter_counts(&self) -> ParameterCounts {
        let t5 = self.t5.as_ref().map_or(0, |t5| t5.num_params());
        ParameterCounts {
            text_encoders: self.clip_l.num_params() + self.clip_g.num_params() + t5,
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
        let c = self.transformer.lock().module.in_channels();
        let (h, w) = (height / f, width / f);
        if h % 2 != 0 || w % 2 != 0 {
            return Err(DiffusionError::Request(format!(
                "--width and --height must be multiples of {} for Stable Diffusion 3 (the VAE's {f} times 2x2 patches)",
                2 * f
            )));
        }
        let mut noise = NormalGenerator::new(1);
        let (states, pooled) = self.encode_prompt("a photograph of an astronaut riding a horse")?;
        let latents = noise.normals(c * h * w);
        let z = noise.normals(c * h * w);
        let dev = self.device.device.clone();
        let tensor = move |v: &[f32]| {
            Tensor::<B, 4>::from_data(
                TensorData::new(v.to_vec(), [1, c, h, w]),
                (&dev, DType::F32),
            )
        };
        let transformer = TimedCall {
            label: format!(
                "transformer call (batch 1, {} image + {} text tokens)",
                h / 2 * (w / 2),
                CLIP_TOKENS + T5_TOKENS
            ),
            run: Box::new({
                let tensor = tensor.clone();
                move || {
                    let out = self.run_transformer(
                        tensor(&latents),
                        states.clone(),
                        pooled.clone(),
                        500.0,
                        &[],
                    );
                    tensor_to_vec(out).map(|_| ())
                }
            }),
        };
        let vae = TimedCall {
            label: format!("vae decode ({c}x{h}x{w} -> 3x{height}x{width})"),
            run: Box::new(move || tensor_to_vec(self.decode(tensor(&z))).map(|_| ())),
        };
        let mut calls = vec![transformer, vae];
        // T5-XXL's encoder over its 256 tokens, the largest of the prompt's three encoders.
        if let Some(t5) = &self.t5 {
            let [_, _, ids] = self.token_ids("a photograph of an astronaut riding a horse")?;
            calls.push(TimedCall {
                label: format!("t5 call ({T5_TOKENS} tokens)"),
                run: Box::new(move || tensor_to_vec(t5.forward(self.ids_tensor(&ids))).map(|_| ())),
            });
        }
        Ok(calls)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The refusal for a single file given without the folder of its configs and tokenizers.
fn needs_configs(file: &Path) -> DiffusionError {
    DiffusionError::unsupported(
        file,
        "a Stable Diffusion 3 single file runs with its model's configs and tokenizers: add --model-config naming its diffusers folder (the Hub repository's; sdbench fetches them itself for a file of SD3.5 Medium's, Large's or SD3 Medium's sizes)",
    )
}
