//! The `group_norm` op (vendor/burn-backend declares it, burn-flex fuses it for f32, other dtypes
//! take the composed default) against GroupNorm(+SiLU) computed in f64, on shapes the models do
//! not use: channel counts that are not multiples of 8, one group, one channel per group, batch 1
//! to 3, odd and one-position spatial sizes, and a group larger than a summing block; through the
//! engine's `nn::GroupNorm` (f32 and f16 activations) and the op itself on f16 (composed path).
//! Each value is checked against the bound its path's arithmetic gives it
//! (`common::bounds::NormGroup`).

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::ops::ModuleOps;
use burn::tensor::{DType, TensorData, TensorPrimitive};
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::nn::GroupNorm;
use sdbench_diffusion::noise::NormalGenerator;
use sdbench_diffusion::pipeline::B;

use crate::common::bounds::{
    assert_within, f16_exp, flex_exp, scale_of, sensitivity, silu_of, storage_rounding, vulkan_exp,
    NormArithmetic, NormGroup, U16, U32,
};
use crate::common::kernels::{rounded, tensor, values};

/// The fused f32 kernel: f32 lanes summed into f64, the mean corrected by the deviations' mean.
const FUSED: NormArithmetic = NormArithmetic {
    elementwise: U32,
    stored_mean: U32,
    compensated: true,
    exp: flex_exp,
};

/// burn-backend's composed default on f16 tensors: every elementwise result rounded to f16, the
/// reductions summed in f32 and rounded to f16 (the mean is a mean of row means), no correction.
const COMPOSED_F16: NormArithmetic = NormArithmetic {
    elementwise: U16,
    stored_mean: 2.0 * U16,
    compensated: false,
    exp: f16_exp,
};

/// The GPU backends' composed default on f32 (`nn::GroupNorm` widens f16 activations): the same
/// steps in f32, the driver's `exp`.
const COMPOSED_GPU: NormArithmetic = NormArithmetic {
    elementwise: U32,
    stored_mean: 2.0 * U32,
    compensated: false,
    exp: vulkan_exp,
};

struct Case {
    batch: usize,
    channels: usize,
    groups: usize,
    height: usize,
    width: usize,
}

impl Case {
    /// GroupNorm(+SiLU) by its definition in f64, and each value's bound for `arithmetic`,
    /// results stored in `dtype`.
    fn direct(
        &self,
        x: &[f32],
        gamma: &[f32],
        beta: &[f32],
        silu: bool,
        arithmetic: &NormArithmetic,
        dtype: DType,
    ) -> (Vec<f64>, Vec<f64>) {
        let spatial = self.height * self.width;
        let per_group = self.channels / self.groups;
        let (mut out, mut bounds) = (Vec::with_capacity(x.len()), Vec::with_capacity(x.len()));
        for (index, group) in x.chunks(per_group * spatial).enumerate() {
            let stats = NormGroup::of(group, 1e-5);
            for (i, &v) in group.iter().enumerate() {
                let channel = (index % self.groups) * per_group + i / spatial;
                let (g, b) = (gamma[channel] as f64, beta[channel] as f64);
                let (y, bound) = stats.normalised(v, g, b, arithmetic);
                let (y, bound) = if silu {
                    silu_of(y, bound, arithmetic.elementwise, arithmetic.exp)
                } else {
                    (y, bound)
                };
                out.push(y);
                bounds.push(bound + storage_rounding(dtype, y));
            }
        }
        (out, bounds)
    }

