//! The image-generation engine on burn: the model families `engine::registry` lists, each a list
//! of components (text encoders, tokenizers, a UNet or diffusion transformer, a VAE, a scheduler),
//! loaded from diffusers folders, single files, GGUF or synthetic weights, and run on the best
//! available backend.
//! Knows nothing of benchmarks, desktop shells or terminals.

pub mod device;
pub mod engine;
pub mod error;
pub mod families;
pub mod io;
pub mod models;
pub mod nn;
pub mod noise;
pub mod parity;
pub mod pipeline;
pub mod quality;
pub mod reference_pictures;
pub mod scheduler;

// The modules front ends reach by these paths, kept where their layer is.
pub use device::kernel_cache;
pub use pipeline::{limits, op_timing};

pub use device::{
    AllocatorMemory, BackendKind, BackendRequest, DeviceInfo, DeviceRequest, SelectedDevice,
};
pub use engine::denoiser_parts::{
    describe_parts, parts_for_denoiser_file, parts_lacking, preset_for_denoiser_file,
};
pub use engine::registry::{
    components_to_fetch, family_of, family_of_index, standard_workloads, FAMILIES, PLAIN_SYNTHETIC,
    STANDARD_WORKLOAD,
};
pub use engine::{choose_auto, Pipeline};
pub use error::{DiffusionError, Result};
pub use io::weights::Precision;
pub use pipeline::family::WorkloadSpec;
pub use pipeline::host_memory::AutoChoice;
pub use pipeline::memory::MemoryProfile;
pub use pipeline::memory_need::{ModelSize, RequestShape};
pub use pipeline::workload::Prompts;
pub use pipeline::{
    CancelToken, Component, ComponentFiles, ComponentKind, Family, FamilyDescriptor,
    GenerateRequest, Generated, GeneratedImage, GuidanceOptions, InitImage, InitialNoise,
    LoadOptions, ModelSource, ParameterCounts, Placement, Preset, Progress, SkipLayerGuidance,
    StepSync, TimedCall,
};
pub use scheduler::{PredictionType, SchedulerKind};
