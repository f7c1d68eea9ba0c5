//! (SD Bench) Winograd F(4x4, 3x3) convolution for f32: 3x3 kernels, stride 1, no dilation, one
//! group, any padding.
//!
//! Each 4x4 block of output (a "tile") depends on a 6x6 window of each input channel. After the
//! window is transformed (`B^T d B`) and each 3x3 kernel is transformed (`G g G^T`), the tile's
//! convolution is 36 independent products summed over input channels, that is 36 matrix products
//! `[out channels x in channels] x [in channels x tiles]`, and `A^T m A` turns the 36 sums back into
//! the 4x4 outputs: 36 multiplies per tile and channel pair instead of im2col's 144. The matrices
//! are Lavin and Gray's (2015) for the points 0, +-1, +-2 and infinity. Their scaling (up to 8)
//! and cancellation cost precision: in f32 the worst error is about 1e-4 of the output's scale,
//! against 1e-6 for a direct sum (still below TF32, PyTorch's default on recent NVIDIA GPUs).
//!
//! One call: transform the weights (`[36][out][in]`), then for each block of tile rows transform
//! the input (`[36][in][tiles]`, one task per input channel), run the 36 GEMMs (tasks over
//! position and a chunk of output channels) and transform back into the output with the bias
//! added (one task per output channel). Weights over `MAX_WEIGHT_BYTES` transformed go in chunks
//! of output channels. The transforms are loops over a tile row's tiles that vectorise, built
//! for AVX-512 and AVX2 as well (`multiversion!`). The buffers are kept between calls on the
//! calling thread.

use alloc::vec::Vec;
use burn_backend::DType;
use burn_backend::ops::ConvOptions;
use burn_std::{Bytes, Shape};
use core::ops::Range;

use crate::ops::SendMutPtr;
use crate::ops::vector_math::multiversion;
use crate::{FlexTensor, Layout};

/// Positions of the 6x6 transformed tile: one GEMM each.
const POSITIONS: usize = 36;
/// The input and product buffers of one block of tile rows stay within the weights' size
/// (each block's GEMMs read all the weights again) clamped to these: small blocks stay in cache
/// between the passes, big ones read large weights fewer times. Measured on the VAE's layers.
const MIN_BLOCK_BYTES: usize = 8 << 20;
const MAX_BLOCK_BYTES: usize = 64 << 20;
/// Transformed weights larger than this (1280 channels each way: 236 MB) are made and used in
/// chunks of output channels, so the buffers kept between calls stay near 128 MB at most.
const MAX_WEIGHT_BYTES: usize = 64 << 20;
/// Scratch larger than this is freed after the call instead of kept for the next.
const SCRATCH_KEEP_BYTES: usize = 160 << 20;
/// Fewer 4x4 output tiles than this go to im2col: the weights are transformed on every call
/// (36 values per kernel, written and read once more), which the GEMM savings repay only over
/// enough tiles. On 2 cores SD1.5's 1280-channel layers at 8x8 (8 tiles) tie, at 16x16 (32 tiles)
/// Winograd is 1.7x faster; more cores speed the GEMMs more than the memory-bound transform.
const MIN_TILES: usize = 32;
/// Channel counts below this go to im2col: too little work per tile to pay for the transforms.
const MIN_CHANNELS: usize = 8;

/// Whether the Winograd path computes this convolution: f32, 3x3, stride 1, no dilation, one
/// group, enough channels, and enough tiles for the per-call weight transform to pay off.
pub fn applies(
    x: &FlexTensor,
    weight: &FlexTensor,
    bias: Option<&FlexTensor>,
    options: &ConvOptions<2>,
) -> bool {
    let (xs, ws) = (x.layout().shape(), weight.layout().shape());
    if x.dtype() != DType::F32
        || weight.dtype() != DType::F32
        || bias.is_some_and(|b| b.dtype() != DType::F32)
        || xs.num_dims() != 4
        || ws.num_dims() != 4
        || options.stride != [1, 1]
        || options.dilation != [1, 1]
        || options.groups != 1
        || ws[1] != xs[1]
        || ws[2] != 3
        || ws[3] != 3
        || xs[1] < MIN_CHANNELS
        || ws[0] < MIN_CHANNELS
        || xs[2] + 2 * options.padding[0] < 3
        || xs[3] + 2 * options.padding[1] < 3
    {
        return false;
    }
    let out_h = xs[2] + 2 * options.padding[0] - 2;
    let out_w = xs[3] + 2 * options.padding[1] - 2;
    xs[0] * out_h.div_ceil(4) * out_w.div_ceil(4) >= MIN_TILES
}

