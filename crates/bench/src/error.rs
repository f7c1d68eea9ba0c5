//! The benchmark's one error type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Hub(#[from] sdbench_hub::HubError),

    #[error(transparent)]
    Engine(#[from] sdbench_diffusion::DiffusionError),

    /// The model name or setting does not name a usable model.
    #[error("{0}")]
    Model(String),

    #[error("invalid workload: {0}")]
    Workload(String),

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("result file {path} is not a valid SD Bench result: {problem}")]
    BadResult { path: PathBuf, problem: String },

    #[error("could not submit to {endpoint}: {reason}")]
    Submit { endpoint: String, reason: String },

    #[error("the benchmark was cancelled; nothing was saved")]
    Cancelled,
}

use sdbench_diffusion::DiffusionError;
use sdbench_hub::HubError;

pub type Result<T, E = BenchError> = std::result::Result<T, E>;

impl BenchError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BenchError::Io {
            path: path.into(),
            source,
        }
    }
}

/// What kind of trouble an error is, so that a front end can offer the right next step (the app's
/// window acts on it; the text says the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    NoDevice,
    OutOfMemory,
    Network,
    DiskFull,
    ModelMissing,
    BadModel,
    BadInput,
    Busy,
    NotFound,
    Cancelled,
    Internal,
}

impl ErrorKind {
    pub fn of_engine(e: &DiffusionError) -> ErrorKind {
        use DiffusionError as E;
        match e {
            E::Cancelled => ErrorKind::Cancelled,
            E::BackendUnavailable { .. } => ErrorKind::NoDevice,
            E::DoesNotFit(_) | E::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            E::Request(_) | E::Latents { .. } | E::ImageRead { .. } => ErrorKind::BadInput,
            E::ModelFolder { .. }
            | E::Config { .. }
            | E::Unsupported { .. }
            | E::Weights { .. }
            | E::Tensor { .. }
            | E::Tokenizer { .. } => ErrorKind::BadModel,
            E::Io { source, .. } | E::ImageWrite { source, .. } => ErrorKind::of_io(source),
            E::Backend { .. } => ErrorKind::Internal,
        }
    }

    pub fn of_hub(e: &HubError) -> ErrorKind {
        use HubError as E;
        match e {
            E::Cancelled => ErrorKind::Cancelled,
            E::Network { .. } | E::Unreachable { .. } | E::Http { .. } => ErrorKind::Network,
            E::NotCached { .. } => ErrorKind::ModelMissing,
            E::BadRepoId(_) => ErrorKind::BadInput,
            E::NotAPipeline { .. } | E::Listing { .. } | E::Checksum { .. } => ErrorKind::BadModel,
            E::Busy { .. } => ErrorKind::Busy,
            E::Io { source, .. } => ErrorKind::of_io(source),
        }
    }

    pub fn of_io(e: &std::io::Error) -> ErrorKind {
        if e.kind() == std::io::ErrorKind::StorageFull || is_disk_full_text(&e.to_string()) {
            ErrorKind::DiskFull
        } else {
            ErrorKind::Internal
        }
    }
}

/// An OS's "no space" message, where only its text came through.
fn is_disk_full_text(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        "no space left",
        "os error 28",
        "not enough space on the disk",
    ]
    .iter()
    .any(|m| lower.contains(m))
}

impl BenchError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            BenchError::Cancelled => ErrorKind::Cancelled,
            BenchError::Hub(e) => ErrorKind::of_hub(e),
            BenchError::Engine(e) => ErrorKind::of_engine(e),
            BenchError::Model(_) | BenchError::Workload(_) | BenchError::BadResult { .. } => {
                ErrorKind::BadInput
            }
            BenchError::Submit { .. } => ErrorKind::Network,
            BenchError::Io { source, .. } => ErrorKind::of_io(source),
        }
    }
}
