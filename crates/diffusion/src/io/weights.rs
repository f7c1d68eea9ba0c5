//! Where a model's tensors come from: safetensors files in a model folder, or deterministic synthetic
//! values. A `Loader` asks a source for each tensor by its diffusers/transformers name and expected
//! shape, puts it on the device in the run's precision, and at the end the source reports any tensor
//! the model never asked for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::{DType, TensorData};

use crate::error::{DiffusionError, Result};
use crate::io::safetensors::{StDtype, Stored};
use crate::io::tensor_file::TensorFile;
use crate::nn::blocks::{BlockMatrix, HostBlocks};
use crate::nn::int8::{Int8Matrix, PackedInt8, ScaleAxis};
use crate::nn::{Conv2d, GroupNorm, LayerNorm, Linear, Weight};

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
    fn select_rows(&self, row_count: usize, rows: &[usize]) -> Values {
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

/// A model tensor made from a stored one that holds more (or is laid out otherwise), as
/// checkpoints in their authors' names store them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Derived {
    /// Part `part` of `parts` equal slices along the first dimension (a fused q/k/v projection).
    Rows {
        stored: String,
        part: usize,
        parts: usize,
    },
    /// The transpose of a stored matrix (OpenCLIP's `text_projection`).
    Transposed { stored: String },
    /// The stored tensor with the two halves of its first dimension swapped (BFL's final
    /// modulation stores shift then scale; diffusers loads scale then shift).
    SwapHalves { stored: String },
}

impl Derived {
    fn stored(&self) -> &str {
        match self {
            Derived::Rows { stored, .. }
            | Derived::Transposed { stored }
            | Derived::SwapHalves { stored } => stored,
        }
    }

    /// The shape of the tensor made from a stored one of shape `found`, if it can be made.
    fn shape(&self, found: &[usize]) -> Option<Vec<usize>> {
        match self {
            Derived::Rows { parts, .. } => {
                let (&rows, rest) = found.split_first()?;
                (rows % parts == 0).then(|| [&[rows / parts], rest].concat())
            }
            Derived::Transposed { .. } => match found {
                [a, b] => Some(vec![*b, *a]),
                _ => None,
            },
            Derived::SwapHalves { .. } => {
                (found.first().is_some_and(|rows| rows % 2 == 0)).then(|| found.to_vec())
            }
        }
    }
}

/// A component's tensors in a file stored under other names: model name → stored name, and the
/// tensors made from parts of stored ones (fused q/k/v projections, a transposed projection).
#[derive(Debug, Clone, Default)]
pub struct ComponentNames {
    pub names: BTreeMap<String, String>,
    pub derived: BTreeMap<String, Derived>,
}

/// Tensors from one weights file (safetensors or GGUF): a diffusers component file, or one
/// component of a single-file checkpoint whose names were converted. A "scaled FP8" file
/// (ComfyUI's) stores `X.scale_weight` beside an FP8 `X.weight`: the weight is taken multiplied
/// by it, as ComfyUI and diffusers dequantize it.
pub struct FileWeights {
    file: TensorFile,
    /// The model's name for each tensor this source offers → the name stored in the file.
    names: BTreeMap<String, String>,
    /// Stored names already taken.
    used: BTreeSet<String>,
    /// Old checkpoint names for new ones (e.g. the VAE's legacy `query` for `to_q`).
    aliases: Vec<(&'static str, &'static str)>,
    /// Name prefixes of tensors the engine deliberately does not load (e.g. the VAE encoder).
    ignored_prefixes: Vec<String>,
    /// Model names of tensors made from parts of stored ones.
    derived: BTreeMap<String, Derived>,
}

impl FileWeights {
    /// Every tensor of the file, under its own name.
    pub fn open(path: &Path) -> Result<Self> {
        let file = TensorFile::open(path)?;
        let names = file
            .names()
            .map(|n| (n.to_string(), n.to_string()))
            .collect();
        Ok(Self::renamed(file, names))
    }

    /// The tensors `names` lists (model name → stored name); the file's other tensors are not
    /// this source's.
    pub fn renamed(file: TensorFile, names: BTreeMap<String, String>) -> Self {
        FileWeights {
            file,
            names,
            used: BTreeSet::new(),
            aliases: Vec::new(),
            ignored_prefixes: Vec::new(),
            derived: BTreeMap::new(),
        }
    }

