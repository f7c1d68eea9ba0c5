//! (SD Bench) A matrix kept in a model file's codes (GGUF block-quantized, FP8) decoded in one pass
//! (`ModuleOps::dequantize_codes`, declared in vendor/burn-backend with the arithmetic in its
//! `CodeLayout`). The composed form made about a dozen passes over the matrix (a shift and a mask
//! per code slot, a concatenation, a cast, a subtraction, a multiply, an add, a cast through f64),
//! on one thread each, about 7 ns a weight on a 2-core EPYC; this one decodes a tile at a time on
//! the worker threads and writes the output dtype directly.
//!
//! The result is laid out column-major (strides [1, rows]): a linear layer uses the matrix
//! transposed, [inputs, outputs], and the matrix product then reads a contiguous weight, as it does
//! a float weight stored so, instead of copying a transposed view first.

use alloc::vec;
use alloc::vec::Vec;

use burn_backend::DType;
use burn_backend::ops::codes::{CodeLayout, dequantize_codes_composed};
use burn_std::{Bytes, FloatDType, Shape, bf16, f16};

use crate::{Flex, FlexTensor, Layout};

/// Columns a tile holds (a multiple of every run, 16 or 32, and of codes per word).
const TILE_COLS: usize = 64;
/// Tiles side by side that one task decodes, at most: a block of rows is read for all of them
/// while it is in cache (a row's 64 columns alone are a single cache line of Q8_0 codes, 3 KB from
/// the next row's, and walking every row for so little cost more in address translation than in
/// reading: Q8_0 decoded at 2.5 ns a weight with one tile a task, 1.7 with four).
const MAX_GROUP_TILES: usize = 4;
/// Rows decoded into the scratch tile before it is written out.
const TILE_ROWS: usize = 64;

pub fn dequantize_codes(
    packed: FlexTensor,
    scales: FlexTensor,
    offsets: Option<FlexTensor>,
    table: Option<FlexTensor>,
    layout: CodeLayout,
    dtype: FloatDType,
) -> FlexTensor {
    let fused = matches!(dtype, FloatDType::F32 | FloatDType::F16 | FloatDType::BF16)
        && packed.dtype() == DType::I32
        && scales.dtype() == DType::F32
        && offsets.as_ref().is_none_or(|o| o.dtype() == DType::F32)
        && table.as_ref().is_none_or(|t| t.dtype() == DType::F32)
        && matches!(layout.width, 2 | 4 | 8)
        && (table.is_some() || (layout.run > 0 && TILE_COLS.is_multiple_of(layout.run)));
    if !fused {
        return dequantize_codes_composed::<Flex>(packed, scales, offsets, table, layout, dtype);
    }
    let (packed, scales) = (packed.to_contiguous(), scales.to_contiguous());
    let offsets = offsets.map(|o| o.to_contiguous());
    let table = table.map(|t| t.to_contiguous());
    let source = Source {
        packed: packed.storage(),
        scales: scales.storage(),
        offsets: offsets.as_ref().map(|o| o.storage()),
        table: table.as_ref().map(|t| t.storage()),
        layout,
    };
    source.check();
    let (rows, cols) = (layout.rows, layout.cols);
    let shape = Shape::from(vec![rows, cols]);
    let column_major = Layout::new(shape, vec![1, rows.max(1) as isize], 0);
    match dtype {
        FloatDType::F32 => {
            let out = source.decode::<f32>(|v| v);
            FlexTensor::new(Bytes::from_elems(out), column_major, DType::F32)
        }
        FloatDType::F16 => {
            let out = source.decode::<f16>(f16::from_f32);
            FlexTensor::new(Bytes::from_elems(out), column_major, DType::F16)
        }
        _ => {
            let out = source.decode::<bf16>(bf16::from_f32);
            FlexTensor::new(Bytes::from_elems(out), column_major, DType::BF16)
        }
    }
}

/// The codes and the numbers that turn them into values.
struct Source<'a> {
    packed: &'a [i32],
    scales: &'a [f32],
    offsets: Option<&'a [f32]>,
    table: Option<&'a [f32]>,
    layout: CodeLayout,
}