/// Shapes of one call.
#[derive(Clone, Copy)]
struct Dims {
    in_channels: usize,
    out_channels: usize,
    in_h: usize,
    in_w: usize,
    pad_h: usize,
    pad_w: usize,
    out_h: usize,
    out_w: usize,
    /// Tile rows per image and tiles per row.
    tile_rows: usize,
    row_tiles: usize,
}

/// The convolution; `applies` must have said yes.
pub fn conv2d_f32(
    x: FlexTensor,
    weight: FlexTensor,
    bias: Option<FlexTensor>,
    options: &ConvOptions<2>,
) -> FlexTensor {
    let x = x.to_contiguous();
    let weight = weight.to_contiguous();
    let bias = bias.map(|b| b.to_contiguous());
    let xs = x.layout().shape();
    let batch = xs[0];
    let (in_h, in_w) = (xs[2], xs[3]);
    let (out_h, out_w) = (
        in_h + 2 * options.padding[0] - 2,
        in_w + 2 * options.padding[1] - 2,
    );
    let d = Dims {
        in_channels: xs[1],
        out_channels: weight.layout().shape()[0],
        in_h,
        in_w,
        pad_h: options.padding[0],
        pad_w: options.padding[1],
        out_h,
        out_w,
        tile_rows: out_h.div_ceil(4),
        row_tiles: out_w.div_ceil(4),
    };
    let x_data: &[f32] = x.storage();
    let bias_data: Option<&[f32]> = bias.as_ref().map(|b| b.storage());

    let w_data: &[f32] = weight.storage();
    let (ins, outs) = (d.in_channels, d.out_channels);

    // Output channels in equal chunks whose transformed weights fit in MAX_WEIGHT_BYTES.
    let chunks = outs.div_ceil((MAX_WEIGHT_BYTES / (POSITIONS * ins * 4)).max(1));
    let per_chunk = outs.div_ceil(chunks);
    let u_len = POSITIONS * per_chunk * ins;
    // Tile rows of all images in one sequence, cut into equal blocks.
    let all_rows = batch * d.tile_rows;
    let row_bytes = POSITIONS * (ins + per_chunk) * d.row_tiles * 4;
    let block_bytes = (u_len * 4).clamp(MIN_BLOCK_BYTES, MAX_BLOCK_BYTES);
    let blocks = all_rows.div_ceil((block_bytes / row_bytes).max(1));
    let rows_per_block = all_rows.div_ceil(blocks);
    let block_tiles = rows_per_block * d.row_tiles;

    let v_len = POSITIONS * ins * block_tiles;
    let m_len = POSITIONS * per_chunk * block_tiles;
    let mut scratch = Scratch::take(u_len + v_len + m_len);
    let (u, rest) = scratch.0.split_at_mut(u_len);
    let (v, rest) = rest.split_at_mut(v_len);
    let m = &mut rest[..m_len];

    let chunk_range = |g: usize| g * per_chunk..((g + 1) * per_chunk).min(outs);
    if chunks == 1 {
        transform_weights(w_data, u, d, 0..outs);
    }
    let mut output = alloc::vec![0f32; batch * outs * out_h * out_w];
    for block in 0..blocks {
        let first_row = block * rows_per_block;
        let rows = rows_per_block.min(all_rows - first_row);
        let tiles = rows * d.row_tiles;
        let v = &mut v[..POSITIONS * ins * tiles];
        transform_input(x_data, v, d, first_row, rows);
        for chunk in (0..chunks).map(chunk_range) {
            // Weights too large to keep transformed are transformed again for each block.
            if chunks > 1 {
                transform_weights(w_data, u, d, chunk.clone());
            }
            let u = &u[..POSITIONS * chunk.len() * ins];
            let m = &mut m[..POSITIONS * chunk.len() * tiles];
            multiply(u, v, m, chunk.len(), ins, tiles);
            transform_output(m, bias_data, &mut output, d, chunk, first_row, rows);
        }
    }
    scratch.give_back();

    let shape = Shape::from(alloc::vec![batch, d.out_channels, out_h, out_w]);
    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(shape),
        DType::F32,
    )
}

