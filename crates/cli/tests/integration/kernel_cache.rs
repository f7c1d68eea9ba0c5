//! Compiled GPU kernels kept between runs, on lavapipe: a second run compiles nothing, a damaged
//! entry is compiled again, another device's entries are never read, and a folder that cannot be
//! written costs speed only, with one warning.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `sdbench timing --ops` (SD1.5's layers, at a tiny size) on Vulkan with kernels kept in `cache`.
fn timing(cache: &Path, data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args(["timing", "--ops", "--backend", "vulkan"])
        .args(["--width", "16", "--height", "16", "--repeat", "1"])
        .env("SDBENCH_KERNEL_CACHE", cache)
        .env("SDBENCH_DATA_DIR", data)
        .output()
        .unwrap()
}

/// (compiled, from the cache, cache state) from the "kernels: ..." line.
fn kernels(o: &Output) -> (u64, u64, String) {
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("kernels: "))
        .unwrap_or_else(|| panic!("no kernels line: {out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let compiled = words[0].parse().unwrap();
    let hits_at = words.iter().position(|w| *w == "s,").unwrap() + 1;
    let hits = words[hits_at].parse().unwrap();
    (compiled, hits, words.last().unwrap().to_string())
}

/// Every `.kernel` file under `dir`.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(entries(&path));
        } else if path.extension().is_some_and(|e| e == "kernel") {
            found.push(path);
        }
    }
    found
}

#[test]
fn kernels_are_compiled_once_and_read_from_the_cache_after() {
    if !crate::cli::vulkan_usable() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let (cache, data) = (home.path().join("kernels"), home.path().join("data"));

    let (compiled, hits, state) = kernels(&timing(&cache, &data));
    assert!(
        compiled > 10,
        "a first run compiles the layers' kernels: {compiled}"
    );
    assert_eq!((hits, state.as_str()), (0, "on"));
    let stored = entries(&cache);
    assert_eq!(
        stored.len() as u64,
        compiled,
        "one entry per compiled kernel"
    );

    // A second process compiles nothing.
    assert_eq!(kernels(&timing(&cache, &data)), (0, compiled, "on".into()));

    // A truncated entry is compiled again and stored whole again: the next process reads it.
    // (Not byte for byte the old entry: cubecl's generated source may number its variables
    // differently from one compilation to the next.)
    let damaged = &stored[0];
    let bytes = std::fs::read(damaged).unwrap();
    std::fs::write(damaged, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(
        kernels(&timing(&cache, &data)),
        (1, compiled - 1, "on".into())
    );
    assert_eq!(kernels(&timing(&cache, &data)), (0, compiled, "on".into()));

    // Entries under another device's or driver's name are not this device's.
    let build = std::fs::read_dir(&cache)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for device in std::fs::read_dir(&build).unwrap() {
        let device = device.unwrap().path();
        if device.file_name().unwrap() != "autotune" {
            let other = format!("{}-another-driver", device.display());
            std::fs::rename(&device, other).unwrap();
        }
    }
    assert_eq!(kernels(&timing(&cache, &data)), (compiled, 0, "on".into()));

    // A folder that cannot be created (its parent is a file; root ignores permissions): the run
    // works, says so once, and records the cache as unwritable.
    let blocker = home.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let o = timing(&blocker.join("kernels"), &data);
    assert_eq!(kernels(&o), (compiled, 0, "unwritable".into()));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("cannot be written").count(), 1, "{err}");
}
