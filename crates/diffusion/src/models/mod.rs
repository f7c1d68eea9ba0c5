//! The networks, one folder per model family (`sd/`, `flux2/`) and what families share: CLIP and
//! its tokenizer, Qwen3 and its prompt, the KL VAE and its tiling, configs.

pub mod clip;
pub mod config;
pub mod flux2;
pub mod qwen3;
pub mod sd;
pub mod tokenizer;
pub mod vae;
pub mod vae_names;
pub mod vae_tiling;
pub mod zimage;
