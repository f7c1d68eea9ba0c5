//! The run's loading phases: the device and memory profile, the pipeline on them, and what the
//! loaded model means for the run's standing (a standard run needs the workload's architecture,
//! its own real weights, by sha256, and the full profile).

use std::time::Instant;

use sdbench_diffusion::{
    DeviceRequest, LoadOptions, MemoryProfile, ModelSource, Pipeline, RequestShape,
};

use super::model::{file_record, ResolvedModel};
use super::own_weights::{self, OwnWeights};
use super::RunOptions;
use crate::error::Result;
use crate::kernels::KernelCounters;
use crate::result::ModelRecord;
use sdbench_session::device_memory::{place, MemoryChoice, Placement};
use sdbench_session::events::Event;
use sdbench_session::vram_report::VramPhase;

/// The pipeline a run times, the profile it was loaded with, and the load's costs.
pub(super) struct Loaded {
    pub pipeline: Pipeline,
    pub memory: MemoryProfile,
    pub seconds: f64,
    /// Kernels compiled from here to the end of the warm-up: the cold start's.
    pub kernels: KernelCounters,
    /// The allocator after loading, where the diagnostic image's VRAM report starts (`None`
    /// without a device allocator).
    pub vram_after_load: Option<VramPhase>,
}

/// The device and memory profile for the workload's requests (`auto` resolved, with a note).
pub(super) fn choose_placement(
    options: &RunOptions,
    source: &ModelSource,
    shape: &RequestShape,
    observer: &mut dyn FnMut(&Event),
) -> Result<Placement> {
    let request = DeviceRequest {
        backend: options.backend,
        index: options.device_index,
    };
    let memory = MemoryChoice {
        profile: options.memory,
        auto: options.memory_auto,
        limit: options.memory_limit,
    };
    let placement = place(
        request,
        memory,
        source,
        options.precision,
        shape,
        &options.sysfs_root,
        options.use_nvml,
    )?;
    if let Some(reason) = &placement.auto_reason {
        observer(&Event::note(format!(
            "memory profile: auto chose {} ({reason})",
            placement.profile
        )));
    }
    Ok(placement)
}

pub(super) fn load(
    options: &RunOptions,
    model: &ResolvedModel,
    placement: Placement,
    shape: RequestShape,
    observer: &mut dyn FnMut(&Event),
) -> Result<Loaded> {
    observer(&Event::Loading {
        model: model.record.id.clone(),
        backend: placement.device.kind.name().into(),
    });
    let kernels = KernelCounters::start(placement.device.kind);
    let start = Instant::now();
    let pipeline = Pipeline::load_with(
        &model.source,
        placement.device,
        options.precision,
        placement.profile.load_options(LoadOptions {
            planned: Some(shape),
            ..LoadOptions::default()
        }),
    )?;
    let seconds = start.elapsed().as_secs_f64();
    for note in &pipeline.notes {
        observer(&Event::note(note.clone()));
    }
    let dev = &pipeline.device;
    let vram_after_load = dev
        .allocator_memory()
        .map(|memory| VramPhase::of("load", None, memory));
    observer(&Event::Loaded {
        seconds,
        device: dev.info.name.clone(),
        precision: pipeline.precision.name().into(),
    });
    Ok(Loaded {
        pipeline,
        memory: placement.profile,
        seconds,
        kernels,
        vram_after_load,
    })
}

/// Whether the loaded model can give the workload's standard score, with a note for each reason
/// it cannot; fills in the model's architecture and weight files in its record.
pub(super) fn standing(
    options: &RunOptions,
    loaded: &Loaded,
    model: &mut ResolvedModel,
    observer: &mut dyn FnMut(&Event),
) -> Result<bool> {
    let workload = &options.workload;
    let info = &loaded.pipeline.info;
    let record = &mut model.record;
    // The schema's version-1 field: the standard workload's (SD1.5's) architecture.
    record.sd15_architecture = info.preset == Some(sdbench_diffusion::STANDARD_WORKLOAD.preset);
    record.family = Some(info.family.name().into());
    record.preset = info.preset.map(|p| p.name().into());
    record.files = info
        .weight_files
        .iter()
        .map(|p| file_record(p))
        .collect::<Result<_>>()?;
    record.quantization =
        ModelRecord::quantization_of(record.files.iter().flat_map(|f| f.weight_types.keys()));
    if let (true, Some(types)) = (workload.standard, &record.quantization) {
        observer(&Event::note(format!(
            "the weights are stored as {types} (linear layers kept in those codes and dequantized per call), not as {}'s own, so this {} run is reported as custom",
            workload.preset.repository(),
            workload.name
        )));
    }
    let architecture_matches = info.preset == Some(workload.preset);
    let full_profile = loaded.memory == MemoryProfile::Full;
    if workload.standard && !full_profile {
        observer(&Event::note(format!(
            "the {} memory profile is not the standard one (full), so this {} run is reported as custom",
            loaded.memory, workload.name
        )));
    }
    if workload.standard && !architecture_matches {
        observer(&Event::note(format!(
            "{} does not have {}'s architecture (its configs differ), so this {} run is reported as custom, not standard",
            record.id,
            workload.preset.repository(),
            workload.name
        )));
    }
    let own_weights = match workload.standard && !record.synthetic {
        true => own_weights(options, record, observer),
        false => false,
    };
    Ok(workload.standard
        && !record.synthetic
        && record.quantization.is_none()
        && architecture_matches
        && full_profile
        && own_weights)
}

/// Whether every weights file is one of the workload's repository's, with a note when not (or
/// when that cannot be known).
fn own_weights(
    options: &RunOptions,
    record: &ModelRecord,
    observer: &mut dyn FnMut(&Event),
) -> bool {
    let workload = &options.workload;
    let repo = workload.preset.repository();
    let Ok((repo_id, _)) = sdbench_hub::RepoId::parse(repo) else {
        return false;
    };
    match own_weights::check(&record.files, &repo_id, &options.hub) {
        OwnWeights::Yes => true,
        OwnWeights::No { file } => {
            observer(&Event::note(format!(
                "{file} is none of {repo}'s files (no file of that repository has its sha256), so this {} run is reported as custom: a standard score uses the workload's own weights",
                workload.name
            )));
            false
        }
        OwnWeights::Unknown { reason } => {
            observer(&Event::note(format!(
                "the weights could not be checked against {repo}'s files ({reason}, and this machine's Hugging Face cache does not hold them), so this {} run is reported as custom: run it with --model {repo}, or once with the network on",
                workload.name
            )));
            false
        }
    }
}
