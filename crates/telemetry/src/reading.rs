//! One reading of one telemetry source, and the trait every reader implements.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Nvidia,
    Amd,
    Intel,
    Apple,
    /// The CPU package (RAPL), for the CPU backend and software rasterisers.
    Cpu,
}

impl Vendor {
    /// A PCI vendor id as sysfs writes it (`0x10de`).
    pub fn from_pci(id: &str) -> Option<Vendor> {
        let hex = id.trim().strip_prefix("0x")?;
        Vendor::from_pci_id(u32::from_str_radix(hex, 16).ok()?)
    }

    pub fn from_pci_id(id: u32) -> Option<Vendor> {
        match id {
            0x10de => Some(Vendor::Nvidia),
            0x1002 => Some(Vendor::Amd),
            0x8086 => Some(Vendor::Intel),
            0x106b => Some(Vendor::Apple),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Vendor::Nvidia => "NVIDIA",
            Vendor::Amd => "AMD",
            Vendor::Intel => "Intel",
            Vendor::Apple => "Apple",
            Vendor::Cpu => "CPU",
        }
    }
}

/// What a source measures and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SourceInfo {
    /// E.g. "nvml:0", "amdgpu:card1", "i915:card0", "rapl:package".
    pub id: String,
    pub vendor: Vendor,
    /// The device it measures (GPU name, or "CPU package").
    pub device: String,
    /// Where the numbers come from, for the report ("NVML nvmlDeviceGetTotalEnergyConsumption", a sysfs path…).
    pub method: String,
    /// PCI bus id of the GPU, when known.
    pub pci_bus: Option<String>,
}

/// One sample; `None` where the source does not report that figure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Reading {
    /// Instantaneous (or driver-averaged) board/package power.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// A monotonic energy counter (wrap-arounds already unfolded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vram_used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vram_total_bytes: Option<u64>,
    /// The core clock: a GPU's graphics (shader) clock, a CPU package's mean core frequency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_clock_mhz: Option<u32>,
    /// The core clock's maximum (NVML's max graphics clock, amdgpu's top `pp_dpm_sclk` level,
    /// the CPU's largest `cpuinfo_max_freq`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_clock_max_mhz: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<f64>,
    /// Active reasons the clocks are held down (power cap, thermal…); empty when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttle: Vec<String>,
    /// Whether the source read its throttle reasons this time (an empty `throttle` then means
    /// none held, not that none could be known).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub throttle_read: bool,
}

/// A reading at `t` seconds after the sampler's epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Sample {
    pub t: f64,
    pub source: String,
    #[serde(flatten)]
    pub reading: Reading,
}

/// A telemetry reader. `read` is called from the sampler thread every 100 ms.
pub trait Source: Send {
    fn info(&self) -> &SourceInfo;
    fn read(&mut self) -> Reading;
}

/// Turns successive energy-counter values into instantaneous power and a monotonic total,
/// unfolding wrap-arounds of counters with a known range.
#[derive(Debug, Default)]
pub(crate) struct EnergyTracker {
    last: Option<(std::time::Instant, f64)>,
    /// Joules added for wraps so far.
    unfolded: f64,
}

impl EnergyTracker {
    /// `raw_j`: the counter in joules read at `now`; `range_j`: where it wraps (None: never).
    /// Returns (monotonic total, power since the previous reading).
    pub fn update(
        &mut self,
        now: std::time::Instant,
        raw_j: f64,
        range_j: Option<f64>,
    ) -> (f64, Option<f64>) {
        let mut power = None;
        if let Some((then, previous)) = self.last {
            let mut delta = raw_j - previous;
            if delta < 0.0 {
                if let Some(range) = range_j {
                    self.unfolded += range;
                    delta += range;
                }
            }
            let dt = now.duration_since(then).as_secs_f64();
            if dt > 0.0 && delta >= 0.0 {
                power = Some(delta / dt);
            }
        }
        self.last = Some((now, raw_j));
        (raw_j + self.unfolded, power)
    }
}
