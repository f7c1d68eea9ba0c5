//! The model cache on the System screen: what is there, how big, and cleaning it up.

use serde::Serialize;
use tauri::State;

use sdbench_hub::{cache, CachedModel, RepoId};

use crate::errors::{ErrorKind, UiError, UiResult};
use crate::jobs::capitalise;
use crate::state::AppState;

use super::blocking;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheInfo {
    pub dir: String,
    pub models: Vec<CachedModel>,
    pub total_bytes: u64,
}

#[tauri::command]
pub async fn cache_info(state: State<'_, AppState>) -> UiResult<CacheInfo> {
    let state = state.inner().clone();
    blocking(move || {
        let models = cache::list(&state.hub)?;
        Ok(CacheInfo {
            dir: state.hub.cache_dir.display().to_string(),
            total_bytes: models.iter().map(|m| m.size_bytes).sum(),
            models,
        })
    })
    .await
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cleaned {
    pub removed: Vec<String>,
    pub freed_bytes: u64,
}

/// Removes the named models from the cache (the UI confirms first). Refused while a job runs,
/// since it may be reading or writing them.
#[tauri::command]
pub async fn clean_cache(state: State<'_, AppState>, models: Vec<String>) -> UiResult<Cleaned> {
    let state = state.inner().clone();
    blocking(move || {
        if let Some(job) = state.jobs.running() {
            return Err(UiError::new(
                ErrorKind::Busy,
                format!(
                    "{} is running and may be using the cache",
                    capitalise(job.kind.label())
                ),
                "Wait for it to finish or cancel it, then clean up.",
            ));
        }
        if models.is_empty() {
            return Err(UiError::bad_input(
                "No models are selected",
                "Select models to remove.",
            ));
        }
        let ids = models
            .iter()
            .map(|m| {
                RepoId::parse(m)
                    .map(|(id, _)| id)
                    .map_err(|e| UiError::bad_input(e.to_string(), "Select models from the list."))
            })
            .collect::<UiResult<Vec<_>>>()?;
        // The Create screen's model may be one of them.
        state.loaded_pipeline().take();
        let mut cleaned = Cleaned {
            removed: Vec::new(),
            freed_bytes: 0,
        };
        for id in ids {
            cleaned.freed_bytes += cache::remove(&state.hub, &id)?;
            cleaned.removed.push(id.to_string());
        }
        Ok(cleaned)
    })
    .await
}
