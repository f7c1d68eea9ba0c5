//! Z-Image (Tongyi-MAI/Z-Image-Turbo): a bare Qwen3 text encoder whose penultimate hidden states
//! of the prompt's real tokens condition a single-stream DiT on 2x2 patches of a 16-channel VAE's
//! latents, stepped by flow-matching Euler with a static time shift. diffusers' `ZImagePipeline`
//! is the reference. Not yet registered as a family: the transformer is here and checked against
//! diffusers; the pipeline comes next.

pub mod transformer;
