//! The networks the families share, and nothing that knows a family: CLIP and its tokenizer,
//! Qwen3 and its prompt, T5 and its tokenizer, the KL VAE, its tensor names and its tiling, and
//! the configs they read.

pub mod clip;
pub mod clip_vision;
pub mod config;
pub mod qwen3;
pub mod t5;
pub mod tokenizer;
pub mod vae;
pub mod vae_file;
pub mod vae_names;
pub mod vae_tiling;
