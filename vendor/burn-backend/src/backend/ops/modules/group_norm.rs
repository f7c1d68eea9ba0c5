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

    let grouped = B::float_reshape(tensor, Shape::from(vec![n, groups, per_group * spatial]));
    let mean = B::float_mean_dim(grouped.clone(), 2);
    let centered = B::float_sub(grouped, mean);
    let variance = B::float_mean_dim(B::float_mul(centered.clone(), centered.clone()), 2);
    let inverse_std = B::float_recip(B::float_sqrt(B::float_add_scalar(variance, epsilon.into())));
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
