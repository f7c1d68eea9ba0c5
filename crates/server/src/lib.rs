//! The SD Bench results service: `POST /api/v1/results` takes a result (checked, stored once),
//! the API reads runs, the leaderboard and per-GPU distributions back, and server-rendered pages
//! show them. Storage is SQLite (one file) or PostgreSQL (shared by several instances).

pub mod api;
pub mod checks;
pub mod db;
pub mod error;
pub mod pages;
pub mod quality;
pub mod rate_limit;
pub mod reference;
pub mod store;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

pub use error::{Result, ServerError};

use crate::checks::SchemaCheck;
use crate::db::Db;
use crate::rate_limit::RateLimit;
use crate::reference::ReferenceTable;

/// How a service instance is set up.
#[derive(Debug, Clone)]
pub struct Config {
    /// `postgres://…`, or `None` for SQLite in `data_dir`.
    pub database: Option<String>,
    pub data_dir: PathBuf,
    /// The reference hash table (JSON); `None`: the built-in one.
    pub reference_hashes: Option<PathBuf>,
    /// Submissions per client address per minute (and in a burst); 0: no limit.
    pub submissions_per_minute: u32,
    /// Take the client's address from `X-Forwarded-For` (behind a trusted load balancer).
    pub trust_forwarded_for: bool,
}

/// The built-in reference hashes: empty until a machine that can download the real weights fills
/// it (`scripts/reference-hashes`, see docs/server.md).
pub const BUILT_IN_REFERENCES: &str = include_str!("../reference-hashes.json");

/// Everything a request needs.
pub struct Service {
    pub db: Db,
    pub schema: SchemaCheck,
    pub references: ReferenceTable,
    pub rate: RateLimit,
    pub trust_forwarded_for: bool,
}

pub type Shared = Arc<Service>;

impl Service {
    /// Opens (and migrates) the database and loads the reference table.
    pub fn open(config: &Config) -> Result<Service> {
        let references = match &config.reference_hashes {
            Some(path) => ReferenceTable::load(path)?,
            None => ReferenceTable::parse(BUILT_IN_REFERENCES)?,
        };
        Ok(Service {
            db: Db::open(config.database.as_deref(), &config.data_dir)?,
            schema: SchemaCheck::new()?,
            references,
            rate: RateLimit::new(config.submissions_per_minute),
            trust_forwarded_for: config.trust_forwarded_for,
        })
    }
}

/// Every route of the service.
pub fn router(service: Shared) -> Router {
    Router::new()
        .route("/api/v1/results", post(api::submit))
        .route("/api/v1/results/{id}", get(api::result))
        .route("/api/v1/leaderboard", get(api::leaderboard))
        .route("/api/v1/gpus/{name}", get(api::gpu))
        .route("/api/v1/health", get(api::health))
        .route("/", get(pages::leaderboard))
        .route("/gpus/{name}", get(pages::gpu))
        .route("/runs/{id}", get(pages::run))
        .route("/compare", get(pages::compare))
        .layer(DefaultBodyLimit::max(checks::MAX_BODY_BYTES))
        .with_state(service)
}

/// Serves on `listener` until `shutdown` completes (requests in flight finish first).
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: Shared,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        router(service).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
