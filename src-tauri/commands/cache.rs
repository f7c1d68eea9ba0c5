//! The model cache and the compiled GPU kernels on the System screen: what is there, how big, and
//! cleaning it up.

use serde::Serialize;
use tauri::State;

use sdbench_diffusion::kernel_cache;
use sdbench_hub::{cache, CachedModel, RepoId};
use sdbench_session::hub_components::engine_components;

use crate::errors::{ErrorKind, UiError, UiResult};
use crate::jobs::capitalise;
use crate::state::AppState;

use super::blocking;

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct CacheInfo {
    pub dir: String,
    pub models: Vec<CachedModel>,
    pub total_bytes: u64,
    /// The compiled GPU kernels (`None`: SD Bench keeps none, `SDBENCH_KERNEL_CACHE=off`).
    pub kernels: Option<KernelCacheInfo>,
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct KernelCacheInfo {
    pub dir: String,
    pub kernels: u64,
    /// Devices (per SD Bench build) with kernels compiled.
    pub devices: usize,
    pub total_bytes: u64,
}

#[tauri::command]
pub async fn cache_info(state: State<'_, AppState>) -> UiResult<CacheInfo> {
    let state = state.inner().clone();
    blocking(move || {
        let models = cache::list(&state.hub, engine_components)?;
        let kernels = match &state.kernel_cache {
            Some(dir) => {
                let usage = kernel_cache::usage(dir)?;
                Some(KernelCacheInfo {
                    dir: dir.display().to_string(),
                    kernels: usage.devices.iter().map(|d| d.kernels).sum(),
                    devices: usage.devices.len(),
                    total_bytes: usage.bytes,
                })
            }
            None => None,
        };
        Ok(CacheInfo {
            dir: state.hub.cache_dir.display().to_string(),
            total_bytes: models.iter().map(|m| m.size_bytes).sum(),
            models,
            kernels,
        })
    })
    .await
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Cleaned {
    pub removed: Vec<String>,
    pub freed_bytes: u64,
}

/// Refused while a job runs, since it may be reading or writing the cache.
fn refuse_while_running(state: &AppState) -> UiResult<()> {
    match state.jobs.running() {
        Some(job) => Err(UiError::new(
            ErrorKind::Busy,
            format!(
                "{} is running and may be using the cache",
                capitalise(job.kind.label())
            ),
            "Wait for it to finish or cancel it, then clean up.",
        )),
        None => Ok(()),
    }
}

/// Removes every compiled GPU kernel and autotune result (the UI confirms first); the next run on
/// each GPU compiles them again.
#[tauri::command]
pub async fn clean_kernel_cache(state: State<'_, AppState>) -> UiResult<Cleaned> {
    let state = state.inner().clone();
    blocking(move || {
        refuse_while_running(&state)?;
        let Some(dir) = &state.kernel_cache else {
            return Err(UiError::bad_input(
                "SD Bench keeps no compiled GPU kernels here (SDBENCH_KERNEL_CACHE=off)",
                "There is nothing to clean up.",
            ));
        };
        Ok(Cleaned {
            removed: vec!["compiled GPU kernels".into()],
            freed_bytes: kernel_cache::clean(dir)?,
        })
    })
    .await
}

/// Removes the named models from the cache (the UI confirms first). Refused while a job runs,
/// since it may be reading or writing them.
#[tauri::command]
pub async fn clean_cache(state: State<'_, AppState>, models: Vec<String>) -> UiResult<Cleaned> {
    let state = state.inner().clone();
    blocking(move || {
        refuse_while_running(&state)?;
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
        state.generator().unload();
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
