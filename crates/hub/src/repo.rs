//! Model ids and the Hugging Face cache folder they live in.

use std::path::{Path, PathBuf};

use crate::error::{HubError, Result};

/// The model `sdbench` uses when none is named.
pub const DEFAULT_MODEL: &str = "stable-diffusion-v1-5/stable-diffusion-v1-5";

/// Ids that moved on the Hub, and where they went.
const RENAMED: &[(&str, &str)] = &[("runwayml/stable-diffusion-v1-5", DEFAULT_MODEL)];

/// A Hub model repository id, `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RepoId(String);

impl RepoId {
    /// Parses `owner/name`. Returns the id and, for a renamed repository, a note saying so.
    pub fn parse(text: &str) -> Result<(RepoId, Option<String>)> {
        let text = text.trim();
        if let Some((old, new)) = RENAMED.iter().find(|(old, _)| *old == text) {
            let note = format!("{old} no longer exists on the Hub; using {new}, its successor");
            return Ok((RepoId(new.to_string()), Some(note)));
        }
        let valid_part = |p: &str| {
            !p.is_empty()
                && p.len() <= 96
                && !p.starts_with(['.', '-'])
                && !p.contains("..")
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        match text.split_once('/') {
            Some((owner, name)) if valid_part(owner) && valid_part(name) => {
                Ok((RepoId(text.to_string()), None))
            }
            _ => Err(HubError::BadRepoId(text.to_string())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The cache folder name: `models--owner--name`.
    pub fn folder_name(&self) -> String {
        format!("models--{}", self.0.replace('/', "--"))
    }

    /// The id a cache folder name stands for, if it is a model folder.
    pub fn from_folder_name(name: &str) -> Option<RepoId> {
        let rest = name.strip_prefix("models--")?;
        let (owner, model) = rest.split_once("--")?;
        RepoId::parse(&format!("{owner}/{model}"))
            .ok()
            .map(|(id, _)| id)
    }
}

impl std::fmt::Display for RepoId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where the Hub is and who we are to it, from the environment as huggingface_hub reads it.
#[derive(Debug, Clone)]
pub struct HubSettings {
    /// The cache root (`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`).
    pub cache_dir: PathBuf,
    /// `HF_ENDPOINT`, else `https://huggingface.co`.
    pub endpoint: String,
    /// `HF_TOKEN`, else the token file `huggingface-cli login` writes.
    pub token: Option<String>,
    /// `HF_HUB_OFFLINE=1`: never touch the network.
    pub offline: bool,
}

impl HubSettings {
    pub fn from_env() -> HubSettings {
        Self::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// The same, with the variables looked up through `var` (for tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> HubSettings {
        let home = var("HOME")
            .or_else(|| var("USERPROFILE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let hf_home = var("HF_HOME")
            .map(PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|x| Path::new(&x).join("huggingface")))
            .unwrap_or_else(|| home.join(".cache").join("huggingface"));
        let cache_dir = var("HF_HUB_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home.join("hub"));
        let endpoint = var("HF_ENDPOINT")
            .unwrap_or_else(|| "https://huggingface.co".to_string())
            .trim_end_matches('/')
            .to_string();
        let token = var("HF_TOKEN").or_else(|| {
            let path = var("HF_TOKEN_PATH")
                .map(PathBuf::from)
                .unwrap_or_else(|| hf_home.join("token"));
            std::fs::read_to_string(path)
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        });
        let offline = var("HF_HUB_OFFLINE")
            .map(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
            .unwrap_or(false);
        HubSettings {
            cache_dir,
            endpoint,
            token,
            offline,
        }
    }

    pub fn model_dir(&self, repo: &RepoId) -> PathBuf {
        self.cache_dir.join(repo.folder_name())
    }

    pub fn lock_path(&self, repo: &RepoId) -> PathBuf {
        self.cache_dir
            .join(".locks")
            .join(repo.folder_name())
            .join("sdbench-download.lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_maps_the_old_sd15_id() {
        let (id, note) = RepoId::parse("stable-diffusion-v1-5/stable-diffusion-v1-5").unwrap();
        assert_eq!(id.as_str(), DEFAULT_MODEL);
        assert!(note.is_none());
        let (id, note) = RepoId::parse("runwayml/stable-diffusion-v1-5").unwrap();
        assert_eq!(id.as_str(), DEFAULT_MODEL);
        assert!(note.unwrap().contains("runwayml"));
        for bad in ["", "noslash", "a/b/c", "../x", "a/..", "a b/c", "/x", "x/"] {
            assert!(RepoId::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn folder_names_round_trip() {
        let (id, _) = RepoId::parse("some-org/my_model.v2").unwrap();
        assert_eq!(id.folder_name(), "models--some-org--my_model.v2");
        assert_eq!(RepoId::from_folder_name(&id.folder_name()), Some(id));
        assert_eq!(RepoId::from_folder_name("datasets--a--b"), None);
    }

    #[test]
    fn settings_follow_huggingface_hub_precedence() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let s = HubSettings::from_vars(vars(&[("HOME", "/home/u")]));
        assert_eq!(s.cache_dir, PathBuf::from("/home/u/.cache/huggingface/hub"));
        assert_eq!(s.endpoint, "https://huggingface.co");
        assert!(!s.offline);
        let s = HubSettings::from_vars(vars(&[("HOME", "/home/u"), ("HF_HOME", "/data/hf")]));
        assert_eq!(s.cache_dir, PathBuf::from("/data/hf/hub"));
        let s = HubSettings::from_vars(vars(&[
            ("HF_HOME", "/data/hf"),
            ("HF_HUB_CACHE", "/fast/cache"),
            ("HF_ENDPOINT", "http://127.0.0.1:9/"),
            ("HF_TOKEN", "hf_abc"),
            ("HF_HUB_OFFLINE", "1"),
        ]));
        assert_eq!(s.cache_dir, PathBuf::from("/fast/cache"));
        assert_eq!(s.endpoint, "http://127.0.0.1:9");
        assert_eq!(s.token.as_deref(), Some("hf_abc"));
        assert!(s.offline);
    }
}
