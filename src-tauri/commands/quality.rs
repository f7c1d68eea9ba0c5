//! The Benchmark screen's "score the pictures with CLIP": the CLIP model torchmetrics uses, from
//! the Hugging Face cache or fetched into it once (with the download's progress), for `--quality`.

use sdbench_bench::runner::QualityModel;
use sdbench_diffusion::quality::clip_score::{CLIP_MODEL_FILES, DEFAULT_CLIP_MODEL};
use sdbench_hub::cache::cached_files;
use sdbench_hub::{HubSettings, RepoId};
use sdbench_session::hub_components::engine_hub;

use crate::errors::{UiError, UiResult};
use crate::events::JobEvent;
use crate::jobs::JobContext;

use super::benchmark::REVISION;

/// The default CLIP model's folder: cached, else downloaded now, its progress sent as the job's.
pub fn clip_model(hub: &HubSettings, cx: &JobContext) -> UiResult<QualityModel> {
    let (id, _) =
        RepoId::parse(DEFAULT_CLIP_MODEL).map_err(|e| UiError::internal(e.to_string()))?;
    let folder = match cached_files(hub, &id, REVISION, CLIP_MODEL_FILES) {
        Some(cached) => cached.path,
        None => {
            engine_hub(hub.clone())
                .download_files(
                    &id,
                    REVISION,
                    CLIP_MODEL_FILES,
                    &mut |p| cx.emit(JobEvent::from(p)),
                    &|| cx.cancel.is_cancelled(),
                )?
                .path
        }
    };
    Ok(QualityModel {
        name: DEFAULT_CLIP_MODEL.to_string(),
        folder,
    })
}
