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

pub type Result<T, E = BenchError> = std::result::Result<T, E>;

impl BenchError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BenchError::Io {
            path: path.into(),
            source,
        }
    }
}
