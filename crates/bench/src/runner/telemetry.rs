//! Telemetry over a run: the system's description, the sources found, the sampler running in the
//! background from before the idle baseline to the end of the timed images, and the live view.

use std::time::{Duration, Instant};

use sdbench_diffusion::CancelToken;
use sdbench_telemetry::{discover, Sample, Sampler, SourceInfo, SystemInfo, Unavailable};

use super::RunOptions;
use crate::error::{BenchError, Result};
use crate::result::Window;
use sdbench_session::events::{Event, LiveSample, LIVE_TELEMETRY_INTERVAL};

pub(super) struct RunTelemetry {
    pub system: SystemInfo,
    pub sources: Vec<SourceInfo>,
    pub unavailable: Vec<Unavailable>,
    pub sampler: Sampler,
    /// Time zero of the samples and windows.
    epoch: Instant,
}

impl RunTelemetry {
    pub fn start(options: &RunOptions) -> RunTelemetry {
        let system = SystemInfo::collect(&options.sysfs_root, options.use_nvml);
        let found = discover(&options.sysfs_root, options.use_nvml);
        let sources = found.sources.iter().map(|s| s.info().clone()).collect();
        let epoch = Instant::now();
        RunTelemetry {
            system,
            sources,
            unavailable: found.unavailable,
            sampler: Sampler::start(found.sources, options.sample_interval, epoch),
            epoch,
        }
    }

    /// Seconds since the sampler started.
    pub fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Samples with the device idle for `duration`: the power the run's figures are taken above.
    pub fn idle_baseline(
        &self,
        duration: Duration,
        observer: &mut dyn FnMut(&Event),
        cancel: &CancelToken,
    ) -> Result<Window> {
        let start = self.now();
        let until = Instant::now() + duration;
        while Instant::now() < until {
            if cancel.is_cancelled() {
                return Err(BenchError::Cancelled);
            }
            std::thread::sleep(
                Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())),
            );
        }
        let baseline = Window {
            start,
            end: self.now(),
        };
        observer(&Event::Baseline {
            seconds: baseline.end - baseline.start,
        });
        Ok(baseline)
    }

    /// Stops sampling after a last reading; every sample of the run.
    pub fn stop(self) -> (Vec<Sample>, RunTelemetryInfo) {
        let samples = self.sampler.stop();
        let info = RunTelemetryInfo {
            system: self.system,
            sources: self.sources,
            unavailable: self.unavailable,
            epoch: self.epoch,
        };
        (samples, info)
    }
}

/// What the result keeps of the telemetry besides its samples.
pub(super) struct RunTelemetryInfo {
    pub system: SystemInfo,
    pub sources: Vec<SourceInfo>,
    pub unavailable: Vec<Unavailable>,
    /// Time zero of the samples, for phases after sampling stopped.
    pub epoch: Instant,
}

/// Sends the sampler's latest readings to the observer, at most every `LIVE_TELEMETRY_INTERVAL`.
pub(super) struct LiveTelemetry<'a> {
    sampler: &'a Sampler,
    last: Option<Instant>,
}

impl<'a> LiveTelemetry<'a> {
    pub fn new(telemetry: &'a RunTelemetry) -> Self {
        LiveTelemetry {
            sampler: &telemetry.sampler,
            last: None,
        }
    }

    pub fn send(&mut self, observer: &mut dyn FnMut(&Event)) {
        if self
            .last
            .is_some_and(|t| t.elapsed() < LIVE_TELEMETRY_INTERVAL)
        {
            return;
        }
        self.last = Some(Instant::now());
        let samples = self.sampler.latest();
        if !samples.is_empty() {
            observer(&Event::Telemetry {
                samples: samples.iter().map(LiveSample::from).collect(),
            });
        }
    }
}
