//! `--model`: a local folder, a single-file checkpoint, a Hub id (from the cache, or downloaded),
//! or `synthetic`; `--model-config` describes a checkpoint that is not shaped as SD1.5 or SDXL base.

use std::path::Path;

use anyhow::Context;
use sdbench_diffusion::ModelSource;
use sdbench_hub::HubSettings;
use sdbench_session::{Event, ModelName};

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
    let name = parse(text, config)?;
    let mut bar = DownloadBar::new();
    let cancel = crate::interrupt::token();
    let source = name
        .resolve(
            &HubSettings::from_env(),
            &mut |event| match event {
                Event::Download(p) => bar.update(p),
                Event::Note { text } => {
                    bar.finish();
                    eprintln!("note: {text}");
                }
                _ => {}
            },
            &cancel,
            &mut |_| Ok(()),
        )
        .with_context(|| format!("getting {text} failed"))?;
    bar.finish();
    Ok(source)
}

/// `--scheduler`'s help: the schedulers each model family takes, from the family registry.
pub fn scheduler_help(what: &str) -> String {
    let families: Vec<String> = sdbench_diffusion::FAMILIES
        .iter()
        .map(|f| format!("{} models take {}", f.name, f.scheduler_names().join(", ")))
        .collect();
    format!("{what} ({})", families.join("; "))
}
