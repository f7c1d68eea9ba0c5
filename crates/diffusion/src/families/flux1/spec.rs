//! A FLUX.1 model's configs: a diffusers folder's (black-forest-labs' repositories' layout) or a
//! preset's, built in.

use std::path::{Path, PathBuf};

use super::transformer::Flux1TransformerConfig;
use crate::error::{DiffusionError, Result};
use crate::models::config::{read_json, ClipConfig, ConfigFile, VaeConfig};
use crate::models::t5::T5Config;
use crate::scheduler::flow_match::FlowMatchConfig;

/// The tokenizers' folders (synthetic weights have none).
pub(super) struct TokenizerFolders {
    pub(super) clip: PathBuf,
    pub(super) t5: PathBuf,
}

/// Configs and settings of a FLUX.1 model, from its folder or built in.
pub(super) struct Spec {
    pub(super) clip: ConfigFile<ClipConfig>,
    pub(super) t5: ConfigFile<T5Config>,
    pub(super) transformer: ConfigFile<Flux1TransformerConfig>,
    pub(super) vae: ConfigFile<VaeConfig>,
    pub(super) scheduler: FlowMatchConfig,
    pub(super) tokenizers: Option<TokenizerFolders>,
}

impl Spec {
    pub(super) fn read(folder: &Path) -> Result<Self> {
        let sub = |name: &str| -> Result<PathBuf> {
            let p = folder.join(name);
            match p.is_dir() {
                true => Ok(p),
                false => Err(DiffusionError::ModelFolder {
                    path: folder.to_path_buf(),
                    problem: format!(
                        "has no {name}/ folder, which a FLUX.1 pipeline needs: download the whole model again"
                    ),
                }),
            }
        };
        let network = |name: &str| -> Result<PathBuf> { Ok(sub(name)?.join("config.json")) };
        let scheduler_path = sub("scheduler")?.join("scheduler_config.json");
        let scheduler: FlowMatchConfig = read_json(&scheduler_path)?;
        scheduler.validate(&scheduler_path)?;
        Ok(Spec {
            clip: ConfigFile::read(network("text_encoder")?)?,
            t5: ConfigFile::read(network("text_encoder_2")?)?,
            transformer: ConfigFile::read(network("transformer")?)?,
            vae: ConfigFile::read(network("vae")?)?,
            scheduler,
            tokenizers: Some(TokenizerFolders {
                clip: sub("tokenizer")?,
                t5: sub("tokenizer_2")?,
            }),
        })
    }

    /// A preset's configs (`repository` names them in messages): its transformer and scheduler,
    /// and the text encoders and VAE every FLUX.1 repository shares.
    pub(super) fn built_in(
        repository: &str,
        transformer: Flux1TransformerConfig,
        scheduler: FlowMatchConfig,
    ) -> Self {
        let here = PathBuf::from(format!("<built-in {repository} config>"));
        Spec {
            clip: ConfigFile {
                value: ClipConfig::sd15(),
                path: here.clone(),
            },
            t5: ConfigFile {
                value: T5Config::xxl(),
                path: here.clone(),
            },
            transformer: ConfigFile {
                value: transformer,
                path: here.clone(),
            },
            vae: ConfigFile {
                value: flux1_vae(),
                path: here,
            },
            scheduler,
            tokenizers: None,
        }
    }

    pub(super) fn validate(&self) -> Result<()> {
        self.clip.value.validate(&self.clip.path)?;
        self.t5.value.validate(&self.t5.path)?;
        let transformer = &self.transformer.value;
        let path = &self.transformer.path;
        transformer.validate(path)?;
        self.vae.value.validate(&self.vae.path)?;
        let mismatch = |problem: String| Err(DiffusionError::config(path, problem));
        if self.clip.value.hidden_size != transformer.pooled_projection_dim {
            return mismatch(format!(
                "pooled_projection_dim {} differs from the CLIP text encoder's width {}",
                transformer.pooled_projection_dim, self.clip.value.hidden_size
            ));
        }
        if self.t5.value.d_model != transformer.joint_attention_dim {
            return mismatch(format!(
                "joint_attention_dim {} differs from the T5 encoder's d_model {}",
                transformer.joint_attention_dim, self.t5.value.d_model
            ));
        }
        if transformer.in_channels != 4 * self.vae.value.latent_channels {
            return mismatch(format!(
                "in_channels {} is not the VAE's 2x2 patches of {} latent channels",
                transformer.in_channels, self.vae.value.latent_channels
            ));
        }
        Ok(())
    }

    /// The tokens T5's prompt is padded and cut to: 512 for a model with a guidance embedding
    /// ([dev], diffusers' `max_sequence_length` default), 256 without (schnell, as Black Forest
    /// Labs run it).
    pub(super) fn t5_tokens(&self) -> usize {
        match self.transformer.value.guidance_embeds {
            true => super::DEV_T5_TOKENS,
            false => super::SCHNELL_T5_TOKENS,
        }
    }
}

/// The FLUX.1 repositories' `vae/config.json`: 16 latent channels, a scaling and a shift factor,
/// no quant convolutions.
pub(super) fn flux1_vae() -> VaeConfig {
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

/// black-forest-labs/FLUX.1-schnell's `scheduler/scheduler_config.json`: a static shift of 1.
pub(super) fn schnell_scheduler() -> FlowMatchConfig {
    FlowMatchConfig {
        shift: 1.0,
        use_dynamic_shifting: false,
        ..FlowMatchConfig::default()
    }
}

/// black-forest-labs/FLUX.1-dev's: shifted by the image's token count.
pub(super) fn dev_scheduler() -> FlowMatchConfig {
    FlowMatchConfig {
        shift: 3.0,
        use_dynamic_shifting: true,
        ..FlowMatchConfig::default()
    }
}
