//! The end of every benchmark, whichever front end ran it: the result and its images saved, then
//! the run added to the history.

use std::path::{Path, PathBuf};

use sdbench_bench::runner::{self, RunOutput};
use sdbench_bench::BenchError;

use crate::store::History;

/// What the end of a benchmark wrote.
#[derive(Debug)]
pub struct SavedRun {
    /// The images, beside the result.
    pub images: Vec<PathBuf>,
    /// Why the run could not be added to the history, if it could not (the result is saved).
    pub history_warning: Option<String>,
}

/// Saves the result JSON at `json` with its images beside it (an error when they cannot be
/// written: the run's figures would be lost), then adds the run to the history database at
/// `history`. The history is a convenience: a run it cannot record is still a saved result, and
/// the reason comes back as a warning.
pub fn save_benchmark(
    output: &mut RunOutput,
    json: &Path,
    history: &Path,
) -> Result<SavedRun, BenchError> {
    let images = runner::save(output, json)?;
    let history_warning = History::open(history)
        .and_then(|h| h.add_benchmark(&output.result))
        .err()
        .map(|e| e.to_string());
    Ok(SavedRun {
        images,
        history_warning,
    })
}
