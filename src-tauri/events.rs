//! What a job streams to the UI through its `tauri::ipc::Channel`: the use case's own events (the
//! benchmark runner's and a generation's, the ones the CLI draws) as they are, and the job's news.

use serde::Serialize;

use sdbench_bench::kernels::KernelNews;
use sdbench_hub::DownloadProgress;
use sdbench_session::events::Event;

use crate::errors::UiError;

/// Serialized as the window reads it: `{"event": "step", ...}` for both kinds.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(untagged)]
pub enum JobEvent {
    /// What the use case reports.
    Run(Event),
    /// What the job itself reports.
    Job(JobNews),
}

#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum JobNews {
    /// GPU kernels are being compiled (a first run on a GPU): totals since the job started.
    #[serde(rename_all = "camelCase")]
    Compiling {
        compiled: u64,
        cache_hits: u64,
        seconds: f64,
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

impl JobEvent {
    pub fn note(text: impl Into<String>) -> JobEvent {
        JobEvent::Run(Event::note(text))
    }
}

impl From<KernelNews> for JobEvent {
    fn from(news: KernelNews) -> Self {
        match news {
            KernelNews::Compiling {
                compiled,
                cache_hits,
                seconds,
            } => JobEvent::Job(JobNews::Compiling {
                compiled,
                cache_hits,
                seconds,
            }),
            KernelNews::CacheWarning(_) => JobEvent::note(news.describe()),
        }
    }
}

impl From<&DownloadProgress> for JobEvent {
    fn from(p: &DownloadProgress) -> Self {
        JobEvent::Run(Event::Download(p.clone()))
    }
}

impl From<&Event> for JobEvent {
    fn from(e: &Event) -> Self {
        JobEvent::Run(e.clone())
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
            serde_json::to_value(JobEvent::Job(JobNews::Cancelled)).unwrap(),
            serde_json::json!({"event": "cancelled"})
        );
        assert_eq!(
            serde_json::to_value(JobEvent::note("hello")).unwrap(),
            serde_json::json!({"event": "note", "text": "hello"})
        );
    }
}
