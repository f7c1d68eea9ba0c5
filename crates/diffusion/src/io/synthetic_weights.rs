//! Deterministic synthetic weights: each tensor's values depend only on a seed and its name, so
//! a model of any size runs without a file (`synthetic` presets, tests, timing).

use crate::error::Result;
use crate::io::weights::{Init, Values, WeightSource};

/// Deterministic generated weights: each tensor's values depend only on the seed and its name.
pub struct SyntheticWeights {
    seed: u64,
}

impl SyntheticWeights {
    pub fn new(seed: u64) -> Self {
        SyntheticWeights { seed }
    }
}

impl WeightSource for SyntheticWeights {
    fn take(&mut self, name: &str, shape: &[usize], init: Init) -> Result<Values> {
        let count: usize = shape.iter().product();
        Ok(Values::F32(match init {
            Init::Ones => vec![1.0; count],
            Init::Zeros => vec![0.0; count],
            Init::FanIn(fan_in) => {
                // Uniform(-a, a) has variance a^2/3; a = sqrt(3 / fan_in) gives variance 1/fan_in.
                let a = (3.0 / fan_in.max(1) as f64).sqrt() as f32;
                uniform(self.seed ^ fnv1a(name.as_bytes()), count, a)
            }
        }))
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// `count` values uniform in (-a, a): SplitMix64's draws from `state`, 24 bits each. Its state
/// only counts up, so each chunk starts where the draws before it leave the state and the chunks
/// are made in parallel, the same values as one sequence (SDXL's 3.5 billion took most of a
/// full-size test). They are written into the vector's unfilled capacity: a zeroed vector was
/// filled (and its pages faulted in) by one thread first.
fn uniform(state: u64, count: usize, a: f32) -> Vec<f32> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let mut values = Vec::with_capacity(count);
    values.spare_capacity_mut()[..count]
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut state =
                state.wrapping_add(((chunk * CHUNK) as u64).wrapping_mul(SPLITMIX_GAMMA));
            for value in out {
                let bits = splitmix64(&mut state) >> 40; // 24 random bits
                value.write((bits as f32 / (1u64 << 23) as f32 - 1.0) * a);
            }
        });
    // SAFETY: the chunks above cover the first `count` elements and wrote each of them.
    unsafe { values.set_len(count) };
    values
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

const SPLITMIX_GAMMA: u64 = 0x9E3779B97F4A7C15;

pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(SPLITMIX_GAMMA);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_values_made_in_parallel_are_the_sequential_draws() {
        let (state, a) = (0x1234_5678_9abc_def0, 0.25);
        // Three chunks and a part: every chunk edge is crossed.
        let count = 3 * (1 << 16) + 1000;
        let mut sequential_state = state;
        let sequential: Vec<f32> = (0..count)
            .map(|_| {
                ((splitmix64(&mut sequential_state) >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * a
            })
            .collect();
        assert_eq!(uniform(state, count, a), sequential);
        assert!(uniform(state, count, a).iter().all(|v| v.abs() <= a));
    }
}
