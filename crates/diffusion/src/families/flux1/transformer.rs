//! diffusers' `FluxTransformer2DModel`, FLUX.1's rectified-flow DiT. Text and image tokens are
//! embedded apart and run through double-stream blocks (each stream its own projections, adaptive
//! norms and GELU feed-forward, one joint attention over [text | image]), then side by side
//! through single-stream blocks (attention and MLP in parallel from one norm). Every block
//! modulates its norms from one conditioning vector: the timestep's embedding, [dev]'s guidance
//! embedding and the pooled CLIP text's projection, summed. Positions enter as RoPE over (t, y, x)
//! ids on interleaved pairs; every projection has a bias.

use std::path::Path;

use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::nn::loader::Loader;
use crate::nn::modulation::{chunks, clamp_f16, half_round, rows};
use crate::nn::rope::{half_split, rope_tables, rotate_halves, AngleRounding};
use crate::nn::RmsNorm;
use crate::nn::{gelu_tanh, modulated_layer_norm, multi_head_attention, silu, sinusoids, Linear};

/// The timestep's (and guidance's) sinusoids (`Timesteps(num_channels=256)`).
const FREQUENCY_WIDTH: usize = 256;
/// Every norm's epsilon (the blocks' `LayerNorm`s, the `RMSNorm`s of q and k, `norm_out`).
const EPS: f64 = 1e-6;
/// `FluxPosEmbed(theta=10000)`.
const ROPE_THETA: f64 = 10000.0;

/// `transformer/config.json`, with diffusers' defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct Flux1TransformerConfig {
    pub patch_size: usize,
    pub in_channels: usize,
    pub out_channels: Option<usize>,
    pub num_layers: usize,
    pub num_single_layers: usize,
    pub attention_head_dim: usize,
    pub num_attention_heads: usize,
    pub joint_attention_dim: usize,
    pub pooled_projection_dim: usize,
    /// [dev]'s guidance embedding (schnell has none).
    pub guidance_embeds: bool,
    pub axes_dims_rope: Vec<usize>,
}

impl Default for Flux1TransformerConfig {
    fn default() -> Self {
        Flux1TransformerConfig {
            patch_size: 1,
            in_channels: 64,
            out_channels: None,
            num_layers: 19,
            num_single_layers: 38,
            attention_head_dim: 128,
            num_attention_heads: 24,
            joint_attention_dim: 4096,
            pooled_projection_dim: 768,
            guidance_embeds: false,
            axes_dims_rope: vec![16, 56, 56],
        }
    }
}

impl Flux1TransformerConfig {
    /// black-forest-labs/FLUX.1-schnell's `transformer/config.json`.
    pub fn schnell() -> Self {
        Flux1TransformerConfig::default()
    }

    /// black-forest-labs/FLUX.1-dev's (and FLUX.1-Krea-dev's): schnell's with the guidance
    /// embedding.
    pub fn dev() -> Self {
        Flux1TransformerConfig {
            guidance_embeds: true,
            ..Flux1TransformerConfig::default()
        }
    }

    pub fn inner_dim(&self) -> usize {
        self.num_attention_heads * self.attention_head_dim
    }

    /// Parameters as the weight file holds them: 11,891,178,560 for schnell, 11,901,408,320 for
    /// dev (diffusers' model on the meta device).
    pub fn parameters(&self) -> u64 {
        let d = self.inner_dim() as u64;
        let dh = self.attention_head_dim as u64;
        let linear = |i: u64, o: u64| i * o + o;
        let feed_forward = linear(d, 4 * d) + linear(4 * d, d);
        let double = 2 * linear(d, 6 * d) + 8 * linear(d, d) + 4 * dh + 2 * feed_forward;
        let single = linear(d, 3 * d) + 3 * linear(d, d) + 2 * dh + linear(d, 4 * d);
        let single = single + linear(5 * d, d);
        let blocks = self.num_layers as u64 * double + self.num_single_layers as u64 * single;
        self.full_precision_parameters() + blocks
    }

