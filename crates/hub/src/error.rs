//! The model store's one error type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("`{0}` is not a model id: expected `owner/name` (e.g. stable-diffusion-v1-5/stable-diffusion-v1-5), a local folder, or `synthetic`")]
    BadRepoId(String),

    #[error("cannot reach {url}: {reason}")]
    Network { url: String, reason: String },

    /// No route to the server at all (no DNS, connection refused): the machine is offline.
    #[error("cannot reach {url}: {reason} (is the network up?)")]
    Unreachable { url: String, reason: String },

    #[error("{url} answered HTTP {status}: {hint}")]
    Http {
        url: String,
        status: u16,
        hint: String,
    },

    #[error("the Hub listing of {repo} is not usable: {problem}")]
    Listing { repo: String, problem: String },

    #[error("{repo} is not a complete diffusers pipeline that SD Bench can run: {problem}")]
    NotAPipeline { repo: String, problem: String },

    #[error("{repo} is not in the model cache ({cache}) and the network is not available ({reason}); connect once and run `sdbench download --model {repo}`")]
    NotCached {
        repo: String,
        cache: PathBuf,
        reason: String,
    },

    #[error("downloaded {file} does not match the Hub's checksum (expected {expected}, got {actual}); the partial file was removed, run the command again")]
    Checksum {
        file: String,
        expected: String,
        actual: String,
    },

    #[error("{path}: {source}{hint}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
        hint: &'static str,
    },

    #[error("another download of {repo} is running (lock {lock}); wait for it to finish")]
    Busy { repo: String, lock: PathBuf },

    #[error("download cancelled; the partial files are kept and the next download resumes them")]
    Cancelled,
}

pub type Result<T, E = HubError> = std::result::Result<T, E>;

impl HubError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let hint = if source.kind() == std::io::ErrorKind::StorageFull {
            " (the disk is full: free some space or point HF_HUB_CACHE at a larger disk)"
        } else if source.kind() == std::io::ErrorKind::PermissionDenied {
            " (no permission: point HF_HUB_CACHE at a folder you can write)"
        } else {
            ""
        };
        HubError::Io {
            path: path.into(),
            source,
            hint,
        }
    }
}
