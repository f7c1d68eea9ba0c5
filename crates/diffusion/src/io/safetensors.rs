//! A reader for the safetensors format that reads one tensor at a time, straight into the buffer
//! that becomes the tensor's data (so a 3.4 GB UNet never sits in memory twice), and checks the
//! whole file's layout up front, so a truncated or foreign file is reported before any work starts.
//! Not memory-mapped on purpose: mapped pages count in the process's resident memory, and the
//! backends need owned bytes anyway, so a map would add a copy, not save one.
//!
//! Format: an 8-byte little-endian header length, a JSON header mapping each tensor name to
//! `{dtype, shape, data_offsets: [begin, end]}` (offsets relative to the end of the header), then data.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use half::slice::HalfFloatSliceExt;

use crate::error::{DiffusionError, Result};
use crate::io::ggml_blocks::{self, GgmlType};

/// Element types the engine can read as floats: safetensors' float types, FP8, and (from GGUF
/// files) ggml's block-quantized types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StDtype {
    F32,
    F16,
    BF16,
    /// FP8 with 4 exponent bits, bias 7, no infinities (`float8_e4m3fn`), as ComfyUI stores DiTs.
    F8E4M3,
    /// FP8 with 5 exponent bits (`float8_e5m2`): the top byte of an f16.
    F8E5M2,
    /// A ggml block-quantized type, from a GGUF file.
    Ggml(GgmlType),
    /// Any other type (integers, f64): listed so the header parses, refused when read.
    Other(&'static str),
}

impl StDtype {
    fn parse(name: &str) -> Option<(StDtype, usize)> {
        Some(match name {
            "F32" => (StDtype::F32, 4),
            "F16" => (StDtype::F16, 2),
            "BF16" => (StDtype::BF16, 2),
            "F8_E4M3" => (StDtype::F8E4M3, 1),
            "F8_E5M2" => (StDtype::F8E5M2, 1),
            "F64" => (StDtype::Other("F64"), 8),
            "I64" => (StDtype::Other("I64"), 8),
            "U64" => (StDtype::Other("U64"), 8),
            "I32" => (StDtype::Other("I32"), 4),
            "U32" => (StDtype::Other("U32"), 4),
            "I16" => (StDtype::Other("I16"), 2),
            "U16" => (StDtype::Other("U16"), 2),
            "I8" => (StDtype::Other("I8"), 1),
            "U8" => (StDtype::Other("U8"), 1),
            "BOOL" => (StDtype::Other("BOOL"), 1),
            _ => return None,
        })
    }

    /// A GGUF tensor's type: its plain float types as safetensors' own.
    pub fn from_ggml(kind: GgmlType) -> StDtype {
        match kind {
            GgmlType::F32 => StDtype::F32,
            GgmlType::F16 => StDtype::F16,
            GgmlType::BF16 => StDtype::BF16,
            quantized => StDtype::Ggml(quantized),
        }
    }

    /// The type's name as its file format spells it (`F8_E4M3`, `Q4_K`).
    pub fn name(self) -> &'static str {
        match self {
            StDtype::F32 => "F32",
            StDtype::F16 => "F16",
            StDtype::BF16 => "BF16",
            StDtype::F8E4M3 => "F8_E4M3",
            StDtype::F8E5M2 => "F8_E5M2",
            StDtype::Ggml(kind) => kind.name(),
            StDtype::Other(name) => name,
        }
    }
}

/// An FP8 E4M3FN value as f32 (exact): bias 7, subnormals below exponent 1, S.1111.111 is NaN.
pub fn f8_e4m3_to_f32(bits: u8) -> f32 {
    let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
    let exponent = ((bits >> 3) & 0x0F) as i32;
    let mantissa = (bits & 0x07) as f32;
    if exponent == 0x0F && bits & 0x07 == 0x07 {
        return f32::NAN;
    }
    let magnitude = if exponent == 0 {
        mantissa / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + mantissa / 8.0) * 2f32.powi(exponent - 7)
    };
    sign * magnitude
}

/// An FP8 E5M2 value as f32 (exact): the same bits as the top byte of an f16.
pub fn f8_e5m2_to_f32(bits: u8) -> f32 {
    half::f16::from_bits((bits as u16) << 8).to_f32()
}

#[derive(Debug, Clone)]
pub struct TensorInfo {
    pub dtype: StDtype,
    pub shape: Vec<usize>,
    begin: u64,
    end: u64,
}

impl TensorInfo {
    /// Where the tensor's bytes are, from the start of the file's data.
    pub fn data_range(&self) -> std::ops::Range<u64> {
        self.begin..self.end
    }
}

/// An open safetensors file whose header has been checked against the file's length.
pub struct SafeTensors {
    path: PathBuf,
    file: File,
    data_start: u64,
    tensors: BTreeMap<String, TensorInfo>,
}

/// Headers larger than this are not safetensors files (the format caps them at 100 MB).
const MAX_HEADER: u64 = 100 * 1024 * 1024;

