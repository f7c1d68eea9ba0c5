//! The hardware's state over a run's timed window, from the sampler's readings: the core clock
//! against its maximum, the peak temperature and how much of the window each throttle reason
//! held, so that a slow run can be told from a hot or power-capped one. A figure no reading holds
//! is said to be unavailable, with the source's name; a run is never called throttled for want of
//! readings.

use serde::{Deserialize, Serialize};

use crate::reading::{Reading, Sample, SourceInfo};

/// A throttle reason that held for at least this share of the timed samples marks the run as
/// throttled: at 10 Hz, 0.2 s of every 10 s (a single sample of a short run counts).
pub const THROTTLED_SHARE: f64 = 0.02;

/// The least, median and largest of a figure over the timed samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

/// One throttle reason and the share of the timed samples (0 to 1) it held in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ThrottleShare {
    pub reason: String,
    pub share: f64,
}

/// The hardware's state over a timed window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct HardwareState {
    /// The telemetry source read ("nvml:0"), none where there is none.
    pub source: Option<String>,
    /// Readings of it in the window.
    pub samples: usize,
    /// The core clock, MHz.
    pub gpu_clock_mhz: Option<Spread>,
    /// Its maximum, MHz, and the median's share of it (0 to 1).
    pub gpu_clock_max_mhz: Option<u32>,
    pub gpu_clock_median_share: Option<f64>,
    /// The memory clock, MHz.
    pub mem_clock_mhz: Option<Spread>,
    pub temperature_peak_c: Option<f64>,
    /// Each throttle reason seen, most held first.
    pub throttle: Vec<ThrottleShare>,
    /// Readings that read their throttle reasons (the shares' denominator); 0 where none could.
    #[serde(default)]
    pub throttle_samples: usize,
    /// Whether a reason held for `THROTTLED_SHARE` of the samples or more.
    pub throttled: bool,
    /// Each figure that could not be read, and why.
    pub unavailable: Vec<String>,
}

/// The state `source` reported over `t0..=t1` (`Err`: why no source is read).
pub fn summarize_hardware(
    samples: &[Sample],
    source: Result<&SourceInfo, &str>,
    t0: f64,
    t1: f64,
) -> HardwareState {
    let source = match source {
        Ok(source) => source,
        Err(reason) => {
            return HardwareState {
                unavailable: vec![format!("clocks, temperature and throttling: {reason}")],
                ..HardwareState::default()
            }
        }
    };
    let window: Vec<_> = samples
        .iter()
        .filter(|s| s.source == source.id && s.t >= t0 && s.t <= t1)
        .map(|s| &s.reading)
        .collect();
    let mut unavailable = Vec::new();
    let mut missing = |what: &str| {
        unavailable.push(format!(
            "{what}: {} ({}) reports none",
            source.id, source.device
        ))
    };
    let clock = |field: fn(&Reading) -> Option<u32>| {
        spread(
            window
                .iter()
                .filter_map(|r| field(r))
                .map(f64::from)
                .collect(),
        )
    };
    let gpu_clock = clock(|r| r.gpu_clock_mhz);
    let gpu_clock_max = window.iter().filter_map(|r| r.gpu_clock_max_mhz).max();
    let mem_clock = clock(|r| r.mem_clock_mhz);
    let temperature = window
        .iter()
        .filter_map(|r| r.temperature_c)
        .fold(None, |peak: Option<f64>, t| {
            Some(peak.map_or(t, |p| p.max(t)))
        });
    if gpu_clock.is_none() {
        missing("core clock");
    } else if gpu_clock_max.is_none() {
        missing("core clock maximum");
    }
    if temperature.is_none() {
        missing("temperature");
    }
    // Shares count only the readings that read their reasons.
    let read: Vec<_> = window.iter().filter(|r| r.throttle_read).collect();
    let mut throttle: Vec<ThrottleShare> = Vec::new();
    for reading in &read {
        for reason in &reading.throttle {
            match throttle.iter_mut().find(|t| &t.reason == reason) {
                Some(t) => t.share += 1.0,
                None => throttle.push(ThrottleShare {
                    reason: reason.clone(),
                    share: 1.0,
                }),
            }
        }
    }
    for t in &mut throttle {
        t.share /= read.len() as f64;
    }
    throttle.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.reason.cmp(&b.reason)));
    if read.is_empty() {
        missing("throttle reasons");
    }
    HardwareState {
        source: Some(source.id.clone()),
        samples: window.len(),
        gpu_clock_median_share: match (gpu_clock, gpu_clock_max) {
            (Some(c), Some(max)) if max > 0 => Some(c.median / f64::from(max)),
            _ => None,
        },
        gpu_clock_mhz: gpu_clock,
        gpu_clock_max_mhz: gpu_clock_max,
        mem_clock_mhz: mem_clock,
        temperature_peak_c: temperature,
        throttled: throttle.iter().any(|t| t.share >= THROTTLED_SHARE),
        throttle,
        throttle_samples: read.len(),
        unavailable,
    }
}

/// What a run's hardware state says of its figures, as lists keep runs apart by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Throttle reasons were read and none held for a meaningful share of the timed region.
    Steady,
    /// A reason held for `THROTTLED_SHARE` of the timed samples or more.
    Throttled,
    /// No throttle reasons could be read (most CPUs; results made before they were recorded).
    Unknown,
}

impl Standing {
    pub fn name(self) -> &'static str {
        match self {
            Standing::Steady => "steady",
            Standing::Throttled => "throttled",
            Standing::Unknown => "unknown",
        }
    }
}

