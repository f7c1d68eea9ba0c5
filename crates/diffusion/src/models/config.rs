//! Model configs as diffusers and transformers write them (`config.json` of each component), with the
//! same defaults those libraries use for keys a file lacks. Options the engine does not implement are
//! rejected by `validate` with a message that names the key, never silently ignored.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::io::bounded_text::{read_bounded, MAX_CONFIG_BYTES};

/// `vae/config.json`: diffusers' `AutoencoderKL` (the encoder half only for image-to-image).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct VaeConfig {
    pub in_channels: usize,
    pub out_channels: usize,
    pub down_block_types: Vec<String>,
    pub up_block_types: Vec<String>,
    pub block_out_channels: Vec<usize>,
    pub layers_per_block: usize,
    pub act_fn: String,
    pub latent_channels: usize,
    pub norm_num_groups: usize,
    /// diffusers' default when the key is absent or null.
    #[serde(deserialize_with = "null_as_default_scaling")]
    pub scaling_factor: f64,
    pub use_quant_conv: bool,
    pub use_post_quant_conv: bool,
    pub mid_block_add_attention: bool,
    /// The VAE overflows in f16 and must decode in f32 (SDXL's pipeline honours it; SD1.x/2.x's
    /// do not). The "fp16-fix" SDXL VAE sets it false.
    pub force_upcast: bool,
    /// SD3/FLUX-style latent normalisation: not implemented, refused when set.
    pub shift_factor: Option<f64>,
    pub latents_mean: Option<serde_json::Value>,
    /// The image size the VAE was trained at; diffusers' tiled decoding and encoding use it as the
    /// tile size (see `models::vae_tiling`). A `[height, width]` list counts as its first side, as
    /// diffusers takes it.
    #[serde(deserialize_with = "side_or_sides")]
    pub sample_size: usize,
}

fn side_or_sides<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Sides {
        One(usize),
        Many(Vec<usize>),
    }
    match Sides::deserialize(d)? {
        Sides::One(side) => Ok(side),
        Sides::Many(sides) => sides
            .first()
            .copied()
            .ok_or_else(|| serde::de::Error::custom("`sample_size` is an empty list")),
    }
}

pub(crate) fn null_as_false<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

fn null_as_default_scaling<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(0.18215))
}

impl Default for VaeConfig {
    fn default() -> Self {
        VaeConfig {
            in_channels: 3,
            out_channels: 3,
            down_block_types: vec!["DownEncoderBlock2D".into()],
            up_block_types: vec!["UpDecoderBlock2D".into()],
            block_out_channels: vec![64],
            layers_per_block: 1,
            act_fn: "silu".into(),
            latent_channels: 4,
            norm_num_groups: 32,
            scaling_factor: 0.18215,
            use_quant_conv: true,
            use_post_quant_conv: true,
            mid_block_add_attention: true,
            force_upcast: true,
            shift_factor: None,
            latents_mean: None,
            // diffusers' AutoencoderKL default
            sample_size: 32,
        }
    }
}

impl VaeConfig {
    /// For pipelines that decode `latents / scaling_factor` alone (diffusers' SD and FLUX.2
    /// pipelines ignore a `shift_factor`): refuses a VAE that has one, as decoding without it
    /// would be another model's output.
    pub fn refuse_shift_factor(&self, path: &Path, pipeline: &str) -> Result<()> {
        match self.shift_factor {
            Some(shift) => Err(DiffusionError::unsupported(
                path,
                format!(
                    "VAE shift_factor {shift} (a VAE made for latents with an offset, as SD3's, \
                     FLUX.1's and Z-Image's are) in a {pipeline} pipeline, which decodes without one"
                ),
            )),
            None => Ok(()),
        }
    }

    /// SD1.5's `vae/config.json`.
    pub fn sd15() -> Self {
        VaeConfig {
            down_block_types: vec!["DownEncoderBlock2D".into(); 4],
            up_block_types: vec!["UpDecoderBlock2D".into(); 4],
            block_out_channels: vec![128, 256, 512, 512],
            layers_per_block: 2,
            sample_size: 512,
            ..VaeConfig::default()
        }
    }

