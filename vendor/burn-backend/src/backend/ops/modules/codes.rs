//! (SD Bench) A matrix kept in a model file's codes (a GGUF block-quantized matrix, an FP8 one)
//! turned into values: the layout type of [ModuleOps::dequantize_codes](super::ModuleOps::dequantize_codes)
//! and its default, composed from tensor ops, which a backend's fused kernel falls back to for the
//! dtypes it does not cover.

use alloc::vec;
use alloc::vec::Vec;
use burn_std::{FloatDType, Shape, Slice};

use crate::tensor::{FloatTensor, IntTensor};
use crate::{Backend, Scalar, TensorMetadata};

/// How the codes of a [rows, cols] matrix are packed, and how a code becomes a value.
///
/// Codes are packed into i32 words, `32 / width` to a word, code `k` of a word at bits
/// `k * width ..`; a row takes `ceil(cols / (32 / width))` words. With a table, a value is
/// `table[code] * scale` (one scale for the matrix); without one, `(code - code_offset) *
/// scales[row][col / run] (+ offsets[row][col / run])`, each operation rounded in f32 (ggml's
/// order, no fused multiply-add), then the result is rounded once to the output dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLayout {
    /// Rows of the matrix.
    pub rows: usize,
    /// Columns of the matrix.
    pub cols: usize,
    /// Bits a code takes in its word: 2, 4 or 8.
    pub width: u32,
    /// Values sharing one scale (and offset); unused with a table.
    pub run: usize,
    /// Subtracted from each code before scaling; unused with a table.
    pub code_offset: u32,
}

impl CodeLayout {
    /// Codes in one packed word.
    pub fn per_word(&self) -> usize {
        (32 / self.width) as usize
    }

    /// Packed words in one row.
    pub fn words(&self) -> usize {
        self.cols.div_ceil(self.per_word())
    }
}

/// Values the composed form decodes at a time (8 Mi: 32 MiB in i32 or f32). Its working copies
/// (codes as i32, values in f32) are 4 bytes a value; decoded whole, a FLUX.2 klein feed-forward
/// matrix's are 151 MB, over the 128 MiB a buffer holds on Mesa's lavapipe (where such a matrix
/// failed to allocate, or gave wrong values). Only the result, in the output dtype, is whole.
pub const COMPOSED_CHUNK: usize = 1 << 23;

/// See [ModuleOps::dequantize_codes](super::ModuleOps::dequantize_codes).
pub fn dequantize_codes_composed<B: Backend>(
    packed: IntTensor<B>,
    scales: FloatTensor<B>,
    offsets: Option<FloatTensor<B>>,
    table: Option<FloatTensor<B>>,
    layout: CodeLayout,
    dtype: FloatDType,
) -> FloatTensor<B> {
    dequantize_codes_in_chunks::<B>(
        packed,
        scales,
        offsets,
        table,
        layout,
        dtype,
        COMPOSED_CHUNK,
    )
}

/// [dequantize_codes_composed] with `chunk` values decoded at a time (whole rows, at least one).
pub fn dequantize_codes_in_chunks<B: Backend>(
    packed: IntTensor<B>,
    scales: FloatTensor<B>,
    offsets: Option<FloatTensor<B>>,
    table: Option<FloatTensor<B>>,
    layout: CodeLayout,
    dtype: FloatDType,
    chunk: usize,
) -> FloatTensor<B> {
    let step = (chunk / layout.cols.max(1)).max(1);
    let mut parts = Vec::with_capacity(layout.rows.div_ceil(step));
    let mut start = 0;
    while start < layout.rows {
        let rows = step.min(layout.rows - start);
        let values = rows_in_f32::<B>(
            &packed,
            &scales,
            offsets.as_ref(),
            table.as_ref(),
            layout,
            start,
            rows,
        );
        parts.push(match dtype {
            FloatDType::F32 => values,
            _ => B::float_cast(values, dtype),
        });
        start += rows;
    }
    match parts.len() {
        1 => parts.remove(0),
        _ => B::float_cat(parts, 0),
    }
}

/// Rows `start..start + rows` in f32, [rows, cols].
fn rows_in_f32<B: Backend>(
    packed: &IntTensor<B>,
    scales: &FloatTensor<B>,
    offsets: Option<&FloatTensor<B>>,
    table: Option<&FloatTensor<B>>,
    layout: CodeLayout,
    start: usize,
    rows: usize,
) -> FloatTensor<B> {
    let cols = layout.cols;
    let words = layout.words();
    let packed = B::int_slice(
        packed.clone(),
        &[Slice::from(start..start + rows), Slice::from(0..words)],
    );
    let codes = codes::<B>(packed, layout, rows);
    match table {
        Some(table) => {
            let values = B::float_select(
                table.clone(),
                0,
                B::int_reshape(codes, Shape::from(vec![rows * cols])),
            );
            let values = B::float_reshape(values, Shape::from(vec![rows, cols]));
            B::float_mul(
                values,
                B::float_reshape(scales.clone(), Shape::from(vec![1, 1])),
            )
        }
        None => {
            let runs = cols / layout.run;
            let q = B::int_into_float(codes, FloatDType::F32);
            let q = B::float_sub_scalar(q, Scalar::Float(layout.code_offset as f64));
            let q = B::float_reshape(q, Shape::from(vec![rows, runs, layout.run]));
            let of_rows = |t: &FloatTensor<B>| {
                B::float_slice(
                    t.clone(),
                    &[
                        Slice::from(start..start + rows),
                        Slice::from(0..runs),
                        Slice::from(0..1),
                    ],
                )
            };
            let q = B::float_mul(q, of_rows(scales));
            let q = match offsets {
                Some(offsets) => B::float_add(q, of_rows(offsets)),
                None => q,
            };
            B::float_reshape(q, Shape::from(vec![rows, cols]))
        }
    }
}

/// Each element's code, [rows, cols], of the packed rows `packed` ([rows, words]).
fn codes<B: Backend>(packed: IntTensor<B>, layout: CodeLayout, rows: usize) -> IntTensor<B> {
    let words = layout.words();
    let per_word = layout.per_word();
    let dtype = packed.dtype();
    let mask = (1i64 << layout.width) - 1;
    let parts: Vec<IntTensor<B>> = (0..per_word)
        .map(|k| {
            let shifted = B::bitwise_right_shift_scalar(
                packed.clone(),
                Scalar::new(k as i64 * layout.width as i64, &dtype),
            );
            let code = B::bitwise_and_scalar(shifted, Scalar::new(mask, &dtype));
            B::int_reshape(code, Shape::from(vec![rows, words, 1]))
        })
        .collect();
    let codes = B::int_reshape(
        B::int_cat(parts, 2),
        Shape::from(vec![rows, words * per_word]),
    );
    B::int_slice(codes, &[Slice::from(0..rows), Slice::from(0..layout.cols)])
}
