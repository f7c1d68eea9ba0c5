//! The service's errors: a bad configuration or database failure (the server's fault or its
//! operator's), and a refused submission (the sender's, with the HTTP status that says so).

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Database(String),
    /// A submission or request the service will not take: `status` is a 4xx code.
    #[error("{reason}")]
    Refused { status: u16, reason: String },
}

impl ServerError {
    pub fn refused(status: u16, reason: impl Into<String>) -> ServerError {
        ServerError::Refused {
            status,
            reason: reason.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, ServerError>;
