//! diffusers' `Flux2Transformer2DModel`: a rectified-flow DiT. Text and image tokens are embedded
//! apart, run through double-stream blocks (separate weights per stream, one joint attention),
//! then concatenated through single-stream blocks (attention and MLP in parallel from one
//! projection). Every block's shift/scale/gate comes from three modulations of the timestep shared
//! by all blocks; positions enter as 4-axis RoPE on interleaved pairs.

use std::path::Path;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::nn::loader::Loader;
use crate::nn::modulation::{chunks, clamp_f16, half_round, rows};
use crate::nn::rope::{half_split, rope_tables, rotate_halves, AngleRounding};
use crate::nn::RmsNorm;
use crate::nn::{modulated_layer_norm, multi_head_attention, silu, sinusoids, Linear};

/// `transformer/config.json`, with diffusers' defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct Flux2TransformerConfig {
    pub patch_size: usize,
    pub in_channels: usize,
    pub out_channels: Option<usize>,
    pub num_layers: usize,
    pub num_single_layers: usize,
    pub attention_head_dim: usize,
    pub num_attention_heads: usize,
    pub joint_attention_dim: usize,
    pub timestep_guidance_channels: usize,
    pub mlp_ratio: f64,
    pub axes_dims_rope: Vec<usize>,
    pub rope_theta: f64,
    pub eps: f64,
    pub guidance_embeds: bool,
}

impl Default for Flux2TransformerConfig {
    fn default() -> Self {
        Flux2TransformerConfig {
            patch_size: 1,
            in_channels: 128,
            out_channels: None,
            num_layers: 8,
            num_single_layers: 48,
            attention_head_dim: 128,
            num_attention_heads: 48,
            joint_attention_dim: 15360,
            timestep_guidance_channels: 256,
            mlp_ratio: 3.0,
            axes_dims_rope: vec![32, 32, 32, 32],
            rope_theta: 2000.0,
            eps: 1e-6,
            guidance_embeds: true,
        }
    }
}

impl Flux2TransformerConfig {
    /// black-forest-labs/FLUX.2-klein-4B's `transformer/config.json`.
    pub fn klein_4b() -> Self {
        Flux2TransformerConfig {
            num_layers: 5,
            num_single_layers: 20,
            num_attention_heads: 24,
            joint_attention_dim: 7680,
            guidance_embeds: false,
            ..Flux2TransformerConfig::default()
        }
    }

    pub fn inner_dim(&self) -> usize {
        self.num_attention_heads * self.attention_head_dim
    }

    pub fn mlp_hidden(&self) -> usize {
        (self.inner_dim() as f64 * self.mlp_ratio) as usize
    }

    /// Parameters the model loads (no guidance embedder).
    pub fn parameters(&self) -> u64 {
        let d = self.inner_dim();
        let (mlp, dh) = (self.mlp_hidden(), self.attention_head_dim);
        let ff = d * 2 * mlp + mlp * d;
        let double = 8 * d * d + 4 * dh + 2 * ff;
        let single = d * (3 * d + 2 * mlp) + 2 * dh + (d + mlp) * d;
        self.full_precision_parameters()
            + (self.num_layers * double + self.num_single_layers * single) as u64
    }

