//! Stable Diffusion 1.x, 2.x and XL: CLIP text encoders, the conditional UNet, the KL VAE and the
//! SD schedulers, as diffusers' `StableDiffusionPipeline` and `StableDiffusionXLPipeline` run them.

pub mod generate;
pub mod pipeline;
pub mod presets;
pub mod spec;
pub mod unet;
