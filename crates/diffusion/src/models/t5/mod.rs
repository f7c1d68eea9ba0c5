//! transformers' `T5EncoderModel` as T5 v1.1 has it (the T5-XXL text encoder pipelines ship):
//! token embeddings, pre-norm layers of self-attention and a gated-GELU feed-forward,
//! `T5LayerNorm` (RMS, no bias), no biases and no attention scaling, relative position buckets
//! (bidirectional) computed in the first layer and shared by all, the final norm. The pipelines
//! call it without an attention mask, on prompts padded to their sequence length, and so does
//! this. In f16 each layer's output is clamped below f16's maximum, as transformers does.

use std::path::Path;

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{DType, TensorData};
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::io::weights::Init;
use crate::nn::loader::Loader;
use crate::nn::{gelu_tanh, Linear, RmsNorm};

pub mod folder;
pub mod llama_cpp_names;
pub mod prompt;

/// `text_encoder_3/config.json`: transformers' `T5Config`, with its defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct T5Config {
    pub vocab_size: usize,
    pub d_model: usize,
    pub d_kv: usize,
    pub d_ff: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub relative_attention_num_buckets: usize,
    pub relative_attention_max_distance: usize,
    pub layer_norm_epsilon: f64,
    /// "gated-gelu" for T5 v1.1 (the `gelu_new` activation), "relu" for the original T5.
    pub feed_forward_proj: String,
    /// transformers reads the activation from `dense_act_fn` when it is set.
    pub dense_act_fn: Option<String>,
}

impl Default for T5Config {
    fn default() -> Self {
        T5Config {
            vocab_size: 32128,
            d_model: 512,
            d_kv: 64,
            d_ff: 2048,
            num_layers: 6,
            num_heads: 8,
            relative_attention_num_buckets: 32,
            relative_attention_max_distance: 128,
            layer_norm_epsilon: 1e-6,
            feed_forward_proj: "relu".into(),
            dense_act_fn: None,
        }
    }
}

/// The feed-forward's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FeedForward {
    /// T5 v1.1: `wo(gelu_new(wi_0 x) * wi_1 x)`.
    GatedGelu,
    /// The original T5: `wo(relu(wi x))`.
    Relu,
}

impl T5Config {
    /// google/t5-v1_1-xxl's encoder, as pipelines ship it.
    pub fn xxl() -> Self {
        T5Config {
            d_model: 4096,
            d_kv: 64,
            d_ff: 10240,
            num_layers: 24,
            num_heads: 64,
            feed_forward_proj: "gated-gelu".into(),
            dense_act_fn: Some("gelu_new".into()),
            ..T5Config::default()
        }
    }

    /// Parameters of the encoder (embeddings, layers, norms).
    pub fn parameters(&self) -> u64 {
        let (d, inner, ff) = (self.d_model, self.num_heads * self.d_kv, self.d_ff);
        let ff_mats = if self.feed_forward_proj.starts_with("gated") {
            3
        } else {
            2
        };
        let layer = 4 * d * inner + ff_mats * d * ff + 2 * d;
        let bias_table = self.relative_attention_num_buckets * self.num_heads;
        (self.vocab_size * d + self.num_layers * layer + bias_table + d) as u64
    }

