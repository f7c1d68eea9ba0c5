//! diffusers' `ZImageTransformer2DModel`, Z-Image's single-stream S3-DiT: 2x2 patches of the
//! latents and the caption's text states are embedded apart, each padded to a multiple of 32
//! tokens with a learnt pad token, refined apart (the image's blocks modulated by the timestep,
//! the caption's not), then run as one sequence [image; caption] through the main blocks, each an
//! RMS-normed attention and SwiGLU with tanh-gated, timestep-modulated sandwich norms; positions
//! enter as 3-axis RoPE (caption index, row, column). One call takes images of one size whose
//! captions have one length (the pipeline groups them), so no attention mask is needed: a
//! padded batch's masked keys are simply absent.

use std::path::Path;

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::io::weights::Init;
use crate::nn::loader::Loader;
use crate::nn::rope::{half_split, rope_tables, rotate_halves, AngleRounding};
use crate::nn::RmsNorm;
use crate::nn::{layer_norm_plain, multi_head_attention, silu, sinusoids, Linear};

/// Tokens of each part are padded to a multiple of this (`SEQ_MULTI_OF`).
const SEQ_MULTIPLE: usize = 32;
/// The timestep embedding's width cap (`ADALN_EMBED_DIM`) and its sinusoids' width.
const ADALN_WIDTH: usize = 256;
const FREQUENCY_WIDTH: usize = 256;
/// `TimestepEmbedder(mid_size=1024)`.
const TIME_HIDDEN: usize = 1024;
/// diffusers' `Attention(qk_norm="rms_norm", eps=1e-5)`.
const QK_NORM_EPS: f64 = 1e-5;

/// `transformer/config.json`, with diffusers' defaults (Z-Image-Turbo's).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct ZImageTransformerConfig {
    pub all_patch_size: Vec<usize>,
    pub all_f_patch_size: Vec<usize>,
    pub in_channels: usize,
    pub dim: usize,
    pub n_layers: usize,
    pub n_refiner_layers: usize,
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub norm_eps: f64,
    pub qk_norm: bool,
    pub cap_feat_dim: usize,
    /// Z-Image Omni's image conditioning (not implemented: refused).
    pub siglip_feat_dim: Option<usize>,
    pub rope_theta: f64,
    pub t_scale: f64,
    pub axes_dims: Vec<usize>,
    pub axes_lens: Vec<usize>,
}

impl Default for ZImageTransformerConfig {
    fn default() -> Self {
        ZImageTransformerConfig {
            all_patch_size: vec![2],
            all_f_patch_size: vec![1],
            in_channels: 16,
            dim: 3840,
            n_layers: 30,
            n_refiner_layers: 2,
            n_heads: 30,
            n_kv_heads: 30,
            norm_eps: 1e-5,
            qk_norm: true,
            cap_feat_dim: 2560,
            siglip_feat_dim: None,
            rope_theta: 256.0,
            t_scale: 1000.0,
            axes_dims: vec![32, 48, 48],
            axes_lens: vec![1024, 512, 512],
        }
    }
}

