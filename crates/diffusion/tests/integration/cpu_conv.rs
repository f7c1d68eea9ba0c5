//! The CPU backend's im2col convolution (burn-flex, patched in vendor/: parallel re-layouts, GEMM
//! written straight into the output) against a direct convolution in f64, on shapes the models do
//! not use: odd channel counts, groups, batch 3, stride 2, no padding, a 5x5 kernel, and outputs
//! spanning several of its 512-position tiles; in f32 and f16. The Winograd path f32 3x3 stride-1
//! convolutions take (vendor/burn-flex `conv_winograd.rs`) is checked the same way, and so is the
//! GPU backends' direct convolution in f16 (vendor/burn-cubecl: it sums in f32) on Vulkan.
//! Each output is checked against the bound its path's arithmetic gives it (`common::bounds`):
//! a sum of the products and the bias, or for Winograd the transforms' magnitudes.

use burn::prelude::*;
use burn::tensor::module::conv2d;
use burn::tensor::ops::PaddedConvOptions;
use burn::tensor::DType;
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::noise::NormalGenerator;
use sdbench_diffusion::pipeline::B;

use crate::common::bounds::{assert_within, gamma, scale_of, sensitivity, F16_TINY, U16};
use crate::common::kernels::{rounded, tensor, values};

/// How a convolution is computed, for its error bound.
#[derive(Clone, Copy)]
enum Path {
    /// Products summed in f32 (im2col and GEMM, or the GPU's direct kernel), stored in f32.
    SumF32,
    /// Products of f16 values summed in f32, stored in f16 and the bias added in f16.
    SumF16,
    /// Winograd F(4x4, 3x3) in f32 (vendor/burn-flex `conv_winograd.rs`).
    Winograd,
}

