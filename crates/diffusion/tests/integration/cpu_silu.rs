//! SiLU on the CPU backend (FLUX.2's SwiGLU gates and modulation, the UNet's and VAE's
//! activations) against `x / (1 + e^-x)` in f64. vendor/burn-flex computes f32 sigmoids in chunks
//! on the worker threads with its own vectorised `exp`: lengths across several chunks with a
//! tail, the saturated ends, NaN, and a transposed (non-contiguous) input.

use burn::tensor::activation::sigmoid;
use burn::tensor::DType;
use sdbench_diffusion::nn::silu;
use sdbench_diffusion::noise::NormalGenerator;

use crate::common::bounds::{assert_within, flex_exp, silu_of, SENSITIVITY, U32};
use crate::common::kernels::{tensor, values};

/// SiLU of each value in f64, and its bound: vendor/burn-flex's exp's error and three roundings
/// of f32 (`common::bounds::silu_of` of an exact input).
fn direct(x: &[f32]) -> (Vec<f64>, Vec<f64>) {
    x.iter()
        .map(|&v| silu_of(v as f64, 0.0, U32, flex_exp))
        .unzip()
}

/// Asserts `got` is SiLU of `x` within each value's bound.
fn assert_silu(what: &str, got: &[f32], x: &[f32]) {
    let (expected, bounds) = direct(x);
    assert_within(what, got, &expected, &bounds, 1.0, SENSITIVITY);
}

#[test]
fn cpu_silu_matches_the_definition() {
    // Three 64K chunks and a tail, spread wide enough to reach both saturated ends.
    let mut x: Vec<f32> = NormalGenerator::new(5)
        .normals(200_003)
        .into_iter()
        .map(|v| 12.0 * v)
        .collect();
    x.extend([
        -1e4, -100.0, -88.5, -87.0, -20.0, -1e-30, 0.0, 1e-30, 20.0, 88.5, 100.0, 1e4,
    ]);
    let n = x.len();
    assert_silu(
        &format!("SiLU of {n} values"),
        &values(silu(tensor(&x, [n], DType::F32))),
        &x,
    );

    let got = values(silu(tensor(&[f32::NAN, 1.0], [2], DType::F32)));
    assert!(got[0].is_nan(), "SiLU(NaN) gave {}", got[0]);

    // A [3, 5] view of a [5, 3] tensor: each value where the transpose puts it.
    let m: Vec<f32> = (0..15).map(|i| i as f32 - 7.0).collect();
    let transposed = silu(tensor(&m, [5, 3], DType::F32).transpose());
    let mut expected = Vec::new();
    for col in 0..3 {
        for row in 0..5 {
            expected.push(m[row * 3 + col]);
        }
    }
    assert_silu("SiLU of a transposed view", &values(transposed), &expected);

    // A sigmoid of a buffer another tensor still holds leaves that tensor as it was (the buffer is
    // overwritten in place only when no other tensor holds it).
    let shared = tensor(&m, [15], DType::F32);
    let s = values(sigmoid(shared.clone()));
    assert_eq!(values(shared), m);
    let alone = values(sigmoid(tensor(&m, [15], DType::F32)));
    assert_eq!(s, alone);
    // The sigmoid 1 / (1 + e^-x): the exp's error and two roundings.
    let (logistic, bounds): (Vec<f64>, Vec<f64>) = m
        .iter()
        .map(|&v| {
            let sigmoid = 1.0 / (1.0 + (-(v as f64)).exp());
            (sigmoid, (flex_exp(0.0) + 2.0 * U32) * sigmoid)
        })
        .unzip();
    assert_within("sigmoid", &s, &logistic, &bounds, 1.0, SENSITIVITY);
}
