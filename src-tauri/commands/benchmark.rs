//! The Benchmark screen: the model it needs (and its download), the run, and what to do with a
//! result (save, report, submit).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::State;

use sdbench_bench::result::{write_atomically, AppInfo};
use sdbench_bench::runner::{self, ModelChoice, RunOptions};
use sdbench_bench::submit::{Outcome, Submitter};
use sdbench_bench::summary;
use sdbench_bench::workload::workload_names;
use sdbench_bench::{BenchResult, Overrides, Workload};
use sdbench_diffusion::{ModelSource, Preset};
use sdbench_history::Record;
use sdbench_hub::{cache, HubSettings};
use sdbench_report::Run;
use sdbench_session::hub_components::{engine_components, engine_hub};
use sdbench_session::model_name::license_note;
use sdbench_session::ModelName;

use crate::errors::{UiError, UiResult};
use crate::events::JobEvent;
use crate::jobs::{JobId, JobKind};
use crate::settings::Settings;
use crate::state::AppState;

use super::jobs::channel_sink;
use super::{blocking, target_path};

/// Hub models are always read at this revision.
pub(crate) const REVISION: &str = "main";

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ModelStatus {
    /// The model setting.
    pub model: String,
    /// hub, folder, checkpoint or synthetic.
    pub source: String,
    /// Whether a run can start without downloading.
    pub ready: bool,
    /// Where it is on disk, when it is.
    pub path: Option<String>,
    /// For a Hub model that is not cached: the bytes a download fetches (when the Hub answered).
    pub download_bytes: Option<u64>,
    /// Why the download size is unknown (no network…).
    pub problem: Option<String>,
    /// For a Hub model that is not cached, when the Hub answered: its licence (its authors', from
    /// its card) and where to read it, shown before the download.
    pub license_note: Option<String>,
    /// E.g. a renamed Hub id.
    pub note: Option<String>,
    /// The standard workload made for the model the setting names, where that is not the one
    /// asked about (a FLUX.2 folder set while SD1.5's workload is chosen): the screen switches to
    /// it. None for the untouched default, which stands for each workload's own model.
    pub own_workload: Option<OwnWorkload>,
}

/// A workload and why it is the model's (for the screen to say).
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct OwnWorkload {
    pub name: String,
    pub why: String,
}

/// The standard workload made for the model the settings name, when it differs from `asked`.
/// Nothing is downloaded: a Hub model is placed by its preset's repository or its cached configs,
/// and one that is neither has no known architecture yet (the run checks its configs as they
/// download). A model whose family has no standard workload has none here; the run says so.
fn own_workload(settings: &Settings, hub: &HubSettings, asked: &Workload) -> Option<OwnWorkload> {
    if settings.model_is_default() {
        return None;
    }
    let name = settings.model_name().ok()?;
    if let ModelName::Hub { id, .. } = &name {
        let preset = Preset::all().any(|p| p.repository() == id.as_str());
        if !preset && cache::cached_snapshot(hub, id, REVISION, engine_components).is_none() {
            return None;
        }
    }
    let (workload, why) =
        Workload::standard_for_model(&name, settings.model.trim(), hub, REVISION).ok()?;
    (workload.name != asked.name).then(|| OwnWorkload {
        name: workload.name.to_string(),
        why,
    })
}

/// The workload a request names (none: the default standard one).
fn chosen_workload(name: Option<&str>) -> UiResult<Workload> {
    match name {
        None => Ok(Workload::standard()),
        Some(name) => Workload::named(name).map_err(|e| {
            UiError::bad_input(
                e.to_string(),
                format!("Choose one of: {}.", workload_names().join(", ")),
            )
        }),
    }
}

/// The standard workloads as the Benchmark screen lists them (from the bench's own settings).
#[tauri::command]
pub fn workloads() -> Vec<sdbench_bench::workload::WorkloadCard> {
    sdbench_bench::workload::cards()
}