    /// A checkpoint component's tensors, by their converted names and parts.
    pub fn converted(file: TensorFile, names: ComponentNames) -> Self {
        let mut weights = Self::renamed(file, names.names);
        weights.derived = names.derived;
        weights
    }

    /// A tensor made from part of a stored one (`derived`), checked against `shape`.
    fn take_derived(&mut self, name: &str, derived: Derived, shape: &[usize]) -> Result<Values> {
        let stored = derived.stored().to_string();
        let found = self
            .file
            .entry(&stored)
            .ok_or_else(|| DiffusionError::Tensor {
                path: self.path().to_path_buf(),
                tensor: stored.clone(),
                problem: format!("is missing (it holds {name})"),
            })?
            .shape
            .to_vec();
        if derived.shape(&found).as_deref() != Some(shape) {
            return Err(DiffusionError::Tensor {
                path: self.path().to_path_buf(),
                tensor: stored,
                problem: format!(
                    "has shape {found:?}, from which {name} of shape {shape:?} cannot be taken"
                ),
            });
        }
        // A scaled FP8 file scales the fused tensor as a whole.
        let values = self.file.read(&stored)?;
        let values = self.scaled(&stored, values)?;
        self.used.insert(stored);
        Ok(match derived {
            Derived::Rows { part, parts, .. } => {
                let per = found[0] / parts;
                let rows: Vec<usize> = (part * per..(part + 1) * per).collect();
                values.select_rows(found[0], &rows)
            }
            Derived::SwapHalves { .. } => {
                let half = found[0] / 2;
                let rows: Vec<usize> = (half..found[0]).chain(0..half).collect();
                values.select_rows(found[0], &rows)
            }
            Derived::Transposed { .. } => {
                let (rows, cols) = (found[0], found[1]);
                let source = values.into_f32();
                let mut out = vec![0f32; rows * cols];
                for r in 0..rows {
                    for c in 0..cols {
                        out[c * rows + r] = source[r * cols + c];
                    }
                }
                Values::F32(out)
            }
        })
    }

    pub fn with_aliases(mut self, aliases: &[(&'static str, &'static str)]) -> Self {
        self.aliases.extend_from_slice(aliases);
        self
    }

