//! The History screen: the list, a run's detail, comparisons with charts, delete, export.

use std::path::Path;

use serde::Serialize;
use tauri::State;

use sdbench_history::{Filter, Record, RunSummary};
use sdbench_report::{charts, side_by_side, Run};

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
    /// The first run's images beside each other run's (none for one run).
    pub pictures: Vec<PictureSection>,
}

/// The first run's images paired with one other run's.
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PictureSection {
    pub first: String,
    pub other: String,
    pub pairs: Vec<PicturePair>,
}

/// One prompt and seed in both runs: the pictures and their difference as `data:` PNGs, or why
/// they cannot be compared.
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PicturePair {
    pub prompt: String,
    pub seed: u64,
    pub first: Option<String>,
    pub other: Option<String>,
    pub difference: Option<String>,
    pub mean_abs_difference: Option<f64>,
    /// dB, or "identical".
    pub psnr: Option<String>,
    pub problem: Option<String>,
}

impl PicturePair {
    fn of(pair: side_by_side::Pair) -> Self {
        let mut view = PicturePair {
            prompt: pair.prompt,
            seed: pair.seed,
            first: None,
            other: None,
            difference: None,
            mean_abs_difference: None,
            psnr: None,
            problem: None,
        };
        match pair.compared {
            Err(why) => view.problem = Some(why),
            Ok(c) => {
                view.first = Some(side_by_side::data_uri(&c.a));
                view.other = Some(side_by_side::data_uri(&c.b));
                match c.difference {
                    Some((d, picture)) => {
                        view.difference = Some(side_by_side::data_uri(&picture));
                        view.mean_abs_difference = Some(d.mean_abs);
                        view.psnr = Some(side_by_side::psnr_text(&d));
                    }
                    None => {
                        view.problem = Some(format!(
                            "the sizes differ ({}x{} and {}x{})",
                            c.a.width, c.a.height, c.b.width, c.b.height
                        ))
                    }
                }
            }
        }
        view
    }
}

/// `runs[0]`'s pictures beside each other run's, read from each run's folder.
fn picture_sections(state: &AppState, ids: &[String], runs: &[Run]) -> Vec<PictureSection> {
    let folders: Vec<std::path::PathBuf> = ids.iter().map(|id| state.paths.runs.join(id)).collect();
    let Some((first, others)) = runs.split_first() else {
        return Vec::new();
    };
    let first = side_by_side::Pictures {
        run: *first,
        dir: &folders[0],
    };
    others
        .iter()
        .zip(&folders[1..])
        .map(|(&run, dir)| {
            let other = side_by_side::Pictures { run, dir };
            PictureSection {
                first: first.run.label.to_string(),
                other: run.label.to_string(),
                pairs: side_by_side::pairs(&first, &other)
                    .into_iter()
                    .map(PicturePair::of)
                    .collect(),
            }
        })
        .collect()
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
                pictures: picture_sections(&state, &ids, runs),
                labels: labels.to_vec(),
                warning: sdbench_report::comparison_warning(runs),
                note: sdbench_report::comparison_note(runs),
            })
        })
    })
    .await
}