    /// Parameters that int8 runs keep in the run's precision (`load`'s `full_precision` layers):
    /// the conditioning's embedders, the input embedders and the output layers (the blocks'
    /// modulations, a quarter of the model, go int8 with their blocks).
    pub fn full_precision_parameters(&self) -> u64 {
        let d = self.inner_dim() as u64;
        let linear = |i: u64, o: u64| i * o + o;
        let embedder = |i: u64| linear(i, d) + linear(d, d);
        let guidance = match self.guidance_embeds {
            true => embedder(FREQUENCY_WIDTH as u64),
            false => 0,
        };
        let conditioning = embedder(FREQUENCY_WIDTH as u64)
            + guidance
            + embedder(self.pooled_projection_dim as u64);
        let inputs =
            linear(self.in_channels as u64, d) + linear(self.joint_attention_dim as u64, d);
        let out = linear(d, 2 * d) + linear(d, self.in_channels as u64);
        conditioning + inputs + out
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        let mut counts = vec![
            ("in_channels", self.in_channels),
            ("num_layers", self.num_layers.max(1)),
            ("num_single_layers", self.num_single_layers.max(1)),
            ("attention_head_dim", self.attention_head_dim),
            ("num_attention_heads", self.num_attention_heads),
            ("joint_attention_dim", self.joint_attention_dim),
            ("pooled_projection_dim", self.pooled_projection_dim),
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
        if !self.in_channels.is_multiple_of(4) {
            return Err(DiffusionError::config(
                path,
                format!(
                    "in_channels {} is not 2x2 patches of latents (a multiple of 4)",
                    self.in_channels
                ),
            ));
        }
        if self.axes_dims_rope.iter().sum::<usize>() != self.attention_head_dim
            || self.axes_dims_rope.len() != 3
            || self.axes_dims_rope.iter().any(|d| !d.is_multiple_of(2))
        {
            return Err(DiffusionError::config(
                path,
                format!(
                    "axes_dims_rope {:?} must be three even sizes that add up to attention_head_dim {}",
                    self.axes_dims_rope, self.attention_head_dim
                ),
            ));
        }
        Ok(())
    }
}

/// `TimestepEmbedding` and `PixArtAlphaTextProjection`: `linear_2(silu(linear_1(x)))`.
#[derive(Module, Debug)]
struct Embedder<B: Backend> {
    linear_1: Linear<B>,
    linear_2: Linear<B>,
}

impl<B: Backend> Embedder<B> {
    fn load(loader: &mut Loader<B>, prefix: &str, inputs: usize, d: usize) -> Result<Self> {
        Ok(Embedder {
            linear_1: loader.linear(&format!("{prefix}.linear_1"), inputs, d, true)?,
            linear_2: loader.linear(&format!("{prefix}.linear_2"), d, d, true)?,
        })
    }

    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.linear_2.forward(silu(self.linear_1.forward(x)))
    }
}

/// `FeedForward(activation_fn="gelu-tanh")`: `net.2(gelu_tanh(net.0.proj(x)))`.
#[derive(Module, Debug)]
struct FeedForward<B: Backend> {
    up: Linear<B>,
    down: Linear<B>,
}

impl<B: Backend> FeedForward<B> {
    fn load(loader: &mut Loader<B>, p: &str, d: usize) -> Result<Self> {
        Ok(FeedForward {
            up: loader.linear(&format!("{p}.net.0.proj"), d, 4 * d, true)?,
            down: loader.linear(&format!("{p}.net.2"), 4 * d, d, true)?,
        })
    }

    fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        self.down.forward(gelu_tanh(self.up.forward(x)))
    }
}

/// One stream's attention projections: q and k (rows in `half_split` order per head) with their
/// per-head RMS norms, and v.
#[derive(Module, Debug)]
struct Projections<B: Backend> {
    q: Linear<B>,
    k: Linear<B>,
    v: Linear<B>,
    norm_q: RmsNorm<B>,
    norm_k: RmsNorm<B>,
}

