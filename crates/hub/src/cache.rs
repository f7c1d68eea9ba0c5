//! The Hugging Face cache layout, read and cleaned without the network.
//!
//! ```text
//! {cache}/models--owner--name/
//!     refs/main                      the commit `main` pointed at when last downloaded
//!     blobs/{sha256 or git sha1}     file contents; `{id}.incomplete` while downloading
//!     snapshots/{commit}/{path}      relative symlinks into blobs/ (copies where links are not allowed)
//! {cache}/.locks/models--owner--name/
//! ```
//! This is huggingface_hub's own layout, so Python tools and SD Bench share downloads.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::error::{HubError, Result};
use crate::repo::{HubSettings, RepoId};

/// The files a diffusers Stable Diffusion pipeline needs besides weights.
pub const PIPELINE_CONFIGS: &[&str] = &[
    "model_index.json",
    "scheduler/scheduler_config.json",
    "text_encoder/config.json",
    "tokenizer/vocab.json",
    "tokenizer/merges.txt",
    "unet/config.json",
    "vae/config.json",
];

/// Optional small files fetched when the repository has them.
pub const PIPELINE_EXTRAS: &[&str] = &[
    "tokenizer/tokenizer_config.json",
    "tokenizer/special_tokens_map.json",
];

/// Each component's weights, as (folder, file stem); `{stem}.fp16.safetensors` is preferred.
pub const PIPELINE_WEIGHTS: &[(&str, &str)] = &[
    ("text_encoder", "model"),
    ("unet", "diffusion_pytorch_model"),
    ("vae", "diffusion_pytorch_model"),
];

/// SDXL's second tokenizer and text encoder: needed when the repository has them.
pub const SECOND_ENCODER_CONFIGS: &[&str] = &[
    "text_encoder_2/config.json",
    "tokenizer_2/vocab.json",
    "tokenizer_2/merges.txt",
];
pub const SECOND_ENCODER_EXTRAS: &[&str] = &[
    "tokenizer_2/tokenizer_config.json",
    "tokenizer_2/special_tokens_map.json",
];
pub const SECOND_ENCODER_WEIGHTS: (&str, &str) = ("text_encoder_2", "model");

/// A transformer pipeline (`Flux2KleinPipeline`, `ZImagePipeline`): a Qwen3 text encoder with its
/// `tokenizer.json`, a transformer instead of a UNet; the large components come in shards with
/// an index.
pub const TRANSFORMER_CONFIGS: &[&str] = &[
    "model_index.json",
    "scheduler/scheduler_config.json",
    "text_encoder/config.json",
    "tokenizer/tokenizer.json",
    "transformer/config.json",
    "vae/config.json",
];
pub const TRANSFORMER_EXTRAS: &[&str] = &[
    "tokenizer/tokenizer_config.json",
    "tokenizer/chat_template.jinja",
    "tokenizer/special_tokens_map.json",
];
pub const TRANSFORMER_WEIGHTS: &[(&str, &str)] = &[
    ("text_encoder", "model"),
    ("transformer", "diffusion_pytorch_model"),
    ("vae", "diffusion_pytorch_model"),
];

/// Which pipeline a repository or folder holds, from the files it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipelineLayout {
    /// A UNet pipeline with one CLIP text encoder and its tokenizer, or two (`two_encoders`).
    UNet { two_encoders: bool },
    /// A transformer pipeline with one text encoder and its tokenizer: the same files whatever
    /// the family, which the engine tells apart by model_index.json once they are here.
    Transformer,
}

impl PipelineLayout {
    /// The layout of a repository or folder where `has(path)` tells whether a file exists.
    pub fn of(has: impl Fn(&str) -> bool) -> Self {
        if has("transformer/config.json") && !has("unet/config.json") {
            PipelineLayout::Transformer
        } else {
            PipelineLayout::UNet {
                two_encoders: has("text_encoder_2/config.json"),
            }
        }
    }

    /// What the pipeline reads: configs, optional small files and (folder, weights stem) per
    /// component.
    pub fn parts(
        self,
    ) -> (
        Vec<&'static str>,
        Vec<&'static str>,
        Vec<(&'static str, &'static str)>,
    ) {
        match self {
            PipelineLayout::Transformer => (
                TRANSFORMER_CONFIGS.to_vec(),
                TRANSFORMER_EXTRAS.to_vec(),
                TRANSFORMER_WEIGHTS.to_vec(),
            ),
            PipelineLayout::UNet { two_encoders } => {
                let mut configs = PIPELINE_CONFIGS.to_vec();
                let mut extras = PIPELINE_EXTRAS.to_vec();
                let mut weights = PIPELINE_WEIGHTS.to_vec();
                if two_encoders {
                    configs.extend_from_slice(SECOND_ENCODER_CONFIGS);
                    extras.extend_from_slice(SECOND_ENCODER_EXTRAS);
                    weights.push(SECOND_ENCODER_WEIGHTS);
                }
                (configs, extras, weights)
            }
        }
    }
}