    fn feed_forward(&self, path: &Path) -> Result<FeedForward> {
        let (gated, act) = match self.feed_forward_proj.strip_prefix("gated-") {
            Some(act) => (true, act),
            None => (false, self.feed_forward_proj.as_str()),
        };
        let act = self.dense_act_fn.as_deref().unwrap_or(match act {
            // transformers maps "gated-gelu" to gelu_new.
            "gelu" => "gelu_new",
            other => other,
        });
        match (gated, act) {
            (true, "gelu_new") => Ok(FeedForward::GatedGelu),
            (false, "relu") => Ok(FeedForward::Relu),
            _ => Err(DiffusionError::unsupported(
                path,
                format!(
                    "T5 feed_forward_proj `{}` with activation `{act}` (supported: gated-gelu with gelu_new, relu)",
                    self.feed_forward_proj
                ),
            )),
        }
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        crate::models::config::check_counts(
            path,
            &[
                ("vocab_size", self.vocab_size),
                ("d_model", self.d_model),
                ("d_kv", self.d_kv),
                ("d_ff", self.d_ff),
                ("num_layers", self.num_layers),
                ("num_heads", self.num_heads),
                (
                    "relative_attention_num_buckets",
                    self.relative_attention_num_buckets,
                ),
                (
                    "relative_attention_max_distance",
                    self.relative_attention_max_distance,
                ),
            ],
        )?;
        if self.relative_attention_num_buckets < 4 {
            return Err(DiffusionError::config(
                path,
                "relative_attention_num_buckets must be at least 4",
            ));
        }
        if !(self.layer_norm_epsilon.is_finite() && self.layer_norm_epsilon > 0.0) {
            return Err(DiffusionError::config(
                path,
                "layer_norm_epsilon must be positive",
            ));
        }
        self.feed_forward(path).map(|_| ())
    }
}

/// The bucket of each relative position `key - query` (transformers'
/// `_relative_position_bucket`, bidirectional): half the buckets for keys after the query, and in
/// each half exact buckets for small distances, then logarithmic ones up to `max_distance`.
pub fn relative_position_bucket(relative: i64, buckets: usize, max_distance: usize) -> usize {
    let half = buckets / 2;
    let offset = if relative > 0 { half } else { 0 };
    let n = relative.unsigned_abs() as usize;
    let exact = half / 2;
    if n < exact {
        return offset + n;
    }
    // As torch computes it: in f32, truncated toward zero.
    let log = ((n as f32 / exact as f32).ln() / (max_distance as f32 / exact as f32).ln()
        * (half - exact) as f32) as usize;
    offset + (exact + log).min(half - 1)
}

#[derive(Module, Debug)]
struct T5Layer<B: Backend> {
    attention_norm: RmsNorm<B>,
    q: Linear<B>,
    k: Linear<B>,
    v: Linear<B>,
    o: Linear<B>,
    feed_forward_norm: RmsNorm<B>,
    /// `wi_0` (gated) or `wi`.
    wi: Linear<B>,
    /// `wi_1` (gated only).
    wi_gate: Option<Linear<B>>,
    wo: Linear<B>,
}

#[derive(Module, Debug)]
pub struct T5Encoder<B: Backend> {
    /// On the host (32128 rows, read a prompt's at a time).
    embedding: Param<Tensor<B, 2>>,
    /// [buckets, heads], on the host: the first layer's position bias table.
    relative_bias: Param<Tensor<B, 2>>,
    layers: Vec<T5Layer<B>>,
    final_norm: RmsNorm<B>,
    heads: usize,
    max_distance: usize,
}

/// The names of a `T5EncoderModel` checkpoint's tensors this encoder does not read: the tied copy
/// of the embeddings when `shared.weight` is there.
pub const TIED_EMBEDDING: &str = "encoder.embed_tokens.weight";

/// The embeddings' name: `shared.weight`, or the encoder's own copy in files that keep only that.
pub fn embedding_name(has: impl Fn(&str) -> bool) -> &'static str {
    if has("shared.weight") || !has(TIED_EMBEDDING) {
        "shared.weight"
    } else {
        TIED_EMBEDDING
    }
}

