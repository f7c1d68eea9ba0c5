//! Builds layers from a weight source (`io::weights::WeightSource`) onto a device: each tensor
//! asked for by its name and expected shape, put on the device in the run's precision (or kept in
//! int8 or the file's codes), the source told at the end so it can name any tensor never asked for.

use std::path::PathBuf;

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::{DType, TensorData};

use crate::error::{DiffusionError, Result};
use crate::io::safetensors::StDtype;
use crate::io::weights::{Init, Precision, Values, WeightSource};
use crate::nn::blocks::{BlockMatrix, HostBlocks};
use crate::nn::int8::{Int8Matrix, PackedInt8, ScaleAxis};
use crate::nn::{Conv2d, GroupNorm, LayerNorm, Linear, Weight};

/// How a linear layer's weight is laid out: as PyTorch stores it ([outputs, inputs]), or already
/// as the layer keeps it ([inputs, outputs], `WeightSource::take_transposed`).
#[derive(Clone, Copy)]
enum Order {
    OutIn,
    InOut,
}

/// Builds layers from a weight source onto a device.
pub struct Loader<'a, B: Backend> {
    source: &'a mut dyn WeightSource,
    pub device: B::Device,
    /// Where `host_tensor` puts its tensors: host memory (the CPU backend's device), or `device`
    /// where the caller gives none.
    host: B::Device,
    pub precision: Precision,
    /// Linear and convolution weights are stored as int8 (`nn::int8`); switched off around the
    /// layers that stay in the run's precision.
    pub int8_weights: bool,
    /// Score elements one attention call may hold (`nn::multi_head_attention`).
    pub attention_score_budget: usize,
}

impl<'a, B: Backend> Loader<'a, B> {
    pub fn new(source: &'a mut dyn WeightSource, device: &B::Device, precision: Precision) -> Self {
        Loader {
            source,
            device: device.clone(),
            host: device.clone(),
            precision,
            int8_weights: false,
            attention_score_budget: crate::nn::SCORE_BUDGET,
        }
    }

    /// Runs `load` with int8 weights off: for the few layers whose error would reach every
    /// output (a UNet's first and last convolutions, its timestep embedding).
    pub fn full_precision<T>(&mut self, load: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let int8 = std::mem::replace(&mut self.int8_weights, false);
        let result = load(self);
        self.int8_weights = int8;
        result
    }

    /// `host_tensor`s go to `host`.
    pub fn with_host(mut self, host: &B::Device) -> Self {
        self.host = host.clone();
        self
    }

    pub fn finish(self) -> Result<()> {
        self.source.finish()
    }

    /// Puts `values` on the device as `dtype`. A file tensor already in `dtype` (the usual case:
    /// fp16 files for f16 runs) goes up from the buffer it was read into; anything else is
    /// converted in one pass on the host (an f32 run may be on a device without f16).
    fn upload<const D: usize>(
        &self,
        values: Values,
        shape: [usize; D],
        dtype: DType,
    ) -> Tensor<B, D> {
        self.upload_to(&self.device, values, shape, dtype)
    }

    fn upload_to<const D: usize>(
        &self,
        device: &B::Device,
        values: Values,
        shape: [usize; D],
        dtype: DType,
    ) -> Tensor<B, D> {
        let data = match (values, dtype) {
            (Values::Stored(s), DType::F16) if s.dtype == StDtype::F16 => {
                TensorData::from_bytes_vec(s.bytes, shape, DType::F16)
            }
            (Values::Stored(s), DType::F32) if s.dtype == StDtype::F32 => {
                TensorData::from_bytes_vec(s.bytes, shape, DType::F32)
            }
            (Values::Stored(s), DType::BF16) if s.dtype == StDtype::BF16 => {
                TensorData::from_bytes_vec(s.bytes, shape, DType::BF16)
            }
            (Values::Stored(s), DType::F16) => TensorData::new(s.to_f16(), shape),
            (Values::Stored(s), DType::BF16) => TensorData::new(s.to_bf16(), shape),
            (Values::Stored(s), _) => TensorData::new(s.to_f32(), shape),
            (Values::F32(v), DType::F16) => TensorData::new(
                v.into_iter().map(half::f16::from_f32).collect::<Vec<_>>(),
                shape,
            ),
            (Values::F32(v), DType::BF16) => TensorData::new(
                v.into_iter().map(half::bf16::from_f32).collect::<Vec<_>>(),
                shape,
            ),
            (Values::F32(v), _) => TensorData::new(v, shape),
            (scaled @ Values::Scaled { .. }, _) => {
                return self.upload_to(device, Values::F32(scaled.into_f32()), shape, dtype)
            }
        };
        Tensor::from_data(data, (device, dtype))
    }

