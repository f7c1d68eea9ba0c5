//! burn-flex's fused `layer_norm` (the CPU path of `nn::LayerNorm` and of FLUX.2's adaptive
//! `nn::modulated_layer_norm`) against LayerNorm computed in f64, each value within the bound that
//! the kernel's arithmetic gives it (`common::bounds::NormGroup`). Rows offset far from zero with a
//! small spread are where a one-sweep variance (E[x²] − E[x]²) loses every digit, and where the
//! first pass's mean errs by more than the spread when its sum is long (its error grows with the
//! offset, and with the length of each SIMD lane's partial sum, so it differed between AVX-512 and
//! AVX2): vendor/burn-flex takes the mean, then sums the deviations from it and their squares,
//! and corrects the mean by the deviations' mean. Row lengths below, at and above the SIMD width,
//! with a tail, in f32 and f16 activations.

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::nn::{modulated_layer_norm, LayerNorm};
use sdbench_diffusion::noise::NormalGenerator;
use sdbench_diffusion::pipeline::B;

use crate::common::bounds::{
    assert_within, flex_exp, scale_of, sensitivity, storage_rounding, NormArithmetic, NormGroup,
    SENSITIVITY, U32,
};
use crate::common::kernels::{rounded, tensor, values};

/// The kernel's arithmetic: f32 throughout (f16 activations are widened first), the mean
/// corrected by the deviations' mean.
const KERNEL: NormArithmetic = NormArithmetic {
    elementwise: U32,
    stored_mean: U32,
    compensated: true,
    exp: flex_exp,
};

/// `(x - mean) / sqrt(var + eps) * gamma + beta` per row of `d` values, in f64, with each
/// value's error bound: the kernel's, plus one rounding of `gamma` (`1 + scale` is formed in f32
/// for the modulated norm) and the result's rounding to `dtype`.
fn direct(x: &[f32], gamma: &[f64], beta: &[f64], d: usize, dtype: DType) -> (Vec<f64>, Vec<f64>) {
    let (mut out, mut bounds) = (Vec::with_capacity(x.len()), Vec::with_capacity(x.len()));
    for row in x.chunks(d) {
        let group = NormGroup::of(row, 1e-6);
        for (i, &v) in row.iter().enumerate() {
            let (y, bound) = group.normalised(v, gamma[i], beta[i], &KERNEL);
            // y - beta = gamma * z: gamma's own rounding errs by u of that.
            out.push(y);
            bounds.push(bound + U32 * (y - beta[i]).abs() + storage_rounding(dtype, y));
        }
    }
    (out, bounds)
}

/// `rows` rows of `d` values: `offset + spread * normal`, rounded to `dtype`.
fn rows(rows: usize, d: usize, offset: f32, spread: f32, dtype: DType) -> Vec<f32> {
    let mut noise = NormalGenerator::new(11);
    let values = noise
        .normals(rows * d)
        .into_iter()
        .map(|v| offset + spread * v)
        .collect();
    rounded(values, dtype)
}

fn check_layer(d: usize, offset: f32, spread: f32, dtype: DType) {
    let device = cpu_device();
    let mut noise = NormalGenerator::new(3);
    let gamma = noise.normals(d);
    let beta = noise.normals(d);
    let x = rows(7, d, offset, spread, dtype);
    let on = |v: &[f32]| Tensor::<B, 1>::from_data(TensorData::new(v.to_vec(), [v.len()]), &device);
    let norm = LayerNorm {
        gamma: Param::from_tensor(on(&gamma)),
        beta: Param::from_tensor(on(&beta)),
        eps: 1e-6,
    };
    let out = norm.forward(tensor(&x, [1, 7, d], dtype));
    assert_eq!(out.dtype(), dtype);
    let wide = |v: &[f32]| v.iter().map(|&g| g as f64).collect::<Vec<_>>();
    let (expected, bounds) = direct(&x, &wide(&gamma), &wide(&beta), d, dtype);
    assert_within(
        &format!("LayerNorm {dtype:?} d {d} offset {offset} spread {spread}"),
        &values(out),
        &expected,
        &bounds,
        scale_of(&expected),
        sensitivity(dtype),
    );
}

/// Two samples, each with its own `1 + scale` and `shift`, as FLUX.2's blocks modulate.
fn check_modulated(d: usize, offset: f32, spread: f32) {
    let mut noise = NormalGenerator::new(4);
    let (shift, scale) = (noise.normals(2 * d), noise.normals(2 * d));
    let x = rows(2 * 5, d, offset, spread, DType::F32);
    let out = modulated_layer_norm(
        tensor(&x, [2, 5, d], DType::F32),
        &tensor(&shift, [2, 1, d], DType::F32),
        &tensor(&scale, [2, 1, d], DType::F32),
        1e-6,
    );
    let (mut expected, mut bounds) = (Vec::new(), Vec::new());
    for sample in 0..2 {
        let part = |v: &[f32]| v[sample * d..][..d].to_vec();
        let gamma: Vec<f64> = part(&scale).iter().map(|&s| 1.0 + s as f64).collect();
        let beta: Vec<f64> = part(&shift).iter().map(|&s| s as f64).collect();
        let (values, bound) = direct(&x[sample * 5 * d..][..5 * d], &gamma, &beta, d, DType::F32);
        expected.extend(values);
        bounds.extend(bound);
    }
    assert_within(
        &format!("modulated d {d} offset {offset} spread {spread}"),
        &values(out),
        &expected,
        &bounds,
        scale_of(&expected),
        SENSITIVITY,
    );
}

#[test]
fn cpu_layer_norm_matches_the_definition_on_offset_rows() {
    // 5 is under one SIMD vector, 37 has a tail (of 5 with AVX-512's 16 lanes and AVX2's 8),
    // 3072 is FLUX.2 klein 4B's width.
    for d in [5, 37, 3072] {
        for dtype in [DType::F32, DType::F16] {
            check_layer(d, 0.0, 1.0, dtype);
        }
        check_modulated(d, 0.0, 1.0);
        // E[x²] and E[x]² agree to about seven digits here: their difference, the variance,
        // would be rounding noise (or negative) in f32. The offset is 3e4 times the spread.
        check_layer(d, 300.0, 0.01, DType::F32);
        check_modulated(d, 300.0, 0.01);
    }
}
