//! The JSON API, version 1.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;

use sdbench_bench::submit::{Comparison, QualityComparison, ServiceReply};
use sdbench_bench::workload::STANDARD_NAME;

use crate::checks::MAX_BODY_BYTES;
use crate::error::ServerError;
use crate::store::{self, percentile_of, Distribution, Filter, HardwareFilter, RunRow, Stored};
use crate::Shared;

impl ServerError {
    /// The status and the message a client gets: a refusal's reason, or for the service's own
    /// failures a plain sentence (the details, such as a database's message, go to the log).
    pub(crate) fn for_client(&self) -> (StatusCode, String) {
        match self {
            ServerError::Refused { status, reason } => (
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST),
                reason.clone(),
            ),
            other => {
                eprintln!("error: {other}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the service failed to handle this request (its log says why); try again later"
                        .to_string(),
                )
            }
        }
    }
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let (status, message) = self.for_client();
        (status, Json(json!({ "error": message }))).into_response()
    }
}

/// Database calls in progress at once; more requests wait their turn.
const DATABASE_WORKERS: usize = 32;
static WORKERS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(DATABASE_WORKERS);

/// Runs blocking database work off the async threads, on a plain thread: the blocking
/// PostgreSQL client drives its own runtime, which tokio's blocking pool forbids.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> crate::Result<T> {
    let failed =
        |e: &dyn std::fmt::Display| ServerError::Database(format!("a database task failed: {e}"));
    let _permit = WORKERS.acquire().await.map_err(|e| failed(&e))?;
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("sdbench-server-db".into())
        .spawn(move || {
            let _ = done.send(work());
        })
        .map_err(|e| failed(&e))?;
    result.await.map_err(|e| failed(&e))?
}

/// The runs `query` selects (of `gpu`, if given), fastest first: what the leaderboard and the GPU
/// lists, in JSON and as pages, are made from.
pub(crate) async fn list_runs(
    service: Shared,
    query: &FilterQuery,
    gpu: Option<String>,
) -> crate::Result<Vec<RunRow>> {
    let filter = query.filter();
    blocking(move || store::runs(&service.db, &filter, gpu.as_deref())).await
}

/// The filters every list takes: `workload` (default the standard one; `any` for all),
/// `backend`, `precision`, `profile` (memory profile), `kind` (`standard`, the default, or
/// `all` to include custom runs) and `hardware` (`throttled` for throttled runs only, `any` for
/// all; by default throttled runs are left out, ranked apart).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct FilterQuery {
    pub workload: Option<String>,
    pub backend: Option<String>,
    pub precision: Option<String>,
    pub profile: Option<String>,
    pub kind: Option<String>,
    pub hardware: Option<String>,
    /// On a GPU's distribution: images per minute to place among its runs.
    pub value: Option<f64>,
}

impl FilterQuery {
    pub fn filter(&self) -> Filter {
        let given = |v: &Option<String>| v.clone().filter(|s| !s.is_empty() && s != "any");
        Filter {
            workload: match self.workload.as_deref() {
                None | Some("") => Some(STANDARD_NAME.to_string()),
                _ => given(&self.workload),
            },
            backend: given(&self.backend),
            precision: given(&self.precision),
            profile: given(&self.profile),
            // Custom runs are never standard: asking for them asks for all of them.
            standard_only: self.kind.as_deref() != Some("all")
                && self.workload.as_deref() != Some("custom"),
            hardware: match self.hardware.as_deref() {
                Some("throttled") => HardwareFilter::Throttled,
                Some("any") => HardwareFilter::Any,
                _ => HardwareFilter::NotThrottled,
            },
        }
    }
}

/// Where a request came from: the socket's address, or the first `X-Forwarded-For` entry when
/// the service sits behind a load balancer it trusts.
fn client_address(service: &crate::Service, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
    if service.trust_forwarded_for {
        let forwarded = headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.trim().parse().ok());
        if let Some(address) = forwarded {
            return address;
        }
    }
    peer.ip()
}

/// How `run` compares with the other runs of its GPU, workload, backend, precision and profile
/// (itself left out: a run is not faster or slower than itself).
fn comparison(service: &crate::Service, run: &RunRow) -> crate::Result<Comparison> {
    let filter = Filter {
        workload: Some(run.workload.clone()),
        backend: Some(run.backend.clone()),
        precision: Some(run.precision.clone()),
        profile: Some(run.memory_profile.clone()),
        standard_only: run.standard,
        // A run is placed among the device's steady runs, whatever its own state.
        hardware: HardwareFilter::NotThrottled,
    };
    let rates: Vec<f64> = store::runs(&service.db, &filter, Some(&run.gpu))?
        .iter()
        .filter(|other| other.id != run.id)
        .map(|r| r.images_per_minute)
        .collect();
    Ok(Comparison {
        gpu: run.gpu.clone(),
        runs: rates.len(),
        median_images_per_minute: Distribution::of(&rates).map_or(0.0, |d| d.median),
        percentile: percentile_of(&rates, run.images_per_minute),
    })
}

