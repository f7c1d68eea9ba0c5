//! diffusers' `ResnetBlock2D`, `Downsample2D` and `Upsample2D`, shared by the UNet and the VAE.

use burn::prelude::*;

use crate::error::Result;
use crate::nn::loader::Loader;
use crate::nn::{silu, upsample_nearest, Conv2d, GroupNorm, Linear};

/// `ResnetBlock2D` with `time_embedding_norm="default"` and `output_scale_factor=1`.
#[derive(Module, Debug)]
pub struct ResnetBlock2D<B: Backend> {
    norm1: GroupNorm<B>,
    conv1: Conv2d<B>,
    time_emb_proj: Option<Linear<B>>,
    norm2: GroupNorm<B>,
    conv2: Conv2d<B>,
    conv_shortcut: Option<Conv2d<B>>,
    output_scale_factor: f32,
}

pub struct ResnetSpec {
    pub inputs: usize,
    pub outputs: usize,
    /// Channels of the time embedding; `None` in the VAE.
    pub temb_channels: Option<usize>,
    pub groups: usize,
    pub eps: f64,
    pub output_scale_factor: f32,
}

impl<B: Backend> ResnetBlock2D<B> {
    pub fn load(prefix: &str, spec: &ResnetSpec, loader: &mut Loader<B>) -> Result<Self> {
        let (i, o) = (spec.inputs, spec.outputs);
        Ok(ResnetBlock2D {
            norm1: loader.group_norm(&format!("{prefix}.norm1"), spec.groups, i, spec.eps)?,
            conv1: loader.conv2d(&format!("{prefix}.conv1"), i, o, 3, 1, 1)?,
            time_emb_proj: match spec.temb_channels {
                Some(t) => Some(loader.linear(&format!("{prefix}.time_emb_proj"), t, o, true)?),
                None => None,
            },
            norm2: loader.group_norm(&format!("{prefix}.norm2"), spec.groups, o, spec.eps)?,
            conv2: loader.conv2d(&format!("{prefix}.conv2"), o, o, 3, 1, 1)?,
            conv_shortcut: if i != o {
                Some(loader.conv2d(&format!("{prefix}.conv_shortcut"), i, o, 1, 1, 0)?)
            } else {
                None
            },
            output_scale_factor: spec.output_scale_factor,
        })
    }

    /// `x`: [N, C_in, H, W], `temb`: [N, T] -> [N, C_out, H, W]
    pub fn forward(&self, x: Tensor<B, 4>, temb: Option<&Tensor<B, 2>>) -> Tensor<B, 4> {
        let h = self.conv1.forward(self.norm1.forward_silu(x.clone()));
        let h = match (&self.time_emb_proj, temb) {
            (Some(proj), Some(temb)) => {
                let t = proj.forward(silu(temb.clone()));
                let [n, c] = t.dims();
                h + t.reshape([n, c, 1, 1])
            }
            _ => h,
        };
        let h = self.conv2.forward(self.norm2.forward_silu(h));
        let x = match &self.conv_shortcut {
            Some(conv) => conv.forward(x),
            None => x,
        };
        let out = x + h;
        if self.output_scale_factor == 1.0 {
            out
        } else {
            out / self.output_scale_factor
        }
    }
}

/// `Downsample2D(use_conv=True)`: a stride-2 3x3 convolution.
#[derive(Module, Debug)]
pub struct Downsample2D<B: Backend> {
    conv: Conv2d<B>,
    pad_end: bool,
}

impl<B: Backend> Downsample2D<B> {
    pub fn load(
        prefix: &str,
        channels: usize,
        padding: usize,
        loader: &mut Loader<B>,
    ) -> Result<Self> {
        Ok(Downsample2D {
            conv: loader.conv2d(&format!("{prefix}.conv"), channels, channels, 3, 2, padding)?,
            pad_end: padding == 0,
        })
    }

    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        if self.pad_end {
            self.conv.forward_pad_end(x)
        } else {
            self.conv.forward(x)
        }
    }
}

/// `Upsample2D(use_conv=True)`: nearest-neighbour upsampling then a 3x3 convolution.
#[derive(Module, Debug)]
pub struct Upsample2D<B: Backend> {
    conv: Conv2d<B>,
}

impl<B: Backend> Upsample2D<B> {
    pub fn load(prefix: &str, channels: usize, loader: &mut Loader<B>) -> Result<Self> {
        Ok(Upsample2D {
            conv: loader.conv2d(&format!("{prefix}.conv"), channels, channels, 3, 1, 1)?,
        })
    }

    /// Doubles H and W, or resizes to `size` when given (diffusers' `upsample_size`).
    pub fn forward(&self, x: Tensor<B, 4>, size: Option<[usize; 2]>) -> Tensor<B, 4> {
        let [_, _, h, w] = x.dims();
        let [oh, ow] = size.unwrap_or([2 * h, 2 * w]);
        self.conv.forward(upsample_nearest(x, oh, ow))
    }
}