    /// A tensor in the run's precision.
    pub fn tensor<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Tensor<B, D>> {
        let values = self.source.take(name, &shape, init)?;
        Ok(self.upload(values, shape, self.precision.dtype()))
    }

    /// A tensor in the run's precision kept in host memory (the CPU backend), whatever the
    /// device: for lookup tables read a few rows at a time.
    pub fn host_tensor<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Tensor<B, D>> {
        let values = self.source.take(name, &shape, init)?;
        Ok(self.upload_to(&self.host, values, shape, self.precision.dtype()))
    }

    /// A tensor kept in f32 whatever the precision (norm parameters).
    pub fn tensor_f32<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Tensor<B, D>> {
        let values = self.source.take(name, &shape, init)?;
        Ok(self.upload(values, shape, DType::F32))
    }

    fn param_f32<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Param<Tensor<B, D>>> {
        Ok(Param::from_tensor(self.tensor_f32(name, shape, init)?))
    }

    /// The 1-D tensor `name` of `len` values with only the values at `order`, in that order.
    pub fn tensor_picked(
        &mut self,
        name: &str,
        len: usize,
        order: &[usize],
        init: Init,
    ) -> Result<Tensor<B, 1>> {
        let values = self
            .source
            .take(name, &[len], init)?
            .select_rows(len, order);
        Ok(self.upload(values, [order.len()], self.precision.dtype()))
    }

    /// `nn.Linear(inputs, outputs)`, stored as PyTorch does ([out, in]), kept as [in, out]: the
    /// transpose is made on the device, into a contiguous tensor (a transposed view would make
    /// the CPU backend's matrix products 17% slower: they pack the weights on every call).
    pub fn linear(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
    ) -> Result<Linear<B>> {
        // A source that gives the weight as [in, out] saves the transpose (synthetic weights:
        // most of a full-size model's load was copying each matrix into fresh memory).
        let name = format!("{prefix}.weight");
        if let Some(w) = self
            .source
            .take_transposed(&name, outputs, inputs, Init::FanIn(inputs))?
        {
            let bias = self.take_bias(prefix, outputs, bias)?;
            return Ok(self.linear_from(w, Order::InOut, bias, inputs, outputs));
        }
        let (w, bias) = self.take_linear(prefix, inputs, outputs, bias)?;
        Ok(self.linear_from(w, Order::OutIn, bias, inputs, outputs))
    }

    /// One `nn.Linear(inputs, outputs)` as several: part `k` computes the outputs `parts[k]` (in
    /// that order). For a fused projection whose outputs are used apart (each part's result is a
    /// whole tensor, not a strided view of a wider one), or outputs reordered.
    pub fn linear_parts(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
        parts: &[Vec<usize>],
    ) -> Result<Vec<Linear<B>>> {
        let (w, b) = self.take_linear(prefix, inputs, outputs, bias)?;
        let mut linears = Vec::with_capacity(parts.len());
        for rows in parts {
            if let Some(&bad) = rows.iter().find(|&&r| r >= outputs) {
                return Err(DiffusionError::Tensor {
                    path: PathBuf::from(prefix),
                    tensor: format!("{prefix}.weight"),
                    problem: format!("has {outputs} outputs, not an output {bad}"),
                });
            }
            let part_w = w.select_rows(outputs, rows);
            let part_b = b.as_ref().map(|b| b.select_rows(outputs, rows));
            linears.push(self.linear_from(part_w, Order::OutIn, part_b, inputs, rows.len()));
        }
        Ok(linears)
    }

    /// A linear layer's stored weight ([outputs, inputs]) and bias.
    fn take_linear(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
    ) -> Result<(Values, Option<Values>)> {
        let name = format!("{prefix}.weight");
        let w = self
            .source
            .take(&name, &[outputs, inputs], Init::FanIn(inputs))?;
        let b = self.take_bias(prefix, outputs, bias)?;
        Ok((w, b))
    }

