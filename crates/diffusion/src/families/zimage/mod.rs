//! Z-Image (Tongyi-MAI/Z-Image-Turbo): a bare Qwen3 text encoder whose penultimate hidden states
//! of the prompt's real tokens condition a single-stream DiT on 2x2 patches of a 16-channel VAE's
//! latents, stepped by flow-matching Euler with a static time shift. diffusers' `ZImagePipeline`
//! is the reference.

pub mod family;
mod op_cases;
pub mod original_names;
pub mod pipeline;
mod spec;
pub mod transformer;

pub use family::FAMILY;

/// The tokens a prompt is cut to (the pipeline's `max_sequence_length`); only its real tokens
/// reach the transformer.
pub const PROMPT_TOKENS: usize = 512;
