//! What both use cases, the benchmark (sdbench-bench) and a single generation (sdbench-generate),
//! need to run a model: the model a person names and where it resolves to (a folder, a file, the
//! Hugging Face cache or a download), the device and memory profile it is placed with, the events
//! a front end hears, the VRAM report, and the kinds of error a front end acts on.

pub mod device_memory;
pub mod error;
pub mod events;
pub mod hub_components;
pub mod local_models;
pub mod model_folders;
pub mod model_name;
pub mod telemetry_source;
pub mod vram_report;

pub use error::{ErrorKind, Result, SessionError};
pub use events::Event;
pub use model_name::ModelName;
