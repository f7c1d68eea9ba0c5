//! The SD Bench benchmark: the standard workload `sd15-512-30`, a runner that times every stage
//! with device syncs while telemetry samples in the background, image checks, scores, the
//! schema-versioned result JSON, summaries, and submission with an outbox.

pub mod checks;
pub mod comparison;
pub mod device_memory;
pub mod error;
pub mod events;
pub mod kernels;
pub mod metrics;
pub mod model_name;
pub mod result;
pub mod runner;
pub mod stats;
pub mod submit;
pub mod summary;
pub mod vram_report;
pub mod workload;

pub use error::{BenchError, Result};
pub use model_name::ModelName;
pub use result::{BenchResult, SCHEMA_VERSION};
pub use runner::{run, Event, ModelChoice, RunOptions, RunOutput};
pub use sdbench_diffusion::Preset;
pub use workload::{Overrides, Workload};