impl ZImageTransformerConfig {
    pub fn validate(&self, path: &Path) -> Result<()> {
        let mut counts = vec![
            ("in_channels", self.in_channels),
            ("dim", self.dim),
            ("n_layers", self.n_layers),
            ("n_refiner_layers", self.n_refiner_layers.max(1)),
            ("n_heads", self.n_heads),
            ("n_kv_heads", self.n_kv_heads),
            ("cap_feat_dim", self.cap_feat_dim),
        ];
        counts.extend(self.axes_dims.iter().map(|&d| ("axes_dims", d)));
        counts.extend(self.axes_lens.iter().map(|&d| ("axes_lens", d)));
        crate::models::config::check_counts(path, &counts)?;
        let unsupported = |what: String| Err(DiffusionError::unsupported(path, what));
        if self.all_patch_size != [2] || self.all_f_patch_size != [1] {
            return unsupported(format!(
                "transformer patch sizes {:?} x {:?} (supported: [2] x [1])",
                self.all_patch_size, self.all_f_patch_size
            ));
        }
        if self.siglip_feat_dim.is_some() {
            return unsupported("transformer siglip_feat_dim (Z-Image Omni's image input)".into());
        }
        if self.n_kv_heads != self.n_heads {
            return unsupported(format!(
                "transformer n_kv_heads {} different from n_heads {} (diffusers' model ignores it)",
                self.n_kv_heads, self.n_heads
            ));
        }
        let config = |problem: String| Err(DiffusionError::config(path, problem));
        if self.dim == 0 || self.n_heads == 0 || !self.dim.is_multiple_of(self.n_heads) {
            return config(format!(
                "dim {} is not a multiple of n_heads {}",
                self.dim, self.n_heads
            ));
        }
        if self.in_channels == 0 || self.cap_feat_dim == 0 {
            return config("in_channels and cap_feat_dim must be positive".into());
        }
        let head_dim = self.dim / self.n_heads;
        if self.axes_dims.len() != 3
            || self.axes_lens.len() != 3
            || self.axes_dims.iter().any(|d| d % 2 != 0)
            || self.axes_dims.iter().sum::<usize>() != head_dim
        {
            return config(format!(
                "axes_dims {:?} must be three even widths that sum to the head width {head_dim}, with three axes_lens",
                self.axes_dims
            ));
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.norm_eps) || !positive(self.rope_theta) || !self.t_scale.is_finite() {
            return config("norm_eps, rope_theta and t_scale must be positive numbers".into());
        }
        Ok(())
    }

    pub fn head_dim(&self) -> usize {
        self.dim / self.n_heads
    }

    /// The timestep embedding's width (`min(dim, 256)`).
    fn adaln_width(&self) -> usize {
        self.dim.min(ADALN_WIDTH)
    }

    /// Parameters of the model (what its weight files hold).
    pub fn parameters(&self) -> u64 {
        let (d, a, c) = (
            self.dim as u64,
            self.adaln_width() as u64,
            self.cap_feat_dim as u64,
        );
        let patch = 4 * self.in_channels as u64;
        let hidden = (self.dim * 8 / 3) as u64;
        let qk_norm = if self.qk_norm {
            2 * (d / self.n_heads as u64)
        } else {
            0
        };
        let block = 4 * d * d + qk_norm + 3 * d * hidden + 4 * d;
        let modulation = a * 4 * d + 4 * d;
        let blocks = (self.n_layers + self.n_refiner_layers) as u64 * (block + modulation)
            + self.n_refiner_layers as u64 * block;
        let time = FREQUENCY_WIDTH as u64 * TIME_HIDDEN as u64
            + TIME_HIDDEN as u64
            + TIME_HIDDEN as u64 * a
            + a;
        let embedders = patch * d + d + c + c * d + d + 2 * d;
        let final_layer = d * patch + patch + a * d + d;
        blocks + time + embedders + final_layer
    }
}

#[derive(Module, Debug)]
struct Block<B: Backend> {
    to_q: Linear<B>,
    to_k: Linear<B>,
    to_v: Linear<B>,
    to_out: Linear<B>,
    norm_q: Option<RmsNorm<B>>,
    norm_k: Option<RmsNorm<B>>,
    w1: Linear<B>,
    w2: Linear<B>,
    w3: Linear<B>,
    attention_norm1: RmsNorm<B>,
    attention_norm2: RmsNorm<B>,
    ffn_norm1: RmsNorm<B>,
    ffn_norm2: RmsNorm<B>,
    /// The timestep's scales and gates (`adaLN_modulation`); the caption's refiner has none.
    modulation: Option<Linear<B>>,
}

/// The rotary tables of one sequence, as `rotate_halves` takes them: [1, S, heads or 1, dh].
#[derive(Debug, Clone)]
pub struct Rope<B: Backend> {
    cos: Tensor<B, 4>,
    sin: Tensor<B, 4>,
}

