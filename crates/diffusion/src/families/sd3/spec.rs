//! A Stable Diffusion 3 model's configs: a diffusers folder's (stabilityai's repositories'
//! layout) or a preset's, built in.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::transformer::Sd3TransformerConfig;
use crate::error::{DiffusionError, Result};
use crate::models::config::{read_json, ClipConfig, ConfigFile, VaeConfig};
use crate::models::t5::T5Config;
use crate::scheduler::flow_match::FlowMatchConfig;

/// The tokenizers' folders (a folder has all three, or two without T5; synthetic weights none).
pub(super) struct TokenizerFolders {
    pub(super) clip_l: PathBuf,
    pub(super) clip_g: PathBuf,
    pub(super) t5: Option<PathBuf>,
}

/// Configs and settings of an SD3 model, from its folder or built in.
pub(super) struct Spec {
    pub(super) clip_l: ConfigFile<ClipConfig>,
    pub(super) clip_g: ConfigFile<ClipConfig>,
    /// `None`: the pipeline runs without T5 (`text_encoder_3` null in model_index.json), its
    /// part of the conditioning zeros.
    pub(super) t5: Option<ConfigFile<T5Config>>,
    pub(super) transformer: ConfigFile<Sd3TransformerConfig>,
    pub(super) vae: ConfigFile<VaeConfig>,
    pub(super) scheduler: FlowMatchConfig,
    pub(super) tokenizers: Option<TokenizerFolders>,
}

/// Whether model_index.json lists `component` with a class (a `[null, null]` entry, or none,
/// means the pipeline goes without it).
fn listed(index: &Map<String, Value>, component: &str) -> bool {
    index
        .get(component)
        .and_then(Value::as_array)
        .is_some_and(|pair| pair.iter().all(|v| !v.is_null()))
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
                        "has no {name}/ folder, which a Stable Diffusion 3 pipeline needs: download the whole model again"
                    ),
                }),
            }
        };
        let network = |name: &str| -> Result<PathBuf> { Ok(sub(name)?.join("config.json")) };
        let with_t5 = listed(index, "text_encoder_3");
        let t5 = match with_t5 {
            true => Some(ConfigFile::read(network("text_encoder_3")?)?),
            false => None,
        };
        let scheduler_path = sub("scheduler")?.join("scheduler_config.json");
        let scheduler: FlowMatchConfig = read_json(&scheduler_path)?;
        scheduler.validate(&scheduler_path)?;
        Ok(Spec {
            clip_l: ConfigFile::read(network("text_encoder")?)?,
            clip_g: ConfigFile::read(network("text_encoder_2")?)?,
            t5,
            transformer: ConfigFile::read(network("transformer")?)?,
            vae: ConfigFile::read(network("vae")?)?,
            scheduler,
            tokenizers: Some(TokenizerFolders {
                clip_l: sub("tokenizer")?,
                clip_g: sub("tokenizer_2")?,
                t5: with_t5.then(|| sub("tokenizer_3")).transpose()?,
            }),
        })
    }

    /// A preset's configs (`repository` names them in messages): its transformer, and the text
    /// encoders, VAE and scheduler every SD3 and SD3.5 repository shares.
    pub(super) fn built_in(repository: &str, transformer: Sd3TransformerConfig) -> Self {
        let here = PathBuf::from(format!("<built-in {repository} config>"));
        let config = |value| ConfigFile {
            value,
            path: here.clone(),
        };
        Spec {
            clip_l: config(clip_l()),
            clip_g: config(clip_g()),
            t5: Some(ConfigFile {
                value: T5Config::xxl(),
                path: here.clone(),
            }),
            transformer: ConfigFile {
                value: transformer,
                path: here.clone(),
            },
            vae: ConfigFile {
                value: sd3_vae(),
                path: here.clone(),
            },
            scheduler: FlowMatchConfig {
                shift: 3.0,
                ..FlowMatchConfig::default()
            },
            tokenizers: None,
        }
    }

    pub(super) fn validate(&self) -> Result<()> {
        self.clip_l.value.validate(&self.clip_l.path)?;
        self.clip_g.value.validate(&self.clip_g.path)?;
        if let Some(t5) = &self.t5 {
            t5.value.validate(&t5.path)?;
        }
        let transformer = &self.transformer.value;
        let path = &self.transformer.path;
        transformer.validate(path)?;
        self.vae.value.validate(&self.vae.path)?;
        let mismatch = |problem: String| Err(DiffusionError::config(path, problem));
        let clip_width = self.clip_l.value.hidden_size + self.clip_g.value.hidden_size;
        if clip_width > transformer.joint_attention_dim {
            return mismatch(format!(
                "joint_attention_dim {} is narrower than the two CLIP encoders' widths side by side ({clip_width})",
                transformer.joint_attention_dim
            ));
        }
        if let Some(t5) = &self.t5 {
            if t5.value.d_model != transformer.joint_attention_dim {
                return mismatch(format!(
                    "joint_attention_dim {} differs from the T5 encoder's d_model {}",
                    transformer.joint_attention_dim, t5.value.d_model
                ));
            }
        }
        let pooled = self.clip_l.value.projection_dim + self.clip_g.value.projection_dim;
        if pooled != transformer.pooled_projection_dim {
            return mismatch(format!(
                "pooled_projection_dim {} differs from the two CLIP projections' widths together ({pooled})",
                transformer.pooled_projection_dim
            ));
        }
        if transformer.in_channels != self.vae.value.latent_channels {
            return mismatch(format!(
                "in_channels {} differs from the VAE's latent_channels {}",
                transformer.in_channels, self.vae.value.latent_channels
            ));
        }
        for clip in [&self.clip_l, &self.clip_g] {
            if clip.value.num_hidden_layers < 2 {
                return Err(DiffusionError::config(
                    &clip.path,
                    "the pipeline reads the penultimate hidden state: at least 2 layers",
                ));
            }
        }
        Ok(())
    }
}

/// CLIP ViT-L/14's text encoder with its projection (`text_encoder/`).
pub(super) fn clip_l() -> ClipConfig {
    ClipConfig::sd15()
}

/// OpenCLIP ViT-bigG/14's text encoder with its projection (`text_encoder_2/`).
pub(super) fn clip_g() -> ClipConfig {
    ClipConfig {
        hidden_size: 1280,
        intermediate_size: 5120,
        num_hidden_layers: 32,
        num_attention_heads: 20,
        hidden_act: "gelu".into(),
        projection_dim: 1280,
        ..ClipConfig::default()
    }
}

/// The SD3 repositories' `vae/config.json`: 16 latent channels, a scaling and a shift factor, no
/// quant convolutions.
pub(super) fn sd3_vae() -> VaeConfig {
    VaeConfig {
        latent_channels: 16,
        sample_size: 1024,
        scaling_factor: 1.5305,
        shift_factor: Some(0.0609),
        use_quant_conv: false,
        use_post_quant_conv: false,
        ..VaeConfig::sd15()
    }
}
