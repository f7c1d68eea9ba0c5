//! The CPU backend's im2col convolution (burn-flex, patched in vendor/: parallel re-layouts, GEMM
//! written straight into the output) against a direct convolution in f64, on shapes the models do
//! not use: odd channel counts, groups, batch 3, stride 2, no padding, a 5x5 kernel, and outputs
//! spanning several of its 512-position tiles; in f32 and f16.

use burn::prelude::*;
use burn::tensor::module::conv2d;
use burn::tensor::ops::PaddedConvOptions;
use burn::tensor::DType;
use sdbench_diffusion::noise::NormalGenerator;
use sdbench_diffusion::pipeline::B;

use crate::common::kernels::{rounded, tensor, worst_error};

struct Case {
    batch: usize,
    inputs: usize,
    outputs: usize,
    height: usize,
    width: usize,
    groups: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
}

impl Case {
    fn out_size(&self, size: usize) -> usize {
        (size + 2 * self.padding - self.kernel) / self.stride + 1
    }

    /// The convolution by its definition, in f64.
    fn direct(&self, x: &[f32], w: &[f32], bias: &[f32]) -> Vec<f64> {
        let (oh, ow) = (self.out_size(self.height), self.out_size(self.width));
        let (cin_g, cout_g) = (self.inputs / self.groups, self.outputs / self.groups);
        let k = self.kernel;
        let mut out = vec![0f64; self.batch * self.outputs * oh * ow];
        for n in 0..self.batch {
            for co in 0..self.outputs {
                let g = co / cout_g;
                for y in 0..oh {
                    for xo in 0..ow {
                        let mut sum = bias[co] as f64;
                        for ci in 0..cin_g {
                            let c = g * cin_g + ci;
                            for ky in 0..k {
                                for kx in 0..k {
                                    let iy =
                                        (y * self.stride + ky) as isize - self.padding as isize;
                                    let ix =
                                        (xo * self.stride + kx) as isize - self.padding as isize;
                                    if iy < 0
                                        || ix < 0
                                        || iy >= self.height as isize
                                        || ix >= self.width as isize
                                    {
                                        continue;
                                    }
                                    let xi = ((n * self.inputs + c) * self.height + iy as usize)
                                        * self.width
                                        + ix as usize;
                                    let wi = ((co * cin_g + ci) * k + ky) * k + kx;
                                    sum += x[xi] as f64 * w[wi] as f64;
                                }
                            }
                        }
                        out[((n * self.outputs + co) * oh + y) * ow + xo] = sum;
                    }
                }
            }
        }
        out
    }

    fn check(&self, dtype: DType, tolerance: f64) {
        let mut noise = NormalGenerator::new(7);
        let xs = [self.batch, self.inputs, self.height, self.width];
        let ws = [
            self.outputs,
            self.inputs / self.groups,
            self.kernel,
            self.kernel,
        ];
        let x = rounded(noise.normals(xs.iter().product()), dtype);
        let w = rounded(noise.normals(ws.iter().product()), dtype);
        let bias = rounded(noise.normals(self.outputs), dtype);
        let options = PaddedConvOptions::asymmetric(
            [self.stride; 2],
            [self.padding; 2],
            [self.padding; 2],
            [1, 1],
            self.groups,
        );
        let out: Tensor<B, 4> = conv2d(
            tensor(&x, xs, dtype),
            tensor(&w, ws, dtype),
            Some(tensor(&bias, [self.outputs], dtype)),
            options,
        );
        let worst = worst_error(out, &self.direct(&x, &w, &bias));
        assert!(
            worst <= tolerance,
            "{dtype:?} batch {} {}->{} channels {}x{} groups {} kernel {} stride {} padding {}: error {worst:e} over {tolerance:e}",
            self.batch, self.inputs, self.outputs, self.height, self.width, self.groups,
            self.kernel, self.stride, self.padding
        );
    }
}

#[test]
fn cpu_convolutions_match_the_definition() {
    let case = |batch, inputs, outputs, (height, width), groups, kernel, stride, padding| Case {
        batch,
        inputs,
        outputs,
        height,
        width,
        groups,
        kernel,
        stride,
        padding,
    };
    let cases = [
        case(1, 5, 7, (9, 11), 1, 3, 1, 1),
        // 957 output positions: two tiles, the second partial.
        case(3, 13, 24, (33, 29), 1, 3, 1, 1),
        case(2, 12, 18, (17, 16), 3, 3, 2, 1),
        case(2, 9, 6, (10, 12), 1, 3, 2, 0),
        // 1600 positions in four tiles, two groups.
        case(1, 8, 16, (40, 40), 2, 3, 1, 1),
        case(1, 6, 5, (14, 13), 1, 5, 1, 2),
    ];
    for c in &cases {
        c.check(DType::F32, 1e-5);
        c.check(DType::F16, 1e-2);
    }
}
