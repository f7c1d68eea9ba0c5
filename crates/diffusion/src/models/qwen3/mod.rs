//! transformers' `Qwen3ForCausalLM` used as a text encoder (FLUX.2 klein; Z-Image shares it): token
//! embeddings, pre-norm decoder layers (RMSNorm, grouped-query attention with per-head q/k RMSNorm,
//! rotate-half RoPE, SwiGLU MLP), causal attention with padding masked. Only the hidden states a
//! pipeline stacks are computed: the layers after the last one it reads, the final norm and the
//! language-model head are never run (their tensors are skipped when loading).

pub mod llama_cpp_names;
pub mod prompt;

use std::path::Path;

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{DiffusionError, Result};
use crate::io::component_file::{LlamaCppNames, TextEncoderNames};
use crate::io::weights::Init;
use crate::nn::loader::Loader;
use crate::nn::{multi_head_attention, silu, Linear, RmsNorm};

/// `text_encoder/config.json`: transformers' `Qwen3Config`, with its defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct Qwen3Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    pub rms_norm_eps: f64,
    /// transformers 4.x writes the RoPE base here; 5.x writes `rope_parameters`.
    pub rope_theta: Option<f64>,
    pub rope_parameters: Option<Value>,
    pub rope_scaling: Option<Value>,
    pub attention_bias: bool,
    pub use_sliding_window: bool,
    pub tie_word_embeddings: bool,
}

impl Default for Qwen3Config {
    fn default() -> Self {
        Qwen3Config {
            vocab_size: 151936,
            hidden_size: 4096,
            intermediate_size: 22016,
            num_hidden_layers: 32,
            num_attention_heads: 32,
            num_key_value_heads: 32,
            head_dim: 128,
            hidden_act: "silu".into(),
            max_position_embeddings: 32768,
            rms_norm_eps: 1e-6,
            rope_theta: None,
            rope_parameters: None,
            rope_scaling: None,
            attention_bias: false,
            use_sliding_window: false,
            tie_word_embeddings: false,
        }
    }
}

impl Qwen3Config {
    /// Qwen/Qwen3-4B's `config.json` (FLUX.2 klein 4B's text encoder), for synthetic weights.
    pub fn qwen3_4b() -> Self {
        Qwen3Config {
            vocab_size: 151936,
            hidden_size: 2560,
            intermediate_size: 9728,
            num_hidden_layers: 36,
            num_attention_heads: 32,
            num_key_value_heads: 8,
            head_dim: 128,
            max_position_embeddings: 40960,
            rope_theta: Some(1_000_000.0),
            tie_word_embeddings: true,
            ..Qwen3Config::default()
        }
    }

    /// Parameters of the embeddings and the first `layers` decoder layers (what a pipeline that
    /// reads hidden state `layers` loads).
    pub fn parameters(&self, layers: usize) -> u64 {
        let (d, dh, i) = (self.hidden_size, self.head_dim, self.intermediate_size);
        let (q, kv) = (self.num_attention_heads * dh, self.num_key_value_heads * dh);
        let bias = if self.attention_bias {
            q + 2 * kv + d
        } else {
            0
        };
        let layer = d * q + 2 * d * kv + q * d + bias + 2 * dh + 2 * d + 3 * d * i;
        (self.vocab_size * d + layers * layer) as u64
    }

    /// The RoPE base, from either spelling; default 10000 as transformers has it.
    pub fn rope_base(&self, path: &Path) -> Result<f64> {
        if let Some(params) = &self.rope_parameters {
            if let Some(kind) = params.get("rope_type").and_then(Value::as_str) {
                if kind != "default" {
                    return Err(DiffusionError::unsupported(
                        path,
                        format!("text encoder rope_type `{kind}` (supported: default)"),
                    ));
                }
            }
            if let Some(theta) = params.get("rope_theta").and_then(Value::as_f64) {
                return Ok(theta);
            }
        }
        Ok(self.rope_theta.unwrap_or(10000.0))
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        crate::models::config::check_counts(
            path,
            &[
                ("vocab_size", self.vocab_size),
                ("hidden_size", self.hidden_size),
                ("intermediate_size", self.intermediate_size),
                ("num_hidden_layers", self.num_hidden_layers),
                ("num_attention_heads", self.num_attention_heads),
                ("num_key_value_heads", self.num_key_value_heads),
                ("head_dim", self.head_dim),
                ("max_position_embeddings", self.max_position_embeddings),
            ],
        )?;
        if self.hidden_act != "silu" {
            return Err(DiffusionError::unsupported(
                path,
                format!(
                    "text encoder hidden_act `{}` (supported: silu)",
                    self.hidden_act
                ),
            ));
        }
        if self.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(DiffusionError::unsupported(
                path,
                "text encoder option rope_scaling",
            ));
        }
        if self.use_sliding_window {
            return Err(DiffusionError::unsupported(
                path,
                "text encoder option use_sliding_window = true",
            ));
        }
        if !self
            .num_attention_heads
            .is_multiple_of(self.num_key_value_heads)
        {
            return Err(DiffusionError::config(
                path,
                format!(
                    "num_attention_heads {} is not a multiple of num_key_value_heads {}",
                    self.num_attention_heads, self.num_key_value_heads
                ),
            ));
        }
        if !self.head_dim.is_multiple_of(2) {
            return Err(DiffusionError::config(path, "head_dim must be even"));
        }
        let theta = self.rope_base(path)?;
        if !(theta.is_finite() && theta > 1.0) {
            return Err(DiffusionError::config(path, "the RoPE base must exceed 1"));
        }
        Ok(())
    }
}