#[derive(Module, Debug)]
struct DoubleBlock<B: Backend> {
    /// `norm1.linear` and `norm1_context.linear` (`AdaLayerNormZero`): six modulations each.
    norm1: Linear<B>,
    norm1_context: Linear<B>,
    image: Projections<B>,
    text: Projections<B>,
    to_out: Linear<B>,
    to_add_out: Linear<B>,
    ff: FeedForward<B>,
    ff_context: FeedForward<B>,
}

#[derive(Module, Debug)]
struct SingleBlock<B: Backend> {
    /// `norm.linear` (`AdaLayerNormZeroSingle`): shift, scale and gate.
    norm: Linear<B>,
    attention: Projections<B>,
    proj_mlp: Linear<B>,
    /// Reads [attention | MLP] side by side.
    proj_out: Linear<B>,
}

#[derive(Module, Debug)]
pub struct Flux1Transformer<B: Backend> {
    timestep_embedder: Embedder<B>,
    guidance_embedder: Option<Embedder<B>>,
    text_embedder: Embedder<B>,
    x_embedder: Linear<B>,
    context_embedder: Linear<B>,
    double: Vec<DoubleBlock<B>>,
    single: Vec<SingleBlock<B>>,
    norm_out: Linear<B>,
    proj_out: Linear<B>,
    heads: usize,
    head_dim: usize,
    axes: Vec<usize>,
}

/// A token's position: (t, y, x), as the pipeline's `txt_ids` (all zero) and `img_ids` rows.
pub type Position = [f32; 3];

/// The RoPE tables of a sequence's positions (text, then image), in the heads' channel order
/// (`half_split`): made once per generation.
pub struct Rope<B: Backend> {
    cos: Tensor<B, 4>,
    sin: Tensor<B, 4>,
}

/// Loads the blocks: q and k come out of their projections with each head's channels in
/// `half_split` order, and their norms read their weights in that order.
struct BlockLoader {
    d: usize,
    heads: usize,
    head_dim: usize,
    head_order: Vec<usize>,
}

impl BlockLoader {
    fn new(config: &Flux1TransformerConfig) -> Self {
        BlockLoader {
            d: config.inner_dim(),
            heads: config.num_attention_heads,
            head_dim: config.attention_head_dim,
            head_order: half_split(config.attention_head_dim),
        }
    }

    fn qk<B: Backend>(&self, l: &mut Loader<B>, name: &str) -> Result<Linear<B>> {
        let order: Vec<usize> = (0..self.heads)
            .flat_map(|h| self.head_order.iter().map(move |&c| h * self.head_dim + c))
            .collect();
        let mut parts = l.linear_parts(name, self.d, self.d, true, &[order])?;
        parts.pop().ok_or_else(|| DiffusionError::Tensor {
            path: name.into(),
            tensor: format!("{name}.weight"),
            problem: "made no layer".into(),
        })
    }

    fn projections<B: Backend>(
        &self,
        l: &mut Loader<B>,
        p: &str,
        [q, k, v, norm_q, norm_k]: [&str; 5],
    ) -> Result<Projections<B>> {
        let norm = |l: &mut Loader<B>, name: &str| {
            RmsNorm::load_reordered(l, &format!("{p}.{name}.weight"), &self.head_order, EPS)
        };
        Ok(Projections {
            q: self.qk(l, &format!("{p}.{q}"))?,
            k: self.qk(l, &format!("{p}.{k}"))?,
            v: l.linear(&format!("{p}.{v}"), self.d, self.d, true)?,
            norm_q: norm(l, norm_q)?,
            norm_k: norm(l, norm_k)?,
        })
    }

