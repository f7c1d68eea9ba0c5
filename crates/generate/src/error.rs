use sdbench_diffusion::DiffusionError;
use sdbench_session::{ErrorKind, SessionError};

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The request cannot be made (a size, a step count, a picture): nothing was loaded.
    #[error("{0}")]
    Request(String),

    /// Finding, placing or loading the model.
    #[error(transparent)]
    Session(#[from] SessionError),

    #[error(transparent)]
    Engine(#[from] DiffusionError),
}

pub type Result<T, E = GenerateError> = std::result::Result<T, E>;

impl GenerateError {
    /// What kind of trouble this is, for a front end's next step.
    pub fn kind(&self) -> ErrorKind {
        match self {
            GenerateError::Request(_) => ErrorKind::BadInput,
            GenerateError::Session(e) => e.kind(),
            GenerateError::Engine(e) => ErrorKind::of_engine(e),
        }
    }
}
