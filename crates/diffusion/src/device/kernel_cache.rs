//! Compiled GPU kernels and autotune results, kept between runs like the model files.
//!
//! The store itself is in the patched cubecl runtime (`vendor/cubecl-runtime`, `kernel_cache`):
//! one checksummed file per kernel, written atomically, under a folder per device that names what
//! changes the compiled code (backend, architecture, driver, compiler). This module chooses the
//! folder (on by default), names this build's part of it, reports what compiling cost, and sizes
//! and cleans it for `sdbench cache` and the app's storage view.
//!
//! Counted on CUDA and wgpu (Vulkan, Metal, DX12); ROCm compiles without the store and uncounted.

use std::path::{Path, PathBuf};
use std::sync::Once;

use crate::device::backend_kind::BackendKind;

pub use cubecl_runtime::kernel_cache::KernelStats;

/// The variable that moves the store (a folder) or turns it off (`off`).
pub const ENV: &str = "SDBENCH_KERNEL_CACHE";

/// cubecl's version (pinned in Cargo.toml): part of the folder, with SD Bench's.
const CUBECL_VERSION: &str = "0.10.0";

/// Where kernels are kept: `SDBENCH_KERNEL_CACHE` (a folder, or `off` for none), else the
/// platform's cache folder (`~/.cache/sdbench/kernels` on Linux).
pub fn default_dir() -> Option<PathBuf> {
    match std::env::var_os(ENV) {
        Some(value) if value == "off" || value == "0" => None,
        Some(value) if !value.is_empty() => Some(PathBuf::from(value)),
        _ => dirs::cache_dir().map(|dir| dir.join("sdbench").join("kernels")),
    }
}

static DEFAULT: Once = Once::new();

/// Turns the store on in `default_dir` (once per process; only what this build wrote is read:
/// another build has its own subfolder). Device selection calls it, so every use of the engine on
/// a GPU gets the cache.
pub fn ensure_default() {
    DEFAULT.call_once(|| {
        cubecl_runtime::kernel_cache::set_root(default_dir().map(|dir| build_dir(&dir)))
    });
}

/// The folder in use (`default_dir` once a GPU was selected), or `None` when kernels are not kept.
pub fn current_dir() -> Option<PathBuf> {
    cubecl_runtime::kernel_cache::root().and_then(|root| root.parent().map(Path::to_path_buf))
}

/// This build's folder: SD Bench's and cubecl's versions and the executable's size and time, so
/// a rebuild with changed kernel code (a patched burn kernel keeps its name) never reads entries
/// an older build wrote.
fn build_dir(dir: &Path) -> PathBuf {
    dir.join(format!(
        "sdbench-{}_cubecl-{CUBECL_VERSION}_{}",
        env!("CARGO_PKG_VERSION"),
        executable_fingerprint()
    ))
}

fn executable_fingerprint() -> String {
    use std::hash::{Hash, Hasher};
    let Some(meta) = std::env::current_exe().and_then(std::fs::metadata).ok() else {
        return "unknown".into();
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.len().hash(&mut hasher);
    meta.modified().ok().hash(&mut hasher);
    format!("{:08x}", hasher.finish() as u32)
}

/// What compiling and tuning cost in this process so far (every device together).
pub fn stats() -> KernelStats {
    cubecl_runtime::kernel_cache::stats()
}

/// Why the store could not be written, once per process (it then only costs speed).
pub fn warning() -> Option<String> {
    cubecl_runtime::kernel_cache::warning()
}

/// Whether `stats` counts this backend's kernels.
pub fn counts(kind: BackendKind) -> bool {
    matches!(
        kind,
        BackendKind::Cuda | BackendKind::Vulkan | BackendKind::Metal | BackendKind::Dx12
    )
}

/// One device's part of the store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CachedDevice {
    /// The build and device folder, e.g.
    /// `sdbench-0.4.0_cubecl-0.10.0_1a2b3c4d/cuda_sm90_driver-cuda13000_nvrtc13.0_...`.
    pub name: String,
    pub kernels: u64,
    pub bytes: u64,
}

/// What the store holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CacheUsage {
    pub dir: PathBuf,
    /// Compiled kernels, per build and device.
    pub devices: Vec<CachedDevice>,
    /// Autotune results, every build and device together.
    pub autotune_bytes: u64,
    /// Everything under `dir`.
    pub bytes: u64,
}

/// Sizes the store in `dir` (an absent folder holds nothing).
pub fn usage(dir: &Path) -> std::io::Result<CacheUsage> {
    let mut devices = Vec::new();
    let mut autotune_bytes = 0;
    for build in sorted_dirs(dir)? {
        for device in sorted_dirs(&build)? {
            let (files, bytes) = tally(&device)?;
            let folder = device
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            if folder == "autotune" {
                autotune_bytes += bytes;
                continue;
            }
            let build_name = build.file_name().unwrap_or_default().to_string_lossy();
            devices.push(CachedDevice {
                name: format!("{build_name}/{folder}"),
                kernels: files,
                bytes,
            });
        }
    }
    let bytes = if dir.exists() { tally(dir)?.1 } else { 0 };
    Ok(CacheUsage {
        dir: dir.to_path_buf(),
        devices,
        autotune_bytes,
        bytes,
    })
}

/// Removes the whole store in `dir`; the bytes freed.
pub fn clean(dir: &Path) -> std::io::Result<u64> {
    if !dir.exists() {
        return Ok(0);
    }
    let (_, bytes) = tally(dir)?;
    std::fs::remove_dir_all(dir)?;
    Ok(bytes)
}

fn sorted_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Files and bytes under `dir`, recursively.
fn tally(dir: &Path) -> std::io::Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            let (f, b) = tally(&entry.path())?;
            files += f;
            bytes += b;
        } else {
            files += 1;
            bytes += meta.len();
        }
    }
    Ok((files, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_kernels_per_device_and_autotune_apart_and_clean_frees_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path().join("sdbench-1_cubecl-0.10.0");
        let device = build.join("wgpu_Vulkan_10005-0000_llvmpipe");
        std::fs::create_dir_all(&device).unwrap();
        std::fs::write(device.join("a.kernel"), [0u8; 100]).unwrap();
        std::fs::write(device.join("b.kernel"), [0u8; 50]).unwrap();
        let tune = build.join("autotune").join("0.10.0").join("device");
        std::fs::create_dir_all(&tune).unwrap();
        std::fs::write(tune.join("matmul.json.log"), [0u8; 7]).unwrap();

        let found = usage(dir.path()).unwrap();
        assert_eq!(
            found.devices,
            vec![CachedDevice {
                name: "sdbench-1_cubecl-0.10.0/wgpu_Vulkan_10005-0000_llvmpipe".into(),
                kernels: 2,
                bytes: 150,
            }]
        );
        assert_eq!(found.autotune_bytes, 7);
        assert_eq!(found.bytes, 157);

        assert_eq!(clean(dir.path()).unwrap(), 157);
        assert!(!dir.path().exists());
        assert_eq!(usage(dir.path()).unwrap().bytes, 0);
        assert_eq!(clean(dir.path()).unwrap(), 0);
    }
}
