//! RMS normalisation as transformers' `Qwen3RMSNorm` and `T5LayerNorm` compute it.

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::DType;

use crate::error::Result;
use crate::io::weights::Init;
use crate::nn::loader::Loader;
use crate::nn::runs_on_cpu;

/// Statistics in f32, the result back in the activations' dtype, then the weight (stored in the
/// run's precision), as transformers' `Qwen3RMSNorm` and `T5LayerNorm` compute it (no bias, no
/// mean subtracted).
#[derive(Module, Debug)]
pub struct RmsNorm<B: Backend> {
    weight: Param<Tensor<B, 1>>,
    eps: f64,
}

impl<B: Backend> RmsNorm<B> {
    pub fn load(loader: &mut Loader<B>, name: &str, dim: usize, eps: f64) -> Result<Self> {
        Ok(RmsNorm {
            weight: Param::from_tensor(loader.tensor(name, [dim], Init::Ones)?),
            eps,
        })
    }

    /// A norm whose input channels come in `order` (channel `k` of the input is the stored
    /// model's `order[k]`): the weight is read in that order. The statistics do not depend on it.
    pub fn load_reordered(
        loader: &mut Loader<B>,
        name: &str,
        order: &[usize],
        eps: f64,
    ) -> Result<Self> {
        let weight = loader.tensor_picked(name, order.len(), order, Init::Ones)?;
        Ok(RmsNorm {
            weight: Param::from_tensor(weight),
            eps,
        })
    }

    /// Normalises the last dimension.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let dtype = x.dtype();
        let x = x.cast(DType::F32);
        let dim = self.weight.dims()[0];
        let squares = x.clone() * x.clone();
        let mean = if runs_on_cpu::<B>(&x.device()) {
            // A row reduction; the CPU backend's product with a column is one small matrix
            // product per row.
            squares.mean_dim(D - 1)
        } else {
            // The mean of squares as a product with a column of 1/dim: on wgpu in f16, burn's
            // fused reduction of a cast input fails to launch (burn-cubecl-fusion 0.21,
            // `FusedReduceLaunch` reads strides past the end); a matrix product is not fused
            // with its neighbours.
            let mut column = [1; D];
            column[D - 2] = dim;
            squares.matmul(Tensor::full(
                column,
                1.0 / dim as f64,
                (&x.device(), DType::F32),
            ))
        };
        let rms = (mean + self.eps).sqrt();
        let mut shape = [1; D];
        shape[D - 1] = dim;
        // The weight multiplies after the cast back, in transformers' order.
        (x / rms).cast(dtype) * self.weight.val().reshape(shape).cast(dtype)
    }
}