    fn double<B: Backend>(&self, loader: &mut Loader<B>, i: usize) -> Result<DoubleBlock<B>> {
        let d = self.d;
        let p = format!("transformer_blocks.{i}");
        let attn = format!("{p}.attn");
        Ok(DoubleBlock {
            norm1: loader.linear(&format!("{p}.norm1.linear"), d, 6 * d, true)?,
            norm1_context: loader.linear(&format!("{p}.norm1_context.linear"), d, 6 * d, true)?,
            image: self.projections(loader, &attn, ["to_q", "to_k", "to_v", "norm_q", "norm_k"])?,
            text: self.projections(
                loader,
                &attn,
                [
                    "add_q_proj",
                    "add_k_proj",
                    "add_v_proj",
                    "norm_added_q",
                    "norm_added_k",
                ],
            )?,
            to_out: loader.linear(&format!("{attn}.to_out.0"), d, d, true)?,
            to_add_out: loader.linear(&format!("{attn}.to_add_out"), d, d, true)?,
            ff: FeedForward::load(loader, &format!("{p}.ff"), d)?,
            ff_context: FeedForward::load(loader, &format!("{p}.ff_context"), d)?,
        })
    }

    fn single<B: Backend>(&self, loader: &mut Loader<B>, i: usize) -> Result<SingleBlock<B>> {
        let d = self.d;
        let p = format!("single_transformer_blocks.{i}");
        Ok(SingleBlock {
            norm: loader.linear(&format!("{p}.norm.linear"), d, 3 * d, true)?,
            attention: self.projections(
                loader,
                &format!("{p}.attn"),
                ["to_q", "to_k", "to_v", "norm_q", "norm_k"],
            )?,
            proj_mlp: loader.linear(&format!("{p}.proj_mlp"), d, 4 * d, true)?,
            proj_out: loader.linear(&format!("{p}.proj_out"), 5 * d, d, true)?,
        })
    }
}

impl<B: Backend> Flux1Transformer<B> {
    pub fn load(
        config: &Flux1TransformerConfig,
        path: &Path,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        config.validate(path)?;
        let d = config.inner_dim();
        let embed = "time_text_embed";
        // The conditioning, the embedders and the output layers stay in the run's precision
        // under int8, as the other DiTs' do: they are small, and every value passes through them.
        let (timestep_embedder, guidance_embedder, text_embedder, x_embedder, context_embedder) =
            loader.full_precision(|l| {
                let guidance = match config.guidance_embeds {
                    true => Some(Embedder::load(
                        l,
                        &format!("{embed}.guidance_embedder"),
                        FREQUENCY_WIDTH,
                        d,
                    )?),
                    false => None,
                };
                Ok((
                    Embedder::load(l, &format!("{embed}.timestep_embedder"), FREQUENCY_WIDTH, d)?,
                    guidance,
                    Embedder::load(
                        l,
                        &format!("{embed}.text_embedder"),
                        config.pooled_projection_dim,
                        d,
                    )?,
                    l.linear("x_embedder", config.in_channels, d, true)?,
                    l.linear("context_embedder", config.joint_attention_dim, d, true)?,
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
                l.linear("norm_out.linear", d, 2 * d, true)?,
                l.linear("proj_out", d, config.in_channels, true)?,
            ))
        })?;
        Ok(Flux1Transformer {
            timestep_embedder,
            guidance_embedder,
            text_embedder,
            x_embedder,
            context_embedder,
            double,
            single,
            norm_out,
            proj_out,
            heads: config.num_attention_heads,
            head_dim: config.attention_head_dim,
            axes: config.axes_dims_rope.clone(),
        })
    }

    /// The packed channels a token has (the latents' channels times 4).
    pub fn in_channels(&self) -> usize {
        self.x_embedder.inputs()
    }

    /// Whether the model reads a guidance scale ([dev]) or none (schnell).
    pub fn takes_guidance(&self) -> bool {
        self.guidance_embedder.is_some()
    }

    /// The width of the pooled text it reads.
    pub fn pooled_width(&self) -> usize {
        self.text_embedder.linear_1.inputs()
    }

