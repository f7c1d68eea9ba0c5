//! What the `sdbench` tests share: running the binary with its own Hub cache, endpoint and data
//! folder, and the engine's fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The engine's test fixtures (tiny models, references).
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures")
}

/// `sdbench` with its own Hub cache, endpoint and data folder.
pub fn sdbench(home: &Path, endpoint: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args(args)
        .env("HF_HUB_CACHE", home.join("hub"))
        .env("HF_ENDPOINT", endpoint)
        .env("SDBENCH_DATA_DIR", home.join("data"))
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_HOME")
        .env_remove("SDBENCH_SUBMIT_ENDPOINT")
        .output()
        .unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
