//! A weights file of either format SD Bench reads: safetensors or GGUF, told apart by the
//! first bytes, not the name. Both give named tensors with a shape and a stored element type.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::error::{DiffusionError, Result};
use crate::io::gguf::{self, Gguf};
use crate::io::safetensors::{SafeTensors, StDtype, Stored};

pub enum TensorFile {
    Safetensors(SafeTensors),
    Gguf(Gguf),
}

/// What a file says of one tensor.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub dtype: StDtype,
    pub shape: &'a [usize],
}

impl TensorFile {
    /// Opens `path` as GGUF when it starts with GGUF's magic or is named `.gguf` (so a broken
    /// GGUF file is reported as one), as safetensors otherwise.
    pub fn open(path: &Path) -> Result<Self> {
        let mut magic = [0u8; 4];
        let mut file = std::fs::File::open(path).map_err(|e| DiffusionError::io(path, e))?;
        let is_gguf = (file.read_exact(&mut magic).is_ok() && &magic == gguf::MAGIC)
            || path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
        if is_gguf {
            Ok(TensorFile::Gguf(Gguf::open(path)?))
        } else {
            Ok(TensorFile::Safetensors(SafeTensors::open(path)?))
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            TensorFile::Safetensors(f) => f.path(),
            TensorFile::Gguf(f) => f.path(),
        }
    }

    pub fn names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            TensorFile::Safetensors(f) => Box::new(f.names()),
            TensorFile::Gguf(f) => Box::new(f.names()),
        }
    }

    pub fn entry(&self, name: &str) -> Option<Entry<'_>> {
        match self {
            TensorFile::Safetensors(f) => f.info(name).map(|i| Entry {
                dtype: i.dtype,
                shape: &i.shape,
            }),
            TensorFile::Gguf(f) => f.tensor(name).map(|t| Entry {
                dtype: t.dtype,
                shape: &t.shape,
            }),
        }
    }

    /// A GGUF file's text metadata `key` (`general.architecture`); `None` for safetensors.
    pub fn gguf_text(&self, key: &str) -> Option<&str> {
        match self {
            TensorFile::Gguf(f) => match f.metadata(key) {
                Some(gguf::MetaValue::Text(text)) => Some(text),
                _ => None,
            },
            TensorFile::Safetensors(_) => None,
        }
    }

    pub fn read(&mut self, name: &str) -> Result<Stored> {
        match self {
            TensorFile::Safetensors(f) => f.read(name),
            TensorFile::Gguf(f) => f.read(name),
        }
    }
}

/// What a file holds, by its tensors' names: their count and the largest groups by leading name
/// (`1143 tensors: 456 under model.diffusion_model.joint_blocks, 300 under ...`). A group is a
/// name's first parts, up to three, before its last part and before any number (`double_blocks`
/// for `double_blocks.0.img_attn.qkv.weight`).
pub fn describe_names(file: &TensorFile) -> String {
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    let mut total = 0;
    for name in file.names() {
        total += 1;
        let parts: Vec<&str> = name.split('.').collect();
        let leading: Vec<&str> = parts[..parts.len().saturating_sub(1).max(1)]
            .iter()
            .copied()
            .take_while(|p| !p.chars().all(|c| c.is_ascii_digit()))
            .take(3)
            .collect();
        let group = if leading.is_empty() {
            parts[0].to_string()
        } else {
            leading.join(".")
        };
        *groups.entry(group).or_insert(0) += 1;
    }
    let mut largest: Vec<(String, usize)> = groups.into_iter().collect();
    largest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let shown: Vec<String> = largest
        .iter()
        .take(3)
        .map(|(group, n)| format!("{n} under {group}"))
        .collect();
    let more = if largest.len() > 3 { ", ..." } else { "" };
    match total {
        0 => "no tensors".to_string(),
        _ => format!("{total} tensors: {}{more}", shown.join(", ")),
    }
}

/// A model file given alone (a single-file checkpoint, a denoiser file) must be a safetensors or
/// GGUF file; pickles (`.ckpt`, `.pt`, `.bin`) can run code when loaded and are refused.
pub fn check_model_file(file: &Path) -> Result<()> {
    let problem = |problem: &str| {
        Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: problem.to_string(),
        })
    };
    if !file.exists() {
        return problem("does not exist");
    }
    if !file.is_file() {
        return problem("is not a file");
    }
    match file.extension().and_then(|e| e.to_str()) {
        Some("safetensors" | "gguf") => Ok(()),
        Some("ckpt" | "pt" | "pth" | "bin") => problem(
            "is a PyTorch pickle checkpoint; SD Bench reads .safetensors checkpoints (most model sites offer one, or convert it with safetensors' convert tool)",
        ),
        _ => problem("is not a .safetensors or .gguf checkpoint"),
    }
}

/// A weights file's format and stored types, most parameters first: `GGUF Q4_K+F32`,
/// `safetensors F8_E4M3+BF16`, `safetensors F16`.
pub fn describe_weights(path: &Path) -> Result<String> {
    let file = TensorFile::open(path)?;
    let format = match file {
        TensorFile::Safetensors(_) => "safetensors",
        TensorFile::Gguf(_) => "GGUF",
    };
    let mut types: Vec<(&str, u64)> = types_of(&file).into_iter().collect();
    types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let names: Vec<&str> = types.iter().map(|(name, _)| *name).collect();
    Ok(format!("{format} {}", names.join("+"))
        .trim_end()
        .to_string())
}

/// The parameters a weights file stores per element type (`F16`, `F8_E4M3`, `Q4_K`...), from its
/// header: weights only (not integer buffers, nor FP8 scales). What a result records of a file.
pub fn stored_types(path: &Path) -> Result<BTreeMap<&'static str, u64>> {
    Ok(types_of(&TensorFile::open(path)?))
}

fn types_of(file: &TensorFile) -> BTreeMap<&'static str, u64> {
    let mut types = BTreeMap::new();
    for name in file.names().filter(|n| !is_fp8_scale(n)) {
        let entry = file.entry(name).expect("listed names exist");
        if matches!(entry.dtype, StDtype::Other(_)) {
            continue;
        }
        *types.entry(entry.dtype.name()).or_insert(0) +=
            entry.shape.iter().product::<usize>() as u64;
    }
    types
}

/// Whether values of the named type are plain floats (F32, F16, BF16): what every model folder
/// on the Hub stores, and what a standard run's weights are.
pub fn is_plain_float(type_name: &str) -> bool {
    matches!(type_name, "F32" | "F16" | "BF16")
}

/// Tensors of a scaled-FP8 file that carry no weight: the marker `scaled_fp8` and the
/// activation scales `X.scale_input` (for FP8 matrix products, which SD Bench does not run).
pub(crate) fn is_fp8_scale_input(stored: &str) -> bool {
    stored == "scaled_fp8" || stored.ends_with(".scale_input")
}

/// Any tensor of a scaled-FP8 file's bookkeeping: a name conversion passes these by, and
/// `FileWeights` applies the weight scales itself.
pub(crate) fn is_fp8_scale(stored: &str) -> bool {
    is_fp8_scale_input(stored) || stored.ends_with(".scale_weight")
}
