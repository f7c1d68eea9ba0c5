//! The CPU backend's attention (burn-flex, patched in vendor/: unmasked attention runs as blocks of
//! query rows with a vectorised exp) against softmax(q k^T / sqrt(d)) v computed in f64, through
//! the engine's own `multi_head_attention` (heads split from the channels, so the inputs arrive as
//! strided views). Shapes the models do not use: head dims 40, 64, 80 and 160, batch 1 to 3, query
//! counts that leave a partial last block, one key, more keys than a block holds and than a tile
//! of keys holds; f32 and f16.
//! The causal text-encoder path is covered by the parity suite.

use burn::tensor::DType;
use burn_flex::ops::attention_blocked::softmax_numerators;
use burn_flex::ops::vector_math::exp;
use sdbench_diffusion::nn::multi_head_attention;
use sdbench_diffusion::noise::NormalGenerator;

use crate::common::kernels::{rounded, tensor, worst_error};

struct Case {
    batch: usize,
    heads: usize,
    dim: usize,
    queries: usize,
    keys: usize,
}

impl Case {
    /// Attention by its definition, in f64; inputs [batch, seq, heads * dim].
    fn direct(&self, q: &[f32], k: &[f32], v: &[f32]) -> Vec<f64> {
        let (h, d, sq, sk) = (self.heads, self.dim, self.queries, self.keys);
        let inner = h * d;
        let scale = 1.0 / (d as f64).sqrt();
        let mut out = vec![0f64; self.batch * sq * inner];
        for b in 0..self.batch {
            for head in 0..h {
                for i in 0..sq {
                    let qi = &q[(b * sq + i) * inner + head * d..][..d];
                    let scores: Vec<f64> = (0..sk)
                        .map(|j| {
                            let kj = &k[(b * sk + j) * inner + head * d..][..d];
                            qi.iter()
                                .zip(kj)
                                .map(|(&a, &c)| a as f64 * c as f64)
                                .sum::<f64>()
                                * scale
                        })
                        .collect();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    for c in 0..d {
                        let value: f64 = (0..sk)
                            .map(|j| weights[j] * v[(b * sk + j) * inner + head * d + c] as f64)
                            .sum();
                        out[(b * sq + i) * inner + head * d + c] = value / total;
                    }
                }
            }
        }
        out
    }

    fn check(&self, dtype: DType, tolerance: f64) {
        let mut noise = NormalGenerator::new(11);
        let inner = self.heads * self.dim;
        // Spread-out scores (x2), so the softmax is far from uniform.
        let scaled = |n: usize, noise: &mut NormalGenerator| {
            rounded(
                noise.normals(n).into_iter().map(|x| 2.0 * x).collect(),
                dtype,
            )
        };
        let q = scaled(self.batch * self.queries * inner, &mut noise);
        let k = scaled(self.batch * self.keys * inner, &mut noise);
        let v = rounded(noise.normals(self.batch * self.keys * inner), dtype);
        let shape = |s| [self.batch, s, inner];
        let out = multi_head_attention(
            tensor(&q, shape(self.queries), dtype),
            tensor(&k, shape(self.keys), dtype),
            tensor(&v, shape(self.keys), dtype),
            self.heads,
            false,
            false,
        );
        assert_eq!(out.dims(), shape(self.queries));
        let worst = worst_error(out, &self.direct(&q, &k, &v));
        assert!(
            worst <= tolerance,
            "{dtype:?} batch {} heads {} dim {} queries {} keys {}: error {worst:e} over {tolerance:e}",
            self.batch, self.heads, self.dim, self.queries, self.keys
        );
    }
}

#[test]
fn cpu_attention_matches_the_definition() {
    let case = |batch, heads, dim, queries, keys| Case {
        batch,
        heads,
        dim,
        queries,
        keys,
    };
    let cases = [
        // Cross-attention shape: 77 keys, 300 queries (one block, or a few on many threads).
        case(2, 3, 40, 300, 77),
        // Self-attention over 1100 keys: few heads, so the queries split into as many blocks as
        // give each thread four tasks; keys in tiles of 512, 512 and 76, so rows whose maximum a
        // later tile raises are rescaled.
        case(1, 2, 64, 1100, 1100),
        // Enough heads for the largest blocks (up to three threads): 512, 512 and a partial 76.
        case(1, 12, 16, 1100, 600),
        // Three whole tiles of keys and a one-key fourth.
        case(2, 1, 40, 40, 1537),
        case(3, 1, 80, 33, 5),
        case(1, 2, 160, 70, 200),
        // One key: every weight is 1.
        case(2, 2, 40, 9, 1),
    ];
    for c in &cases {
        c.check(DType::F32, 2e-5);
        c.check(DType::F16, 1e-2);
    }
}

#[test]
fn vectorised_exp_matches_the_library_exp() {
    let mut worst = 0f64;
    let mut x = -87.0f32;
    while x < 88.0 {
        let relative = ((exp(x) as f64) - (x as f64).exp()).abs() / (x as f64).exp();
        worst = worst.max(relative);
        x += 0.00137;
    }
    assert!(worst < 3e-7, "worst relative error {worst:e}");
    assert_eq!(exp(0.0), 1.0);
    assert!(exp(f32::NAN).is_nan());
    assert!(exp(-1000.0) < 2e-38);
}

#[test]
fn softmax_numerators_subtract_the_larger_of_the_floor_and_the_scaled_row_maximum() {
    // 37 values: two 16-lane chunks and a remainder of 5, maximum in the remainder.
    let mut original: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).sin()).collect();
    original[35] = 3.0;
    // The row's own maximum (scaled: 1.5) over a lower floor, then a higher floor (a key tile
    // before this one had a larger score).
    for (floor, max) in [(f32::NEG_INFINITY, 1.5), (1.0, 1.5), (2.5, 2.5)] {
        let mut row = original.clone();
        let (got_max, sum) = softmax_numerators(&mut row, 0.5, floor);
        assert_eq!(got_max, max);
        let expected: Vec<f64> = original
            .iter()
            .map(|&s| (s as f64 * 0.5 - max as f64).exp())
            .collect();
        for (got, want) in row.iter().zip(&expected) {
            assert!((*got as f64 - want).abs() < 1e-6, "{got} against {want}");
        }
        assert!((sum as f64 - expected.iter().sum::<f64>()).abs() < 1e-5);
    }
    // A row with nothing to attend to, and no earlier tile that had: no weight at all.
    let mut empty = [f32::NEG_INFINITY; 3];
    assert_eq!(
        softmax_numerators(&mut empty, 1.0, f32::NEG_INFINITY),
        (f32::NEG_INFINITY, 0.0)
    );
    assert_eq!(empty, [0.0; 3]);
}
