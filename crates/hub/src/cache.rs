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

use crate::components::{components_in, missing_in, ChooseComponents, MODEL_INDEX};
use crate::error::{HubError, Result};
use crate::repo::{HubSettings, RepoId};

/// What the pipeline in `folder` lacks of the components `choose` names for it (links are
/// followed, so a link to a missing blob counts as missing): model_index.json, each component's
/// needed files and each network's weights (a shard index with every shard it names). A pipeline
/// `choose` refuses lacks what its answer says.
pub fn missing_pipeline_files(folder: &Path, choose: ChooseComponents) -> Vec<String> {
    missing_with(folder, choose, true)
}

/// `missing_pipeline_files` without the weights: the configs and tokenizer files alone.
pub fn missing_configs(folder: &Path, choose: ChooseComponents) -> Vec<String> {
    missing_with(folder, choose, false)
}

fn missing_with(folder: &Path, choose: ChooseComponents, weights: bool) -> Vec<String> {
    if !folder.join(MODEL_INDEX).is_file() {
        return vec![MODEL_INDEX.to_string()];
    }
    match components_in(folder, choose) {
        Ok(wanted) => missing_in(folder, &wanted, weights),
        Err(problem) => vec![problem],
    }
}

/// The snapshot folder `revision` (a branch name or a commit) resolves to in the cache, if it is
/// there and complete.
pub fn cached_snapshot(
    settings: &HubSettings,
    repo: &RepoId,
    revision: &str,
    choose: ChooseComponents,
) -> Option<CachedSnapshot> {
    cached_with(settings, repo, revision, |folder| {
        missing_pipeline_files(folder, choose)
    })
}

/// The snapshot folder `revision` resolves to, if it holds the pipeline's configs and tokenizer
/// files (its weights or not).
pub fn cached_configs(
    settings: &HubSettings,
    repo: &RepoId,
    revision: &str,
    choose: ChooseComponents,
) -> Option<CachedSnapshot> {
    cached_with(settings, repo, revision, |folder| {
        missing_configs(folder, choose)
    })
}

/// The snapshot folder `revision` resolves to, if it holds every one of `files` (a model that is
/// not a diffusers pipeline: a CLIP model for scoring, say).
pub fn cached_files(
    settings: &HubSettings,
    repo: &RepoId,
    revision: &str,
    files: &[&str],
) -> Option<CachedSnapshot> {
    cached_with(settings, repo, revision, |folder| {
        files
            .iter()
            .filter(|f| !folder.join(f).is_file())
            .map(|f| f.to_string())
            .collect()
    })
}

fn cached_with(
    settings: &HubSettings,
    repo: &RepoId,
    revision: &str,
    missing: impl Fn(&Path) -> Vec<String>,
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
        None => crate::transfer::hash_file(sha2::Sha256::new(), path),
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

/// Every model in the cache, sorted by id (`runnable` as `choose` reads them). A missing cache
/// folder is an empty list.
pub fn list(settings: &HubSettings, choose: ChooseComponents) -> Result<Vec<CachedModel>> {
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
        models.push(describe(&entry.path(), &repo, choose)?);
    }
    models.sort_by(|a, b| a.repo.cmp(&b.repo));
    Ok(models)
}

fn describe(dir: &Path, repo: &RepoId, choose: ChooseComponents) -> Result<CachedModel> {
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
        .any(|s| missing_pipeline_files(&dir.join("snapshots").join(s), choose).is_empty());
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
