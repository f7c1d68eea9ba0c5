//! The local history of runs: every benchmark result and every custom generation, kept in one
//! SQLite file in the app's data folder, listed with filters, read back whole, deleted, exported.
//! Knows nothing of windows or terminals; the desktop app and the CLI both use it.

mod error;
mod record;
mod saved_run;
mod store;

pub use error::{HistoryError, Result};
pub use record::{
    Filter, Generation, InitImageRecord, Record, RunKind, RunSummary, SkipLayerRecord,
};
pub use saved_run::{save_benchmark, SavedRun};
/// The stage seconds of a generation, as a benchmark image records them.
pub use sdbench_bench::result::Stages;
pub use store::{default_path, History, EXPORT_FORMAT};
