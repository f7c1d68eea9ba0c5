//! The models a run can use on this machine without downloading: the Hugging Face cache's
//! repositories, other apps' model folders (ComfyUI, AUTOMATIC1111/Forge, InvokeAI,
//! stable-diffusion.cpp, and folders the person adds), every preset's synthetic weights, and a
//! folder or file the person named. Each with its family and architecture (read from its configs
//! or its tensor names), its format, its size and whether SD Bench can run it, and why not.
//! Nothing is copied or moved.

use std::path::Path;

use sdbench_diffusion::{ComponentFiles, Family, ModelSource, Pipeline, Precision, Preset};
use sdbench_hub::{cache, HubSettings, RepoId};

use crate::hub_components::engine_components;
use crate::model_folders::{self, AppFolder, Found};
use crate::model_name::ModelName;

/// Where a model on this machine comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalKind {
    /// A repository in the Hugging Face cache (a diffusers folder).
    HubCache,
    /// A diffusers folder elsewhere.
    Folder,
    /// A single-file checkpoint.
    File,
    /// Generated weights of a preset's architecture: no download, never a standard score.
    Synthetic,
}

impl LocalKind {
    pub fn describe(self) -> &'static str {
        match self {
            LocalKind::HubCache => "diffusers folder (Hugging Face cache)",
            LocalKind::Folder => "diffusers folder",
            LocalKind::File => "single file",
            LocalKind::Synthetic => {
                "synthetic weights (no download; timing only, never a standard score)"
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct LocalModel {
    /// What `--model` (and the app's model setting) takes to run it.
    pub name: String,
    pub kind: LocalKind,
    /// The architecture its configs describe (`None` when they could not be read).
    pub architecture: Option<Family>,
    /// Bytes on disk (`None` for synthetic weights).
    pub size_bytes: Option<u64>,
    /// Why SD Bench cannot run it; `None` when it can.
    pub problem: Option<String>,
    /// The app whose model folder holds it ("ComfyUI"), for models found there.
    pub found_in: Option<&'static str>,
    /// A weights file's format and stored types (`GGUF Q4_K+F32`); `None` for folders and
    /// synthetic weights.
    pub weights: Option<String>,
    /// For a transformer file kept apart from its parts: the text encoder and VAE files found
    /// beside it that it runs with (`--text-encoder`, `--vae`).
    pub parts: ComponentFiles,
}

impl LocalModel {
    /// Where it is and in what form: "single file (ComfyUI), GGUF Q8_0+F16".
    pub fn describe(&self) -> String {
        let mut text = self.kind.describe().to_string();
        if let Some(app) = self.found_in {
            text = format!("{text} ({app})");
        }
        if let Some(weights) = &self.weights {
            text = format!("{text}, {weights}");
        }
        text
    }
}

/// Every model on this machine, the cache's first (by id), then what `folders` hold (in their
/// order), then each preset's synthetic weights; `named`: a model the person named (a folder or
/// file not in the cache is added first).
pub fn list(
    hub: &HubSettings,
    revision: &str,
    named: Option<&str>,
    folders: &[AppFolder],
) -> Vec<LocalModel> {
    let mut models = Vec::new();
    if let Some(Ok(ModelName::Local(source))) =
        named.map(|n| ModelName::parse(n, None, &Default::default()))
    {
        match &source {
            ModelSource::Folder(path) => models.push(on_disk(
                named.unwrap_or_default(),
                LocalKind::Folder,
                path,
                &source,
            )),
            ModelSource::Checkpoint { file, .. } => models.push(on_disk(
                named.unwrap_or_default(),
                LocalKind::File,
                file,
                &source,
            )),
            ModelSource::Synthetic(_) => {}
        }
    }
    match cache::list(hub, engine_components) {
        Ok(cached) => {
            for model in cached {
                models.push(cached_model(hub, revision, &model));
            }
        }
        Err(e) => models.push(LocalModel {
            name: hub.cache_dir.display().to_string(),
            kind: LocalKind::HubCache,
            architecture: None,
            size_bytes: None,
            problem: Some(format!("the model cache could not be read: {e}")),
            found_in: None,
            weights: None,
            parts: ComponentFiles::default(),
        }),
    }
    for folder in folders {
        for found in model_folders::scan(&folder.path) {
            let mut model = match found {
                Found::Folder(path) => on_disk(
                    &path.display().to_string(),
                    LocalKind::Folder,
                    &path,
                    &ModelSource::Folder(path.clone()),
                ),
                Found::File(file) => on_disk(
                    &file.display().to_string(),
                    LocalKind::File,
                    &file,
                    &ModelSource::Checkpoint {
                        file: file.clone(),
                        config: None,
                        parts: Default::default(),
                    },
                ),
            };
            model.found_in = Some(folder.app);
            models.push(model);
        }
    }
    models.extend(Preset::all().map(|preset| LocalModel {
        name: format!("synthetic-{}", preset.name()),
        kind: LocalKind::Synthetic,
        architecture: Some(preset.family()),
        size_bytes: None,
        problem: None,
        found_in: None,
        weights: None,
        parts: ComponentFiles::default(),
    }));
    models
}

fn cached_model(hub: &HubSettings, revision: &str, model: &cache::CachedModel) -> LocalModel {
    let snapshot = RepoId::parse(&model.repo)
        .ok()
        .and_then(|(id, _)| cache::cached_snapshot(hub, &id, revision, engine_components))
        .or_else(|| {
            // Another revision than the one runs ask for: any complete snapshot tells the family.
            model.snapshots.iter().find_map(|s| {
                let path = model.path.join("snapshots").join(s);
                cache::missing_pipeline_files(&path, engine_components)
                    .is_empty()
                    .then_some(cache::CachedSnapshot {
                        path,
                        commit: s.clone(),
                    })
            })
        });
    let mut entry = match snapshot {
        Some(snapshot) => {
            let source = ModelSource::Folder(snapshot.path.clone());
            on_disk(&model.repo, LocalKind::HubCache, &snapshot.path, &source)
        }
        None => LocalModel {
            name: model.repo.clone(),
            kind: LocalKind::HubCache,
            architecture: None,
            size_bytes: None,
            problem: Some(if model.partial_bytes > 0 {
                "its download is not finished".into()
            } else {
                "the cache holds no complete pipeline of it".into()
            }),
            found_in: None,
            weights: None,
            parts: ComponentFiles::default(),
        },
    };
    entry.size_bytes = Some(model.size_bytes);
    entry
}

/// A folder or file: its architecture from its configs (or the error that says why it cannot run).
fn on_disk(name: &str, kind: LocalKind, path: &Path, source: &ModelSource) -> LocalModel {
    let sized = || match Pipeline::model_size(source, Precision::F32) {
        Ok((size, _)) => (Some(size.family), None),
        Err(e) => (None, Some(e.to_string())),
    };
    // A transformer file kept apart from its repository runs only with its other parts: those
    // found beside it (ComfyUI's text_encoders/ and vae/) are listed with it.
    let mut parts = ComponentFiles::default();
    let (architecture, problem) = match source {
        ModelSource::Checkpoint {
            file, config: None, ..
        } => match sdbench_diffusion::preset_for_denoiser_file(file) {
            Ok(Some(preset)) => {
                let candidates = model_folders::part_candidates(file);
                parts = sdbench_diffusion::parts_for_denoiser_file(preset, file, &candidates);
                let missing = sdbench_diffusion::parts_lacking(preset, file, &parts);
                let problem = (!missing.is_empty()).then(|| {
                    let (what, _) = sdbench_diffusion::describe_parts(&missing);
                    format!(
                        "a {} transformer file: it runs with --text-encoder and --vae naming its text encoder and VAE files (its configs and tokenizer come from {}); {what} not found beside it (ComfyUI's models/text_encoders/ and models/vae/)",
                        preset.long_label(),
                        preset.repository(),
                    )
                });
                if problem.is_some() {
                    parts = ComponentFiles::default();
                }
                (Some(preset.family()), problem)
            }
            Ok(None) => sized(),
            Err(e) => (None, Some(e.to_string())),
        },
        _ => sized(),
    };
    let weights = match source {
        ModelSource::Checkpoint { file, .. } => {
            sdbench_diffusion::io::tensor_file::describe_weights(file).ok()
        }
        _ => None,
    };
    LocalModel {
        name: name.to_string(),
        kind,
        architecture,
        size_bytes: size_on_disk(path),
        problem,
        found_in: None,
        weights,
        parts,
    }
}

/// A file's size, or the sum of a folder's files (links followed, as the cache's snapshots are).
fn size_on_disk(path: &Path) -> Option<u64> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return Some(meta.len());
    }
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            match std::fs::metadata(entry.path()) {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures")
    }

    #[test]
    fn lists_synthetic_models_the_named_folder_and_the_cache() {
        let cache_dir = tempfile::tempdir().unwrap();
        let hub = HubSettings {
            cache_dir: cache_dir.path().to_path_buf(),
            endpoint: "http://127.0.0.1:9".into(),
            token: None,
            offline: true,
        };
        // An empty cache: every preset's synthetic weights.
        let models = list(&hub, "main", None, &[]);
        assert_eq!(models.len(), Preset::all().count());
        assert!(models
            .iter()
            .all(|m| m.kind == LocalKind::Synthetic && m.problem.is_none()));
        assert!(models.iter().any(|m| m.name == "synthetic-flux2-klein"));

        // A named folder comes first, with its architecture from its configs.
        let folder = fixtures().join("tiny-zimage");
        let named = folder.display().to_string();
        let models = list(&hub, "main", Some(&named), &[]);
        let first = &models[0];
        assert_eq!(
            (first.kind, first.name.as_str()),
            (LocalKind::Folder, named.as_str())
        );
        assert_eq!(
            first.architecture.map(|f| f.descriptor().name),
            Some("Z-Image")
        );
        assert!(first.size_bytes.unwrap() > 100_000 && first.problem.is_none());

        // A folder that is no model says why.
        let empty = tempfile::tempdir().unwrap();
        let models = list(&hub, "main", Some(&empty.path().display().to_string()), &[]);
        assert!(models[0].architecture.is_none());
        assert!(models[0]
            .problem
            .as_deref()
            .unwrap()
            .contains("model_index.json"));
    }
}
