//! The run's last phase: validity, scores and the result record from what the phases measured.

use sdbench_diffusion::Pipeline;
use sdbench_telemetry::Sample;

use super::images::Timed;
use super::load::Loaded;
use super::model::ResolvedModel;
use super::telemetry::RunTelemetryInfo;
use super::{new_run_id, now_rfc3339, RunOptions};
use crate::metrics::{compute_scores, ScoreInputs};
use crate::result::KernelColdStart;
use crate::result::{
    BackendInfo, BenchResult, ColdStart, ImageResult, PlacementRecord, StepTiming, Telemetry,
    Window, WorkloadInfo, SCHEMA_VERSION,
};
use sdbench_session::telemetry_source::{choose_source, device_vendor};
use sdbench_session::vram_report::VramReport;

/// What the phases measured, for the result.
pub(super) struct Measured {
    pub model: ResolvedModel,
    pub standard: bool,
    pub load_seconds: f64,
    pub warmup_seconds: f64,
    pub kernels: Option<KernelColdStart>,
    pub baseline: Window,
    pub samples: Vec<Sample>,
    pub telemetry: RunTelemetryInfo,
    pub step_timing: StepTiming,
    pub vram_report: Option<VramReport>,
}

/// Why images failed their checks (none timed is a failure too).
fn invalid_reasons(results: &[ImageResult]) -> Vec<String> {
    let mut reasons: Vec<String> = results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let why = r.image.check.reason.as_ref()?;
            Some(format!("image {}: {why}", i + 1))
        })
        .collect();
    if results.is_empty() {
        reasons.push("no images were timed".into());
    }
    reasons
}

pub(super) fn result(
    options: &RunOptions,
    loaded: &Loaded,
    timed: &mut Timed,
    measured: Measured,
) -> BenchResult {
    let pipeline: &Pipeline = &loaded.pipeline;
    let dev = &pipeline.device;
    let workload = &options.workload;
    let invalid_reasons = invalid_reasons(&timed.results);
    let valid = invalid_reasons.is_empty();
    let telemetry = &measured.telemetry;
    let source = choose_source(
        device_vendor(dev),
        &dev.info,
        &telemetry.sources,
        &telemetry.unavailable,
    );
    let allocator_reason = dev.allocator_memory().is_none().then(|| {
        format!(
            "the {} backend has no device memory allocator",
            dev.kind.name()
        )
    });
    let scores = compute_scores(&ScoreInputs {
        results: &timed.results,
        samples: &measured.samples,
        baseline: measured.baseline,
        timed: timed.window,
        source,
        allocator_peak: timed.allocator_peak,
        allocator_reason,
        valid,
    });
    let model = measured.model;
    BenchResult {
        schema_version: SCHEMA_VERSION,
        run_id: new_run_id(),
        created_at: now_rfc3339(),
        app: options.app.clone(),
        system: measured.telemetry.system,
        backend: BackendInfo {
            name: dev.kind.name().into(),
            device: dev.info.name.clone(),
            precision: pipeline.precision.name().into(),
            software: dev.info.software,
            threads: dev.cpu_threads(),
            device_index: Some(dev.info.index),
            driver: dev.info.driver.clone(),
            device_memory_bytes: dev.info.memory_bytes,
            pci_bus: dev.info.pci_bus.clone(),
            memory_profile: Some(loaded.memory.name().into()),
            placement: Some(PlacementRecord::of(
                &pipeline.info.placement,
                pipeline.decode_tile_count(workload.width, workload.height),
            )),
        },
        workload: WorkloadInfo {
            name: workload.name.clone(),
            version: workload.version,
            standard: measured.standard,
            width: workload.width,
            height: workload.height,
            steps: workload.steps,
            scheduler: workload.scheduler.name().into(),
            guidance: workload.guidance,
            negative_prompt: workload.negative_prompt.clone(),
            prompts: workload.prompts.clone(),
            batch: workload.batch,
            min_duration_seconds: options.min_duration.map(|d| d.as_secs_f64()),
            model: model.record,
        },
        results: std::mem::take(&mut timed.results),
        scores,
        cold_start: ColdStart {
            resolve_seconds: model.seconds,
            downloaded_bytes: model.downloaded_bytes,
            load_seconds: measured.load_seconds,
            warmup_seconds: measured.warmup_seconds,
            kernels: measured.kernels,
        },
        telemetry: Telemetry {
            interval_ms: options.sample_interval.as_millis() as u64,
            sources: measured.telemetry.sources,
            unavailable: measured.telemetry.unavailable,
            baseline: measured.baseline,
            timed: timed.window,
            samples: measured.samples,
        },
        valid,
        invalid_reasons,
        step_timing: Some(measured.step_timing),
        vram_report: measured.vram_report,
        sweep_id: None,
    }
}
