//! Whether a run read its workload's own weights: every weights file one of the files of the
//! workload's Hub repository, by sha256. A standard score needs them: a fine-tune of the same
//! architecture and precision runs at the same speed, but its images are not the ones the
//! results service checks a standard run's against, and an edited copy would pass for the model.
//!
//! The repository's hashes come from this machine's Hugging Face cache (its blobs are named by the
//! sha256 their download was checked against) and, for files not found there and where the
//! network is allowed, from the Hub's listing of the repository (one request, no retries).

use std::collections::BTreeSet;

use sdbench_hub::{HubSettings, RepoId, RetryPolicy};

use crate::result::FileRecord;

/// What the check found.
#[derive(Debug, PartialEq)]
pub(super) enum OwnWeights {
    /// Every file is one of the repository's.
    Yes,
    /// `file` is none of the repository's files.
    No { file: String },
    /// The repository's hashes could not be had, for `reason`.
    Unknown { reason: String },
}

/// Checks `files` against `repo`'s files: the cache first, then the Hub where allowed.
pub(super) fn check(files: &[FileRecord], repo: &RepoId, settings: &HubSettings) -> OwnWeights {
    let fetch = || {
        if settings.offline {
            return Err("HF_HUB_OFFLINE is set".to_string());
        }
        let once = RetryPolicy {
            attempts: 1,
            ..RetryPolicy::default()
        };
        let listing = sdbench_session::hub_components::engine_hub(settings.clone())
            .with_retry(once)
            .listing(repo, "main")
            .map_err(|e| e.to_string())?;
        Ok(listing.files.into_iter().filter_map(|f| f.sha256).collect())
    };
    decide(files, cached_hashes(settings, repo), fetch)
}

/// The verdict, given the hashes the cache holds and a way to ask for the rest.
fn decide(
    files: &[FileRecord],
    mut known: BTreeSet<String>,
    fetch: impl FnOnce() -> Result<BTreeSet<String>, String>,
) -> OwnWeights {
    let stranger = |known: &BTreeSet<String>| {
        files
            .iter()
            .find(|f| !known.contains(&f.sha256))
            .map(|f| f.path.clone())
    };
    if stranger(&known).is_none() {
        return OwnWeights::Yes;
    }
    match fetch() {
        Ok(listed) => {
            known.extend(listed);
            match stranger(&known) {
                None => OwnWeights::Yes,
                Some(file) => OwnWeights::No { file },
            }
        }
        Err(reason) => OwnWeights::Unknown { reason },
    }
}

/// The sha256 names of the blobs this machine's cache holds for `repo` (its LFS files: the
/// weights; other files' blobs are named by their git sha1). None when it holds nothing.
fn cached_hashes(settings: &HubSettings, repo: &RepoId) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(settings.model_dir(repo).join("blobs")) else {
        return BTreeSet::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.len() == 64 && name.chars().all(|c| c.is_ascii_hexdigit()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, sha256: &str) -> FileRecord {
        FileRecord {
            path: path.into(),
            bytes: 1,
            sha256: sha256.into(),
            weight_types: Default::default(),
        }
    }

    fn set(hashes: &[&str]) -> BTreeSet<String> {
        hashes.iter().map(|h| h.to_string()).collect()
    }

    #[test]
    fn files_found_in_the_cache_need_no_network() {
        let files = [file("unet", "aa"), file("vae", "bb")];
        let asked = || -> Result<BTreeSet<String>, String> { panic!("the Hub was asked") };
        assert_eq!(
            decide(&files, set(&["aa", "bb", "cc"]), asked),
            OwnWeights::Yes
        );
    }

    #[test]
    fn the_hub_listing_completes_the_cache() {
        let files = [file("unet", "aa"), file("vae", "bb")];
        let listed = || Ok(set(&["bb"]));
        assert_eq!(decide(&files, set(&["aa"]), listed), OwnWeights::Yes);
        let listed = || Ok(set(&["cc"]));
        assert_eq!(
            decide(&files, set(&["aa"]), listed),
            OwnWeights::No { file: "vae".into() }
        );
    }

    #[test]
    fn without_the_repositorys_hashes_nothing_is_claimed() {
        let files = [file("model.safetensors", "aa")];
        let offline = || Err("HF_HUB_OFFLINE is set".to_string());
        assert_eq!(
            decide(&files, BTreeSet::new(), offline),
            OwnWeights::Unknown {
                reason: "HF_HUB_OFFLINE is set".into()
            }
        );
    }

    #[test]
    fn the_cache_is_read_by_blob_names_and_offline_asks_nobody() {
        let root = tempfile::tempdir().unwrap();
        let settings = HubSettings {
            cache_dir: root.path().into(),
            endpoint: "http://127.0.0.1:9".into(),
            token: None,
            offline: true,
        };
        let repo = RepoId::parse("owner/model").unwrap().0;
        let blobs = settings.model_dir(&repo).join("blobs");
        std::fs::create_dir_all(&blobs).unwrap();
        let sha = "ab".repeat(32);
        for name in [sha.as_str(), "0123456789abcdef0123456789abcdef01234567"] {
            std::fs::write(blobs.join(name), b"x").unwrap();
        }
        assert_eq!(cached_hashes(&settings, &repo), set(&[&sha]));
        assert_eq!(check(&[file("w", &sha)], &repo, &settings), OwnWeights::Yes);
        assert_eq!(
            check(&[file("w", &"cd".repeat(32))], &repo, &settings),
            OwnWeights::Unknown {
                reason: "HF_HUB_OFFLINE is set".into()
            }
        );
    }
}
