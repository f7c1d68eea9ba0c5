//! Which component a loose file is, and where a diffusers-folder family's weights come from
//! when files are given in place of its parts, read from headers only.

use std::path::Path;

use crate::error::Result;
use crate::io::component_file::{
    denoiser_file, denoiser_kept, text_encoder_file, text_encoder_width, DenoiserNames,
    TextEncoderNames, DENOISER, TEXT_ENCODER, VAE,
};
use crate::io::kept_weights::KeptWeights;
use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::models::vae_file::{vae_file, vae_fits};
use crate::pipeline::family::{Component, FilePart};
use crate::pipeline::{ComponentFiles, ModelSource};

/// What a pipeline loaded from `folder` (with the denoiser from `file` and the components
/// `parts` names, if given) was loaded from.
pub fn loaded_from(folder: &Path, file: Option<&Path>, parts: &ComponentFiles) -> ModelSource {
    match file {
        Some(file) => ModelSource::Checkpoint {
            file: file.to_path_buf(),
            config: Some(folder.to_path_buf()),
            parts: parts.clone(),
        },
        None => ModelSource::Folder(folder.to_path_buf()),
    }
}

/// Whether `file` holds the text encoder (read as `text`'s names, of its width) or the VAE (of
/// `vae`'s blocks and latent channels) that a denoiser file's built-in configs need, for a
/// family with one of each.
pub fn part_fits(
    component: &Component,
    file: &Path,
    text: (&TextEncoderNames, usize),
    vae: &VaeConfig,
) -> bool {
    match component.kind.file_part() {
        Some(FilePart::TextEncoder) => text_encoder_width(file, text.0) == Some(text.1),
        Some(FilePart::Vae) => vae_fits(file, vae),
        None => false,
    }
}

/// Where a diffusers-folder family's weights come from: its folder, and the files given in place
/// of its parts (a denoiser file, `--text-encoder`, `--vae`). Read from headers only, for the
/// memory estimate.
pub struct WeightFiles<'a> {
    pub folder: &'a Path,
    pub denoiser: Option<&'a Path>,
    pub parts: &'a ComponentFiles,
    /// Which file of a folder component a run reads (`.fp16` or not).
    pub precision: Precision,
}

impl WeightFiles<'_> {
    /// Parameters of the text encoder's tensors `counted` picks (by the names the model loads).
    pub fn text_encoder_parameters(
        &self,
        names: &TextEncoderNames,
        counted: &dyn Fn(&str) -> bool,
    ) -> Result<u64> {
        match self.parts.text_encoder(names.what)? {
            Some(file) => Ok(text_encoder_file(file, names)?.parameters(counted)),
            None => self.folder_parameters(TEXT_ENCODER, counted),
        }
    }

    /// Parameters of the denoiser's tensors `counted` picks (by diffusers' names; a denoiser
    /// file is read with `names`).
    pub fn denoiser_parameters(
        &self,
        names: &DenoiserNames,
        counted: &dyn Fn(&str) -> bool,
    ) -> Result<u64> {
        match self.denoiser {
            Some(file) => Ok(denoiser_file(file, names)?.parameters(counted)),
            None => self.folder_parameters(DENOISER, counted),
        }
    }

    /// What the denoiser keeps in its codes (GGUF, FP8).
    pub fn denoiser_kept(&self) -> Result<KeptWeights> {
        match self.denoiser {
            Some(file) => denoiser_kept(file),
            None => crate::io::sharded::component_kept(
                &self.folder.join(DENOISER.0),
                DENOISER.1,
                self.precision,
            ),
        }
    }

    /// Parameters of the VAE's tensors `counted` picks (by diffusers' names), for a VAE of
    /// `blocks` blocks.
    pub fn vae_parameters(&self, blocks: usize, counted: &dyn Fn(&str) -> bool) -> Result<u64> {
        match &self.parts.vae {
            Some(file) => Ok(vae_file(file, blocks)?.parameters(counted)),
            None => self.folder_parameters(VAE, counted),
        }
    }

    fn folder_parameters(
        &self,
        (sub, stem): (&str, &str),
        counted: &dyn Fn(&str) -> bool,
    ) -> Result<u64> {
        crate::io::sharded::component_parameters(
            &self.folder.join(sub),
            stem,
            self.precision,
            counted,
        )
    }
}
