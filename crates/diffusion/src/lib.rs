//! Stable Diffusion (1.x, 2.x, XL) on burn: CLIP tokenizers and text encoders, UNet, VAE and
//! schedulers, loaded from a diffusers model folder (or synthetic weights) and run on the best
//! available backend.
//! Knows nothing of benchmarks, desktop shells or terminals.

pub mod checkpoint;
pub mod clip;
pub mod config;
pub mod device;
pub mod error;
pub mod image;
pub mod nn;
pub mod noise;
pub mod npy;
pub mod pipeline;
pub mod resnet;
pub mod safetensors;
pub mod scheduler;
pub mod tokenizer;
pub mod unet;
pub mod vae;
pub mod weights;

pub use device::{AllocatorMemory, BackendKind, BackendRequest, SelectedDevice};
pub use error::{DiffusionError, Result};
pub use pipeline::{
    CancelToken, Family, GenerateRequest, Generated, GeneratedImage, InitImage, InitialNoise,
    LoadOptions, ModelSource, ParameterCounts, Pipeline, Placement, Preset, Progress,
};
pub use scheduler::{PredictionType, SchedulerKind};
pub use unet::{Conditioning, TextTime};
pub use weights::Precision;