/// The rotary tables of one call: the image patches', the caption's, and the whole sequence's
/// (the two side by side). They depend only on the latents' size and the caption's length, so a
/// generation makes them once for all its steps.
#[derive(Debug, Clone)]
pub struct CallRope<B: Backend> {
    image: Rope<B>,
    caption: Rope<B>,
    unified: Rope<B>,
}

#[derive(Module, Debug)]
pub struct ZImageTransformer<B: Backend> {
    x_embedder: Linear<B>,
    final_linear: Linear<B>,
    final_modulation: Linear<B>,
    noise_refiner: Vec<Block<B>>,
    context_refiner: Vec<Block<B>>,
    layers: Vec<Block<B>>,
    time_in: Linear<B>,
    time_out: Linear<B>,
    cap_norm: RmsNorm<B>,
    cap_embedder: Linear<B>,
    x_pad_token: Param<Tensor<B, 2>>,
    cap_pad_token: Param<Tensor<B, 2>>,
    in_channels: usize,
    heads: usize,
    head_dim: usize,
    t_scale: f64,
    rope_theta: f64,
    axes_dims: Vec<usize>,
}

impl<B: Backend> ZImageTransformer<B> {
    pub fn load(
        config: &ZImageTransformerConfig,
        path: &Path,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        config.validate(path)?;
        let (d, eps, dh) = (config.dim, config.norm_eps, config.head_dim());
        let patch = 4 * config.in_channels;
        let a = config.adaln_width();
        // The embedders and the final layer stay in the run's precision under int8 (as FLUX.2's).
        let (x_embedder, final_linear, final_modulation, time_in, time_out, cap_embedder) = loader
            .full_precision(|l| {
                Ok((
                    l.linear("all_x_embedder.2-1", patch, d, true)?,
                    l.linear("all_final_layer.2-1.linear", d, patch, true)?,
                    l.linear("all_final_layer.2-1.adaLN_modulation.1", a, d, true)?,
                    l.linear("t_embedder.mlp.0", FREQUENCY_WIDTH, TIME_HIDDEN, true)?,
                    l.linear("t_embedder.mlp.2", TIME_HIDDEN, a, true)?,
                    l.linear("cap_embedder.1", config.cap_feat_dim, d, true)?,
                ))
            })?;
        let cap_norm = RmsNorm::load(loader, "cap_embedder.0.weight", config.cap_feat_dim, eps)?;
        let pad = |l: &mut Loader<B>, name: &str| -> Result<Param<Tensor<B, 2>>> {
            Ok(Param::from_tensor(l.tensor(name, [1, d], Init::Zeros)?))
        };
        let x_pad_token = pad(loader, "x_pad_token")?;
        let cap_pad_token = pad(loader, "cap_pad_token")?;
        let mut blocks = |prefix: &str, count: usize, modulated: bool| -> Result<Vec<Block<B>>> {
            (0..count)
                .map(|i| Block::load(loader, &format!("{prefix}.{i}"), config, modulated))
                .collect()
        };
        let noise_refiner = blocks("noise_refiner", config.n_refiner_layers, true)?;
        let context_refiner = blocks("context_refiner", config.n_refiner_layers, false)?;
        let layers = blocks("layers", config.n_layers, true)?;
        Ok(ZImageTransformer {
            x_embedder,
            final_linear,
            final_modulation,
            noise_refiner,
            context_refiner,
            layers,
            time_in,
            time_out,
            cap_norm,
            cap_embedder,
            x_pad_token,
            cap_pad_token,
            in_channels: config.in_channels,
            heads: config.n_heads,
            head_dim: dh,
            t_scale: config.t_scale,
            rope_theta: config.rope_theta,
            axes_dims: config.axes_dims.clone(),
        })
    }

    pub fn in_channels(&self) -> usize {
        self.in_channels
    }

    /// The caption width it takes (the text encoder's hidden size).
    pub fn caption_width(&self) -> usize {
        self.cap_embedder.inputs()
    }

