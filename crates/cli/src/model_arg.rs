//! `--model`: a local folder, a single-file checkpoint, a Hub id (from the cache, or downloaded),
//! or `synthetic`; `--model-config` describes a checkpoint that is not SD1.5-shaped.

use std::path::{Path, PathBuf};

use anyhow::Context;
use sdbench_diffusion::ModelSource;
use sdbench_hub::{Hub, HubSettings, RepoId};

use crate::progress::DownloadBar;

/// What `--model` names.
pub enum ModelArg {
    /// A folder, a checkpoint file, or synthetic weights: nothing to fetch.
    Local(ModelSource),
    Hub(RepoId),
}

/// An existing folder or file wins; `synthetic` is synthetic weights; anything else must be a Hub
/// id. A renamed Hub id is mapped to its successor with a note on stderr. `config` (a diffusers
/// folder) goes with a checkpoint file only.
pub fn parse(text: &str, config: Option<&Path>) -> anyhow::Result<ModelArg> {
    let path = PathBuf::from(text);
    if path.is_file() {
        if let Some(folder) = config {
            if !folder.is_dir() {
                anyhow::bail!(
                    "--model-config {} is not a folder (pass a diffusers model folder whose configs describe the checkpoint)",
                    folder.display()
                );
            }
        }
        return Ok(ModelArg::Local(ModelSource::Checkpoint {
            file: path,
            config: config.map(Path::to_path_buf),
        }));
    }
    if let Some(folder) = config {
        anyhow::bail!(
            "--model-config {} applies only to a single-file checkpoint (--model FILE.safetensors)",
            folder.display()
        );
    }
    if text == "synthetic" {
        return Ok(ModelArg::Local(ModelSource::Synthetic));
    }
    if path.is_dir() {
        return Ok(ModelArg::Local(ModelSource::Folder(path)));
    }
    let looks_like_path =
        text.starts_with(['.', '/', '~']) || text.contains('\\') || text.matches('/').count() != 1;
    match RepoId::parse(text) {
        Ok((id, note)) => {
            if let Some(note) = note {
                eprintln!("note: {note}");
            }
            Ok(ModelArg::Hub(id))
        }
        Err(_) if looks_like_path => anyhow::bail!(
            "model {} does not exist (pass a diffusers model folder, a single-file .safetensors checkpoint, a Hub id like stable-diffusion-v1-5/stable-diffusion-v1-5, or `synthetic`)",
            path.display()
        ),
        Err(e) => Err(e.into()),
    }
}

/// The model as the engine loads it: Hub ids come from the cache, or are downloaded with a
/// progress bar.
pub fn resolve(text: &str, config: Option<&Path>) -> anyhow::Result<ModelSource> {
    Ok(match parse(text, config)? {
        ModelArg::Local(source) => source,
        ModelArg::Hub(id) => {
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
