//! Downloads a pipeline from the Hub into the cache: model_index.json first, then only the files
//! of the components the engine reads (`components`), resumed after a dropped connection,
//! verified against the Hub's checksums before they become visible.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cache::{cached_configs, cached_snapshot, CachedSnapshot, DownloadLock};
use crate::components::{
    missing_in, parse_index, plan, ChooseComponents, WantedComponent, MAX_INDEX_BYTES, MODEL_INDEX,
};
use crate::error::{HubError, Result};
use crate::listing::parse_listing;
pub use crate::listing::{Listing, RemoteFile};
use crate::repo::{HubSettings, RepoId};
use crate::transfer::{http_error, link_into_snapshot, matches_listing, write_atomically};

/// Progress of a download, over all files.
#[derive(Debug, Clone, PartialEq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DownloadProgress {
    pub file: String,
    pub file_done: u64,
    pub file_total: u64,
    pub done: u64,
    pub total: u64,
}

/// How dropped connections and server errors are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Failed attempts in a row (without new bytes) before giving up.
    pub attempts: u32,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 6,
            first_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(16),
        }
    }
}

/// A model ready on disk.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub repo: RepoId,
    pub commit: String,
    /// The snapshot folder, in the diffusers layout.
    pub path: PathBuf,
    /// The pipeline's files, with their sizes and (for weights) sha256.
    pub files: Vec<RemoteFile>,
    /// Bytes fetched by this call (0 when everything was cached).
    pub downloaded_bytes: u64,
    /// The licence the model card declares (see `Listing::license`).
    pub license: Option<String>,
}

/// How a model was found.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub path: PathBuf,
    pub commit: String,
    /// Set when the network could not be used and the cache served the model.
    pub offline_reason: Option<String>,
    pub downloaded_bytes: u64,
    /// The licence the model card declares, when the Hub was asked (not when served offline).
    pub license: Option<String>,
}

pub struct Hub {
    pub(crate) settings: HubSettings,
    choose: ChooseComponents,
    agent: ureq::Agent,
    pub(crate) retry: RetryPolicy,
}

impl Hub {
    /// A hub that fetches, of each pipeline, the components `choose` names for it.
    pub fn new(settings: HubSettings, choose: ChooseComponents) -> Hub {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(15))
            .timeout_read(Duration::from_secs(60))
            .user_agent(concat!("sdbench/", env!("CARGO_PKG_VERSION")))
            .build();
        Hub {
            settings,
            choose,
            agent,
            retry: RetryPolicy::default(),
        }
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Hub {
        self.retry = retry;
        self
    }

    pub fn settings(&self) -> &HubSettings {
        &self.settings
    }

    pub(crate) fn get(&self, url: &str) -> ureq::Request {
        let request = self.agent.get(url);
        match &self.settings.token {
            Some(token) => request.set("Authorization", &format!("Bearer {token}")),
            None => request,
        }
    }

    /// `listing`, refused at once where the network may not be used.
    fn online_listing(&self, repo: &RepoId, revision: &str) -> Result<Listing> {
        if self.settings.offline {
            return Err(HubError::Network {
                url: self.settings.endpoint.clone(),
                reason: "HF_HUB_OFFLINE is set".into(),
            });
        }
        self.listing(repo, revision)
    }

    /// The repository's files at `revision`, with sizes and checksums.
    pub fn listing(&self, repo: &RepoId, revision: &str) -> Result<Listing> {
        let url = format!(
            "{}/api/models/{}/revision/{}?blobs=true",
            self.settings.endpoint, repo, revision
        );
        let body = self.with_retries(|| {
            let response = self.get(&url).call().map_err(|e| http_error(&url, e))?;
            response.into_string().map_err(|e| HubError::Network {
                url: url.clone(),
                reason: e.to_string(),
            })
        })?;
        parse_listing(repo, &body)
    }

