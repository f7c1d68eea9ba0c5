//! Cancelling and asking after long jobs.

use std::sync::Arc;

use tauri::ipc::Channel;
use tauri::State;

use crate::errors::UiResult;
use crate::events::JobEvent;
use crate::jobs::{JobId, JobStatus, Sink};
use crate::state::AppState;

/// Forwards a job's events to the UI's channel. A window that went away loses the events; the
/// job still ends and its status stays queryable.
pub fn channel_sink(channel: Channel<JobEvent>) -> Sink {
    Arc::new(move |event: &JobEvent| {
        let _ = channel.send(event.clone());
    })
}

/// Asks a job to stop. False when it had already ended.
#[tauri::command]
pub async fn cancel_job(state: State<'_, AppState>, id: JobId) -> UiResult<bool> {
    state.jobs.cancel(id)
}

#[tauri::command]
pub async fn job_status(state: State<'_, AppState>, id: JobId) -> UiResult<JobStatus> {
    state.jobs.status(id)
}

/// Sends a running job's events to this window's channel from now on: a reloaded window follows
/// the job it started before. Returns the job's status (its latest event, or how it ended).
#[tauri::command]
pub async fn attach_job(
    state: State<'_, AppState>,
    id: JobId,
    on_event: Channel<JobEvent>,
) -> UiResult<JobStatus> {
    state.jobs.attach(id, channel_sink(on_event))
}

/// The job running now, if any (a reloaded window re-attaches to it).
#[tauri::command]
pub async fn running_job(state: State<'_, AppState>) -> UiResult<Option<JobStatus>> {
    Ok(state.jobs.running())
}
