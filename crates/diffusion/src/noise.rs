//! The documented deterministic noise generator. `--seed N` draws the initial latents here, on the
//! CPU, so every backend starts from the same numbers; ancestral samplers continue the same stream.
//!
//! Definition (version 1), reproducible in any language:
//! - state = seed (u64); each draw: state += 0x9E3779B97F4A7C15, then SplitMix64's output mix;
//! - uniform u = ((x >> 11) + 1) * 2^-53, in (0, 1];
//! - normals come in Box-Muller pairs from (u1, u2): r = sqrt(-2 ln u1), a = 2 pi u2;
//!   first r cos a, then r sin a; computed in f64, returned as f32;
//! - tensors are filled in row-major (C) order.
//!
//! `scripts/make_fixtures.py` implements the same generator in Python for the parity tests.

use crate::io::synthetic_weights::splitmix64;

pub struct NormalGenerator {
    state: u64,
    spare: Option<f64>,
}

impl NormalGenerator {
    pub fn new(seed: u64) -> Self {
        NormalGenerator {
            state: seed,
            spare: None,
        }
    }

    fn uniform(&mut self) -> f64 {
        ((splitmix64(&mut self.state) >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub fn next_normal(&mut self) -> f64 {
        if let Some(v) = self.spare.take() {
            return v;
        }
        let (u1, u2) = (self.uniform(), self.uniform());
        let r = (-2.0 * u1.ln()).sqrt();
        let a = 2.0 * std::f64::consts::PI * u2;
        self.spare = Some(r * a.sin());
        r * a.cos()
    }

    pub fn normals(&mut self, count: usize) -> Vec<f32> {
        (0..count).map(|_| self.next_normal() as f32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers_and_roughly_standard() {
        let a = NormalGenerator::new(7).normals(20_000);
        assert_eq!(a, NormalGenerator::new(7).normals(20_000));
        assert_ne!(a, NormalGenerator::new(8).normals(20_000));
        let mean = a.iter().map(|&x| x as f64).sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "variance {var}");
    }
}
