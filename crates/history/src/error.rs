use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "the history database {path} cannot be used: {source} (if it is damaged, move it aside and a new one is made)"
    )]
    Database {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    #[error("the history database {path} was written by a newer SD Bench (schema {found}, this version reads up to {supported}); update SD Bench")]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error("no run {0} in the history")]
    NotFound(String),

    #[error("run {id} in the history is damaged: {problem}")]
    Damaged { id: String, problem: String },

    #[error("cannot make the history folder {path}: {source}")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(transparent)]
    Write(#[from] sdbench_bench::BenchError),
}

pub type Result<T, E = HistoryError> = std::result::Result<T, E>;

impl HistoryError {
    pub fn kind(&self) -> sdbench_session::ErrorKind {
        use sdbench_session::ErrorKind;
        match self {
            HistoryError::Database {
                source: rusqlite::Error::SqliteFailure(failure, _),
                ..
            } if failure.code == rusqlite::ErrorCode::DiskFull => ErrorKind::DiskFull,
            HistoryError::NotFound(_) => ErrorKind::NotFound,
            HistoryError::Folder { source, .. } => ErrorKind::of_io(source),
            HistoryError::Write(e) => e.kind(),
            _ => ErrorKind::Internal,
        }
    }
}