    /// Parameters that int8 runs keep in the run's precision (`load`'s `full_precision` layers):
    /// the timestep embedding, the shared modulations, the embedders and the output layers, 195M
    /// of klein 4B's 3.9 billion (the modulations alone are 15 x 3072 x 3072).
    pub fn full_precision_parameters(&self) -> u64 {
        let d = self.inner_dim();
        let time = self.timestep_guidance_channels * d + d * d;
        let modulations = 6 * d * d * 2 + 3 * d * d;
        let embedders = self.in_channels * d + self.joint_attention_dim * d;
        let out = d * 2 * d + d * self.in_channels;
        (time + modulations + embedders + out) as u64
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        let mut counts = vec![
            ("in_channels", self.in_channels),
            ("num_layers", self.num_layers.max(1)),
            ("num_single_layers", self.num_single_layers.max(1)),
            ("attention_head_dim", self.attention_head_dim),
            ("num_attention_heads", self.num_attention_heads),
            ("joint_attention_dim", self.joint_attention_dim),
            (
                "timestep_guidance_channels",
                self.timestep_guidance_channels,
            ),
        ];
        counts.extend(self.axes_dims_rope.iter().map(|&d| ("axes_dims_rope", d)));
        crate::models::config::check_counts(path, &counts)?;
        if self.patch_size != 1 {
            return Err(DiffusionError::unsupported(
                path,
                format!("transformer patch_size {} (supported: 1)", self.patch_size),
            ));
        }
        if self.out_channels.is_some_and(|c| c != self.in_channels) {
            return Err(DiffusionError::unsupported(
                path,
                "transformer out_channels different from in_channels",
            ));
        }
        if self.axes_dims_rope.iter().sum::<usize>() != self.attention_head_dim
            || self.axes_dims_rope.len() != 4
            || self.axes_dims_rope.iter().any(|d| !d.is_multiple_of(2))
        {
            return Err(DiffusionError::config(
                path,
                format!(
                    "axes_dims_rope {:?} must be four even sizes that add up to attention_head_dim {}",
                    self.axes_dims_rope, self.attention_head_dim
                ),
            ));
        }
        if self.num_attention_heads == 0 || !self.timestep_guidance_channels.is_multiple_of(2) {
            return Err(DiffusionError::config(
                path,
                "num_attention_heads must be positive and timestep_guidance_channels even",
            ));
        }
        Ok(())
    }
}

/// The SwiGLU MLP: `linear_out(silu(gate) * value)`, where diffusers' `linear_in` makes gate and
/// value as the two halves of one output. They are two layers here, so each is a whole tensor.
#[derive(Module, Debug)]
struct FeedForward<B: Backend> {
    gate: Linear<B>,
    value: Linear<B>,
    linear_out: Linear<B>,
}

impl<B: Backend> FeedForward<B> {
    fn load(loader: &mut Loader<B>, prefix: &str, d: usize, mlp: usize) -> Result<Self> {
        let [gate, value] = parts(loader.linear_parts(
            &format!("{prefix}.linear_in"),
            d,
            2 * mlp,
            false,
            &[(0..mlp).collect(), (mlp..2 * mlp).collect()],
        )?);
        Ok(FeedForward {
            gate,
            value,
            linear_out: loader.linear(&format!("{prefix}.linear_out"), mlp, d, false)?,
        })
    }

    fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let gate = silu(self.gate.forward(x.clone()));
        self.linear_out.forward(gate * self.value.forward(x))
    }
}

/// The layers `linear_parts` made, as an array.
fn parts<B: Backend, const K: usize>(layers: Vec<Linear<B>>) -> [Linear<B>; K] {
    layers
        .try_into()
        .unwrap_or_else(|_| unreachable!("linear_parts makes one layer per part"))
}

#[derive(Module, Debug)]
struct DoubleBlock<B: Backend> {
    to_q: Linear<B>,
    to_k: Linear<B>,
    to_v: Linear<B>,
    norm_q: RmsNorm<B>,
    norm_k: RmsNorm<B>,
    to_out: Linear<B>,
    add_q_proj: Linear<B>,
    add_k_proj: Linear<B>,
    add_v_proj: Linear<B>,
    norm_added_q: RmsNorm<B>,
    norm_added_k: RmsNorm<B>,
    to_add_out: Linear<B>,
    ff: FeedForward<B>,
    ff_context: FeedForward<B>,
}