    /// One velocity prediction.
    /// `x`: packed latents [N, S_img, in_channels]; `context`: T5's states [N, S_txt, joint
    /// width]; `pooled`: CLIP's pooled output [N, pooled width]; `sigma`: the pipeline's
    /// `timestep / 1000`, as it hands it over in the model's dtype; `guidance`: the scale, for a
    /// model with a guidance embedding; `rope`: the tables of the text's then the image's token
    /// positions (`Self::rope`). -> [N, S_img, in_channels]
    pub fn forward(
        &self,
        x: Tensor<B, 3>,
        context: Tensor<B, 3>,
        pooled: Tensor<B, 2>,
        sigma: f32,
        guidance: Option<f32>,
        rope: &Rope<B>,
    ) -> Tensor<B, 3> {
        let [_, s_img, _] = x.dims();
        let s_txt = context.dims()[1];
        debug_assert_eq!(rope.cos.dims()[1], s_txt + s_img);
        let dtype = x.dtype();
        let conditioning = silu(self.conditioning(sigma, guidance, pooled.cast(dtype)));
        let (cos, sin) = (&rope.cos, &rope.sin);

        let mut x = self.x_embedder.forward(x);
        let mut c = self.context_embedder.forward(context.cast(dtype));
        for block in &self.double {
            (c, x) = self.double_block(block, x, c, &conditioning, cos, sin);
        }
        let mut h = Tensor::cat(vec![c, x], 1);
        for block in &self.single {
            h = self.single_block(block, h, &conditioning, cos, sin);
        }
        let h = h.narrow(1, s_txt, s_img);
        // `AdaLayerNormContinuous`: (scale, shift).
        let out = chunks(rows(self.norm_out.forward(conditioning)), 2);
        self.proj_out
            .forward(modulated_layer_norm(h, &out[1], &out[0], EPS))
    }

    /// `time_text_embed`: the timestep's embedding, plus the guidance's where the model has one,
    /// plus the pooled text's projection. [N, D]
    fn conditioning(
        &self,
        sigma: f32,
        guidance: Option<f32>,
        pooled: Tensor<B, 2>,
    ) -> Tensor<B, 2> {
        let dtype = pooled.dtype();
        let device = pooled.device();
        // diffusers: `timestep.to(dtype) * 1000` (and the guidance's), sinusoids in f32.
        let embedded = |value: f32, embedder: &Embedder<B>| {
            let value = half_round(half_round(value, dtype) * 1000.0, dtype);
            let freq = sinusoids(&[value], FREQUENCY_WIDTH, true, 0.0);
            let freq =
                Tensor::<B, 2>::from_data(TensorData::new(freq, [1, FREQUENCY_WIDTH]), &device);
            embedder.forward(freq.cast(dtype))
        };
        let mut time = embedded(sigma, &self.timestep_embedder);
        if let (Some(embedder), Some(scale)) = (&self.guidance_embedder, guidance) {
            time = time + embedded(scale, embedder);
        }
        self.text_embedder.forward(pooled) + time
    }

    fn double_block(
        &self,
        b: &DoubleBlock<B>,
        x: Tensor<B, 3>,
        c: Tensor<B, 3>,
        conditioning: &Tensor<B, 2>,
        cos: &Tensor<B, 4>,
        sin: &Tensor<B, 4>,
    ) -> (Tensor<B, 3>, Tensor<B, 3>) {
        let s_txt = c.dims()[1];
        let s_img = x.dims()[1];
        // (shift, scale, gate) of the attention, then of the feed-forward.
        let m = chunks(rows(b.norm1.forward(conditioning.clone())), 6);
        let mc = chunks(rows(b.norm1_context.forward(conditioning.clone())), 6);
        let nx = modulated_layer_norm(x.clone(), &m[0], &m[1], EPS);
        let nc = modulated_layer_norm(c.clone(), &mc[0], &mc[1], EPS);
        let [qc, kc, vc] = self.project(&b.text, nc);
        let [qx, kx, vx] = self.project(&b.image, nx);
        let attn = self.attention(
            Tensor::cat(vec![qc, qx], 1),
            Tensor::cat(vec![kc, kx], 1),
            Tensor::cat(vec![vc, vx], 1),
            cos,
            sin,
        );
        let attn_c = b.to_add_out.forward(attn.clone().narrow(1, 0, s_txt));
        let attn_x = b.to_out.forward(attn.narrow(1, s_txt, s_img));

        // Gates multiply from the right: the CPU backend's fast broadcast needs the whole
        // tensor on the left.
        let x = x + attn_x * m[2].clone();
        let nx = modulated_layer_norm(x.clone(), &m[3], &m[4], EPS);
        let x = x + b.ff.forward(nx) * m[5].clone();

        let c = c + attn_c * mc[2].clone();
        let nc = modulated_layer_norm(c.clone(), &mc[3], &mc[4], EPS);
        let c = c + b.ff_context.forward(nc) * mc[5].clone();
        (clamp_f16(c), x)
    }