#[derive(Module, Debug)]
struct DecoderLayer<B: Backend> {
    input_layernorm: RmsNorm<B>,
    q_proj: Linear<B>,
    k_proj: Linear<B>,
    v_proj: Linear<B>,
    o_proj: Linear<B>,
    q_norm: RmsNorm<B>,
    k_norm: RmsNorm<B>,
    post_attention_layernorm: RmsNorm<B>,
    gate_proj: Linear<B>,
    up_proj: Linear<B>,
    down_proj: Linear<B>,
}

#[derive(Module, Debug)]
pub struct Qwen3TextEncoder<B: Backend> {
    /// On the host (a 151936-row table read a prompt's rows at a time).
    embed_tokens: Param<Tensor<B, 2>>,
    layers: Vec<DecoderLayer<B>>,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    rope_base: f64,
}

/// How a checkpoint names the model's tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qwen3Weights {
    /// transformers' `Qwen3ForCausalLM` (FLUX.2 klein): `model.layers.0...`, and an `lm_head`.
    CausalLm,
    /// The bare `Qwen3Model` (Z-Image): `layers.0...`, no `lm_head`.
    Bare,
}

impl Qwen3Weights {
    fn prefix(self) -> &'static str {
        match self {
            Qwen3Weights::CausalLm => "model.",
            Qwen3Weights::Bare => "",
        }
    }

    /// How a Qwen3 text encoder file (`--text-encoder`: transformers' names in either form, or
    /// llama.cpp's GGUF names) is read for a model that loads its tensors this way.
    pub fn file_names(self) -> TextEncoderNames {
        TextEncoderNames {
            what: "Qwen3 text encoder",
            prefix: self.prefix(),
            marker: "embed_tokens.weight",
            llama_cpp: Some(LlamaCppNames {
                architecture: llama_cpp_names::ARCHITECTURE,
                transformers_name: llama_cpp_names::transformers_name,
            }),
        }
    }
}

impl<B: Backend> Qwen3TextEncoder<B> {
    /// Loads the first `layers` decoder layers of a `Qwen3ForCausalLM` checkpoint (enough for
    /// hidden state `layers`), and marks the rest (later layers, final norm, `lm_head`) as
    /// deliberately unused.
    pub fn load(
        config: &Qwen3Config,
        layers: usize,
        path: &Path,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        Self::load_named(config, layers, Qwen3Weights::CausalLm, path, loader)
    }

