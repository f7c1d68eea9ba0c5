//! (SD Bench) A persistent store of compiled kernels shared by the backends, and counters of what
//! compiling cost in this process.
//!
//! The store is off until the application names a folder ([`set_root`]). An entry is one file,
//! `<root>/<namespace>/<key>.kernel`. The backend builds the namespace from everything that changes
//! its compiled code (the backend, the device's architecture, the driver's and the compiler's
//! versions); the application's root names its own and cubecl's versions. So another GPU, driver,
//! compiler or release never reads a stale entry.
//!
//! A file holds a magic line, the payload's length and checksum, then the payload. It is written to
//! a temporary file and renamed into place, so a reader (another process too) sees a whole entry or
//! none, without locks. A truncated or corrupt entry is removed and the kernel compiled again. A
//! folder that cannot be written costs speed only: the first failure is kept as one warning
//! ([`warning`]) and nothing more is written in this process.
//!
//! Autotune results follow the same root (`<root>/autotune`, see `tune::tune_cache`).

use core::hash::Hasher;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use core::time::Duration;
use std::format;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::string::String;
use std::sync::Mutex;
use std::vec::Vec;

use cubecl_common::hash::StableHasher;

const MAGIC: &[u8; 8] = b"CCKERN1\n";
const HEADER: usize = MAGIC.len() + 8 + 16;

static ROOT: Mutex<Option<PathBuf>> = Mutex::new(None);
static WARNING: Mutex<Option<String>> = Mutex::new(None);
static WRITES_OFF: AtomicBool = AtomicBool::new(false);

static COMPILED: AtomicU64 = AtomicU64::new(0);
static COMPILE_NANOS: AtomicU64 = AtomicU64::new(0);
static HITS: AtomicU64 = AtomicU64::new(0);
static HIT_NANOS: AtomicU64 = AtomicU64::new(0);
static CORRUPT: AtomicU64 = AtomicU64::new(0);
static TUNED: AtomicU64 = AtomicU64::new(0);
static TUNE_NANOS: AtomicU64 = AtomicU64::new(0);
static TUNE_HITS: AtomicU64 = AtomicU64::new(0);

/// What compiling and tuning kernels cost in this process so far (every device together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Kernels compiled (not found in the store, or the store is off).
    pub compiled: u64,
    /// Time spent compiling them: code generation, the device compiler, loading the module.
    pub compile_time: Duration,
    /// Kernels loaded from the store instead of compiled.
    pub cache_hits: u64,
    /// Time spent loading those.
    pub cache_load_time: Duration,
    /// Entries found truncated or corrupt (removed, then compiled).
    pub corrupt_entries: u64,
    /// Autotune keys tuned (each times its candidates; their compilation is also counted above).
    pub tuned: u64,
    /// Time spent tuning them.
    pub tune_time: Duration,
    /// Autotune choices read from the stored results instead of tuned.
    pub tune_cache_hits: u64,
}

impl KernelStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &KernelStats) -> KernelStats {
        KernelStats {
            compiled: self.compiled.saturating_sub(earlier.compiled),
            compile_time: self.compile_time.saturating_sub(earlier.compile_time),
            cache_hits: self.cache_hits.saturating_sub(earlier.cache_hits),
            cache_load_time: self.cache_load_time.saturating_sub(earlier.cache_load_time),
            corrupt_entries: self.corrupt_entries.saturating_sub(earlier.corrupt_entries),
            tuned: self.tuned.saturating_sub(earlier.tuned),
            tune_time: self.tune_time.saturating_sub(earlier.tune_time),
            tune_cache_hits: self.tune_cache_hits.saturating_sub(earlier.tune_cache_hits),
        }
    }
}

/// The counters so far.
pub fn stats() -> KernelStats {
    let nanos = |a: &AtomicU64| Duration::from_nanos(a.load(Ordering::Relaxed));
    KernelStats {
        compiled: COMPILED.load(Ordering::Relaxed),
        compile_time: nanos(&COMPILE_NANOS),
        cache_hits: HITS.load(Ordering::Relaxed),
        cache_load_time: nanos(&HIT_NANOS),
        corrupt_entries: CORRUPT.load(Ordering::Relaxed),
        tuned: TUNED.load(Ordering::Relaxed),
        tune_time: nanos(&TUNE_NANOS),
        tune_cache_hits: TUNE_HITS.load(Ordering::Relaxed),
    }
}

fn add(count: &AtomicU64, nanos: &AtomicU64, took: Duration) {
    count.fetch_add(1, Ordering::Relaxed);
    nanos.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
}

