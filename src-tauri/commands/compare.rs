//! The Benchmark screen's "compare backends": the chosen workload once on every backend this
//! machine can use (a sweep over backends), ranked, with the same table and chart as
//! `sdbench sweep` and its report.

use serde::Serialize;
use tauri::ipc::Channel;
use tauri::State;

use sdbench_bench::sweep::{self, Batches, PointRow, SweepAxes, SweepEvent, TABLE_COLUMNS};
use sdbench_diffusion::device::probe_all;
use sdbench_diffusion::BackendRequest;
use sdbench_history::History;

use crate::errors::{UiError, UiResult};
use crate::events::JobEvent;
use crate::jobs::{JobId, JobKind};
use crate::state::AppState;

use super::benchmark::{run_options, BenchmarkRequest};
use super::jobs::channel_sink;

/// A finished comparison as the screen shows it.
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ComparisonView {
    pub sweep_id: String,
    pub columns: Vec<String>,
    pub rows: Vec<PointRow>,
    /// "fastest: …".
    pub fastest: String,
    /// Each point's megapixels per second (SVG), or why there is no chart.
    pub chart: super::history::Chart,
    /// The sweep file, beside the runs' folders.
    pub sweep_path: String,
    /// Set when the points could not be added to the history (the sweep file is still saved).
    pub history_warning: Option<String>,
}

#[tauri::command]
pub async fn start_compare_backends(
    state: State<'_, AppState>,
    request: BenchmarkRequest,
    on_event: Channel<JobEvent>,
) -> UiResult<JobId> {
    start_compare_job(state.inner(), request, channel_sink(on_event))
}

/// The body of `start_compare_backends`, callable without a window.
pub fn start_compare_job(
    state: &AppState,
    request: BenchmarkRequest,
    sink: crate::jobs::Sink,
) -> UiResult<JobId> {
    let base = run_options(state, &request)?;
    let backends: Vec<BackendRequest> = probe_all()
        .iter()
        .filter(|s| s.usable)
        .filter_map(|s| BackendRequest::from_name(s.kind.name()).ok())
        .collect();
    if backends.is_empty() {
        return Err(UiError::bad_input(
            "no backend is usable on this machine",
            "See System for what each backend found.",
        ));
    }
    let axes = SweepAxes {
        backends,
        precisions: vec![base.precision],
        batches: Batches::List(vec![base.workload.batch]),
        sizes: vec![None],
        memory: vec![base.memory],
    };
    let state = state.clone();
    state
        .jobs
        .clone()
        .start(JobKind::Benchmark, sink, move |cx| {
            state.generator().unload();
            let mut observer = |event: SweepEvent| match event {
                SweepEvent::Point {
                    index,
                    total,
                    settings,
                } => cx.emit(JobEvent::from(&sdbench_bench::Event::note(format!(
                    "backend {} of {}: {}",
                    index + 1,
                    total.unwrap_or(index + 1),
                    settings.backend
                )))),
                SweepEvent::Run(e) => cx.emit(JobEvent::from(e)),
                SweepEvent::Finished { point, .. } => {
                    if let Some(why) = &point.skipped {
                        cx.emit(JobEvent::from(&sdbench_bench::Event::note(format!(
                            "{} skipped: {why}",
                            point.settings.backend
                        ))))
                    }
                }
            };
            let sweep = sweep::run(&base, &axes, &mut observer, &cx.cancel)?;
            let dir = state.paths.runs.join(&sweep.sweep_id);
            std::fs::create_dir_all(&dir)?;
            let path = dir.join("sweep.json");
            sweep.save(&path)?;
            let history_warning = History::open(&state.paths.history)
                .and_then(|h| {
                    sweep
                        .points
                        .iter()
                        .filter_map(|p| p.result.as_ref())
                        .try_for_each(|r| h.add_benchmark(r))
                })
                .err()
                .map(|e| e.to_string());
            let view = ComparisonView {
                sweep_id: sweep.sweep_id.clone(),
                columns: TABLE_COLUMNS.iter().map(|c| c.to_string()).collect(),
                rows: sweep::rows(&sweep),
                fastest: sweep::fastest_line(&sweep),
                chart: super::history::Chart::from(sdbench_report::sweep::points_chart(&sweep)),
                sweep_path: path.display().to_string(),
                history_warning,
            };
            serde_json::to_value(view).map_err(|e| UiError::internal(e.to_string()))
        })
}
