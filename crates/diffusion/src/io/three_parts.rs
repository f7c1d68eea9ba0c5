//! A model read as three parts (a text encoder, a denoiser, a VAE) from a diffusers folder, each
//! part's weights from a file of its own where one is given: the opening and sizing that the
//! families built this way (the diffusion transformers) share.

use std::path::PathBuf;

use crate::error::Result;
use crate::io::component_file::{
    denoiser_weights, text_encoder_weights, vae_weights, DenoiserNames, TextEncoderNames,
    WeightFiles,
};
use crate::io::weights::{Precision, WeightSource};
use crate::nn::blocks::KeptWeights;

/// How a family names each part's tensors, and which of them it leaves unread.
pub struct PartNames<'a> {
    pub text_encoder: TextEncoderNames,
    /// Name prefixes of the text encoder's tensors not read (later layers, a head).
    pub text_unused: &'a [String],
    pub denoiser: &'a DenoiserNames,
    pub denoiser_unused: &'a [&'a str],
    /// The VAE's blocks (how a VAE file's names are read).
    pub vae_blocks: usize,
    /// Name prefixes of the VAE's encoder (counted apart from its decoder).
    pub vae_encoder: &'a [&'a str],
    /// Name prefixes of VAE tensors counted in neither (batch-norm statistics).
    pub vae_uncounted: &'a [&'a str],
}

/// The three parts' weights, in the order text encoder, denoiser, VAE.
pub type PartSources = [Box<dyn WeightSource>; 3];

/// Parameters of each part, from its files' headers.
pub struct PartParameters {
    pub text_encoder: u64,
    pub denoiser: u64,
    /// What the denoiser keeps in its codes (GGUF, FP8).
    pub denoiser_kept: KeptWeights,
    pub vae_decoder: u64,
    pub vae_encoder: u64,
}

impl PartNames<'_> {
    /// Each part's weights from `files`, in the precision given for it (text encoder, denoiser,
    /// VAE), with `vae_unused` left unread of the VAE; and the files read, in that order.
    pub fn open(
        &self,
        files: &WeightFiles,
        [text, denoiser, vae]: [Precision; 3],
        vae_unused: &[&str],
    ) -> Result<(PartSources, Vec<PathBuf>)> {
        let text_unused: Vec<&str> = self.text_unused.iter().map(String::as_str).collect();
        let (te, mut read) = text_encoder_weights(
            files.folder,
            files.parts.text_encoder(self.text_encoder.what)?,
            &self.text_encoder,
            text,
            &text_unused,
        )?;
        let (tr, tr_files) = denoiser_weights(
            files.folder,
            files.denoiser,
            self.denoiser,
            denoiser,
            self.denoiser_unused,
        )?;
        let (va, vae_files) = vae_weights(
            files.folder,
            files.parts.vae.as_deref(),
            self.vae_blocks,
            vae,
            vae_unused,
        )?;
        read.extend(tr_files);
        read.extend(vae_files);
        Ok(([te, tr, va], read))
    }

    /// Parameters of the tensors each part reads, from the files' headers (nothing is loaded).
    pub fn parameters(&self, files: &WeightFiles) -> Result<PartParameters> {
        let starts = |name: &str, prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
        let text_read = |name: &str| {
            !self
                .text_unused
                .iter()
                .any(|p| name.starts_with(p.as_str()))
        };
        let encoder = |name: &str| starts(name, self.vae_encoder);
        let decoder = |name: &str| !encoder(name) && !starts(name, self.vae_uncounted);
        Ok(PartParameters {
            text_encoder: files.text_encoder_parameters(&self.text_encoder, &text_read)?,
            denoiser: files
                .denoiser_parameters(self.denoiser, &|name| !starts(name, self.denoiser_unused))?,
            denoiser_kept: files.denoiser_kept()?,
            vae_decoder: files.vae_parameters(self.vae_blocks, &decoder)?,
            vae_encoder: files.vae_parameters(self.vae_blocks, &encoder)?,
        })
    }
}