/// diffusers' `to_qkv_mlp_proj` is held as its five parts: q, k, v, the MLP's gate and value.
#[derive(Module, Debug)]
struct SingleBlock<B: Backend> {
    to_q: Linear<B>,
    to_k: Linear<B>,
    to_v: Linear<B>,
    mlp_gate: Linear<B>,
    mlp_value: Linear<B>,
    norm_q: RmsNorm<B>,
    norm_k: RmsNorm<B>,
    to_out: Linear<B>,
}

#[derive(Module, Debug)]
pub struct Flux2Transformer<B: Backend> {
    time_linear_1: Linear<B>,
    time_linear_2: Linear<B>,
    modulation_img: Linear<B>,
    modulation_txt: Linear<B>,
    modulation_single: Linear<B>,
    x_embedder: Linear<B>,
    context_embedder: Linear<B>,
    double: Vec<DoubleBlock<B>>,
    single: Vec<SingleBlock<B>>,
    norm_out: Linear<B>,
    proj_out: Linear<B>,
    heads: usize,
    head_dim: usize,
    time_channels: usize,
    axes: Vec<usize>,
    rope_theta: f64,
    eps: f64,
}

/// Tensors of a checkpoint this model does not use: the guidance embedder, which
/// `Flux2KleinPipeline` never feeds (it passes no guidance).
pub const IGNORED_PREFIXES: &[&str] = &["time_guidance_embed.guidance_embedder."];

/// A token's position: (t, h, w, l), as the pipeline's `txt_ids` / `img_ids` rows.
pub type Position = [f32; 4];

/// The RoPE tables of a sequence's positions, in the heads' channel order (`half_split`): made
/// once per generation (every step has the same positions), not once per call. [1, S, 1,
/// head_dim] each, broadcast over the heads; [1, S, heads, head_dim] on the CPU backend, whose
/// broadcast of a table with a stride in the middle is a scalar walk.
pub struct Rope<B: Backend> {
    cos: Tensor<B, 4>,
    sin: Tensor<B, 4>,
}

/// Loads the transformer's double- and single-stream blocks. q and k come out of their
/// projections with each head's channels in `half_split` order, and their norms read their
/// weights in that order.
struct BlockLoader {
    d: usize,
    heads: usize,
    head_dim: usize,
    mlp: usize,
    eps: f64,
    head_order: Vec<usize>,
}

impl BlockLoader {
    fn new(config: &Flux2TransformerConfig) -> Self {
        BlockLoader {
            d: config.inner_dim(),
            heads: config.num_attention_heads,
            head_dim: config.attention_head_dim,
            mlp: config.mlp_hidden(),
            eps: config.eps,
            head_order: half_split(config.attention_head_dim),
        }
    }

    /// The output rows of a q or k projection whose first row is `start`, head by head.
    fn qk_order(&self, start: usize) -> Vec<usize> {
        (0..self.heads)
            .flat_map(|h| {
                self.head_order
                    .iter()
                    .map(move |&c| start + h * self.head_dim + c)
            })
            .collect()
    }

    fn rms<B: Backend>(&self, l: &mut Loader<B>, name: String) -> Result<RmsNorm<B>> {
        RmsNorm::load_reordered(l, &name, &self.head_order, self.eps)
    }

    fn qk<B: Backend>(&self, l: &mut Loader<B>, name: String) -> Result<Linear<B>> {
        let d = self.d;
        let [layer] = parts(l.linear_parts(&name, d, d, false, &[self.qk_order(0)])?);
        Ok(layer)
    }

