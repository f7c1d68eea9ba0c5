//! Loading a Stable Diffusion model (a diffusers folder, a single-file checkpoint or a preset's
//! synthetic weights) with its placement, and what the family-agnostic `Pipeline` asks of it.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn::DispatchDevice;
use serde_json::{Map, Value};

use super::checkpoint;
use super::presets;
use super::spec::{
    projected_text_encoder_weights, text_encoder_weights, vae_weights, FolderFiles, ModelLayout,
    ModelSpec, Sources,
};
use super::unet::UNet;
use crate::device::{self, SelectedDevice};
use crate::error::{DiffusionError, Result};
use crate::io::component_file;
use crate::io::file_weights::FileWeights;
use crate::io::kept_weights::KeptWeights;
use crate::io::synthetic_weights::SyntheticWeights;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{Precision, WeightSource};
use crate::models::clip::ClipTextModel;
use crate::models::config::VaeConfig;
use crate::models::tokenizer::Tokenizer;
use crate::models::vae::{VaeDecoder, VaeEncoder};
use crate::models::vae_file;
use crate::pipeline::memory;
use crate::pipeline::memory_need::{FitContext, ModelSize};
use crate::pipeline::offload::Offloadable;
use crate::pipeline::{
    check_request, device_sync, img2img_start, load_component, load_denoiser, CancelToken,
    ComponentFiles, Family, FamilyPipeline, GenerateRequest, Generated, Held, LoadOptions,
    ModelInfo, ModelSource, ParameterCounts, Placement, Preset, Progress, StepSync, TimedCall, B,
};

pub struct SdPipeline {
    /// The device the UNet runs on (and every component the placement does not put on the CPU).
    pub device: SelectedDevice,
    /// The CPU backend, for components placed there.
    pub(super) cpu: DispatchDevice,
    pub precision: Precision,
    pub(super) tokenizer: Tokenizer,
    pub(super) text_encoder: ClipTextModel<B>,
    /// SDXL's second tokenizer and text encoder (with projection).
    pub(super) second: Option<(Tokenizer, ClipTextModel<B>)>,
    /// SDXL: an empty negative prompt is zeros rather than the encoded empty string.
    pub(super) force_zeros_for_empty_prompt: bool,
    pub(super) unet: Offloadable<UNet<B>>,
    pub(super) vae: VaeDecoder<B>,
    pub(super) vae_encoder: Option<VaeEncoder<B>>,
    pub(super) scheduler_config: Map<String, Value>,
    pub(super) scheduler_path: PathBuf,
    pub info: ModelInfo,
    /// What the memory fit check needs to estimate a request and suggest a profile.
    pub(super) fit: FitContext,
}

impl SdPipeline {
    /// Loads an SD1.x, SD2.x or SDXL model (a folder, a single-file checkpoint or a preset's
    /// synthetic weights) in `precision` (the device supports it: `Pipeline::load_with` checked).
    pub fn load(
        source: &ModelSource,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        match source {
            ModelSource::Folder(folder) => Self::load_folder(folder, device, precision, options),
            ModelSource::Checkpoint {
                file,
                config,
                parts,
            } => Self::load_checkpoint(file, config.as_deref(), parts, device, precision, options),
            ModelSource::Synthetic(preset) => {
                Self::load_synthetic(*preset, device, precision, options)
            }
        }
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

    /// `parts.vae`: the VAE from this file instead of the checkpoint's (a checkpoint without one
    /// needs it).
    fn load_checkpoint(
        file: &Path,
        config: Option<&Path>,
        parts: &ComponentFiles,
        device: SelectedDevice,
        precision: Precision,
        options: LoadOptions,
    ) -> Result<Self> {
        let (spec, layout) = checkpoint_spec(file, config, parts)?;
        let placement = Placement::for_model(spec.family, &spec.vae, precision, &options);
        let open = |component| -> Result<FileWeights> {
            let tensors = TensorFile::open(file)?;
            let names = checkpoint::component_names(&tensors, component, &layout)?;
            Ok(FileWeights::converted(tensors, names))
        };
        let mut te2 = match layout.kind {
            checkpoint::Kind::Sdxl => Some(projected_text_encoder_weights(open(
                checkpoint::Component::TextEncoder2,
            )?)),
            _ => None,
        };
        let vae_source = match &parts.vae {
            Some(vae) => vae_file::vae_file(vae, layout.vae_blocks)?,
            None => open(checkpoint::Component::Vae)?,
        };
        let [te, unet, vae] = &mut [
            text_encoder_weights(open(checkpoint::Component::TextEncoder)?),
            open(checkpoint::Component::UNet)?,
            vae_weights(vae_source),
        ];
        // A checkpoint's parts are SD1.x's, SD2.x's or SDXL's as upstream has them (the layout above
        // reads them by those names).
        let size = ModelSize::upstream(spec.family, spec.vae.sample_size);
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
            ModelSource::Checkpoint {
                file: file.to_path_buf(),
                config: config.map(Path::to_path_buf),
                parts: parts.clone(),
            },
            std::iter::once(file)
                .chain(parts.vae.as_deref())
                .map(Path::to_path_buf)
                .collect(),
        )
        .map_err(|e| match (config, e) {
            // Read with a built-in model's configs: say which, and what else to do.
            (
                None,
                DiffusionError::Tensor {
                    path,
                    tensor,
                    problem,
                },
            ) if problem.contains("config needs") => DiffusionError::Tensor {
                path,
                tensor,
                problem: format!(
                    "{problem}; without --model-config the file is read with {}'s configs, \
                         chosen by its tensor names: a model of other sizes needs --model-config \
                         naming a diffusers folder with its configs",
                    layout.kind.upstream()
                ),
            },
            (_, e) => e,
        })?;
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
        let preset = presets::matching(&spec.clip, spec.clip2.as_ref(), &spec.unet, &spec.vae);
        let fit = FitContext::new(size, spec.vae.clone(), options);
        fit.check_planned(&placement, &device)?;
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
        let unet = load_denoiser(sources.unet, &device, &placement, &options, |l| {
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
        let pipeline = SdPipeline {
            precision: placement.denoiser,
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
            unet: Offloadable::new(unet),
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
        let slot = self.unet.lock();
        let unet = &slot.module;
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

    /// Width of the text embeddings: SDXL's two encoders side by side.
    pub(super) fn text_encoder_width(&self) -> usize {
        self.text_encoder.hidden_size() + self.second.as_ref().map_or(0, |(_, te)| te.hidden_size())
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
                file,
                config,
                parts,
            } => {
                let (mut size, vae) = upstream(checkpoint_spec(file, config.as_deref(), parts)?.0);
                size.denoiser_kept = KeptWeights::of(&TensorFile::open(file)?, |name| {
                    name.starts_with(checkpoint::UNET_PREFIX)
                });
                (size, vae)
            }
        })
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
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
}

/// What Stable Diffusion cannot do for any request, checked before a model is loaded: take
/// reference pictures (its schedulers are the registry's to check).
pub fn check_family_request(request: &GenerateRequest) -> Result<()> {
    if !request.reference_images.is_empty() {
        return Err(DiffusionError::Request(
            "Stable Diffusion models take no reference pictures (--reference-image, the app's \"Reference pictures\", conditions FLUX.2 klein); start from a picture with --init-image (the app's \"Start from a picture\") instead".into(),
        ));
    }
    Ok(())
}

impl FamilyPipeline for SdPipeline {
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
            self.info.vae_scale_factor,
            &self.latent_shape(request),
        )?;
        super::FAMILY.check_request(request)?;
        self.check_fits(&request.shape(&super::FAMILY))?;
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
        Ok(())
    }

