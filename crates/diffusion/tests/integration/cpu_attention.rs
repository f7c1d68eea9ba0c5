//! The CPU backend's attention (burn-flex, patched in vendor/: unmasked attention runs as blocks of
//! query rows with a vectorised exp) against softmax(q k^T / sqrt(d)) v computed in f64, through
//! the engine's own `multi_head_attention` (heads split from the channels, so the inputs arrive as
//! strided views). Shapes the models do not use: head dims 40, 64, 80 and 160, batch 1 to 3, query
//! counts that leave a partial last block, one key, more keys than a block holds and than a tile
//! of keys holds; f32 and f16.
//! The causal text-encoder path is covered by the parity suite. Each output is checked against
//! the bound the blocked kernel's arithmetic gives it (see `Case::direct`).

use burn::tensor::DType;
use burn_flex::ops::attention_blocked::softmax_numerators;
use burn_flex::ops::vector_math::exp;
use sdbench_diffusion::nn::multi_head_attention;
use sdbench_diffusion::noise::NormalGenerator;

use crate::common::bounds::{
    assert_within, gamma, scale_of, sensitivity, storage_rounding, EXP_ERROR, SENSITIVITY, U32,
};
use crate::common::kernels::{rounded, tensor, values};

/// Keys per tile of the blocked kernel (vendor/burn-flex `attention_blocked.rs`).
const KEY_TILE: usize = 512;

struct Case {
    batch: usize,
    heads: usize,
    dim: usize,
    queries: usize,
    keys: usize,
}

impl Case {
    /// Query rows checked: all of them up to 300, else every fifth and the last (so every block
    /// of rows, the partial last one too, is checked; the f64 definition is the test's cost,
    /// twenty-five times over under scripts/simd-levels' emulator).
    fn checked_rows(&self) -> Vec<usize> {
        let step = if self.queries > 300 { 5 } else { 1 };
        let mut rows: Vec<usize> = (0..self.queries).step_by(step).collect();
        if rows.last() != Some(&(self.queries - 1)) {
            rows.push(self.queries - 1);
        }
        rows
    }

    /// Attention by its definition, in f64, at the checked rows (inputs [batch, seq,
    /// heads * dim]; the result in [batch, checked row, heads * dim] order). With each output
    /// `o = Σ p_j v_j / Σ p_j`, `p_j = exp(s_j - m)`, its error bound, stored in `dtype`:
    /// - score j (a sum of `dim` products, scaled, less the row's maximum m) errs by
    ///   `ε_j = γ(dim + 1)·scale·Σ|q k_j| + 2u·(|scale·s_j| + |m|)`, so `p_j` by a relative
    ///   `δ_j = ε_j + EXP_ERROR + 2u`, plus `EXP_ERROR + 2u` for each tile of keys whose larger
    ///   maximum rescales the sums;
    /// - those move o by `Σ p_j δ_j |v_j - o| / Σ p_j` (the weights' errors shift it towards v_j);
    /// - the two sums over the keys (and the tiles' rescaled partial sums) err by
    ///   `γ(keys + 2·tiles)` of `Σ p_j |v_j| / Σ p_j` and of `|o|`, and the division by `u·|o|`.
    fn direct(&self, q: &[f32], k: &[f32], v: &[f32], dtype: DType) -> (Vec<f64>, Vec<f64>) {
        let (h, d, sq, sk) = (self.heads, self.dim, self.queries, self.keys);
        let inner = h * d;
        let scale = 1.0 / (d as f64).sqrt();
        let tiles = sk.div_ceil(KEY_TILE);
        let rows = self.checked_rows();
        let (mut out, mut bounds) = (Vec::new(), Vec::new());
        for b in 0..self.batch {
            for &i in &rows {
                for head in 0..h {
                    let qi = &q[(b * sq + i) * inner + head * d..][..d];
                    let (scores, magnitudes): (Vec<f64>, Vec<f64>) = (0..sk)
                        .map(|j| {
                            let kj = &k[(b * sk + j) * inner + head * d..][..d];
                            qi.iter().zip(kj).fold((0f64, 0f64), |(s, m), (&a, &c)| {
                                let p = a as f64 * c as f64;
                                (s + p, m + p.abs())
                            })
                        })
                        .map(|(s, m)| (s * scale, m * scale))
                        .unzip();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    let value = |j: usize| &v[(b * sk + j) * inner + head * d..][..d];
                    let mut o = vec![0f64; d];
                    for (j, &w) in weights.iter().enumerate() {
                        for (o, &x) in o.iter_mut().zip(value(j)) {
                            *o += w * x as f64;
                        }
                    }
                    o.iter_mut().for_each(|o| *o /= total);
                    let (mut shifted, mut spread) = (vec![0f64; d], vec![0f64; d]);
                    for j in 0..sk {
                        let relative = gamma(d + 1) * magnitudes[j]
                            + 2.0 * U32 * (scores[j].abs() + max.abs())
                            + (tiles + 1) as f64 * (EXP_ERROR + 2.0 * U32);
                        for c in 0..d {
                            let x = value(j)[c] as f64;
                            shifted[c] += weights[j] * relative * (x - o[c]).abs();
                            spread[c] += weights[j] * x.abs();
                        }
                    }
                    for c in 0..d {
                        out.push(o[c]);
                        bounds.push(
                            shifted[c] / total
                                + gamma(sk + 2 * tiles) * (spread[c] / total + o[c].abs())
                                + U32 * o[c].abs()
                                + storage_rounding(dtype, o[c]),
                        );
                    }
                }
            }
        }
        (out, bounds)
    }

