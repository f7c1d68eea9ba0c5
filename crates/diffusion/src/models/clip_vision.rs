//! transformers' `CLIPVisionModelWithProjection` half of a `CLIPModel`: the picture cut into
//! patches (a convolution whose stride is its size, done here as a matrix product), a class token
//! and position embeddings, a pre-norm ("pre_layrnorm"), CLIP's transformer layers without a mask,
//! the class token's state post-normed and projected by `visual_projection`.

use std::path::Path;

use burn::module::Param;
use burn::prelude::*;
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::io::weights::Init;
use crate::models::clip::ClipLayer;
use crate::models::config::{check_counts, ClipConfig};
use crate::nn::loader::Loader;
use crate::nn::{LayerNorm, Linear};

/// `vision_config` of a `CLIPModel`'s config.json (openai/clip-vit-large-patch14's by default).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct ClipVisionConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub image_size: usize,
    pub patch_size: usize,
    pub num_channels: usize,
    pub hidden_act: String,
    pub layer_norm_eps: f64,
}

impl Default for ClipVisionConfig {
    fn default() -> Self {
        ClipVisionConfig {
            hidden_size: 1024,
            intermediate_size: 4096,
            num_hidden_layers: 24,
            num_attention_heads: 16,
            image_size: 224,
            patch_size: 14,
            num_channels: 3,
            hidden_act: "quick_gelu".into(),
            layer_norm_eps: 1e-5,
        }
    }
}

/// A `CLIPModel`'s config.json: both towers, the shared projection width, and the text tower's
/// end-of-text id (which decides where its pooled output is read).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ClipModelConfig {
    pub text_config: ClipConfig,
    pub vision_config: ClipVisionConfig,
    #[serde(default = "default_projection")]
    pub projection_dim: usize,
    #[serde(skip)]
    pub text_eos_token_id: u32,
}

fn default_projection() -> usize {
    768
}

#[derive(Deserialize)]
struct TextIds {
    #[serde(default)]
    eos_token_id: Option<u32>,
}

#[derive(Deserialize)]
struct RawTextIds {
    text_config: TextIds,
}

impl ClipModelConfig {
    /// Reads and checks `path` (a `CLIPModel`'s config.json).
    pub fn read(path: &Path) -> Result<Self> {
        let mut config: ClipModelConfig = crate::models::config::read_json(path)?;
        let ids: RawTextIds = crate::models::config::read_json(path)?;
        // transformers' default, and openai's CLIP configs' (a legacy value: see `pooled_at`).
        config.text_eos_token_id = ids.text_config.eos_token_id.unwrap_or(2);
        // The text tower's projection is the model's, whatever its own config says.
        config.text_config.projection_dim = config.projection_dim;
        config.text_config.validate(path)?;
        config.vision_config.validate(path)?;
        Ok(config)
    }
}

impl ClipVisionConfig {
    pub fn validate(&self, path: &Path) -> Result<()> {
        check_counts(
            path,
            &[
                ("vision hidden_size", self.hidden_size),
                ("vision intermediate_size", self.intermediate_size),
                ("vision num_hidden_layers", self.num_hidden_layers),
                ("vision num_attention_heads", self.num_attention_heads),
                ("vision image_size", self.image_size),
                ("vision patch_size", self.patch_size),
            ],
        )?;
        let bad = |problem: String| Err(DiffusionError::config(path, problem));
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "vision hidden_size {} is not divisible by num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if !self.image_size.is_multiple_of(self.patch_size) || self.image_size > 1024 {
            return bad(format!(
                "vision image_size {} must be a multiple of patch_size {} and at most 1024",
                self.image_size, self.patch_size
            ));
        }
        if self.num_channels != 3 {
            return bad(format!(
                "a vision tower of {} channels (pictures have 3)",
                self.num_channels
            ));
        }
        if !matches!(self.hidden_act.as_str(), "quick_gelu" | "gelu") {
            return Err(DiffusionError::unsupported(
                path,
                format!(
                    "vision hidden_act `{}` (supported: quick_gelu, gelu)",
                    self.hidden_act
                ),
            ));
        }
        Ok(())
    }

    /// Patches a side.
    pub fn grid(&self) -> usize {
        self.image_size / self.patch_size
    }
}

