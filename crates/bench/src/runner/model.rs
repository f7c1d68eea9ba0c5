//! The run's first phase: find the model (cache or download for Hub ids, synthetic weights when
//! offline and allowed, a local folder as is) and start its record in the result. A download
//! whose configs describe a model of another family than the workload's stops before the weights.

use std::path::Path;
use std::time::Instant;

use sdbench_diffusion::{CancelToken, ModelSource};
use sdbench_hub::HubError;

use super::{ModelChoice, RunOptions};
use crate::error::{BenchError, Result};
use crate::result::{FileRecord, ModelRecord};
use sdbench_session::events::Event;
use sdbench_session::model_name::{fetch_from_hub, with_configs};

/// The model a run loads, what the result says of it so far, and what finding it cost.
pub(super) struct ResolvedModel {
    pub source: ModelSource,
    pub record: ModelRecord,
    pub downloaded_bytes: u64,
    pub seconds: f64,
}

pub(super) fn resolve(
    options: &RunOptions,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<ResolvedModel> {
    let start = Instant::now();
    let resolved = |source: ModelSource, record, downloaded_bytes| ResolvedModel {
        source,
        record,
        downloaded_bytes,
        seconds: start.elapsed().as_secs_f64(),
    };
    match &options.model {
        ModelChoice::Local(source) => {
            let source = with_configs(source.clone(), &options.hub, observer, cancel)?;
            let record = local_record(&source);
            Ok(resolved(source, record, 0))
        }
        ModelChoice::Hub {
            id,
            revision,
            fallback_to_synthetic,
        } => match fetch_from_hub(
            &options.hub,
            id,
            revision,
            observer,
            cancel,
            &mut |source| {
                super::images::check_family_can_run(source, &options.workload, &id.to_string())
            },
        ) {
            Ok(r) => Ok(resolved(
                ModelSource::Folder(r.path),
                model_record(&id.to_string(), Some(r.commit), "hub"),
                r.downloaded_bytes,
            )),
            Err(BenchError::Hub(e @ HubError::NotCached { .. })) if *fallback_to_synthetic => {
                observer(&Event::note(format!(
                    "{e}.\nRunning on synthetic weights instead: the timing is real, the images are noise, and the result is not a standard score."
                )));
                let source = ModelSource::Synthetic(options.workload.preset);
                let record = local_record(&source);
                Ok(resolved(source, record, 0))
            }
            Err(e) => Err(e),
        },
    }
}

/// The record of a model on this machine.
fn local_record(source: &ModelSource) -> ModelRecord {
    match source {
        ModelSource::Folder(path) => model_record(&path.display().to_string(), None, "folder"),
        ModelSource::Checkpoint { file, .. } => {
            model_record(&file.display().to_string(), None, "checkpoint")
        }
        ModelSource::Synthetic(preset) => {
            let id = match *preset == sdbench_diffusion::PLAIN_SYNTHETIC {
                true => "synthetic".to_string(),
                false => format!("synthetic-{}", preset.name()),
            };
            ModelRecord {
                synthetic: true,
                ..model_record(&id, None, "synthetic")
            }
        }
    }
}

/// What the result says of the model; its architecture and files are filled in once it is loaded.
fn model_record(id: &str, revision: Option<String>, source: &str) -> ModelRecord {
    ModelRecord {
        id: id.into(),
        revision,
        source: source.into(),
        synthetic: false,
        sd15_architecture: false,
        family: None,
        preset: None,
        files: Vec::new(),
        quantization: None,
    }
}

/// Size, sha256 and stored element types of a weights file (the hash from the cache's blob name
/// where it can; a sharded component's shards are recorded one by one).
pub(super) fn file_record(path: &Path) -> Result<FileRecord> {
    let bytes = std::fs::metadata(path)
        .map_err(|e| BenchError::io(path, e))?
        .len();
    let weight_types = sdbench_diffusion::io::tensor_file::stored_types(path)?
        .into_iter()
        .map(|(name, count)| (name.to_string(), count))
        .collect();
    Ok(FileRecord {
        path: path.display().to_string(),
        bytes,
        sha256: sdbench_hub::cache::file_sha256(path)?,
        weight_types,
    })
}
