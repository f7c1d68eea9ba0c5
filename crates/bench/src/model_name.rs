//! What a person names as the model (a command-line argument or the app's setting): a local
//! diffusers folder, a single-file checkpoint, a Hub id, or `synthetic`.

use std::path::{Path, PathBuf};

use sdbench_diffusion::{CancelToken, ModelSource, Precision, Preset};
use sdbench_hub::{Hub, HubError, HubSettings, RepoId, Resolved};

use crate::error::{BenchError, Result};
use crate::events::Event;
use crate::runner::ModelChoice;
use crate::workload::Workload;

/// The model `synthetic` names: the standard workload's architecture with generated weights.
pub const PLAIN_SYNTHETIC: Preset = Workload::STANDARD_PRESET;

/// A parsed model name.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelName {
    /// A folder, a checkpoint file, or synthetic weights: nothing to fetch.
    Local(ModelSource),
    /// A Hub id, with a note when a renamed id was mapped to its successor.
    Hub { id: RepoId, note: Option<String> },
}

impl ModelName {
    /// An existing folder or file wins; `synthetic` is synthetic weights; anything else must be a
    /// Hub id. `config` (a diffusers folder whose configs describe the file) goes with a checkpoint
    /// file only.
    pub fn parse(text: &str, config: Option<&Path>) -> Result<ModelName> {
        let bad = |problem: String| Err(BenchError::Model(problem));
        let path = PathBuf::from(text);
        if path.is_file() {
            if let Some(folder) = config {
                if !folder.is_dir() {
                    return bad(format!(
                        "the model config {} is not a folder (name a diffusers model folder whose configs describe the checkpoint)",
                        folder.display()
                    ));
                }
            }
            return Ok(ModelName::Local(ModelSource::Checkpoint {
                file: path,
                config: config.map(Path::to_path_buf),
            }));
        }
        if let Some(folder) = config {
            return bad(format!(
                "the model config {} applies only to a single-file checkpoint (a .safetensors file)",
                folder.display()
            ));
        }
        if text == "synthetic" {
            return Ok(ModelName::Local(ModelSource::Synthetic(PLAIN_SYNTHETIC)));
        }
        if let Some(name) = text.strip_prefix("synthetic-") {
            return match Preset::named(name) {
                Some(preset) => Ok(ModelName::Local(ModelSource::Synthetic(preset))),
                None => bad(format!(
                    "unknown synthetic model `{text}`; choose synthetic ({}) or one of: {}",
                    PLAIN_SYNTHETIC.short_label(),
                    Preset::all()
                        .map(|p| format!("synthetic-{}", p.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            };
        }
        if path.is_dir() {
            return Ok(ModelName::Local(ModelSource::Folder(path)));
        }
        let looks_like_path = text.starts_with(['.', '/', '~'])
            || text.contains('\\')
            || text.matches('/').count() != 1;
        match RepoId::parse(text) {
            Ok((id, note)) => Ok(ModelName::Hub { id, note }),
            Err(_) if looks_like_path => bad(format!(
                "model {} does not exist (name a diffusers model folder, a single-file .safetensors checkpoint, a Hub id like stable-diffusion-v1-5/stable-diffusion-v1-5, or `synthetic`)",
                path.display()
            )),
            Err(e) => Err(e.into()),
        }
    }
}

impl ModelName {
    /// The model on this machine: a Hub id from the cache, or downloaded (with `Event::Download`
    /// progress, and a note when the Hub was not reachable and the cache served it). A download
    /// stops before the weights when `check` refuses the model its configs describe.
    pub fn resolve(
        &self,
        hub: &HubSettings,
        observer: &mut dyn FnMut(&Event),
        cancel: &CancelToken,
        check: &mut dyn FnMut(&ModelSource) -> Result<()>,
    ) -> Result<ModelSource> {
        match self {
            ModelName::Local(source) => Ok(source.clone()),
            ModelName::Hub { id, .. } => {
                let resolved = fetch_from_hub(hub, id, "main", observer, cancel, check)?;
                Ok(ModelSource::Folder(resolved.path))
            }
        }
    }

    /// The standard workload for a benchmark that names this model and no workload, and why it
    /// is that one (for a note): the one made for the model's architecture, read from its configs
    /// (a Hub model's from the cache, or by the preset whose repository it is); the default one
    /// for a Hub model that is not here yet, whose configs are checked against it as they
    /// download. An error names the model's architecture when its family has no standard
    /// workload. `label`: the model as the person named it.
    pub fn standard_workload(
        &self,
        label: &str,
        hub: &HubSettings,
        revision: &str,
    ) -> Result<(Workload, String)> {
        let made_for = |family| -> Result<(Workload, String)> {
            let workload = Workload::for_architecture(family, label)?;
            Ok((
                workload,
                format!("the standard workload for {label}'s architecture ({family})"),
            ))
        };
        let source = match self {
            ModelName::Local(source) => source.clone(),
            ModelName::Hub { id, .. } => {
                if let Some(preset) = Preset::all().find(|p| p.repository() == id.as_str()) {
                    return made_for(preset.family());
                }
                match sdbench_hub::cache::cached_snapshot(hub, id, revision) {
                    Some(snapshot) => ModelSource::Folder(snapshot.path),
                    None => {
                        return Ok((
                            Workload::standard(),
                            format!(
                                "the default: {label} is not in the model cache, so its \
                                 architecture is not known before its configs download (name \
                                 one with --workload)"
                            ),
                        ))
                    }
                }
            }
        };
        let (size, _) = sdbench_diffusion::Pipeline::model_size(&source, Precision::F32)?;
        made_for(size.family)
    }

    /// The model as the benchmark runner takes it; a Hub model is read at `revision`, and with
    /// `fallback_to_synthetic` runs on synthetic weights when it is neither cached nor downloadable.
    pub fn into_choice(self, revision: &str, fallback_to_synthetic: bool) -> ModelChoice {
        match self {
            ModelName::Local(source) => ModelChoice::Local(source),
            ModelName::Hub { id, .. } => ModelChoice::Hub {
                id,
                revision: revision.into(),
                fallback_to_synthetic,
            },
        }
    }
}

/// `id` at `revision` from the cache or the Hub, with download progress and a note when the Hub
/// was not reachable and the cache served it. A download runs `check` on the model its configs
/// describe before it fetches the weights, and stops there when `check` refuses it.
pub(crate) fn fetch_from_hub(
    hub: &HubSettings,
    id: &RepoId,
    revision: &str,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
    check: &mut dyn FnMut(&ModelSource) -> Result<()>,
) -> Result<Resolved> {
    let resolved = Hub::new(hub.clone()).resolve_checked(
        id,
        revision,
        &mut |p| observer(&Event::Download(p.clone())),
        &|| cancel.is_cancelled(),
        &mut |configs: &Path| check(&ModelSource::Folder(configs.to_path_buf())),
    );
    match resolved {
        Ok(r) => {
            if let Some(reason) = &r.offline_reason {
                let commit = &r.commit[..r.commit.len().min(10)];
                observer(&Event::note(format!(
                    "the Hub is not reachable ({reason}); using the cached {id} at {commit}"
                )));
            }
            Ok(r)
        }
        Err(BenchError::Hub(HubError::Cancelled)) => Err(BenchError::Cancelled),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_what_they_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("model.safetensors");
        std::fs::write(&file, b"x").unwrap();
        let folder = dir.path().to_str().unwrap();

        assert_eq!(
            ModelName::parse("synthetic", None).unwrap(),
            ModelName::Local(ModelSource::Synthetic(Preset::SD15))
        );
        assert_eq!(
            ModelName::parse("synthetic-sdxl-base", None).unwrap(),
            ModelName::Local(ModelSource::Synthetic(Preset::SDXL_BASE))
        );
        assert!(ModelName::parse("synthetic-sd9", None)
            .unwrap_err()
            .to_string()
            .contains("synthetic-sdxl-base"));
        assert_eq!(
            ModelName::parse(folder, None).unwrap(),
            ModelName::Local(ModelSource::Folder(dir.path().into()))
        );
        assert_eq!(
            ModelName::parse(file.to_str().unwrap(), Some(dir.path())).unwrap(),
            ModelName::Local(ModelSource::Checkpoint {
                file: file.clone(),
                config: Some(dir.path().into())
            })
        );
        match ModelName::parse("stable-diffusion-v1-5/stable-diffusion-v1-5", None).unwrap() {
            ModelName::Hub { id, note } => {
                assert_eq!(id.as_str(), "stable-diffusion-v1-5/stable-diffusion-v1-5");
                assert!(note.is_none());
            }
            other => panic!("{other:?}"),
        }
        let renamed = ModelName::parse("runwayml/stable-diffusion-v1-5", None).unwrap();
        assert!(matches!(renamed, ModelName::Hub { note: Some(_), .. }));
    }

    #[test]
    fn bad_names_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err = ModelName::parse(missing.to_str().unwrap(), None).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        let err = ModelName::parse("synthetic", Some(dir.path())).unwrap_err();
        assert!(err.to_string().contains("only to a single-file"), "{err}");
        let file = dir.path().join("m.safetensors");
        std::fs::write(&file, b"x").unwrap();
        let err = ModelName::parse(file.to_str().unwrap(), Some(&missing)).unwrap_err();
        assert!(err.to_string().contains("is not a folder"), "{err}");
    }
}
