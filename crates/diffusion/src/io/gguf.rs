//! A reader for GGUF files (ggml's `docs/gguf.md`, versions 2 and 3), as stable-diffusion.cpp and
//! ComfyUI-GGUF write them: a header of typed key-value metadata, a table of tensors (name, shape,
//! ggml element type, offset), then the tensors' data, aligned. Tensors are read one at a time in
//! their stored (possibly quantized) form; `Stored::to_*` decodes them.
//!
//! Our own parser rather than a crate's: the file comes from a stranger, so every count, length
//! and offset is checked against the bytes that remain before anything is allocated, and the
//! crates we looked at allocate what the header declares.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{DiffusionError, Result};
use crate::io::ggml_blocks::GgmlType;
use crate::io::safetensors::{read_stored, StDtype, Stored};

/// The first four bytes of every GGUF file.
pub const MAGIC: &[u8; 4] = b"GGUF";

/// Dimensions a tensor may have (ggml's GGML_MAX_DIMS).
const MAX_DIMS: u32 = 4;
/// Longest key, tensor name or string value accepted; real files use well under 1 KB.
const MAX_STRING: u64 = 1 << 20;
/// Array nesting accepted in metadata (GGUF files use one level).
const MAX_NESTING: u32 = 4;

/// One tensor of a GGUF file: its shape in row-major order (ggml lists dimensions innermost
/// first; this is reversed), its ggml type, and where its bytes are from the start of the file.
#[derive(Debug, Clone)]
pub struct GgufTensor {
    pub shape: Vec<usize>,
    /// The element type; integer and f64 tensors are `StDtype::Other`, refused when read.
    pub dtype: StDtype,
    start: u64,
    len: u64,
}

impl GgufTensor {
    /// Where the tensor's bytes are, from the start of the file.
    pub fn data_range(&self) -> std::ops::Range<u64> {
        self.start..self.start + self.len
    }
}

/// The metadata values SD Bench looks at; the others are skipped, bounds-checked.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    Text(String),
    /// An array, by its element count (its values are skipped).
    Array(u64),
}

/// An open GGUF file whose header and tensor table have been checked against the file's length.
pub struct Gguf {
    path: PathBuf,
    file: File,
    metadata: BTreeMap<String, MetaValue>,
    tensors: BTreeMap<String, GgufTensor>,
}

impl Gguf {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| DiffusionError::io(path, e))?;
        let file_len = file
            .metadata()
            .map_err(|e| DiffusionError::io(path, e))?
            .len();
        let mut reader = BufReader::new(file);
        let (metadata, tensors) = read_header(&mut reader, file_len, path)?;
        Ok(Gguf {
            path: path.to_path_buf(),
            file: reader.into_inner(),
            metadata,
            tensors,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(|s| s.as_str())
    }

    pub fn tensor(&self, name: &str) -> Option<&GgufTensor> {
        self.tensors.get(name)
    }

    pub fn metadata(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.get(key)
    }

    /// One tensor's bytes as stored; its type travels with them.
    pub fn read(&mut self, name: &str) -> Result<Stored> {
        let info = self
            .tensors
            .get(name)
            .ok_or_else(|| DiffusionError::Tensor {
                path: self.path.clone(),
                tensor: name.to_string(),
                problem: "is missing".into(),
            })?;
        read_stored(
            &mut self.file,
            &self.path,
            name,
            info.dtype,
            info.data_range(),
        )
    }
}

/// Reads a GGUF header, counting the bytes left so no length can ask for more than the file has.
struct Cursor<'a, R> {
    inner: &'a mut R,
    /// Bytes read so far.
    at: u64,
    len: u64,
    path: &'a Path,
}

