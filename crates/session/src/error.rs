//! The shared part's errors, and the kinds every front end acts on.

use sdbench_diffusion::DiffusionError;
use sdbench_hub::HubError;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Hub(#[from] HubError),

    #[error(transparent)]
    Engine(#[from] DiffusionError),

    /// The model name or setting does not name a usable model.
    #[error("{0}")]
    Model(String),

    #[error("cancelled")]
    Cancelled,
}

pub type Result<T, E = SessionError> = std::result::Result<T, E>;

impl SessionError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            SessionError::Cancelled => ErrorKind::Cancelled,
            SessionError::Hub(e) => ErrorKind::of_hub(e),
            SessionError::Engine(e) => ErrorKind::of_engine(e),
            SessionError::Model(_) => ErrorKind::BadInput,
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
