//! Error bounds for the kernel tests, derived from the arithmetic each kernel does instead of set
//! where one machine's run passed. The f64 reference computes, beside each exact output, a bound
//! on the error of that output; the test asserts every output is within its own bound and that
//! the bounds are tight enough to catch a wrong kernel (at most `SENSITIVITY` of the values'
//! scale).
//!
//! The model (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §2.2, §3.1):
//! each operation rounds with a relative error of at most the unit roundoff u of its format
//! (2^-24 in f32, 2^-11 in f16), and a sum of terms that went through k roundings on their
//! longest path errs by at most γ(k) · Σ|terms|, in any order and bracketing, with or without
//! FMA. SIMD width (4, 8 or 16 lanes and their remainders), blocking and threads only change
//! the order, so the same bound holds on AVX-512, AVX2 and baseline x86-64, and on a GPU that
//! sums in f32; scripts/test runs these tests under each instruction set (scripts/simd-levels).
//!
//! γ(k) is the smaller of the worst case k·u / (1 − k·u) and Higham and Mary's probabilistic
//! bound exp(λ√k·u + k·u²/(1 − u)) − 1 ("A new approach to probabilistic rounding error
//! analysis", SIAM J. Sci. Comput. 41(5), 2019, Theorem 2.4), which holds with probability at
//! least 1 − 2k·exp(−λ²(1 − u)²/2) when rounding errors are independent and of mean zero: with
//! λ = 10 that is 1 − k·4e-22, so even over the ~10^8 sums of the whole suite a false failure
//! has a probability under 10^-9. Errors of long sums grow like √k, not k, and the worst case
//! would make the bounds of a 1280-channel convolution larger than its outputs.

use burn::tensor::DType;

/// Unit roundoff of f32: 2^-24.
pub const U32: f64 = 1.0 / 16_777_216.0;
/// Unit roundoff of f16: 2^-11.
pub const U16: f64 = 1.0 / 2048.0;
/// The probabilistic bound's λ (see the module's text).
pub const LAMBDA: f64 = 10.0;
/// Relative error of vendor/burn-flex's vectorised f32 `exp` (Cephes' expf): 5 units of
/// roundoff, checked over its whole range by `vectorised_exp_matches_the_library_exp`.
pub const EXP_ERROR: f64 = 5.1 * U32;
/// A bound may be at most this fraction of the values' scale, so that an error of 1% of the
/// scale (a wrong index, a missing term, a wrong formula) fails the test.
pub const SENSITIVITY: f64 = 1e-2;
/// The same for arithmetic in f16, which resolves three digits: a chain of ten f16 operations
/// may err by 0.5% of each value, and values reach ten times the scale here.
pub const F16_SENSITIVITY: f64 = 5e-2;
/// Smallest f16 spacing over two: the most a value under f16's smallest normal rounds by.
pub const F16_TINY: f64 = 1.0 / 33_554_432.0;

/// γ(k) in f32 arithmetic: see the module's text.
pub fn gamma(k: usize) -> f64 {
    gamma_in(k, U32)
}

/// γ(k) for unit roundoff `u`.
pub fn gamma_in(k: usize, u: f64) -> f64 {
    let k = k as f64;
    let worst = if k * u < 1.0 {
        k * u / (1.0 - k * u)
    } else {
        f64::INFINITY
    };
    let probable = (LAMBDA * k.sqrt() * u + k * u * u / (1.0 - u)).exp_m1();
    worst.min(probable)
}

/// The rounding of a result `y` stored in `dtype` after it was computed in f32: u of f16 or
/// bf16 relative (f16's subnormals absolute), nothing for f32.
pub fn storage_rounding(dtype: DType, y: f64) -> f64 {
    match dtype {
        DType::F16 => U16 * y.abs() + F16_TINY,
        DType::BF16 => y.abs() / 256.0 + f32::MIN_POSITIVE as f64,
        _ => 0.0,
    }
}

/// The sensitivity (`SENSITIVITY` or `F16_SENSITIVITY`) for results computed or stored in
/// `dtype`.
pub fn sensitivity(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => SENSITIVITY,
        _ => F16_SENSITIVITY,
    }
}

/// Asserts each `got[i]` is within `bound[i]` of `expected[i]`, and that no bound exceeds
/// `sensitivity` of `scale`. Prints how much of its bound the worst value used.
pub fn assert_within(
    what: &str,
    got: &[f32],
    expected: &[f64],
    bound: &[f64],
    scale: f64,
    sensitivity: f64,
) {
    assert_eq!(got.len(), expected.len(), "{what}: length differs");
    assert_eq!(bound.len(), expected.len(), "{what}: one bound per value");
    let mut worst = (0f64, 0usize);
    for (i, ((&g, &e), &b)) in got.iter().zip(expected).zip(bound).enumerate() {
        let error = (g as f64 - e).abs();
        assert!(
            error <= b,
            "{what}: value {i} is {g:e}, {e:e} by definition: error {error:e} over its bound {b:e}"
        );
        let used = if b > 0.0 { error / b } else { 0.0 };
        if used > worst.0 {
            worst = (used, i);
        }
    }
    let loosest = bound.iter().fold(0f64, |m, &b| m.max(b)) / scale;
    eprintln!(
        "{what}: worst error {:.3} of its bound (value {}); bounds up to {loosest:.1e} of the scale",
        worst.0, worst.1
    );
    assert!(
        loosest <= sensitivity,
        "{what}: a bound of {loosest:e} of the values' scale could not catch a wrong kernel"
    );
}

/// `1 +` the root mean square of `values`: the scale that bounds are measured against (an error
/// of that size is what a wrong index or formula makes).
pub fn scale_of(values: &[f64]) -> f64 {
    1.0 + (values.iter().map(|v| v * v).sum::<f64>() / values.len().max(1) as f64).sqrt()
}

