//! The SD Bench benchmark: the standard workloads (one or more per family), a runner that times
//! every stage with device syncs while telemetry samples in the background, image checks, scores,
//! the schema-versioned result JSON, summaries, and submission with an outbox. Finding and placing
//! the model, the events and error kinds are sdbench-session's, shared with single generations.

pub mod checks;
pub mod comparison;
pub mod error;
pub mod kernels;
pub mod metrics;
pub mod result;
pub mod runner;
pub mod stats;
pub mod submit;
pub mod summary;
pub mod sweep;
pub mod workload;

pub use error::{BenchError, Result};
pub use result::{BenchResult, SCHEMA_VERSION};
pub use runner::{run, Event, ModelChoice, RunOptions, RunOutput};
pub use sdbench_diffusion::Preset;
pub use workload::{Overrides, Workload};
