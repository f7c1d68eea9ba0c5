//! Model configs as diffusers and transformers write them (`config.json` of each component), with the
//! same defaults those libraries use for keys a file lacks. Options the engine does not implement are
//! rejected by `validate` with a message that names the key, never silently ignored.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::{DiffusionError, Result};

/// A config value that diffusers accepts either as one number for every block or as a list.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum PerBlock<T> {
    One(T),
    Each(Vec<T>),
}

impl<T: Clone> PerBlock<T> {
    /// The value for each of `blocks` blocks, or an error naming `key` when a list has the wrong length.
    pub fn expand(&self, blocks: usize, key: &str, path: &Path) -> Result<Vec<T>> {
        match self {
            PerBlock::One(v) => Ok(vec![v.clone(); blocks]),
            PerBlock::Each(list) if list.len() == blocks => Ok(list.clone()),
            PerBlock::Each(list) => Err(DiffusionError::config(
                path,
                format!(
                    "`{key}` lists {} values but there are {blocks} blocks",
                    list.len()
                ),
            )),
        }
    }
}

/// `unet/config.json`: diffusers' `UNet2DConditionModel`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct UNetConfig {
    pub in_channels: usize,
    pub out_channels: usize,
    pub center_input_sample: bool,
    pub flip_sin_to_cos: bool,
    pub freq_shift: f32,
    pub down_block_types: Vec<String>,
    pub mid_block_type: Option<String>,
    pub up_block_types: Vec<String>,
    pub only_cross_attention: PerBlock<bool>,
    pub block_out_channels: Vec<usize>,
    pub layers_per_block: PerBlock<usize>,
    pub downsample_padding: usize,
    pub mid_block_scale_factor: f32,
    pub act_fn: String,
    pub norm_num_groups: usize,
    pub norm_eps: f64,
    pub cross_attention_dim: PerBlock<usize>,
    pub transformer_layers_per_block: PerBlock<usize>,
    /// The head count in SD1.5-style configs (diffusers' long-standing naming quirk).
    pub attention_head_dim: PerBlock<usize>,
    pub num_attention_heads: Option<PerBlock<usize>>,
    pub dual_cross_attention: bool,
    pub use_linear_projection: bool,
    pub class_embed_type: Option<String>,
    /// "text_time" (SDXL): a pooled text embedding and six size/crop ids join the time embedding.
    pub addition_embed_type: Option<String>,
    /// Width of each size/crop id's sinusoidal embedding (SDXL: 256).
    pub addition_time_embed_dim: Option<usize>,
    /// Input width of `add_embedding`: pooled text width + 6 x `addition_time_embed_dim` (SDXL: 2816).
    pub projection_class_embeddings_input_dim: Option<usize>,
    pub num_class_embeds: Option<usize>,
    /// SDXL's file has `null` here: read as false.
    #[serde(deserialize_with = "null_as_false")]
    pub upcast_attention: bool,
    pub resnet_time_scale_shift: String,
    pub resnet_skip_time_act: bool,
    pub resnet_out_scale_factor: f32,
    pub time_embedding_type: String,
    pub time_embedding_dim: Option<usize>,
    pub time_embedding_act_fn: Option<String>,
    pub timestep_post_act: Option<String>,
    pub time_cond_proj_dim: Option<usize>,
    pub conv_in_kernel: usize,
    pub conv_out_kernel: usize,
    pub encoder_hid_dim: Option<usize>,
    pub cross_attention_norm: Option<String>,
    pub attention_type: String,
    pub mid_block_only_cross_attention: Option<bool>,
    pub reverse_transformer_layers_per_block: Option<serde_json::Value>,
}

