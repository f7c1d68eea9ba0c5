//! (SD Bench) Group normalisation composed from tensor ops: the default of
//! [ModuleOps::group_norm](super::ModuleOps::group_norm), and what a backend's fused kernel falls back
//! to for the dtypes it does not cover.

use alloc::vec;
use alloc::vec::Vec;
use burn_std::Shape;

use crate::tensor::FloatTensor;
use crate::{Backend, TensorMetadata};

/// See [ModuleOps::group_norm](super::ModuleOps::group_norm).
pub fn group_norm_composed<B: Backend>(
    tensor: FloatTensor<B>,
    gamma: FloatTensor<B>,
    beta: FloatTensor<B>,
    groups: usize,
    epsilon: f64,
    silu: bool,
) -> FloatTensor<B> {
    let shape = tensor.shape();
    let dims: Vec<usize> = shape.iter().copied().collect();
    assert!(dims.len() >= 2, "group_norm: input must have at least 2 dimensions, got {dims:?}");
    let (n, c) = (dims[0], dims[1]);
    assert!(
        groups > 0 && c % groups == 0,
        "group_norm: {c} channels do not split into {groups} groups"
    );
    let spatial: usize = dims[2..].iter().product();
    let per_group = c / groups;

    // (SD Bench) Each group's mean is taken in two steps, over the last dimension and then over
    // the rest (the same mean: the rows are equally long). A GPU reduction without autotune runs
    // one unit per output that loops over the whole reduced axis: for one group of a VAE decoding
    // 512 pixels (a million values) that is slow on any GPU, and on Mesa's lavapipe it is wrong,
    // because llvmpipe ends a shader's loops after 65,535 iterations in all (the sum stopped at
    // 262,144 values).
    let last = if dims.len() > 2 { dims[dims.len() - 1] } else { 1 };
    let rows = per_group * spatial / last.max(1);
    let grouped = B::float_reshape(tensor, Shape::from(vec![n, groups, rows, last]));
    let group_mean = |t| B::float_mean_dim(B::float_mean_dim(t, 3), 2);
    let mean = group_mean(grouped.clone());
    let centered = B::float_sub(grouped, mean);
    let variance = group_mean(B::float_mul(centered.clone(), centered.clone()));
    let inverse_std = B::float_recip(B::float_sqrt(B::float_add_scalar(variance, epsilon.into())));
    let inverse_std = B::float_reshape(inverse_std, Shape::from(vec![n, groups, 1]));
    // One scale and one shift per (sample, channel), applied over the spatial positions.
    let inverse_std = B::float_reshape(
        B::float_expand(inverse_std, Shape::from(vec![n, groups, per_group])),
        Shape::from(vec![n, c, 1]),
    );
    let scale = B::float_mul(inverse_std, B::float_reshape(gamma, Shape::from(vec![1, c, 1])));
    let shift = B::float_reshape(beta, Shape::from(vec![1, c, 1]));
    let centered = B::float_reshape(centered, Shape::from(vec![n, c, spatial]));
    let y = B::float_add(B::float_mul(centered, scale), shift);
    let y = if silu {
        B::float_mul(y.clone(), B::sigmoid(y))
    } else {
        y
    };
    B::float_reshape(y, shape)
}
