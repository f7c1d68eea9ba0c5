//! Single layers timed at the shapes a preset runs them (the op tables of docs/cpu-performance.md
//! section; each family lists its cases, `PresetSpec::op_cases`). Each case builds the engine's own layer (`nn`) on random inputs, runs it once to warm
//! up, then times `repeat` calls bounded by device syncs. `sdbench timing --ops` prints one line per
//! case; `scripts/torch_reference_timing.py --ops` reads those lines and runs the same cases in
//! PyTorch, so the list of cases lives here only.

use std::fmt;
use std::time::Instant;

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::Distribution;

use crate::device::SelectedDevice;
use crate::error::{DiffusionError, Result};
use crate::io::ggml_blocks::GgmlType;
use crate::io::safetensors::StDtype;
use crate::io::weights::Precision;
use crate::nn::blocks::{BlockMatrix, HostBlocks};
use crate::nn::{multi_head_attention, Conv2d, GroupNorm, Linear, Weight};
use crate::pipeline::backend_failure::guard;
use crate::pipeline::B;

/// A preset's layers worth timing alone: whose they are ("SD1.5's") and the cases for an image of
/// `height` x `width`.
#[derive(Clone, Copy)]
pub struct OpCases {
    pub whose: &'static str,
    pub cases: fn(height: usize, width: usize) -> Vec<OpCase>,
}

/// One layer at one shape. Its `Display` is the line key the torch script parses:
/// `<kind> name=value ...`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpCase {
    /// 3x3 convolution, stride 1, padding 1, `channels` in and out, with bias.
    Conv3x3 {
        n: usize,
        channels: usize,
        h: usize,
        w: usize,
    },
    /// `[rows, inputs] x [inputs, outputs] + bias`.
    Linear {
        rows: usize,
        inputs: usize,
        outputs: usize,
    },
    /// Multi-head attention on [n, queries, heads x dim] against [n, keys, heads x dim].
    Attention {
        n: usize,
        heads: usize,
        queries: usize,
        keys: usize,
        dim: usize,
    },
    /// GroupNorm over 32 groups, optionally followed by SiLU (as every resnet block runs it).
    GroupNorm {
        n: usize,
        channels: usize,
        h: usize,
        w: usize,
        silu: bool,
    },
}

impl fmt::Display for OpCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OpCase::Conv3x3 { n, channels, h, w } => {
                write!(f, "conv3x3 n={n} c={channels} h={h} w={w}")
            }
            OpCase::Linear {
                rows,
                inputs,
                outputs,
            } => write!(f, "linear rows={rows} in={inputs} out={outputs}"),
            OpCase::Attention {
                n,
                heads,
                queries,
                keys,
                dim,
            } => write!(
                f,
                "attention n={n} heads={heads} q={queries} k={keys} dim={dim}"
            ),
            OpCase::GroupNorm {
                n,
                channels,
                h,
                w,
                silu,
            } => {
                let kind = if silu { "groupnorm_silu" } else { "groupnorm" };
                write!(f, "{kind} n={n} c={channels} h={h} w={w}")
            }
        }
    }
}

/// How much work one call does: floating-point operations, or bytes that must at least cross
/// memory (one read and one write of the activations) for the memory-bound norms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Work {
    Flops(f64),
    Bytes(f64),
}

impl OpCase {
    pub fn work(&self, precision: Precision) -> Work {
        let f = |x: usize| x as f64;
        match *self {
            OpCase::Conv3x3 { n, channels, h, w } => {
                Work::Flops(2.0 * f(n * channels * channels * 9 * h * w))
            }
            OpCase::Linear {
                rows,
                inputs,
                outputs,
            } => Work::Flops(2.0 * f(rows * inputs * outputs)),
            // q k^T and the weighted sum of v: two products of queries x keys x dim.
            OpCase::Attention {
                n,
                heads,
                queries,
                keys,
                dim,
            } => Work::Flops(4.0 * f(n * heads * queries * keys * dim)),
            OpCase::GroupNorm {
                n, channels, h, w, ..
            } => Work::Bytes(2.0 * f(n * channels * h * w * precision.bytes() as usize)),
        }
    }
}

/// A linear layer's weights as a file stores them: `None` in the run's precision, or a GGUF
/// block-quantized or FP8 type kept in its codes and dequantized per call (`nn::blocks`).
pub type OpWeights = Option<StDtype>;

/// The weight types a linear case can keep in their codes, by the names files give them: GGUF's
/// block-quantized types (`Q8_0`, `Q4_K`, ...) and safetensors' FP8 (`F8_E4M3`, `F8_E5M2`).
pub fn coded_weight_types() -> Vec<(&'static str, StDtype)> {
    let ggml = GgmlType::ALL
        .into_iter()
        .filter(|t| t.affine().is_some())
        .map(|t| (t.name(), StDtype::Ggml(t)));
    ggml.chain([("F8_E4M3", StDtype::F8E4M3), ("F8_E5M2", StDtype::F8E5M2)])
        .collect()
}

/// Seconds per call for `repeat` calls after one warm-up call; linear layers with `weights`. A
/// backend's failure (a buffer the device cannot hold) comes back explained, as a generation's.
pub fn time_case(
    device: &SelectedDevice,
    precision: Precision,
    case: OpCase,
    weights: OpWeights,
    repeat: usize,
) -> Result<Vec<f64>> {
    guard(device, None, None, || {
        time_case_unguarded(device, precision, case, weights, repeat)
    })
}

