//! Weights kept as the file stores them: a GGUF block-quantized matrix (Q8_0, Q4_K, ...) or an FP8
//! one stays in its codes on the device and is dequantized to the activations' dtype just before
//! the layer uses it, as the int8 path does (`nn::int8`). Only one layer's dequantized copy exists
//! at a time, so a Q4_K model holds about six bits per weight instead of bf16's sixteen.
//!
//! Codes are packed into i32s (every backend stores i32; WGSL has no 8-bit type): 2-bit codes 16
//! to a word, 3- and 4-bit codes 8, wider ones 4; code `k` of a word is bits `k * width ..`. A
//! block-quantized value is `(code - code_offset) * scale (+ offset)` with one scale (and offset)
//! per run of 16 or 32 values (`io::ggml_blocks::AffineForm`), computed in f32 in ggml's order, so
//! the device's values are the host decoder's bit for bit. An FP8 value is its code looked up in a
//! 256-entry table of the format's values, times the tensor's scale where the file has one.

use burn::module::{Param, ParamId};
use burn::prelude::*;
use burn::tensor::ops::codes::CodeLayout;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{DType, TensorData, TensorPrimitive};

use crate::io::ggml_blocks::{affine_blocks, AffineBlocks};
use crate::io::kept_weights::{code_bytes, word_width};
use crate::io::safetensors::{StDtype, Stored};

/// How a code becomes a value, on the host.
#[derive(Debug, Clone, PartialEq)]
enum HostValues {
    /// `(code - code_offset) * scales[run] (+ offsets[run])`.
    Affine {
        run: usize,
        code_offset: u8,
        scales: Vec<f32>,
        /// Empty when the type stores no offsets.
        offsets: Vec<f32>,
    },
    /// `table[code] (* scale)`.
    Table { table: Vec<f32>, scale: Option<f32> },
}

/// A [rows, cols] matrix in its file's codes, on the host: what `BlockMatrix::upload` sends.
#[derive(Debug, Clone, PartialEq)]
pub struct HostBlocks {
    rows: usize,
    cols: usize,
    /// Bits each code takes in a word: 2, 4 or 8.
    width: u32,
    /// [rows, ceil(cols / codes per word)]
    packed: Vec<i32>,
    values: HostValues,
}

impl HostBlocks {
    /// The row-major [rows, cols] tensor `stored` in its codes, if its type is one kept so (GGUF's
    /// block-quantized types, FP8); `scale` is an FP8 tensor's scale. `None` for float types, and
    /// for a quantized matrix whose rows are not whole blocks (its caller decodes it instead).
    pub fn from_stored(
        stored: &Stored,
        rows: usize,
        cols: usize,
        scale: Option<f32>,
    ) -> Option<Self> {
        let (codes, values, bits) = match stored.dtype {
            StDtype::Ggml(kind) => {
                let form = kind.affine()?;
                let (block, bytes) = kind.block();
                if !cols.is_multiple_of(block) || stored.bytes.len() != rows * cols / block * bytes
                {
                    return None;
                }
                let AffineBlocks {
                    codes,
                    scales,
                    offsets,
                    ..
                } = affine_blocks(kind, &stored.bytes)?;
                let values = HostValues::Affine {
                    run: form.run,
                    code_offset: form.code_offset,
                    scales,
                    offsets,
                };
                (codes, values, form.code_bits)
            }
            StDtype::F8E4M3 | StDtype::F8E5M2 => {
                if stored.bytes.len() != rows * cols {
                    return None;
                }
                let all_codes = Stored {
                    dtype: stored.dtype,
                    bytes: (0..=255u8).collect(),
                };
                let values = HostValues::Table {
                    table: all_codes.to_f32(),
                    scale,
                };
                (stored.bytes.clone(), values, 8)
            }
            _ => return None,
        };
        Some(Self::pack(rows, cols, bits, &codes, values))
    }

