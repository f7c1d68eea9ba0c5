//! A VAE kept as a file of its own (ComfyUI's `vae/`, a fine-tuned VAE download) or inside a
//! single file: diffusers' names or the original ones, read as diffusers' VAE.

use std::path::{Path, PathBuf};

use crate::error::{DiffusionError, Result};
use crate::io::component_file::{component_or_file, shared_prefix, VAE};
use crate::io::file_weights::{ComponentNames, FileWeights};
use crate::io::tensor_file::is_fp8_scale;
use crate::io::tensor_file::TensorFile;
use crate::io::weights::{Precision, WeightSource};
use crate::models::config::VaeConfig;
use crate::models::vae_names;

/// The latent channels of the VAE of `blocks` blocks that `file` holds (its decoder's first
/// convolution's inputs); `None` when it is no such VAE.
pub fn vae_latent_channels(file: &Path, blocks: usize) -> Option<usize> {
    let weights = vae_file(file, blocks).ok()?;
    match weights.stored_shape("decoder.conv_in.weight")?[..] {
        [_, channels, _, _] => Some(channels),
        _ => None,
    }
}

/// Whether `file` holds a VAE of `vae`'s blocks and latent channels.
pub fn vae_fits(file: &Path, vae: &VaeConfig) -> bool {
    vae_latent_channels(file, vae.block_out_channels.len()) == Some(vae.latent_channels)
}

/// The prefix a VAE keeps inside a Stable Diffusion checkpoint; a VAE file cut from one may
/// still carry it.
const VAE_CHECKPOINT_PREFIX: &str = "first_stage_model.";

/// A VAE of `blocks` encoder and decoder blocks kept as a file of its own (ComfyUI's `vae/`, a
/// fine-tuned VAE download): diffusers' names, or the original ones (SD checkpoints',
/// Black Forest Labs' `ae.safetensors`), with or without `first_stage_model.`.
pub fn vae_file(file: &Path, blocks: usize) -> Result<FileWeights> {
    vae_within(file, "", blocks)
}

/// The VAE among `file`'s tensors under `within` (a single file's `first_stage_model.`; `""`: a
/// VAE file of its own), read as `vae_file` reads one.
pub fn vae_within(file: &Path, within: &str, blocks: usize) -> Result<FileWeights> {
    let tensors = TensorFile::open(file)?;
    let stored: Vec<String> = tensors
        .names()
        .filter(|n| n.starts_with(within) && !is_fp8_scale(n))
        .map(str::to_string)
        .collect();
    let strip = match within {
        "" => shared_prefix(stored.iter(), VAE_CHECKPOINT_PREFIX),
        _ => within,
    };
    let rest = |n: &str| n[strip.len()..].to_string();
    if stored.iter().any(|n| vae_names::is_diffusers(&rest(n))) {
        let map = stored.iter().map(|n| (rest(n), n.clone())).collect();
        return Ok(FileWeights::renamed(tensors, map));
    }
    if !stored.iter().any(|n| vae_names::is_original(&rest(n))) {
        return Err(DiffusionError::Weights {
            path: file.to_path_buf(),
            problem: "is not a VAE: none of its tensors has a VAE's names (`decoder.up_blocks.` as diffusers names them, or `decoder.up.` as the original files do)".into(),
        });
    }
    let mut found = ComponentNames::default();
    for name in &stored {
        let converted =
            vae_names::diffusers_name(&rest(name), blocks).ok_or_else(|| DiffusionError::Tensor {
                path: file.to_path_buf(),
                tensor: name.clone(),
                problem: format!(
                    "has no counterpart in a VAE of {blocks} blocks; is the file another model's VAE?"
                ),
            })?;
        found.names.insert(converted, name.clone());
    }
    Ok(FileWeights::converted(tensors, found))
}

/// The VAE's weights (`blocks` blocks) and the files they come from: `file`'s when one is given,
/// else the folder's `vae/` component.
pub fn vae_weights(
    folder: &Path,
    file: Option<&Path>,
    blocks: usize,
    precision: Precision,
    ignored: &[&str],
) -> Result<(Box<dyn WeightSource>, Vec<PathBuf>)> {
    let read = |file: &Path| vae_file(file, blocks);
    component_or_file(folder, VAE, file, read, precision, ignored)
}
