//! What a job streams to the UI through its `tauri::ipc::Channel`.

use serde::Serialize;

use sdbench_bench::kernels::KernelNews;
use sdbench_bench::runner::Event;
use sdbench_hub::DownloadProgress;
use sdbench_telemetry::Sample;

use crate::errors::UiError;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum JobEvent {
    Note {
        text: String,
    },
    Download {
        file: String,
        file_done: u64,
        file_total: u64,
        done: u64,
        total: u64,
    },
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
    /// Seconds the rest of the run will take, estimated early in the warm-up.
    Estimate {
        seconds: f64,
    },
    ImageStarted {
        index: usize,
        total: usize,
        warmup: bool,
    },
    /// `seconds`: null where the step was queued without its own device sync.
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
    /// GPU kernels are being compiled (a first run on a GPU): totals since the job started.
    Compiling {
        compiled: u64,
        cache_hits: u64,
        seconds: f64,
    },
    /// The latest reading of each telemetry source (for the live power and VRAM chart).
    Telemetry {
        samples: Vec<LiveSample>,
    },
    /// The job's last event: its output (what `job_status` also returns).
    Finished {
        output: serde_json::Value,
    },
    Failed {
        error: UiError,
    },
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
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

impl From<KernelNews> for JobEvent {
    fn from(news: KernelNews) -> Self {
        match news {
            KernelNews::Compiling {
                compiled,
                cache_hits,
                seconds,
            } => JobEvent::Compiling {
                compiled,
                cache_hits,
                seconds,
            },
            KernelNews::CacheWarning(_) => JobEvent::Note {
                text: news.describe(),
            },
        }
    }
}

impl From<&DownloadProgress> for JobEvent {
    fn from(p: &DownloadProgress) -> Self {
        JobEvent::Download {
            file: p.file.clone(),
            file_done: p.file_done,
            file_total: p.file_total,
            done: p.done,
            total: p.total,
        }
    }
}

impl From<&Event> for JobEvent {
    fn from(e: &Event) -> Self {
        match e {
            Event::Note(text) => JobEvent::Note { text: text.clone() },
            Event::Download(p) => p.into(),
            Event::Loading { model, backend } => JobEvent::Loading {
                model: model.clone(),
                backend: backend.clone(),
            },
            Event::Loaded {
                seconds,
                device,
                precision,
            } => JobEvent::Loaded {
                seconds: *seconds,
                device: device.clone(),
                precision: precision.clone(),
            },
            Event::Baseline { seconds } => JobEvent::Baseline { seconds: *seconds },
            Event::Estimate { seconds } => JobEvent::Estimate { seconds: *seconds },
            Event::ImageStarted {
                index,
                total,
                warmup,
            } => JobEvent::ImageStarted {
                index: *index,
                total: *total,
                warmup: *warmup,
            },
            Event::Step {
                index,
                total,
                step,
                steps,
                seconds,
                warmup,
            } => JobEvent::Step {
                index: *index,
                total: *total,
                step: *step,
                steps: *steps,
                seconds: *seconds,
                warmup: *warmup,
            },
            Event::ImageFinished {
                index,
                total,
                seconds,
                valid,
                warmup,
            } => JobEvent::ImageFinished {
                index: *index,
                total: *total,
                seconds: *seconds,
                valid: *valid,
                warmup: *warmup,
            },
            Event::Telemetry { samples } => JobEvent::Telemetry {
                samples: samples.iter().map(LiveSample::from).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_as_the_ui_reads_them() {
        let e = JobEvent::from(&Event::Step {
            index: 2,
            total: 5,
            step: 3,
            steps: 30,
            seconds: Some(0.25),
            warmup: false,
        });
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"event": "step", "index": 2, "total": 5, "step": 3, "steps": 30, "seconds": 0.25, "warmup": false})
        );
        let e = JobEvent::from(&DownloadProgress {
            file: "unet/diffusion_pytorch_model.safetensors".into(),
            file_done: 1,
            file_total: 2,
            done: 3,
            total: 4,
        });
        assert_eq!(
            serde_json::to_value(&e).unwrap()["fileTotal"],
            serde_json::json!(2)
        );
        assert_eq!(
            serde_json::to_value(JobEvent::Cancelled).unwrap(),
            serde_json::json!({"event": "cancelled"})
        );
    }
}
