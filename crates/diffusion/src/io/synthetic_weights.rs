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
                uniform(self.seed ^ fnv1a(name.as_bytes()), count, bound(fan_in))
            }
        }))
    }

    /// The same values as `take`'s, each at its transposed place: value (r, c) is draw
    /// `r * cols + c` of the tensor's sequence wherever it is written.
    fn take_transposed(
        &mut self,
        name: &str,
        rows: usize,
        cols: usize,
        init: Init,
    ) -> Result<Option<Values>> {
        Ok(match init {
            Init::FanIn(fan_in) => Some(Values::F32(uniform_transposed(
                self.seed ^ fnv1a(name.as_bytes()),
                rows,
                cols,
                bound(fan_in),
            ))),
            // Constant values are their own transpose.
            Init::Ones | Init::Zeros => Some(self.take(name, &[rows, cols], init)?),
        })
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Uniform(-a, a) has variance a^2/3; a = sqrt(3 / fan_in) gives variance 1/fan_in.
fn bound(fan_in: usize) -> f32 {
    (3.0 / fan_in.max(1) as f64).sqrt() as f32
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
                value.write(draw(splitmix64(&mut state), a));
            }
        });
    // SAFETY: the chunks above cover the first `count` elements and wrote each of them.
    unsafe { values.set_len(count) };
    values
}

/// `uniform(state, rows * cols, a)` as a [rows, cols] matrix, written transposed ([cols, rows]):
/// each output row (a stored column) is a stride of `cols` draws, and SplitMix64's state after
/// draw k is `state + (k + 1) * gamma`, so every row starts and steps without the draws between.
fn uniform_transposed(state: u64, rows: usize, cols: usize, a: f32) -> Vec<f32> {
    use rayon::prelude::*;
    let count = rows * cols;
    let mut values = Vec::with_capacity(count);
    if count == 0 {
        return values;
    }
    let step = (cols as u64).wrapping_mul(SPLITMIX_GAMMA);
    // Whole output rows per task, about 2^16 values each.
    let per_task = rows * (1usize << 16).div_ceil(rows);
    values.spare_capacity_mut()[..count]
        .par_chunks_mut(per_task)
        .enumerate()
        .for_each(|(task, out)| {
            let first = task * per_task / rows;
            for (c, row) in out.chunks_mut(rows).enumerate() {
                // The state before draw `0 * cols + c`, that is after c draws.
                let mut state =
                    state.wrapping_add(((first + c) as u64).wrapping_mul(SPLITMIX_GAMMA));
                for value in row {
                    let z = state.wrapping_add(SPLITMIX_GAMMA);
                    value.write(draw(mix(z), a));
                    state = state.wrapping_add(step);
                }
            }
        });
    // SAFETY: the chunks above cover the first `count` elements and wrote each of them.
    unsafe { values.set_len(count) };
    values
}

/// A value uniform in (-a, a) from a draw's top 24 bits.
fn draw(bits: u64, a: f32) -> f32 {
    ((bits >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * a
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

const SPLITMIX_GAMMA: u64 = 0x9E3779B97F4A7C15;

pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(SPLITMIX_GAMMA);
    mix(*state)
}

/// SplitMix64's output function of its state.
fn mix(mut z: u64) -> u64 {
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

    #[test]
    fn transposed_synthetic_values_are_the_stored_ones_transposed() {
        let (state, a) = (0x0fed_cba9_8765_4321, 0.5);
        // Tasks of whole output rows across a 2^16 boundary, a row longer than a task, a single
        // row and a single column.
        for (rows, cols) in [(300, 700), (70_000, 3), (1, 5), (5, 1)] {
            let stored = uniform(state, rows * cols, a);
            let transposed = uniform_transposed(state, rows, cols, a);
            assert_eq!(transposed.len(), rows * cols);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(
                        transposed[c * rows + r].to_bits(),
                        stored[r * cols + c].to_bits(),
                        "{rows}x{cols} at ({r}, {c})"
                    );
                }
            }
        }
        let mut weights = SyntheticWeights::new(7);
        let Some(Values::F32(ones)) = weights.take_transposed("n", 2, 3, Init::Ones).unwrap()
        else {
            panic!("synthetic ones, transposed");
        };
        assert_eq!(ones, vec![1.0; 6]);
    }
}
