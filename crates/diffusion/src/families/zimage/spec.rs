//! A Z-Image model's configs: a diffusers folder's (Tongyi-MAI/Z-Image-Turbo's layout) or
//! Z-Image-Turbo's, built in.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::transformer::ZImageTransformerConfig;
use crate::error::{DiffusionError, Result};
use crate::models::config::{read_json, VaeConfig};
use crate::models::qwen3::{Qwen3Config, Qwen3Weights};
use crate::pipeline::Preset;
use crate::scheduler::flow_match::FlowMatchConfig;

/// Configs and settings of a Z-Image model, from its folder or built in.
pub struct Spec {
    pub(super) text_encoder: Qwen3Config,
    pub(super) text_encoder_path: PathBuf,
    /// How the text encoder's checkpoint names its tensors (model_index.json's class).
    pub(super) text_weights: Qwen3Weights,
    pub(super) transformer: ZImageTransformerConfig,
    pub(super) transformer_path: PathBuf,
    pub(super) vae: VaeConfig,
    pub(super) vae_path: PathBuf,
    pub(super) scheduler: FlowMatchConfig,
    pub(super) tokenizer: Option<PathBuf>,
}

impl Spec {
    pub(super) fn read(folder: &Path, index: &Map<String, Value>) -> Result<Self> {
        let problem = |problem: String| DiffusionError::ModelFolder {
            path: folder.to_path_buf(),
            problem,
        };
        let sub = |name: &str| -> Result<PathBuf> {
            let p = folder.join(name);
            match p.is_dir() {
                true => Ok(p),
                false => Err(problem(format!(
                    "has no {name}/ folder, which a Z-Image pipeline needs: download the whole model again"
                ))),
            }
        };
        // model_index.json names the text encoder's class: ["transformers", "Qwen3Model"].
        let text_class = index
            .get("text_encoder")
            .and_then(Value::as_array)
            .and_then(|pair| pair.get(1))
            .and_then(Value::as_str);
        let text_weights = match text_class {
            Some("Qwen3Model") | None => Qwen3Weights::Bare,
            Some("Qwen3ForCausalLM") => Qwen3Weights::CausalLm,
            Some(other) => {
                return Err(problem(format!(
                    "has a `{other}` text encoder (model_index.json); Z-Image runs Qwen3Model or Qwen3ForCausalLM"
                )))
            }
        };
        let text_encoder_path = sub("text_encoder")?.join("config.json");
        let transformer_path = sub("transformer")?.join("config.json");
        let vae_path = sub("vae")?.join("config.json");
        let scheduler_path = sub("scheduler")?.join("scheduler_config.json");
        let scheduler: FlowMatchConfig = read_json(&scheduler_path)?;
        scheduler.validate(&scheduler_path)?;
        Ok(Spec {
            text_encoder: read_json(&text_encoder_path)?,
            text_encoder_path,
            text_weights,
            transformer: read_json(&transformer_path)?,
            transformer_path,
            vae: read_json(&vae_path)?,
            vae_path,
            scheduler,
            tokenizer: Some(sub("tokenizer")?),
        })
    }

    /// Tongyi-MAI/Z-Image-Turbo's configs (synthetic weights have no tokenizer file: prompts
    /// become fixed token ids, see `ZImagePipeline::encode_prompt`).
    pub(super) fn turbo() -> Self {
        let here = PathBuf::from(format!(
            "<built-in {} config>",
            Preset::ZIMAGE_TURBO.repository()
        ));
        Spec {
            text_encoder: Qwen3Config::qwen3_4b(),
            text_encoder_path: here.clone(),
            text_weights: Qwen3Weights::Bare,
            transformer: ZImageTransformerConfig::default(),
            transformer_path: here.clone(),
            vae: turbo_vae(),
            vae_path: here,
            scheduler: FlowMatchConfig {
                shift: 3.0,
                ..FlowMatchConfig::default()
            },
            tokenizer: None,
        }
    }

    pub(super) fn validate(&self) -> Result<()> {
        self.text_encoder.validate(&self.text_encoder_path)?;
        self.transformer.validate(&self.transformer_path)?;
        self.vae.validate(&self.vae_path)?;
        if self.transformer.cap_feat_dim != self.text_encoder.hidden_size {
            return Err(DiffusionError::config(
                &self.transformer_path,
                format!(
                    "cap_feat_dim {} differs from the text encoder's hidden_size {}",
                    self.transformer.cap_feat_dim, self.text_encoder.hidden_size
                ),
            ));
        }
        if self.transformer.in_channels != self.vae.latent_channels {
            return Err(DiffusionError::config(
                &self.transformer_path,
                format!(
                    "in_channels {} differs from the VAE's latent_channels {}",
                    self.transformer.in_channels, self.vae.latent_channels
                ),
            ));
        }
        if self.text_encoder.num_hidden_layers < 2 {
            return Err(DiffusionError::config(
                &self.text_encoder_path,
                "the pipeline reads the penultimate hidden state: at least 2 layers",
            ));
        }
        Ok(())
    }

    /// The text encoder's layers the pipeline runs: all but the last (`hidden_states[-2]`).
    pub(super) fn text_layers(&self) -> usize {
        self.text_encoder.num_hidden_layers - 1
    }
}

/// Tongyi-MAI/Z-Image-Turbo's `vae/config.json`: FLUX.1's VAE (16 latent channels, a scaling
/// and a shift factor, no quant convolutions).
pub fn turbo_vae() -> VaeConfig {
    VaeConfig {
        latent_channels: 16,
        sample_size: 1024,
        scaling_factor: 0.3611,
        shift_factor: Some(0.1159),
        use_quant_conv: false,
        use_post_quant_conv: false,
        ..VaeConfig::sd15()
    }
}