impl Source<'_> {
    /// The tensors hold what the layout says (the caller built them from one file's matrix).
    fn check(&self) {
        let CodeLayout {
            rows, cols, run, ..
        } = self.layout;
        assert_eq!(
            self.packed.len(),
            rows * self.layout.words(),
            "dequantize_codes: packed codes do not match the layout"
        );
        match self.table {
            Some(table) => assert!(
                table.len() == 256 && self.scales.len() == 1,
                "dequantize_codes: a table takes 256 values and one scale"
            ),
            None => {
                let runs = rows * (cols / run);
                assert!(
                    cols.is_multiple_of(run)
                        && self.scales.len() == runs
                        && self.offsets.is_none_or(|o| o.len() == runs),
                    "dequantize_codes: scales do not match the layout"
                );
            }
        }
    }

    /// The matrix in column-major order, each value converted by `convert`.
    fn decode<T: Copy + Default + Send>(&self, convert: impl Fn(f32) -> T + Sync) -> Vec<T> {
        let rows = self.layout.rows;
        let mut out = vec![T::default(); rows * self.layout.cols];
        if rows == 0 {
            return out;
        }
        // Fewer tiles a task where that would leave under four tasks a thread.
        let tiles = self.layout.cols.div_ceil(TILE_COLS);
        let group = (tiles / (4 * threads())).clamp(1, MAX_GROUP_TILES);
        let task = |index: usize, out: &mut [T]| {
            self.decode_columns(index * group * TILE_COLS, out, &convert)
        };
        #[cfg(feature = "rayon")]
        {
            use rayon::prelude::*;
            out.par_chunks_mut(group * TILE_COLS * rows)
                .enumerate()
                .for_each(|(index, out)| task(index, out));
        }
        #[cfg(not(feature = "rayon"))]
        for (index, out) in out.chunks_mut(group * TILE_COLS * rows).enumerate() {
            task(index, out);
        }
        out
    }

    /// Columns `first..` (as many as `out` holds, `rows` values each) into `out`: for each block
    /// of `TILE_ROWS` rows, each tile of `TILE_COLS` columns in turn.
    fn decode_columns<T: Copy>(&self, first: usize, out: &mut [T], convert: &impl Fn(f32) -> T) {
        let rows = self.layout.rows;
        let mut tile = [[0.0f32; TILE_COLS]; TILE_ROWS];
        for top in (0..rows).step_by(TILE_ROWS) {
            let height = TILE_ROWS.min(rows - top);
            for (t, out) in out.chunks_mut(TILE_COLS * rows).enumerate() {
                let count = out.len() / rows;
                let left = first + t * TILE_COLS;
                for (r, values) in tile[..height].iter_mut().enumerate() {
                    self.decode_row(top + r, left, &mut values[..count]);
                }
                for (c, column) in out.chunks_exact_mut(rows).enumerate() {
                    for (r, slot) in column[top..top + height].iter_mut().enumerate() {
                        *slot = convert(tile[r][c]);
                    }
                }
            }
        }
    }

    /// Row `row`'s values at columns `first..first + values.len()`.
    fn decode_row(&self, row: usize, first: usize, values: &mut [f32]) {
        let CodeLayout { width, .. } = self.layout;
        let words = self.layout.words();
        let per_word = self.layout.per_word();
        let packed = &self.packed[row * words + first / per_word..];
        let codes = |values: &mut [f32]| match width {
            2 => unpack::<2>(packed, values),
            4 => unpack::<4>(packed, values),
            _ => unpack::<8>(packed, values),
        };
        codes(values);
        match self.table {
            Some(table) => {
                let scale = self.scales[0];
                for v in values.iter_mut() {
                    *v = table[*v as usize] * scale;
                }
            }
            None => {
                let run = self.layout.run;
                let runs = self.layout.cols / run;
                let at = row * runs + first / run;
                let code_offset = self.layout.code_offset as f32;
                let scales = &self.scales[at..];
                for (k, run_values) in values.chunks_mut(run).enumerate() {
                    let scale = scales[k];
                    for v in run_values.iter_mut() {
                        *v = (*v - code_offset) * scale;
                    }
                }
                if let Some(offsets) = self.offsets {
                    for (k, run_values) in values.chunks_mut(run).enumerate() {
                        let offset = offsets[at + k];
                        for v in run_values.iter_mut() {
                            *v += offset;
                        }
                    }
                }
            }
        }
    }
}

/// The worker threads a decode is spread over.
fn threads() -> usize {
    #[cfg(feature = "rayon")]
    return rayon::current_num_threads();
    #[cfg(not(feature = "rayon"))]
    return 1;
}

/// The codes of `values.len()` consecutive elements starting at the first code of `packed[0]`,
/// as f32 (each is exact: under 256).
#[inline(always)]
fn unpack<const WIDTH: u32>(packed: &[i32], values: &mut [f32]) {
    let per_word = (32 / WIDTH) as usize;
    let mask = (1u32 << WIDTH) - 1;
    for (i, v) in values.iter_mut().enumerate() {
        let word = packed[i / per_word] as u32;
        *v = ((word >> ((i % per_word) as u32 * WIDTH)) & mask) as f32;
    }
}