/// Runs `task(i)` for every `i < count`, in parallel when rayon is on.
fn for_each(count: usize, task: impl Fn(usize) + Send + Sync) {
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        (0..count).into_par_iter().for_each(task);
    }
    #[cfg(not(feature = "rayon"))]
    (0..count).for_each(task);
}

/// `u[p][o][i]` = position `p` of `G g G^T` for the kernel `g` of output `outs.start + o`, input `i`.
fn transform_weights(w: &[f32], u: &mut [f32], d: Dims, outs: Range<usize>) {
    let (count, ins) = (outs.len(), d.in_channels);
    let u_ptr = SendMutPtr::new(u.as_mut_ptr());
    for_each(count, |o| {
        // SAFETY: task `o` alone writes row `o` of each position's [count][ins] matrix.
        let mut rows: [&mut [f32]; POSITIONS] = core::array::from_fn(|p| unsafe {
            core::slice::from_raw_parts_mut(u_ptr.ptr_add((p * count + o) * ins), ins)
        });
        let kernels = (outs.start + o) * ins * 9;
        kernel_rows(&w[kernels..kernels + ins * 9], &mut rows);
    });
}

multiversion! {
    /// The 36 transformed positions of `ins` 3x3 kernels (`w`, [ins][3][3]), one row per position.
    pub fn kernel_rows(w: &[f32], rows: &mut [&mut [f32]; POSITIONS]) -> () => kernel_rows_portable
}

/// Kernels transformed per pass, so the passes run over fixed-size rows that vectorise.
const KERNEL_CHUNK: usize = 64;

#[inline(always)]
fn kernel_rows_portable(w: &[f32], rows: &mut [&mut [f32]; POSITIONS]) {
    for (chunk, kernels) in w.chunks(9 * KERNEL_CHUNK).enumerate() {
        let (start, n) = (chunk * KERNEL_CHUNK, kernels.len() / 9);
        // taps[j][i]: tap j (row-major 3x3) of kernel i.
        let mut taps = [[0f32; KERNEL_CHUNK]; 9];
        for (i, g) in kernels.chunks_exact(9).enumerate() {
            for j in 0..9 {
                taps[j][i] = g[j];
            }
        }
        // Along each kernel row r: across[r * 6 + q][i].
        let mut across = [[0f32; KERNEL_CHUNK]; 18];
        for r in 0..3 {
            for i in 0..KERNEL_CHUNK {
                let v = kernel_1d([taps[3 * r][i], taps[3 * r + 1][i], taps[3 * r + 2][i]]);
                for q in 0..6 {
                    across[r * 6 + q][i] = v[q];
                }
            }
        }
        // Down each column q: positions p * 6 + q.
        let mut out = [[0f32; KERNEL_CHUNK]; POSITIONS];
        for q in 0..6 {
            for i in 0..KERNEL_CHUNK {
                let v = kernel_1d([across[q][i], across[6 + q][i], across[12 + q][i]]);
                for p in 0..6 {
                    out[p * 6 + q][i] = v[p];
                }
            }
        }
        for (row, values) in rows.iter_mut().zip(&out) {
            row[start..start + n].copy_from_slice(&values[..n]);
        }
    }
}

/// `G g` for one row or column of a kernel.
#[inline(always)]
fn kernel_1d(g: [f32; 3]) -> [f32; 6] {
    const SIXTH: f32 = 1.0 / 6.0;
    const TWELFTH: f32 = 1.0 / 12.0;
    const TWENTY_FOURTH: f32 = 1.0 / 24.0;
    let (outer, inner) = (g[0] + g[2], g[1]);
    let quarter = g[0] * TWENTY_FOURTH + g[2] * SIXTH;
    [
        g[0] * 0.25,
        -(outer + inner) * SIXTH,
        -(outer - inner) * SIXTH,
        quarter + inner * TWELFTH,
        quarter - inner * TWELFTH,
        g[2],
    ]
}

