//! The benchmark's one error type.

use std::path::PathBuf;

use sdbench_session::{ErrorKind, SessionError};

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

/// The shared part's errors keep their meaning: a model that cannot be used is `Model`, and so on.
impl From<SessionError> for BenchError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Hub(e) => BenchError::Hub(e),
            SessionError::Engine(e) => BenchError::Engine(e),
            SessionError::Model(problem) => BenchError::Model(problem),
            SessionError::Cancelled => BenchError::Cancelled,
        }
    }
}

impl BenchError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BenchError::Io {
            path: path.into(),
            source,
        }
    }
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
