//! Layers shared by the text encoder, UNet and VAE: burn `Module`s whose weights are `Param`s, built
//! by `nn::loader::Loader` (so a model reports its parameter count and can move between devices);
//! norms compute their statistics in f32 whatever the activations' dtype.

pub mod blocks;
pub mod int8;
pub mod loader;
pub mod modulation;
pub mod resnet;
pub mod rms_norm;
pub mod rope;

pub use rms_norm::RmsNorm;

use burn::module::{ModuleVisitor, Param};
use burn::prelude::*;
use burn::tensor::activation;
use burn::tensor::module::{attention, conv2d, linear};
use burn::tensor::ops::{AttentionModuleOptions, PaddedConvOptions};
use burn::tensor::{DType, TensorPrimitive};

use blocks::BlockMatrix;
use int8::Int8Matrix;

/// A layer's weight: in the run's precision, 8-bit (`int8`, the `minimal` memory profile), or a
/// linear layer's weight in its file's codes (`blocks`: GGUF quantized types, FP8).
// A model holds a few hundred of these, built once: the larger variant costs nothing worth boxing.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum Weight<B: Backend> {
    Float(Param<Tensor<B, 2>>),
    Int8(Int8Matrix<B>),
    /// Stored as the file holds it, [outputs, inputs]; only linear layers keep one.
    Blocks(BlockMatrix<B>),
}

impl<B: Backend> Weight<B> {
    /// The weight in `dtype` (an int8 weight is dequantized; a float one is used as stored).
    fn val(&self, dtype: DType) -> Tensor<B, 2> {
        match self {
            Weight::Float(w) => w.val(),
            Weight::Int8(q) => q.dequantize(dtype),
            Weight::Blocks(b) => b.dequantize(dtype).transpose(),
        }
    }

    fn dims(&self) -> [usize; 2] {
        match self {
            Weight::Float(w) => w.dims(),
            Weight::Int8(q) => q.dims(),
            Weight::Blocks(b) => {
                let [outputs, inputs] = b.dims();
                [inputs, outputs]
            }
        }
    }
}

/// `y = x W + b`, with `W` stored as [inputs, outputs] (PyTorch's [outputs, inputs] transposed at
/// load).
#[derive(Module, Debug)]
pub struct Linear<B: Backend> {
    pub weight: Weight<B>,
    pub bias: Option<Param<Tensor<B, 1>>>,
}

impl<B: Backend> Linear<B> {
    pub fn new(weight: Weight<B>, bias: Option<Tensor<B, 1>>) -> Self {
        Linear {
            weight,
            bias: bias.map(Param::from_tensor),
        }
    }

    /// `x`: [..., inputs] -> [..., outputs]
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let weight = self.weight.val(x.dtype());
        linear(x, weight, self.bias.as_ref().map(Param::val))
    }

    pub fn inputs(&self) -> usize {
        self.weight.dims()[0]
    }

    pub fn outputs(&self) -> usize {
        self.weight.dims()[1]
    }
}

/// A square-kernel 2D convolution with symmetric padding.
#[derive(Module, Debug)]
pub struct Conv2d<B: Backend> {
    /// [outputs, inputs * k * k]; in the run's precision or int8 (one scale per output).
    pub weight: Weight<B>,
    pub bias: Param<Tensor<B, 1>>,
    pub kernel: usize,
    pub stride: usize,
    pub padding: usize,
}

impl<B: Backend> Conv2d<B> {
    /// The weights' dtype: the run's precision (int8 weights compute in their bias's dtype).
    pub fn dtype(&self) -> DType {
        self.bias.dtype()
    }

    /// [outputs, inputs, k, k] in `dtype`.
    fn kernel_weights(&self, dtype: DType) -> Tensor<B, 4> {
        let [outputs, flat] = self.weight.dims();
        let k = self.kernel;
        self.weight
            .val(dtype)
            .reshape([outputs, flat / (k * k), k, k])
    }