/// `B^T d` for one row or column of a 6x6 input window.
#[inline(always)]
fn input_1d(d: [f32; 6]) -> [f32; 6] {
    let even = d[4] - d[2];
    let odd = d[3] - d[1];
    [
        4.0 * d[0] - 5.0 * d[2] + d[4],
        d[3] + d[4] - 4.0 * (d[1] + d[2]),
        d[4] - d[3] + 4.0 * (d[1] - d[2]),
        even + 2.0 * odd,
        even - 2.0 * odd,
        4.0 * d[1] - 5.0 * d[3] + d[5],
    ]
}

/// `A^T m` for one row or column of a 6x6 product tile.
#[inline(always)]
fn output_1d(m: [f32; 6]) -> [f32; 4] {
    let (sum12, diff12) = (m[1] + m[2], m[1] - m[2]);
    let (sum34, diff34) = (m[3] + m[4], m[3] - m[4]);
    [
        m[0] + sum12 + sum34,
        diff12 + 2.0 * diff34,
        sum12 + 4.0 * sum34,
        diff12 + 8.0 * diff34 + m[5],
    ]
}

/// `v[p][c][t]` = position `p` of `B^T d B` for input channel `c` and the block's tile `t`.
fn transform_input(x: &[f32], v: &mut [f32], d: Dims, first_row: usize, rows: usize) {
    let ins = d.in_channels;
    let tiles = rows * d.row_tiles;
    // One padded row per transformed row, wide enough for every tile's window.
    let padded = 4 * d.row_tiles + 2;
    let v_ptr = SendMutPtr::new(v.as_mut_ptr());
    for_each(ins, |c| {
        let mut across = alloc::vec![0f32; 6 * padded];
        let zeros = alloc::vec![0f32; d.in_w];
        for row in 0..rows {
            let (image, tile_row) = (
                (first_row + row) / d.tile_rows,
                (first_row + row) % d.tile_rows,
            );
            let plane = &x[(image * ins + c) * d.in_h * d.in_w..][..d.in_h * d.in_w];
            let window: [&[f32]; 6] =
                core::array::from_fn(|i| match (4 * tile_row + i).checked_sub(d.pad_h) {
                    Some(y) if y < d.in_h => &plane[y * d.in_w..(y + 1) * d.in_w],
                    _ => &zeros[..],
                });
            // SAFETY: task `c` alone writes row `c` of each position's [ins][tiles] matrix, and
            // within it this tile row's `row_tiles` entries.
            let mut out: [&mut [f32]; POSITIONS] = core::array::from_fn(|p| unsafe {
                core::slice::from_raw_parts_mut(
                    v_ptr.ptr_add((p * ins + c) * tiles + row * d.row_tiles),
                    d.row_tiles,
                )
            });
            input_tile_row(&window, &mut across, d.pad_w, &mut out);
        }
    });
}

multiversion! {
    /// One tile row of one channel: `window` holds its six input rows (zeros outside the image),
    /// `across` is scratch of six rows of `4 * tiles + 2` whose margins stay zero.
    pub fn input_tile_row(
        window: &[&[f32]; 6],
        across: &mut [f32],
        pad_w: usize,
        out: &mut [&mut [f32]; POSITIONS],
    ) -> () => input_tile_row_portable
}