impl<R: Read> Cursor<'_, R> {
    fn bad(&self, problem: impl Into<String>) -> DiffusionError {
        DiffusionError::Weights {
            path: self.path.to_path_buf(),
            problem: problem.into(),
        }
    }

    fn remaining(&self) -> u64 {
        self.len - self.at
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        if self.remaining() < N as u64 {
            return Err(self.truncated(what));
        }
        let mut out = [0u8; N];
        self.inner
            .read_exact(&mut out)
            .map_err(|e| DiffusionError::io(self.path, e))?;
        self.at += N as u64;
        Ok(out)
    }

    fn truncated(&self, what: &str) -> DiffusionError {
        self.bad(format!(
            "is truncated: its header ends inside {what} at byte {} of {}; download the file again",
            self.at, self.len
        ))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<()> {
        if self.remaining() < n {
            return Err(self.truncated(what));
        }
        let copied = std::io::copy(&mut (&mut *self.inner).take(n), &mut std::io::sink())
            .map_err(|e| DiffusionError::io(self.path, e))?;
        if copied != n {
            return Err(self.truncated(what));
        }
        self.at += n;
        Ok(())
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let len = self.u64(what)?;
        if len > MAX_STRING {
            return Err(self.bad(format!(
                "is not a GGUF file this reader accepts: {what} is {len} bytes long"
            )));
        }
        if len > self.remaining() {
            return Err(self.truncated(what));
        }
        let mut bytes = vec![0u8; len as usize];
        self.inner
            .read_exact(&mut bytes)
            .map_err(|e| DiffusionError::io(self.path, e))?;
        self.at += len;
        String::from_utf8(bytes).map_err(|_| self.bad(format!("has {what} that is not UTF-8")))
    }

    /// A metadata value of GGUF type `kind`.
    fn value(&mut self, kind: u32, key: &str, depth: u32) -> Result<MetaValue> {
        Ok(match kind {
            0 => MetaValue::Int(self.bytes::<1>(key)?[0] as i128),
            1 => MetaValue::Int(self.bytes::<1>(key)?[0] as i8 as i128),
            2 => MetaValue::Int(u16::from_le_bytes(self.bytes(key)?) as i128),
            3 => MetaValue::Int(i16::from_le_bytes(self.bytes(key)?) as i128),
            4 => MetaValue::Int(self.u32(key)? as i128),
            5 => MetaValue::Int(i32::from_le_bytes(self.bytes(key)?) as i128),
            6 => MetaValue::Float(f32::from_le_bytes(self.bytes(key)?) as f64),
            7 => MetaValue::Bool(self.bytes::<1>(key)?[0] != 0),
            8 => MetaValue::Text(self.string(key)?),
            9 => {
                if depth >= MAX_NESTING {
                    return Err(self.bad(format!("has metadata `{key}` nested too deeply")));
                }
                let element = self.u32(key)?;
                let count = self.u64(key)?;
                // Every element takes at least one byte: a count past the file's end is refused
                // before the loop starts.
                if count > self.remaining() {
                    return Err(self.truncated(key));
                }
                match fixed_size(element) {
                    Some(size) => {
                        let total = count.checked_mul(size).ok_or_else(|| self.truncated(key))?;
                        self.skip(total, key)?;
                    }
                    None => {
                        for _ in 0..count {
                            self.value(element, key, depth + 1)?;
                        }
                    }
                }
                MetaValue::Array(count)
            }
            10 => MetaValue::Int(self.u64(key)? as i128),
            11 => MetaValue::Int(i64::from_le_bytes(self.bytes(key)?) as i128),
            12 => MetaValue::Float(f64::from_le_bytes(self.bytes(key)?)),
            other => {
                return Err(self.bad(format!(
                    "has metadata `{key}` of unknown value type {other}: not a GGUF file, or a newer version than SD Bench reads"
                )))
            }
        })
    }
}

