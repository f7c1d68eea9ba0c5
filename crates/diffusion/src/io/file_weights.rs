//! Weights read from a tensor file (safetensors or GGUF): by their diffusers/transformers names,
//! or by another naming (a checkpoint's, ComfyUI's) through a name map and tensors derived from
//! fused or reordered ones; FP8 tensors scaled by their `scale_weight`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{DiffusionError, Result};
use crate::io::safetensors::{StDtype, Stored};
use crate::io::tensor_file::is_fp8_scale_input;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{Init, Values, WeightSource};

/// A model tensor made from a stored one that holds more (or is laid out otherwise), as
/// checkpoints in their authors' names store them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Derived {
    /// Slices `first..first + count` of `parts` equal slices along the first dimension (a fused
    /// q/k/v projection's part; the 4-width MLP input of a projection fused with q, k and v, 4 of
    /// 7 slices).
    Rows {
        stored: String,
        first: usize,
        count: usize,
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
            Derived::Rows { count, parts, .. } => {
                let (&rows, rest) = found.split_first()?;
                (rows % parts == 0).then(|| [&[rows / parts * count], rest].concat())
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

/// What an original tensor name is in diffusers' model.
#[derive(Debug, PartialEq)]
pub enum Converted {
    Name(String),
    /// A fused q/k/v projection: the three diffusers names, in order.
    Fused([String; 3]),
    /// A fused projection of unequal parts: `parts` equal slices of its rows, each name taking
    /// the next `count` of them, in order.
    Split {
        parts: usize,
        pieces: Vec<(String, usize)>,
    },
    /// Stored with the two halves of its first dimension in the other order (shift, scale).
    SwapHalves(String),
    /// Not a weight of the diffusers model.
    Ignored,
}

/// A component's tensors in a file stored under other names: model name → stored name, and the
/// tensors made from parts of stored ones (fused q/k/v projections, a transposed projection).
#[derive(Debug, Clone, Default)]
pub struct ComponentNames {
    pub names: BTreeMap<String, String>,
    pub derived: BTreeMap<String, Derived>,
}

impl ComponentNames {
    /// What the tensor stored as `stored` is in the model (`converted`), recorded.
    pub fn add(&mut self, converted: Converted, stored: &str) {
        let stored = stored.to_string();
        match converted {
            Converted::Name(new) => {
                self.names.insert(new, stored);
            }
            Converted::Fused(parts) => {
                for (part, new) in parts.into_iter().enumerate() {
                    let stored = stored.clone();
                    let rows = Derived::Rows {
                        stored,
                        first: part,
                        count: 1,
                        parts: 3,
                    };
                    self.derived.insert(new, rows);
                }
            }
            Converted::Split { parts, pieces } => {
                let mut first = 0;
                for (new, count) in pieces {
                    let stored = stored.clone();
                    let rows = Derived::Rows {
                        stored,
                        first,
                        count,
                        parts,
                    };
                    self.derived.insert(new, rows);
                    first += count;
                }
            }
            Converted::SwapHalves(new) => {
                self.derived.insert(new, Derived::SwapHalves { stored });
            }
            Converted::Ignored => {}
        }
    }
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
            Derived::Rows {
                first,
                count,
                parts,
                ..
            } => {
                let per = found[0] / parts;
                let rows: Vec<usize> = (first * per..(first + count) * per).collect();
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