#[inline(always)]
fn input_tile_row_portable(
    window: &[&[f32]; 6],
    across: &mut [f32],
    pad_w: usize,
    out: &mut [&mut [f32]; POSITIONS],
) {
    let width = window[0].len();
    let tiles = out[0].len();
    let padded = 4 * tiles + 2;
    // Down the columns: six rows of B^T d, written at the padding offset.
    {
        let (r0, rest) = across.split_at_mut(padded);
        let (r1, rest) = rest.split_at_mut(padded);
        let (r2, rest) = rest.split_at_mut(padded);
        let (r3, rest) = rest.split_at_mut(padded);
        let (r4, r5) = rest.split_at_mut(padded);
        let r: [&mut [f32]; 6] = [
            &mut r0[pad_w..pad_w + width],
            &mut r1[pad_w..pad_w + width],
            &mut r2[pad_w..pad_w + width],
            &mut r3[pad_w..pad_w + width],
            &mut r4[pad_w..pad_w + width],
            &mut r5[pad_w..pad_w + width],
        ];
        let [r0, r1, r2, r3, r4, r5] = r;
        let w: [&[f32]; 6] = core::array::from_fn(|i| &window[i][..width]);
        for x in 0..width {
            let t = input_1d([w[0][x], w[1][x], w[2][x], w[3][x], w[4][x], w[5][x]]);
            r0[x] = t[0];
            r1[x] = t[1];
            r2[x] = t[2];
            r3[x] = t[3];
            r4[x] = t[4];
            r5[x] = t[5];
        }
    }
    // Along each row: tile `t` reads columns 4t..4t+6.
    for (row, line) in across.chunks_exact(padded).enumerate() {
        let line = &line[..padded];
        let (o0, rest) = out[row * 6..row * 6 + 6].split_at_mut(1);
        let (o1, rest) = rest.split_at_mut(1);
        let (o2, rest) = rest.split_at_mut(1);
        let (o3, rest) = rest.split_at_mut(1);
        let (o4, o5) = rest.split_at_mut(1);
        let (o0, o1, o2, o3, o4, o5) = (
            &mut o0[0][..tiles],
            &mut o1[0][..tiles],
            &mut o2[0][..tiles],
            &mut o3[0][..tiles],
            &mut o4[0][..tiles],
            &mut o5[0][..tiles],
        );
        for t in 0..tiles {
            let e = &line[4 * t..4 * t + 6];
            let r = input_1d([e[0], e[1], e[2], e[3], e[4], e[5]]);
            o0[t] = r[0];
            o1[t] = r[1];
            o2[t] = r[2];
            o3[t] = r[3];
            o4[t] = r[4];
            o5[t] = r[5];
        }
    }
}