    /// `x`: [N, inputs, H, W] -> [N, outputs, H', W']
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let options = PaddedConvOptions::asymmetric(
            [self.stride; 2],
            [self.padding; 2],
            [self.padding; 2],
            [1, 1],
            1,
        );
        let weight = self.kernel_weights(x.dtype());
        conv2d(x, weight, Some(self.bias.val()), options)
    }

    /// Stride-2 convolution after padding one zero row and column at the bottom and right, as
    /// diffusers' `Downsample2D` does when its padding is 0.
    /// The zeros are concatenated, in the input's dtype: burn's padding (`pad_constant`) fills
    /// with an f32 tensor, which the fusion backends refuse for f16 input (`DTypeMismatch`).
    pub fn forward_pad_end(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let column = x.clone().narrow(3, 0, 1).zeros_like();
        let x = Tensor::cat(vec![x, column], 3);
        let row = x.clone().narrow(2, 0, 1).zeros_like();
        let x = Tensor::cat(vec![x, row], 2);
        let options = PaddedConvOptions::asymmetric([self.stride; 2], [0, 0], [0, 0], [1, 1], 1);
        let weight = self.kernel_weights(x.dtype());
        conv2d(x, weight, Some(self.bias.val()), options)
    }
}

/// `nn.GroupNorm` over [N, C, H, W]; parameters and statistics in f32.
#[derive(Module, Debug)]
pub struct GroupNorm<B: Backend> {
    pub gamma: Param<Tensor<B, 1>>,
    pub beta: Param<Tensor<B, 1>>,
    pub groups: usize,
    pub eps: f64,
}

impl<B: Backend> GroupNorm<B> {
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.norm(x, false)
    }

    /// `silu(self.forward(x))` in one op (fused on the CPU backend).
    pub fn forward_silu(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.norm(x, true)
    }

    /// The backend's `group_norm` op (a fused kernel on the CPU backend, composed tensor ops
    /// elsewhere; see vendor/burn-backend), on f32 activations.
    fn norm(&self, x: Tensor<B, 4>, silu: bool) -> Tensor<B, 4> {
        let dtype = x.dtype();
        let x = x.cast(DType::F32).into_primitive().tensor();
        let gamma = self.gamma.val().into_primitive().tensor();
        let beta = self.beta.val().into_primitive().tensor();
        let y = B::group_norm(x, gamma, beta, self.groups, self.eps, silu);
        Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(y)).cast(dtype)
    }
}

/// `nn.LayerNorm(elementwise_affine=False)` over the last dimension of [N, S, D], statistics in
/// f32. No weight enters the reduction's output: on wgpu in f16, burn's reduce fusion fails to
/// launch when an f32 weight joins an f16 result (burn-cubecl-fusion 0.21).
pub fn layer_norm_plain<B: Backend>(x: Tensor<B, 3>, eps: f64) -> Tensor<B, 3> {
    let dtype = x.dtype();
    let x = x.cast(DType::F32);
    let centered = x.clone() - x.mean_dim(2);
    let var = (centered.clone() * centered.clone()).mean_dim(2);
    (centered / (var + eps).sqrt()).cast(dtype)
}

/// `layer_norm_plain(x) * (1 + scale) + shift` with `scale` and `shift` [N, 1, D] (one row per
/// sample): a DiT's adaptive norm. On the CPU backend it is burn's fused `layer_norm` with the
/// sample's rows as its weight and bias (one pass over the statistics and one to write, where the
/// composed ops made eight passes); elsewhere the composed norm, then the modulation in the
/// activations' dtype.
pub fn modulated_layer_norm<B: Backend>(
    x: Tensor<B, 3>,
    shift: &Tensor<B, 3>,
    scale: &Tensor<B, 3>,
    eps: f64,
) -> Tensor<B, 3> {
    if !runs_on_cpu::<B>(&x.device()) {
        return layer_norm_plain(x, eps) * (scale.clone() + 1.0) + shift.clone();
    }
    let [n, _, d] = x.dims();
    let dtype = x.dtype();
    let gamma = (scale.clone().cast(DType::F32) + 1.0).reshape([n, d]);
    let beta = shift.clone().cast(DType::F32).reshape([n, d]);
    let sample = |i: usize| {
        let row = |t: &Tensor<B, 2>| {
            t.clone()
                .narrow(0, i, 1)
                .reshape([d])
                .into_primitive()
                .tensor()
        };
        let x = x
            .clone()
            .narrow(0, i, 1)
            .cast(DType::F32)
            .into_primitive()
            .tensor();
        let y = B::layer_norm(x, row(&gamma), Some(row(&beta)), eps);
        Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(y)).cast(dtype)
    };
    if n == 1 {
        return sample(0);
    }
    Tensor::cat((0..n).map(sample).collect(), 0)
}