    fn single_block(
        &self,
        b: &SingleBlock<B>,
        h: Tensor<B, 3>,
        conditioning: &Tensor<B, 2>,
        cos: &Tensor<B, 4>,
        sin: &Tensor<B, 4>,
    ) -> Tensor<B, 3> {
        let m = chunks(rows(b.norm.forward(conditioning.clone())), 3);
        let normed = modulated_layer_norm(h.clone(), &m[0], &m[1], EPS);
        let mlp = gelu_tanh(b.proj_mlp.forward(normed.clone()));
        let [q, k, v] = self.project(&b.attention, normed);
        let attn = self.attention(q, k, v, cos, sin);
        let out = b.proj_out.forward(Tensor::cat(vec![attn, mlp], 2));
        clamp_f16(h + out * m[2].clone())
    }

    /// q and k [N, S, heads, dh] normed per head, v [N, S, heads*dh].
    fn project(&self, p: &Projections<B>, h: Tensor<B, 3>) -> [Tensor<B, 4>; 3] {
        let [n, s, _] = h.dims();
        let heads = |t: Tensor<B, 3>| t.reshape([n, s, self.heads, self.head_dim]);
        [
            p.norm_q.forward(heads(p.q.forward(h.clone()))),
            p.norm_k.forward(heads(p.k.forward(h.clone()))),
            heads(p.v.forward(h)),
        ]
    }

    /// RoPE on q and k, then unmasked attention over the joint sequence. -> [N, S, heads*dh]
    fn attention(
        &self,
        q: Tensor<B, 4>,
        k: Tensor<B, 4>,
        v: Tensor<B, 4>,
        cos: &Tensor<B, 4>,
        sin: &Tensor<B, 4>,
    ) -> Tensor<B, 3> {
        let [n, s, heads, dh] = q.dims();
        let q = rotate_halves(q, cos, sin).reshape([n, s, heads * dh]);
        let k = rotate_halves(k, cos, sin).reshape([n, s, heads * dh]);
        multi_head_attention(
            q,
            k,
            v.reshape([n, s, heads * dh]),
            self.heads,
            false,
            false,
        )
    }

    /// `FluxPosEmbed`'s tables (angles in f64).
    pub fn rope(&self, positions: &[Position], dtype: DType, device: &B::Device) -> Rope<B> {
        let (cos, sin) = rope_tables(
            positions,
            &self.axes,
            ROPE_THETA,
            AngleRounding::F64,
            self.heads,
            dtype,
            device,
        );
        Rope { cos, sin }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_configs_are_valid_and_sized_as_upstream() {
        let path = Path::new("<built-in>");
        for (config, parameters) in [
            (Flux1TransformerConfig::schnell(), 11_891_178_560),
            (Flux1TransformerConfig::dev(), 11_901_408_320),
        ] {
            config.validate(path).unwrap();
            assert_eq!(config.parameters(), parameters, "{config:?}");
        }
        let odd = Flux1TransformerConfig {
            axes_dims_rope: vec![16, 56, 58],
            ..Flux1TransformerConfig::dev()
        };
        let err = odd.validate(path).unwrap_err().to_string();
        assert!(err.contains("axes_dims_rope"), "{err}");
    }
}
