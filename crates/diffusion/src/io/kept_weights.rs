//! What a run keeps of a file's weights in their codes (GGUF block-quantized or FP8 matrices,
//! `nn::blocks`): their count and the device bytes they take, read from a file's header for the
//! memory estimate before anything loads.

use crate::io::safetensors::StDtype;
use crate::io::tensor_file::TensorFile;

/// Bits a code of `bits` bits takes in a packed word.
pub(crate) fn word_width(bits: u32) -> u32 {
    match bits {
        0..=2 => 2,
        3..=4 => 4,
        _ => 8,
    }
}

/// The device bytes of a [rows, cols] matrix of `dtype` kept in its codes (`HostBlocks`), or `None`
/// when it would not be (a float type, rows that are not whole blocks).
pub fn code_bytes(dtype: StDtype, rows: usize, cols: usize) -> Option<u64> {
    let (bits, values_per_row, extra) = match dtype {
        StDtype::Ggml(kind) => {
            let form = kind.affine()?;
            if !cols.is_multiple_of(kind.block().0) {
                return None;
            }
            let per_row = cols / form.run * if form.has_offset { 2 } else { 1 };
            (form.code_bits, per_row, 0)
        }
        StDtype::F8E4M3 | StDtype::F8E5M2 => (8, 0, 257),
        _ => return None,
    };
    let words = cols.div_ceil((32 / word_width(bits)) as usize);
    Some(4 * (rows * (words + values_per_row) + extra) as u64)
}

/// The weights of a model part that a run keeps in their file's codes: what the memory estimate
/// counts for them instead of the run's precision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptWeights {
    /// Weights kept in codes.
    pub params: u64,
    /// What the device holds for them.
    pub device_bytes: u64,
    /// The largest such matrix's weights: dequantizing it needs working memory (`dequantize`).
    pub largest: u64,
}

impl KeptWeights {
    /// The matrices of `file` that `part` claims and a run keeps in codes (2-D quantized or FP8
    /// tensors: linear layers' weights).
    pub fn of(file: &TensorFile, part: impl Fn(&str) -> bool) -> Self {
        let mut kept = KeptWeights::default();
        for name in file.names().filter(|n| part(n)) {
            let Some(entry) = file.entry(name) else {
                continue;
            };
            let &[rows, cols] = entry.shape else {
                continue;
            };
            if let Some(bytes) = code_bytes(entry.dtype, rows, cols) {
                let weights = (rows * cols) as u64;
                kept.params += weights;
                kept.device_bytes += bytes;
                kept.largest = kept.largest.max(weights);
            }
        }
        kept
    }

    /// Both parts' kept weights together.
    pub fn plus(self, other: KeptWeights) -> KeptWeights {
        KeptWeights {
            params: self.params + other.params,
            device_bytes: self.device_bytes + other.device_bytes,
            largest: self.largest.max(other.largest),
        }
    }

    /// Working memory while the largest matrix is dequantized to activations of `dtype_bytes`
    /// bytes: the matrix in that dtype. Every backend decodes in one pass into the result alone
    /// (burn-flex on the CPU, burn-cubecl's kernel on the GPUs; see `BlockMatrix::dequantize`).
    pub fn dequantize_bytes(&self, dtype_bytes: u64) -> u64 {
        dtype_bytes * self.largest
    }
}