    /// One call: `latents` [N, C, H, W] (H, W even) with `caption` [N, L, cap width] (the real
    /// tokens' text states, the same length for every row), at `t` as the pipeline gives it
    /// (`(1000 - timestep) / 1000`). Returns the model's output [N, C, H, W] in the activations'
    /// dtype (the pipeline negates it: the velocity points from image to noise).
    pub fn forward(&self, latents: Tensor<B, 4>, caption: Tensor<B, 3>, t: f32) -> Tensor<B, 4> {
        let [_, _, h, w] = latents.dims();
        let rope = self.call_rope((h, w), caption.dims()[1], &latents.device());
        self.forward_with(latents, caption, t, &rope)
    }

    /// The rotary tables of a call on latents of `h` x `w` with a caption of `caption_len` tokens.
    pub fn call_rope(
        &self,
        (h, w): (usize, usize),
        caption_len: usize,
        device: &B::Device,
    ) -> CallRope<B> {
        let dtype = self.x_pad_token.val().dtype();
        let (ht, wt) = (h / 2, w / 2);
        let image_padded = padded(ht * wt);
        let caption_padded = padded(caption_len);
        let mut positions: Vec<[f32; 3]> = Vec::with_capacity(image_padded);
        for row in 0..ht {
            for col in 0..wt {
                positions.push([(caption_padded + 1) as f32, row as f32, col as f32]);
            }
        }
        positions.resize(image_padded, [0.0; 3]);
        let caption_positions: Vec<[f32; 3]> = (0..caption_padded)
            .map(|i| [(1 + i) as f32, 0.0, 0.0])
            .collect();
        let image = self.rope(&positions, dtype, device);
        let caption = self.rope(&caption_positions, dtype, device);
        let unified = Rope {
            cos: Tensor::cat(vec![image.cos.clone(), caption.cos.clone()], 1),
            sin: Tensor::cat(vec![image.sin.clone(), caption.sin.clone()], 1),
        };
        CallRope {
            image,
            caption,
            unified,
        }
    }

    /// `forward` with the call's rotary tables made beforehand (`call_rope` of these sizes).
    pub fn forward_with(
        &self,
        latents: Tensor<B, 4>,
        caption: Tensor<B, 3>,
        t: f32,
        rope: &CallRope<B>,
    ) -> Tensor<B, 4> {
        let [n, c, h, w] = latents.dims();
        let device = latents.device();
        let dtype = self.x_pad_token.val().dtype();
        let (ht, wt) = (h / 2, w / 2);
        let image = ht * wt;
        let image_padded = padded(image);
        let caption_padded = padded(caption.dims()[1]);

        // The timestep: sinusoids of t * t_scale, then an MLP.
        let freq = sinusoids(&[t * self.t_scale as f32], FREQUENCY_WIDTH, true, 0.0);
        let freq = Tensor::<B, 2>::from_data(TensorData::new(freq, [1, FREQUENCY_WIDTH]), &device);
        let adaln = self
            .time_out
            .forward(silu(self.time_in.forward(freq.cast(dtype))));

        // Image tokens: 2x2 patches, (row, column) order, features (dy, dx, channel).
        let patches = latents
            .cast(dtype)
            .reshape([n, c, ht, 2, wt, 2])
            .permute([0, 2, 4, 3, 5, 1])
            .reshape([n, image, 4 * c]);
        let x = with_pad(
            self.x_embedder.forward(patches),
            &self.x_pad_token,
            image_padded,
        );
        let mut x = x;
        for block in &self.noise_refiner {
            x = block.forward(x, &rope.image, Some(&adaln), self);
        }
        let cap = self
            .cap_embedder
            .forward(self.cap_norm.forward(caption.cast(dtype)));
        let mut cap = with_pad(cap, &self.cap_pad_token, caption_padded);
        for block in &self.context_refiner {
            cap = block.forward(cap, &rope.caption, None, self);
        }

        let mut unified = Tensor::cat(vec![x, cap], 1);
        for block in &self.layers {
            unified = block.forward(unified, &rope.unified, Some(&adaln), self);
        }
        let scale = self.final_modulation.forward(silu(adaln)) + 1.0;
        let [_, width] = scale.dims();
        let out =
            layer_norm_plain(unified.narrow(1, 0, image), 1e-6) * scale.reshape([1, 1, width]);
        self.final_linear
            .forward(out)
            .reshape([n, ht, wt, 2, 2, c])
            .permute([0, 5, 1, 3, 2, 4])
            .reshape([n, c, h, w])
    }

