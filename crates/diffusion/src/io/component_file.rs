//! A denoiser kept as a file of its own, apart from a diffusers folder (ComfyUI's
//! `diffusion_models/`): in its authors' tensor names or diffusers', sometimes under ComfyUI's
//! `model.diffusion_model.`, as safetensors, FP8 or GGUF. A family supplies the name conversion
//! (as diffusers' single-file converter for it does); this module reads the file with it, and
//! takes the denoiser's weights from it or from the folder.

use std::path::{Path, PathBuf};

use crate::error::{DiffusionError, Result};
use crate::io::sharded::component_weights;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{
    is_fp8_scale, ComponentNames, Derived, FileWeights, Precision, WeightSource,
};
use crate::nn::blocks::KeptWeights;
use crate::pipeline::ModelSource;

/// The prefix ComfyUI saves whole models under.
const COMFY_PREFIX: &str = "model.diffusion_model.";

/// What an original tensor name is in diffusers' model.
#[derive(Debug, PartialEq)]
pub enum Converted {
    Name(String),
    /// A fused q/k/v projection: the three diffusers names, in order.
    Fused([String; 3]),
    /// Stored with the two halves of its first dimension in the other order (shift, scale).
    SwapHalves(String),
    /// Not a weight of the diffusers model.
    Ignored,
}

/// A family's denoiser file names.
pub struct DenoiserNames {
    /// "FLUX.2 transformer".
    pub what: &'static str,
    /// A name (after any ComfyUI prefix) only diffusers' layout has.
    pub is_diffusers: fn(&str) -> bool,
    /// A name only the original layout has.
    pub is_original: fn(&str) -> bool,
    /// An original name in diffusers' terms; `None` for a name the model does not have.
    pub convert: fn(&str) -> Option<Converted>,
}

/// The denoiser's weights in `file`, in either layout; anything else is refused by name.
pub fn denoiser_file(file: &Path, names: &DenoiserNames) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    let prefix = match tensors.names().all(|n| n.starts_with(COMFY_PREFIX)) {
        true => COMFY_PREFIX,
        false => "",
    };
    let stored: Vec<String> = tensors
        .names()
        .filter(|n| !is_fp8_scale(n))
        .map(str::to_string)
        .collect();
    let rest = |n: &str| n[prefix.len()..].to_string();
    if stored.iter().any(|n| (names.is_diffusers)(&rest(n))) {
        let map = stored.iter().map(|n| (rest(n), n.clone())).collect();
        return Ok(FileWeights::renamed(tensors, map));
    }
    if !stored.iter().any(|n| (names.is_original)(&rest(n))) {
        return Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: format!(
                "is not a {}: none of its tensors has that model's names",
                names.what
            ),
        });
    }
    let mut found = ComponentNames::default();
    for name in &stored {
        let converted = (names.convert)(&rest(name)).ok_or_else(|| DiffusionError::Tensor {
            path: file.to_path_buf(),
            tensor: name.clone(),
            problem: format!(
                "has no counterpart in a {}; is the file another model's?",
                names.what
            ),
        })?;
        match converted {
            Converted::Name(new) => {
                found.names.insert(new, name.clone());
            }
            Converted::Fused(parts) => {
                for (part, new) in parts.into_iter().enumerate() {
                    let stored = name.clone();
                    found.derived.insert(
                        new,
                        Derived::Rows {
                            stored,
                            part,
                            parts: 3,
                        },
                    );
                }
            }
            Converted::SwapHalves(new) => {
                let stored = name.clone();
                found.derived.insert(new, Derived::SwapHalves { stored });
            }
            Converted::Ignored => {}
        }
    }
    Ok(FileWeights::converted(tensors, found))
}

/// What a denoiser file keeps in its codes (GGUF, FP8): all of its matrices are the denoiser's.
pub fn denoiser_kept(file: &Path) -> Result<KeptWeights> {
    Ok(KeptWeights::of(&TensorFile::open(file)?, |_| true))
}

/// The denoiser's weights and the files they come from: `file`'s when one is given, else the
/// folder's `transformer/` component (sharded or not, the file a run in `precision` reads).
pub fn denoiser_weights(
    folder: &Path,
    file: Option<&Path>,
    names: &DenoiserNames,
    precision: Precision,
    ignored: &[&str],
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    match file {
        Some(file) => Ok((
            Box::new(denoiser_file(file, names)?.ignoring(ignored)),
            vec![file.to_path_buf()],
        )),
        None => component_weights(
            &folder.join("transformer"),
            "diffusion_pytorch_model",
            precision,
            ignored,
        ),
    }
}

/// What a pipeline loaded from `folder` (with the denoiser from `file`, if given) was loaded from.
pub fn loaded_from(folder: &Path, file: Option<&Path>) -> ModelSource {
    match file {
        Some(file) => ModelSource::Checkpoint {
            file: file.to_path_buf(),
            config: Some(folder.to_path_buf()),
        },
        None => ModelSource::Folder(folder.to_path_buf()),
    }
}

/// The refusal for a denoiser file given without the folder its other components come from.
pub fn needs_its_folder(file: &Path, what: &str) -> DiffusionError {
    DiffusionError::unsupported(
        file,
        format!(
            "a {what} file runs with the diffusers folder its text encoder, VAE and configs come from: add --model-config FOLDER (e.g. the Hub repository's)"
        ),
    )
}
