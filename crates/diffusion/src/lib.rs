//! Stable Diffusion (1.x, 2.x, XL) on burn: CLIP tokenizers and text encoders, UNet, VAE and
//! schedulers, loaded from a diffusers model folder (or synthetic weights) and run on the best
//! available backend.
//! Knows nothing of benchmarks, desktop shells or terminals.

pub mod device;
pub mod error;
pub mod io;
pub mod kernel_cache;
pub mod limits;
pub mod models;
pub mod nn;
pub mod noise;
pub mod op_timing;
pub mod parity;
pub mod pipeline;
pub mod reference_pictures;
pub mod scheduler;

pub use device::{
    AllocatorMemory, BackendKind, BackendRequest, DeviceInfo, DeviceRequest, SelectedDevice,
};
pub use error::{DiffusionError, Result};
pub use io::weights::Precision;
pub use pipeline::memory::MemoryProfile;
pub use pipeline::memory_need::{choose_auto, AutoChoice, ModelSize, RequestShape};
pub use pipeline::registry::{
    family_of, parts_for_denoiser_file, preset_for_denoiser_file, standard_workloads, FAMILIES,
    PLAIN_SYNTHETIC, STANDARD_WORKLOAD,
};
pub use pipeline::workload::{Prompts, WorkloadSpec};
pub use pipeline::{
    CancelToken, ComponentFiles, Family, FamilyDescriptor, GenerateRequest, Generated,
    GeneratedImage, GuidanceOptions, InitImage, InitialNoise, LoadOptions, ModelSource,
    ParameterCounts, Pipeline, Placement, Preset, Progress, StepSync, TimedCall,
};
pub use scheduler::{PredictionType, SchedulerKind};