    /// `RopeEmbedder`'s tables (`rope_tables`, angles rounded to f32 as torch's `.float()`).
    fn rope(&self, positions: &[[f32; 3]], dtype: DType, device: &B::Device) -> Rope<B> {
        let (cos, sin) = rope_tables(
            positions,
            &self.axes_dims,
            self.rope_theta,
            AngleRounding::F32,
            self.heads,
            dtype,
            device,
        );
        Rope { cos, sin }
    }
}

impl<B: Backend> Block<B> {
    fn load(
        loader: &mut Loader<B>,
        p: &str,
        config: &ZImageTransformerConfig,
        modulated: bool,
    ) -> Result<Self> {
        let (d, eps, dh) = (config.dim, config.norm_eps, config.head_dim());
        let hidden = config.dim * 8 / 3;
        // q and k come out with each head's channels in `half_split` order; their norms read
        // their weights in that order.
        let head_order = half_split(dh);
        let qk_order: Vec<usize> = (0..config.n_heads)
            .flat_map(|h| head_order.iter().map(move |&c| h * dh + c))
            .collect();
        let qk = |l: &mut Loader<B>, name: &str| -> Result<Linear<B>> {
            let mut parts = l.linear_parts(
                &format!("{p}.attention.{name}"),
                d,
                d,
                false,
                std::slice::from_ref(&qk_order),
            )?;
            Ok(parts.remove(0))
        };
        let qk_norm = |l: &mut Loader<B>, name: &str| -> Result<Option<RmsNorm<B>>> {
            match config.qk_norm {
                true => Ok(Some(RmsNorm::load_reordered(
                    l,
                    &format!("{p}.attention.{name}.weight"),
                    &head_order,
                    QK_NORM_EPS,
                )?)),
                false => Ok(None),
            }
        };
        let norm =
            |l: &mut Loader<B>, name: &str| RmsNorm::load(l, &format!("{p}.{name}.weight"), d, eps);
        let lin = |l: &mut Loader<B>, name: &str, i: usize, o: usize| {
            l.linear(&format!("{p}.{name}"), i, o, false)
        };
        Ok(Block {
            to_q: qk(loader, "to_q")?,
            to_k: qk(loader, "to_k")?,
            to_v: lin(loader, "attention.to_v", d, d)?,
            to_out: lin(loader, "attention.to_out.0", d, d)?,
            norm_q: qk_norm(loader, "norm_q")?,
            norm_k: qk_norm(loader, "norm_k")?,
            w1: lin(loader, "feed_forward.w1", d, hidden)?,
            w2: lin(loader, "feed_forward.w2", hidden, d)?,
            w3: lin(loader, "feed_forward.w3", d, hidden)?,
            attention_norm1: norm(loader, "attention_norm1")?,
            attention_norm2: norm(loader, "attention_norm2")?,
            ffn_norm1: norm(loader, "ffn_norm1")?,
            ffn_norm2: norm(loader, "ffn_norm2")?,
            modulation: match modulated {
                true => Some(loader.full_precision(|l| {
                    l.linear(
                        &format!("{p}.adaLN_modulation.0"),
                        config.adaln_width(),
                        4 * d,
                        true,
                    )
                })?),
                false => None,
            },
        })
    }