    pub fn ignoring(mut self, prefixes: &[&str]) -> Self {
        self.ignored_prefixes
            .extend(prefixes.iter().map(|p| p.to_string()));
        self
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Parameters of the stored tensors behind the model names `counted` picks (not ignored), from
    /// the header: a stored tensor counts once, whole, however many model tensors are made from
    /// it; integer buffers are not weights.
    pub fn parameters(&self, counted: impl Fn(&str) -> bool) -> u64 {
        let wanted = |name: &String| {
            counted(name) && !self.ignored_prefixes.iter().any(|p| name.starts_with(p))
        };
        let renamed = self
            .names
            .iter()
            .filter(|(name, _)| wanted(name))
            .map(|(_, stored)| stored.as_str());
        let derived = self
            .derived
            .iter()
            .filter(|(name, _)| wanted(name))
            .map(|(_, d)| d.stored());
        let stored: BTreeSet<&str> = renamed.chain(derived).collect();
        stored
            .into_iter()
            .filter_map(|stored| self.file.entry(stored))
            .filter(|entry| !matches!(entry.dtype, StDtype::Other(_)))
            .map(|entry| entry.shape.iter().product::<usize>() as u64)
            .sum()
    }

    /// The model's names this source offers (renamed tensors and those made from parts).
    pub fn model_names(&self) -> impl Iterator<Item = &str> {
        self.names
            .keys()
            .chain(self.derived.keys())
            .map(String::as_str)
    }

    /// The stored shape of the tensor offered as `name` (a renamed one).
    pub fn stored_shape(&self, name: &str) -> Option<Vec<usize>> {
        let stored = self.names.get(name)?;
        self.file.entry(stored).map(|e| e.shape.to_vec())
    }

    /// Whether the file stores `name` (under that stored name).
    pub fn has(&self, name: &str) -> bool {
        self.names.values().any(|stored| stored == name)
    }

    /// The stored name of `name`: itself, or a legacy alias.
    fn resolve(&self, name: &str) -> Option<String> {
        if let Some(stored) = self.names.get(name) {
            return Some(stored.clone());
        }
        self.aliases.iter().find_map(|(new, old)| {
            let candidate = name.replace(new, old);
            if candidate == name {
                return None;
            }
            self.names.get(&candidate).cloned()
        })
    }

    /// `values` of the stored tensor `stored`, multiplied by its FP8 scale when the file has one
    /// (`X.scale_weight` for `X.weight`, a single f32).
    fn scaled(&mut self, stored: &str, values: Stored) -> Result<Values> {
        let Some(scale_name) = stored
            .strip_suffix(".weight")
            .map(|base| format!("{base}.scale_weight"))
            .filter(|scale| self.file.entry(scale).is_some())
        else {
            return Ok(Values::Stored(values));
        };
        let scale = self.file.read(&scale_name)?.to_f32();
        let [scale] = scale.as_slice() else {
            return Err(DiffusionError::Tensor {
                path: self.path().to_path_buf(),
                tensor: scale_name,
                problem: format!(
                    "holds {} values; an FP8 weight's scale is one number",
                    scale.len()
                ),
            });
        };
        let scale = *scale;
        self.used.insert(scale_name);
        Ok(Values::Scaled {
            stored: values,
            scale,
        })
    }
}

/// Tensors of a scaled-FP8 file that carry no weight: the marker `scaled_fp8` and the
/// activation scales `X.scale_input` (for FP8 matrix products, which SD Bench does not run).
fn is_fp8_scale_input(stored: &str) -> bool {
    stored == "scaled_fp8" || stored.ends_with(".scale_input")
}

/// Any tensor of a scaled-FP8 file's bookkeeping: a name conversion passes these by, and
/// `FileWeights` applies the weight scales itself.
pub(crate) fn is_fp8_scale(stored: &str) -> bool {
    is_fp8_scale_input(stored) || stored.ends_with(".scale_weight")
}

impl WeightSource for FileWeights {
    fn take(&mut self, name: &str, shape: &[usize], _init: Init) -> Result<Values> {
        if let Some(derived) = self.derived.get(name).cloned() {
            return self.take_derived(name, derived, shape);
        }
        let stored = self.resolve(name).ok_or_else(|| DiffusionError::Tensor {
            path: self.path().to_path_buf(),
            tensor: name.to_string(),
            problem: format!("is missing (the config needs shape {shape:?})"),
        })?;
        let found = self.file.entry(&stored).expect("listed names exist").shape;
        // Legacy checkpoints store some linear layers as 1x1 convolutions: same numbers.
        let same_numbers = found.len() == 4
            && shape.len() == 2
            && found[..2] == shape[..]
            && found[2] == 1
            && found[3] == 1;
        if found != shape && !same_numbers {
            return Err(DiffusionError::Tensor {
                path: self.path().to_path_buf(),
                tensor: stored,
                problem: format!("has shape {found:?} but the config needs {shape:?}"),
            });
        }
        let values = self.file.read(&stored)?;
        let scaled = self.scaled(&stored, values)?;
        self.used.insert(stored);
        Ok(scaled)
    }

