//! The History screen: the list, a run's detail, comparisons with charts, delete, export.

use std::path::Path;

use serde::Serialize;
use tauri::State;

use sdbench_history::{Filter, Record, RunSummary};
use sdbench_report::charts;

use crate::errors::{UiError, UiResult};
use crate::state::AppState;

use super::benchmark::with_runs;
use super::{blocking, target_path};

#[tauri::command]
pub async fn history_list(
    state: State<'_, AppState>,
    filter: Option<Filter>,
) -> UiResult<Vec<RunSummary>> {
    let state = state.inner().clone();
    blocking(move || Ok(state.history()?.list(&filter.unwrap_or_default())?)).await
}

#[tauri::command]
pub async fn history_get(state: State<'_, AppState>, id: String) -> UiResult<Record> {
    let state = state.inner().clone();
    blocking(move || match state.history()?.get(&id) {
        Ok(record) => Ok(record),
        Err(sdbench_history::HistoryError::NotFound(_)) => {
            Err(UiError::not_found(format!("There is no run {id}")))
        }
        Err(e) => Err(e.into()),
    })
    .await
}

/// Deletes runs from the history, with the files the app keeps for them (a benchmark's run
/// folder, a Create image in the data folder). Files elsewhere are left alone. Returns how many
/// runs were deleted.
#[tauri::command]
pub async fn history_delete(state: State<'_, AppState>, ids: Vec<String>) -> UiResult<usize> {
    let state = state.inner().clone();
    blocking(move || {
        let history = state.history()?;
        let mut deleted = 0;
        for id in &ids {
            let record = match history.get(id) {
                Ok(r) => Some(r),
                Err(sdbench_history::HistoryError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
            if !history.delete(id)? {
                continue;
            }
            deleted += 1;
            match record {
                Some(Record::Benchmark(r)) => {
                    remove_inside(&state.paths.runs, &state.paths.runs.join(&r.run_id))
                }
                Some(Record::Generation(g)) => {
                    if let Some(path) = g.image_path {
                        remove_inside(&state.paths.images, Path::new(&path));
                    }
                }
                None => {}
            }
        }
        Ok(deleted)
    })
    .await
}

/// Removes `path` (file or folder) when it lies inside `root`; a file that cannot be removed stays
/// (the run is already gone from the history).
fn remove_inside(root: &Path, path: &Path) {
    let (Ok(root), Ok(path)) = (root.canonicalize(), path.canonicalize()) else {
        return;
    };
    if !path.starts_with(&root) || path == root {
        return;
    }
    let _ = if path.is_dir() {
        std::fs::remove_dir_all(&path)
    } else {
        std::fs::remove_file(&path)
    };
}

/// Writes the chosen runs, whole, to one JSON file. Returns how many.
#[tauri::command]
pub async fn history_export(
    state: State<'_, AppState>,
    ids: Vec<String>,
    path: String,
) -> UiResult<usize> {
    let state = state.inner().clone();
    blocking(move || {
        if ids.is_empty() {
            return Err(UiError::bad_input(
                "No runs are selected",
                "Select runs to export.",
            ));
        }
        let path = target_path(&path, &["json"])?;
        Ok(state.history()?.export(&ids, &path)?)
    })
    .await
}

/// An SVG chart, or why there is none (e.g. no power source on this machine).
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Chart {
    pub svg: Option<String>,
    pub reason: Option<String>,
}

impl From<sdbench_report::Result<String>> for Chart {
    fn from(r: sdbench_report::Result<String>) -> Self {
        match r {
            Ok(svg) => Chart {
                svg: Some(svg),
                reason: None,
            },
            Err(e) => Chart {
                svg: None,
                reason: Some(e.to_string()),
            },
        }
    }
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Charts {
    pub labels: Vec<String>,
    /// Set when the runs did different work (workload, size, steps…), whose figures are not
    /// comparable: it says how.
    pub warning: Option<String>,
    /// Set when the runs ran on different setups (precision, backend, device…): what the
    /// comparison is across.
    pub note: Option<String>,
    pub seconds_per_image: Chart,
    pub stage_breakdown: Chart,
    pub step_times: Chart,
    pub power_over_time: Chart,
}

/// The report's charts (drawn with plotters, as in exported reports) for one or more benchmark
/// runs: one run's result view, or runs side by side.
#[tauri::command]
pub async fn run_charts(state: State<'_, AppState>, ids: Vec<String>) -> UiResult<Charts> {
    let state = state.inner().clone();
    blocking(move || {
        with_runs(&state, &ids, |runs, labels| {
            Ok(Charts {
                seconds_per_image: charts::seconds_per_image(runs).into(),
                stage_breakdown: charts::stage_breakdown(runs).into(),
                step_times: charts::step_times(runs).into(),
                power_over_time: charts::power_over_time(runs).into(),
                labels: labels.to_vec(),
                warning: sdbench_report::comparison_warning(runs),
                note: sdbench_report::comparison_note(runs),
            })
        })
    })
    .await
}