    /// Makes `repo` runnable from the cache: uses the cache when it is complete and either the
    /// network is off (`HF_HUB_OFFLINE`, or unreachable) or the Hub reports the same commit;
    /// downloads otherwise.
    pub fn resolve(
        &self,
        repo: &RepoId,
        revision: &str,
        progress: &mut dyn FnMut(&DownloadProgress),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Resolved> {
        self.resolve_checked(repo, revision, progress, cancelled, &mut |_| Ok(()))
    }

    /// `resolve`, where a download first fetches the configs and tokenizer files and hands their
    /// snapshot folder to `before_weights`: an error from it stops the download before any
    /// weights are fetched (a model that cannot serve the request costs no gigabytes). A model
    /// the cache serves offline is returned without the call; the caller checks that folder as
    /// it checks any other.
    pub fn resolve_checked<E: From<HubError>>(
        &self,
        repo: &RepoId,
        revision: &str,
        progress: &mut dyn FnMut(&DownloadProgress),
        cancelled: &dyn Fn() -> bool,
        before_weights: &mut dyn FnMut(&Path) -> std::result::Result<(), E>,
    ) -> std::result::Result<Resolved, E> {
        let cached = cached_snapshot(&self.settings, repo, revision, self.choose);
        self.resolve_with(
            repo,
            revision,
            cached,
            Wanted::Pipeline,
            progress,
            cancelled,
            before_weights,
        )
    }

    /// The configs and tokenizer files of `repo`'s pipeline at `revision`, without its weights:
    /// what a model file kept apart from its repository (a ComfyUI transformer file) is read
    /// with. From the cache when it holds them and the Hub is not reachable or reports the same
    /// commit; downloaded otherwise (a few hundred KB).
    pub fn configs(
        &self,
        repo: &RepoId,
        revision: &str,
        progress: &mut dyn FnMut(&DownloadProgress),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Resolved> {
        let cached = cached_configs(&self.settings, repo, revision, self.choose);
        self.resolve_with(
            repo,
            revision,
            cached,
            Wanted::Configs,
            progress,
            cancelled,
            &mut |_| Ok(()),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve_with<E: From<HubError>>(
        &self,
        repo: &RepoId,
        revision: &str,
        cached: Option<CachedSnapshot>,
        wanted: Wanted,
        progress: &mut dyn FnMut(&DownloadProgress),
        cancelled: &dyn Fn() -> bool,
        before_weights: &mut dyn FnMut(&Path) -> std::result::Result<(), E>,
    ) -> std::result::Result<Resolved, E> {
        let offline = |reason: String| match &cached {
            Some(c) => Ok(Resolved {
                path: c.path.clone(),
                commit: c.commit.clone(),
                offline_reason: Some(reason),
                downloaded_bytes: 0,
                license: None,
            }),
            None => Err(HubError::NotCached {
                repo: repo.to_string(),
                cache: self.settings.cache_dir.clone(),
                reason,
            }
            .into()),
        };
        if self.settings.offline {
            return offline("HF_HUB_OFFLINE is set".into());
        }
        let listing = match self.listing(repo, revision) {
            Ok(listing) => listing,
            Err(HubError::Network { reason, .. } | HubError::Unreachable { reason, .. }) => {
                return offline(reason)
            }
            Err(e) => return Err(e.into()),
        };
        let snapshot = self.download_listing(
            repo,
            revision,
            &listing,
            wanted,
            progress,
            cancelled,
            before_weights,
        )?;
        Ok(Resolved {
            path: snapshot.path,
            commit: snapshot.commit,
            offline_reason: None,
            downloaded_bytes: snapshot.downloaded_bytes,
            license: snapshot.license,
        })
    }

    /// Downloads the pipeline's files at `revision` (files already cached are not fetched again).
    pub fn download(
        &self,
        repo: &RepoId,
        revision: &str,
        progress: &mut dyn FnMut(&DownloadProgress),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Snapshot> {
        let listing = self.online_listing(repo, revision)?;
        self.download_listing(
            repo,
            revision,
            &listing,
            Wanted::Pipeline,
            progress,
            cancelled,
            &mut |_| Ok(()),
        )
    }

    /// Fetches exactly `files` of a repository that is not a diffusers pipeline (a transformers
    /// model: CLIP for scoring), each checked against the listing's size and checksum, into the
    /// cache; a file the repository lacks is refused before anything is fetched.
    pub fn download_files(
        &self,
        repo: &RepoId,
        revision: &str,
        files: &[&str],
        progress: &mut dyn FnMut(&DownloadProgress),
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Snapshot> {
        let listing = self.online_listing(repo, revision)?;
        let missing: Vec<&str> = files
            .iter()
            .copied()
            .filter(|f| !listing.files.iter().any(|r| r.path == *f))
            .collect();
        if !missing.is_empty() {
            return Err(HubError::NotAPipeline {
                repo: repo.to_string(),
                problem: format!("it has no {}", missing.join(", ")),
            });
        }
        let wanted: Vec<RemoteFile> = listing
            .files
            .iter()
            .filter(|r| files.contains(&r.path.as_str()))
            .cloned()
            .collect();
        let _lock = DownloadLock::acquire(&self.settings, repo)?;
        let model_dir = self.settings.model_dir(repo);
        let blobs = model_dir.join("blobs");
        let snapshot = model_dir.join("snapshots").join(&listing.commit);
        fs::create_dir_all(&blobs).map_err(|e| HubError::io(&blobs, e))?;
        let total: u64 = wanted.iter().map(|f| f.size).sum();
        let (mut done, mut fetched) = (0, 0);
        for file in &wanted {
            self.fetch_into_snapshot(
                repo,
                &listing,
                file,
                &blobs,
                &snapshot,
                done,
                total,
                cancelled,
                progress,
                &mut fetched,
            )?;
            done += file.size;
        }
        record_revision(&model_dir, revision, &listing.commit)?;
        Ok(Snapshot {
            repo: repo.clone(),
            commit: listing.commit.clone(),
            path: snapshot,
            files: wanted,
            downloaded_bytes: fetched,
            license: listing.license.clone(),
        })
    }

    /// Fetches model_index.json, then the files of the components `choose` names for it in
    /// `components::plan`'s order (configs and tokenizer files, then weights, unless only the
    /// configs are `wanted`), calling `before_weights` on the snapshot folder before the first
    /// weights file.
    #[allow(clippy::too_many_arguments)]
    fn download_listing<E: From<HubError>>(
        &self,
        repo: &RepoId,
        revision: &str,
        listing: &Listing,
        wanted: Wanted,
        progress: &mut dyn FnMut(&DownloadProgress),
        cancelled: &dyn Fn() -> bool,
        before_weights: &mut dyn FnMut(&Path) -> std::result::Result<(), E>,
    ) -> std::result::Result<Snapshot, E> {
        // What the pipeline is decides what else is fetched; a pipeline the engine refuses leaves
        // nothing in the cache.
        let index_file = index_file(repo, listing)?;
        let (index_bytes, index_fetched) = self.index_bytes(repo, listing, index_file)?;
        let (components, planned) = planned_files(repo, listing, &index_bytes, self.choose)?;
        let _lock = DownloadLock::acquire(&self.settings, repo)?;
        let model_dir = self.settings.model_dir(repo);
        let blobs = model_dir.join("blobs");
        let snapshot = model_dir.join("snapshots").join(&listing.commit);
        fs::create_dir_all(&blobs).map_err(|e| HubError::io(&blobs, e))?;
        let mut fetched = 0;
        if index_fetched {
            write_atomically(&blobs.join(&index_file.blob_id), &index_bytes)?;
            fetched += index_bytes.len() as u64;
        }
        let files: Vec<RemoteFile> = planned
            .into_iter()
            .filter(|(_, weights)| wanted == Wanted::Pipeline || !weights)
            .map(|(file, _)| file)
            .collect();

        let total: u64 = files.iter().map(|f| f.size).sum();
        let mut done = 0;
        let mut checked = false;
        for file in &files {
            if !checked && is_weights(&file.path) {
                before_weights(&snapshot)?;
                checked = true;
            }
            self.fetch_into_snapshot(
                repo,
                listing,
                file,
                &blobs,
                &snapshot,
                done,
                total,
                cancelled,
                progress,
                &mut fetched,
            )?;
            done += file.size;
        }
        // A shard index is read only now: a shard it names that the listing lacks would leave a
        // snapshot that never loads.
        let missing = missing_in(&snapshot, &components, wanted == Wanted::Pipeline);
        if !missing.is_empty() {
            return Err(HubError::NotAPipeline {
                repo: repo.to_string(),
                problem: format!(
                    "its files name {}, which the repository does not have",
                    missing.join(", ")
                ),
            }
            .into());
        }
        record_revision(&model_dir, revision, &listing.commit)?;
        Ok(Snapshot {
            repo: repo.clone(),
            commit: listing.commit.clone(),
            path: snapshot,
            files,
            downloaded_bytes: fetched,
            license: listing.license.clone(),
        })
    }

    /// The files a download of `listing` fetches (model_index.json is read, not stored): what a
    /// person is told a download will cost before it starts.
    pub fn pipeline_files(&self, repo: &RepoId, listing: &Listing) -> Result<Vec<RemoteFile>> {
        let index = index_file(repo, listing)?;
        let (bytes, _) = self.index_bytes(repo, listing, index)?;
        let (_, planned) = planned_files(repo, listing, &bytes, self.choose)?;
        Ok(planned.into_iter().map(|(file, _)| file).collect())
    }

    /// model_index.json's bytes: the cache's blob when it is complete, else fetched (its size
    /// bounded by `index_file`) and checked against the listing; and whether they were fetched.
    fn index_bytes(
        &self,
        repo: &RepoId,
        listing: &Listing,
        file: &RemoteFile,
    ) -> Result<(Vec<u8>, bool)> {
        let blob = self
            .settings
            .model_dir(repo)
            .join("blobs")
            .join(&file.blob_id);
        if let Ok(bytes) = fs::read(&blob) {
            if matches_listing(&bytes, file) {
                return Ok((bytes, false));
            }
        }
        let url = format!(
            "{}/{}/resolve/{}/{}",
            self.settings.endpoint, repo, listing.commit, file.path
        );
        let bytes = self.with_retries(|| {
            let response = self.get(&url).call().map_err(|e| http_error(&url, e))?;
            let mut bytes = Vec::new();
            response
                .into_reader()
                .take(file.size + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| HubError::Network {
                    url: url.clone(),
                    reason: e.to_string(),
                })?;
            Ok(bytes)
        })?;
        if !matches_listing(&bytes, file) {
            return Err(HubError::Checksum {
                file: file.path.clone(),
                expected: format!("{}, {} bytes", file.blob_id, file.size),
                actual: format!("{} bytes that do not match", bytes.len()),
            });
        }
        Ok((bytes, true))
    }

    /// Fetches `file` unless its blob is complete, reporting progress as the `done`th of `total`
    /// bytes, and links it into the snapshot; adds the bytes fetched to `fetched`.
    #[allow(clippy::too_many_arguments)]
    fn fetch_into_snapshot(
        &self,
        repo: &RepoId,
        listing: &Listing,
        file: &RemoteFile,
        blobs: &Path,
        snapshot: &Path,
        done: u64,
        total: u64,
        cancelled: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(&DownloadProgress),
        fetched: &mut u64,
    ) -> Result<()> {
        let blob = blobs.join(&file.blob_id);
        let complete = fs::metadata(&blob)
            .map(|m| m.len() == file.size)
            .unwrap_or(false);
        if !complete {
            let url = format!(
                "{}/{}/resolve/{}/{}",
                self.settings.endpoint, repo, listing.commit, file.path
            );
            *fetched += self.fetch_blob(&url, file, &blob, cancelled, &mut |file_done| {
                progress(&DownloadProgress {
                    file: file.path.clone(),
                    file_done,
                    file_total: file.size,
                    done: done + file_done,
                    total,
                })
            })?;
        }
        progress(&DownloadProgress {
            file: file.path.clone(),
            file_done: file.size,
            file_total: file.size,
            done: done + file.size,
            total,
        });
        link_into_snapshot(&blob, snapshot, &file.path)
    }
}

/// What a download fetches of a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// Everything it reads.
    Pipeline,
    /// Its configs and tokenizer files, without weights.
    Configs,
}

/// Where `revision` (a branch name) resolved, for offline use: the cache's `refs/{revision}`.
fn record_revision(model_dir: &Path, revision: &str, commit: &str) -> Result<()> {
    if revision == commit {
        return Ok(());
    }
    let refs = model_dir.join("refs");
    fs::create_dir_all(&refs).map_err(|e| HubError::io(&refs, e))?;
    write_atomically(&refs.join(revision), commit.as_bytes())
}

/// The listing's model_index.json, if it has one of a pipeline's size.
fn index_file<'a>(repo: &RepoId, listing: &'a Listing) -> Result<&'a RemoteFile> {
    let not_a_pipeline = |problem: String| HubError::NotAPipeline {
        repo: repo.to_string(),
        problem,
    };
    let file = listing
        .files
        .iter()
        .find(|f| f.path == MODEL_INDEX)
        .ok_or_else(|| not_a_pipeline(format!("it has no {MODEL_INDEX}")))?;
    if file.size > MAX_INDEX_BYTES {
        return Err(not_a_pipeline(format!(
            "its {MODEL_INDEX} is {} bytes, more than any pipeline's ({MAX_INDEX_BYTES})",
            file.size
        )));
    }
    Ok(file)
}

/// The files of a listing a download fetches, in `components::plan`'s order, each with whether
/// it is weights.
type PlannedFiles = Vec<(RemoteFile, bool)>;

/// The components `choose` names for the pipeline whose model_index.json is `index_bytes`, and
/// the files of `listing` a download fetches for them.
fn planned_files(
    repo: &RepoId,
    listing: &Listing,
    index_bytes: &[u8],
    choose: ChooseComponents,
) -> Result<(Vec<WantedComponent>, PlannedFiles)> {
    let not_a_pipeline = |problem: String| HubError::NotAPipeline {
        repo: repo.to_string(),
        problem,
    };
    let components = parse_index(index_bytes)
        .and_then(|index| choose(&index))
        .map_err(not_a_pipeline)?;
    let paths: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
    let planned = plan(&paths, &components)
        .map_err(|missing| not_a_pipeline(format!("it has no {}", missing.join(", "))))?;
    let files = planned
        .into_iter()
        .filter_map(|p| {
            let file = listing.files.iter().find(|f| f.path == p.path)?;
            Some((file.clone(), p.weights))
        })
        .collect();
    Ok((components, files))
}

/// A weights file (a whole component's or a shard), as opposed to the small files that say what
/// the pipeline is.
fn is_weights(path: &str) -> bool {
    path.ends_with(".safetensors")
}