impl SafeTensors {
    pub fn open(path: &Path) -> Result<Self> {
        let mut file = File::open(path).map_err(|e| DiffusionError::io(path, e))?;
        let file_len = file
            .metadata()
            .map_err(|e| DiffusionError::io(path, e))?
            .len();
        let (data_start, tensors) = read_header(&mut file, file_len, path)?;
        Ok(SafeTensors {
            path: path.to_path_buf(),
            file,
            data_start,
            tensors,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(|s| s.as_str())
    }

    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.get(name)
    }

    /// Reads one tensor's bytes as stored (little-endian, the file's element type) into a buffer
    /// of its own: the one copy a load makes, since that buffer becomes the tensor's data.
    pub fn read(&mut self, name: &str) -> Result<Stored> {
        let info = self
            .tensors
            .get(name)
            .ok_or_else(|| DiffusionError::Tensor {
                path: self.path.clone(),
                tensor: name.to_string(),
                problem: "is missing".into(),
            })?;
        let range = self.data_start + info.begin..self.data_start + info.end;
        read_stored(&mut self.file, &self.path, name, info.dtype, range)
    }

    /// Reads one tensor as f32 values in row-major order.
    pub fn read_f32(&mut self, name: &str) -> Result<Vec<f32>> {
        Ok(self.read(name)?.to_f32())
    }
}

/// Reads the bytes at `range` of `file` (at `path`) as tensor `name` of type `dtype`, into a
/// buffer of its own; a type that holds no weights is refused by name. For both formats' readers.
pub(crate) fn read_stored(
    file: &mut File,
    path: &Path,
    name: &str,
    dtype: StDtype,
    range: std::ops::Range<u64>,
) -> Result<Stored> {
    if let StDtype::Other(kind) = dtype {
        return Err(DiffusionError::Tensor {
            path: path.to_path_buf(),
            tensor: name.to_string(),
            problem: format!(
                "has element type {kind}, which is not a weight type SD Bench reads (F32, F16, BF16, FP8, GGUF's quantized types)"
            ),
        });
    }
    let mut bytes = vec![0u8; (range.end - range.start) as usize];
    file.seek(SeekFrom::Start(range.start))
        .and_then(|_| file.read_exact(&mut bytes))
        .map_err(|e| DiffusionError::io(path, e))?;
    Ok(Stored { dtype, bytes })
}

/// A tensor's bytes as the file stores them: little-endian floats, FP8, or ggml blocks.
#[derive(Debug, Clone)]
pub struct Stored {
    pub dtype: StDtype,
    pub bytes: Vec<u8>,
}

impl Stored {
    pub fn to_f32(&self) -> Vec<f32> {
        if self.dtype == StDtype::F16 {
            // The vectorised conversion (F16C where the CPU has it), when the bytes are aligned.
            if let Ok(halves) = bytemuck::try_cast_slice::<u8, half::f16>(&self.bytes) {
                let mut out = vec![0f32; halves.len()];
                halves.convert_to_f32_slice(&mut out);
                return out;
            }
        }
        if let StDtype::Ggml(kind) = self.dtype {
            return self.dequantized(kind);
        }
        self.convert()
    }

    fn dequantized(&self, kind: GgmlType) -> Vec<f32> {
        let (values, bytes) = kind.block();
        let mut out = vec![0f32; self.bytes.len() / bytes * values];
        ggml_blocks::dequantize(kind, &self.bytes, &mut out);
        out
    }

    pub fn to_f16(&self) -> Vec<half::f16> {
        self.convert()
    }

    /// bf16 values, each rounded once from what the file holds (f16 values convert exactly).
    pub fn to_bf16(&self) -> Vec<half::bf16> {
        self.convert()
    }

