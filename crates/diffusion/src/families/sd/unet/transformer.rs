//! diffusers' `Transformer2DModel` (continuous input) with `BasicTransformerBlock`s: self-attention,
//! cross-attention on the text embedding, and a GEGLU feed-forward, each pre-norm with a residual.

use burn::prelude::*;
use burn::tensor::activation;

use crate::error::Result;
use crate::nn::loader::Loader;
use crate::nn::{multi_head_attention_within, Conv2d, GroupNorm, LayerNorm, Linear};

/// diffusers' `Attention` as used in the UNet: no q/k/v bias, an output projection with bias.
#[derive(Module, Debug)]
pub struct Attention<B: Backend> {
    to_q: Linear<B>,
    to_k: Linear<B>,
    to_v: Linear<B>,
    to_out: Linear<B>,
    heads: usize,
    upcast: bool,
    /// Score elements per attention call (`nn::multi_head_attention_within`).
    score_budget: usize,
}

impl<B: Backend> Attention<B> {
    fn load(
        prefix: &str,
        dim: usize,
        context_dim: usize,
        heads: usize,
        upcast: bool,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        Ok(Attention {
            to_q: loader.linear(&format!("{prefix}.to_q"), dim, dim, false)?,
            to_k: loader.linear(&format!("{prefix}.to_k"), context_dim, dim, false)?,
            to_v: loader.linear(&format!("{prefix}.to_v"), context_dim, dim, false)?,
            to_out: loader.linear(&format!("{prefix}.to_out.0"), dim, dim, true)?,
            heads,
            upcast,
            score_budget: loader.attention_score_budget,
        })
    }

    /// `x`: [N, S, dim], `context`: [N, Sc, context_dim] -> [N, S, dim]
    fn forward(&self, x: Tensor<B, 3>, context: Tensor<B, 3>) -> Tensor<B, 3> {
        let q = self.to_q.forward(x);
        let k = self.to_k.forward(context.clone());
        let v = self.to_v.forward(context);
        self.to_out.forward(multi_head_attention_within(
            q,
            k,
            v,
            self.heads,
            false,
            self.upcast,
            self.score_budget,
        ))
    }
}

#[derive(Module, Debug)]
struct BasicTransformerBlock<B: Backend> {
    norm1: LayerNorm<B>,
    attn1: Attention<B>,
    norm2: LayerNorm<B>,
    attn2: Attention<B>,
    norm3: LayerNorm<B>,
    /// GEGLU input projection: dim -> 2 * inner (hidden half, gate half).
    ff_proj: Linear<B>,
    ff_out: Linear<B>,
}

impl<B: Backend> BasicTransformerBlock<B> {
    fn forward(&self, x: Tensor<B, 3>, context: &Tensor<B, 3>) -> Tensor<B, 3> {
        let h = self.norm1.forward(x.clone());
        let x = x + self.attn1.forward(h.clone(), h);
        let x = x.clone() + self.attn2.forward(self.norm2.forward(x), context.clone());
        let h = self.ff_proj.forward(self.norm3.forward(x.clone()));
        let [hidden, gate] = h.chunk(2, 2).try_into().expect("GEGLU splits in two");
        x + self.ff_out.forward(hidden * activation::gelu(gate))
    }
}

#[derive(Module, Debug)]
enum Projection<B: Backend> {
    Conv(Conv2d<B>),
    Linear(Linear<B>),
}

#[derive(Module, Debug)]
pub struct Transformer2DModel<B: Backend> {
    norm: GroupNorm<B>,
    proj_in: Projection<B>,
    blocks: Vec<BasicTransformerBlock<B>>,
    proj_out: Projection<B>,
}

pub struct TransformerSpec {
    pub channels: usize,
    pub heads: usize,
    pub layers: usize,
    pub context_dim: usize,
    pub groups: usize,
    pub linear_projection: bool,
    pub upcast_attention: bool,
}

impl<B: Backend> Transformer2DModel<B> {
    pub fn load(prefix: &str, spec: &TransformerSpec, loader: &mut Loader<B>) -> Result<Self> {
        let c = spec.channels;
        let projection = |name: &str, loader: &mut Loader<B>| -> Result<Projection<B>> {
            let p = format!("{prefix}.{name}");
            Ok(if spec.linear_projection {
                Projection::Linear(loader.linear(&p, c, c, true)?)
            } else {
                Projection::Conv(loader.conv2d(&p, c, c, 1, 1, 0)?)
            })
        };
        // diffusers fixes this GroupNorm's eps at 1e-6 regardless of the UNet's norm_eps.
        let norm = loader.group_norm(&format!("{prefix}.norm"), spec.groups, c, 1e-6)?;
        let proj_in = projection("proj_in", loader)?;
        let mut blocks = Vec::with_capacity(spec.layers);
        for i in 0..spec.layers {
            let p = format!("{prefix}.transformer_blocks.{i}");
            let inner = 4 * c;
            blocks.push(BasicTransformerBlock {
                norm1: loader.layer_norm(&format!("{p}.norm1"), c, 1e-5)?,
                attn1: Attention::load(
                    &format!("{p}.attn1"),
                    c,
                    c,
                    spec.heads,
                    spec.upcast_attention,
                    loader,
                )?,
                norm2: loader.layer_norm(&format!("{p}.norm2"), c, 1e-5)?,
                attn2: Attention::load(
                    &format!("{p}.attn2"),
                    c,
                    spec.context_dim,
                    spec.heads,
                    spec.upcast_attention,
                    loader,
                )?,
                norm3: loader.layer_norm(&format!("{p}.norm3"), c, 1e-5)?,
                ff_proj: loader.linear(&format!("{p}.ff.net.0.proj"), c, 2 * inner, true)?,
                ff_out: loader.linear(&format!("{p}.ff.net.2"), inner, c, true)?,
            });
        }
        let proj_out = projection("proj_out", loader)?;
        Ok(Transformer2DModel {
            norm,
            proj_in,
            blocks,
            proj_out,
        })
    }

    /// `x`: [N, C, H, W], `context`: [N, Sc, context_dim] -> [N, C, H, W]
    pub fn forward(&self, x: Tensor<B, 4>, context: &Tensor<B, 3>) -> Tensor<B, 4> {
        let [n, c, h, w] = x.dims();
        let residual = x.clone();
        let x = self.norm.forward(x);
        let to_tokens = |t: Tensor<B, 4>| t.reshape([n, c, h * w]).swap_dims(1, 2);
        let mut tokens = match &self.proj_in {
            Projection::Conv(conv) => to_tokens(conv.forward(x)),
            Projection::Linear(linear) => linear.forward(to_tokens(x)),
        };
        for block in &self.blocks {
            tokens = block.forward(tokens, context);
        }
        let to_image = |t: Tensor<B, 3>| t.swap_dims(1, 2).reshape([n, c, h, w]);
        let out = match &self.proj_out {
            Projection::Conv(conv) => conv.forward(to_image(tokens)),
            Projection::Linear(linear) => to_image(linear.forward(tokens)),
        };
        out + residual
    }
}