#[derive(Module, Debug)]
pub struct ClipVisionModel<B: Backend> {
    /// The patch convolution's weight as a matrix: [3·patch·patch, hidden].
    patch_embedding: Param<Tensor<B, 2>>,
    class_embedding: Param<Tensor<B, 1>>,
    position_embedding: Param<Tensor<B, 2>>,
    pre_layrnorm: LayerNorm<B>,
    layers: Vec<ClipLayer<B>>,
    post_layernorm: LayerNorm<B>,
    visual_projection: Linear<B>,
    heads: usize,
    patch: usize,
    quick_gelu: bool,
}

/// Tensors of a `CLIPModel` file neither tower reads.
pub const IGNORED: &[&str] = &[
    "logit_scale",
    "text_model.embeddings.position_ids",
    "vision_model.embeddings.position_ids",
];

impl<B: Backend> ClipVisionModel<B> {
    pub fn load(
        config: &ClipVisionConfig,
        projection_dim: usize,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        let (d, p) = (config.hidden_size, config.patch_size);
        let eps = config.layer_norm_eps;
        let patches = config.grid() * config.grid();
        let conv = loader.tensor(
            "vision_model.embeddings.patch_embedding.weight",
            [d, 3, p, p],
            Init::FanIn(3 * p * p),
        )?;
        let class_embedding = loader.tensor(
            "vision_model.embeddings.class_embedding",
            [d],
            Init::FanIn(d),
        )?;
        let position_embedding = loader.tensor(
            "vision_model.embeddings.position_embedding.weight",
            [patches + 1, d],
            Init::FanIn(d),
        )?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let prefix = format!("vision_model.encoder.layers.{i}");
            layers.push(ClipLayer::load(
                loader,
                &prefix,
                d,
                config.intermediate_size,
                eps,
            )?);
        }
        Ok(ClipVisionModel {
            patch_embedding: Param::from_tensor(conv.reshape([d, 3 * p * p]).transpose()),
            class_embedding: Param::from_tensor(class_embedding),
            position_embedding: Param::from_tensor(position_embedding),
            pre_layrnorm: loader.layer_norm("vision_model.pre_layrnorm", d, eps)?,
            layers,
            post_layernorm: loader.layer_norm("vision_model.post_layernorm", d, eps)?,
            visual_projection: loader.linear("visual_projection", d, projection_dim, false)?,
            heads: config.num_attention_heads,
            patch: p,
            quick_gelu: config.hidden_act == "quick_gelu",
        })
    }

    /// `pixels`: [N, 3, S, S] normalised as the model's processor does (S its image size) ->
    /// the image features `get_image_features` gives: [N, projection_dim].
    pub fn forward(&self, pixels: Tensor<B, 4>) -> Tensor<B, 2> {
        let [n, c, h, w] = pixels.dims();
        let p = self.patch;
        let (gh, gw) = (h / p, w / p);
        let d = self.class_embedding.dims()[0];
        // Non-overlapping patches, each flattened as the convolution's weight is: (c, y, x).
        let patches = pixels
            .reshape([n, c, gh, p, gw, p])
            .permute([0, 2, 4, 1, 3, 5])
            .reshape([n * gh * gw, c * p * p]);
        let embedded = patches
            .matmul(self.patch_embedding.val())
            .reshape([n, gh * gw, d]);
        let class = self
            .class_embedding
            .val()
            .reshape([1, 1, d])
            .repeat_dim(0, n);
        let tokens =
            Tensor::cat(vec![class, embedded], 1) + self.position_embedding.val().unsqueeze::<3>();
        let mut x = self.pre_layrnorm.forward(tokens);
        for layer in &self.layers {
            x = layer.forward(x, self.heads, false, self.quick_gelu);
        }
        let class_state = self.post_layernorm.forward(x.narrow(1, 0, 1));
        let features = self.visual_projection.forward(class_state);
        let width = features.dims()[2];
        features.reshape([n, width])
    }
}