/// A component's shard index, `{component}/{stem}.safetensors.index.json`.
pub fn shard_index(component: &str, stem: &str) -> String {
    format!("{component}/{stem}.safetensors.index.json")
}

/// Whether `path` is one of the shards of `{component}/{stem}`
/// (`{stem}-00001-of-00002.safetensors`).
pub fn is_shard(path: &str, component: &str, stem: &str) -> bool {
    path.strip_prefix(&format!("{component}/{stem}-"))
        .and_then(|rest| rest.strip_suffix(".safetensors"))
        .is_some_and(|numbers| {
            numbers.split("-of-").count() == 2
                && numbers
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '-' || c == 'o' || c == 'f')
        })
}

/// The shard files an index in `folder` names (relative to the folder), or `None` when the index
/// cannot be read.
fn indexed_shards(folder: &Path, component: &str, index: &str) -> Option<Vec<String>> {
    let text = fs::read_to_string(folder.join(index)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let map = value.get("weight_map")?.as_object()?;
    let mut files: Vec<String> = map
        .values()
        .filter_map(|v| v.as_str())
        .map(|f| format!("{component}/{f}"))
        .collect();
    files.sort();
    files.dedup();
    Some(files)
}

/// The configs and tokenizer files a pipeline in `folder` needs that it lacks (its weights aside).
pub fn missing_configs(folder: &Path) -> Vec<String> {
    let (configs, _, _) = PipelineLayout::of(|f| folder.join(f).is_file()).parts();
    configs
        .iter()
        .filter(|f| !folder.join(f).is_file())
        .map(|f| f.to_string())
        .collect()
}

/// Whether `folder` holds everything the pipeline reads (links are followed, so a link to a
/// missing blob counts as missing). SDXL folders need the second tokenizer and text encoder too;
/// a sharded component needs its index and every shard the index names.
pub fn missing_pipeline_files(folder: &Path) -> Vec<String> {
    let layout = PipelineLayout::of(|f| folder.join(f).is_file());
    let (configs, _, weights) = layout.parts();
    let mut missing: Vec<String> = configs
        .iter()
        .filter(|f| !folder.join(f).is_file())
        .map(|f| f.to_string())
        .collect();
    for (component, stem) in weights {
        let plain = format!("{component}/{stem}.safetensors");
        let fp16 = format!("{component}/{stem}.fp16.safetensors");
        let index = shard_index(component, stem);
        if folder.join(&index).is_file() {
            match indexed_shards(folder, component, &index) {
                Some(shards) => {
                    missing.extend(shards.into_iter().filter(|f| !folder.join(f).is_file()))
                }
                None => missing.push(index),
            }
        } else if !folder.join(&plain).is_file() && !folder.join(&fp16).is_file() {
            missing.push(fp16);
        }
    }
    missing
}

/// The snapshot folder `revision` (a branch name or a commit) resolves to in the cache, if it is
/// there and complete.
pub fn cached_snapshot(
    settings: &HubSettings,
    repo: &RepoId,
    revision: &str,
) -> Option<CachedSnapshot> {
    cached_with(settings, repo, revision, missing_pipeline_files)
}

/// The snapshot folder `revision` resolves to, if it holds the pipeline's configs and tokenizer
/// files (its weights or not).
pub fn cached_configs(
    settings: &HubSettings,
    repo: &RepoId,
    revision: &str,
) -> Option<CachedSnapshot> {
    cached_with(settings, repo, revision, missing_configs)
}

fn cached_with(
    settings: &HubSettings,
    repo: &RepoId,
    revision: &str,
    missing: fn(&Path) -> Vec<String>,
) -> Option<CachedSnapshot> {
    let dir = settings.model_dir(repo);
    let commit = fs::read_to_string(dir.join("refs").join(revision))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|_| revision.to_string());
    let path = dir.join("snapshots").join(&commit);
    (path.is_dir() && missing(&path).is_empty()).then_some(CachedSnapshot { path, commit })
}