/// How `run`'s CLIP score compares with the other runs of its workload scored by the same model
/// (none where it has none).
pub(crate) fn quality_of(
    service: &crate::Service,
    run: &RunRow,
) -> crate::Result<Option<QualityComparison>> {
    let (Some(mean), Some(model)) = (run.clip_score_mean, run.clip_model.as_deref()) else {
        return Ok(None);
    };
    let others = store::clip_scores(&service.db, &run.workload, model, &run.id)?;
    Ok(Some(crate::quality::judge(mean, &others)))
}

/// `POST /api/v1/results`: 201 with the new run's id, 200 with the existing one's for a
/// duplicate, 4xx with the reason for a refusal, 429 (with Retry-After) over the rate limit.
pub async fn submit(
    State(service): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let client = client_address(&service, peer, request.headers());
    if let Err(wait) = service.rate.take(client, Instant::now()) {
        let mut response = ServerError::refused(
            429,
            format!("too many submissions from {client}; try again in {wait} s"),
        )
        .into_response();
        if let Ok(value) = HeaderValue::from_str(&wait.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let too_large = || {
        ServerError::refused(
            413,
            format!("the result is larger than the limit of {MAX_BODY_BYTES} bytes"),
        )
        .into_response()
    };
    // A declared length over the limit is refused before any of the body is read.
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return too_large();
    }
    let Ok(body) = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await else {
        return too_large();
    };
    let work = service.clone();
    let outcome = blocking(move || {
        let checked = crate::checks::check(&body, &work.schema, &work.references)?;
        let document = String::from_utf8_lossy(&body).into_owned();
        let stored = store::insert(&work.db, &checked, &document)?;
        let id = match &stored {
            Stored::New(id) | Stored::Existing(id) => id.clone(),
        };
        let run = store::figures(&work.db, &id)?
            .ok_or_else(|| ServerError::Database(format!("run {id} vanished after storing")))?;
        let compared = comparison(&work, &run)?;
        let quality = quality_of(&work, &run)?;
        Ok((stored, run, compared, quality))
    })
    .await;
    match outcome {
        Ok((stored, run, compared, quality)) => {
            let (status, duplicate) = match stored {
                Stored::New(_) => (StatusCode::CREATED, false),
                Stored::Existing(_) => (StatusCode::OK, true),
            };
            let reply = ServiceReply {
                url: format!("/runs/{}", crate::pages::encode(&run.id)),
                id: run.id,
                duplicate,
                reference_match: run.reference_match,
                hardware_state: Some(run.hardware_state),
                comparison: compared,
                quality,
            };
            (status, Json(reply)).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/results/{id}`: the run's figures and its result as received.
pub async fn result(State(service): State<Shared>, Path(id): Path<String>) -> Response {
    let found = blocking(move || store::get(&service.db, &id).map(|r| (id, r))).await;
    match found {
        Ok((_, Some((run, document)))) => {
            // The document as it was received, byte for byte (it was checked to be JSON).
            let run = serde_json::to_string(&run).unwrap_or_else(|_| "null".into());
            let body = format!("{{\"run\":{run},\"result\":{document}}}");
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Ok((id, None)) => ServerError::refused(404, format!("no run {id}")).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/leaderboard`: one row per GPU, the fastest median first.
pub async fn leaderboard(
    State(service): State<Shared>,
    Query(query): Query<FilterQuery>,
) -> Response {
    match list_runs(service, &query, None).await {
        Ok(runs) => {
            Json(json!({ "filter": query, "rows": store::leaderboard(&runs) })).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/gpus/{name}`: the distribution of a GPU's runs (images per minute: median,
/// p10, p90, count) and the runs; with `value`, its percentile among them.
pub async fn gpu(
    State(service): State<Shared>,
    Path(name): Path<String>,
    Query(query): Query<FilterQuery>,
) -> Response {
    match list_runs(service, &query, Some(name.clone())).await {
        Ok(runs) => {
            let rates: Vec<f64> = runs.iter().map(|r| r.images_per_minute).collect();
            let percentile = query.value.map(|v| percentile_of(&rates, v));
            Json(json!({
                "gpu": name,
                "filter": query,
                "images_per_minute": Distribution::of(&rates),
                "percentile": percentile,
                "runs": runs,
            }))
            .into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// `GET /api/v1/health`: the engine and how many runs it holds.
pub async fn health(State(service): State<Shared>) -> Response {
    let engine = service.db.engine();
    match blocking(move || store::count(&service.db)).await {
        Ok(runs) => Json(json!({ "ok": true, "engine": engine, "runs": runs })).into_response(),
        Err(e) => e.into_response(),
    }
}