    fn take_bias(&mut self, prefix: &str, outputs: usize, bias: bool) -> Result<Option<Values>> {
        if !bias {
            return Ok(None);
        }
        let name = format!("{prefix}.bias");
        Ok(Some(self.source.take(&name, &[outputs], Init::Zeros)?))
    }

    /// A linear layer from its weight `w`, in `order`.
    fn linear_from(
        &self,
        w: Values,
        order: Order,
        bias: Option<Values>,
        inputs: usize,
        outputs: usize,
    ) -> Linear<B> {
        // A GGUF-quantized or FP8 weight stays in its codes (`nn::blocks`), as the file stores it.
        let kept = match (&w, order) {
            (Values::Stored(stored), Order::OutIn) => {
                HostBlocks::from_stored(stored, outputs, inputs, None)
            }
            (Values::Scaled { stored, scale }, Order::OutIn) => {
                HostBlocks::from_stored(stored, outputs, inputs, Some(*scale))
            }
            _ => None,
        };
        let weight = if let Some(host) = kept {
            Weight::Blocks(BlockMatrix::upload(host, &self.device))
        } else if self.int8_weights {
            // Transposed on the host, so each output's scale is a column's.
            let w = w.into_f32();
            let t = match order {
                Order::InOut => w,
                Order::OutIn => {
                    let mut t = vec![0f32; w.len()];
                    for (o, row) in w.chunks_exact(inputs).enumerate() {
                        for (i, v) in row.iter().enumerate() {
                            t[i * outputs + o] = *v;
                        }
                    }
                    t
                }
            };
            let packed = PackedInt8::quantize(&t, inputs, outputs, ScaleAxis::Columns);
            Weight::Int8(Int8Matrix::upload(packed, &self.device))
        } else {
            let dtype = self.precision.dtype();
            let weight = match order {
                Order::InOut => self.upload(w, [inputs, outputs], dtype),
                // Flattening a transposed view cannot be a view: the backend copies it
                // contiguously.
                Order::OutIn => self
                    .upload(w, [outputs, inputs], dtype)
                    .transpose()
                    .reshape([inputs * outputs])
                    .reshape([inputs, outputs]),
            };
            Weight::Float(Param::from_tensor(weight))
        };
        let bias = bias.map(|b| self.upload(b, [outputs], self.precision.dtype()));
        Linear::new(weight, bias)
    }

    /// `nn.Conv2d(inputs, outputs, kernel, stride, padding)` with a bias.
    pub fn conv2d(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<Conv2d<B>> {
        let flat = inputs * kernel * kernel;
        let w = self.source.take(
            &format!("{prefix}.weight"),
            &[outputs, inputs, kernel, kernel],
            Init::FanIn(flat),
        )?;
        let weight = if self.int8_weights {
            let packed = PackedInt8::quantize(&w.into_f32(), outputs, flat, ScaleAxis::Rows);
            Weight::Int8(Int8Matrix::upload(packed, &self.device))
        } else {
            Weight::Float(Param::from_tensor(self.upload(
                w,
                [outputs, flat],
                self.precision.dtype(),
            )))
        };
        let bias = self.tensor(&format!("{prefix}.bias"), [outputs], Init::Zeros)?;
        Ok(Conv2d {
            weight,
            bias: Param::from_tensor(bias),
            kernel,
            stride,
            padding,
        })
    }

    pub fn group_norm(
        &mut self,
        prefix: &str,
        groups: usize,
        channels: usize,
        eps: f64,
    ) -> Result<GroupNorm<B>> {
        Ok(GroupNorm {
            gamma: self.param_f32(&format!("{prefix}.weight"), [channels], Init::Ones)?,
            beta: self.param_f32(&format!("{prefix}.bias"), [channels], Init::Zeros)?,
            groups,
            eps,
        })
    }

    pub fn layer_norm(&mut self, prefix: &str, dim: usize, eps: f64) -> Result<LayerNorm<B>> {
        Ok(LayerNorm {
            gamma: self.param_f32(&format!("{prefix}.weight"), [dim], Init::Ones)?,
            beta: self.param_f32(&format!("{prefix}.bias"), [dim], Init::Zeros)?,
            eps,
        })
    }
}

#[cfg(test)]
#[path = "loader_tests.rs"]
mod tests;