    fn double<B: Backend>(&self, loader: &mut Loader<B>, i: usize) -> Result<DoubleBlock<B>> {
        let (d, mlp) = (self.d, self.mlp);
        let p = format!("transformer_blocks.{i}");
        let lin = |l: &mut Loader<B>, name: &str| l.linear(&format!("{p}.{name}"), d, d, false);
        Ok(DoubleBlock {
            to_q: self.qk(loader, format!("{p}.attn.to_q"))?,
            to_k: self.qk(loader, format!("{p}.attn.to_k"))?,
            to_v: lin(loader, "attn.to_v")?,
            norm_q: self.rms(loader, format!("{p}.attn.norm_q.weight"))?,
            norm_k: self.rms(loader, format!("{p}.attn.norm_k.weight"))?,
            to_out: lin(loader, "attn.to_out.0")?,
            add_q_proj: self.qk(loader, format!("{p}.attn.add_q_proj"))?,
            add_k_proj: self.qk(loader, format!("{p}.attn.add_k_proj"))?,
            add_v_proj: lin(loader, "attn.add_v_proj")?,
            norm_added_q: self.rms(loader, format!("{p}.attn.norm_added_q.weight"))?,
            norm_added_k: self.rms(loader, format!("{p}.attn.norm_added_k.weight"))?,
            to_add_out: lin(loader, "attn.to_add_out")?,
            ff: FeedForward::load(loader, &format!("{p}.ff"), d, mlp)?,
            ff_context: FeedForward::load(loader, &format!("{p}.ff_context"), d, mlp)?,
        })
    }

    /// A single-stream block: q, k, v and the MLP's gate and value are one stored projection,
    /// split into five layers at load.
    fn single<B: Backend>(&self, loader: &mut Loader<B>, i: usize) -> Result<SingleBlock<B>> {
        let (d, mlp) = (self.d, self.mlp);
        let p = format!("single_transformer_blocks.{i}.attn");
        let range = |start: usize, len: usize| (start..start + len).collect::<Vec<_>>();
        let [to_q, to_k, to_v, mlp_gate, mlp_value] = parts(loader.linear_parts(
            &format!("{p}.to_qkv_mlp_proj"),
            d,
            3 * d + 2 * mlp,
            false,
            &[
                self.qk_order(0),
                self.qk_order(d),
                range(2 * d, d),
                range(3 * d, mlp),
                range(3 * d + mlp, mlp),
            ],
        )?);
        Ok(SingleBlock {
            to_q,
            to_k,
            to_v,
            mlp_gate,
            mlp_value,
            norm_q: self.rms(loader, format!("{p}.norm_q.weight"))?,
            norm_k: self.rms(loader, format!("{p}.norm_k.weight"))?,
            to_out: loader.linear(&format!("{p}.to_out"), d + mlp, d, false)?,
        })
    }
}

impl<B: Backend> Flux2Transformer<B> {
    pub fn load(
        config: &Flux2TransformerConfig,
        path: &Path,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        config.validate(path)?;
        let d = config.inner_dim();
        let tc = config.timestep_guidance_channels;
        let (time_linear_1, time_linear_2, modulation_img, modulation_txt, modulation_single) =
            loader.full_precision(|l| {
                Ok((
                    l.linear(
                        "time_guidance_embed.timestep_embedder.linear_1",
                        tc,
                        d,
                        false,
                    )?,
                    l.linear(
                        "time_guidance_embed.timestep_embedder.linear_2",
                        d,
                        d,
                        false,
                    )?,
                    l.linear("double_stream_modulation_img.linear", d, 6 * d, false)?,
                    l.linear("double_stream_modulation_txt.linear", d, 6 * d, false)?,
                    l.linear("single_stream_modulation.linear", d, 3 * d, false)?,
                ))
            })?;
        let (x_embedder, context_embedder) = loader.full_precision(|l| {
            Ok((
                l.linear("x_embedder", config.in_channels, d, false)?,
                l.linear("context_embedder", config.joint_attention_dim, d, false)?,
            ))
        })?;
        let blocks = BlockLoader::new(config);
        let double = (0..config.num_layers)
            .map(|i| blocks.double(loader, i))
            .collect::<Result<Vec<_>>>()?;
        let single = (0..config.num_single_layers)
            .map(|i| blocks.single(loader, i))
            .collect::<Result<Vec<_>>>()?;
        let (norm_out, proj_out) = loader.full_precision(|l| {
            Ok((
                l.linear("norm_out.linear", d, 2 * d, false)?,
                l.linear("proj_out", d, config.in_channels, false)?,
            ))
        })?;
        Ok(Flux2Transformer {
            time_linear_1,
            time_linear_2,
            modulation_img,
            modulation_txt,
            modulation_single,
            x_embedder,
            context_embedder,
            double,
            single,
            norm_out,
            proj_out,
            heads: config.num_attention_heads,
            head_dim: config.attention_head_dim,
            time_channels: tc,
            axes: config.axes_dims_rope.clone(),
            rope_theta: config.rope_theta,
            eps: config.eps,
        })
    }

