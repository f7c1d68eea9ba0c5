//! FLUX.1 (black-forest-labs' FLUX.1 [schnell], [dev] and Krea [dev]): CLIP-L's pooled output and
//! T5-XXL's states condition a double/single-stream rectified-flow transformer on 2x2 patches of
//! a 16-channel VAE's latents, stepped by flow-matching Euler; [dev] takes the guidance scale as
//! an input of the model (guidance-distilled) instead of a second pass. diffusers'
//! `FluxPipeline` is the reference.

pub mod bfl_names;
pub mod family;
mod files;
mod generate;
pub mod latents;
#[cfg(test)]
mod memory_tests;
pub mod pipeline;
mod spec;
pub mod transformer;

pub use family::FAMILY;

/// T5's sequence length for a model without a guidance embedding (schnell, as Black Forest Labs
/// run it).
pub const SCHNELL_T5_TOKENS: usize = 256;
/// For a model with one ([dev]: diffusers' `max_sequence_length` default).
pub const DEV_T5_TOKENS: usize = 512;
