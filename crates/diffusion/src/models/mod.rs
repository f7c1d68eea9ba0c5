//! The model families, one folder each (the registry lists them), and the networks they share:
//! CLIP and its tokenizer, Qwen3 and its prompt, T5 and its tokenizer, the KL VAE and its tiling,
//! configs.

pub mod clip;
pub mod config;
pub mod flux2;
pub mod qwen3;
pub mod sd;
pub mod sd3;
pub mod t5;
pub mod tokenizer;
pub mod vae;
pub mod vae_names;
pub mod vae_tiling;
pub mod zimage;