    /// `x` [N, S, D]; `adaln` [1, A], the timestep's embedding (modulated blocks only).
    fn forward(
        &self,
        x: Tensor<B, 3>,
        rope: &Rope<B>,
        adaln: Option<&Tensor<B, 2>>,
        model: &ZImageTransformer<B>,
    ) -> Tensor<B, 3> {
        let modulation = match (&self.modulation, adaln) {
            (Some(linear), Some(adaln)) => {
                let m = linear.forward(adaln.clone());
                let d = m.dims()[1] / 4;
                let part = |k: usize| m.clone().narrow(1, k * d, d).reshape([1, 1, d]);
                Some((part(0) + 1.0, part(1).tanh(), part(2) + 1.0, part(3).tanh()))
            }
            _ => None,
        };
        let ff = |h: Tensor<B, 3>| {
            self.w2
                .forward(silu(self.w1.forward(h.clone())) * self.w3.forward(h))
        };
        match modulation {
            Some((scale_msa, gate_msa, scale_mlp, gate_mlp)) => {
                let h = self.attention_norm1.forward(x.clone()) * scale_msa;
                let x = x + gate_msa * self.attention_norm2.forward(self.attend(h, rope, model));
                let h = self.ffn_norm1.forward(x.clone()) * scale_mlp;
                x + gate_mlp * self.ffn_norm2.forward(ff(h))
            }
            None => {
                let h = self.attention_norm1.forward(x.clone());
                let x = x + self.attention_norm2.forward(self.attend(h, rope, model));
                let h = self.ffn_norm1.forward(x.clone());
                x + self.ffn_norm2.forward(ff(h))
            }
        }
    }

    /// Self-attention over the whole sequence, q and k RMS-normed per head and rotated.
    fn attend(
        &self,
        h: Tensor<B, 3>,
        rope: &Rope<B>,
        model: &ZImageTransformer<B>,
    ) -> Tensor<B, 3> {
        let [n, s, d] = h.dims();
        let (heads, dh) = (model.heads, model.head_dim);
        let split = |t: Tensor<B, 3>| t.reshape([n, s, heads, dh]);
        let norm = |t: Tensor<B, 4>, norm: &Option<RmsNorm<B>>| match norm {
            Some(norm) => norm.forward(t),
            None => t,
        };
        let q = norm(split(self.to_q.forward(h.clone())), &self.norm_q);
        let k = norm(split(self.to_k.forward(h.clone())), &self.norm_k);
        let q = rotate_halves(q, &rope.cos, &rope.sin).reshape([n, s, d]);
        let k = rotate_halves(k, &rope.cos, &rope.sin).reshape([n, s, d]);
        let v = self.to_v.forward(h);
        self.to_out
            .forward(multi_head_attention(q, k, v, heads, false, false))
    }
}

/// `len` rounded up to a multiple of `SEQ_MULTIPLE`.
fn padded(len: usize) -> usize {
    len.div_ceil(SEQ_MULTIPLE) * SEQ_MULTIPLE
}

/// `x` [N, S, D] followed by the pad token up to `to` tokens.
fn with_pad<B: Backend>(x: Tensor<B, 3>, token: &Param<Tensor<B, 2>>, to: usize) -> Tensor<B, 3> {
    let [n, s, d] = x.dims();
    if s == to {
        return x;
    }
    let pad = token
        .val()
        .cast(x.dtype())
        .reshape([1, 1, d])
        .expand([n, to - s, d]);
    Tensor::cat(vec![x, pad], 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tongyi-MAI/Z-Image-Turbo's transformer: diffusers' `ZImageTransformer2DModel()` has
    /// 6,154,908,736 parameters (counted on the meta device).
    #[test]
    fn turbos_config_is_valid_and_sized_as_upstream() {
        let config = ZImageTransformerConfig::default();
        config
            .validate(Path::new("transformer/config.json"))
            .unwrap();
        assert_eq!(config.parameters(), 6_154_908_736);
        let omni = ZImageTransformerConfig {
            siglip_feat_dim: Some(1152),
            ..config.clone()
        };
        let err = omni.validate(Path::new("c.json")).unwrap_err().to_string();
        assert!(err.contains("siglip_feat_dim"), "{err}");
        let odd = ZImageTransformerConfig {
            axes_dims: vec![32, 48, 40],
            ..config
        };
        assert!(odd.validate(Path::new("c.json")).is_err());
    }
}