/// `nn.LayerNorm` over the last dimension of [N, S, D]; parameters and statistics in f32.
#[derive(Module, Debug)]
pub struct LayerNorm<B: Backend> {
    pub gamma: Param<Tensor<B, 1>>,
    pub beta: Param<Tensor<B, 1>>,
    pub eps: f64,
}

impl<B: Backend> LayerNorm<B> {
    /// burn's fused `layer_norm` op (one pass per row on the CPU backend; a hand-composed norm
    /// cost 50x more there), on f32 activations.
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let dtype = x.dtype();
        let x = x.cast(DType::F32).into_primitive().tensor();
        let gamma = self.gamma.val().into_primitive().tensor();
        let beta = self.beta.val().into_primitive().tensor();
        let y = B::layer_norm(x, gamma, Some(beta), self.eps);
        Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(y)).cast(dtype)
    }
}

/// diffusers' `get_timestep_embedding` of each value, computed in f32 on the host: [sin | cos]
/// (or [cos | sin] when flipped), `dim` values per row.
pub fn sinusoids(values: &[f32], dim: usize, flip_sin_to_cos: bool, freq_shift: f32) -> Vec<f32> {
    let half = dim / 2;
    let mut out = vec![0f32; dim * values.len()];
    for (row, &value) in out.chunks_exact_mut(dim).zip(values) {
        for k in 0..half {
            let exponent = -(10000f32.ln()) * k as f32 / (half as f32 - freq_shift);
            let arg = value * exponent.exp();
            let (first, second) = if flip_sin_to_cos {
                (arg.cos(), arg.sin())
            } else {
                (arg.sin(), arg.cos())
            };
            row[k] = first;
            row[half + k] = second;
        }
    }
    out
}

/// GELU's tanh approximation (transformers' `gelu_new`, torch's `approximate="tanh"`):
/// `0.5 x (1 + tanh(z))` with `z = sqrt(2/pi) (x + 0.044715 x^3)`.
pub fn gelu_tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    let sqrt_2_over_pi = (2.0 / std::f64::consts::PI).sqrt();
    if runs_on_cpu::<B>(&x.device()) {
        // The same value as `x sigmoid(2z)`, in 6 passes instead of 9: the CPU's sigmoid is
        // vectorised on every core, where its tanh is a scalar libm call on one thread (a
        // 1536-wide feed-forward is 25 million values a call at 4096 tokens).
        let square = x.clone() * x.clone();
        let twice_z =
            x.clone() * (square * (2.0 * 0.044715 * sqrt_2_over_pi) + 2.0 * sqrt_2_over_pi);
        return x * activation::sigmoid(twice_z);
    }
    let cube = x.clone() * x.clone() * x.clone();
    let inner = (x.clone() + cube * 0.044715) * sqrt_2_over_pi;
    x * (inner.tanh() + 1.0) * 0.5
}

pub fn silu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    activation::silu(x)
}

/// Bytes a module's parameters occupy where they are (float and int parameters, each in its
/// stored dtype).
pub fn weight_bytes<B: Backend, M: Module<B>>(module: &M) -> u64 {
    struct Bytes(u64);
    impl<B: Backend> ModuleVisitor<B> for Bytes {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.0 += (param.shape().num_elements() * param.dtype().size()) as u64;
        }
        fn visit_int<const D: usize>(&mut self, param: &Param<Tensor<B, D, Int>>) {
            self.0 += (param.shape().num_elements() * param.dtype().size()) as u64;
        }
    }
    let mut bytes = Bytes(0);
    module.visit(&mut bytes);
    bytes.0
}

