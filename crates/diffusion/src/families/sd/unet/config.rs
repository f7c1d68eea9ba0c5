//! `unet/config.json`: diffusers' `UNet2DConditionModel` as Stable Diffusion's pipelines use it,
//! with the same defaults for keys a file lacks; options the UNet does not implement are rejected
//! by `plan` with a message that names the key.

use std::path::Path;

use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::models::config::null_as_false;

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
        let blocks = self.block_out_channels.len();
        crate::models::config::check_block_channels(path, &self.block_out_channels)?;
        crate::models::config::check_counts(
            path,
            &[
                ("in_channels", self.in_channels),
                ("out_channels", self.out_channels),
                ("norm_num_groups", self.norm_num_groups),
            ],
        )?;
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
        self.check_block_types(path)?;
        self.check_embeddings(path)?;
        self.check_options(blocks, path)?;
        self.check_channels(path)?;
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

    /// The down, up and mid block types the engine builds.
    fn check_block_types(&self, path: &Path) -> Result<()> {
        let unsupported = |what: String| Err(DiffusionError::unsupported(path, what));
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
        Ok(())
    }

    /// The heads key diffusers refuses, and SDXL's added embedding.
    fn check_embeddings(&self, path: &Path) -> Result<()> {
        let unsupported = |what: String| Err(DiffusionError::unsupported(path, what));
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
        Ok(())
    }

    /// Options that change what a block computes, which the engine does not implement.
    fn check_options(&self, blocks: usize, path: &Path) -> Result<()> {
        let unsupported = |what: String| Err(DiffusionError::unsupported(path, what));
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
        Ok(())
    }

    /// Kernel sizes and group counts the layers can be built with.
    fn check_channels(&self, path: &Path) -> Result<()> {
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
        Ok(())
    }
}
