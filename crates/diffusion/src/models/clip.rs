//! transformers' `CLIPTextModel` and `CLIPTextModelWithProjection`: token and position embeddings,
//! pre-norm transformer layers with a causal mask, final layer norm, and (with projection) the pooled
//! output projected by `text_projection`. SD1.x and SD2.x condition on the last hidden state; SDXL on
//! the penultimate one of both encoders and the second encoder's projected pooled output.

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::activation;

use crate::error::Result;
use crate::io::weights::Init;
use crate::models::config::ClipConfig;
use crate::nn::loader::Loader;
use crate::nn::{multi_head_attention, LayerNorm, Linear};

/// One pre-norm transformer layer of CLIP's text or vision tower.
#[derive(Module, Debug)]
pub(crate) struct ClipLayer<B: Backend> {
    layer_norm1: LayerNorm<B>,
    q_proj: Linear<B>,
    k_proj: Linear<B>,
    v_proj: Linear<B>,
    out_proj: Linear<B>,
    layer_norm2: LayerNorm<B>,
    fc1: Linear<B>,
    fc2: Linear<B>,
}

impl<B: Backend> ClipLayer<B> {
    /// The layer at `p` (`text_model.encoder.layers.3`): width `d`, MLP width `inner`.
    pub(crate) fn load(
        loader: &mut Loader<B>,
        p: &str,
        d: usize,
        inner: usize,
        eps: f64,
    ) -> Result<Self> {
        Ok(ClipLayer {
            layer_norm1: loader.layer_norm(&format!("{p}.layer_norm1"), d, eps)?,
            q_proj: loader.linear(&format!("{p}.self_attn.q_proj"), d, d, true)?,
            k_proj: loader.linear(&format!("{p}.self_attn.k_proj"), d, d, true)?,
            v_proj: loader.linear(&format!("{p}.self_attn.v_proj"), d, d, true)?,
            out_proj: loader.linear(&format!("{p}.self_attn.out_proj"), d, d, true)?,
            layer_norm2: loader.layer_norm(&format!("{p}.layer_norm2"), d, eps)?,
            fc1: loader.linear(&format!("{p}.mlp.fc1"), d, inner, true)?,
            fc2: loader.linear(&format!("{p}.mlp.fc2"), inner, d, true)?,
        })
    }

    /// [N, S, d] -> [N, S, d]; `causal`: each position attends to itself and those before.
    pub(crate) fn forward(
        &self,
        x: Tensor<B, 3>,
        heads: usize,
        causal: bool,
        quick_gelu: bool,
    ) -> Tensor<B, 3> {
        let h = self.layer_norm1.forward(x.clone());
        let attn = multi_head_attention(
            self.q_proj.forward(h.clone()),
            self.k_proj.forward(h.clone()),
            self.v_proj.forward(h),
            heads,
            causal,
            false,
        );
        let x = x + self.out_proj.forward(attn);
        let h = self.fc1.forward(self.layer_norm2.forward(x.clone()));
        let h = if quick_gelu {
            h.clone() * activation::sigmoid(h * 1.702)
        } else {
            activation::gelu(h)
        };
        x + self.fc2.forward(h)
    }
}

#[derive(Module, Debug)]
pub struct ClipTextModel<B: Backend> {
    token_embedding: Param<Tensor<B, 2>>,
    position_embedding: Param<Tensor<B, 2>>,
    layers: Vec<ClipLayer<B>>,
    final_layer_norm: LayerNorm<B>,
    /// `CLIPTextModelWithProjection`'s `text_projection` (no bias): hidden -> projection_dim.
    text_projection: Option<Linear<B>>,
    heads: usize,
    quick_gelu: bool,
}

/// One text encoder call.
pub struct TextEncoderOutput<B: Backend> {
    /// After the final layer norm: [N, S, hidden].
    pub last_hidden_state: Tensor<B, 3>,
    /// The input of the last layer, not normed (transformers' `hidden_states[-2]`): [N, S, hidden].
    pub penultimate: Tensor<B, 3>,
}