    /// Image pixels per latent pixel: 2^(number of blocks - 1), as diffusers computes it.
    pub fn scale_factor(&self) -> usize {
        1 << self.block_out_channels.len().saturating_sub(1)
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        check_block_channels(path, &self.block_out_channels)?;
        check_counts(
            path,
            &[
                ("in_channels", self.in_channels),
                ("out_channels", self.out_channels),
                ("layers_per_block", self.layers_per_block),
                ("latent_channels", self.latent_channels),
                ("norm_num_groups", self.norm_num_groups),
                ("sample_size", self.sample_size),
            ],
        )?;
        self.check_blocks(&self.up_block_types, "up", "UpDecoderBlock2D", path)?;
        if self.act_fn != "silu" {
            return Err(DiffusionError::unsupported(
                path,
                format!("VAE act_fn `{}`", self.act_fn),
            ));
        }
        for &c in &self.block_out_channels {
            if self.norm_num_groups == 0 || c % self.norm_num_groups != 0 {
                return Err(DiffusionError::config(
                    path,
                    format!(
                        "VAE channels {c} are not divisible by norm_num_groups {}",
                        self.norm_num_groups
                    ),
                ));
            }
        }
        if self.latents_mean.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(DiffusionError::unsupported(
                path,
                "VAE option latents_mean (per-channel latent statistics)",
            ));
        }
        if self.shift_factor.is_some_and(|s| !s.is_finite()) {
            return Err(DiffusionError::config(
                path,
                "`shift_factor` must be a number",
            ));
        }
        if !(self.scaling_factor.is_finite() && self.scaling_factor > 0.0) {
            return Err(DiffusionError::config(
                path,
                "`scaling_factor` must be a positive number",
            ));
        }
        Ok(())
    }

    /// `{side}_block_types`: one per `block_out_channels` entry, each the one type the engine builds.
    fn check_blocks(
        &self,
        types: &[String],
        side: &str,
        supported: &str,
        path: &Path,
    ) -> Result<()> {
        if types.len() != self.block_out_channels.len() {
            return Err(DiffusionError::config(
                path,
                format!("`{side}_block_types` must have one entry per `block_out_channels` entry"),
            ));
        }
        match types.iter().find(|t| *t != supported) {
            Some(t) => Err(DiffusionError::unsupported(
                path,
                format!("VAE {side} block type `{t}` (supported: {supported})"),
            )),
            None => Ok(()),
        }
    }

    /// What the encoder half needs besides `validate`'s checks (image-to-image only: a VAE whose
    /// encoder the engine cannot build still decodes).
    pub fn validate_encoder(&self, path: &Path) -> Result<()> {
        self.check_blocks(&self.down_block_types, "down", "DownEncoderBlock2D", path)?;
        if self.in_channels != 3 {
            return Err(DiffusionError::unsupported(
                path,
                format!(
                    "a VAE with {} input channels (RGB images have 3)",
                    self.in_channels
                ),
            ));
        }
        Ok(())
    }
}

/// `text_encoder/config.json`: transformers' `CLIPTextConfig`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct ClipConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub max_position_embeddings: usize,
    pub hidden_act: String,
    pub layer_norm_eps: f64,
    /// Width of `text_projection` (used by `CLIPTextModelWithProjection` only).
    pub projection_dim: usize,
}

impl Default for ClipConfig {
    fn default() -> Self {
        ClipConfig {
            vocab_size: 49408,
            hidden_size: 512,
            intermediate_size: 2048,
            num_hidden_layers: 12,
            num_attention_heads: 8,
            max_position_embeddings: 77,
            hidden_act: "quick_gelu".into(),
            layer_norm_eps: 1e-5,
            projection_dim: 512,
        }
    }
}

impl ClipConfig {
    /// The text encoder of SD1.5 (openai/clip-vit-large-patch14's text half).
    pub fn sd15() -> Self {
        ClipConfig {
            hidden_size: 768,
            intermediate_size: 3072,
            num_attention_heads: 12,
            projection_dim: 768,
            ..ClipConfig::default()
        }
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        check_counts(
            path,
            &[
                ("vocab_size", self.vocab_size),
                ("hidden_size", self.hidden_size),
                ("intermediate_size", self.intermediate_size),
                ("num_hidden_layers", self.num_hidden_layers),
                ("num_attention_heads", self.num_attention_heads),
                ("max_position_embeddings", self.max_position_embeddings),
                ("projection_dim", self.projection_dim),
            ],
        )?;
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(DiffusionError::config(
                path,
                format!(
                    "hidden_size {} is not divisible by num_attention_heads {}",
                    self.hidden_size, self.num_attention_heads
                ),
            ));
        }
        if !matches!(self.hidden_act.as_str(), "quick_gelu" | "gelu") {
            return Err(DiffusionError::unsupported(
                path,
                format!(
                    "text encoder hidden_act `{}` (supported: quick_gelu, gelu)",
                    self.hidden_act
                ),
            ));
        }
        if self.vocab_size == 0 || self.max_position_embeddings == 0 {
            return Err(DiffusionError::config(
                path,
                "vocab_size and max_position_embeddings must be positive",
            ));
        }
        Ok(())
    }
}