/// A kernel was compiled; `took` is its whole cost.
pub fn record_compiled(took: Duration) {
    add(&COMPILED, &COMPILE_NANOS, took);
}

/// A kernel was loaded from the store.
pub fn record_hit(took: Duration) {
    add(&HITS, &HIT_NANOS, took);
}

/// An autotune key was tuned.
pub fn record_tuned(took: Duration) {
    add(&TUNED, &TUNE_NANOS, took);
}

/// An autotune choice came from the stored results.
pub fn record_tune_hit() {
    TUNE_HITS.fetch_add(1, Ordering::Relaxed);
}

/// Names the store's folder (`None` turns it off). Devices read it when they start, so set it
/// before the first one does.
pub fn set_root(root: Option<PathBuf>) {
    *ROOT.lock().unwrap_or_else(|e| e.into_inner()) = root;
    WRITES_OFF.store(false, Ordering::Relaxed);
    *WARNING.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// The store's folder, when it is on.
pub fn root() -> Option<PathBuf> {
    ROOT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Why the store could not be written, the first time it could not (at most one per process).
pub fn warning() -> Option<String> {
    WARNING.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A namespace from its parts, safe as one folder name on every platform.
pub fn namespace(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|part| {
            part.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("_")
}

fn entry_path(root: &Path, namespace: &str, key: u128) -> PathBuf {
    root.join(namespace).join(format!("{key:032x}.kernel"))
}

fn checksum(payload: &[u8]) -> u128 {
    let mut hasher = StableHasher::new();
    hasher.write(payload);
    hasher.finalize()
}

/// The payload stored for `key`, or `None` (store off, no entry, or a damaged entry, which is
/// removed so the kernel is compiled and stored again).
pub fn load(namespace: &str, key: u128) -> Option<Vec<u8>> {
    let path = entry_path(&root()?, namespace, key);
    let bytes = fs::read(&path).ok()?;
    match decode(&bytes) {
        Some(payload) => Some(payload.to_vec()),
        None => {
            CORRUPT.fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "kernel cache: {} is damaged; compiling again",
                path.display()
            );
            fs::remove_file(&path).ok();
            None
        }
    }
}

fn decode(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.len() < HEADER || &bytes[..MAGIC.len()] != MAGIC {
        return None;
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().ok()?) as usize;
    let sum = u128::from_le_bytes(bytes[16..32].try_into().ok()?);
    let payload = &bytes[HEADER..];
    (payload.len() == len && checksum(payload) == sum).then_some(payload)
}

fn encode(payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&checksum(payload).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// Stores `payload` for `key`. A failure (read-only folder, full disk) turns writing off for the
/// process and keeps one warning; the kernel in hand still runs.
pub fn store(namespace: &str, key: u128, payload: &[u8]) {
    if WRITES_OFF.load(Ordering::Relaxed) {
        return;
    }
    let Some(root) = root() else { return };
    let path = entry_path(&root, namespace, key);
    if let Err(err) = write_atomically(&path, &encode(payload)) {
        WRITES_OFF.store(true, Ordering::Relaxed);
        let message = format!(
            "the GPU kernel cache in {} cannot be written ({err}); kernels will be compiled \
             again in every run until it can (free disk space or make the folder writable)",
            root.display()
        );
        log::warn!("{message}");
        let mut warning = WARNING.lock().unwrap_or_else(|e| e.into_inner());
        if warning.is_none() {
            *warning = Some(message);
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let unique = format!(
        "{}.{}.{:?}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id(),
        std::thread::current().id()
    );
    let tmp = dir.join(unique.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', ""));
    // No fsync: a cache entry that a crash leaves torn fails its checksum and is compiled again,
    // while flushing every kernel would cost a first run seconds where syncs are slow (macOS).
    let written = fs::File::create(&tmp).and_then(|mut file| file.write_all(bytes));
    let renamed = written.and_then(|()| fs::rename(&tmp, path));
    if renamed.is_err() {
        fs::remove_file(&tmp).ok();
    }
    renamed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_and_damage_is_detected() {
        let payload = b"ptx or spir-v bytes".to_vec();
        let bytes = encode(&payload);
        assert_eq!(decode(&bytes), Some(&payload[..]));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None, "truncated");
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(decode(&flipped), None, "a changed byte");
        assert_eq!(decode(b"CCKERN1\n"), None, "header only");
    }

    #[test]
    fn namespaces_are_one_safe_folder_name() {
        assert_eq!(
            namespace(&["cuda", "sm_90", "driver 580.1/x"]),
            "cuda_sm_90_driver-580.1-x"
        );
    }
}
