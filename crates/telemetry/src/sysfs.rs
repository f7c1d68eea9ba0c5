//! Small helpers for reading Linux sysfs files.

use std::fs;
use std::path::{Path, PathBuf};

pub fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

pub fn read_u64(path: &Path) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

/// Why a file cannot be read, for "unavailable because…" messages.
pub fn read_error(path: &Path) -> Option<String> {
    match fs::read_to_string(path) {
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(format!(
            "{} is readable only by root (run as root, or `sudo chmod o+r` it)",
            path.display()
        )),
        Err(e) => Some(format!("cannot read {}: {e}", path.display())),
    }
}

/// Entries of `dir` whose names start with `prefix`, sorted.
pub fn entries(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// `KEY=value` from a uevent file.
pub fn uevent(device: &Path, key: &str) -> Option<String> {
    let text = fs::read_to_string(device.join("uevent")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
}

/// The hwmon folders of a device.
pub fn hwmons(device: &Path) -> Vec<PathBuf> {
    entries(&device.join("hwmon"), "hwmon")
}

/// `cardN` for `/sys/class/drm/cardN`.
pub fn card_name(card: &Path) -> String {
    card.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string()
}

/// The GPUs under `root/sys/class/drm` as (cardN folder, its name); connectors such as
/// `card0-HDMI-A-1` are left out.
pub fn drm_cards(root: &Path) -> Vec<(PathBuf, String)> {
    entries(&root.join("sys/class/drm"), "card")
        .into_iter()
        .map(|card| {
            let name = card_name(&card);
            (card, name)
        })
        .filter(|(_, name)| !name.contains('-'))
        .collect()
}