    fn finish(&mut self) -> Result<()> {
        let unexpected: Vec<&str> = self
            .names
            .iter()
            .filter(|(_, stored)| !self.used.contains(*stored))
            .filter(|(_, stored)| !is_fp8_scale_input(stored))
            .filter(|(name, _)| !self.ignored_prefixes.iter().any(|p| name.starts_with(p)))
            .map(|(_, stored)| stored.as_str())
            .collect();
        match unexpected.as_slice() {
            [] => Ok(()),
            [first, ..] => Err(DiffusionError::Tensor {
                path: self.path().to_path_buf(),
                tensor: first.to_string(),
                problem: format!(
                    "is not part of the model the config describes ({} unexpected tensor(s)); is the config from a different model?",
                    unexpected.len()
                ),
            }),
        }
    }
}

/// Deterministic generated weights: each tensor's values depend only on the seed and its name.
pub struct SyntheticWeights {
    seed: u64,
}

impl SyntheticWeights {
    pub fn new(seed: u64) -> Self {
        SyntheticWeights { seed }
    }
}

impl WeightSource for SyntheticWeights {
    fn take(&mut self, name: &str, shape: &[usize], init: Init) -> Result<Values> {
        let count: usize = shape.iter().product();
        Ok(Values::F32(match init {
            Init::Ones => vec![1.0; count],
            Init::Zeros => vec![0.0; count],
            Init::FanIn(fan_in) => {
                // Uniform(-a, a) has variance a^2/3; a = sqrt(3 / fan_in) gives variance 1/fan_in.
                let a = (3.0 / fan_in.max(1) as f64).sqrt() as f32;
                uniform(self.seed ^ fnv1a(name.as_bytes()), count, a)
            }
        }))
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// `count` values uniform in (-a, a): SplitMix64's draws from `state`, 24 bits each. Its state
/// only counts up, so each chunk starts where the draws before it leave the state and the chunks
/// are made in parallel, the same values as one sequence (SDXL's 3.5 billion took most of a
/// full-size test).
fn uniform(state: u64, count: usize, a: f32) -> Vec<f32> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let mut values = vec![0.0f32; count];
    values
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut state =
                state.wrapping_add(((chunk * CHUNK) as u64).wrapping_mul(SPLITMIX_GAMMA));
            for value in out {
                let bits = splitmix64(&mut state) >> 40; // 24 random bits
                *value = (bits as f32 / (1u64 << 23) as f32 - 1.0) * a;
            }
        });
    values
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

const SPLITMIX_GAMMA: u64 = 0x9E3779B97F4A7C15;

pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(SPLITMIX_GAMMA);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// Builds layers from a weight source onto a device.
pub struct Loader<'a, B: Backend> {
    source: &'a mut dyn WeightSource,
    pub device: B::Device,
    /// Where `host_tensor` puts its tensors: host memory (the CPU backend's device), or `device`
    /// where the caller gives none.
    host: B::Device,
    pub precision: Precision,
    /// Linear and convolution weights are stored as int8 (`nn::int8`); switched off around the
    /// layers that stay in the run's precision.
    pub int8_weights: bool,
    /// Score elements one attention call may hold (`nn::multi_head_attention`).
    pub attention_score_budget: usize,
}

impl<'a, B: Backend> Loader<'a, B> {
    pub fn new(source: &'a mut dyn WeightSource, device: &B::Device, precision: Precision) -> Self {
        Loader {
            source,
            device: device.clone(),
            host: device.clone(),
            precision,
            int8_weights: false,
            attention_score_budget: crate::nn::SCORE_BUDGET,
        }
    }

    /// Runs `load` with int8 weights off: for the few layers whose error would reach every
    /// output (a UNet's first and last convolutions, its timestep embedding).
    pub fn full_precision<T>(&mut self, load: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let int8 = std::mem::replace(&mut self.int8_weights, false);
        let result = load(self);
        self.int8_weights = int8;
        result
    }

    /// `host_tensor`s go to `host`.
    pub fn with_host(mut self, host: &B::Device) -> Self {
        self.host = host.clone();
        self
    }

    pub fn finish(self) -> Result<()> {
        self.source.finish()
    }

    /// Puts `values` on the device as `dtype`. A file tensor already in `dtype` (the usual case:
    /// fp16 files for f16 runs) goes up from the buffer it was read into; anything else is
    /// converted in one pass on the host (an f32 run may be on a device without f16).
    fn upload<const D: usize>(
        &self,
        values: Values,
        shape: [usize; D],
        dtype: DType,
    ) -> Tensor<B, D> {
        self.upload_to(&self.device, values, shape, dtype)
    }

