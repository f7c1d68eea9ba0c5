//! (SD Bench) Fused group normalisation, optionally followed by SiLU, for f32: per (sample, group)
//! one task reads the group twice for its mean and variance (two-pass, sums in f64 over blocks of
//! f32 lanes: the mean, then the deviations from it and their squares, the deviations' mean
//! correcting the first pass's) and once more to write `(x - mean) * a + shift` per channel
//! (`a = gamma / std`, `shift = beta - correction * a`; centring first keeps a group with a large
//! mean and tiny variance exact), with SiLU applied in the same pass through the vectorised `exp`.
//! Other dtypes take the composed ops. The composed form made about ten passes over the
//! activations, each a separate kernel, and a scalar `exp` per element for SiLU.

use alloc::vec;

use burn_backend::DType;
use burn_std::Bytes;

use crate::ops::vector_math::{exp, multiversion};
use crate::{Flex, FlexTensor, Layout};

pub fn group_norm(
    tensor: FlexTensor,
    gamma: FlexTensor,
    beta: FlexTensor,
    groups: usize,
    epsilon: f64,
    silu: bool,
) -> FlexTensor {
    if [tensor.dtype(), gamma.dtype(), beta.dtype()] != [DType::F32; 3] {
        return burn_backend::ops::group_norm::group_norm_composed::<Flex>(
            tensor, gamma, beta, groups, epsilon, silu,
        );
    }
    let (tensor, gamma, beta) = (
        tensor.to_contiguous(),
        gamma.to_contiguous(),
        beta.to_contiguous(),
    );
    let shape = tensor.layout().shape().clone();
    let dims = shape.to_vec();
    assert!(
        dims.len() >= 2,
        "group_norm: input must have at least 2 dimensions, got {dims:?}"
    );
    let channels = dims[1];
    assert!(
        groups > 0 && channels % groups == 0,
        "group_norm: {channels} channels do not split into {groups} groups"
    );
    let (gamma, beta): (&[f32], &[f32]) = (gamma.storage(), beta.storage());
    assert!(
        gamma.len() == channels && beta.len() == channels,
        "group_norm: gamma and beta must have {channels} values, got {} and {}",
        gamma.len(),
        beta.len()
    );
    let x: &[f32] = tensor.storage();
    let mut out = vec![0.0f32; x.len()];
    let spatial: usize = dims[2..].iter().product();
    let per_group = channels / groups;
    let group_len = per_group * spatial;
    if group_len > 0 {
        let task = |index: usize, x: &[f32], out: &mut [f32]| {
            let first_channel = (index % groups) * per_group;
            let (mean, correction, inverse_std) = group_statistics(x, epsilon);
            for (c, (x, out)) in x
                .chunks_exact(spatial)
                .zip(out.chunks_exact_mut(spatial))
                .enumerate()
            {
                let a = inverse_std * gamma[first_channel + c] as f64;
                let shift = beta[first_channel + c] as f64 - correction * a;
                scale_shift(x, out, mean, a as f32, shift as f32, silu);
            }
        };
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            out.par_chunks_mut(group_len)
                .zip(x.par_chunks(group_len))
                .enumerate()
                .for_each(|(index, (out, x))| task(index, x, out));
        }
        #[cfg(not(feature = "rayon"))]
        for (index, (out, x)) in out
            .chunks_mut(group_len)
            .zip(x.chunks(group_len))
            .enumerate()
        {
            task(index, x, out);
        }
    }
    FlexTensor::new(
        Bytes::from_elems(out),
        Layout::contiguous(shape),
        DType::F32,
    )
}

/// Independent f32 accumulators, so the sums vectorise.
const LANES: usize = 16;
/// Elements summed in f32 lanes before the block's total joins the f64 sum.
const BLOCK: usize = 1024;

multiversion! {
    /// (mean, correction, 1 / sqrt(variance + epsilon)) of one group, the variance biased (over
    /// `x.len()`): the group's mean is `mean + correction`.
    pub fn group_statistics(x: &[f32], epsilon: f64) -> (f32, f64, f64) => group_statistics_portable
}

/// The first pass's mean errs by about the group's length times u times its mean |x|; the mean of
/// the deviations from it (small, summed almost exactly) is that error, taken off the deviations
/// (in the shift) and, squared, off the variance.
#[inline(always)]
fn group_statistics_portable(x: &[f32], epsilon: f64) -> (f32, f64, f64) {
    let len = x.len() as f64;
    let mean = (blocked_sum(x, |v| v, |_| 0.0).0 / len) as f32;
    let (deviations, squares) = blocked_sum(x, |v| v - mean, |v| (v - mean) * (v - mean));
    let correction = deviations / len;
    let variance = (squares / len - correction * correction).max(0.0);
    (mean, correction, 1.0 / (variance + epsilon).sqrt())
}

/// The sums of `f(x)` and of `g(x)`: f32 lanes, their totals joining f64 sums once per block.
#[inline(always)]
fn blocked_sum(x: &[f32], f: impl Fn(f32) -> f32, g: impl Fn(f32) -> f32) -> (f64, f64) {
    let (mut first, mut second) = (0.0f64, 0.0f64);
    for block in x.chunks(BLOCK) {
        let (mut f_lanes, mut g_lanes) = ([0.0f32; LANES], [0.0f32; LANES]);
        let mut chunks = block.chunks_exact(LANES);
        for chunk in &mut chunks {
            for ((f_lane, g_lane), &v) in f_lanes.iter_mut().zip(g_lanes.iter_mut()).zip(chunk) {
                *f_lane += f(v);
                *g_lane += g(v);
            }
        }
        for &v in chunks.remainder() {
            first += f(v) as f64;
            second += g(v) as f64;
        }
        first += f_lanes.iter().map(|&lane| lane as f64).sum::<f64>();
        second += g_lanes.iter().map(|&lane| lane as f64).sum::<f64>();
    }
    (first, second)
}

multiversion! {
    /// `out = (x - mean) * a + b`, then SiLU (`y / (1 + e^-y)`) when `silu` is set.
    pub fn scale_shift(x: &[f32], out: &mut [f32], mean: f32, a: f32, b: f32, silu: bool) -> () => scale_shift_portable
}

#[inline(always)]
fn scale_shift_portable(x: &[f32], out: &mut [f32], mean: f32, a: f32, b: f32, silu: bool) {
    if silu {
        for (out, &v) in out.iter_mut().zip(x) {
            let y = (v - mean) * a + b;
            *out = y / (1.0 + exp(-y));
        }
    } else {
        for (out, &v) in out.iter_mut().zip(x) {
            *out = (v - mean) * a + b;
        }
    }
}