/// `m[p] = u[p] v[p]` for the 36 positions, as tasks over (position, chunk of output channels).
fn multiply(u: &[f32], v: &[f32], m: &mut [f32], outs: usize, ins: usize, tiles: usize) {
    #[cfg(feature = "rayon")]
    let threads = rayon::current_num_threads();
    #[cfg(not(feature = "rayon"))]
    let threads = 1;
    // At least four tasks per thread, so uneven chunks still balance.
    let chunks = (4 * threads)
        .div_ceil(POSITIONS)
        .min(outs.div_ceil(8))
        .max(1);
    let chunk = outs.div_ceil(chunks);
    let m_ptr = SendMutPtr::new(m.as_mut_ptr());
    for_each(POSITIONS * chunks, |task| {
        let (p, first) = (task / chunks, (task % chunks) * chunk);
        let rows = chunk.min(outs - first);
        if rows == 0 {
            return;
        }
        let lhs = &u[(p * outs + first) * ins..][..rows * ins];
        let rhs = &v[p * ins * tiles..][..ins * tiles];
        // SAFETY: the task writes rows `first..first + rows` of position `p`'s [outs][tiles]
        // product, which no other task touches; `lhs` and `rhs` are in bounds for the strides.
        unsafe {
            gemm::gemm(
                rows,
                tiles,
                ins,
                m_ptr.ptr_add((p * outs + first) * tiles),
                1,
                tiles as isize,
                false,
                lhs.as_ptr(),
                1,
                ins as isize,
                rhs.as_ptr(),
                1,
                tiles as isize,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    });
}

/// Output channels `outs` of the block's tile rows from their products (`m`, [36][outs][tiles]),
/// the bias added.
fn transform_output(
    m: &[f32],
    bias: Option<&[f32]>,
    output: &mut [f32],
    d: Dims,
    outs: Range<usize>,
    first_row: usize,
    rows: usize,
) {
    let count = outs.len();
    let tiles = rows * d.row_tiles;
    let plane = d.out_h * d.out_w;
    let out_ptr = SendMutPtr::new(output.as_mut_ptr());
    for_each(count, |o| {
        let mut scratch = alloc::vec![0f32; 40 * d.row_tiles];
        let bias = bias.map_or(0.0, |b| b[outs.start + o]);
        for row in 0..rows {
            let (image, tile_row) = (
                (first_row + row) / d.tile_rows,
                (first_row + row) % d.tile_rows,
            );
            let products: [&[f32]; POSITIONS] = core::array::from_fn(|p| {
                &m[(p * count + o) * tiles + row * d.row_tiles..][..d.row_tiles]
            });
            let y0 = 4 * tile_row;
            let lines = (d.out_h - y0).min(4);
            // SAFETY: task `o` alone writes channel `o`'s plane, and these rows of it.
            let out = unsafe {
                core::slice::from_raw_parts_mut(
                    out_ptr
                        .ptr_add((image * d.out_channels + outs.start + o) * plane + y0 * d.out_w),
                    lines * d.out_w,
                )
            };
            output_tile_row(&products, &mut scratch, bias, out, d.out_w);
        }
    });
}

multiversion! {
    /// One tile row of one output channel: `products` are its tiles' 36 positions, `scratch`
    /// holds `40 * tiles`, `out` the (up to four) output lines it covers, `width` long each.
    pub fn output_tile_row(
        products: &[&[f32]; POSITIONS],
        scratch: &mut [f32],
        bias: f32,
        out: &mut [f32],
        width: usize,
    ) -> () => output_tile_row_portable
}

#[inline(always)]
fn output_tile_row_portable(
    products: &[&[f32]; POSITIONS],
    scratch: &mut [f32],
    bias: f32,
    out: &mut [f32],
    width: usize,
) {
    let tiles = products[0].len();
    let (along, tile_values) = scratch.split_at_mut(24 * tiles);
    // Along each row of the 6x6 products: 6 rows x 4 columns of A^T m.
    for r in 0..6 {
        let p: [&[f32]; 6] = core::array::from_fn(|j| &products[r * 6 + j][..tiles]);
        let (s0, rest) = along[r * 4 * tiles..(r + 1) * 4 * tiles].split_at_mut(tiles);
        let (s1, rest) = rest.split_at_mut(tiles);
        let (s2, s3) = rest.split_at_mut(tiles);
        for t in 0..tiles {
            let v = output_1d([p[0][t], p[1][t], p[2][t], p[3][t], p[4][t], p[5][t]]);
            s0[t] = v[0];
            s1[t] = v[1];
            s2[t] = v[2];
            s3[t] = v[3];
        }
    }
    // Down each column: 4 x 4 outputs per tile, `tile_values[(row * 4 + col) * tiles + t]`.
    for col in 0..4 {
        let s: [&[f32]; 6] = core::array::from_fn(|r| &along[(r * 4 + col) * tiles..][..tiles]);
        for t in 0..tiles {
            let v = output_1d([s[0][t], s[1][t], s[2][t], s[3][t], s[4][t], s[5][t]]);
            for (row, &value) in v.iter().enumerate() {
                tile_values[(row * 4 + col) * tiles + t] = value + bias;
            }
        }
    }
    // Interleave each tile's columns into the output lines; the last tile may be cut.
    let full = width / 4;
    for (row, line) in out.chunks_exact_mut(width).enumerate() {
        let v: [&[f32]; 4] =
            core::array::from_fn(|col| &tile_values[(row * 4 + col) * tiles..][..tiles]);
        for (t, dst) in line[..4 * full].chunks_exact_mut(4).enumerate() {
            dst[0] = v[0][t];
            dst[1] = v[1][t];
            dst[2] = v[2][t];
            dst[3] = v[3][t];
        }
        for x in 4 * full..width {
            line[x] = v[x % 4][full];
        }
    }
}

/// The calling thread's buffers, kept between calls (a fresh buffer of tens of MB is page faults
/// and kernel zeroing on every call). Taken out while in use, so a nested call gets its own.
struct Scratch(Vec<f32>);

#[cfg(feature = "std")]
std::thread_local! {
    static SCRATCH: core::cell::Cell<Vec<f32>> = const { core::cell::Cell::new(Vec::new()) };
}

impl Scratch {
    /// At least `len` values, holding whatever the last call left: every one is written before
    /// it is read.
    fn take(len: usize) -> Self {
        #[cfg(feature = "std")]
        let mut buffer = SCRATCH.with(|slot| slot.take());
        #[cfg(not(feature = "std"))]
        let mut buffer = Vec::new();
        if buffer.len() < len {
            buffer = Vec::new();
            buffer.resize(len, 0.0);
        }
        Scratch(buffer)
    }

    fn give_back(self) {
        #[cfg(feature = "std")]
        if self.0.len() * 4 <= SCRATCH_KEEP_BYTES {
            SCRATCH.with(|slot| slot.set(self.0));
        }
    }
}
