//! Stable Diffusion 3 and 3.5 (stabilityai's SD3 Medium, SD3.5 Medium, Large and Large Turbo): two
//! CLIP text encoders and T5-XXL condition an MMDiT on 2x2 patches of a 16-channel VAE's
//! latents, stepped by flow-matching Euler with a static time shift. diffusers'
//! `StableDiffusion3Pipeline` is the reference.

pub mod family;
mod files;
mod generate;
#[cfg(test)]
mod memory_tests;
mod op_cases;
mod original_names;
pub mod pipeline;
mod spec;
pub mod transformer;

pub use family::FAMILY;

/// The tokens each CLIP prompt is padded and cut to (the tokenizers' `model_max_length`).
pub const CLIP_TOKENS: usize = 77;
/// The tokens T5's prompt is padded and cut to (the pipeline's `max_sequence_length`).
pub const T5_TOKENS: usize = 256;