    fn check(&self, dtype: DType) {
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
        let all = values(out);
        let got: Vec<f32> = (0..self.batch)
            .flat_map(|b| {
                let all = &all;
                self.checked_rows()
                    .into_iter()
                    .flat_map(move |i| all[(b * self.queries + i) * inner..][..inner].to_vec())
            })
            .collect();
        let (expected, bounds) = self.direct(&q, &k, &v, dtype);
        assert_within(
            &format!(
                "{dtype:?} batch {} heads {} dim {} queries {} keys {}",
                self.batch, self.heads, self.dim, self.queries, self.keys
            ),
            &got,
            &expected,
            &bounds,
            scale_of(&expected),
            sensitivity(dtype),
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
        // Three whole tiles of keys and a one-key fourth.
        case(2, 1, 40, 40, 1537),
        case(3, 1, 80, 33, 5),
        case(1, 2, 160, 70, 200),
        // One key: every weight is 1.
        case(2, 2, 40, 9, 1),
    ];
    for c in &cases {
        c.check(DType::F32);
        c.check(DType::F16);
    }
}

/// Many blocks of query rows. The blocking is the same code on every instruction set, so
/// scripts/simd-levels leaves this test out (its f64 definition takes minutes under the emulator).
#[test]
fn cpu_attention_splits_many_queries_into_blocks() {
    let case = |heads, dim, keys| Case {
        batch: 1,
        heads,
        dim,
        queries: 1100,
        keys,
    };
    // Self-attention over 1100 keys: few heads, so the queries split into as many blocks as give
    // each thread four tasks; keys in tiles of 512, 512 and 76, so rows whose maximum a later
    // tile raises are rescaled.
    // Then enough heads for the largest blocks (up to three threads): 512, 512 and a partial 76.
    for c in [case(2, 64, 1100), case(12, 16, 600)] {
        c.check(DType::F32);
        c.check(DType::F16);
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
    // The relative error the other kernels' bounds take for this exp (common::bounds).
    assert!(
        worst <= EXP_ERROR,
        "worst relative error {worst:e} over {EXP_ERROR:e}"
    );
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
        // Each numerator: the exp's error, and the argument's two roundings (scaling, then
        // subtracting the maximum); the sum: γ(37) of the numerators, and their errors.
        let (expected, bounds): (Vec<f64>, Vec<f64>) = original
            .iter()
            .map(|&s| {
                let argument = s as f64 * 0.5 - max as f64;
                let p = argument.exp();
                let rounding = U32 * ((s as f64 * 0.5).abs() + argument.abs());
                (p, p * (EXP_ERROR + rounding))
            })
            .unzip();
        assert_within(
            &format!("floor {floor}"),
            &row,
            &expected,
            &bounds,
            1.0,
            SENSITIVITY,
        );
        let total: f64 = expected.iter().sum();
        let sum_bound = gamma(37) * total + bounds.iter().sum::<f64>();
        assert_within(
            "their sum",
            &[sum],
            &[total],
            &[sum_bound],
            total,
            SENSITIVITY,
        );
    }
    // A row with nothing to attend to, and no earlier tile that had: no weight at all.
    let mut empty = [f32::NEG_INFINITY; 3];
    assert_eq!(
        softmax_numerators(&mut empty, 1.0, f32::NEG_INFINITY),
        (f32::NEG_INFINITY, 0.0)
    );
    assert_eq!(empty, [0.0; 3]);
}
