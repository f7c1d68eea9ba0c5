//! The networks of a Stable Diffusion pipeline, each a burn `Module` built from its config: CLIP
//! tokenizer and text encoder, UNet, VAE.

pub mod clip;
pub mod config;
pub mod tokenizer;
pub mod unet;
pub mod vae;
pub mod vae_tiling;