impl HardwareState {
    pub fn standing(&self) -> Standing {
        match (self.throttled, self.throttle_samples) {
            (true, _) => Standing::Throttled,
            (false, 0) => Standing::Unknown,
            (false, _) => Standing::Steady,
        }
    }
}

fn spread(mut values: Vec<f64>) -> Option<Spread> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    };
    Some(Spread {
        min: values[0],
        median,
        max: values[n - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::Vendor;

    fn source(id: &str) -> SourceInfo {
        SourceInfo {
            id: id.into(),
            vendor: Vendor::Nvidia,
            device: "NVIDIA H100 80GB HBM3".into(),
            method: "NVML".into(),
            pci_bus: None,
        }
    }

    /// Readings as NVML gives them on an H100 under load: the clock at its maximum, then held by
    /// the power cap for 3 of 20 samples, one of them also thermally; one sample outside the window
    /// (and one of another source) is not counted.
    fn h100_run() -> Vec<Sample> {
        let mut samples = Vec::new();
        for i in 0..20 {
            let capped = (10..13).contains(&i);
            let mut throttle = Vec::new();
            if capped {
                throttle.push("power_cap".to_string());
            }
            if i == 12 {
                throttle.push("sw_thermal".to_string());
            }
            samples.push(Sample {
                t: 1.0 + i as f64 * 0.1,
                source: "nvml:0".into(),
                reading: Reading {
                    gpu_clock_mhz: Some(if capped { 1605 } else { 1980 }),
                    gpu_clock_max_mhz: Some(1980),
                    mem_clock_mhz: Some(2619),
                    temperature_c: Some(60.0 + i as f64 * 0.5),
                    throttle,
                    throttle_read: true,
                    ..Reading::default()
                },
            });
        }
        samples.push(Sample {
            t: 9.0,
            source: "nvml:0".into(),
            reading: Reading {
                temperature_c: Some(95.0),
                throttle: vec!["hw_thermal".into()],
                throttle_read: true,
                ..Reading::default()
            },
        });
        samples.push(Sample {
            t: 1.5,
            source: "nvml:1".into(),
            reading: Reading {
                temperature_c: Some(99.0),
                ..Reading::default()
            },
        });
        samples
    }

    #[test]
    fn clocks_temperature_and_throttle_shares_over_the_window() {
        let state = summarize_hardware(&h100_run(), Ok(&source("nvml:0")), 1.0, 3.0);
        assert_eq!(state.samples, 20);
        assert_eq!(
            state.gpu_clock_mhz,
            Some(Spread {
                min: 1605.0,
                median: 1980.0,
                max: 1980.0
            })
        );
        assert_eq!(state.gpu_clock_max_mhz, Some(1980));
        assert_eq!(state.gpu_clock_median_share, Some(1.0));
        assert_eq!(state.temperature_peak_c, Some(69.5));
        assert_eq!(
            state.throttle,
            [
                ThrottleShare {
                    reason: "power_cap".into(),
                    share: 0.15
                },
                ThrottleShare {
                    reason: "sw_thermal".into(),
                    share: 0.05
                }
            ]
        );
        assert!(state.throttled);
        assert_eq!(state.throttle_samples, 20);
        assert_eq!(state.standing(), Standing::Throttled);
        assert!(state.unavailable.is_empty(), "{:?}", state.unavailable);
    }

    /// A reason below the share does not mark the run; readings without their reasons (amdgpu's
    /// sysfs, a CPU package) never do, and say that nothing could be known.
    #[test]
    fn short_reasons_and_unknown_reasons_do_not_mark_a_run() {
        // One sample of 100 (1%) under the power cap.
        let long: Vec<Sample> = (0..100)
            .map(|i| Sample {
                t: 1.0 + i as f64 * 0.01,
                source: "nvml:0".into(),
                reading: Reading {
                    throttle: if i == 50 {
                        vec!["power_cap".into()]
                    } else {
                        Vec::new()
                    },
                    throttle_read: true,
                    ..Reading::default()
                },
            })
            .collect();
        let state = summarize_hardware(&long, Ok(&source("nvml:0")), 1.0, 3.0);
        assert_eq!(state.throttle[0].share, 0.01);
        assert!(!state.throttled);
        assert_eq!(state.standing(), Standing::Steady);

        let samples = h100_run();
        let unread: Vec<Sample> = samples
            .iter()
            .cloned()
            .map(|mut s| {
                s.reading.throttle_read = false;
                s.reading.gpu_clock_max_mhz = None;
                s
            })
            .collect();
        let state = summarize_hardware(&unread, Ok(&source("nvml:0")), 1.0, 3.0);
        assert!(!state.throttled && state.throttle.is_empty());
        assert_eq!(state.standing(), Standing::Unknown);
        assert_eq!(state.gpu_clock_median_share, None);
        assert_eq!(
            state.unavailable,
            [
                "core clock maximum: nvml:0 (NVIDIA H100 80GB HBM3) reports none",
                "throttle reasons: nvml:0 (NVIDIA H100 80GB HBM3) reports none"
            ]
        );

        let none = summarize_hardware(&[], Err("no telemetry source for llvmpipe"), 0.0, 1.0);
        assert!(!none.throttled && none.source.is_none() && none.samples == 0);
        assert_eq!(none.standing(), Standing::Unknown);
        assert_eq!(
            none.unavailable,
            ["clocks, temperature and throttling: no telemetry source for llvmpipe"]
        );
        let silent = summarize_hardware(&[], Ok(&source("rapl:package")), 0.0, 1.0);
        assert_eq!(silent.unavailable.len(), 3, "{:?}", silent.unavailable);
        assert!(!silent.throttled);
    }
}