/// The largest count or width a config from a stranger may give: far above any released model's
/// (the largest have a few hundred layers and widths of tens of thousands), far below what would
/// make the memory estimate's products or a list of names per layer exhaust memory.
pub const MAX_CONFIG_COUNT: usize = 1 << 20;

/// The most resolution levels (`block_out_channels` entries) a UNet or VAE config may give:
/// SD's have 4, and each halves the latent side.
pub const MAX_BLOCKS: usize = 16;

/// Refuses any of `values` (a config key and its value) that is 0 or above `MAX_CONFIG_COUNT`.
pub fn check_counts(path: &Path, values: &[(&str, usize)]) -> Result<()> {
    match values
        .iter()
        .find(|(_, v)| *v == 0 || *v > MAX_CONFIG_COUNT)
    {
        Some((key, value)) => Err(DiffusionError::config(
            path,
            format!("{key} is {value}; it must be from 1 to {MAX_CONFIG_COUNT}"),
        )),
        None => Ok(()),
    }
}

/// Refuses a UNet's or VAE's `block_out_channels` without 1 to `MAX_BLOCKS` entries, each a count
/// `check_counts` allows.
pub fn check_block_channels(path: &Path, channels: &[usize]) -> Result<()> {
    if channels.is_empty() || channels.len() > MAX_BLOCKS {
        return Err(DiffusionError::config(
            path,
            format!("`block_out_channels` must have 1 to {MAX_BLOCKS} entries"),
        ));
    }
    let counts: Vec<_> = channels
        .iter()
        .map(|&c| ("block_out_channels", c))
        .collect();
    check_counts(path, &counts)
}

/// A component's config and the file it came from (messages name it; a built-in config's is a
/// `<built-in ...>` placeholder).
pub struct ConfigFile<T> {
    pub value: T,
    pub path: PathBuf,
}

impl<T: DeserializeOwned> ConfigFile<T> {
    pub fn read(path: PathBuf) -> Result<Self> {
        Ok(ConfigFile {
            value: read_json(&path)?,
            path,
        })
    }
}

/// Reads and parses one JSON config file; a missing file, bad JSON or a wrongly typed key is an error
/// naming the file.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = read_bounded(path, MAX_CONFIG_BYTES)?;
    parse_json(&text, path)
}