    pub fn in_channels(&self) -> usize {
        self.x_embedder.inputs()
    }

    pub fn context_dim(&self) -> usize {
        self.context_embedder.inputs()
    }

    pub fn inner_dim(&self) -> usize {
        self.heads * self.head_dim
    }

    /// One velocity prediction.
    /// `x`: packed latents [N, S_img, in_channels]; `context`: [N, S_txt, joint_attention_dim];
    /// `timestep`: the schedule's sigma in [0, 1] (the pipeline's `t / 1000`); `rope`: the tables
    /// of the text's then the image's token positions (S_txt + S_img rows, `Self::rope`).
    /// -> [N, S_img, in_channels]
    pub fn forward(
        &self,
        x: Tensor<B, 3>,
        context: Tensor<B, 3>,
        timestep: f32,
        rope: &Rope<B>,
    ) -> Tensor<B, 3> {
        let [n, s_img, _] = x.dims();
        let s_txt = context.dims()[1];
        let device = x.device();
        let dtype = x.dtype();
        debug_assert_eq!(rope.cos.dims()[1], s_txt + s_img);
        // diffusers: `timestep.to(hidden_states.dtype) * 1000`, then sinusoids in f32.
        let t = half_round(timestep, dtype) * 1000.0;
        let proj = sinusoids(&vec![t; n], self.time_channels, true, 0.0);
        let proj =
            Tensor::<B, 2>::from_data(TensorData::new(proj, [n, self.time_channels]), &device)
                .cast(dtype);
        let temb = self
            .time_linear_2
            .forward(silu(self.time_linear_1.forward(proj)));
        let modulation = |linear: &Linear<B>| rows(linear.forward(silu(temb.clone())));
        let mod_img = chunks(modulation(&self.modulation_img), 6);
        let mod_txt = chunks(modulation(&self.modulation_txt), 6);
        let mod_single = chunks(modulation(&self.modulation_single), 3);
        let (cos, sin) = (&rope.cos, &rope.sin);

        let mut x = self.x_embedder.forward(x);
        let mut c = self.context_embedder.forward(context);
        for block in &self.double {
            (c, x) = self.double_block(block, x, c, &mod_img, &mod_txt, cos, sin);
        }
        let mut h = Tensor::cat(vec![c, x], 1);
        for block in &self.single {
            h = self.single_block(block, h, &mod_single, cos, sin);
        }
        let h = h.narrow(1, s_txt, s_img);
        let out = chunks(rows(self.norm_out.forward(silu(temb))), 2);
        let (scale, shift) = (&out[0], &out[1]);
        self.proj_out
            .forward(modulated_layer_norm(h, shift, scale, self.eps))
    }