    /// Each stored value as `T`, rounded once (through f32, which holds f16 and bf16 exactly).
    /// An unsupported dtype gives no values (`read` refuses those before reading).
    fn convert<T: FromStored>(&self) -> Vec<T> {
        match self.dtype {
            StDtype::F32 => self
                .bytes
                .chunks_exact(4)
                .map(|c| T::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
            StDtype::F16 => self
                .bytes
                .chunks_exact(2)
                .map(|c| T::from_f32(half::f16::from_le_bytes([c[0], c[1]]).to_f32()))
                .collect(),
            StDtype::BF16 => self
                .bytes
                .chunks_exact(2)
                .map(|c| T::from_f32(half::bf16::from_le_bytes([c[0], c[1]]).to_f32()))
                .collect(),
            // Every FP8 value is exact in f16 and bf16: one rounding-free step.
            StDtype::F8E4M3 => self
                .bytes
                .iter()
                .map(|&b| T::from_f32(f8_e4m3_to_f32(b)))
                .collect(),
            StDtype::F8E5M2 => self
                .bytes
                .iter()
                .map(|&b| T::from_f32(f8_e5m2_to_f32(b)))
                .collect(),
            StDtype::Ggml(kind) => self
                .dequantized(kind)
                .into_iter()
                .map(T::from_f32)
                .collect(),
            StDtype::Other(_) => Vec::new(),
        }
    }
}

/// Reads and checks a safetensors header from `file` (at its start; `file_len` bytes long):
/// where the data starts and each tensor's dtype, shape and byte range, every range inside the
/// file and of the size its shape needs. Sizes are checked before anything is allocated; `path`
/// names the file in errors.
pub fn read_header(
    file: &mut impl Read,
    file_len: u64,
    path: &Path,
) -> Result<(u64, BTreeMap<String, TensorInfo>)> {
    let bad = |problem: String| DiffusionError::Weights {
        path: path.to_path_buf(),
        problem,
    };
    if file_len < 8 {
        return Err(bad(format!(
            "is {file_len} bytes long: truncated or not a safetensors file"
        )));
    }
    let mut len_bytes = [0u8; 8];
    file.read_exact(&mut len_bytes)
        .map_err(|e| DiffusionError::io(path, e))?;
    let header_len = u64::from_le_bytes(len_bytes);
    if header_len > MAX_HEADER || header_len > file_len - 8 {
        return Err(bad(format!(
            "not a safetensors file, or truncated (header length {header_len} but the file has {file_len} bytes)"
        )));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header)
        .map_err(|e| DiffusionError::io(path, e))?;
    let json: serde_json::Value = serde_json::from_slice(&header)
        .map_err(|e| bad(format!("not a safetensors file: header is not JSON ({e})")))?;
    let map = json
        .as_object()
        .ok_or_else(|| bad("not a safetensors file: header is not a JSON object".into()))?;
    let data_start = 8 + header_len;
    let data_len = file_len - data_start;
    let mut tensors = BTreeMap::new();
    for (name, entry) in map {
        if name == "__metadata__" {
            continue;
        }
        let info = parse_entry(entry).ok_or_else(|| DiffusionError::Tensor {
            path: path.to_path_buf(),
            tensor: name.clone(),
            problem: "has a malformed header entry".into(),
        })?;
        let (info, elem_size) = info;
        // Non-zero dimensions as 1, so no product of the shape in any order overflows later (a
        // zero dimension made the product 0 and hid the overflow of the others).
        let bytes = info
            .shape
            .iter()
            .try_fold(elem_size as u64, |n, &d| n.checked_mul((d as u64).max(1)))
            .map(|_| elem_size as u64 * info.shape.iter().map(|&d| d as u64).product::<u64>());
        if info.end < info.begin || Some(info.end - info.begin) != bytes {
            return Err(DiffusionError::Tensor {
                path: path.to_path_buf(),
                tensor: name.clone(),
                problem: format!(
                    "has {} bytes of data but shape {:?} needs {}",
                    info.end.saturating_sub(info.begin),
                    info.shape,
                    bytes.map_or("more than 2^64".to_string(), |b| b.to_string())
                ),
            });
        }
        if info.end > data_len {
            return Err(DiffusionError::Tensor {
                path: path.to_path_buf(),
                tensor: name.clone(),
                problem: format!(
                    "lies past the end of the file ({} of {} data bytes present): the file is truncated; download it again",
                    data_len, info.end
                ),
            });
        }
        tensors.insert(name.clone(), info);
    }
    Ok((data_start, tensors))
}

/// The element types a stored tensor converts to.
trait FromStored {
    fn from_f32(x: f32) -> Self;
}

impl FromStored for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
}

impl FromStored for half::f16 {
    fn from_f32(x: f32) -> Self {
        half::f16::from_f32(x)
    }
}

impl FromStored for half::bf16 {
    fn from_f32(x: f32) -> Self {
        half::bf16::from_f32(x)
    }
}

fn parse_entry(entry: &serde_json::Value) -> Option<(TensorInfo, usize)> {
    let (dtype, size) = StDtype::parse(entry.get("dtype")?.as_str()?)?;
    let shape = entry
        .get("shape")?
        .as_array()?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize))
        .collect::<Option<Vec<_>>>()?;
    let offsets = entry.get("data_offsets")?.as_array()?;
    if offsets.len() != 2 {
        return None;
    }
    Some((
        TensorInfo {
            dtype,
            shape,
            begin: offsets[0].as_u64()?,
            end: offsets[1].as_u64()?,
        },
        size,
    ))
}

/// Writes f32 tensors as a safetensors file (used by tests to make broken and small model folders).
pub fn write_f32(path: &Path, tensors: &[(&str, Vec<usize>, &[f32])]) -> std::io::Result<()> {
    let mut header = serde_json::Map::new();
    let mut offset = 0u64;
    for (name, shape, data) in tensors {
        let end = offset + 4 * data.len() as u64;
        header.insert(
            name.to_string(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [offset, end]}),
        );
        offset = end;
    }
    let mut header = serde_json::to_vec(&serde_json::Value::Object(header))?;
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset as usize);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(&header);
    for (_, _, data) in tensors {
        for v in data.iter() {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(path, out)
}