impl Default for UNetConfig {
    /// diffusers' constructor defaults.
    fn default() -> Self {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        UNetConfig {
            in_channels: 4,
            out_channels: 4,
            center_input_sample: false,
            flip_sin_to_cos: true,
            freq_shift: 0.0,
            down_block_types: strings(&[
                "CrossAttnDownBlock2D",
                "CrossAttnDownBlock2D",
                "CrossAttnDownBlock2D",
                "DownBlock2D",
            ]),
            mid_block_type: Some("UNetMidBlock2DCrossAttn".into()),
            up_block_types: strings(&[
                "UpBlock2D",
                "CrossAttnUpBlock2D",
                "CrossAttnUpBlock2D",
                "CrossAttnUpBlock2D",
            ]),
            only_cross_attention: PerBlock::One(false),
            block_out_channels: vec![320, 640, 1280, 1280],
            layers_per_block: PerBlock::One(2),
            downsample_padding: 1,
            mid_block_scale_factor: 1.0,
            act_fn: "silu".into(),
            norm_num_groups: 32,
            norm_eps: 1e-5,
            cross_attention_dim: PerBlock::One(1280),
            transformer_layers_per_block: PerBlock::One(1),
            attention_head_dim: PerBlock::One(8),
            num_attention_heads: None,
            dual_cross_attention: false,
            use_linear_projection: false,
            class_embed_type: None,
            addition_embed_type: None,
            addition_time_embed_dim: None,
            projection_class_embeddings_input_dim: None,
            num_class_embeds: None,
            upcast_attention: false,
            resnet_time_scale_shift: "default".into(),
            resnet_skip_time_act: false,
            resnet_out_scale_factor: 1.0,
            time_embedding_type: "positional".into(),
            time_embedding_dim: None,
            time_embedding_act_fn: None,
            timestep_post_act: None,
            time_cond_proj_dim: None,
            conv_in_kernel: 3,
            conv_out_kernel: 3,
            encoder_hid_dim: None,
            cross_attention_norm: None,
            attention_type: "default".into(),
            mid_block_only_cross_attention: None,
            reverse_transformer_layers_per_block: None,
        }
    }
}

/// What the UNet builder needs per down block, resolved from the config's scalars and lists.
#[derive(Debug, Clone)]
pub struct UNetBlockPlan {
    pub layers_per_block: Vec<usize>,
    pub heads: Vec<usize>,
    pub cross_attention_dim: Vec<usize>,
    pub transformer_layers: Vec<usize>,
}

impl UNetConfig {
    /// SD1.5's `unet/config.json` (stable-diffusion-v1-5/stable-diffusion-v1-5), for synthetic weights.
    pub fn sd15() -> Self {
        UNetConfig {
            cross_attention_dim: PerBlock::One(768),
            ..UNetConfig::default()
        }
    }