/// Score-matrix elements one attention call may hold if the backend falls back to the unfused
/// kernel (burn's GPU autotune can pick it): 2^26 f32 = 256 MiB.
pub const SCORE_BUDGET: usize = 1 << 26;

/// Whether `device` is burn's CPU backend (flex). Its elementwise kernels are fast only on whole
/// tensors of the same shape or simple broadcasts (strided views go through a scalar walk), and
/// its attention tiles over keys itself, so some layers take another path there.
pub fn runs_on_cpu<B: Backend>(device: &B::Device) -> bool {
    B::name(device).contains("flex")
}

/// Multi-head scaled dot-product attention through burn's fused attention op (flash-style kernels).
/// On GPU backends the query rows are processed in chunks so that no backend ever holds more than
/// `SCORE_BUDGET` score elements at once (full SD1.5 at 64x64 latents would otherwise need 1 GiB
/// per layer if the unfused kernel were picked).
/// `q`: [N, Sq, heads*dh], `k`/`v`: [N, Sk, heads*dh] -> [N, Sq, heads*dh]. With `upcast` the
/// product runs in f32 (diffusers' `upcast_attention`).
pub fn multi_head_attention<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    heads: usize,
    causal: bool,
    upcast: bool,
) -> Tensor<B, 3> {
    multi_head_attention_within(q, k, v, heads, causal, upcast, SCORE_BUDGET)
}

/// `multi_head_attention` with `score_budget` score elements per call instead of `SCORE_BUDGET`.
pub fn multi_head_attention_within<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    heads: usize,
    causal: bool,
    upcast: bool,
    score_budget: usize,
) -> Tensor<B, 3> {
    let dtype = q.dtype();
    let [n, sq, inner] = q.dims();
    let sk = k.dims()[1];
    let dh = inner / heads;
    let split = |t: Tensor<B, 3>, s: usize| {
        let t = t.reshape([n, s, heads, dh]).swap_dims(1, 2);
        if upcast {
            t.cast(DType::F32)
        } else {
            t
        }
    };
    let options = AttentionModuleOptions {
        is_causal: causal,
        ..Default::default()
    };
    // Chunking the queries would only copy k and v once more per chunk where the kernel tiles
    // over keys itself (the CPU backend's keeps one key tile per query row).
    let tiled = runs_on_cpu::<B>(&q.device());
    let (q, k, v) = (split(q, sq), split(k, sk), split(v, sk));
    let rows = (score_budget / (n * heads * sk).max(1)).max(1);
    // A causal mask is relative to the query's position, so causal inputs are never chunked
    // (they are the text encoder's 77 tokens).
    let out = if tiled || causal || rows >= sq {
        attention(q, k, v, None, None, options)
    } else {
        let chunks = (0..sq)
            .step_by(rows)
            .map(|start| {
                let end = (start + rows).min(sq);
                let qc = q.clone().slice([0..n, 0..heads, start..end, 0..dh]);
                attention(qc, k.clone(), v.clone(), None, None, options)
            })
            .collect();
        Tensor::cat(chunks, 2)
    };
    out.swap_dims(1, 2).reshape([n, sq, inner]).cast(dtype)
}

/// Nearest-neighbour resize of [N, C, H, W] to [N, C, oh, ow] with PyTorch's index rule
/// (`floor(dst * in / out)` in f32; exact doubling when the size doubles).
pub fn upsample_nearest<B: Backend>(x: Tensor<B, 4>, oh: usize, ow: usize) -> Tensor<B, 4> {
    let [n, c, h, w] = x.dims();
    if oh == 2 * h && ow == 2 * w {
        return x
            .reshape([n, c, h, 1, w, 1])
            .expand([n, c, h, 2, w, 2])
            .reshape([n, c, oh, ow]);
    }
    let device = x.device();
    let indices = |inp: usize, out: usize| {
        let scale = inp as f32 / out as f32;
        let idx: Vec<i64> = (0..out)
            .map(|o| ((o as f32 * scale).floor() as usize).min(inp - 1) as i64)
            .collect();
        Tensor::<B, 1, Int>::from_data(TensorData::new(idx, [out]), &device)
    };
    x.select(2, indices(h, oh)).select(3, indices(w, ow))
}
