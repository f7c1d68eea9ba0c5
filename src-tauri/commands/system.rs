//! The System screen: devices, settings, app identity.

use serde::Serialize;
use tauri::State;

use sdbench_diffusion::device::{preview, probe_all};
use sdbench_diffusion::{limits, BackendRequest, MemoryProfile};
use sdbench_telemetry::SystemInfo;

use crate::errors::UiResult;
use crate::settings::Settings;
use crate::state::AppState;

use super::blocking;

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct BackendReport {
    pub backend: String,
    pub usable: bool,
    pub detail: String,
    pub devices: Vec<DeviceReport>,
}

/// One device of a backend: its number (the Device setting) and what the driver says of it.
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DeviceReport {
    pub index: usize,
    pub name: String,
    /// Name, class, memory, driver and PCI bus on one line.
    pub description: String,
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct AutoChoice {
    pub backend: Option<String>,
    pub device: Option<String>,
    /// The device's number among its backend's.
    pub index: Option<usize>,
    /// None on a GPU: f16 where the device supports it, which only the initialised device tells.
    pub precision: Option<String>,
    /// Why nothing could be chosen.
    pub error: Option<String>,
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SystemReport {
    pub app_version: String,
    pub system: SystemInfo,
    pub backends: Vec<BackendReport>,
    pub auto: AutoChoice,
    pub backend_names: Vec<String>,
    pub precisions: Vec<String>,
    pub memory_profiles: Vec<String>,
    pub data_dir: String,
    pub cache_dir: String,
    /// The CPU backend's worker threads in this process (a changed setting applies at the next
    /// start).
    pub cpu_threads: usize,
}

/// What this machine has and what `auto` would run on.
#[tauri::command]
pub async fn system_info(state: State<'_, AppState>) -> UiResult<SystemReport> {
    let state = state.inner().clone();
    blocking(move || {
        let backends = probe_all()
            .into_iter()
            .map(|s| BackendReport {
                backend: s.kind.name().into(),
                usable: s.usable,
                detail: s.detail,
                devices: s
                    .devices
                    .iter()
                    .map(|d| DeviceReport {
                        index: d.index,
                        name: d.name.clone(),
                        description: d.describe(),
                    })
                    .collect(),
            })
            .collect();
        // Named without initialising the device: showing the choice must not bind a GPU to a
        // graphics API (that would refuse a later run on another API of the same GPU).
        let auto = match preview(BackendRequest::Auto) {
            Ok(d) => AutoChoice {
                backend: Some(d.kind.name().into()),
                device: Some(d.info.name),
                index: Some(d.info.index),
                precision: d.precision.map(|p| p.name().into()),
                error: None,
            },
            Err(e) => AutoChoice {
                backend: None,
                device: None,
                index: None,
                precision: None,
                error: Some(e.to_string()),
            },
        };
        Ok(SystemReport {
            app_version: env!("CARGO_PKG_VERSION").into(),
            system: SystemInfo::collect(std::path::Path::new("/"), true),
            backends,
            auto,
            backend_names: BackendRequest::NAMES
                .iter()
                .map(|n| n.to_string())
                .collect(),
            precisions: limits::PRECISION_CHOICES.map(String::from).to_vec(),
            memory_profiles: MemoryProfile::NAMES
                .into_iter()
                .chain(["auto"])
                .map(String::from)
                .collect(),
            data_dir: state.paths.data_dir.display().to_string(),
            cache_dir: state.hub.cache_dir.display().to_string(),
            cpu_threads: sdbench_diffusion::device::cpu_threads(),
        })
    })
    .await
}

/// What a request may ask for, from the engine's `limits` (and the bench's image count): the
/// UI's forms check against these instead of numbers of their own.
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct RequestLimits {
    pub max_side: usize,
    pub side_multiple: usize,
    pub max_steps: usize,
    pub max_batch: usize,
    pub max_images: usize,
}

#[tauri::command]
pub fn request_limits() -> RequestLimits {
    RequestLimits {
        max_side: limits::MAX_SIDE,
        side_multiple: limits::SIDE_MULTIPLE,
        max_steps: limits::MAX_STEPS,
        max_batch: limits::MAX_BATCH,
        max_images: sdbench_bench::workload::MAX_IMAGES,
    }
}

#[tauri::command]
pub async fn get_settings(state: State<'_, AppState>) -> UiResult<Settings> {
    Ok(state.settings())
}

/// Validates and stores the settings; returns them as stored.
#[tauri::command]
pub async fn save_settings(state: State<'_, AppState>, settings: Settings) -> UiResult<Settings> {
    let state = state.inner().clone();
    blocking(move || {
        state.set_settings(settings)?;
        Ok(state.settings())
    })
    .await
}

/// Notes from starting up, shown once when the window opens.
#[tauri::command]
pub async fn startup_notes(state: State<'_, AppState>) -> UiResult<Vec<String>> {
    Ok(state.startup_notes.clone())
}