#[derive(Debug, Clone, PartialEq)]
pub struct CachedSnapshot {
    pub path: PathBuf,
    pub commit: String,
}

/// The sha256 of a model file. A file in this cache is a link named after its blob, which for LFS
/// files (the weights) is their sha256, so it is read from the name; any other file is hashed.
pub fn file_sha256(path: &Path) -> Result<String> {
    let from_link = fs::read_link(path).ok().and_then(|target| {
        let name = target.file_name()?.to_string_lossy().to_string();
        (name.len() == 64 && name.chars().all(|c| c.is_ascii_hexdigit())).then_some(name)
    });
    match from_link {
        Some(sha) => Ok(sha),
        None => crate::download::hash_file(sha2::Sha256::new(), path),
    }
}

/// One model in the cache.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
pub struct CachedModel {
    pub repo: String,
    pub path: PathBuf,
    /// Bytes on disk: blobs (partial downloads included) and any copied snapshot files.
    pub size_bytes: u64,
    /// Snapshot commits present.
    pub snapshots: Vec<String>,
    /// Whether a snapshot holds a complete pipeline SD Bench can run.
    pub runnable: bool,
    /// Bytes in unfinished downloads.
    pub partial_bytes: u64,
}

/// Every model in the cache, sorted by id. A missing cache folder is an empty list.
pub fn list(settings: &HubSettings) -> Result<Vec<CachedModel>> {
    let entries = match fs::read_dir(&settings.cache_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HubError::io(&settings.cache_dir, e)),
    };
    let mut models = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(repo) = RepoId::from_folder_name(&name) else {
            continue;
        };
        models.push(describe(&entry.path(), &repo)?);
    }
    models.sort_by(|a, b| a.repo.cmp(&b.repo));
    Ok(models)
}

fn describe(dir: &Path, repo: &RepoId) -> Result<CachedModel> {
    let (size_bytes, partial_bytes) = disk_usage(dir)?;
    let mut snapshots: Vec<String> = fs::read_dir(dir.join("snapshots"))
        .map(|it| {
            it.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    snapshots.sort();
    let runnable = snapshots
        .iter()
        .any(|s| missing_pipeline_files(&dir.join("snapshots").join(s)).is_empty());
    Ok(CachedModel {
        repo: repo.to_string(),
        path: dir.to_path_buf(),
        size_bytes,
        snapshots,
        runnable,
        partial_bytes,
    })
}

/// (all bytes, bytes in `.incomplete` files) under `dir`, not following links.
fn disk_usage(dir: &Path) -> Result<(u64, u64)> {
    let mut total = 0;
    let mut partial = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(HubError::io(&d, e)),
        };
        for entry in entries.flatten() {
            let meta =
                fs::symlink_metadata(entry.path()).map_err(|e| HubError::io(entry.path(), e))?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
                if entry.file_name().to_string_lossy().ends_with(".incomplete") {
                    partial += meta.len();
                }
            }
        }
    }
    Ok((total, partial))
}

/// An exclusive hold on a model's download lock, released on drop. Downloads hold it; cleanup
/// refuses to delete a model while anyone does.
pub struct DownloadLock {
    _file: File,
}

impl DownloadLock {
    pub fn acquire(settings: &HubSettings, repo: &RepoId) -> Result<DownloadLock> {
        let path = settings.lock_path(repo);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| HubError::io(parent, e))?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| HubError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(DownloadLock { _file: file }),
            Err(fs::TryLockError::WouldBlock) => Err(HubError::Busy {
                repo: repo.to_string(),
                lock: path,
            }),
            Err(fs::TryLockError::Error(e)) => Err(HubError::io(&path, e)),
        }
    }
}

/// Deletes one model from the cache and returns the bytes freed. Refuses while a download of it
/// is running. A model that is not cached frees 0 bytes.
pub fn remove(settings: &HubSettings, repo: &RepoId) -> Result<u64> {
    let dir = settings.model_dir(repo);
    if !dir.exists() {
        return Ok(0);
    }
    let lock = DownloadLock::acquire(settings, repo)?;
    let (bytes, _) = disk_usage(&dir)?;
    fs::remove_dir_all(&dir).map_err(|e| HubError::io(&dir, e))?;
    drop(lock);
    let lock_dir = settings.cache_dir.join(".locks").join(repo.folder_name());
    // The lock folder is bookkeeping; failing to remove it loses nothing.
    let _ = fs::remove_dir_all(lock_dir);
    Ok(bytes)
}