    fn generate_with_sync(
        &self,
        request: &GenerateRequest,
        sync: StepSync,
        progress: &mut dyn FnMut(&Progress),
        cancel: &CancelToken,
    ) -> Result<Generated> {
        self.generate(request, sync, progress, cancel)
    }

    fn parameter_counts(&self) -> ParameterCounts {
        ParameterCounts {
            text_encoders: self.text_encoder.num_params()
                + self.second.as_ref().map_or(0, |(_, e)| e.num_params()),
            denoiser: self.unet.lock().module.num_params(),
            vae: self.vae.num_params(),
            vae_encoder: self.vae_encoder.as_ref().map_or(0, |e| e.num_params()),
        }
    }

    fn denoiser_weight_bytes(&self) -> u64 {
        crate::nn::weight_bytes(&self.unet.lock().module)
    }

    fn has_vae_encoder(&self) -> bool {
        self.vae_encoder.is_some()
    }

    fn denoiser_name(&self) -> &'static str {
        "unet"
    }

    fn timed_calls(&self, width: usize, height: usize) -> Result<Vec<TimedCall<'_>>> {
        self.timing_calls(width, height)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A single-file checkpoint's configs (`config`'s, or the built-in SD1.5's, SD2.1's or SDXL
/// base's, by its tensor names) and layout, with its tensor names checked against them: a file of
/// another family, or one missing a component, is refused by name from its header alone. An SD2.x
/// file without configs is read as SD2.1 (768 px, v-prediction), as diffusers reads one (its
/// `global_step` rule for 2.x-base never applies to safetensors files, which do not store it);
/// a 2.x-base file needs `config` naming its folder.
fn checkpoint_spec(
    file: &Path,
    config: Option<&Path>,
    parts: &ComponentFiles,
) -> Result<(ModelSpec, checkpoint::Layout)> {
    crate::io::tensor_file::check_model_file(file)?;
    if let Some(text_encoder) = parts.text_encoders.first() {
        return Err(component_file::not_taken(
            text_encoder,
            "--text-encoder",
            "a Stable Diffusion checkpoint holds its own text encoders (text encoder files go with a transformer file kept apart from its model)",
        ));
    }
    let tensors = TensorFile::open(file)?;
    let spec = match (config, checkpoint::Kind::of(&tensors)) {
        (Some(folder), _) => ModelSpec::read(&ModelLayout::check(folder)?)?,
        (None, checkpoint::Kind::Sdxl) => ModelSpec::builtin(Preset::SDXL_BASE),
        (None, checkpoint::Kind::Sd2) => ModelSpec::builtin(Preset::SD21),
        (None, checkpoint::Kind::Sd1) => ModelSpec::builtin(Preset::SD15),
    };
    let kind = if spec.family == Family::SDXL {
        checkpoint::Kind::Sdxl
    } else if spec.family == Family::SD2 {
        checkpoint::Kind::Sd2
    } else {
        checkpoint::Kind::Sd1
    };
    let layout = checkpoint::Layout {
        unet_layers_per_block: spec.unet.plan(&spec.unet_path)?.layers_per_block,
        vae_blocks: spec.vae.block_out_channels.len(),
        kind,
        text_encoder_layers: spec.clip.num_hidden_layers,
    };
    let mut components = vec![
        checkpoint::Component::TextEncoder,
        checkpoint::Component::UNet,
    ];
    match &parts.vae {
        Some(vae) => {
            vae_file::vae_file(vae, layout.vae_blocks)?;
        }
        None => components.push(checkpoint::Component::Vae),
    }
    if kind == checkpoint::Kind::Sdxl {
        components.push(checkpoint::Component::TextEncoder2);
    }
    for component in components {
        checkpoint::component_names(&tensors, component, &layout)?;
    }
    Ok((spec, layout))
}