/// Bytes per value of the fixed-size metadata types.
fn fixed_size(kind: u32) -> Option<u64> {
    match kind {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// Reads and checks a GGUF header from `file` (at its start; `file_len` bytes long): the metadata
/// and each tensor's shape, type and byte range, every range inside the file and of the size its
/// shape and type need. `path` names the file in errors.
pub fn read_header(
    file: &mut impl Read,
    file_len: u64,
    path: &Path,
) -> Result<(BTreeMap<String, MetaValue>, BTreeMap<String, GgufTensor>)> {
    let mut c = Cursor {
        inner: file,
        at: 0,
        len: file_len,
        path,
    };
    let magic: [u8; 4] = c.bytes("the magic number")?;
    if &magic != MAGIC {
        return Err(c.bad("is not a GGUF file (it does not start with `GGUF`)"));
    }
    let version = c.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(c.bad(format!(
            "is GGUF version {version}; SD Bench reads versions 2 and 3"
        )));
    }
    let tensor_count = c.u64("the tensor count")?;
    let kv_count = c.u64("the metadata count")?;
    // A tensor entry takes at least 8 + 4 + 8 + 4 + 8 bytes and a key-value pair 8 + 4 + 1.
    if tensor_count > c.remaining() / 32 || kv_count > c.remaining() / 13 {
        return Err(c.truncated("the counts"));
    }
    let mut metadata = BTreeMap::new();
    for _ in 0..kv_count {
        let key = c.string("a metadata key")?;
        let kind = c.u32(&key)?;
        let value = c.value(kind, &key, 0)?;
        metadata.insert(key, value);
    }
    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(MetaValue::Int(a)) if *a > 0 && *a <= 1 << 16 && (*a as u64).is_power_of_two() => {
            *a as u64
        }
        Some(other) => {
            return Err(c.bad(format!(
                "has general.alignment {other:?}; expected a power of two"
            )))
        }
    };
    let mut entries = Vec::new();
    for _ in 0..tensor_count {
        let name = c.string("a tensor name")?;
        let dims = c.u32(&name)?;
        // gguf-py writes a scalar with no dimensions.
        if dims > MAX_DIMS {
            return Err(tensor_error(path, &name, format!("has {dims} dimensions")));
        }
        let mut shape = Vec::with_capacity(dims as usize);
        for _ in 0..dims {
            shape.push(c.u64(&name)?);
        }
        let kind = element_kind(c.u32(&name)?)
            .map_err(|problem| tensor_error(path, &name, format!("has {problem}")))?;
        let offset = c.u64(&name)?;
        entries.push((name, shape, kind, offset));
    }
    let data_start = c.at.div_ceil(alignment) * alignment;
    // Even an empty tensor starts in the data section: a file that ends before it (its header's
    // padding cut) is truncated (the coverage-guided fuzzer's finding).
    if !entries.is_empty() && data_start > file_len {
        return Err(DiffusionError::Weights {
            path: path.to_path_buf(),
            problem: format!(
                "ends at byte {file_len}, before its tensor data (from byte {data_start}): the file is truncated; download it again"
            ),
        });
    }
    let data_len = file_len - data_start.min(file_len);
    let mut tensors = BTreeMap::new();
    for (name, dims, kind, offset) in entries {
        let tensor = checked_tensor(
            path, &name, &dims, kind, offset, alignment, data_start, data_len,
        )?;
        if tensors.insert(name.clone(), tensor).is_some() {
            return Err(tensor_error(path, &name, "is listed twice".to_string()));
        }
    }
    Ok((metadata, tensors))
}

