//! (SD Bench) Attention without mask, bias, softcap or causality, the kind Stable Diffusion's
//! UNet and VAE and FLUX.2's transformer run at thousands of positions: exact softmax over blocks
//! of query rows.
//!
//! For each (batch, head, block of query rows), the keys are taken 512 at a time: one GEMM makes
//! the block's scores against the tile, a vectorised pass turns each row into
//! `exp(s * scale - max)` with the row's running maximum, and a second GEMM adds those
//! numerators times the tile's values into the output rows, which are rescaled when a tile raises
//! a row's maximum and divided by the row's sum at the end (online softmax). The blocks are
//! independent tasks (rayon), so a single head (the VAE's) still uses every core. Upstream's
//! flash path walks keys in tiles of 64 with a scalar `exp` per score, which left it at a third
//! of PyTorch's speed.

use alloc::vec;
use alloc::vec::Vec;
use burn_backend::DType;
use burn_std::Bytes;

use crate::ops::vector_math::exp;
use crate::{FlexTensor, Layout};

/// Query rows per task where the work leaves every thread enough tasks. More rows per task means
/// K and V are packed for the GEMMs once per more rows: with 128-wide heads over 4608 keys
/// (FLUX.2 at 1024x1024), 32-row tasks spent as long packing as multiplying, and 512-row tasks
/// took 0.86x the time of 227-row ones (measured call by call, 2 threads; 768 and 1024 rows
/// were slower again). A task holds its rows' scores for one tile of keys (`KV_TILE`), so more
/// rows cost scratch in proportion, whatever the number of keys.
const MAX_ROWS_PER_TASK: usize = 512;

/// Whether the blocked path takes this call: no mask, bias, softcap or causal mask, floating
/// point inputs it computes in f32.
pub fn applies(
    dtype: DType,
    has_mask: bool,
    has_bias: bool,
    softcap: Option<f64>,
    causal: bool,
) -> bool {
    !has_mask
        && !has_bias
        && softcap.is_none()
        && !causal
        && matches!(dtype, DType::F32 | DType::F16 | DType::BF16)
}

/// `softmax(q k^T * scale) v` for [batch, heads, seq, dim] tensors; f16 and bf16 are computed in
/// f32 and rounded back, as the other attention paths do.
pub fn attention(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    scale: Option<f64>,
) -> FlexTensor {
    use super::attention::{cast_from_f32, cast_to_f32};
    use burn_std::{bf16, f16};
    match query.dtype() {
        DType::F32 => attention_f32(query, key, value, scale),
        DType::F16 => cast_from_f32(
            attention_f32(
                cast_to_f32(query, f16::to_f32),
                cast_to_f32(key, f16::to_f32),
                cast_to_f32(value, f16::to_f32),
                scale,
            ),
            f16::from_f32,
        ),
        DType::BF16 => cast_from_f32(
            attention_f32(
                cast_to_f32(query, bf16::to_f32),
                cast_to_f32(key, bf16::to_f32),
                cast_to_f32(value, bf16::to_f32),
                scale,
            ),
            bf16::from_f32,
        ),
        dtype => panic!("attention: unsupported dtype {dtype:?}"),
    }
}

fn attention_f32(
    query: FlexTensor,
    key: FlexTensor,
    value: FlexTensor,
    scale: Option<f64>,
) -> FlexTensor {
    let (query, key, value) = (
        rows_in_place(query),
        rows_in_place(key),
        rows_in_place(value),
    );
    let (qs, ks, vs) = (
        query.layout().shape(),
        key.layout().shape(),
        value.layout().shape(),
    );
    assert!(
        qs.num_dims() == 4 && ks.num_dims() == 4 && vs.num_dims() == 4,
        "attention: query, key and value must be 4D"
    );
    let (batch, heads, seq_q, head_dim) = (qs[0], qs[1], qs[2], qs[3]);
    let (seq_kv, val_dim) = (ks[2], vs[3]);
    assert!(
        ks[0] == batch && ks[1] == heads && ks[3] == head_dim,
        "attention: key shape {ks:?} does not match query shape {qs:?}"
    );
    assert!(
        vs[0] == batch && vs[1] == heads && vs[2] == seq_kv,
        "attention: value shape {vs:?} does not match key shape {ks:?}"
    );
    let scale = scale.unwrap_or_else(|| 1.0 / (head_dim as f64).sqrt()) as f32;

    // The output is laid out [batch, seq_q, heads, val_dim] and returned as a permuted view
    // [batch, heads, seq_q, val_dim]: the usual next step (heads back beside the channels) is
    // then a free reshape instead of a copy.
    let mut output = vec![0.0f32; batch * heads * seq_q * val_dim];
    let out_row_stride = heads * val_dim;
    let shape = burn_std::Shape::from(vec![batch, heads, seq_q, val_dim]);
    let strides = vec![
        (seq_q * out_row_stride) as isize,
        val_dim as isize,
        out_row_stride as isize,
        1,
    ];
    if !output.is_empty() && seq_kv > 0 {
        let rows_per_task = rows_per_task(seq_q, batch * heads);
        let blocks = seq_q.div_ceil(rows_per_task);
        let (q, k, v) = (Rows::of(&query), Rows::of(&key), Rows::of(&value));
        let out = SharedOut(output.as_mut_ptr());
        let head = Head {
            seq_kv,
            head_dim,
            val_dim,
            scale,
        };
        let task = |index: usize, scratch: &mut Scratch| {
            let (bh, block) = (index / blocks, index % blocks);
            let (b, h) = (bh / heads, bh % heads);
            let first = block * rows_per_task;
            let rows = rows_per_task.min(seq_q - first);
            let out_offset = (b * seq_q + first) * out_row_stride + h * val_dim;
            // SAFETY: the task owns rows first..first + rows of head (b, h) in the output, which
            // no other task writes; the pointers stay inside the three input tensors' storage.
            unsafe {
                head.rows(
                    q.at(b, h, first),
                    q.row_stride,
                    rows,
                    k.at(b, h, 0),
                    k.row_stride,
                    v.at(b, h, 0),
                    v.row_stride,
                    out.at(out_offset),
                    out_row_stride,
                    scratch,
                )
            };
        };
        let tasks = batch * heads * blocks;
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            (0..tasks)
                .into_par_iter()
                .for_each_init(Scratch::default, |scratch, index| task(index, scratch));
        }
        #[cfg(not(feature = "rayon"))]
        {
            let mut scratch = Scratch::default();
            for index in 0..tasks {
                task(index, &mut scratch);
            }
        }
    }
    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::new(shape, strides, 0),
        DType::F32,
    )
}