    fn upload_to<const D: usize>(
        &self,
        device: &B::Device,
        values: Values,
        shape: [usize; D],
        dtype: DType,
    ) -> Tensor<B, D> {
        let data = match (values, dtype) {
            (Values::Stored(s), DType::F16) if s.dtype == StDtype::F16 => {
                TensorData::from_bytes_vec(s.bytes, shape, DType::F16)
            }
            (Values::Stored(s), DType::F32) if s.dtype == StDtype::F32 => {
                TensorData::from_bytes_vec(s.bytes, shape, DType::F32)
            }
            (Values::Stored(s), DType::BF16) if s.dtype == StDtype::BF16 => {
                TensorData::from_bytes_vec(s.bytes, shape, DType::BF16)
            }
            (Values::Stored(s), DType::F16) => TensorData::new(s.to_f16(), shape),
            (Values::Stored(s), DType::BF16) => TensorData::new(s.to_bf16(), shape),
            (Values::Stored(s), _) => TensorData::new(s.to_f32(), shape),
            (Values::F32(v), DType::F16) => TensorData::new(
                v.into_iter().map(half::f16::from_f32).collect::<Vec<_>>(),
                shape,
            ),
            (Values::F32(v), DType::BF16) => TensorData::new(
                v.into_iter().map(half::bf16::from_f32).collect::<Vec<_>>(),
                shape,
            ),
            (Values::F32(v), _) => TensorData::new(v, shape),
            (scaled @ Values::Scaled { .. }, _) => {
                return self.upload_to(device, Values::F32(scaled.into_f32()), shape, dtype)
            }
        };
        Tensor::from_data(data, (device, dtype))
    }

    /// A tensor in the run's precision.
    pub fn tensor<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Tensor<B, D>> {
        let values = self.source.take(name, &shape, init)?;
        Ok(self.upload(values, shape, self.precision.dtype()))
    }

    /// A tensor in the run's precision kept in host memory (the CPU backend), whatever the
    /// device: for lookup tables read a few rows at a time.
    pub fn host_tensor<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Tensor<B, D>> {
        let values = self.source.take(name, &shape, init)?;
        Ok(self.upload_to(&self.host, values, shape, self.precision.dtype()))
    }

    /// A tensor kept in f32 whatever the precision (norm parameters).
    pub fn tensor_f32<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Tensor<B, D>> {
        let values = self.source.take(name, &shape, init)?;
        Ok(self.upload(values, shape, DType::F32))
    }