    /// A made-up [rows, cols] matrix of `dtype` with codes and scales of a layer's magnitude, for
    /// timing (`op_timing`): a device does the same work whatever the values. `None` for a type
    /// not kept in codes or rows that are not whole blocks.
    pub fn synthetic(dtype: StDtype, rows: usize, cols: usize) -> Option<Self> {
        code_bytes(dtype, rows, cols)?;
        let (bits, limit, values) = match dtype {
            StDtype::Ggml(kind) => {
                let form = kind.affine()?;
                let runs = rows * cols / form.run;
                let scale = 1.0 / ((cols as f32).sqrt() * (1u32 << form.code_bits) as f32);
                let values = HostValues::Affine {
                    run: form.run,
                    code_offset: form.code_offset,
                    scales: vec![2.0 * scale; runs],
                    offsets: vec![-scale; if form.has_offset { runs } else { 0 }],
                };
                (form.code_bits, 1u64 << form.code_bits, values)
            }
            _ => {
                let table = Stored {
                    dtype,
                    bytes: (0..=255u8).collect(),
                };
                let values = HostValues::Table {
                    table: table.to_f32(),
                    scale: Some(1.0 / (cols as f32).sqrt()),
                };
                // FP8 codes below 0x38 are finite values under 1 in both formats.
                (8, 0x38, values)
            }
        };
        let mut state = 0x5eed_u64;
        let codes: Vec<u8> = (0..rows * cols)
            .map(|_| (crate::io::synthetic_weights::splitmix64(&mut state) % limit) as u8)
            .collect();
        Some(Self::pack(rows, cols, bits, &codes, values))
    }

    /// `codes` ([rows, cols], each under `1 << bits`) packed into words.
    fn pack(rows: usize, cols: usize, bits: u32, codes: &[u8], values: HostValues) -> Self {
        let width = word_width(bits);
        let per_word = (32 / width) as usize;
        let words = cols.div_ceil(per_word);
        let mut packed = vec![0u32; rows * words];
        for (r, row) in codes.chunks_exact(cols).enumerate() {
            for (c, &code) in row.iter().enumerate() {
                packed[r * words + c / per_word] |=
                    u32::from(code) << (width * (c % per_word) as u32);
            }
        }
        HostBlocks {
            rows,
            cols,
            width,
            packed: packed.into_iter().map(|w| w as i32).collect(),
            values,
        }
    }

    /// Bytes the device will hold for it.
    pub fn device_bytes(&self) -> usize {
        let values = match &self.values {
            HostValues::Affine {
                scales, offsets, ..
            } => scales.len() + offsets.len(),
            HostValues::Table { table, .. } => table.len() + 1,
        };
        4 * (self.packed.len() + values)
    }
}

/// A matrix kept in its file's codes on the device ([rows, cols] as the file stores it: a linear
/// layer's [outputs, inputs]).
#[derive(Module, Debug)]
pub struct BlockMatrix<B: Backend> {
    /// [rows, ceil(cols / codes per word)]
    packed: Param<Tensor<B, 2, Int>>,
    /// Affine: [rows, cols / run, 1]; table: [1, 1, 1] holding the tensor's scale (1 without one:
    /// a value times 1 is itself).
    scales: Param<Tensor<B, 3>>,
    /// Affine types with a minimum: [rows, cols / run, 1].
    offsets: Option<Param<Tensor<B, 3>>>,
    /// FP8: the 256 values of its codes.
    table: Option<Param<Tensor<B, 1>>>,
    rows: usize,
    cols: usize,
    width: u32,
    /// Affine: values per scale (0 for a table).
    run: usize,
    code_offset: u32,
}

impl<B: Backend> BlockMatrix<B> {
    pub fn upload(host: HostBlocks, device: &B::Device) -> Self {
        let words = host.packed.len() / host.rows.max(1);
        let packed = Tensor::<B, 2, Int>::from_data(
            TensorData::new(host.packed, [host.rows, words]),
            (device, DType::I32),
        );
        let f32_tensor = |values: Vec<f32>, shape: [usize; 3]| {
            Param::from_tensor(Tensor::<B, 3>::from_data(
                TensorData::new(values, shape),
                (device, DType::F32),
            ))
        };
        let (scales, offsets, table, run, code_offset) = match host.values {
            HostValues::Affine {
                run,
                code_offset,
                scales,
                offsets,
            } => {
                let shape = [host.rows, host.cols / run, 1];
                let offsets = (!offsets.is_empty()).then(|| f32_tensor(offsets, shape));
                (
                    f32_tensor(scales, shape),
                    offsets,
                    None,
                    run,
                    u32::from(code_offset),
                )
            }
            HostValues::Table { table, scale } => {
                let table =
                    Tensor::<B, 1>::from_data(TensorData::new(table, [256]), (device, DType::F32));
                (
                    f32_tensor(vec![scale.unwrap_or(1.0)], [1, 1, 1]),
                    None,
                    Some(Param::from_tensor(table)),
                    0,
                    0,
                )
            }
        };
        BlockMatrix {
            packed: Param::initialized(ParamId::new(), packed),
            scales,
            offsets,
            table,
            rows: host.rows,
            cols: host.cols,
            width: host.width,
            run,
            code_offset,
        }
    }