/// Query rows per task: `MAX_ROWS_PER_TASK`, or fewer where `heads` (batch times heads) would
/// otherwise make under four tasks per thread (a single head, the VAE's, on many cores); at least
/// 32, as small GEMMs waste the vector units.
fn rows_per_task(seq_q: usize, heads: usize) -> usize {
    #[cfg(feature = "rayon")]
    let threads = rayon::current_num_threads();
    #[cfg(not(feature = "rayon"))]
    let threads = 1;
    let blocks_per_head = (4 * threads).div_ceil(heads.max(1));
    seq_q.div_ceil(blocks_per_head).clamp(32, MAX_ROWS_PER_TASK)
}

/// The tensor as is when its rows can be read in place (non-negative strides, unit stride along
/// the last dimension), else a contiguous copy.
fn rows_in_place(tensor: FlexTensor) -> FlexTensor {
    let layout = tensor.layout();
    let last = layout.num_dims().saturating_sub(1);
    let unit_inner = layout.shape()[last] <= 1 || layout.strides()[last] == 1;
    if layout.num_dims() == 4 && layout.has_positive_strides() && unit_inner {
        tensor
    } else {
        tensor.to_contiguous()
    }
}

/// Where the rows of a [batch, heads, seq, dim] f32 tensor lie in its storage.
struct Rows<'a> {
    data: &'a [f32],
    offset: usize,
    batch_stride: usize,
    head_stride: usize,
    row_stride: usize,
}

impl<'a> Rows<'a> {
    fn of(tensor: &'a FlexTensor) -> Self {
        let layout = tensor.layout();
        let strides = layout.strides();
        Rows {
            data: tensor.storage(),
            offset: layout.start_offset(),
            batch_stride: strides[0] as usize,
            head_stride: strides[1] as usize,
            row_stride: strides[2] as usize,
        }
    }

    /// Row `row` of head (b, h).
    fn at(&self, b: usize, h: usize, row: usize) -> *const f32 {
        let index =
            self.offset + b * self.batch_stride + h * self.head_stride + row * self.row_stride;
        debug_assert!(index <= self.data.len());
        self.data[index..].as_ptr()
    }
}

/// The output buffer, written by tasks that each own distinct rows.
#[derive(Clone, Copy)]
struct SharedOut(*mut f32);
// SAFETY: tasks write disjoint elements (see `attention_f32`).
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// A method rather than `.0`, so closures capture the whole (Sync) wrapper.
    fn at(self, offset: usize) -> *mut f32 {
        self.0.wrapping_add(offset)
    }
}

#[derive(Default)]
struct Scratch {
    scores: Vec<f32>,
    sums: Vec<f32>,
    maxes: Vec<f32>,
}

/// Keys per tile: a task takes its rows' scores a tile of keys at a time (online softmax), so a
/// tile's scores stay in the core's L2 cache from the first GEMM through the exp pass to the
/// second (a whole row of 4608 keys made 4 MiB per task and went through L3 each time).
const KV_TILE: usize = 512;

struct Head {
    seq_kv: usize,
    head_dim: usize,
    val_dim: usize,
    scale: f32,
}