fn time_case_unguarded(
    device: &SelectedDevice,
    precision: Precision,
    case: OpCase,
    weights: OpWeights,
    repeat: usize,
) -> Result<Vec<f64>> {
    let dev = &device.device;
    let dtype = precision.dtype();
    let normal = Distribution::Normal(0.0, 1.0);
    let random = |shape: Vec<usize>, scale: f64| {
        (Tensor::<B, 1>::random([shape.iter().product::<usize>()], normal, dev) * scale).cast(dtype)
    };
    match case {
        OpCase::Conv3x3 { n, channels, h, w } => {
            let c = channels;
            let conv = Conv2d {
                weight: Weight::Float(Param::from_tensor(
                    random(vec![c * c * 9], (1.0 / (c * 9) as f64).sqrt()).reshape([c, c * 9]),
                )),
                bias: Param::from_tensor(random(vec![c], 0.1)),
                kernel: 3,
                stride: 1,
                padding: 1,
            };
            let x = random(vec![n * c * h * w], 1.0).reshape([n, c, h, w]);
            time(device, repeat, || conv.forward(x.clone()))
        }
        OpCase::Linear {
            rows,
            inputs,
            outputs,
        } => {
            let weight = match weights {
                Some(dtype) => Weight::Blocks(BlockMatrix::upload(
                    coded_matrix(dtype, outputs, inputs)?,
                    dev,
                )),
                None => Weight::Float(Param::from_tensor(
                    random(vec![inputs * outputs], (1.0 / inputs as f64).sqrt())
                        .reshape([inputs, outputs]),
                )),
            };
            let linear = Linear::new(weight, Some(random(vec![outputs], 0.1)));
            let x = random(vec![rows * inputs], 1.0).reshape([1, rows, inputs]);
            time(device, repeat, || linear.forward(x.clone()))
        }
        OpCase::Attention {
            n,
            heads,
            queries,
            keys,
            dim,
        } => {
            let q = random(vec![n * queries * heads * dim], 1.0).reshape([n, queries, heads * dim]);
            let k = random(vec![n * keys * heads * dim], 1.0).reshape([n, keys, heads * dim]);
            let v = random(vec![n * keys * heads * dim], 1.0).reshape([n, keys, heads * dim]);
            time(device, repeat, || {
                multi_head_attention(q.clone(), k.clone(), v.clone(), heads, false, false)
            })
        }
        OpCase::GroupNorm {
            n,
            channels,
            h,
            w,
            silu: with_silu,
        } => {
            let norm = GroupNorm {
                gamma: Param::from_tensor(Tensor::<B, 1>::random([channels], normal, dev)),
                beta: Param::from_tensor(Tensor::<B, 1>::random([channels], normal, dev)),
                groups: 32,
                eps: 1e-6,
            };
            let x = random(vec![n * channels * h * w], 1.0).reshape([n, channels, h, w]);
            time(device, repeat, || {
                if with_silu {
                    norm.forward_silu(x.clone())
                } else {
                    norm.forward(x.clone())
                }
            })
        }
    }
}

/// Seconds to dequantize a linear case's weight of `dtype` (kept in its codes) into the run's
/// precision, alone: its share of the layer's time. `None` for other cases.
pub fn time_dequantize(
    device: &SelectedDevice,
    precision: Precision,
    case: OpCase,
    dtype: StDtype,
    repeat: usize,
) -> Result<Option<Vec<f64>>> {
    let OpCase::Linear {
        inputs, outputs, ..
    } = case
    else {
        return Ok(None);
    };
    let coded = coded_matrix(dtype, outputs, inputs)?;
    guard(device, None, None, || {
        let matrix = BlockMatrix::<B>::upload(coded, &device.device);
        time(device, repeat, || matrix.dequantize(precision.dtype())).map(Some)
    })
}

fn coded_matrix(dtype: StDtype, rows: usize, cols: usize) -> Result<HostBlocks> {
    HostBlocks::synthetic(dtype, rows, cols).ok_or_else(|| {
        DiffusionError::Request(format!(
            "{dtype:?} weights of {cols} inputs cannot be kept in their codes (not a quantized type, or not whole blocks)"
        ))
    })
}

fn time<const D: usize>(
    device: &SelectedDevice,
    repeat: usize,
    call: impl Fn() -> Tensor<B, D>,
) -> Result<Vec<f64>> {
    let once = || -> Result<f64> {
        device.sync()?;
        let start = Instant::now();
        let out = call();
        // Held until the device has finished: a lazy backend may skip work whose result is gone.
        device.sync()?;
        let seconds = start.elapsed().as_secs_f64();
        drop(out);
        Ok(seconds)
    };
    once()?;
    (0..repeat).map(|_| once()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_counts_flops_and_bytes() {
        let conv = OpCase::Conv3x3 {
            n: 1,
            channels: 2,
            h: 3,
            w: 5,
        };
        assert_eq!(
            conv.work(Precision::F32),
            Work::Flops(2.0 * 2.0 * 2.0 * 9.0 * 15.0)
        );
        let norm = OpCase::GroupNorm {
            n: 1,
            channels: 32,
            h: 2,
            w: 2,
            silu: true,
        };
        assert_eq!(norm.work(Precision::F16), Work::Bytes(2.0 * 128.0 * 2.0));
        assert_eq!(norm.to_string(), "groupnorm_silu n=1 c=32 h=2 w=2");
    }
}