    /// [rows, cols]
    pub fn dims(&self) -> [usize; 2] {
        [self.rows, self.cols]
    }

    fn layout(&self) -> CodeLayout {
        CodeLayout {
            rows: self.rows,
            cols: self.cols,
            width: self.width,
            run: self.run,
            code_offset: self.code_offset,
        }
    }

    /// The matrix in `dtype`, [rows, cols]: computed in f32 as the file's format defines it, then
    /// rounded once to `dtype`, by the backend's `dequantize_codes` op (vendor/burn-backend), in
    /// one pass that allocates only the result: on the CPU burn-flex's decoder, which writes it in
    /// the column-major layout a linear layer reads it in; on the GPUs burn-cubecl's kernel, which
    /// the fused backends reach through a custom operation of their stream (vendor/burn-fusion).
    pub fn dequantize(&self, dtype: DType) -> Tensor<B, 2> {
        let (packed, scales, offsets, table) = self.primitives();
        let values =
            B::dequantize_codes(packed, scales, offsets, table, self.layout(), dtype.into());
        Tensor::from_primitive(TensorPrimitive::Float(values))
    }

    /// The packed codes, scales, offsets and table as the backend's op takes them.
    fn primitives(&self) -> CodePrimitives<B> {
        let float = |t: Tensor<B, 3>| t.into_primitive().tensor();
        (
            self.packed.val().into_primitive(),
            float(self.scales.val()),
            self.offsets.as_ref().map(|o| float(o.val())),
            self.table
                .as_ref()
                .map(|t| t.val().into_primitive().tensor()),
        )
    }
}

