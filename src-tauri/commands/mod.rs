//! The commands the UI invokes. Each is async and does its work off the UI thread: quick ones on
//! the blocking pool, long ones as jobs (an id, a `Channel` of events, a cancel token).

pub mod benchmark;
pub mod cache;
pub mod compare;
pub mod create;
pub mod history;
pub mod jobs;
pub mod models;
pub mod quality;
pub mod system;
pub mod updates;

use std::path::{Path, PathBuf};

use crate::errors::{UiError, UiResult};

/// Runs `work` on the blocking thread pool so the async runtime (and the window) stay free.
pub async fn blocking<T, F>(work: F) -> UiResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> UiResult<T> + Send + 'static,
{
    tauri::async_runtime::spawn_blocking(work)
        .await
        .map_err(|e| UiError::internal(format!("a background task failed: {e}")))?
}

/// A path the person chose to save to: absolute, with one of `extensions`, in an existing folder.
pub fn target_path(path: &str, extensions: &[&str]) -> UiResult<PathBuf> {
    let path = PathBuf::from(path);
    let hint = format!(
        "Choose a file name ending in .{}.",
        extensions.join(" or .")
    );
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !extension.is_some_and(|e| extensions.contains(&e.as_str())) {
        return Err(UiError::bad_input(
            format!(
                "{} is not a .{} file",
                path.display(),
                extensions.join("/.")
            ),
            hint,
        ));
    }
    if !path.is_absolute() {
        return Err(UiError::bad_input(
            format!("{} is not a full path", path.display()),
            hint,
        ));
    }
    if path.is_dir() {
        return Err(UiError::bad_input(
            format!("{} is a folder", path.display()),
            hint,
        ));
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    if !parent.is_dir() {
        return Err(UiError::bad_input(
            format!("The folder {} does not exist", parent.display()),
            "Choose an existing folder.",
        ));
    }
    Ok(path)
}
