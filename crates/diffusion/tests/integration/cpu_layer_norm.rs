//! burn-flex's fused `layer_norm` (the CPU path of `nn::LayerNorm` and of FLUX.2's adaptive
//! `nn::modulated_layer_norm`) against LayerNorm computed in f64. Rows offset far from zero with a
//! small spread are where a one-sweep variance (E[x²] − E[x]²) loses every digit; vendor/burn-flex
//! takes the mean first and then the centred squares. Row lengths below, at and above the SIMD
//! width, with a tail, in f32 and f16 activations.

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::{DType, TensorData};
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::nn::{modulated_layer_norm, LayerNorm};
use sdbench_diffusion::noise::NormalGenerator;
use sdbench_diffusion::pipeline::B;

use crate::common::kernels::{rounded, tensor, worst_error};

/// `(x - mean) / sqrt(var + eps) * gamma + beta` per row of `d` values, in f64.
fn direct(x: &[f32], gamma: &[f64], beta: &[f64], d: usize, eps: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(d) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / d as f64;
        let inverse_std = 1.0 / (var + eps).sqrt();
        for (i, &v) in row.iter().enumerate() {
            out.push((v as f64 - mean) * inverse_std * gamma[i] + beta[i]);
        }
    }
    out
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

fn check_layer(d: usize, offset: f32, spread: f32, dtype: DType, tolerance: f64) {
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
    let expected = direct(&x, &wide(&gamma), &wide(&beta), d, 1e-6);
    let worst = worst_error(out, &expected);
    assert!(
        worst <= tolerance,
        "LayerNorm {dtype:?} d {d} offset {offset} spread {spread}: error {worst:e} over {tolerance:e}"
    );
}

/// Two samples, each with its own `1 + scale` and `shift`, as FLUX.2's blocks modulate.
fn check_modulated(d: usize, offset: f32, spread: f32, tolerance: f64) {
    let mut noise = NormalGenerator::new(4);
    let (shift, scale) = (noise.normals(2 * d), noise.normals(2 * d));
    let x = rows(2 * 5, d, offset, spread, DType::F32);
    let out = modulated_layer_norm(
        tensor(&x, [2, 5, d], DType::F32),
        &tensor(&shift, [2, 1, d], DType::F32),
        &tensor(&scale, [2, 1, d], DType::F32),
        1e-6,
    );
    let mut expected = Vec::new();
    for sample in 0..2 {
        let part = |v: &[f32]| v[sample * d..][..d].to_vec();
        let gamma: Vec<f64> = part(&scale).iter().map(|&s| 1.0 + s as f64).collect();
        let beta: Vec<f64> = part(&shift).iter().map(|&s| s as f64).collect();
        expected.extend(direct(
            &x[sample * 5 * d..][..5 * d],
            &gamma,
            &beta,
            d,
            1e-6,
        ));
    }
    let worst = worst_error(out, &expected);
    assert!(
        worst <= tolerance,
        "modulated d {d} offset {offset} spread {spread}: error {worst:e} over {tolerance:e}"
    );
}

#[test]
fn cpu_layer_norm_matches_the_definition_on_offset_rows() {
    // 5 is under one SIMD vector, 37 has a tail, 3072 is FLUX.2 klein 4B's width.
    for d in [5, 37, 3072] {
        check_layer(d, 0.0, 1.0, DType::F32, 1e-5);
        check_layer(d, 0.0, 1.0, DType::F16, 1e-2);
        check_modulated(d, 0.0, 1.0, 1e-5);
        // E[x²] and E[x]² agree to about seven digits here: their difference, the variance,
        // would be rounding noise (or negative) in f32.
        check_layer(d, 300.0, 0.01, DType::F32, 1e-2);
        check_modulated(d, 300.0, 0.01, 1e-2);
    }
}