/// The exact statistics of one normalised group (a LayerNorm row, a GroupNorm group) and what
/// bounds the error of normalising it.
pub struct NormGroup {
    len: usize,
    mean: f64,
    variance: f64,
    eps: f64,
    /// mean |x|: what the first pass's sum of x is conditioned by.
    mean_abs: f64,
    /// mean |x - mean|: what the second pass's sum of deviations is conditioned by.
    mean_abs_deviation: f64,
}

/// How a kernel normalises. Every kernel here takes the mean in a first pass (lanes in f32, any
/// order) and stores it as `m`, then sums `x - m` and `(x - m)^2`.
pub struct NormArithmetic {
    /// Unit roundoff of the elementwise operations (the differences, squares, scale and shift).
    pub elementwise: f64,
    /// Rounding of the stored mean (f32's u; twice f16's where the mean is two f16 means).
    pub stored_mean: f64,
    /// The second pass's sum of `x - m` corrects the mean (`compensated`), or the mean's error
    /// stays in every centred value.
    pub compensated: bool,
    /// Relative error of the `exp` a following SiLU takes of its argument.
    pub exp: fn(f64) -> f64,
}

/// vendor/burn-flex's vectorised f32 `exp`: `EXP_ERROR` over its whole range.
pub fn flex_exp(_: f64) -> f64 {
    EXP_ERROR
}

/// A Vulkan driver's f32 `exp`: the precision the Vulkan specification requires of it,
/// 3 + 2·|x| ULP (an ULP is at most 2u of the result).
pub fn vulkan_exp(x: f64) -> f64 {
    (3.0 + 2.0 * x.abs()) * 2.0 * U32
}

/// An f16 `exp` (widened to f32 and rounded back): two roundings of f16.
pub fn f16_exp(_: f64) -> f64 {
    2.0 * U16
}

impl NormGroup {
    pub fn of(x: &[f32], eps: f64) -> Self {
        let len = x.len() as f64;
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / len;
        let variance = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / len;
        NormGroup {
            len: x.len(),
            mean,
            variance,
            eps,
            mean_abs: x.iter().map(|&v| (v as f64).abs()).sum::<f64>() / len,
            mean_abs_deviation: x.iter().map(|&v| (v as f64 - mean).abs()).sum::<f64>() / len,
        }
    }

    /// 1 / sqrt(variance + eps), exactly.
    pub fn inverse_std(&self) -> f64 {
        1.0 / (self.variance + self.eps).sqrt()
    }

    /// `(x - mean) * inverse_std * weight + beta`, exactly, and the bound on its error.
    ///
    /// With n values, Δ = (γ(n+1) + u_m)·mean|x| is the stored mean's error (mean|x| bounds the
    /// means of parts too, where the mean is a mean of rounded means). Compensated,
    /// the mean left in the centred values errs by γ(n+2)·(mean|x - mean| + Δ) instead of Δ, and
    /// each centred value by that plus two roundings of |x - mean| + Δ. The sum of squares
    /// n·(variance + (mean - m)^2) errs by γ(n+3) of itself; the correction's square is taken off
    /// (compensated) or (mean - m)^2 stays. 1 / sqrt(var + eps) then errs by half the
    /// variance's error over var + eps, plus three roundings; the product with the weight and the
    /// sum with beta add four.
    pub fn normalised(&self, x: f32, weight: f64, beta: f64, a: &NormArithmetic) -> (f64, f64) {
        let (n, ue) = (self.len, a.elementwise);
        let centred = x as f64 - self.mean;
        let inverse_std = self.inverse_std();
        let y = centred * inverse_std * weight + beta;
        let delta = gamma(n + 1) * self.mean_abs + a.stored_mean * self.mean_abs;
        let mean_left = if a.compensated {
            gamma(n + 2) * (self.mean_abs_deviation + delta)
        } else {
            delta
        };
        let centred_error = mean_left + 2.0 * ue * (centred.abs() + delta);
        let squares = self.variance + delta * delta;
        let variance_error = if a.compensated {
            (gamma(n + 3) + 3.0 * ue) * squares + 2.0 * delta * mean_left + mean_left * mean_left
        } else {
            (gamma(n + 3) + 3.0 * ue) * squares + delta * delta
        };
        let relative = variance_error / (self.variance + self.eps);
        // First order in the variance's relative error while that is under a half; past it, only
        // what a variance of at least zero allows: 1 / sqrt(eps).
        let inverse_std_error = if relative < 0.5 {
            relative / 2.0 + 3.0 * ue
        } else {
            1.0 / (self.eps.sqrt() * inverse_std) + 3.0 * ue
        };
        let z = centred * inverse_std;
        let bound = weight.abs() * inverse_std * centred_error
            + (weight * z).abs() * (inverse_std_error + 4.0 * ue)
            + ue * (y.abs() + beta.abs());
        (y, bound)
    }
}

/// SiLU `y / (1 + e^-y)` of a value known to within `bound`, computed with unit roundoff `u` and
/// an `exp` of relative error `exp`: |SiLU'| <= 1.1, and the sigmoid adds its exp's error (at
/// most once the exp's relative error, as e/(1 + e) < 1) and three roundings. A sigmoid under
/// f32's smallest normal is not resolved (the exp saturates near e^88.7), which leaves |y| times
/// that.
pub fn silu_of(y: f64, bound: f64, u: f64, exp: fn(f64) -> f64) -> (f64, f64) {
    let s = y / (1.0 + (-y).exp());
    let error = exp(-y) + 3.0 * u;
    (
        s,
        1.1 * bound + error * s.abs() + (1.0 + y.abs()) * f32::MIN_POSITIVE as f64,
    )
}
