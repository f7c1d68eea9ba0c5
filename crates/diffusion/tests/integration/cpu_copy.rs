//! The CPU backend's strided copies (a transposed or sliced tensor made contiguous: every linear
//! weight as it loads, permuted activations), which vendor/burn-flex runs in bands of 16 output
//! rows on the worker threads from 2^18 values up: each band's values, both loop orders of the
//! tiled copy, a view that starts inside its buffer, a last band of fewer rows, f32 and f16.
//! A copy moves values without arithmetic, so each one must be the value at its source position.

use burn::tensor::DType;

use crate::common::kernels::{rounded, tensor, values};

/// `rows` x `cols` values, each its own position in f32; in f16 (exact only below 2048) the
/// position modulo the prime 2039, so a value moved by a band (16 rows), a row or a column
/// still differs.
fn positions(rows: usize, cols: usize, dtype: DType) -> Vec<f32> {
    let modulus = if dtype == DType::F16 {
        2039
    } else {
        usize::MAX
    };
    rounded(
        (0..rows * cols).map(|i| (i % modulus) as f32).collect(),
        dtype,
    )
}

/// Asserts each copied value is the source's value at `source(i)`.
fn assert_moved(what: &str, got: &[f32], x: &[f32], source: impl Fn(usize) -> usize) {
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, x[source(i)], "{what} at output position {i}");
    }
}

#[test]
fn large_strided_copies_on_the_cpu_move_every_value_to_its_place() {
    // Outputs of 711, 998 and 706 rows (bands of 16, the last of 7, 6 and 2), each over 2^18.
    let (rows, cols) = (1001, 711);
    for dtype in [DType::F32, DType::F16] {
        let x = positions(rows, cols, dtype);
        let name = format!("{dtype:?}");

        // A transpose: the source's row stride (1) is its smaller one.
        let t = tensor(&x, [rows, cols], dtype).transpose();
        let got = values(t.reshape([cols * rows]));
        assert_moved(&format!("{name} transpose"), &got, &x, |i| {
            (i % rows) * cols + i / rows
        });

        // A slice starting at (3, 5): an offset into the buffer, the column stride the smaller.
        let (r0, c0) = (3, 5);
        let s = tensor(&x, [rows, cols], dtype).slice([r0..rows, c0..cols]);
        let (sr, sc) = (rows - r0, cols - c0);
        let got = values(s.clone().reshape([sr * sc]));
        assert_moved(&format!("{name} slice"), &got, &x, |i| {
            (i / sc + r0) * cols + i % sc + c0
        });

        // The same slice transposed: an offset and the row stride the smaller.
        let got = values(s.transpose().reshape([sc * sr]));
        assert_moved(&format!("{name} transposed slice"), &got, &x, |i| {
            (i % sr + r0) * cols + i / sr + c0
        });
    }
}