/// Whether the model a benchmark of `workload` runs is on this machine, and if not, how big its
/// download is; and the workload made for the model the settings name, when it is another.
#[tauri::command]
pub async fn model_status(
    state: State<'_, AppState>,
    workload: Option<String>,
) -> UiResult<ModelStatus> {
    let state = state.inner().clone();
    blocking(move || {
        let settings = state.settings();
        let workload = chosen_workload(workload.as_deref())?;
        let own = || own_workload(&settings, &state.hub, &workload);
        let local = |source: &str, path: Option<&Path>| ModelStatus {
            model: settings.model.clone(),
            source: source.into(),
            ready: true,
            path: path.map(|p| p.display().to_string()),
            download_bytes: None,
            problem: None,
            license_note: None,
            note: None,
            own_workload: own(),
        };
        Ok(match settings.model_name_for(&workload)? {
            ModelName::Local(ModelSource::Synthetic(_)) => local("synthetic", None),
            ModelName::Local(ModelSource::Folder(path)) => local("folder", Some(&path)),
            ModelName::Local(ModelSource::Checkpoint { file, .. }) => {
                local("checkpoint", Some(&file))
            }
            ModelName::Hub { id, note } => {
                let cached = cache::cached_snapshot(&state.hub, &id, REVISION, engine_components);
                let mut status = ModelStatus {
                    model: id.to_string(),
                    source: "hub".into(),
                    ready: cached.is_some(),
                    path: cached.map(|c| c.path.display().to_string()),
                    download_bytes: None,
                    problem: None,
                    license_note: None,
                    note,
                    own_workload: own(),
                };
                if !status.ready {
                    let hub = engine_hub(state.hub.clone());
                    let listed = hub.listing(&id, REVISION).and_then(|l| {
                        let files = hub.pipeline_files(&id, &l)?;
                        Ok((files, l.license))
                    });
                    match listed {
                        Ok((files, license)) => {
                            status.download_bytes = Some(files.iter().map(|f| f.size).sum());
                            status.license_note = Some(license_note(&id, license.as_deref()));
                        }
                        Err(e) => status.problem = Some(e.to_string()),
                    }
                }
                status
            }
        })
    })
    .await
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Downloaded {
    pub model: String,
    pub path: String,
    pub files: usize,
    pub bytes: u64,
    pub downloaded_bytes: u64,
    /// The model's licence (its authors', from its card) and where to read it.
    pub license_note: String,
}

/// Downloads the Hub model a benchmark of `workload` runs into the cache (resuming a partial
/// download).
#[tauri::command]
pub async fn start_download(
    state: State<'_, AppState>,
    on_event: Channel<JobEvent>,
    workload: Option<String>,
) -> UiResult<JobId> {
    let settings = state.settings();
    let workload = chosen_workload(workload.as_deref())?;
    let ModelName::Hub { id, .. } = settings.model_name_for(&workload)? else {
        return Err(UiError::bad_input(
            format!(
                "{} is not a Hub model; there is nothing to download",
                settings.model
            ),
            "Enter a Hub id in System to download a model.",
        ));
    };
    let hub = engine_hub(state.hub.clone());
    state
        .jobs
        .start(JobKind::Download, channel_sink(on_event), move |cx| {
            let snapshot =
                hub.download(&id, REVISION, &mut |p| cx.emit(JobEvent::from(p)), &|| {
                    cx.is_cancelled()
                })?;
            let out = Downloaded {
                model: id.to_string(),
                path: snapshot.path.display().to_string(),
                files: snapshot.files.len(),
                bytes: snapshot.files.iter().map(|f| f.size).sum(),
                downloaded_bytes: snapshot.downloaded_bytes,
                license_note: license_note(&id, snapshot.license.as_deref()),
            };
            serde_json::to_value(out).map_err(|e| UiError::internal(e.to_string()))
        })
}

/// A run other than the standard one (never a standard score): fewer steps, a smaller size,
/// fewer images. Missing fields keep the standard values.
#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(default, rename_all = "camelCase")]
#[ts(optional_fields = nullable)]
pub struct CustomRun {
    pub steps: Option<usize>,
    pub width: Option<usize>,
    pub height: Option<usize>,
    pub images: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(default, rename_all = "camelCase")]
#[ts(optional_fields = nullable)]
pub struct BenchmarkRequest {
    /// A standard workload's name (none: sd15-512-30).
    pub workload: Option<String>,
    /// None: the workload as published.
    pub custom: Option<CustomRun>,
    /// Seconds of idle power sampling before the run (default 1).
    pub baseline_seconds: Option<f64>,
    /// Time whole passes of the prompts until this many seconds have passed (none: one pass).
    pub min_duration_seconds: Option<f64>,
    /// Score every picture with CLIP after the timed region (openai/clip-vit-large-patch14,
    /// fetched into the cache once).
    pub quality: Option<bool>,
    /// Synthetic weights of the workload's architecture instead of the model setting's model: the
    /// same computation with no download (offline, say); never a standard score.
    pub synthetic: Option<bool>,
}

/// A benchmark result as the result view shows it: the figures formatted exactly as the CLI and
/// the reports format them, and where its images are.
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ResultView {
    pub result: BenchResult,
    /// (what, value): workload, model, backend…
    pub header: Vec<(String, String)>,
    /// (metric, value, unit): score, images per minute, power…
    pub rows: Vec<(String, String, String)>,
    pub image_columns: Vec<String>,
    pub image_cells: Vec<Vec<String>>,
    /// The run's images on disk, in order (None where the file is gone).
    pub images: Vec<Option<String>>,
}

pub fn result_view(state: &AppState, result: BenchResult) -> ResultView {
    let dir = state.paths.runs.join(&result.run_id);
    let images = result
        .results
        .iter()
        .map(|r| {
            let path = dir.join(r.image.file.as_deref()?);
            path.is_file().then(|| path.display().to_string())
        })
        .collect();
    ResultView {
        header: summary::header(&result),
        rows: summary::rows(&result),
        image_columns: summary::IMAGE_COLUMNS
            .iter()
            .map(|c| c.to_string())
            .collect(),
        image_cells: summary::image_cells(&result)
            .into_iter()
            .map(Vec::from)
            .collect(),
        images,
        result,
    }
}

/// A stored benchmark run as the result view shows it.
#[tauri::command]
pub async fn benchmark_view(state: State<'_, AppState>, run_id: String) -> UiResult<ResultView> {
    let state = state.inner().clone();
    blocking(move || {
        let result = stored_result(&state, &run_id)?;
        Ok(result_view(&state, result))
    })
    .await
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct BenchmarkOutput {
    #[serde(flatten)]
    pub view: ResultView,
    pub result_path: String,
    /// Set when the run could not be added to the history (the result file is still saved).
    pub history_warning: Option<String>,
}

pub fn app_info() -> AppInfo {
    AppInfo {
        name: "sdbench-app".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        commit: None,
    }
}

/// Runs the benchmark with the configured model, backend and precision. The result and its
/// images are saved in the data folder (`runs/{run id}/`) and added to the history.
#[tauri::command]
pub async fn start_benchmark(
    state: State<'_, AppState>,
    request: BenchmarkRequest,
    on_event: Channel<JobEvent>,
) -> UiResult<JobId> {
    start_benchmark_job(state.inner(), request, channel_sink(on_event))
}

/// The run a request asks for on the settings' model, device, precision and memory profile.
pub(crate) fn run_options(state: &AppState, request: &BenchmarkRequest) -> UiResult<RunOptions> {
    let settings = state.settings();
    let workload = chosen_workload(request.workload.as_deref())?;
    let workload = match &request.custom {
        None => workload,
        Some(c) => workload
            .with_overrides(&Overrides {
                steps: c.steps,
                width: c.width,
                height: c.height,
                images: c.images,
                scheduler: None,
                prompt: None,
                batch: None,
            })
            .map_err(|e| UiError::bad_input(e.to_string(), "Correct the custom run's values."))?,
    };
    let model = benchmark_model(&settings, &workload, request.synthetic == Some(true))?;
    let mut options = RunOptions::new(workload, model, app_info());
    let device = settings.device_request()?;
    (options.backend, options.device_index) = (device.backend, device.index);
    options.precision = settings.precision()?;
    options.memory = settings.memory_profile()?;
    options.memory_auto = settings.memory_auto();
    options.memory_limit = settings.memory_limit()?;
    options.hub = state.hub.clone();
    options
        .set_baseline(request.baseline_seconds.unwrap_or(1.0))
        .map_err(|e| UiError::bad_input(e.to_string(), "Give a baseline within that range."))?;
    if let Some(seconds) = request.min_duration_seconds {
        options.set_min_duration(seconds).map_err(|e| {
            UiError::bad_input(e.to_string(), "Give a minimum duration within that range.")
        })?;
    }
    Ok(options)
}

/// The body of `start_benchmark`, callable without a window.
pub fn start_benchmark_job(
    state: &AppState,
    request: BenchmarkRequest,
    sink: crate::jobs::Sink,
) -> UiResult<JobId> {
    let mut options = run_options(state, &request)?;
    let quality = request.quality == Some(true);
    let state = state.clone();
    state
        .jobs
        .clone()
        .start(JobKind::Benchmark, sink, move |cx| {
            if quality {
                options.quality = Some(super::quality::clip_model(&state.hub, cx)?);
            }
            // The Create screen's model would hold device memory during the run.
            state.generator().unload();
            let mut output =
                runner::run(&options, &mut |e| cx.emit(JobEvent::from(e)), &cx.cancel)?;
            let dir = state.paths.runs.join(&output.result.run_id);
            let json = dir.join("result.json");
            let saved = sdbench_history::save_benchmark(&mut output, &json, &state.paths.history)?;
            let history_warning = saved.history_warning;
            let out = BenchmarkOutput {
                view: result_view(&state, output.result),
                result_path: json.display().to_string(),
                history_warning,
            };
            serde_json::to_value(out).map_err(|e| UiError::internal(e.to_string()))
        })
}

/// The model a benchmark of `workload` runs: the setting's (the untouched default being the
/// workload's own), or with `synthetic` generated weights of the workload's architecture.
fn benchmark_model(
    settings: &Settings,
    workload: &Workload,
    synthetic: bool,
) -> UiResult<ModelChoice> {
    if synthetic {
        return Ok(ModelChoice::Local(ModelSource::Synthetic(workload.preset)));
    }
    settings.model_choice_for(workload)
}

/// A benchmark result from the history.
pub fn stored_result(state: &AppState, run_id: &str) -> UiResult<BenchResult> {
    match state.history()?.get(run_id) {
        Ok(Record::Benchmark(result)) => Ok(*result),
        Ok(Record::Generation(_)) => Err(UiError::bad_input(
            format!("{run_id} is a generated image, not a benchmark run"),
            "Choose benchmark runs.",
        )),
        Err(sdbench_history::HistoryError::NotFound(_)) => {
            Err(UiError::not_found(format!("There is no run {run_id}")))
        }
        Err(e) => Err(e.into()),
    }
}

/// Saves a run's result JSON at `path`, with its images beside it (`{name}-1.png`, …).
#[tauri::command]
pub async fn save_result(
    state: State<'_, AppState>,
    run_id: String,
    path: String,
) -> UiResult<String> {
    let state = state.inner().clone();
    blocking(move || {
        let path = target_path(&path, &["json"])?;
        let mut result = stored_result(&state, &run_id)?;
        let run_dir = state.paths.runs.join(&result.run_id);
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for (i, image) in result.results.iter_mut().enumerate() {
            let Some(name) = image.image.file.clone() else {
                continue;
            };
            let source = run_dir.join(&name);
            if !source.is_file() {
                // The images were not kept (e.g. a run recorded by the CLI elsewhere).
                image.image.file = None;
                continue;
            }
            let copy = format!("{stem}-{}.png", i + 1);
            std::fs::copy(&source, parent.join(&copy))?;
            image.image.file = Some(copy);
        }
        result.save(&path)?;
        Ok(path.display().to_string())
    })
    .await
}

/// One label per run for charts and comparisons: device, precision and time.
pub fn run_labels(results: &[BenchResult]) -> Vec<String> {
    results
        .iter()
        .map(|r| {
            let when = r
                .created_at
                .get(..16)
                .unwrap_or(&r.created_at)
                .replace('T', " ");
            format!("{} {} ({when})", r.backend.device, r.backend.precision)
        })
        .collect()
}

/// Calls `draw` with the stored benchmark runs `ids`, each labelled, as charts and reports take
/// them.
pub fn with_runs<T>(
    state: &AppState,
    ids: &[String],
    draw: impl FnOnce(&[Run], &[String]) -> UiResult<T>,
) -> UiResult<T> {
    if ids.is_empty() {
        return Err(UiError::bad_input(
            "No runs are selected",
            "Select benchmark runs.",
        ));
    }
    let results = ids
        .iter()
        .map(|id| stored_result(state, id))
        .collect::<UiResult<Vec<_>>>()?;
    let labels = run_labels(&results);
    let runs: Vec<Run> = results
        .iter()
        .zip(&labels)
        .map(|(result, label)| Run { label, result })
        .collect();
    draw(&runs, &labels)
}

/// Writes a report of one run (`.md` or `.html`) or a comparison of several (`.html`).
#[tauri::command]
pub async fn export_report(
    state: State<'_, AppState>,
    run_ids: Vec<String>,
    path: String,
) -> UiResult<String> {
    let state = state.inner().clone();
    blocking(move || {
        let path = target_path(&path, &["html", "htm", "md"])?;
        // Each run's images are in its folder of the runs folder.
        let folders: Vec<PathBuf> = run_ids.iter().map(|id| state.paths.runs.join(id)).collect();
        let dirs: Vec<&Path> = folders.iter().map(PathBuf::as_path).collect();
        let text = with_runs(&state, &run_ids, |runs, _| {
            Ok(sdbench_report::for_file(runs, &dirs, &path)?)
        })?;
        write_atomically(&path, text.as_bytes())?;
        Ok(path.display().to_string())
    })
    .await
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionPreview {
    pub endpoint: String,
    /// Exactly the JSON that would be sent.
    pub payload: String,
}

fn submit_endpoint(state: &AppState) -> UiResult<String> {
    state.settings().submit_endpoint.ok_or_else(|| {
        UiError::bad_input(
            "No submission endpoint is set, and there is no public SD Bench results service yet",
            "Run your own (sdbench-server, see docs/server.md) and enter its …/api/v1/results address in System.",
        )
    })
}

/// What submitting a run would send, and where.
#[tauri::command]
pub async fn submission_preview(
    state: State<'_, AppState>,
    run_id: String,
) -> UiResult<SubmissionPreview> {
    let state = state.inner().clone();
    blocking(move || {
        let endpoint = submit_endpoint(&state)?;
        let result = stored_result(&state, &run_id)?;
        Ok(SubmissionPreview {
            endpoint,
            payload: result.to_json(),
        })
    })
    .await
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(
    tag = "outcome",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Submitted {
    Sent {
        status: u16,
        /// The results service's comparison with the runs of the same GPU, and the run's page;
        /// absent from an endpoint that is not an SD Bench results service.
        comparison: Option<String>,
    },
    /// Not sent now; kept in the outbox and sent with the next submission.
    Queued { path: PathBuf, reason: String },
}

/// Sends a run to the submission endpoint (the UI asks first, showing `submission_preview`).
/// Results that could not be sent earlier go first.
#[tauri::command]
pub async fn submit_result(state: State<'_, AppState>, run_id: String) -> UiResult<Submitted> {
    let state = state.inner().clone();
    blocking(move || {
        let endpoint = submit_endpoint(&state)?;
        let result = stored_result(&state, &run_id)?;
        if !result.valid {
            return Err(UiError::bad_input(
                "This run is invalid and cannot be submitted",
                "Run the benchmark again; the result view lists why it was invalid.",
            ));
        }
        let submitter = Submitter::new(&endpoint, state.paths.outbox.clone())?;
        submitter.flush_outbox();
        Ok(match submitter.submit(&result)? {
            Outcome::Sent { status, reply } => Submitted::Sent {
                status,
                comparison: reply.map(|r| r.describe(&endpoint)),
            },
            Outcome::Queued { path, reason } => Submitted::Queued { path, reason },
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synthetic_run_takes_the_workloads_architecture_whatever_the_setting() {
        let settings = Settings {
            model: "/models/some-finetune".into(),
            ..Settings::default()
        };
        let klein = Workload::named("flux2-klein-1024-4").unwrap();
        match benchmark_model(&settings, &klein, true).unwrap() {
            ModelChoice::Local(ModelSource::Synthetic(preset)) => {
                assert_eq!(preset, klein.preset)
            }
            other => panic!("{other:?}"),
        }
        let default = Settings::default();
        match benchmark_model(&default, &klein, false).unwrap() {
            ModelChoice::Hub { id, .. } => assert_eq!(id.to_string(), klein.preset.repository()),
            other => panic!("{other:?}"),
        }
    }
}
