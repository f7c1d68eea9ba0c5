//! Rotary position embeddings on interleaved pairs (diffusers' FLUX and Z-Image transformers
//! rotate channels (2j, 2j+1) as complex numbers), computed on halves: q and k are made with each
//! head's channels reordered so that pair `j` is (j, j + head_dim/2).

use burn::prelude::*;
use burn::tensor::{DType, TensorData};

/// A head's channels with the even ones first, then the odd ones: diffusers rotates the pairs
/// (2j, 2j+1), and in this order pair `j` is (j, j + head_dim/2), so the rotation needs no
/// stride-2 views. q and k are made in this order (their weights' rows reordered at load);
/// attention sums over the channels, so its result is the same; v keeps the stored order.
pub fn half_split(head_dim: usize) -> Vec<usize> {
    (0..head_dim)
        .step_by(2)
        .chain((1..head_dim).step_by(2))
        .collect()
}

/// diffusers' `apply_rotary_emb` with `use_real_unbind_dim=-1` (pairs rotated as complex
/// numbers) on channels in `half_split` order: `x * cos + [second half | first half] * sin`,
/// the sign in the sin table. `x`: [N, S, H, dh]; tables as `Rope` holds them.
pub fn rotate_halves<B: Backend>(
    x: Tensor<B, 4>,
    cos: &Tensor<B, 4>,
    sin: &Tensor<B, 4>,
) -> Tensor<B, 4> {
    let half = x.dims()[3] / 2;
    let swapped = Tensor::cat(
        vec![
            x.clone().narrow(3, half, half),
            x.clone().narrow(3, 0, half),
        ],
        3,
    );
    x * cos.clone() + swapped * sin.clone()
}

/// Where an angle is rounded before its cosine and sine: FLUX.2's `Flux2PosEmbed` keeps f64;
/// Z-Image's `RopeEmbedder` rounds it to f32 (`.float()` before `torch.polar`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AngleRounding {
    F64,
    F32,
}

/// The rotary tables (cos, sin) of `positions` (a coordinate per axis): per axis, frequencies
/// `theta^(-2i/dim)` in f64 times the coordinate, the axes side by side, one angle per pair of
/// channels. In `half_split` order pair `j` is channels `j` and `j + head_dim/2`: cos for both,
/// sin negated for the first (see `rotate_halves`). Shaped [1, S, heads, dh] on the CPU backend
/// (which multiplies fastest without broadcasting over heads), [1, S, 1, dh] elsewhere.
#[allow(clippy::too_many_arguments)]
pub fn rope_tables<B: Backend, P: AsRef<[f32]>>(
    positions: &[P],
    axes_dims: &[usize],
    theta: f64,
    rounding: AngleRounding,
    heads: usize,
    dtype: DType,
    device: &B::Device,
) -> (Tensor<B, 4>, Tensor<B, 4>) {
    let s = positions.len();
    let dh: usize = axes_dims.iter().sum();
    let half = dh / 2;
    let mut cos = vec![0f32; s * dh];
    let mut sin = vec![0f32; s * dh];
    for (row, pos) in positions.iter().enumerate() {
        let pos = pos.as_ref();
        let pairs = axes_dims
            .iter()
            .enumerate()
            .flat_map(|(axis, &dim)| (0..dim / 2).map(move |i| (axis, dim, i)));
        for (j, (axis, dim, i)) in pairs.enumerate() {
            let freq = 1.0 / theta.powf((2 * i) as f64 / dim as f64);
            let mut angle = pos[axis] as f64 * freq;
            if rounding == AngleRounding::F32 {
                angle = angle as f32 as f64;
            }
            let (c, sn) = (angle.cos() as f32, angle.sin() as f32);
            let at = row * dh + j;
            (cos[at], cos[at + half]) = (c, c);
            (sin[at], sin[at + half]) = (-sn, sn);
        }
    }
    let heads = if super::runs_on_cpu::<B>(device) {
        heads
    } else {
        1
    };
    let table = |v: Vec<f32>| {
        let v: Vec<f32> = v
            .chunks_exact(dh)
            .flat_map(|row| row.repeat(heads))
            .collect();
        Tensor::<B, 4>::from_data(TensorData::new(v, [1, s, heads, dh]), device).cast(dtype)
    };
    (table(cos), table(sin))
}
