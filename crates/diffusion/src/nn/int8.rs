//! 8-bit weights (W8A16): a weight matrix stored as int8 with one f32 scale per output channel
//! (symmetric, `scale = max|w| / 127`), dequantized to the activations' dtype just before the
//! layer uses it. Only one layer's dequantized copy exists at a time, so the device holds about a
//! byte per weight instead of two (f16) or four (f32).
//!
//! Four int8 values are packed into each i32, because every backend stores i32 and not every one
//! stores i8 (WGSL has no 8-bit type). Row `4i + k` of the matrix is byte `k` of packed row `i`,
//! stored as `q + 128` (0..=255), so unpacking is a shift and a mask whatever the backend's shift
//! does with the sign bit.

use burn::module::{Param, ParamId};
use burn::prelude::*;
use burn::tensor::{DType, FloatDType, TensorData};

/// Which axis of the matrix the output channels run along (one scale each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleAxis {
    /// One scale per row: a convolution's [outputs, inputs * k * k].
    Rows,
    /// One scale per column: a linear layer's [inputs, outputs].
    Columns,
}

/// A quantized matrix on the host: what `Int8Matrix::upload` sends to the device.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedInt8 {
    pub rows: usize,
    pub cols: usize,
    /// [ceil(rows / 4), cols]
    pub packed: Vec<i32>,
    /// `rows` values (ScaleAxis::Rows) or `cols` values (ScaleAxis::Columns).
    pub scales: Vec<f32>,
    pub axis: ScaleAxis,
}

impl PackedInt8 {
    /// Quantizes the row-major [rows, cols] `values`. An all-zero channel gets scale 1 (its
    /// values stay 0).
    pub fn quantize(values: &[f32], rows: usize, cols: usize, axis: ScaleAxis) -> Self {
        debug_assert_eq!(values.len(), rows * cols);
        let channel = |r: usize, c: usize| match axis {
            ScaleAxis::Rows => r,
            ScaleAxis::Columns => c,
        };
        let channels = match axis {
            ScaleAxis::Rows => rows,
            ScaleAxis::Columns => cols,
        };
        let mut max_abs = vec![0f32; channels];
        for r in 0..rows {
            for c in 0..cols {
                let m = &mut max_abs[channel(r, c)];
                *m = m.max(values[r * cols + c].abs());
            }
        }
        let scales: Vec<f32> = max_abs
            .iter()
            .map(|&m| {
                if m > 0.0 && m.is_finite() {
                    m / 127.0
                } else {
                    1.0
                }
            })
            .collect();
        let packed_rows = rows.div_ceil(4);
        let mut packed = vec![0u32; packed_rows * cols];
        for r in 0..rows {
            let shift = 8 * (r % 4);
            for c in 0..cols {
                let q = (values[r * cols + c] / scales[channel(r, c)])
                    .round()
                    .clamp(-127.0, 127.0) as i32;
                packed[(r / 4) * cols + c] |= ((q + 128) as u32) << shift;
            }
        }
        // Rows past the end (when `rows` is not a multiple of 4) hold 0 and are cut off.
        PackedInt8 {
            rows,
            cols,
            packed: packed.into_iter().map(|p| p as i32).collect(),
            scales,
            axis,
        }
    }

    /// The values the device will compute, for tests: `(q) * scale`.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.rows * self.cols];
        for r in 0..self.rows {
            for c in 0..self.cols {
                let byte = (self.packed[(r / 4) * self.cols + c] as u32 >> (8 * (r % 4))) & 0xff;
                let scale = match self.axis {
                    ScaleAxis::Rows => self.scales[r],
                    ScaleAxis::Columns => self.scales[c],
                };
                out[r * self.cols + c] = (byte as f32 - 128.0) * scale;
            }
        }
        out
    }
}

/// A quantized weight matrix on the device.
#[derive(Module, Debug)]
pub struct Int8Matrix<B: Backend> {
    /// [ceil(rows / 4), cols], four rows' bytes per element.
    packed: Param<Tensor<B, 2, Int>>,
    /// [rows, 1] or [1, cols], f32.
    scale: Param<Tensor<B, 2>>,
    rows: usize,
}

impl<B: Backend> Int8Matrix<B> {
    pub fn upload(host: PackedInt8, device: &B::Device) -> Self {
        let packed_rows = host.rows.div_ceil(4);
        let packed = Tensor::<B, 2, Int>::from_data(
            TensorData::new(host.packed, [packed_rows, host.cols]),
            (device, DType::I32),
        );
        let scale_shape = match host.axis {
            ScaleAxis::Rows => [host.rows, 1],
            ScaleAxis::Columns => [1, host.cols],
        };
        let scale = Tensor::from_data(
            TensorData::new(host.scales, scale_shape),
            (device, DType::F32),
        );
        Int8Matrix {
            packed: Param::initialized(ParamId::new(), packed),
            scale: Param::from_tensor(scale),
            rows: host.rows,
        }
    }

    /// [rows, cols]
    pub fn dims(&self) -> [usize; 2] {
        [self.rows, self.packed.dims()[1]]
    }