    /// Checks every option against what the engine implements and resolves per-block values.
    pub fn plan(&self, path: &Path) -> Result<UNetBlockPlan> {
        let unsupported = |what: String| Err(DiffusionError::unsupported(path, what));
        let blocks = self.block_out_channels.len();
        if blocks == 0 {
            return Err(DiffusionError::config(
                path,
                "`block_out_channels` is empty",
            ));
        }
        if self.down_block_types.len() != blocks || self.up_block_types.len() != blocks {
            return Err(DiffusionError::config(
                path,
                format!(
                    "`down_block_types` ({}) and `up_block_types` ({}) must each have one entry per `block_out_channels` entry ({blocks})",
                    self.down_block_types.len(),
                    self.up_block_types.len()
                ),
            ));
        }
        for t in &self.down_block_types {
            if t != "CrossAttnDownBlock2D" && t != "DownBlock2D" {
                return unsupported(format!(
                    "down block type `{t}` (supported: CrossAttnDownBlock2D, DownBlock2D)"
                ));
            }
        }
        for t in &self.up_block_types {
            if t != "CrossAttnUpBlock2D" && t != "UpBlock2D" {
                return unsupported(format!(
                    "up block type `{t}` (supported: CrossAttnUpBlock2D, UpBlock2D)"
                ));
            }
        }
        match self.mid_block_type.as_deref() {
            None | Some("UNetMidBlock2DCrossAttn") => {}
            Some(other) => {
                return unsupported(format!(
                    "mid block type `{other}` (supported: UNetMidBlock2DCrossAttn)"
                ))
            }
        }
        if self.num_attention_heads.is_some() {
            // diffusers itself refuses this key for UNet2DConditionModel.
            return unsupported(
                "`num_attention_heads` (diffusers rejects it too; use `attention_head_dim`)".into(),
            );
        }
        match self.addition_embed_type.as_deref() {
            None => {}
            Some("text_time")
                if self.addition_time_embed_dim.is_none()
                    || self.projection_class_embeddings_input_dim.is_none() =>
            {
                return Err(DiffusionError::config(
                    path,
                    "addition_embed_type \"text_time\" needs addition_time_embed_dim and projection_class_embeddings_input_dim",
                ));
            }
            Some("text_time") => {}
            Some(other) => {
                return unsupported(format!(
                    "addition_embed_type `{other}` (supported: text_time)"
                ))
            }
        }
        let checks: [(bool, &str); 16] = [
            (self.center_input_sample, "center_input_sample = true"),
            (self.dual_cross_attention, "dual_cross_attention = true"),
            (self.class_embed_type.is_some(), "class_embed_type"),
            (self.num_class_embeds.is_some(), "num_class_embeds"),
            (
                self.resnet_time_scale_shift != "default",
                "resnet_time_scale_shift other than \"default\"",
            ),
            (self.resnet_skip_time_act, "resnet_skip_time_act = true"),
            (
                self.resnet_out_scale_factor != 1.0,
                "resnet_out_scale_factor other than 1",
            ),
            (
                self.time_embedding_type != "positional",
                "time_embedding_type other than \"positional\"",
            ),
            (
                self.time_embedding_act_fn.is_some(),
                "time_embedding_act_fn",
            ),
            (self.timestep_post_act.is_some(), "timestep_post_act"),
            (self.time_cond_proj_dim.is_some(), "time_cond_proj_dim"),
            (self.encoder_hid_dim.is_some(), "encoder_hid_dim"),
            (self.cross_attention_norm.is_some(), "cross_attention_norm"),
            (
                self.attention_type != "default",
                "attention_type other than \"default\"",
            ),
            (self.act_fn != "silu", "act_fn other than \"silu\""),
            (
                self.mid_block_only_cross_attention == Some(true),
                "mid_block_only_cross_attention = true",
            ),
        ];
        for (bad, what) in checks {
            if bad {
                return unsupported(format!("option {what}"));
            }
        }
        if self
            .reverse_transformer_layers_per_block
            .as_ref()
            .is_some_and(|v| !v.is_null())
        {
            return unsupported("option reverse_transformer_layers_per_block".into());
        }
        if self
            .only_cross_attention
            .expand(blocks, "only_cross_attention", path)?
            .contains(&true)
        {
            return unsupported("option only_cross_attention = true".into());
        }
        if self.conv_in_kernel.is_multiple_of(2) || self.conv_out_kernel.is_multiple_of(2) {
            return Err(DiffusionError::config(
                path,
                "conv_in_kernel and conv_out_kernel must be odd",
            ));
        }
        for &c in &self.block_out_channels {
            if self.norm_num_groups == 0 || c % self.norm_num_groups != 0 {
                return Err(DiffusionError::config(
                    path,
                    format!(
                        "block channels {c} are not divisible by norm_num_groups {}",
                        self.norm_num_groups
                    ),
                ));
            }
        }
        let heads = self
            .attention_head_dim
            .expand(blocks, "attention_head_dim", path)?;
        for (i, (&h, &c)) in heads.iter().zip(&self.block_out_channels).enumerate() {
            if h == 0 || c % h != 0 {
                return Err(DiffusionError::config(
                    path,
                    format!("block {i}: {c} channels cannot be split into {h} attention heads"),
                ));
            }
        }
        Ok(UNetBlockPlan {
            layers_per_block: self
                .layers_per_block
                .expand(blocks, "layers_per_block", path)?,
            heads,
            cross_attention_dim: self.cross_attention_dim.expand(
                blocks,
                "cross_attention_dim",
                path,
            )?,
            transformer_layers: self.transformer_layers_per_block.expand(
                blocks,
                "transformer_layers_per_block",
                path,
            )?,
        })
    }
}

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

fn null_as_false<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
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
        if self.block_out_channels.is_empty() {
            return Err(DiffusionError::config(
                path,
                "`block_out_channels` is empty",
            ));
        }
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
        if self.shift_factor.is_some() || self.latents_mean.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(DiffusionError::unsupported(
                path,
                "VAE option shift_factor / latents_mean (an SD3 or FLUX VAE)",
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
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
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

/// Reads and parses one JSON config file; a missing file, bad JSON or a wrongly typed key is an error
/// naming the file.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| DiffusionError::io(path, e))?;
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