impl<B: Backend> T5Encoder<B> {
    /// Loads a `T5EncoderModel` checkpoint whose embeddings are named `embedding`
    /// (`embedding_name`).
    pub fn load(
        config: &T5Config,
        embedding: &str,
        path: &Path,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        config.validate(path)?;
        let feed_forward = config.feed_forward(path)?;
        let (d, inner, ff) = (config.d_model, config.num_heads * config.d_kv, config.d_ff);
        let eps = config.layer_norm_epsilon;
        let embedding = loader.host_tensor(embedding, [config.vocab_size, d], Init::FanIn(d))?;
        let relative_bias = loader.host_tensor(
            "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
            [config.relative_attention_num_buckets, config.num_heads],
            Init::FanIn(config.num_heads),
        )?;
        let mut layers = Vec::with_capacity(config.num_layers);
        for i in 0..config.num_layers {
            let p = format!("encoder.block.{i}.layer");
            let norm = |l: &mut Loader<B>, n: usize| {
                RmsNorm::load(l, &format!("{p}.{n}.layer_norm.weight"), d, eps)
            };
            let attention = |l: &mut Loader<B>, name: &str, i: usize, o: usize| {
                l.linear(&format!("{p}.0.SelfAttention.{name}"), i, o, false)
            };
            let dense = |l: &mut Loader<B>, name: &str, i: usize, o: usize| {
                l.linear(&format!("{p}.1.DenseReluDense.{name}"), i, o, false)
            };
            let (wi, wi_gate) = match feed_forward {
                FeedForward::GatedGelu => (
                    dense(loader, "wi_0", d, ff)?,
                    Some(dense(loader, "wi_1", d, ff)?),
                ),
                FeedForward::Relu => (dense(loader, "wi", d, ff)?, None),
            };
            layers.push(T5Layer {
                attention_norm: norm(loader, 0)?,
                q: attention(loader, "q", d, inner)?,
                k: attention(loader, "k", d, inner)?,
                v: attention(loader, "v", d, inner)?,
                o: attention(loader, "o", inner, d)?,
                feed_forward_norm: norm(loader, 1)?,
                wi,
                wi_gate,
                wo: dense(loader, "wo", ff, d)?,
            });
        }
        Ok(T5Encoder {
            embedding: Param::from_tensor(embedding),
            relative_bias: Param::from_tensor(relative_bias),
            layers,
            final_norm: RmsNorm::load(loader, "encoder.final_layer_norm.weight", d, eps)?,
            heads: config.num_heads,
            max_distance: config.relative_attention_max_distance,
        })
    }

    pub fn hidden_size(&self) -> usize {
        self.embedding.dims()[1]
    }

    pub fn vocab_size(&self) -> usize {
        self.embedding.dims()[0]
    }

    /// The last hidden state of each prompt: `ids` [N, S] (every token attended, padding
    /// included, as the pipelines call it) -> [N, S, d_model].
    pub fn forward(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        let [n, s] = ids.dims();
        let d = self.hidden_size();
        let table = self.embedding.val();
        let (host, device) = (table.device(), ids.device());
        let mut x = table
            .select(0, ids.reshape([n * s]).to_device(&host))
            .to_device(&device)
            .reshape([n, s, d]);
        let bias = self
            .position_bias(s, x.dtype(), &device)
            .expand([n, self.heads, s, s]);
        for layer in &self.layers {
            x = self.layer(layer, x, bias.clone());
        }
        self.final_norm.forward(x)
    }

    /// The shared position bias: [1, heads, S, S], `bias[h][q][k]` the table's row for the bucket
    /// of `k - q`.
    fn position_bias(&self, s: usize, dtype: DType, device: &B::Device) -> Tensor<B, 4> {
        let [buckets, heads] = self.relative_bias.dims();
        let index: Vec<i64> = (0..s as i64)
            .flat_map(|q| (0..s as i64).map(move |k| (q, k)))
            .map(|(q, k)| relative_position_bucket(k - q, buckets, self.max_distance) as i64)
            .collect();
        let table = self.relative_bias.val();
        let index =
            Tensor::<B, 1, Int>::from_data(TensorData::new(index, [s * s]), &table.device());
        table
            .select(0, index)
            .to_device(device)
            .cast(dtype)
            .reshape([s, s, heads])
            .permute([2, 0, 1])
            .reshape([1, heads, s, s])
    }