/// Tensors in CLIP checkpoints that the text model does not use (without projection).
pub const IGNORED_PREFIXES: &[&str] = &[
    "text_model.embeddings.position_ids",
    "embeddings.position_ids",
    "text_projection",
];

/// The same for `CLIPTextModelWithProjection`, which uses `text_projection`.
pub const IGNORED_WITH_PROJECTION: &[&str] = &[
    "text_model.embeddings.position_ids",
    "embeddings.position_ids",
];

/// transformers 5 saves `CLIPTextModel` without the `text_model.` prefix that SD1.5's files have.
pub const ALIASES: &[(&str, &str)] = &[("text_model.", "")];

impl<B: Backend> ClipTextModel<B> {
    /// `with_projection`: load `text_projection` too (`CLIPTextModelWithProjection`).
    pub fn load(
        config: &ClipConfig,
        with_projection: bool,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        let d = config.hidden_size;
        let eps = config.layer_norm_eps;
        // The vocabulary table (76 MB for SD1.5 in f16, 253 MB for SDXL's second encoder in f32)
        // is read 77 rows per prompt: in host memory that costs nothing, leaves the device's
        // memory to the UNet, and stays clear of devices whose largest storage binding is
        // 128 MiB (Mesa's lavapipe, older Intel drivers), which cannot hold it in one buffer.
        let token_embedding = loader.host_tensor(
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
            layers.push(ClipLayer::load(
                loader,
                &p,
                d,
                config.intermediate_size,
                eps,
            )?);
        }
        Ok(ClipTextModel {
            token_embedding: Param::from_tensor(token_embedding),
            position_embedding: Param::from_tensor(position_embedding),
            layers,
            final_layer_norm: loader.layer_norm("text_model.final_layer_norm", d, eps)?,
            text_projection: if with_projection {
                Some(loader.linear("text_projection", d, config.projection_dim, false)?)
            } else {
                None
            },
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

    /// Width of the pooled output: `projection_dim` with a projection, else `hidden`.
    pub fn pooled_size(&self) -> usize {
        match &self.text_projection {
            Some(p) => p.outputs(),
            None => self.hidden_size(),
        }
    }

    /// `ids`: [N, S] token ids (S <= max positions) -> hidden states, each [N, S, hidden].
    pub fn forward(&self, ids: Tensor<B, 2, Int>) -> TextEncoderOutput<B> {
        let [n, s] = ids.dims();
        let d = self.token_embedding.dims()[1];
        let table = self.token_embedding.val();
        let (host, device) = (table.device(), ids.device());
        let tokens = table
            .select(0, ids.reshape([n * s]).to_device(&host))
            .to_device(&device)
            .reshape([n, s, d]);
        let positions = self
            .position_embedding
            .val()
            .narrow(0, 0, s)
            .reshape([1, s, d]);
        let mut x = tokens + positions;
        let mut penultimate = x.clone();
        for (i, layer) in self.layers.iter().enumerate() {
            if i + 1 == self.layers.len() {
                penultimate = x.clone();
            }
            x = layer.forward(x, self.heads, true, self.quick_gelu);
        }
        TextEncoderOutput {
            last_hidden_state: self.final_layer_norm.forward(x),
            penultimate,
        }
    }

    /// transformers' pooled output: each row's last hidden state at its end-of-text token
    /// (`eos_positions`, one per row), through `text_projection` when the model has one.
    /// [N, S, hidden] -> [N, pooled_size]
    pub fn pooled(&self, last_hidden_state: Tensor<B, 3>, eos_positions: &[usize]) -> Tensor<B, 2> {
        let [n, s, d] = last_hidden_state.dims();
        let rows: Vec<i64> = eos_positions
            .iter()
            .enumerate()
            .map(|(i, &p)| (i * s + p) as i64)
            .collect();
        let index = Tensor::<B, 1, Int>::from_data(
            burn::tensor::TensorData::new(rows, [n]),
            &last_hidden_state.device(),
        );
        let pooled = last_hidden_state.reshape([n * s, d]).select(0, index);
        match &self.text_projection {
            Some(p) => p.forward(pooled),
            None => pooled,
        }
    }
}