    /// `load`, for a checkpoint that names its tensors as `weights` says.
    pub fn load_named(
        config: &Qwen3Config,
        layers: usize,
        weights: Qwen3Weights,
        path: &Path,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        let prefix = weights.prefix();
        config.validate(path)?;
        if layers > config.num_hidden_layers {
            return Err(DiffusionError::config(
                path,
                format!(
                    "the pipeline reads hidden state {layers} but the text encoder has {} layers",
                    config.num_hidden_layers
                ),
            ));
        }
        let (d, dh) = (config.hidden_size, config.head_dim);
        let (q_dim, kv_dim) = (
            config.num_attention_heads * dh,
            config.num_key_value_heads * dh,
        );
        let eps = config.rms_norm_eps;
        let bias = config.attention_bias;
        let embed_tokens = loader.host_tensor(
            &format!("{prefix}embed_tokens.weight"),
            [config.vocab_size, d],
            Init::FanIn(d),
        )?;
        let mut decoder = Vec::with_capacity(layers);
        for i in 0..layers {
            let p = format!("{prefix}layers.{i}");
            let linear = |l: &mut Loader<B>, name: &str, i: usize, o: usize, b: bool| {
                l.linear(&format!("{p}.{name}"), i, o, b)
            };
            decoder.push(DecoderLayer {
                input_layernorm: RmsNorm::load(
                    loader,
                    &format!("{p}.input_layernorm.weight"),
                    d,
                    eps,
                )?,
                q_proj: linear(loader, "self_attn.q_proj", d, q_dim, bias)?,
                k_proj: linear(loader, "self_attn.k_proj", d, kv_dim, bias)?,
                v_proj: linear(loader, "self_attn.v_proj", d, kv_dim, bias)?,
                o_proj: linear(loader, "self_attn.o_proj", q_dim, d, bias)?,
                q_norm: RmsNorm::load(loader, &format!("{p}.self_attn.q_norm.weight"), dh, eps)?,
                k_norm: RmsNorm::load(loader, &format!("{p}.self_attn.k_norm.weight"), dh, eps)?,
                post_attention_layernorm: RmsNorm::load(
                    loader,
                    &format!("{p}.post_attention_layernorm.weight"),
                    d,
                    eps,
                )?,
                gate_proj: linear(loader, "mlp.gate_proj", d, config.intermediate_size, false)?,
                up_proj: linear(loader, "mlp.up_proj", d, config.intermediate_size, false)?,
                down_proj: linear(loader, "mlp.down_proj", config.intermediate_size, d, false)?,
            });
        }
        Ok(Qwen3TextEncoder {
            embed_tokens: Param::from_tensor(embed_tokens),
            layers: decoder,
            heads: config.num_attention_heads,
            kv_heads: config.num_key_value_heads,
            head_dim: dh,
            rope_base: config.rope_base(path)?,
        })
    }

    /// Name prefixes of a `Qwen3ForCausalLM` checkpoint's tensors this encoder does not use when
    /// it loads `layers` of `config.num_hidden_layers` layers.
    pub fn unused_prefixes(config: &Qwen3Config, layers: usize) -> Vec<String> {
        Self::unused_prefixes_named(config, layers, Qwen3Weights::CausalLm)
    }

    /// `unused_prefixes`, for a checkpoint that names its tensors as `weights` says.
    pub fn unused_prefixes_named(
        config: &Qwen3Config,
        layers: usize,
        weights: Qwen3Weights,
    ) -> Vec<String> {
        let prefix = weights.prefix();
        let mut prefixes: Vec<String> = (layers..config.num_hidden_layers)
            .map(|i| format!("{prefix}layers.{i}."))
            .collect();
        prefixes.push(format!("{prefix}norm."));
        if weights == Qwen3Weights::CausalLm {
            prefixes.push("lm_head.".into());
        }
        prefixes
    }

    pub fn hidden_size(&self) -> usize {
        self.embed_tokens.dims()[1]
    }

    pub fn vocab_size(&self) -> usize {
        self.embed_tokens.dims()[0]
    }

    /// transformers' `hidden_states[k]` for each `k` in `layers` (0: the embeddings; k: the output
    /// of decoder layer k-1), concatenated per token: [1, S, layers.len() * hidden].
    /// `ids` has `real` tokens followed by padding (right padding): the padding's keys are masked
    /// for every query, as transformers' attention mask does.
    pub fn stacked_hidden_states(
        &self,
        ids: &[u32],
        real: usize,
        layers: &[usize],
        device: &B::Device,
    ) -> Result<Tensor<B, 3>> {
        let s = ids.len();
        if real == 0 || real > s {
            return Err(DiffusionError::Request(format!(
                "a prompt of {real} real tokens in {s}"
            )));
        }
        if let Some(&bad) = layers.iter().find(|&&k| k > self.layers.len()) {
            return Err(DiffusionError::Request(format!(
                "hidden state {bad} of a {}-layer text encoder",
                self.layers.len()
            )));
        }
        let d = self.hidden_size();
        let table = self.embed_tokens.val();
        let index: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
        let index = Tensor::<B, 1, Int>::from_data(TensorData::new(index, [s]), &table.device());
        let mut x = table.select(0, index).to_device(device).reshape([1, s, d]);
        let (cos, sin) = self.rope(s, x.dtype(), device);
        let mut stacked = vec![None; layers.len()];
        let keep = |k: usize, x: &Tensor<B, 3>, stacked: &mut Vec<Option<Tensor<B, 3>>>| {
            for (slot, &want) in stacked.iter_mut().zip(layers) {
                if want == k {
                    *slot = Some(x.clone());
                }
            }
        };
        keep(0, &x, &mut stacked);
        let last = layers.iter().copied().max().unwrap_or(0);
        for (i, layer) in self.layers.iter().take(last).enumerate() {
            x = self.layer(layer, x, &cos, &sin, real);
            keep(i + 1, &x, &mut stacked);
        }
        Ok(Tensor::cat(stacked.into_iter().flatten().collect(), 2))
    }

