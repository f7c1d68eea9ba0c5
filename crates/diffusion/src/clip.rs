//! transformers' `CLIPTextModel`: token and position embeddings, pre-norm transformer layers with a
//! causal mask, final layer norm. Returns `last_hidden_state`, which is what SD conditions on.

use burn::prelude::*;
use burn::tensor::activation;

use crate::config::ClipConfig;
use crate::error::Result;
use crate::nn::{multi_head_attention, LayerNorm, Linear};
use crate::weights::{Init, Loader};

struct ClipLayer<B: Backend> {
    layer_norm1: LayerNorm<B>,
    q_proj: Linear<B>,
    k_proj: Linear<B>,
    v_proj: Linear<B>,
    out_proj: Linear<B>,
    layer_norm2: LayerNorm<B>,
    fc1: Linear<B>,
    fc2: Linear<B>,
}

pub struct ClipTextModel<B: Backend> {
    token_embedding: Tensor<B, 2>,
    position_embedding: Tensor<B, 2>,
    layers: Vec<ClipLayer<B>>,
    final_layer_norm: LayerNorm<B>,
    heads: usize,
    quick_gelu: bool,
}

/// Tensors in CLIP checkpoints that the text model does not use.
pub const IGNORED_PREFIXES: &[&str] = &[
    "text_model.embeddings.position_ids",
    "embeddings.position_ids",
    "text_projection",
];

/// transformers 5 saves `CLIPTextModel` without the `text_model.` prefix that SD1.5's files have.
pub const ALIASES: &[(&str, &str)] = &[("text_model.", "")];

impl<B: Backend> ClipTextModel<B> {
    pub fn load(config: &ClipConfig, loader: &mut Loader<B>) -> Result<Self> {
        let d = config.hidden_size;
        let eps = config.layer_norm_eps;
        let token_embedding = loader.tensor(
            "text_model.embeddings.token_embedding.weight",
            [config.vocab_size, d],
            Init::FanIn(d),
        )?;
        let position_embedding = loader.tensor(
            "text_model.embeddings.position_embedding.weight",
            [config.max_position_embeddings, d],
            Init::FanIn(d),
        )?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("text_model.encoder.layers.{i}");
            layers.push(ClipLayer {
                layer_norm1: loader.layer_norm(&format!("{p}.layer_norm1"), d, eps)?,
                q_proj: loader.linear(&format!("{p}.self_attn.q_proj"), d, d, true)?,
                k_proj: loader.linear(&format!("{p}.self_attn.k_proj"), d, d, true)?,
                v_proj: loader.linear(&format!("{p}.self_attn.v_proj"), d, d, true)?,
                out_proj: loader.linear(&format!("{p}.self_attn.out_proj"), d, d, true)?,
                layer_norm2: loader.layer_norm(&format!("{p}.layer_norm2"), d, eps)?,
                fc1: loader.linear(&format!("{p}.mlp.fc1"), d, config.intermediate_size, true)?,
                fc2: loader.linear(&format!("{p}.mlp.fc2"), config.intermediate_size, d, true)?,
            });
        }
        Ok(ClipTextModel {
            token_embedding,
            position_embedding,
            layers,
            final_layer_norm: loader.layer_norm("text_model.final_layer_norm", d, eps)?,
            heads: config.num_attention_heads,
            quick_gelu: config.hidden_act == "quick_gelu",
        })
    }

    pub fn max_positions(&self) -> usize {
        self.position_embedding.dims()[0]
    }

    pub fn hidden_size(&self) -> usize {
        self.token_embedding.dims()[1]
    }

    pub fn vocab_size(&self) -> usize {
        self.token_embedding.dims()[0]
    }

    /// `ids`: [N, S] token ids (S <= max positions) -> last hidden state [N, S, hidden].
    pub fn forward(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        let [n, s] = ids.dims();
        let d = self.token_embedding.dims()[1];
        let tokens = self
            .token_embedding
            .clone()
            .select(0, ids.reshape([n * s]))
            .reshape([n, s, d]);
        let positions = self
            .position_embedding
            .clone()
            .narrow(0, 0, s)
            .reshape([1, s, d]);
        let mut x = tokens + positions;
        for layer in &self.layers {
            let h = layer.layer_norm1.forward(x.clone());
            let attn = multi_head_attention(
                layer.q_proj.forward(h.clone()),
                layer.k_proj.forward(h.clone()),
                layer.v_proj.forward(h),
                self.heads,
                true,
                false,
            );
            x = x + layer.out_proj.forward(attn);
            let h = layer.fc1.forward(layer.layer_norm2.forward(x.clone()));
            let h = if self.quick_gelu {
                h.clone() * activation::sigmoid(h * 1.702)
            } else {
                activation::gelu(h)
            };
            x = x + layer.fc2.forward(h);
        }
        self.final_layer_norm.forward(x)
    }
}
