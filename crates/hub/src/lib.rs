//! SD Bench's model store: Hub model ids, the Hugging Face cache layout shared with Python tools,
//! downloads that resume and verify (of each pipeline, the components the engine names), offline
//! use of cached models, and cleanup.

pub mod cache;
pub mod components;
pub mod download;
pub mod error;
pub mod listing;
pub mod repo;
mod transfer;

pub use cache::{CachedModel, CachedSnapshot};
pub use components::{ChooseComponents, WantedComponent};
pub use download::{DownloadProgress, Hub, Listing, RemoteFile, Resolved, RetryPolicy, Snapshot};
pub use error::{HubError, Result};
pub use repo::{HubSettings, RepoId, DEFAULT_MODEL};
