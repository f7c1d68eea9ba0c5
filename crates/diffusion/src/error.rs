//! The engine's one error type.

use std::path::PathBuf;

/// Everything that can go wrong while loading or running a pipeline. Each variant names what is
/// wrong (the file, the tensor, the value) so that a front end can tell a person what to do.
#[derive(Debug, thiserror::Error)]
pub enum DiffusionError {
    #[error("model folder {path} {problem}")]
    ModelFolder { path: PathBuf, problem: String },

    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("invalid config {path}: {problem}")]
    Config { path: PathBuf, problem: String },

    #[error("unsupported model in {path}: {problem}")]
    Unsupported { path: PathBuf, problem: String },

    #[error("weights file {path}: {problem}")]
    Weights { path: PathBuf, problem: String },

    #[error("weights file {path}: tensor `{tensor}` {problem}")]
    Tensor {
        path: PathBuf,
        tensor: String,
        problem: String,
    },

    #[error("tokenizer {path}: {problem}")]
    Tokenizer { path: PathBuf, problem: String },

    #[error("invalid request: {0}")]
    Request(String),

    #[error("latents file {path}: {problem}")]
    Latents { path: PathBuf, problem: String },

    #[error("backend `{backend}` is not usable: {reason}")]
    BackendUnavailable { backend: String, reason: String },

    #[error("the {backend} backend failed: {message}")]
    Backend { backend: String, message: String },

    /// The device ran out of memory while working (an allocation failed, or a tensor was larger
    /// than its largest buffer); `message` says what to try.
    #[error("the {backend} backend failed: {message}")]
    OutOfMemory { backend: String, message: String },

    /// The placement needs more device memory than the device has (checked before any work).
    #[error("{0}")]
    DoesNotFit(String),

    #[error("generation was cancelled")]
    Cancelled,

    #[error("cannot use image {path}: {problem}")]
    ImageRead { path: PathBuf, problem: String },

    /// Encoding problems come as `io::ErrorKind::Other`; the file's own errors keep the OS's kind
    /// (a full disk is `StorageFull`).
    #[error("cannot write image {path}: {source}")]
    ImageWrite {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = DiffusionError> = std::result::Result<T, E>;

impl DiffusionError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DiffusionError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn config(path: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        DiffusionError::Config {
            path: path.into(),
            problem: problem.into(),
        }
    }

    pub(crate) fn unsupported(path: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        DiffusionError::Unsupported {
            path: path.into(),
            problem: problem.into(),
        }
    }
}