impl Head {
    /// `rows` output rows = softmax(q k^T * scale) v, for `rows` query rows of one head against
    /// all its keys; each matrix is given by its first row and row stride (unit inner stride).
    /// The keys are taken `KV_TILE` at a time with a running maximum and sum per row (online
    /// softmax): the output rows accumulate each tile's numerators times its values, rescaled
    /// when a later tile raises a row's maximum, and are divided by their sums at the end.
    ///
    /// # Safety
    /// Every pointer must cover the rows its stride and count describe, and `out` must be
    /// written by nobody else meanwhile.
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows(
        &self,
        q: *const f32,
        q_stride: usize,
        rows: usize,
        k: *const f32,
        k_stride: usize,
        v: *const f32,
        v_stride: usize,
        out: *mut f32,
        out_stride: usize,
        scratch: &mut Scratch,
    ) {
        let (n, d, dv) = (self.seq_kv, self.head_dim, self.val_dim);
        let tile = KV_TILE.min(n);
        scratch.scores.resize(rows * tile, 0.0);
        scratch.sums.clear();
        scratch.sums.resize(rows, 0.0);
        scratch.maxes.clear();
        scratch.maxes.resize(rows, f32::NEG_INFINITY);
        let mut first = 0;
        while first < n {
            let cols = tile.min(n - first);
            let scores = &mut scratch.scores[..rows * cols];
            // scores [rows, cols] = q [rows, d] k[first..first + cols]^T
            unsafe {
                gemm::gemm(
                    rows,
                    cols,
                    d,
                    scores.as_mut_ptr(),
                    1,
                    cols as isize,
                    false,
                    q,
                    1,
                    q_stride as isize,
                    k.add(first * k_stride),
                    k_stride as isize,
                    1,
                    0.0f32,
                    1.0f32,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            for (r, row) in scores.chunks_exact_mut(cols).enumerate() {
                let before = scratch.maxes[r];
                let (max, sum) = softmax_numerators(row, self.scale, before);
                if first > 0 && max > before {
                    // SAFETY: row r of the task's output, which it alone writes.
                    let out_row = unsafe { core::slice::from_raw_parts_mut(out.add(r * out_stride), dv) };
                    let correction = exp(before - max);
                    for x in out_row {
                        *x *= correction;
                    }
                    scratch.sums[r] *= correction;
                }
                scratch.sums[r] += sum;
                scratch.maxes[r] = max;
            }
            // out [rows, dv] (+)= numerators [rows, cols] v[first..first + cols]
            unsafe {
                gemm::gemm(
                    rows,
                    dv,
                    cols,
                    out,
                    1,
                    out_stride as isize,
                    first > 0,
                    scores.as_ptr(),
                    1,
                    cols as isize,
                    v.add(first * v_stride),
                    1,
                    v_stride as isize,
                    1.0f32,
                    1.0f32,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            first += cols;
        }
        for (r, sum) in scratch.sums.iter().enumerate() {
            // A row whose every score was -inf has no weight anywhere: NaN says so rather than
            // dividing by zero silently.
            let inverse = if *sum > 0.0 { 1.0 / sum } else { f32::NAN };
            // SAFETY: row r of the task's output, which it alone writes.
            let row = unsafe { core::slice::from_raw_parts_mut(out.add(r * out_stride), dv) };
            for x in row {
                *x *= inverse;
            }
        }
    }
}

crate::ops::vector_math::multiversion! {
    /// Replaces each score `s` of a row by `exp(s * scale - m)`, where `m` is the larger of
    /// `floor` and the scaled row's maximum, and returns `(m, sum)`. A row that is all -inf
    /// under a -inf floor becomes zeros with sum 0.
    pub fn softmax_numerators(row: &mut [f32], scale: f32, floor: f32) -> (f32, f32) => softmax_numerators_portable
}

/// Independent accumulators per lane, so the reductions vectorise without reassociating a
/// single running value.
const LANES: usize = 16;

#[inline(always)]
fn softmax_numerators_portable(row: &mut [f32], scale: f32, floor: f32) -> (f32, f32) {
    let mut maxes = [floor; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for (m, x) in maxes.iter_mut().zip(chunk.iter_mut()) {
            *x *= scale;
            *m = if *x > *m { *x } else { *m };
        }
    }
    let mut max = floor;
    for x in chunks.into_remainder() {
        *x *= scale;
        max = if *x > max { *x } else { max };
    }
    for m in maxes {
        max = if m > max { m } else { max };
    }
    if max == f32::NEG_INFINITY {
        row.fill(0.0);
        return (max, 0.0);
    }
    let mut sums = [0.0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for (s, x) in sums.iter_mut().zip(chunk.iter_mut()) {
            *x = exp(*x - max);
            *s += *x;
        }
    }
    let mut sum = 0.0f32;
    for x in chunks.into_remainder() {
        *x = exp(*x - max);
        sum += *x;
    }
    (max, sum + sums.iter().sum::<f32>())
}
