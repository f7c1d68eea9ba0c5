//! Where a model's tensors come from: a `WeightSource` (a tensor file, `file_weights.rs`, or
//! deterministic synthetic values, `synthetic_weights.rs`) gives each tensor by its
//! diffusers/transformers name and expected shape, and at the end reports any tensor the model
//! never asked for. `nn::loader::Loader` puts them on a device as layers.

use std::path::{Path, PathBuf};

use burn::tensor::DType;

use crate::error::{DiffusionError, Result};
use crate::io::safetensors::Stored;

// A file's little-endian bytes become tensor data as they are.
const _: () = assert!(
    cfg!(target_endian = "little"),
    "SD Bench reads safetensors bytes as native little-endian values"
);

/// Numeric precision of weights and activations. Norm statistics, softmax, timestep embeddings and
/// scheduler arithmetic always run in f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    F32,
    F16,
    /// bfloat16: f32's range with 8 significant bits (f16 has 11), the dtype FLUX.2's weights are
    /// published in.
    Bf16,
}

impl Precision {
    pub fn dtype(self) -> DType {
        match self {
            Precision::F32 => DType::F32,
            Precision::F16 => DType::F16,
            Precision::Bf16 => DType::BF16,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::Bf16 => "bf16",
        }
    }

    /// Bytes per value.
    pub fn bytes(self) -> u64 {
        match self {
            Precision::F32 => 4,
            Precision::F16 | Precision::Bf16 => 2,
        }
    }
}

/// How a synthetic tensor is initialised; a file source ignores it.
#[derive(Debug, Clone, Copy)]
pub enum Init {
    Ones,
    Zeros,
    /// Uniform with variance 1/fan_in, which keeps activations at unit scale through a layer.
    FanIn(usize),
}

/// A tensor's values, row-major, as a source gives them.
pub enum Values {
    /// A file's bytes in the file's element type.
    Stored(Stored),
    /// A file's bytes times one number (a scaled-FP8 file's `scale_weight`).
    Scaled { stored: Stored, scale: f32 },
    /// Generated values.
    F32(Vec<f32>),
}

impl Values {
    /// The values in f32 (a file's decoded, a scaled file's times its scale).
    pub fn into_f32(self) -> Vec<f32> {
        match self {
            Values::F32(values) => values,
            Values::Stored(stored) => stored.to_f32(),
            Values::Scaled { stored, scale } => {
                let mut values = stored.to_f32();
                values.iter_mut().for_each(|v| *v *= scale);
                values
            }
        }
    }

    /// Rows `rows` (in that order) of a row-major tensor of `row_count` rows.
    pub(crate) fn select_rows(&self, row_count: usize, rows: &[usize]) -> Values {
        fn pick<T: Copy>(values: &[T], row_count: usize, rows: &[usize]) -> Vec<T> {
            let run = values.len() / row_count.max(1);
            let mut out = Vec::with_capacity(rows.len() * run);
            for &row in rows {
                out.extend_from_slice(&values[row * run..(row + 1) * run]);
            }
            out
        }
        let stored = |s: &Stored| Stored {
            dtype: s.dtype,
            bytes: pick(&s.bytes, row_count, rows),
        };
        match self {
            Values::F32(v) => Values::F32(pick(v, row_count, rows)),
            Values::Stored(s) => Values::Stored(stored(s)),
            Values::Scaled { stored: s, scale } => Values::Scaled {
                stored: stored(s),
                scale: *scale,
            },
        }
    }
}

/// A provider of named tensors.
pub trait WeightSource {
    /// The tensor `name`. `shape` is what the model's config needs; a source that holds a
    /// different shape returns an error naming both.
    fn take(&mut self, name: &str, shape: &[usize], init: Init) -> Result<Values>;
    /// The matrix `name`, stored as [`rows`, `cols`], as its transpose ([`cols`, `rows`],
    /// row-major), where the source makes that as cheaply as the stored order (synthetic values,
    /// each drawn by its index); `None` where it does not, and the caller transposes `take`'s.
    fn take_transposed(
        &mut self,
        _name: &str,
        _rows: usize,
        _cols: usize,
        _init: Init,
    ) -> Result<Option<Values>> {
        Ok(None)
    }
    /// Called once every tensor has been taken: an error names any tensor that was not used.
    fn finish(&mut self) -> Result<()>;
}

/// Picks a component's weights file: the `.fp16` variant first when running in f16, the plain file
/// first otherwise (f16 values would lose bf16's range), falling back to the other when only one
/// exists.
pub fn choose_weights_file(folder: &Path, stem: &str, precision: Precision) -> Result<PathBuf> {
    let plain = folder.join(format!("{stem}.safetensors"));
    let fp16 = folder.join(format!("{stem}.fp16.safetensors"));
    let order = match precision {
        Precision::F16 => [&fp16, &plain],
        Precision::F32 | Precision::Bf16 => [&plain, &fp16],
    };
    if let Some(found) = order.iter().find(|p| p.is_file()) {
        return Ok((*found).clone());
    }
    let bin = folder.join(format!("{stem}.bin"));
    let problem = if bin.is_file() {
        format!(
            "has only PyTorch pickle weights ({}); SD Bench reads safetensors: download the .safetensors files",
            bin.display()
        )
    } else {
        format!(
            "has no weights file: expected {} or {}",
            plain.display(),
            fp16.display()
        )
    };
    Err(DiffusionError::ModelFolder {
        path: folder.to_path_buf(),
        problem,
    })
}
