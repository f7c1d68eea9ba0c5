//! The image-generation engine on burn: the model families `pipeline::registry` lists, each a list
//! of components (text encoders, tokenizers, a UNet or diffusion transformer, a VAE, a scheduler),
//! loaded from diffusers folders, single files, GGUF or synthetic weights, and run on the best
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
pub use pipeline::denoiser_parts::{
    describe_parts, parts_for_denoiser_file, parts_lacking, preset_for_denoiser_file,
};
pub use pipeline::memory::MemoryProfile;
pub use pipeline::memory_need::{choose_auto, AutoChoice, ModelSize, RequestShape};
pub use pipeline::registry::{
    components_to_fetch, family_of, family_of_index, standard_workloads, FAMILIES, PLAIN_SYNTHETIC,
    STANDARD_WORKLOAD,
};
pub use pipeline::workload::{Prompts, WorkloadSpec};
pub use pipeline::{
    CancelToken, Component, ComponentFiles, ComponentKind, Family, FamilyDescriptor,
    GenerateRequest, Generated, GeneratedImage, GuidanceOptions, InitImage, InitialNoise,
    LoadOptions, ModelSource, ParameterCounts, Pipeline, Placement, Preset, Progress,
    SkipLayerGuidance, StepSync, TimedCall,
};
pub use scheduler::{PredictionType, SchedulerKind};