    fn layer(
        &self,
        layer: &DecoderLayer<B>,
        x: Tensor<B, 3>,
        cos: &Tensor<B, 4>,
        sin: &Tensor<B, 4>,
        real: usize,
    ) -> Tensor<B, 3> {
        let [n, s, _] = x.dims();
        let dh = self.head_dim;
        let h = layer.input_layernorm.forward(x.clone());
        let heads = |t: Tensor<B, 3>, count: usize| t.reshape([n, s, count, dh]);
        let q = layer
            .q_norm
            .forward(heads(layer.q_proj.forward(h.clone()), self.heads));
        let k = layer
            .k_norm
            .forward(heads(layer.k_proj.forward(h.clone()), self.kv_heads));
        let v = heads(layer.v_proj.forward(h), self.kv_heads);
        let q = rotate(q, cos, sin).reshape([n, s, self.heads * dh]);
        // Grouped-query attention: each key/value head serves `heads / kv_heads` query heads
        // (transformers' `repeat_kv`).
        let share = |t: Tensor<B, 4>| {
            let rep = self.heads / self.kv_heads;
            t.reshape([n, s, self.kv_heads, 1, dh])
                .expand([n, s, self.kv_heads, rep, dh])
                .reshape([n, s, self.heads * dh])
        };
        let k = share(rotate(k, cos, sin));
        let v = share(v);
        let attn = self.masked_attention(q, k, v, real);
        let x = x + layer.o_proj.forward(attn);
        let h = layer.post_attention_layernorm.forward(x.clone());
        let mlp = silu(layer.gate_proj.forward(h.clone())) * layer.up_proj.forward(h);
        x + layer.down_proj.forward(mlp)
    }

    /// Causal attention with the padding's keys masked. Real tokens come first, so a real query
    /// sees exactly the causal prefix, and every padding query sees all real tokens and nothing
    /// else: two unmasked calls give transformers' masked result.
    fn masked_attention(
        &self,
        q: Tensor<B, 3>,
        k: Tensor<B, 3>,
        v: Tensor<B, 3>,
        real: usize,
    ) -> Tensor<B, 3> {
        let s = q.dims()[1];
        let (kr, vr) = (k.narrow(1, 0, real), v.narrow(1, 0, real));
        let head = multi_head_attention(
            q.clone().narrow(1, 0, real),
            kr.clone(),
            vr.clone(),
            self.heads,
            true,
            false,
        );
        if real == s {
            return head;
        }
        let tail = multi_head_attention(
            q.narrow(1, real, s - real),
            kr,
            vr,
            self.heads,
            false,
            false,
        );
        Tensor::cat(vec![head, tail], 1)
    }

    /// transformers' default RoPE tables for positions 0..s, as [1, s, 1, head_dim] (the halves
    /// repeated), computed in f32 the way transformers does.
    fn rope(&self, s: usize, dtype: DType, device: &B::Device) -> (Tensor<B, 4>, Tensor<B, 4>) {
        let dh = self.head_dim;
        let base = self.rope_base as f32;
        let inv: Vec<f32> = (0..dh / 2)
            .map(|i| 1.0 / base.powf((2 * i) as f32 / dh as f32))
            .collect();
        let mut cos = Vec::with_capacity(s * dh);
        let mut sin = Vec::with_capacity(s * dh);
        for p in 0..s {
            for _half in 0..2 {
                for &f in &inv {
                    let angle = (p as f32 * f) as f64;
                    cos.push(angle.cos() as f32);
                    sin.push(angle.sin() as f32);
                }
            }
        }
        let table = |v: Vec<f32>| {
            Tensor::<B, 4>::from_data(TensorData::new(v, [1, s, 1, dh]), device).cast(dtype)
        };
        (table(cos), table(sin))
    }
}

/// `x * cos + rotate_half(x) * sin` on [N, S, H, dh], where rotate_half(x) = [-x2, x1].
fn rotate<B: Backend>(x: Tensor<B, 4>, cos: &Tensor<B, 4>, sin: &Tensor<B, 4>) -> Tensor<B, 4> {
    let dh = x.dims()[3];
    let x1 = x.clone().narrow(3, 0, dh / 2);
    let x2 = x.clone().narrow(3, dh / 2, dh / 2);
    let rotated = Tensor::cat(vec![x2.neg(), x1], 3);
    x * cos.clone() + rotated * sin.clone()
}