pub fn parse_json<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    // The error names the offending key (e.g. `block_out_channels: invalid type ...`).
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        if key == "." {
            DiffusionError::config(path, inner.to_string())
        } else {
            DiffusionError::config(path, format!("`{key}`: {inner}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::sd::unet::config::UNetConfig;

    // The config files of stable-diffusion-v1-5/stable-diffusion-v1-5, verbatim: they must read
    // as the built-in SD1.5 configs, or a real SD1.5 run would not count as standard.
    const UNET: &str = r#"{"_class_name": "UNet2DConditionModel", "_diffusers_version": "0.6.0",
      "act_fn": "silu", "attention_head_dim": 8, "block_out_channels": [320, 640, 1280, 1280],
      "center_input_sample": false, "cross_attention_dim": 768,
      "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
      "downsample_padding": 1, "flip_sin_to_cos": true, "freq_shift": 0, "in_channels": 4,
      "layers_per_block": 2, "mid_block_scale_factor": 1, "norm_eps": 1e-05, "norm_num_groups": 32,
      "out_channels": 4, "sample_size": 64,
      "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"]}"#;
    const VAE: &str = r#"{"_class_name": "AutoencoderKL", "_diffusers_version": "0.6.0", "act_fn": "silu",
      "block_out_channels": [128, 256, 512, 512],
      "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"],
      "in_channels": 3, "latent_channels": 4, "layers_per_block": 2, "norm_num_groups": 32,
      "out_channels": 3, "sample_size": 512,
      "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"]}"#;
    const TEXT_ENCODER: &str = r#"{"_name_or_path": "openai/clip-vit-large-patch14",
      "architectures": ["CLIPTextModel"], "attention_dropout": 0.0, "bos_token_id": 0, "dropout": 0.0,
      "eos_token_id": 2, "hidden_act": "quick_gelu", "hidden_size": 768, "initializer_factor": 1.0,
      "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-05,
      "max_position_embeddings": 77, "model_type": "clip_text_model", "num_attention_heads": 12,
      "num_hidden_layers": 12, "pad_token_id": 1, "projection_dim": 768, "torch_dtype": "float32",
      "transformers_version": "4.22.0.dev0", "vocab_size": 49408}"#;

    #[test]
    fn vae_block_types_are_checked_per_side() {
        let path = Path::new("vae/config.json");
        let vae = VaeConfig::sd15();
        assert!(vae.validate(path).is_ok() && vae.validate_encoder(path).is_ok());
        let mut up = vae.clone();
        up.up_block_types[1] = "AttnUpDecoderBlock2D".into();
        let err = up.validate(path).unwrap_err().to_string();
        assert!(
            err.contains("up block type `AttnUpDecoderBlock2D`"),
            "{err}"
        );
        // An encoder the engine cannot build does not stop text-to-image.
        let mut down = vae.clone();
        down.down_block_types.pop();
        assert!(down.validate(path).is_ok());
        let err = down.validate_encoder(path).unwrap_err().to_string();
        assert!(
            err.contains("`down_block_types` must have one entry"),
            "{err}"
        );
        down.down_block_types.push("AttnDownEncoderBlock2D".into());
        let err = down.validate_encoder(path).unwrap_err().to_string();
        assert!(
            err.contains("down block type `AttnDownEncoderBlock2D`"),
            "{err}"
        );
    }

    /// diffusers takes a `[height, width]` sample size's first side as the tile.
    /// Z-Image's and FLUX.1's VAEs shift their latents; the pipelines that decode without a
    /// shift refuse them by name, and per-channel statistics are refused everywhere.
    #[test]
    fn a_vae_shift_factor_is_read_and_refused_where_a_pipeline_ignores_it() {
        let here = Path::new("vae/config.json");
        let shifted: VaeConfig = serde_json::from_str(&VAE.replace(
            "\"latent_channels\": 4",
            "\"latent_channels\": 16, \"shift_factor\": 0.1159, \"scaling_factor\": 0.3611",
        ))
        .unwrap();
        assert_eq!(shifted.shift_factor, Some(0.1159));
        assert_eq!(shifted.scaling_factor, 0.3611);
        shifted.validate(here).unwrap();
        let err = shifted
            .refuse_shift_factor(here, "Stable Diffusion")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("shift_factor 0.1159") && err.contains("Stable Diffusion"),
            "{err}"
        );
        VaeConfig::sd15()
            .refuse_shift_factor(here, "Stable Diffusion")
            .unwrap();
        let with_mean: VaeConfig = serde_json::from_str(&VAE.replace(
            "\"in_channels\": 3",
            "\"in_channels\": 3, \"latents_mean\": [0.1, 0.2, 0.3, 0.4]",
        ))
        .unwrap();
        let err = with_mean.validate(here).unwrap_err().to_string();
        assert!(err.contains("latents_mean"), "{err}");
    }

    #[test]
    fn vae_sample_size_may_be_a_list() {
        let listed: VaeConfig = serde_json::from_str(
            &VAE.replace(r#""sample_size": 512"#, r#""sample_size": [768, 768]"#),
        )
        .unwrap();
        assert_eq!(listed.sample_size, 768);
        assert!(serde_json::from_str::<VaeConfig>(
            &VAE.replace(r#""sample_size": 512"#, r#""sample_size": []"#)
        )
        .is_err());
    }

    #[test]
    fn sd15_config_files_read_as_the_built_in_configs() {
        let unet: UNetConfig = serde_json::from_str(UNET).unwrap();
        let vae: VaeConfig = serde_json::from_str(VAE).unwrap();
        let clip: ClipConfig = serde_json::from_str(TEXT_ENCODER).unwrap();
        assert_eq!(unet, UNetConfig::sd15());
        assert_eq!(vae, VaeConfig::sd15());
        assert_eq!(clip, ClipConfig::sd15());
        // SD2's UNet differs (wider cross attention, linear projections): not SD1.5.
        let sd2 = UNET
            .replace(
                r#""cross_attention_dim": 768"#,
                r#""cross_attention_dim": 1024"#,
            )
            .replace(
                r#""attention_head_dim": 8"#,
                r#""attention_head_dim": [5, 10, 20, 20]"#,
            );
        assert_ne!(
            serde_json::from_str::<UNetConfig>(&sd2).unwrap(),
            UNetConfig::sd15()
        );
    }
}
