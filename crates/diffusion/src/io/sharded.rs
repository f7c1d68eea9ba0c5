//! A component stored in shards: `model.safetensors.index.json` (transformers) or
//! `diffusion_pytorch_model.safetensors.index.json` (diffusers) maps every tensor to one of several
//! safetensors files. Each shard is checked against the index, so a missing or truncated shard is
//! named before anything loads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::io::bounded_text::{read_bounded, MAX_CONFIG_BYTES};
use crate::io::file_weights::FileWeights;
use crate::io::kept_weights::KeptWeights;
use crate::io::safetensors::StDtype;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{choose_weights_file, Init, Precision, Values, WeightSource};

/// A component's weights in `folder`: sharded with an index, or one file (the `.fp16` variant
/// first in f16).
pub fn component_weights(
    folder: &Path,
    stem: &str,
    precision: Precision,
    ignored: &[&str],
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    if let Some(index) = index_path(folder, stem) {
        let shards = ShardedWeights::open(&index)?.ignoring(ignored);
        let files = shards.shard_paths();
        return Ok((Box::new(shards), files));
    }
    let file = choose_weights_file(folder, stem, precision)?;
    let weights = FileWeights::open(&file)?.ignoring(ignored);
    Ok((Box::new(weights), vec![file]))
}

#[derive(Deserialize)]
struct Index {
    weight_map: BTreeMap<String, String>,
}

/// The index file of a sharded component `stem` in `folder`, if the component is sharded.
pub fn index_path(folder: &Path, stem: &str) -> Option<PathBuf> {
    let path = folder.join(format!("{stem}.safetensors.index.json"));
    path.is_file().then_some(path)
}

/// The weights a weights file stores under the names `counted` picks, from its header
/// (floating-point and quantized tensors: integer buffers such as CLIP's position ids are not
/// weights, nor are FP8 scales).
pub fn stored_parameters(path: &Path, counted: impl Fn(&str) -> bool) -> Result<u64> {
    let file = TensorFile::open(path)?;
    Ok(file
        .names()
        .filter(|name| counted(name) && !crate::io::tensor_file::is_fp8_scale(name))
        .filter_map(|name| file.entry(name))
        .filter(|info| !matches!(info.dtype, StDtype::Other(_)))
        .map(|info| info.shape.iter().product::<usize>() as u64)
        .sum())
}

/// `stored_parameters` of a component `stem` in `folder`: every shard its index lists, or its one
/// file (the one a run in `precision` reads).
pub fn component_parameters(
    folder: &Path,
    stem: &str,
    precision: Precision,
    counted: impl Fn(&str) -> bool,
) -> Result<u64> {
    match index_path(folder, stem) {
        Some(index) => {
            let shards = ShardedWeights::open(&index)?;
            shards
                .shards
                .iter()
                .map(|s| stored_parameters(s.path(), &counted))
                .sum()
        }
        None => stored_parameters(&choose_weights_file(folder, stem, precision)?, counted),
    }
}

/// What of a component `stem` in `folder` a run keeps in its files' codes (GGUF, FP8), over every
/// shard its index lists or its one file (the one a run in `precision` reads).
pub fn component_kept(folder: &Path, stem: &str, precision: Precision) -> Result<KeptWeights> {
    let files = match index_path(folder, stem) {
        Some(index) => ShardedWeights::open(&index)?
            .shards
            .iter()
            .map(|s| s.path().to_path_buf())
            .collect(),
        None => vec![choose_weights_file(folder, stem, precision)?],
    };
    files.iter().try_fold(KeptWeights::default(), |kept, file| {
        Ok(kept.plus(KeptWeights::of(&TensorFile::open(file)?, |_| true)))
    })
}

/// The tensors of every shard an index lists, each taken from the shard the index names.
pub struct ShardedWeights {
    index: PathBuf,
    shards: Vec<FileWeights>,
    /// Tensor name -> position in `shards`.
    route: BTreeMap<String, usize>,
}

impl ShardedWeights {
    /// The shard files the index lists, in name order.
    pub fn shard_paths(&self) -> Vec<PathBuf> {
        self.shards.iter().map(|s| s.path().to_path_buf()).collect()
    }

    pub fn open(index: &Path) -> Result<Self> {
        let text = read_bounded(index, MAX_CONFIG_BYTES)?;
        let parsed: Index = serde_json::from_str(&text).map_err(|e| DiffusionError::Weights {
            path: index.to_path_buf(),
            problem: format!("is not a safetensors index ({e})"),
        })?;
        let folder = index.parent().unwrap_or(Path::new("."));
        let mut files: Vec<&String> = parsed.weight_map.values().collect();
        files.sort();
        files.dedup();
        let mut shards = Vec::with_capacity(files.len());
        let mut position = BTreeMap::new();
        for file in files {
            // One plain file name: no separators, `..`, or (on Windows) a drive prefix.
            let plain = matches!(
                Path::new(file).components().collect::<Vec<_>>()[..],
                [std::path::Component::Normal(_)]
            );
            if !plain || file.contains('/') || file.contains('\\') || file.contains(':') {
                return Err(DiffusionError::Weights {
                    path: index.to_path_buf(),
                    problem: format!("names a shard outside its folder: {file}"),
                });
            }
            let path = folder.join(file);
            if !path.is_file() {
                return Err(DiffusionError::Weights {
                    path: index.to_path_buf(),
                    problem: format!(
                        "lists shard {file}, which is missing: download the model again"
                    ),
                });
            }
            position.insert(file.clone(), shards.len());
            shards.push(FileWeights::open(&path)?);
        }
        let mut route = BTreeMap::new();
        for (tensor, file) in &parsed.weight_map {
            let at = position[file];
            if !shards[at].has(tensor) {
                return Err(DiffusionError::Tensor {
                    path: shards[at].path().to_path_buf(),
                    tensor: tensor.clone(),
                    problem: format!(
                        "is missing, though {} places it in this shard",
                        index.display()
                    ),
                });
            }
            route.insert(tensor.clone(), at);
        }
        Ok(ShardedWeights {
            index: index.to_path_buf(),
            shards,
            route,
        })
    }

    pub fn index(&self) -> &Path {
        &self.index
    }

    /// Tensors whose names start with one of `prefixes` are not loaded and not reported unused.
    pub fn ignoring(mut self, prefixes: &[&str]) -> Self {
        self.shards = self
            .shards
            .into_iter()
            .map(|s| s.ignoring(prefixes))
            .collect();
        self
    }
}

impl WeightSource for ShardedWeights {
    fn take(&mut self, name: &str, shape: &[usize], init: Init) -> Result<Values> {
        match self.route.get(name) {
            Some(&at) => self.shards[at].take(name, shape, init),
            None => Err(DiffusionError::Tensor {
                path: self.index.clone(),
                tensor: name.to_string(),
                problem: format!("is missing (the config needs shape {shape:?})"),
            }),
        }
    }

    /// Tensors a shard holds but the index does not list are unused, and reported as such.
    fn finish(&mut self) -> Result<()> {
        self.shards.iter_mut().try_for_each(|s| s.finish())
    }
}
