//! What a front end hears while a use case runs (a benchmark, or a single generation): one event
//! type for both, which the CLI draws and the app forwards to its window.

use std::time::Duration;

use serde::Serialize;

use sdbench_hub::DownloadProgress;
use sdbench_telemetry::Sample;

use crate::vram_report::VramPhase;

/// What a front end hears while a benchmark or a generation runs. It serializes as the app's
/// window reads it: `{"event": "step", "index": 1, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[ts(rename = "RunEvent")]
pub enum Event {
    /// Something the person should know (a renamed model id, offline fallback…).
    Note {
        text: String,
    },
    Download(DownloadProgress),
    Loading {
        model: String,
        backend: String,
    },
    Loaded {
        seconds: f64,
        device: String,
        precision: String,
    },
    Baseline {
        seconds: f64,
    },
    /// `index` counts timed images from 1; the warm-up image is index 0.
    ImageStarted {
        index: usize,
        total: usize,
        warmup: bool,
    },
    /// `seconds`: the step's time, where it was synced on its own (the warm-up always is; timed
    /// images only on the CPU backend, see `StepSync::for_timing`); `None` where the steps were
    /// queued, and these events come at the end of the image's denoising loop.
    Step {
        index: usize,
        total: usize,
        step: usize,
        steps: usize,
        seconds: Option<f64>,
        warmup: bool,
    },
    ImageFinished {
        index: usize,
        total: usize,
        seconds: f64,
        valid: bool,
        warmup: bool,
    },
    /// A single generation's prompt is encoded.
    TextEncoded {
        seconds: f64,
    },
    /// A single generation's images are decoded.
    Decoded {
        seconds: f64,
    },
    /// The allocator's memory after a phase of a single generation (with a VRAM report asked for).
    Vram {
        phase: VramPhase,
    },
    /// How long the rest of the run will take, from the warm-up's second step (the first one
    /// carries one-off costs): sent once, early, so a person on a slow device can stop and run a
    /// quick benchmark instead.
    Estimate {
        seconds: f64,
    },
    /// The latest telemetry sample of each source, at most every `LIVE_TELEMETRY_INTERVAL` while
    /// images are generated (for a live power/VRAM view; the result keeps every sample).
    Telemetry {
        samples: Vec<LiveSample>,
    },
}

/// How often `Event::Telemetry` is sent during a run.
pub const LIVE_TELEMETRY_INTERVAL: Duration = Duration::from_millis(500);

impl Event {
    pub fn note(text: impl Into<String>) -> Event {
        Event::Note { text: text.into() }
    }
}

/// A telemetry reading as the live view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct LiveSample {
    pub source: String,
    /// Seconds since the run's telemetry started.
    pub t: f64,
    pub power_w: Option<f64>,
    pub vram_used_bytes: Option<u64>,
    pub vram_total_bytes: Option<u64>,
}

impl From<&Sample> for LiveSample {
    fn from(s: &Sample) -> Self {
        LiveSample {
            source: s.source.clone(),
            t: s.t,
            power_w: s.reading.power_w,
            vram_used_bytes: s.reading.vram_used_bytes,
            vram_total_bytes: s.reading.vram_total_bytes,
        }
    }
}
