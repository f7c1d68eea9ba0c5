//! What a Stable Diffusion model is made of, read before any weight: the folder's layout, its
//! configs (or a preset's), the weight file of each component and their parameter counts.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::presets;
use crate::error::{DiffusionError, Result};
use crate::families::sd::unet::config::UNetConfig;
use crate::io::file_weights::FileWeights;
use crate::io::kept_weights::KeptWeights;
use crate::io::sharded::stored_parameters;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{choose_weights_file, Precision, WeightSource};
use crate::models::clip;
use crate::models::config::{read_json, ClipConfig, VaeConfig};
use crate::models::tokenizer::Tokenizer;
use crate::models::vae;
use crate::pipeline::memory_need::ModelSize;
use crate::pipeline::{folder_index, Family, Preset};
use crate::scheduler::SchedulerKind;

/// Text encoder files: transformers 5 names, and tensors the engine does not use.
pub(super) fn text_encoder_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(clip::ALIASES)
        .ignoring(clip::IGNORED_PREFIXES)
}

/// `CLIPTextModelWithProjection` files (SDXL's text_encoder_2): `text_projection` is used.
pub(super) fn projected_text_encoder_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(clip::ALIASES)
        .ignoring(clip::IGNORED_WITH_PROJECTION)
}

/// A model folder's weight files, one per component.
pub(super) struct FolderFiles {
    pub(super) text_encoder: PathBuf,
    pub(super) text_encoder_2: Option<PathBuf>,
    pub(super) unet: PathBuf,
    pub(super) vae: PathBuf,
}

impl FolderFiles {
    /// Each component's file for a run in `precision` with the VAE in `vae_precision` (the
    /// `.fp16` variants first in f16).
    pub(super) fn choose(
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
    pub(super) fn model_size(&self, spec: &ModelSpec) -> Result<ModelSize> {
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
            denoiser_params: stored_parameters(&self.unet, |_| true)?,
            denoiser_full_precision_params: 0,
            vae_decoder_params: stored_parameters(&self.vae, |name| !encoder(name))?,
            vae_encoder_params: stored_parameters(&self.vae, encoder)?,
            vae_tile: spec.vae.sample_size,
            denoiser_kept: KeptWeights::of(&TensorFile::open(&self.unet)?, |_| true),
        })
    }
}

/// Where each component's weights come from.
pub(super) struct Sources<'a> {
    pub(super) text_encoder: &'a mut dyn WeightSource,
    pub(super) text_encoder_2: Option<&'a mut dyn WeightSource>,
    pub(super) unet: &'a mut dyn WeightSource,
    pub(super) vae: &'a mut dyn WeightSource,
}

/// VAE files: legacy attention names, and the encoder, which text-to-image does not read.
pub(super) fn vae_weights(file: FileWeights) -> FileWeights {
    file.with_aliases(vae::LEGACY_ALIASES)
        .ignoring(vae::ENCODER_PREFIXES)
}

/// Everything a pipeline needs besides its weights: configs, tokenizer and scheduler settings.
pub(super) struct ModelSpec {
    pub(super) family: Family,
    pub(super) clip: ClipConfig,
    /// SDXL's second text encoder and tokenizer.
    pub(super) clip2: Option<ClipConfig>,
    pub(super) tokenizer2: Option<Tokenizer>,
    pub(super) force_zeros_for_empty_prompt: bool,
    pub(super) unet: UNetConfig,
    pub(super) unet_path: PathBuf,
    pub(super) vae: VaeConfig,
    pub(super) vae_path: PathBuf,
    pub(super) tokenizer: Tokenizer,
    pub(super) scheduler_config: Map<String, Value>,
    pub(super) scheduler_path: PathBuf,
    pub(super) default_scheduler: SchedulerKind,
}

impl ModelSpec {
    /// The configs of a diffusers model folder, each checked against what the engine implements.
    pub(super) fn read(layout: &ModelLayout) -> Result<Self> {
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
            Family::SDXL
        } else if clip.hidden_act == "gelu" {
            Family::SD2
        } else {
            Family::SD1
        };
        let unet_path = layout.unet.join("config.json");
        let unet: UNetConfig = read_json(&unet_path)?;
        unet.plan(&unet_path)?;
        // Checked before any weights are read: SDXL's UNet takes the pooled embedding and size ids.
        let text_time = unet.addition_embed_type.is_some();
        if text_time != (family == Family::SDXL) {
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
        vae.refuse_shift_factor(&vae_path, "Stable Diffusion")?;
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
    pub(super) fn builtin(preset: Preset) -> Self {
        let here = PathBuf::from(format!("<built-in {} config>", preset.repository()));
        let c = presets::configs(preset).expect("a Stable Diffusion preset");
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
            force_zeros_for_empty_prompt: preset.family() == Family::SDXL,
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

pub(super) fn default_scheduler(config: &Map<String, Value>, path: &Path) -> Result<SchedulerKind> {
    let class = config
        .get("_class_name")
        .and_then(Value::as_str)
        .ok_or_else(|| DiffusionError::config(path, "`_class_name` is missing"))?;
    SchedulerKind::from_class_name(class, config, path)
}

/// The component folders of a diffusers model folder, checked to exist.
pub(super) struct ModelLayout {
    pub(super) tokenizer: PathBuf,
    pub(super) text_encoder: PathBuf,
    /// SDXL's second tokenizer and text encoder.
    pub(super) tokenizer_2: Option<PathBuf>,
    pub(super) text_encoder_2: Option<PathBuf>,
    /// model_index.json's `force_zeros_for_empty_prompt` (SDXL; diffusers' default true).
    pub(super) force_zeros_for_empty_prompt: bool,
    pub(super) unet: PathBuf,
    pub(super) vae: PathBuf,
    pub(super) scheduler: PathBuf,
}

impl ModelLayout {
    pub(super) fn check(folder: &Path) -> Result<Self> {
        let problem = |problem: String| DiffusionError::ModelFolder {
            path: folder.to_path_buf(),
            problem,
        };
        let index = folder_index(folder)?;
        let sdxl = match index.get("_class_name").and_then(Value::as_str) {
            Some("StableDiffusionXLPipeline") => true,
            Some(class) if !super::FAMILY.claims(class) => {
                return Err(problem(format!(
                    "holds a `{class}` (model_index.json), which is not a Stable Diffusion pipeline"
                )))
            }
            _ => false,
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
