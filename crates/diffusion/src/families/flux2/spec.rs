//! What a FLUX.2 klein model is made of, read before any weight: its folder's configs (or the
//! built-in FLUX.2-klein-4B ones), checked against each other, and each component's weight files.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::transformer::Flux2TransformerConfig;
use super::{klein_vae, Flux2VaeExtras, HIDDEN_STATE_LAYERS, KLEIN_SCHEDULER};
use crate::error::{DiffusionError, Result};
use crate::models::config::{parse_json, read_json, VaeConfig};
use crate::models::qwen3::Qwen3Config;
use crate::pipeline::Preset;
use crate::scheduler::flow_match::FlowMatchConfig;

/// Configs and settings of a FLUX.2 klein model, from its folder or built in.
pub struct Spec {
    pub(super) text_encoder: Qwen3Config,
    pub(super) text_encoder_path: PathBuf,
    pub(super) transformer: Flux2TransformerConfig,
    pub(super) transformer_path: PathBuf,
    pub(super) vae: VaeConfig,
    pub(super) vae_extras: Flux2VaeExtras,
    pub(super) vae_path: PathBuf,
    pub(super) scheduler: FlowMatchConfig,
    pub(super) is_distilled: bool,
    pub(super) tokenizer: Option<PathBuf>,
}

impl Spec {
    pub(super) fn read(folder: &Path, index: &Map<String, Value>) -> Result<Self> {
        let sub = |name: &str| -> Result<PathBuf> {
            let p = folder.join(name);
            match p.is_dir() {
                true => Ok(p),
                false => Err(DiffusionError::ModelFolder {
                    path: folder.to_path_buf(),
                    problem: format!(
                        "has no {name}/ folder, which a FLUX.2 klein pipeline needs: download the whole model again"
                    ),
                }),
            }
        };
        let text_encoder_path = sub("text_encoder")?.join("config.json");
        let transformer_path = sub("transformer")?.join("config.json");
        let vae_path = sub("vae")?.join("config.json");
        let scheduler_path = sub("scheduler")?.join("scheduler_config.json");
        let vae: VaeConfig = read_json(&vae_path)?;
        let vae_extras: Flux2VaeExtras = read_json(&vae_path)?;
        let scheduler: FlowMatchConfig = read_json(&scheduler_path)?;
        scheduler.validate(&scheduler_path)?;
        Ok(Spec {
            text_encoder: read_json(&text_encoder_path)?,
            text_encoder_path,
            transformer: read_json(&transformer_path)?,
            transformer_path,
            vae,
            vae_extras,
            vae_path,
            scheduler,
            is_distilled: index
                .get("is_distilled")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            tokenizer: Some(sub("tokenizer")?),
        })
    }

    /// FLUX.2-klein-4B's configs (synthetic weights have no tokenizer file: prompts become fixed
    /// token ids, see `encode_prompt`).
    pub(super) fn klein_4b() -> Self {
        let here = PathBuf::from(format!(
            "<built-in {} config>",
            Preset::FLUX2_KLEIN_4B.repository()
        ));
        Spec {
            text_encoder: Qwen3Config::qwen3_4b(),
            text_encoder_path: here.clone(),
            transformer: Flux2TransformerConfig::klein_4b(),
            transformer_path: here.clone(),
            vae: klein_vae(),
            vae_extras: Flux2VaeExtras::default(),
            vae_path: here.clone(),
            scheduler: parse_json(KLEIN_SCHEDULER, &here).expect("built-in scheduler config"),
            is_distilled: true,
            tokenizer: None,
        }
    }

    pub(super) fn validate(&self) -> Result<()> {
        self.text_encoder.validate(&self.text_encoder_path)?;
        self.transformer.validate(&self.transformer_path)?;
        self.vae.validate(&self.vae_path)?;
        self.vae
            .refuse_shift_factor(&self.vae_path, "FLUX.2 klein")?;
        self.vae_extras.validate(&self.vae, &self.vae_path)?;
        let stacked = HIDDEN_STATE_LAYERS.len() * self.text_encoder.hidden_size;
        let problem = if self.transformer.joint_attention_dim != stacked {
            Some(format!(
                "the transformer's joint_attention_dim ({}) is not {} stacked text-encoder hidden states of {} ({stacked})",
                self.transformer.joint_attention_dim,
                HIDDEN_STATE_LAYERS.len(),
                self.text_encoder.hidden_size
            ))
        } else if self.transformer.in_channels != 4 * self.vae.latent_channels {
            Some(format!(
                "the transformer takes {} channels but the VAE's 2x2 patches have {}",
                self.transformer.in_channels,
                4 * self.vae.latent_channels
            ))
        } else {
            None
        };
        match problem {
            Some(problem) => Err(DiffusionError::config(
                &self.transformer_path,
                format!("inconsistent components: {problem}"),
            )),
            None => Ok(()),
        }
    }

    /// Whether these configs are FLUX.2-klein-4B's architecture (a fine-tune of it computes
    /// exactly what it does): the transformer's config, the text encoder's shape and the VAE's.
    pub(super) fn is_klein_4b(&self) -> bool {
        let (te, klein) = (&self.text_encoder, Qwen3Config::qwen3_4b());
        let same_encoder = (
            te.vocab_size,
            te.hidden_size,
            te.intermediate_size,
            te.num_hidden_layers,
            te.num_attention_heads,
            te.num_key_value_heads,
            te.head_dim,
        ) == (
            klein.vocab_size,
            klein.hidden_size,
            klein.intermediate_size,
            klein.num_hidden_layers,
            klein.num_attention_heads,
            klein.num_key_value_heads,
            klein.head_dim,
        );
        let vae = klein_vae();
        self.transformer == Flux2TransformerConfig::klein_4b()
            && same_encoder
            && self.vae.latent_channels == vae.latent_channels
            && self.vae.block_out_channels == vae.block_out_channels
            && self.vae.layers_per_block == vae.layers_per_block
    }

    /// The text encoder's layers the pipeline runs.
    pub(super) fn text_layers(&self) -> usize {
        super::text_layers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_klein_4b_configs_are_consistent_and_sized_as_upstream() {
        let spec = Spec::klein_4b();
        spec.validate().unwrap();
        assert!(spec.is_klein_4b());
        assert!(spec.is_distilled && spec.tokenizer.is_none());
        // Qwen3-4B: 4,022,468,096 parameters with its final norm (2,560), which the pipeline
        // never runs.
        assert_eq!(spec.text_encoder.parameters(36) + 2560, 4_022_468_096);
        // The "4B" transformer.
        let transformer = spec.transformer.parameters();
        assert!(
            (3_800_000_000..4_000_000_000).contains(&transformer),
            "{transformer}"
        );
    }
}