/// A tensor entry of the header, checked: its size fits 64 bits, it holds whole blocks (its rows
/// too), it is aligned and it lies inside the `data_len` bytes of data from `data_start`.
#[allow(clippy::too_many_arguments)]
fn checked_tensor(
    path: &Path,
    name: &str,
    dims: &[u64],
    (dtype, (block_values, block_bytes)): (StDtype, (usize, usize)),
    offset: u64,
    alignment: u64,
    data_start: u64,
    data_len: u64,
) -> Result<GgufTensor> {
    // The product of the non-zero dimensions must fit too: code that multiplies a shape in
    // another order (or skips an empty dimension) must not overflow (the fuzzer's finding).
    let count = dims
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d.max(1)))
        .map(|_| dims.iter().product::<u64>());
    let len = count
        .and_then(|n| (n / block_values as u64).checked_mul(block_bytes as u64))
        .ok_or_else(|| {
            tensor_error(
                path,
                name,
                format!("has shape {dims:?}, whose size overflows 64 bits"),
            )
        })?;
    if count.is_some_and(|n| n % block_values as u64 != 0) {
        return Err(tensor_error(
            path,
            name,
            format!(
                "has shape {dims:?}, which is not a whole number of {} blocks of {block_values} values",
                dtype.name()
            ),
        ));
    }
    if !offset.is_multiple_of(alignment) {
        return Err(tensor_error(
            path,
            name,
            format!("starts at offset {offset}, not aligned to {alignment} bytes"),
        ));
    }
    if offset.checked_add(len).is_none_or(|end| end > data_len) {
        return Err(tensor_error(
            path,
            name,
            format!(
                "lies past the end of the file (bytes {offset}..{} of {data_len} data bytes): the file is truncated; download it again",
                offset.saturating_add(len)
            ),
        ));
    }
    // Rows of a quantized tensor are whole blocks: its innermost dimension must be too.
    if dims
        .first()
        .is_some_and(|&row| row % block_values as u64 != 0)
    {
        return Err(tensor_error(
            path,
            name,
            format!(
                "has rows of {} values, not whole {} blocks",
                dims[0],
                dtype.name()
            ),
        ));
    }
    let shape = dims.iter().rev().map(|&d| d as usize).collect();
    Ok(GgufTensor {
        shape,
        dtype,
        start: data_start + offset,
        len,
    })
}

/// A tensor's element type by ggml's id, with its block (values, bytes): the decodable types,
/// and the integer and f64 types models files carry beside their weights (listed, not read).
fn element_kind(id: u32) -> std::result::Result<(StDtype, (usize, usize)), String> {
    let other = |name: &'static str, bytes: usize| Ok((StDtype::Other(name), (1, bytes)));
    match id {
        24 => other("I8", 1),
        25 => other("I16", 2),
        26 => other("I32", 4),
        27 => other("I64", 8),
        28 => other("F64", 8),
        _ => GgmlType::from_id(id).map(|kind| (StDtype::from_ggml(kind), kind.block())),
    }
}

fn tensor_error(path: &Path, name: &str, problem: String) -> DiffusionError {
    DiffusionError::Tensor {
        path: path.to_path_buf(),
        tensor: name.to_string(),
        problem,
    }
}

/// Writes a GGUF file of F32 tensors (and the given string metadata): what the tests use to make
/// small and broken files. Quantized fixtures come from gguf-py (scripts/make_weight_format_fixtures.py).
pub fn write_f32(
    path: &Path,
    metadata: &[(&str, &str)],
    tensors: &[(&str, Vec<usize>, &[f32])],
) -> std::io::Result<()> {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    for (key, value) in metadata {
        string(&mut out, key);
        out.extend_from_slice(&8u32.to_le_bytes());
        string(&mut out, value);
    }
    let mut offset = 0u64;
    for (name, shape, data) in tensors {
        string(&mut out, name);
        out.extend_from_slice(&(shape.len() as u32).to_le_bytes());
        for d in shape.iter().rev() {
            out.extend_from_slice(&(*d as u64).to_le_bytes());
        }
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offset += (4 * data.len() as u64).div_ceil(32) * 32;
    }
    while out.len() % 32 != 0 {
        out.push(0);
    }
    for (_, _, data) in tensors {
        let start = out.len();
        for v in data.iter() {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.resize(start + (out.len() - start).div_ceil(32) * 32, 0);
    }
    std::fs::write(path, out)
}
