//! FLUX.2 [klein] (black-forest-labs/FLUX.2-klein-4B): a Qwen3 text encoder whose hidden states 9,
//! 18 and 27 are stacked per token, a double/single-stream rectified-flow transformer on 2x2
//! patches of a 32-channel VAE's latents, and flow-matching Euler steps with FLUX.2's empirical
//! time shift. diffusers' `Flux2KleinPipeline` is the reference.

pub mod bfl_names;
mod components;
pub mod family;
pub mod latents;
mod op_cases;
pub mod pipeline;
pub mod spec;
pub mod transformer;

#[cfg(test)]
mod memory_tests;

use std::path::Path;

use serde::Deserialize;

use crate::error::{DiffusionError, Result};
use crate::models::config::VaeConfig;
use crate::pipeline::GenerateRequest;
use crate::reference_pictures;
pub use family::FAMILY;

/// The tokens every prompt is padded or cut to (the pipeline's `max_sequence_length`).
pub const PROMPT_TOKENS: usize = 512;
/// The text encoder's hidden states the transformer is conditioned on (`text_encoder_out_layers`).
pub const HIDDEN_STATE_LAYERS: [usize; 3] = [9, 18, 27];

/// The most reference pictures one request takes: each adds up to 4096 tokens to every step. Their
/// tokens follow the image's in the transformer's sequence at time positions 10, 20, ... (one per
/// picture, `latents::TIME_STEP`), and only the image's tokens are read back.
pub const MAX_REFERENCE_PICTURES: usize = 4;

/// FLUX.2's `compute_empirical_mu`: the time shift fitted to the image's token count and the
/// number of steps (beyond 4300 tokens, to the token count alone).
pub fn empirical_mu(image_tokens: usize, steps: usize) -> f64 {
    let (a1, b1) = (8.73809524e-05, 1.89833333);
    let (a2, b2) = (0.00016927, 0.45666666);
    let tokens = image_tokens as f64;
    if image_tokens > 4300 {
        return a2 * tokens + b2;
    }
    let m_200 = a2 * tokens + b2;
    let m_10 = a1 * tokens + b1;
    let a = (m_200 - m_10) / 190.0;
    let b = m_200 - 200.0 * a;
    a * steps as f64 + b
}

/// What FLUX.2 klein cannot do for any request, checked before a model is loaded: start from a
/// picture, take more than `MAX_REFERENCE_PICTURES` reference pictures or one too small or too
/// narrow (its scheduler is the registry's to check).
pub fn check_family_request(request: &GenerateRequest) -> Result<()> {
    if request.init_image.is_some() {
        return Err(DiffusionError::Request(
            "FLUX.2 klein does not start from a picture (--init-image and strength; the app's \"Start from a picture\"); give it as a reference picture instead (--reference-image; the app's \"Reference pictures\"), which the image is conditioned on".into(),
        ));
    }
    if request.reference_images.len() > MAX_REFERENCE_PICTURES {
        return Err(DiffusionError::Request(format!(
            "{} reference pictures given; FLUX.2 klein takes at most {} here",
            request.reference_images.len(),
            MAX_REFERENCE_PICTURES
        )));
    }
    for image in &request.reference_images {
        reference_pictures::check(image)?;
    }
    Ok(())
}

/// The text encoder's layers the pipeline runs (up to the last hidden state it reads).
pub fn text_layers() -> usize {
    HIDDEN_STATE_LAYERS.iter().copied().max().unwrap_or(0)
}

/// `vae/config.json` of `AutoencoderKLFlux2`: an `AutoencoderKL` (read as one) plus the latent
/// batch norm and patching.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct Flux2VaeExtras {
    pub batch_norm_eps: f64,
    pub patch_size: Vec<usize>,
    pub decoder_block_out_channels: Option<Vec<usize>>,
}

impl Default for Flux2VaeExtras {
    fn default() -> Self {
        Flux2VaeExtras {
            batch_norm_eps: 1e-4,
            patch_size: vec![2, 2],
            decoder_block_out_channels: None,
        }
    }
}

impl Flux2VaeExtras {
    pub fn validate(&self, vae: &VaeConfig, path: &Path) -> Result<()> {
        if self.patch_size != [2, 2] {
            return Err(DiffusionError::unsupported(
                path,
                format!("VAE patch_size {:?} (supported: [2, 2])", self.patch_size),
            ));
        }
        if self
            .decoder_block_out_channels
            .as_ref()
            .is_some_and(|d| *d != vae.block_out_channels)
        {
            return Err(DiffusionError::unsupported(
                path,
                "VAE decoder_block_out_channels different from block_out_channels",
            ));
        }
        if !(self.batch_norm_eps.is_finite() && self.batch_norm_eps >= 0.0) {
            return Err(DiffusionError::config(
                path,
                "`batch_norm_eps` must be a number >= 0",
            ));
        }
        Ok(())
    }
}

/// black-forest-labs/FLUX.2-klein-4B's `vae/config.json` (FLUX.2's VAE).
pub fn klein_vae() -> VaeConfig {
    VaeConfig {
        latent_channels: 32,
        sample_size: 1024,
        ..VaeConfig::sd15()
    }
}

/// black-forest-labs/FLUX.2-klein-4B's `scheduler/scheduler_config.json`.
pub const KLEIN_SCHEDULER: &str = r#"{
  "_class_name": "FlowMatchEulerDiscreteScheduler",
  "_diffusers_version": "0.37.0.dev0",
  "base_image_seq_len": 256,
  "base_shift": 0.5,
  "invert_sigmas": false,
  "max_image_seq_len": 4096,
  "max_shift": 1.15,
  "num_train_timesteps": 1000,
  "shift": 3.0,
  "shift_terminal": null,
  "stochastic_sampling": false,
  "time_shift_type": "exponential",
  "use_beta_sigmas": false,
  "use_dynamic_shifting": true,
  "use_exponential_sigmas": false,
  "use_karras_sigmas": false
}"#;