type CodePrimitives<B> = (
    IntTensor<B>,
    FloatTensor<B>,
    Option<FloatTensor<B>>,
    Option<FloatTensor<B>>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::cpu_device;
    use crate::io::ggml_blocks::GgmlType;
    use crate::pipeline::B;

    /// A made-up Q4_1 matrix of 2 rows x 64 values: scales and minimums per block of 32.
    fn q4_1_rows() -> Stored {
        let mut bytes = Vec::new();
        for block in 0..4u8 {
            bytes.extend(half::f16::from_f32(0.25 + f32::from(block)).to_le_bytes());
            bytes.extend(half::f16::from_f32(-1.5 * f32::from(block)).to_le_bytes());
            bytes.extend((0..16u8).map(|j| j.wrapping_mul(37).wrapping_add(block)));
        }
        Stored {
            dtype: StDtype::Ggml(GgmlType::Q4_1),
            bytes,
        }
    }

    fn values(t: Tensor<B, 2>) -> Vec<f32> {
        t.into_data().convert::<f32>().into_vec().unwrap()
    }

    #[test]
    fn the_device_computes_what_the_host_decoder_computes() {
        let stored = q4_1_rows();
        let host = HostBlocks::from_stored(&stored, 2, 64, None).expect("Q4_1 is kept in codes");
        // 4-bit codes, 8 to a word: 8 words per row; a scale and an offset per 32 values.
        assert_eq!(host.device_bytes(), 4 * (2 * 8 + 4 + 4));
        assert_eq!(
            code_bytes(stored.dtype, 2, 64),
            Some(host.device_bytes() as u64)
        );
        let matrix = BlockMatrix::<B>::upload(host, &cpu_device());
        assert_eq!(matrix.dims(), [2, 64]);
        let got = values(matrix.dequantize(DType::F32));
        let expected = stored.to_f32();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        let half = values(matrix.dequantize(DType::F16));
        for (h, e) in half.iter().zip(&expected) {
            assert_eq!(*h, half::f16::from_f32(*e).to_f32());
        }
    }

    /// A [rows, cols] matrix of random codes of `bits` bits with a random scale (and offset) per
    /// `run` values, or, with `run` 0, FP8 codes with a table and a scale.
    fn random_blocks(rows: usize, cols: usize, bits: u32, run: usize, offsets: bool) -> HostBlocks {
        let mut state = u64::from(bits) * 1000 + run as u64;
        let mut next = || crate::io::synthetic_weights::splitmix64(&mut state);
        let codes: Vec<u8> = (0..rows * cols)
            .map(|_| (next() % (1 << bits)) as u8)
            .collect();
        let mut value = || (next() % 2001) as f32 / 1000.0 - 1.0;
        let values = match run {
            0 => HostValues::Table {
                table: Stored {
                    dtype: StDtype::F8E4M3,
                    bytes: (0..=255u8).collect(),
                }
                .to_f32(),
                scale: Some(value()),
            },
            _ => HostValues::Affine {
                run,
                code_offset: if offsets { 0 } else { 1 << (bits - 1) },
                scales: (0..rows * cols / run).map(|_| value()).collect(),
                offsets: match offsets {
                    true => (0..rows * cols / run).map(|_| value()).collect(),
                    false => Vec::new(),
                },
            },
        };
        HostBlocks::pack(rows, cols, bits, &codes, values)
    }

    /// The CPU backend's one-pass decoder (vendor/burn-flex) and the composed tensor ops that
    /// backends without their own decoder run (vendor/burn-backend), whole or a row at a time, give
    /// the same bits in every dtype: rows past a tile of 64 and a partial last tile of columns,
    /// every code width, runs of 16 and 32, with and without offsets, FP8 with a scale; and
    /// matrices wide enough for tasks of several tiles.
    #[test]
    fn the_one_pass_decoder_and_the_composed_ops_agree_bit_for_bit() {
        let dtypes = [DType::F32, DType::F16, DType::BF16];
        the_backends_decoder_and_the_composed_ops_agree(&cpu_device(), &dtypes);
    }

    /// The same on Vulkan (lavapipe in CI), where the fused backend's custom operation
    /// (vendor/burn-fusion) runs burn-cubecl's kernel: the kernel CUDA and ROCm run too.
    #[test]
    fn the_gpu_kernel_and_the_composed_ops_agree_bit_for_bit() {
        let device = match crate::device::select(crate::device::BackendRequest::Vulkan) {
            Ok(selected) => selected.device,
            Err(e) => {
                let required = std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() == Ok("1");
                assert!(
                    !required,
                    "SDBENCH_REQUIRE_VULKAN=1 but no Vulkan device: {e}"
                );
                eprintln!("SKIPPED: no Vulkan device ({e})");
                return;
            }
        };
        the_backends_decoder_and_the_composed_ops_agree(&device, &[DType::F32, DType::F16]);
    }

    fn the_backends_decoder_and_the_composed_ops_agree(
        device: &burn::DispatchDevice,
        dtypes: &[DType],
    ) {
        use burn::tensor::ops::codes::dequantize_codes_in_chunks;
        let cases = [
            (2, 16, true),  // Q2_K
            (3, 16, false), // Q3_K
            (4, 32, true),  // Q4_K, Q4_1
            (5, 32, false), // Q5_0
            (6, 16, false), // Q6_K
            (8, 32, false), // Q8_0
            (8, 0, false),  // FP8
        ];
        // Wide enough for tasks of several tiles of 64 columns (fewer where that would leave
        // under four tasks a thread), plus a partial group.
        let wide = 64 * (16 * rayon::current_num_threads() + 3);
        let wide_cases = [
            (4, 32, true, wide),
            (8, 32, false, wide),
            (8, 0, false, wide + 5),
        ];
        let narrow_cases = cases
            .map(|(bits, run, offsets)| (bits, run, offsets, if run == 0 { 100 } else { 192 }));
        for (bits, run, offsets, cols) in narrow_cases.into_iter().chain(wide_cases) {
            let host = random_blocks(67, cols, bits, run, offsets);
            let matrix = BlockMatrix::<B>::upload(host, device);
            for &dtype in dtypes {
                let decoded = matrix.dequantize(dtype);
                let (packed, scales, offsets, table) = matrix.primitives();
                let composed = |chunk| {
                    let (packed, scales, offsets, table) = (
                        packed.clone(),
                        scales.clone(),
                        offsets.clone(),
                        table.clone(),
                    );
                    Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(
                        dequantize_codes_in_chunks::<B>(
                            packed,
                            scales,
                            offsets,
                            table,
                            matrix.layout(),
                            dtype.into(),
                            chunk,
                        ),
                    ))
                };
                let bits_of = |t: Tensor<B, 2>| {
                    assert_eq!(t.dtype(), dtype);
                    let data = t.into_data().convert::<f32>();
                    data.into_vec::<f32>()
                        .unwrap()
                        .iter()
                        .map(|v| v.to_bits())
                        .collect::<Vec<_>>()
                };
                let expected = bits_of(composed(1 << 23));
                let case = format!("{bits} bits, run {run}, {cols} columns, {dtype:?}");
                let same = |got: Vec<u32>, what: &str| {
                    let first = got.iter().zip(&expected).position(|(g, e)| g != e);
                    assert!(
                        got.len() == expected.len() && first.is_none(),
                        "{case}, {what}: value {first:?} is {:?}, not {:?}",
                        first.map(|i| f32::from_bits(got[i])),
                        first.map(|i| f32::from_bits(expected[i])),
                    );
                };
                same(bits_of(decoded), "the backend's decoder");
                same(bits_of(composed(cols)), "one row per chunk");
            }
        }
    }

    #[test]
    fn fp8_codes_are_looked_up_and_scaled() {
        // 3 columns: not a whole word of 8-bit codes.
        let stored = Stored {
            dtype: StDtype::F8E4M3,
            bytes: vec![0x38, 0xB8, 0x7E, 0x01, 0x00, 0x80],
        };
        let expected: Vec<f32> = stored.to_f32().iter().map(|v| v * 0.5).collect();
        let host = HostBlocks::from_stored(&stored, 2, 3, Some(0.5)).unwrap();
        assert_eq!(
            code_bytes(stored.dtype, 2, 3),
            Some(host.device_bytes() as u64)
        );
        let got = values(BlockMatrix::<B>::upload(host, &cpu_device()).dequantize(DType::F32));
        assert_eq!(got, expected);
        assert_eq!(got[0], 0.5);
    }

    /// Made-up matrices for timing take what a file's would: Q4_K's 4-bit codes with a scale
    /// and offset per 32, Q6_K's 6-bit codes in bytes with a scale per 16, FP8's bytes.
    #[test]
    fn synthetic_matrices_take_their_types_room() {
        let (rows, cols) = (3, 512);
        for (dtype, bytes) in [
            (
                StDtype::Ggml(GgmlType::Q4K),
                rows * (cols / 8 + 2 * cols / 32),
            ),
            (StDtype::Ggml(GgmlType::Q6K), rows * (cols / 4 + cols / 16)),
            (StDtype::F8E4M3, rows * cols / 4 + 257),
        ] {
            let host = HostBlocks::synthetic(dtype, rows, cols).unwrap();
            assert_eq!(host.device_bytes(), 4 * bytes, "{dtype:?}");
            let values =
                values(BlockMatrix::<B>::upload(host, &cpu_device()).dequantize(DType::F32));
            assert!(
                values.iter().all(|v| v.is_finite() && v.abs() < 1.0),
                "{dtype:?}"
            );
        }
        // Rows that are not whole blocks of 256 values.
        assert!(HostBlocks::synthetic(StDtype::Ggml(GgmlType::Q4K), 1, 320).is_none());
        assert!(HostBlocks::synthetic(StDtype::F16, 1, 32).is_none());
    }

    #[test]
    fn float_types_and_partial_blocks_are_not_kept_in_codes() {
        let float = Stored {
            dtype: StDtype::F16,
            bytes: vec![0; 8],
        };
        assert!(HostBlocks::from_stored(&float, 2, 2, None).is_none());
        // 2 rows of 64 values read as 4 rows of 32 would be whole blocks; 1 row of 128 is not
        // what the bytes hold.
        assert!(HostBlocks::from_stored(&q4_1_rows(), 4, 32, None).is_some());
        assert!(HostBlocks::from_stored(&q4_1_rows(), 1, 96, None).is_none());
    }
}
