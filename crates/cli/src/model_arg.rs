//! `--model`: a local folder, a single-file checkpoint, a Hub id (from the cache, or downloaded),
//! or `synthetic`; `--model-config` describes a checkpoint that is not SD1.5-shaped.

use std::path::Path;

use anyhow::Context;
use sdbench_bench::ModelName;
use sdbench_diffusion::ModelSource;
use sdbench_hub::{Hub, HubSettings};

use crate::progress::DownloadBar;

/// Parses `--model`; a renamed Hub id is mapped to its successor with a note on stderr.
pub fn parse(text: &str, config: Option<&Path>) -> anyhow::Result<ModelName> {
    let name = ModelName::parse(text, config)?;
    if let ModelName::Hub {
        note: Some(note), ..
    } = &name
    {
        eprintln!("note: {note}");
    }
    Ok(name)
}

/// The model as the engine loads it: Hub ids come from the cache, or are downloaded with a
/// progress bar.
pub fn resolve(text: &str, config: Option<&Path>) -> anyhow::Result<ModelSource> {
    Ok(match parse(text, config)? {
        ModelName::Local(source) => source,
        ModelName::Hub { id, .. } => {
            let hub = Hub::new(HubSettings::from_env());
            let mut bar = DownloadBar::new();
            let cancel = crate::interrupt::token();
            let resolved = hub
                .resolve(&id, "main", &mut |p| bar.update(p), &|| {
                    cancel.is_cancelled()
                })
                .with_context(|| format!("getting {id} failed"))?;
            bar.finish();
            if let Some(reason) = resolved.offline_reason {
                eprintln!("note: the Hub is not reachable ({reason}); using the cached copy");
            }
            ModelSource::Folder(resolved.path)
        }
    })
}
