//! A repository's files as the Hub's API lists them
//! (`/api/models/{repo}/revision/{rev}?blobs=true`): paths, sizes, blob ids and LFS checksums, and
//! the model card's licence.

use serde::Deserialize;

use crate::error::{HubError, Result};
use crate::repo::RepoId;

/// One file of a repository as the Hub lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteFile {
    pub path: String,
    pub size: u64,
    /// The cache blob name: the LFS sha256 for LFS files, else the git blob id.
    pub blob_id: String,
    /// The content sha256 for LFS files (the weights).
    pub sha256: Option<String>,
}

/// A repository at one commit.
#[derive(Debug, Clone)]
pub struct Listing {
    pub commit: String,
    pub files: Vec<RemoteFile>,
    /// The licence the model card declares (`license:` in its metadata), as the Hub reports it:
    /// "apache-2.0", "openrail++", ...; `None` when the card names none.
    pub license: Option<String>,
}

#[derive(Deserialize)]
struct ApiModel {
    sha: Option<String>,
    #[serde(default)]
    siblings: Vec<ApiSibling>,
    #[serde(rename = "cardData", default)]
    card_data: Option<ApiCard>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Deserialize)]
struct ApiCard {
    /// A licence name, or a list of them.
    #[serde(default)]
    license: Option<serde_json::Value>,
}

impl ApiModel {
    /// The card's `license` (a list joined with " or "), else the Hub's `license:` tags.
    fn license(&self) -> Option<String> {
        let names: Vec<String> = match self.card_data.as_ref().and_then(|c| c.license.as_ref()) {
            Some(serde_json::Value::String(name)) => vec![name.clone()],
            Some(serde_json::Value::Array(list)) => list
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        };
        let names = if names.is_empty() {
            self.tags
                .iter()
                .filter_map(|t| t.strip_prefix("license:").map(String::from))
                .collect()
        } else {
            names
        };
        // A licence name is short; anything else is not one.
        let names: Vec<String> = names
            .into_iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty() && n.len() <= 64)
            .collect();
        (!names.is_empty()).then(|| names.join(" or "))
    }
}

#[derive(Deserialize)]
struct ApiSibling {
    rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<ApiLfs>,
}

#[derive(Deserialize)]
struct ApiLfs {
    sha256: String,
    size: u64,
}

/// The listing in the API's answer `body`.
pub(crate) fn parse_listing(repo: &RepoId, body: &str) -> Result<Listing> {
    let bad = |problem: String| HubError::Listing {
        repo: repo.to_string(),
        problem,
    };
    let model: ApiModel = serde_json::from_str(body).map_err(|e| bad(e.to_string()))?;
    let license = model.license();
    let commit = model.sha.ok_or_else(|| bad("no commit sha".into()))?;
    let files = model
        .siblings
        .into_iter()
        .map(|s| {
            let (size, blob_id, sha256) = match s.lfs {
                Some(lfs) => (lfs.size, lfs.sha256.clone(), Some(lfs.sha256)),
                None => (
                    s.size
                        .ok_or_else(|| bad(format!("{} has no size", s.rfilename)))?,
                    s.blob_id
                        .ok_or_else(|| bad(format!("{} has no blob id", s.rfilename)))?,
                    None,
                ),
            };
            Ok(RemoteFile {
                path: s.rfilename,
                size,
                blob_id,
                sha256,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Listing {
        commit,
        files,
        license,
    })
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
