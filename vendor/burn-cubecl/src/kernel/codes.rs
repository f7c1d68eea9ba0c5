//! (SD Bench) `ModuleOps::dequantize_codes` (declared in vendor/burn-backend) as one kernel: a
//! matrix kept in a model file's codes (GGUF blocks, FP8) turned into values just before a layer
//! uses it. The composed default it replaces ran a dozen tensor ops over 8 Mi values at a time,
//! each with 4-byte working copies; this reads each code once and writes the output dtype.

use crate::{
    CubeRuntime,
    kernel::{into_contiguous, utils::address_type},
    ops::numeric::empty_device_dtype,
    tensor::CubeTensor,
};
use burn_backend::{DType, Shape, TensorMetadata, ops::codes::CodeLayout};
use burn_std::FloatDType;
use cubecl::{calculate_cube_count_elemwise, prelude::*};

/// One output value per unit, in the arithmetic of [CodeLayout]: `table[code] * scales[0]`, or
/// `(code - code_offset) * scale (+ offset)` with the scale (and offset) of the value's run, in
/// f32, then cast once to `F`. Absent offsets and table are bound to `scales` and never read.
#[cube(launch_unchecked, address_type = "dynamic")]
#[allow(clippy::too_many_arguments)]
fn dequantize_codes_kernel<F: Float>(
    packed: &Tensor<i32>,
    scales: &Tensor<f32>,
    offsets: &Tensor<f32>,
    table: &Tensor<f32>,
    output: &mut Tensor<F>,
    cols: usize,
    words: usize,
    per_word: usize,
    width: u32,
    run: usize,
    code_offset: f32,
    #[comptime] has_offsets: bool,
    #[comptime] has_table: bool,
    #[define(F)] _dtype: StorageType,
) {
    if ABSOLUTE_POS >= output.len() {
        terminate!();
    }
    let row = ABSOLUTE_POS / cols;
    let col = ABSOLUTE_POS % cols;
    let word = u32::cast_from(packed[row * words + col / per_word]);
    let shift = (col % per_word) as u32 * width;
    let code = (word >> shift) & ((1u32 << width) - 1);
    let value = if has_table {
        table[code as usize] * scales[0]
    } else {
        let group = row * (cols / run) + col / run;
        let scaled = (f32::cast_from(code) - code_offset) * scales[group];
        if has_offsets {
            scaled + offsets[group]
        } else {
            scaled
        }
    };
    output[ABSOLUTE_POS] = F::cast_from(value);
}

/// See [ModuleOps::dequantize_codes](burn_backend::ops::ModuleOps::dequantize_codes). `None` where
/// the inputs are not what the kernel reads (i32 codes, f32 scales, offsets and table, in the
/// layout's sizes) or the output dtype is not f32, f16 or bf16: the caller then runs the composed
/// default, which checks and reports as the other backends do.
pub fn dequantize_codes<R: CubeRuntime>(
    packed: &CubeTensor<R>,
    scales: &CubeTensor<R>,
    offsets: Option<&CubeTensor<R>>,
    table: Option<&CubeTensor<R>>,
    layout: CodeLayout,
    dtype: FloatDType,
) -> Option<CubeTensor<R>> {
    let values = layout.rows * layout.cols;
    let groups = match table {
        Some(_) => 1,
        None if layout.run == 0 || layout.cols % layout.run != 0 => return None,
        None => layout.rows * (layout.cols / layout.run),
    };
    let fits = |tensor: &CubeTensor<R>, dtype: DType, len: usize| {
        tensor.dtype == dtype && tensor.shape().num_elements() == len
    };
    let inputs_fit = (1..=8).contains(&layout.width)
        && fits(packed, DType::I32, layout.rows * layout.words())
        && fits(scales, DType::F32, groups)
        && offsets.is_none_or(|o| table.is_none() && fits(o, DType::F32, groups))
        && table.is_none_or(|t| fits(t, DType::F32, 256));
    if !inputs_fit || !matches!(dtype, FloatDType::F32 | FloatDType::F16 | FloatDType::BF16) {
        return None;
    }
    let packed = into_contiguous(packed.clone());
    let scales = into_contiguous(scales.clone());
    let offsets = offsets.map(|o| into_contiguous(o.clone()));
    let table = table.map(|t| into_contiguous(t.clone()));
    let output = empty_device_dtype(
        packed.client.clone(),
        packed.device.clone(),
        Shape::from(vec![layout.rows, layout.cols]),
        DType::from(dtype),
    );
    if values == 0 {
        return Some(output);
    }
    let client = packed.client.clone();
    let cube_dim = CubeDim::new(&client, values);
    let cube_count = calculate_cube_count_elemwise(&client, values, cube_dim);
    let address = address_type!(packed, scales, output);
    let (has_offsets, has_table) = (offsets.is_some(), table.is_some());
    let offsets = offsets.unwrap_or_else(|| scales.clone());
    let table = table.unwrap_or_else(|| scales.clone());
    // Safety: every index the kernel makes is in bounds for the sizes checked above (a code is
    // under 256, a group under `groups`, a word under the packed words).
    unsafe {
        dequantize_codes_kernel::launch_unchecked(
            &client,
            cube_count,
            cube_dim,
            address,
            packed.into_tensor_arg(),
            scales.into_tensor_arg(),
            offsets.into_tensor_arg(),
            table.into_tensor_arg(),
            output.clone().into_tensor_arg(),
            layout.cols,
            layout.words(),
            layout.per_word(),
            layout.width,
            layout.run.max(1),
            layout.code_offset as f32,
            has_offsets,
            has_table,
            DType::from(dtype).into(),
        );
    }
    Some(output)
}