/// Lavin and Gray's F(4x4, 3x3) transforms, as conv_winograd.rs applies them: `B^T` (input),
/// `G` (kernel), `A^T` (output).
const B_T: [[f64; 6]; 6] = [
    [4.0, 0.0, -5.0, 0.0, 1.0, 0.0],
    [0.0, -4.0, -4.0, 1.0, 1.0, 0.0],
    [0.0, 4.0, -4.0, -1.0, 1.0, 0.0],
    [0.0, -2.0, -1.0, 2.0, 1.0, 0.0],
    [0.0, 2.0, -1.0, -2.0, 1.0, 0.0],
    [0.0, 4.0, 0.0, -5.0, 0.0, 1.0],
];
const G: [[f64; 3]; 6] = [
    [0.25, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];
const A_T: [[f64; 6]; 4] = [
    [1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
    [0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
    [0.0, 1.0, 1.0, 4.0, 4.0, 0.0],
    [0.0, 1.0, -1.0, 8.0, -8.0, 1.0],
];

// The reference below is written with `while` loops: the tests' build (opt-level 1) calls a
// `Range` iterator's `next` out of line on every iteration, and those calls were most of these
// tests' time (the Winograd blocking test took 24 s on one core).

/// `|M| |X| |M|^T` for a 6xK matrix M and a KxK block X: a transform's magnitude.
fn abs_transform<const K: usize>(m: &[[f64; K]; 6], x: &[[f64; K]; K]) -> [f64; 36] {
    let mut left = [[0f64; K]; 6];
    let mut a = 0;
    while a < 6 {
        let mut j = 0;
        while j < K {
            let mut k = 0;
            while k < K {
                left[a][j] += m[a][k].abs() * x[k][j].abs();
                k += 1;
            }
            j += 1;
        }
        a += 1;
    }
    let mut out = [0f64; 36];
    let mut a = 0;
    while a < 6 {
        let mut b = 0;
        while b < 6 {
            let mut k = 0;
            while k < K {
                out[a * 6 + b] += left[a][k] * m[b][k].abs();
                k += 1;
            }
            b += 1;
        }
        a += 1;
    }
    out
}

/// The parts of Winograd outputs' bounds (`Case::winograd_magnitude`), each made once: a tile's
/// 16 output weights, the current output channel's transformed kernels, each tile's transformed
/// windows, and for the current image and output channel each tile's kernel-window products
/// summed over the input channels (shared by the tile's 16 outputs).
struct WinogradParts {
    /// `|A^T|_i ⊗ |A^T|_j` for the output at (i, j) of a 4x4 tile.
    weights: [[f64; 36]; 16],
    /// The output channel and `|G| |g| |G^T|` for each input channel's kernel `g`.
    kernels: (usize, Vec<[f64; 36]>),
    /// `|B^T| |d| |B|` for each input channel's window `d`, by tile (image, tile row, column).
    windows: Vec<Vec<[f64; 36]>>,
    /// The (image, output channel) and, by tile, the sum over input channels of kernel ⊙ window.
    sums: ((usize, usize), Vec<Option<[f64; 36]>>),
}

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

    /// Output `index` (NCHW order) by the convolution's definition, in f64, with the sum of the
    /// products' magnitudes and their count.
    fn direct_at(&self, x: &[f32], w: &[f32], bias: &[f32], index: usize) -> (f64, f64, usize) {
        let (oh, ow) = (self.out_size(self.height), self.out_size(self.width));
        let (xo, y) = (index % ow, (index / ow) % oh);
        let (co, n) = (
            (index / (ow * oh)) % self.outputs,
            index / (ow * oh * self.outputs),
        );
        let (cin_g, cout_g) = (self.inputs / self.groups, self.outputs / self.groups);
        let (g, k) = (co / cout_g, self.kernel);
        let (mut sum, mut magnitude) = (bias[co] as f64, 0f64);
        let mut ci = 0;
        while ci < cin_g {
            let plane = (n * self.inputs + g * cin_g + ci) * self.height;
            let kernel = (co * cin_g + ci) * k * k;
            let mut ky = 0;
            while ky < k {
                let iy = (y * self.stride + ky) as isize - self.padding as isize;
                if iy >= 0 && (iy as usize) < self.height {
                    let row = (plane + iy as usize) * self.width;
                    let mut kx = 0;
                    while kx < k {
                        let ix = (xo * self.stride + kx) as isize - self.padding as isize;
                        if ix >= 0 && (ix as usize) < self.width {
                            let product =
                                x[row + ix as usize] as f64 * w[kernel + ky * k + kx] as f64;
                            sum += product;
                            magnitude += product.abs();
                        }
                        kx += 1;
                    }
                }
                ky += 1;
            }
            ci += 1;
        }
        (sum, magnitude, cin_g * k * k)
    }

    /// Empty caches for `winograd_magnitude`.
    fn winograd_parts(&self) -> WinogradParts {
        let mut weights = [[0f64; 36]; 16];
        for (ij, out) in weights.iter_mut().enumerate() {
            for a in 0..6 {
                for b in 0..6 {
                    out[a * 6 + b] = A_T[ij / 4][a].abs() * A_T[ij % 4][b].abs();
                }
            }
        }
        let tiles = self.out_size(self.height).div_ceil(4) * self.out_size(self.width).div_ceil(4);
        WinogradParts {
            weights,
            kernels: (0, Vec::new()),
            windows: vec![Vec::new(); self.batch * tiles],
            sums: ((0, 0), vec![None; tiles]),
        }
    }

    /// `Σ_c |A^T| (|G| |g| |G^T| ⊙ |B^T| |d| |B|) |A|` at output `index`: what a Winograd
    /// output's rounding errors are proportional to (each path through the transforms, the
    /// products and the sum over channels rounds at most `inputs + 32` times). `parts` keeps
    /// what other outputs share: it is fastest when the outputs of one output channel come
    /// together.
    fn winograd_magnitude(
        &self,
        x: &[f32],
        w: &[f32],
        index: usize,
        parts: &mut WinogradParts,
    ) -> f64 {
        let (oh, ow) = (self.out_size(self.height), self.out_size(self.width));
        let (xo, y) = (index % ow, (index / ow) % oh);
        let (co, n) = (
            (index / (ow * oh)) % self.outputs,
            index / (ow * oh * self.outputs),
        );
        let (ty, tx, tiles_x) = (y / 4, xo / 4, ow.div_ceil(4));
        let tile = ty * tiles_x + tx;
        let image_tile = n * parts.sums.1.len() + tile;
        if parts.kernels.0 != co || parts.kernels.1.is_empty() {
            parts.kernels.0 = co;
            parts.kernels.1 = (0..self.inputs)
                .map(|c| {
                    let mut g = [[0f64; 3]; 3];
                    for (i, row) in g.iter_mut().enumerate() {
                        for (j, v) in row.iter_mut().enumerate() {
                            *v = w[((co * self.inputs + c) * 3 + i) * 3 + j] as f64;
                        }
                    }
                    abs_transform(&G, &g)
                })
                .collect();
        }
        let window = &mut parts.windows[image_tile];
        if window.is_empty() {
            *window = (0..self.inputs)
                .map(|c| {
                    let mut d = [[0f64; 6]; 6];
                    for (i, row) in d.iter_mut().enumerate() {
                        for (j, v) in row.iter_mut().enumerate() {
                            let iy = (ty * 4 + i) as isize - self.padding as isize;
                            let ix = (tx * 4 + j) as isize - self.padding as isize;
                            if iy >= 0
                                && ix >= 0
                                && (iy as usize) < self.height
                                && (ix as usize) < self.width
                            {
                                *v = x[((n * self.inputs + c) * self.height + iy as usize)
                                    * self.width
                                    + ix as usize] as f64;
                            }
                        }
                    }
                    abs_transform(&B_T, &d)
                })
                .collect();
        }
        if parts.sums.0 != (n, co) {
            parts.sums.0 = (n, co);
            parts.sums.1.iter_mut().for_each(|sum| *sum = None);
        }
        let sum = parts.sums.1[tile].get_or_insert_with(|| {
            let (kernels, window) = (&parts.kernels.1, &parts.windows[image_tile]);
            let mut sum = [0f64; 36];
            let mut c = 0;
            while c < self.inputs {
                let (u, v) = (&kernels[c], &window[c]);
                let mut p = 0;
                while p < 36 {
                    sum[p] += u[p] * v[p];
                    p += 1;
                }
                c += 1;
            }
            sum
        });
        let weights = &parts.weights[(y % 4) * 4 + xo % 4];
        let (mut total, mut p) = (0f64, 0);
        while p < 36 {
            total += weights[p] * sum[p];
            p += 1;
        }
        total
    }

    fn check(&self, dtype: DType, path: Path) {
        self.check_on(&cpu_device(), dtype, path, 1, sensitivity(dtype));
    }

    /// On `device`, checks every `step`-th output only (the definition is slow for large layers)
    /// against its bound on `path`, which must stay under `sensitivity` of the layer's scale
    /// (`1 +` the root mean square of the expected outputs, which grows with the channels summed).
    fn check_on(
        &self,
        device: &Device<B>,
        dtype: DType,
        path: Path,
        step: usize,
        sensitivity: f64,
    ) {
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
        let (oh, ow) = (self.out_size(self.height), self.out_size(self.width));
        let mut parts = matches!(path, Path::Winograd).then(|| self.winograd_parts());
        let indices: Vec<usize> = (0..self.out_len()).step_by(step).collect();
        // For Winograd, each output channel's outputs together (its kernels are transformed
        // once); each output's result goes to its place in the order checked.
        let mut order: Vec<usize> = (0..indices.len()).collect();
        if parts.is_some() {
            order.sort_by_key(|&k| ((indices[k] / (oh * ow)) % self.outputs, indices[k]));
        }
        let (mut expected, mut bounds) = (vec![0f64; indices.len()], vec![0f64; indices.len()]);
        for k in order {
            let i = indices[k];
            let (value, magnitude, terms) = self.direct_at(&x, &w, &bias, i);
            let b = bias[(i / (oh * ow)) % self.outputs].abs() as f64;
            bounds[k] = match path {
                Path::SumF32 => gamma(terms + 1) * (magnitude + b),
                Path::SumF16 => {
                    gamma(terms) * magnitude + U16 * (2.0 * value.abs() + b) + 2.0 * F16_TINY
                }
                Path::Winograd => {
                    let parts = parts.as_mut().expect("made for the Winograd path");
                    let m = self.winograd_magnitude(&x, &w, i, parts);
                    gamma(self.inputs + 32) * (m + b)
                }
            };
            expected[k] = value;
        }
        let checked: Vec<f32> = indices.iter().map(|&i| got[i]).collect();
        assert_within(
            &format!(
                "{dtype:?} batch {} {}->{} channels {}x{} groups {} kernel {} stride {} padding {}",
                self.batch,
                self.inputs,
                self.outputs,
                self.height,
                self.width,
                self.groups,
                self.kernel,
                self.stride,
                self.padding
            ),
            &checked,
            &expected,
            &bounds,
            scale_of(&expected),
            sensitivity,
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
    ];
    for c in &im2col {
        c.check(DType::F32, Path::SumF32);
        c.check(DType::F16, Path::SumF16);
    }
    // F(4x4, 3x3) in f32 is inherently less exact than a direct sum (its transforms scale by up
    // to 8 and cancel): its bound follows the transforms' magnitudes. TF32 (PyTorch's default for
    // convolutions on recent NVIDIA GPUs) errs more.
    for c in &winograd {
        c.check(DType::F32, Path::Winograd);
        c.check(DType::F16, Path::SumF16);
    }
}

/// The Winograd path's blocking: tile rows in blocks and transformed weights in chunks of output
/// channels. The same code on every instruction set, so scripts/simd-levels leaves this test out
/// (the f64 definition of these layers takes minutes under its emulator).
#[test]
fn cpu_winograd_spans_blocks_of_tile_rows_and_chunks_of_weights() {
    let case = |batch, inputs, outputs, (height, width)| Case {
        batch,
        inputs,
        outputs,
        height,
        width,
        groups: 1,
        kernel: 3,
        stride: 1,
        padding: 1,
    };
    // 60 tile rows of 256 tiles: two blocks of tile rows.
    case(1, 8, 8, (240, 1024)).check(DType::F32, Path::Winograd);
    case(1, 8, 8, (240, 1024)).check(DType::F16, Path::SumF16);
    // 1280 channels each way (SD1.5's 16x16 level): 236 MB of transformed weights, made and used
    // in chunks of output channels. Every 101st output. The bound takes every rounding's error
    // as aligned with the transforms' signs: over 1280 channels that is 0.4 of the layer's scale,
    // about 5000 times the error measured (8.6e-5 of the scale in a float32 numpy model too). What
    // this case checks is the chunks' wiring: an output of the wrong chunk or channel errs by
    // the scale itself, over the 0.5 allowed.
    case(2, 1280, 1280, (16, 16)).check_on(&cpu_device(), DType::F32, Path::Winograd, 101, 0.5);
}

/// In f16 a 3x3 convolution over 512 channels sums 4608 products per output: summed in f16 (the
/// GPU backends' direct kernel upstream) the error reaches about 1e-2 of the layer's scale, over
/// the bound of an f32 sum, where little more than the f16 output's rounding is left. Vulkan (lavapipe in CI) runs the direct
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
    wide.check_on(
        &device,
        DType::F16,
        Path::SumF16,
        1,
        sensitivity(DType::F16),
    );
    wide.check_on(
        &device,
        DType::F32,
        Path::SumF32,
        1,
        sensitivity(DType::F32),
    );
}