    fn layer(&self, layer: &T5Layer<B>, x: Tensor<B, 3>, bias: Tensor<B, 4>) -> Tensor<B, 3> {
        let [n, s, _] = x.dims();
        let h = layer.attention_norm.forward(x.clone());
        let split = |t: Tensor<B, 3>| {
            let inner = t.dims()[2];
            t.reshape([n, s, self.heads, inner / self.heads])
                .swap_dims(1, 2)
        };
        let (q, k, v) = (
            split(layer.q.forward(h.clone())),
            split(layer.k.forward(h.clone())),
            split(layer.v.forward(h)),
        );
        let dh = q.dims()[3];
        // No 1/sqrt(d) scaling: T5 folds it into its weights' initialisation.
        let options = AttentionModuleOptions {
            scale: Some(1.0),
            ..Default::default()
        };
        let attn = attention(q, k, v, None, Some(bias), options)
            .swap_dims(1, 2)
            .reshape([n, s, self.heads * dh]);
        let x = clamp_f16(x + layer.o.forward(attn));
        let h = layer.feed_forward_norm.forward(x.clone());
        let h = match &layer.wi_gate {
            Some(gate) => gelu_tanh(layer.wi.forward(h.clone())) * gate.forward(h),
            None => burn::tensor::activation::relu(layer.wi.forward(h)),
        };
        clamp_f16(x + layer.wo.forward(h))
    }
}

/// In f16, each layer's output is clamped to f16's maximum less 1000 when any value is infinite
/// and to the maximum itself otherwise (transformers' `T5Block`); other dtypes pass unchanged.
/// The choice stays on the device (no read-back per layer).
fn clamp_f16<B: Backend>(x: Tensor<B, 3>) -> Tensor<B, 3> {
    if x.dtype() != DType::F16 {
        return x;
    }
    let max = f64::from(half::f16::MAX);
    let infinite = x.clone().is_inf().any().float().cast(DType::F16);
    let bound = (infinite * -1000.0 + max)
        .reshape([1, 1, 1])
        .expand(x.dims());
    x.max_pair(bound.clone().neg()).min_pair(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::B;

    /// transformers' clamp: an infinity anywhere brings every value within f16's maximum less
    /// 1000 (64504, which f16 rounds to 64512, as torch does); without one nothing changes; f32 is
    /// never clamped.
    #[test]
    fn f16_outputs_are_clamped_as_transformers_clamps_them() {
        let device = crate::device::cpu_device();
        let tensor = |values: Vec<f32>, dtype: DType| {
            Tensor::<B, 3>::from_data(TensorData::new(values, [1, 1, 4]), &device).cast(dtype)
        };
        let read = |t: Tensor<B, 3>| -> Vec<f32> {
            t.cast(DType::F32)
                .into_data()
                .convert::<f32>()
                .into_vec()
                .unwrap()
        };
        let with_inf = vec![f32::INFINITY, -65000.0, 1.5, 64600.0];
        assert_eq!(
            read(clamp_f16(tensor(with_inf.clone(), DType::F16))),
            [64512.0, -64512.0, 1.5, 64512.0]
        );
        let finite = vec![-65504.0, 3.25, 0.0, 65504.0];
        assert_eq!(read(clamp_f16(tensor(finite.clone(), DType::F16))), finite);
        let f32_values = read(clamp_f16(tensor(with_inf.clone(), DType::F32)));
        assert_eq!(f32_values, with_inf);
    }

    /// transformers' buckets for T5's defaults (32 buckets, distance 128), computed with its
    /// `_relative_position_bucket` in torch for these relative positions.
    #[test]
    fn buckets_are_transformers_buckets() {
        let cases: &[(i64, usize)] = &[
            (0, 0),
            (1, 17),
            (-1, 1),
            (7, 23),
            (-7, 7),
            (8, 24),
            (-8, 8),
            (12, 25),
            (-20, 10),
            (63, 29),
            (-64, 14),
            (127, 31),
            (-128, 15),
            (500, 31),
            (-500, 15),
        ];
        for &(relative, bucket) in cases {
            assert_eq!(
                relative_position_bucket(relative, 32, 128),
                bucket,
                "relative position {relative}"
            );
        }
    }
}