    #[allow(clippy::too_many_arguments)]
    fn double_block(
        &self,
        b: &DoubleBlock<B>,
        x: Tensor<B, 3>,
        c: Tensor<B, 3>,
        m: &[Tensor<B, 3>],
        mc: &[Tensor<B, 3>],
        cos: &Tensor<B, 4>,
        sin: &Tensor<B, 4>,
    ) -> (Tensor<B, 3>, Tensor<B, 3>) {
        let s_txt = c.dims()[1];
        let s_img = x.dims()[1];
        let nx = modulated_layer_norm(x.clone(), &m[0], &m[1], self.eps);
        let nc = modulated_layer_norm(c.clone(), &mc[0], &mc[1], self.eps);
        let q = Tensor::cat(
            vec![
                self.heads_normed(b.add_q_proj.forward(nc.clone()), &b.norm_added_q),
                self.heads_normed(b.to_q.forward(nx.clone()), &b.norm_q),
            ],
            1,
        );
        let k = Tensor::cat(
            vec![
                self.heads_normed(b.add_k_proj.forward(nc.clone()), &b.norm_added_k),
                self.heads_normed(b.to_k.forward(nx.clone()), &b.norm_k),
            ],
            1,
        );
        let v = Tensor::cat(vec![b.add_v_proj.forward(nc), b.to_v.forward(nx)], 1);
        let attn = self.attention(q, k, v, cos, sin);
        let attn_c = b.to_add_out.forward(attn.clone().narrow(1, 0, s_txt));
        let attn_x = b.to_out.forward(attn.narrow(1, s_txt, s_img));

        // Gates multiply from the right: the CPU backend's fast broadcast needs the whole
        // tensor on the left.
        let x = x + attn_x * m[2].clone();
        let nx = modulated_layer_norm(x.clone(), &m[3], &m[4], self.eps);
        let x = x + b.ff.forward(nx) * m[5].clone();

        let c = c + attn_c * mc[2].clone();
        let nc = modulated_layer_norm(c.clone(), &mc[3], &mc[4], self.eps);
        let c = c + b.ff_context.forward(nc) * mc[5].clone();
        (clamp_f16(c), x)
    }

    fn single_block(
        &self,
        b: &SingleBlock<B>,
        h: Tensor<B, 3>,
        m: &[Tensor<B, 3>],
        cos: &Tensor<B, 4>,
        sin: &Tensor<B, 4>,
    ) -> Tensor<B, 3> {
        let normed = modulated_layer_norm(h.clone(), &m[0], &m[1], self.eps);
        let q = self.heads_normed(b.to_q.forward(normed.clone()), &b.norm_q);
        let k = self.heads_normed(b.to_k.forward(normed.clone()), &b.norm_k);
        let v = b.to_v.forward(normed.clone());
        let mlp = silu(b.mlp_gate.forward(normed.clone())) * b.mlp_value.forward(normed);
        let attn = self.attention(q, k, v, cos, sin);
        let out = b.to_out.forward(Tensor::cat(vec![attn, mlp], 2));
        clamp_f16(h + out * m[2].clone())
    }

    /// [N, S, heads*dh] -> [N, S, heads, dh] with the per-head RMSNorm applied.
    fn heads_normed(&self, t: Tensor<B, 3>, norm: &RmsNorm<B>) -> Tensor<B, 4> {
        let [n, s, _] = t.dims();
        norm.forward(t.reshape([n, s, self.heads, self.head_dim]))
    }

    /// RoPE on q and k, then unmasked attention over the joint sequence. -> [N, S, heads*dh]
    fn attention(
        &self,
        q: Tensor<B, 4>,
        k: Tensor<B, 4>,
        v: Tensor<B, 3>,
        cos: &Tensor<B, 4>,
        sin: &Tensor<B, 4>,
    ) -> Tensor<B, 3> {
        let [n, s, heads, dh] = q.dims();
        let q = rotate_halves(q, cos, sin).reshape([n, s, heads * dh]);
        let k = rotate_halves(k, cos, sin).reshape([n, s, heads * dh]);
        multi_head_attention(q, k, v, self.heads, false, false)
    }

    /// `Flux2PosEmbed`'s tables (`rope_tables`, angles in f64).
    pub fn rope(&self, positions: &[Position], dtype: DType, device: &B::Device) -> Rope<B> {
        let (cos, sin) = rope_tables(
            positions,
            &self.axes,
            self.rope_theta,
            AngleRounding::F64,
            self.heads,
            dtype,
            device,
        );
        Rope { cos, sin }
    }
}
