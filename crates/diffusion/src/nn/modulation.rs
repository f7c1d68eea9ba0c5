//! What the FLUX transformers' blocks share around their adaptive norms: one modulation row per
//! image, cut into its shift/scale/gate parts, the f16 clamp diffusers applies after each block,
//! and the timestep as the model's dtype holds it.

use burn::prelude::*;
use burn::tensor::DType;

/// [N, W] -> [N, 1, W]: one modulation row per image, broadcast over its tokens.
pub fn rows<B: Backend>(t: Tensor<B, 2>) -> Tensor<B, 3> {
    let [n, w] = t.dims();
    t.reshape([n, 1, w])
}

/// `torch.chunk(t, count, dim=-1)` of [N, 1, count*D].
pub fn chunks<B: Backend>(t: Tensor<B, 3>, count: usize) -> Vec<Tensor<B, 3>> {
    let d = t.dims()[2] / count;
    (0..count).map(|i| t.clone().narrow(2, i * d, d)).collect()
}

/// diffusers clips f16 activations to the largest finite f16 after each block.
pub fn clamp_f16<B: Backend>(x: Tensor<B, 3>) -> Tensor<B, 3> {
    if x.dtype() == DType::F16 {
        x.clamp(-65504.0, 65504.0)
    } else {
        x
    }
}

/// A host value (a timestep, a guidance scale) as the model's dtype holds it in f16: diffusers
/// casts it before scaling it by 1000. In bf16 it stays exact: diffusers' bf16 pipelines round it
/// to 8 significant bits too, which moves `t * 1000` by up to 2, and rounding so took FLUX.2's
/// bf16 images of its tiny fixture from 4.1e-2 to 1.0 away from the f32 references (the time
/// embedding's high frequencies).
pub fn half_round(value: f32, dtype: DType) -> f32 {
    match dtype {
        DType::F16 => half::f16::from_f32(value).to_f32(),
        _ => value,
    }
}