    fn param_f32<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        init: Init,
    ) -> Result<Param<Tensor<B, D>>> {
        Ok(Param::from_tensor(self.tensor_f32(name, shape, init)?))
    }

    /// The 1-D tensor `name` of `len` values with only the values at `order`, in that order.
    pub fn tensor_picked(
        &mut self,
        name: &str,
        len: usize,
        order: &[usize],
        init: Init,
    ) -> Result<Tensor<B, 1>> {
        let values = self
            .source
            .take(name, &[len], init)?
            .select_rows(len, order);
        Ok(self.upload(values, [order.len()], self.precision.dtype()))
    }

    /// `nn.Linear(inputs, outputs)`, stored as PyTorch does ([out, in]), kept as [in, out]: the
    /// transpose is made on the device, into a contiguous tensor (a transposed view would make
    /// the CPU backend's matrix products 17% slower: they pack the weights on every call).
    pub fn linear(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
    ) -> Result<Linear<B>> {
        let (w, bias) = self.take_linear(prefix, inputs, outputs, bias)?;
        Ok(self.linear_from(w, bias, inputs, outputs))
    }

    /// One `nn.Linear(inputs, outputs)` as several: part `k` computes the outputs `parts[k]` (in
    /// that order). For a fused projection whose outputs are used apart (each part's result is a
    /// whole tensor, not a strided view of a wider one), or outputs reordered.
    pub fn linear_parts(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
        parts: &[Vec<usize>],
    ) -> Result<Vec<Linear<B>>> {
        let (w, b) = self.take_linear(prefix, inputs, outputs, bias)?;
        let mut linears = Vec::with_capacity(parts.len());
        for rows in parts {
            if let Some(&bad) = rows.iter().find(|&&r| r >= outputs) {
                return Err(DiffusionError::Tensor {
                    path: PathBuf::from(prefix),
                    tensor: format!("{prefix}.weight"),
                    problem: format!("has {outputs} outputs, not an output {bad}"),
                });
            }
            let part_w = w.select_rows(outputs, rows);
            let part_b = b.as_ref().map(|b| b.select_rows(outputs, rows));
            linears.push(self.linear_from(part_w, part_b, inputs, rows.len()));
        }
        Ok(linears)
    }

    /// A linear layer's stored weight ([outputs, inputs]) and bias.
    fn take_linear(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        bias: bool,
    ) -> Result<(Values, Option<Values>)> {
        let name = format!("{prefix}.weight");
        let w = self
            .source
            .take(&name, &[outputs, inputs], Init::FanIn(inputs))?;
        let b = if bias {
            let name = format!("{prefix}.bias");
            Some(self.source.take(&name, &[outputs], Init::Zeros)?)
        } else {
            None
        };
        Ok((w, b))
    }

    fn linear_from(
        &self,
        w: Values,
        bias: Option<Values>,
        inputs: usize,
        outputs: usize,
    ) -> Linear<B> {
        // A GGUF-quantized or FP8 weight stays in its codes (`nn::blocks`).
        let kept = match &w {
            Values::Stored(stored) => HostBlocks::from_stored(stored, outputs, inputs, None),
            Values::Scaled { stored, scale } => {
                HostBlocks::from_stored(stored, outputs, inputs, Some(*scale))
            }
            Values::F32(_) => None,
        };
        let weight = if let Some(host) = kept {
            Weight::Blocks(BlockMatrix::upload(host, &self.device))
        } else if self.int8_weights {
            // Transposed on the host, so each output's scale is a column's.
            let w = w.into_f32();
            let mut t = vec![0f32; w.len()];
            for (o, row) in w.chunks_exact(inputs).enumerate() {
                for (i, v) in row.iter().enumerate() {
                    t[i * outputs + o] = *v;
                }
            }
            let packed = PackedInt8::quantize(&t, inputs, outputs, ScaleAxis::Columns);
            Weight::Int8(Int8Matrix::upload(packed, &self.device))
        } else {
            // Flattening a transposed view cannot be a view: the backend copies it contiguously.
            let weight = self
                .upload(w, [outputs, inputs], self.precision.dtype())
                .transpose()
                .reshape([inputs * outputs])
                .reshape([inputs, outputs]);
            Weight::Float(Param::from_tensor(weight))
        };
        let bias = bias.map(|b| self.upload(b, [outputs], self.precision.dtype()));
        Linear::new(weight, bias)
    }

    /// `nn.Conv2d(inputs, outputs, kernel, stride, padding)` with a bias.
    pub fn conv2d(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<Conv2d<B>> {
        let flat = inputs * kernel * kernel;
        let w = self.source.take(
            &format!("{prefix}.weight"),
            &[outputs, inputs, kernel, kernel],
            Init::FanIn(flat),
        )?;
        let weight = if self.int8_weights {
            let packed = PackedInt8::quantize(&w.into_f32(), outputs, flat, ScaleAxis::Rows);
            Weight::Int8(Int8Matrix::upload(packed, &self.device))
        } else {
            Weight::Float(Param::from_tensor(self.upload(
                w,
                [outputs, flat],
                self.precision.dtype(),
            )))
        };
        let bias = self.tensor(&format!("{prefix}.bias"), [outputs], Init::Zeros)?;
        Ok(Conv2d {
            weight,
            bias: Param::from_tensor(bias),
            kernel,
            stride,
            padding,
        })
    }

    pub fn group_norm(
        &mut self,
        prefix: &str,
        groups: usize,
        channels: usize,
        eps: f64,
    ) -> Result<GroupNorm<B>> {
        Ok(GroupNorm {
            gamma: self.param_f32(&format!("{prefix}.weight"), [channels], Init::Ones)?,
            beta: self.param_f32(&format!("{prefix}.bias"), [channels], Init::Zeros)?,
            groups,
            eps,
        })
    }

    pub fn layer_norm(&mut self, prefix: &str, dim: usize, eps: f64) -> Result<LayerNorm<B>> {
        Ok(LayerNorm {
            gamma: self.param_f32(&format!("{prefix}.weight"), [dim], Init::Ones)?,
            beta: self.param_f32(&format!("{prefix}.bias"), [dim], Init::Zeros)?,
            eps,
        })
    }
}

#[cfg(test)]
#[path = "weights_tests.rs"]
mod tests;
