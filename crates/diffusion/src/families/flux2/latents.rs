//! FLUX.2's latent layout. The VAE's 32-channel latents are cut into 2x2 patches (128 channels at
//! half the side), normalised by the VAE's batch-norm statistics, and read by the transformer as a
//! sequence of tokens, row by row. Decoding undoes each step in reverse.

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::DType;

use crate::error::Result;
use crate::families::flux2::transformer::Position;
use crate::io::weights::Init;
use crate::nn::loader::Loader;

/// The time position of the first reference picture's tokens; each further picture adds as much.
pub const TIME_STEP: f32 = 10.0;

/// The VAE's `bn` running statistics over patched channels: latents are stored as
/// `(x - mean) / sqrt(var + eps)`.
#[derive(Module, Debug)]
pub struct LatentNorm<B: Backend> {
    mean: Param<Tensor<B, 1>>,
    std: Param<Tensor<B, 1>>,
}

impl<B: Backend> LatentNorm<B> {
    pub fn load(loader: &mut Loader<B>, channels: usize, eps: f64) -> Result<Self> {
        let mean = loader.tensor_f32("bn.running_mean", [channels], Init::Zeros)?;
        let var = loader.tensor_f32("bn.running_var", [channels], Init::Ones)?;
        Ok(LatentNorm {
            mean: Param::from_tensor(mean),
            std: Param::from_tensor((var + eps).sqrt()),
        })
    }

    /// Patched, normalised latents [N, C*4, h, w] -> the VAE's latents [N, C, 2h, 2w].
    pub fn denormalize_unpatchify(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [n, c4, h, w] = x.dims();
        let dtype = x.dtype();
        let std = self.std.val().reshape([1, c4, 1, 1]);
        let mean = self.mean.val().reshape([1, c4, 1, 1]);
        let x = (x.cast(DType::F32) * std + mean).cast(dtype);
        unpatchify(x, n, c4 / 4, h, w)
    }

    /// The VAE's latents [N, C, 2h, 2w] -> patched, normalised latents [N, C*4, h, w] (a
    /// reference picture's; diffusers' `_patchify_latents`, then `(x - mean) / std`), in f32.
    pub fn patchify_normalize(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [n, c, h2, w2] = x.dims();
        let x = patchify(x.cast(DType::F32), n, c, h2 / 2, w2 / 2);
        let std = self.std.val().reshape([1, 4 * c, 1, 1]);
        let mean = self.mean.val().reshape([1, 4 * c, 1, 1]);
        (x - mean) / std
    }
}

/// [N, C, 2h, 2w] -> [N, C*4, h, w]: pixel (2y+dy, 2x+dx) goes to channel `c*4 + 2*dy + dx`.
fn patchify<B: Backend>(x: Tensor<B, 4>, n: usize, c: usize, h: usize, w: usize) -> Tensor<B, 4> {
    x.reshape([n * c, h, 2, w, 2])
        .permute([0, 2, 4, 1, 3])
        .reshape([n, 4 * c, h, w])
}

/// [N, C*4, h, w] -> [N, C, 2h, 2w]: channel `c*4 + 2*dy + dx` goes to pixel (2y+dy, 2x+dx).
fn unpatchify<B: Backend>(x: Tensor<B, 4>, n: usize, c: usize, h: usize, w: usize) -> Tensor<B, 4> {
    x.reshape([n * c, 2, 2, h, w])
        .permute([0, 3, 1, 4, 2])
        .reshape([n, c, 2 * h, 2 * w])
}

/// [N, C, h, w] -> tokens [N, h*w, C], row by row.
pub fn pack<B: Backend>(x: Tensor<B, 4>) -> Tensor<B, 3> {
    let [n, c, h, w] = x.dims();
    x.reshape([n, c, h * w]).swap_dims(1, 2)
}

/// Tokens [N, h*w, C] -> [N, C, h, w].
pub fn unpack<B: Backend>(x: Tensor<B, 3>, h: usize, w: usize) -> Tensor<B, 4> {
    let [n, _, c] = x.dims();
    x.swap_dims(1, 2).reshape([n, c, h, w])
}

/// The text tokens' positions: (0, 0, 0, l).
pub fn text_positions(tokens: usize) -> Vec<Position> {
    (0..tokens).map(|l| [0.0, 0.0, 0.0, l as f32]).collect()
}

/// The image tokens' positions on an `h` x `w` grid: (0, row, column, 0).
pub fn image_positions(h: usize, w: usize) -> Vec<Position> {
    grid_positions(0.0, h, w)
}

/// Reference picture `index`'s token positions on its `h` x `w` grid: (10 (index + 1), row,
/// column, 0), diffusers' `_prepare_image_ids`.
pub fn reference_positions(index: usize, h: usize, w: usize) -> Vec<Position> {
    grid_positions(TIME_STEP * (index + 1) as f32, h, w)
}

fn grid_positions(time: f32, h: usize, w: usize) -> Vec<Position> {
    (0..h)
        .flat_map(|y| (0..w).map(move |x| [time, y as f32, x as f32, 0.0]))
        .collect()
}