    fn inputs(&self, dtype: DType) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut noise = NormalGenerator::new(5);
        let n = self.batch * self.channels * self.height * self.width;
        // An offset mean (3) and spread (x2), so centring matters.
        let x = rounded(
            noise
                .normals(n)
                .into_iter()
                .map(|v| 3.0 + 2.0 * v)
                .collect(),
            dtype,
        );
        (
            x,
            noise.normals(self.channels),
            noise.normals(self.channels),
        )
    }

    fn shape(&self) -> [usize; 4] {
        [self.batch, self.channels, self.height, self.width]
    }

    fn label(&self) -> String {
        format!(
            "batch {} channels {} groups {} {}x{}",
            self.batch, self.channels, self.groups, self.height, self.width
        )
    }

    /// Through `nn::GroupNorm`, which runs the op in f32 whatever the activations' dtype.
    fn check_layer(&self, dtype: DType, silu: bool) {
        self.check_layer_on(&cpu_device(), dtype, silu, &FUSED);
    }

    fn check_layer_on(
        &self,
        device: &Device<B>,
        dtype: DType,
        silu: bool,
        arithmetic: &NormArithmetic,
    ) {
        let (x, gamma, beta) = self.inputs(dtype);
        let on = |values: &[f32]| {
            Tensor::<B, 1>::from_data(TensorData::new(values.to_vec(), [values.len()]), device)
        };
        let norm = GroupNorm {
            gamma: Param::from_tensor(on(&gamma)),
            beta: Param::from_tensor(on(&beta)),
            groups: self.groups,
            eps: 1e-5,
        };
        let input = on(&x).reshape(self.shape()).cast(dtype);
        let out = if silu {
            norm.forward_silu(input)
        } else {
            norm.forward(input)
        };
        assert_eq!(out.dtype(), dtype);
        let (expected, bounds) = self.direct(&x, &gamma, &beta, silu, arithmetic, dtype);
        compare(
            out,
            &expected,
            &bounds,
            &format!("{dtype:?} silu {silu} {}", self.label()),
        );
    }

    /// The op itself on f16 tensors: burn-flex's composed fallback.
    fn check_op_f16(&self, silu: bool) {
        let (x, gamma, beta) = self.inputs(DType::F16);
        let gamma = rounded(gamma, DType::F16);
        let beta = rounded(beta, DType::F16);
        let primitive = |t: Tensor<B, 4>| t.into_primitive().tensor();
        let vector = |v: &[f32]| {
            tensor(v, [self.channels], DType::F16)
                .into_primitive()
                .tensor()
        };
        let y = B::group_norm(
            primitive(tensor(&x, self.shape(), DType::F16)),
            vector(&gamma),
            vector(&beta),
            self.groups,
            1e-5,
            silu,
        );
        let out = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(y));
        assert_eq!(out.dtype(), DType::F16);
        let (expected, bounds) = self.direct(&x, &gamma, &beta, silu, &COMPOSED_F16, DType::F16);
        compare(
            out,
            &expected,
            &bounds,
            &format!("op F16 silu {silu} {}", self.label()),
        );
    }
}

fn compare(out: Tensor<B, 4>, expected: &[f64], bounds: &[f64], what: &str) {
    let dtype = out.dtype();
    assert_within(
        what,
        &values(out),
        expected,
        bounds,
        scale_of(expected),
        sensitivity(dtype),
    );
}

#[test]
fn cpu_group_norm_matches_the_definition() {
    let case = |batch, channels, groups, (height, width)| Case {
        batch,
        channels,
        groups,
        height,
        width,
    };
    let cases = [
        case(1, 6, 3, (7, 5)),
        case(3, 5, 1, (4, 3)),
        // One channel per group, one position: each value is its group's mean (variance 0).
        case(2, 9, 9, (1, 1)),
        // Groups of 3 x 900 = 2700 values: several 1024-value summing blocks, the last partial.
        case(2, 12, 4, (30, 30)),
    ];
    for c in &cases {
        for silu in [false, true] {
            c.check_layer(DType::F32, silu);
            c.check_layer(DType::F16, silu);
            // A group of one value has its mean exactly in f16, which the composed path's bound
            // (each mean rounded once more) cannot see: its eps-sized variance makes that
            // rounding's bound the whole output. The fused path checks it above.
            if c.channels / c.groups * c.height * c.width > 1 {
                c.check_op_f16(silu);
            }
        }
    }
}

/// On a GPU backend the op is composed from reductions. One group of a full-size VAE's decode
/// holds a million values; a reduction looping over them all was cut short on lavapipe (llvmpipe
/// ends a shader's loops after 65,535 iterations: the sum stopped at 262,144 values, and an SD1.5
/// decode came out NaN), so the statistics are taken in two steps (vendor/burn-backend).
#[test]
fn gpu_group_norm_holds_for_groups_of_many_values() {
    let Some(device) = crate::common::vulkan_device().map(|selected| selected.device) else {
        return;
    };
    // Groups of 8 x 160 x 256 = 327,680 values.
    let c = Case {
        batch: 1,
        channels: 16,
        groups: 2,
        height: 160,
        width: 256,
    };
    c.check_layer_on(&device, DType::F32, true, &COMPOSED_GPU);
    c.check_layer_on(&device, DType::F16, false, &COMPOSED_GPU);
}
