//! Rotary position embeddings on interleaved pairs (diffusers' FLUX and Z-Image transformers
//! rotate channels (2j, 2j+1) as complex numbers), computed on halves: q and k are made with each
//! head's channels reordered so that pair `j` is (j, j + head_dim/2).

use burn::prelude::*;

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