    /// The matrix in `dtype`, [rows, cols].
    pub fn dequantize(&self, dtype: DType) -> Tensor<B, 2> {
        let packed = self.packed.val();
        let [packed_rows, cols] = packed.dims();
        let bytes: Vec<Tensor<B, 2>> = (0..4)
            .map(|k| {
                packed
                    .clone()
                    .bitwise_right_shift_scalar((8 * k).elem())
                    .bitwise_and_scalar(0xff.elem())
                    .cast(FloatDType::from(dtype))
            })
            .collect();
        let q = Tensor::stack::<3>(bytes, 1)
            .reshape([4 * packed_rows, cols])
            .narrow(0, 0, self.rows)
            .sub_scalar(128.0);
        match dtype {
            // In f16, q / 127 times the channel's largest magnitude (the scale times 127), not q
            // times the scale: a scale under 2^-14 (a channel whose weights are all below 0.0078)
            // is subnormal in f16 and loses its precision there, and one under 2^-24 would be 0.
            DType::F16 => q
                .div_scalar(127.0)
                .mul(self.scale.val().mul_scalar(127.0).cast(dtype)),
            // f32 and bf16 have f32's range: q (exact in either) times the scale, rounded once
            // each.
            _ => q.mul(self.scale.val().cast(dtype)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::cpu_device;
    use crate::pipeline::B;

    fn matrix(rows: usize, cols: usize) -> Vec<f32> {
        (0..rows * cols)
            .map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * (1 + i % 3) as f32)
            .collect()
    }

    #[test]
    fn quantizing_keeps_each_value_within_half_a_step_of_its_channel() {
        for axis in [ScaleAxis::Rows, ScaleAxis::Columns] {
            let (rows, cols) = (10, 6); // not a multiple of 4: the last packed row is partial
            let values = matrix(rows, cols);
            let host = PackedInt8::quantize(&values, rows, cols, axis);
            assert_eq!(host.packed.len(), 3 * cols);
            let back = host.dequantize();
            for r in 0..rows {
                for c in 0..cols {
                    let scale = match axis {
                        ScaleAxis::Rows => host.scales[r],
                        ScaleAxis::Columns => host.scales[c],
                    };
                    let err = (back[r * cols + c] - values[r * cols + c]).abs();
                    assert!(
                        err <= scale * 0.5 + 1e-6,
                        "{axis:?} {r},{c}: {err} vs {scale}"
                    );
                }
            }
            // Each channel's largest value is exactly representable: +-127 steps.
            let max = values.iter().fold(0f32, |m, v| m.max(v.abs()));
            let back_max = back.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert!((max - back_max).abs() < 1e-5 * max);
        }
        let zeros = PackedInt8::quantize(&[0.0; 8], 2, 4, ScaleAxis::Rows);
        assert_eq!(zeros.dequantize(), vec![0.0; 8]);
        assert_eq!(zeros.scales, vec![1.0, 1.0]);
    }

    /// A channel of small weights (all under 0.0078: its scale is subnormal in f16) keeps f16's
    /// precision: each value f16 can hold as a normal number comes back within f16's rounding.
    #[test]
    fn small_channels_keep_their_precision_in_f16() {
        let device = cpu_device();
        let (rows, cols) = (4, 64);
        let values: Vec<f32> = matrix(rows, cols).iter().map(|v| v * 1e-3).collect();
        let host = PackedInt8::quantize(&values, rows, cols, ScaleAxis::Rows);
        assert!(host.scales.iter().all(|&s| s < 6.1e-5), "{:?}", host.scales);
        let expected = host.dequantize();
        let got: Vec<f32> = Int8Matrix::<B>::upload(host, &device)
            .dequantize(DType::F16)
            .into_data()
            .convert::<f32>()
            .into_vec()
            .unwrap();
        for (g, e) in got.iter().zip(&expected) {
            if e.abs() >= 1e-4 {
                assert!((g - e).abs() <= 2e-3 * e.abs(), "{g} vs {e}");
            }
        }
    }

    #[test]
    fn the_device_unpacks_what_the_host_packed() {
        let device = cpu_device();
        for (axis, rows, cols) in [(ScaleAxis::Columns, 9, 5), (ScaleAxis::Rows, 8, 3)] {
            let values = matrix(rows, cols);
            let host = PackedInt8::quantize(&values, rows, cols, axis);
            let expected = host.dequantize();
            let matrix = Int8Matrix::<B>::upload(host, &device);
            assert_eq!(matrix.dims(), [rows, cols]);
            for dtype in [DType::F32, DType::F16, DType::BF16] {
                let got = matrix.dequantize(dtype);
                assert_eq!(got.dtype(), dtype);
                let got: Vec<f32> = got.into_data().convert::<f32>().into_vec().unwrap();
                let tolerance = match dtype {
                    DType::F16 => 2e-3,
                    // Seven stored mantissa bits: each rounding (the scale, the product) is
                    // within 2^-8 of the value.
                    DType::BF16 => 8e-3,
                    _ => 1e-6,
                };
                for (g, e) in got.iter().zip(&expected) {
                    assert!((g - e).abs() <= tolerance * e.abs().max(1.0), "{g} vs {e}");
                }
            }
        }
    }
}
