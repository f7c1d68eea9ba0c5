//! The CPU backend's im2col convolution (burn-flex, patched in vendor/: parallel re-layouts, GEMM
//! written straight into the output) against a direct convolution in f64, on shapes the models do
//! not use: odd channel counts, groups, batch 3, stride 2, no padding, a 5x5 kernel, and outputs
//! spanning several of its 512-position tiles; in f32 and f16. The Winograd path f32 3x3 stride-1
//! convolutions take (vendor/burn-flex `conv_winograd.rs`) is checked the same way, and so is the
//! GPU backends' direct convolution in f16 (vendor/burn-cubecl: it sums in f32) on Vulkan.

use burn::prelude::*;
use burn::tensor::module::conv2d;
use burn::tensor::ops::PaddedConvOptions;
use burn::tensor::DType;
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::noise::NormalGenerator;
use sdbench_diffusion::pipeline::B;

use crate::common::kernels::{rounded, tensor, values};

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

    fn out_len(&self) -> usize {
        self.batch * self.outputs * self.out_size(self.height) * self.out_size(self.width)
    }

    /// Output `index` (NCHW order) by the convolution's definition, in f64.
    fn direct_at(&self, x: &[f32], w: &[f32], bias: &[f32], index: usize) -> f64 {
        let (oh, ow) = (self.out_size(self.height), self.out_size(self.width));
        let (xo, y) = (index % ow, (index / ow) % oh);
        let (co, n) = (
            (index / (ow * oh)) % self.outputs,
            index / (ow * oh * self.outputs),
        );
        let (cin_g, cout_g) = (self.inputs / self.groups, self.outputs / self.groups);
        let (g, k) = (co / cout_g, self.kernel);
        let mut sum = bias[co] as f64;
        for ci in 0..cin_g {
            let c = g * cin_g + ci;
            for ky in 0..k {
                for kx in 0..k {
                    let iy = (y * self.stride + ky) as isize - self.padding as isize;
                    let ix = (xo * self.stride + kx) as isize - self.padding as isize;
                    if iy < 0 || ix < 0 || iy >= self.height as isize || ix >= self.width as isize {
                        continue;
                    }
                    let xi = ((n * self.inputs + c) * self.height + iy as usize) * self.width
                        + ix as usize;
                    let wi = ((co * cin_g + ci) * k + ky) * k + kx;
                    sum += x[xi] as f64 * w[wi] as f64;
                }
            }
        }
        sum
    }

    fn check(&self, dtype: DType, tolerance: f64) {
        self.check_outputs(dtype, tolerance, 1);
    }

    fn check_outputs(&self, dtype: DType, tolerance: f64, step: usize) {
        self.check_on(&cpu_device(), dtype, tolerance, step);
    }

    /// On `device`, checks every `step`-th output only (the definition is slow for large layers). The error
    /// is `|got - expected|` over `1 + ` the root mean square of the expected outputs: the
    /// layer's scale, which grows with the channels summed.
    fn check_on(&self, device: &Device<B>, dtype: DType, tolerance: f64, step: usize) {
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
            tensor(&x, xs, dtype).to_device(device),
            tensor(&w, ws, dtype).to_device(device),
            Some(tensor(&bias, [self.outputs], dtype).to_device(device)),
            options,
        );
        let got = values(out);
        let checked: Vec<(f32, f64)> = (0..self.out_len())
            .step_by(step)
            .map(|i| (got[i], self.direct_at(&x, &w, &bias, i)))
            .collect();
        let rms = (checked.iter().map(|(_, e)| e * e).sum::<f64>() / checked.len() as f64).sqrt();
        let worst = checked
            .iter()
            .map(|&(g, e)| (g as f64 - e).abs() / (1.0 + rms))
            .fold(0f64, f64::max);
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
    // im2col: fewer than 8 channels, stride 2, groups, a 5x5 kernel.
    let im2col = [
        case(1, 5, 7, (9, 11), 1, 3, 1, 1),
        case(2, 12, 18, (17, 16), 3, 3, 2, 1),
        case(2, 9, 6, (10, 12), 1, 3, 2, 0),
        // 1600 positions in four 512-position tiles, two groups.
        case(1, 8, 16, (40, 40), 2, 3, 1, 1),
        case(1, 6, 5, (14, 13), 1, 5, 1, 2),
    ];
    // Winograd in f32 (3x3, stride 1, one group, >= 8 channels each way, >= 64 4x4 tiles); f16
    // takes im2col, and these shapes then cover its many-tile path with one group.
    let winograd = [
        // Partial tiles at the right and bottom edges, batch 3.
        case(3, 13, 24, (33, 29), 1, 3, 1, 1),
        case(2, 19, 24, (37, 30), 1, 3, 1, 1),
        // No padding, whole tiles.
        case(1, 16, 33, (34, 34), 1, 3, 1, 0),
        // Padding 2, partial tiles.
        case(3, 8, 9, (17, 18), 1, 3, 1, 2),
        // 60 tile rows of 256 tiles: two blocks of tile rows.
        case(1, 8, 8, (240, 1024), 1, 3, 1, 1),
    ];
    for c in &im2col {
        c.check(DType::F32, 1e-5);
        c.check(DType::F16, 1e-2);
    }
    // F(4x4, 3x3) in f32 is inherently less exact than a direct sum (its transforms scale by up
    // to 8 and cancel): worst errors of 1-2e-5 of the layer's scale here (4e-5 at 1280 channels),
    // as in a float32 numpy model of the transforms. TF32 (PyTorch's default for convolutions on
    // recent NVIDIA GPUs) errs more.
    for c in &winograd {
        c.check(DType::F32, 5e-5);
        c.check(DType::F16, 1e-2);
    }
    // 1280 channels each way (SD1.5's 16x16 level): 236 MB of transformed weights, made and used
    // in chunks of output channels. Every 101st output.
    case(2, 1280, 1280, (16, 16), 1, 3, 1, 1).check_outputs(DType::F32, 1e-4, 101);
}

/// In f16 a 3x3 convolution over 512 channels sums 4608 products per output: summed in f16 (the
/// GPU backends' direct kernel upstream) the error reaches about 1e-2 of the layer's scale; summed
/// in f32 only the f16 output's rounding (5e-4) is left. Vulkan (lavapipe in CI) runs the direct
/// kernel: its GPU has no matrix cores for the implicit-GEMM kernels.
#[test]
fn gpu_f16_convolutions_sum_in_f32() {
    let Some(device) = crate::common::vulkan_device().map(|selected| selected.device) else {
        return;
    };
    let wide = Case {
        batch: 1,
        inputs: 512,
        outputs: 64,
        height: 8,
        width: 8,
        groups: 1,
        kernel: 3,
        stride: 1,
        padding: 1,
    };
    wide.check_on(&device, DType::F16, 1.5e-3, 1);
    wide.check_on(&device, DType::F32, 1e-5, 1);
}
