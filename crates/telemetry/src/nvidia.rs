//! NVIDIA GPUs through NVML (libnvidia-ml, loaded at run time; absent drivers are an
//! "unavailable" reason, never a crash). Energy comes from the board's energy counter
//! (`nvmlDeviceGetTotalEnergyConsumption`, millijoules since driver load, Volta and newer), power
//! from `nvmlDeviceGetPowerUsage`.

use std::sync::OnceLock;

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};

use crate::reading::{Reading, Source, SourceInfo, Vendor};

/// NVML is initialised once per process and kept for its lifetime.
fn nvml() -> Result<&'static Nvml, String> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| open_nvml().map_err(|e| format!("NVML is not available: {e}")))
        .as_ref()
        .map_err(Clone::clone)
}

/// NVML from the library search path (System32 on Windows); older Windows drivers keep `nvml.dll`
/// in NVSMI under Program Files instead.
fn open_nvml() -> Result<Nvml, nvml_wrapper::error::NvmlError> {
    let found = Nvml::init();
    #[cfg(windows)]
    if found.is_err() {
        let program_files =
            std::env::var_os("ProgramW6432").or_else(|| std::env::var_os("ProgramFiles"));
        if let Some(dir) = program_files {
            let path = std::path::Path::new(&dir).join(r"NVIDIA Corporation\NVSMI\nvml.dll");
            if let Ok(nvml) = Nvml::builder().lib_path(path.as_os_str()).init() {
                return Ok(nvml);
            }
        }
    }
    found
}

/// The driver version, when NVML is present.
pub fn driver_version() -> Option<String> {
    nvml().ok()?.sys_driver_version().ok()
}

/// Throttle reasons that mean the GPU is slowed below what it could do under load.
const SLOWDOWNS: &[(ThrottleReasons, &str)] = &[
    (ThrottleReasons::SW_POWER_CAP, "power_cap"),
    (ThrottleReasons::HW_SLOWDOWN, "hw_slowdown"),
    (ThrottleReasons::HW_THERMAL_SLOWDOWN, "hw_thermal"),
    (ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake"),
    (ThrottleReasons::SW_THERMAL_SLOWDOWN, "sw_thermal"),
];

pub struct NvmlSource {
    info: SourceInfo,
    device: Device<'static>,
    has_energy: bool,
}

/// Identity of one NVIDIA GPU.
#[derive(Debug, Clone)]
pub struct NvidiaGpu {
    pub name: String,
    pub vram_bytes: Option<u64>,
    pub pci_bus: Option<String>,
}

impl NvmlSource {
    /// Every NVIDIA GPU NVML sees.
    pub fn all() -> Result<Vec<NvmlSource>, String> {
        let nvml = nvml()?;
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML device count failed: {e}"))?;
        let mut sources = Vec::new();
        for index in 0..count {
            let device = nvml
                .device_by_index(index)
                .map_err(|e| format!("NVML device {index}: {e}"))?;
            let name = device
                .name()
                .unwrap_or_else(|_| format!("NVIDIA GPU {index}"));
            let pci_bus = device.pci_info().ok().map(|p| p.bus_id);
            let has_energy = device.total_energy_consumption().is_ok();
            let method = if has_energy {
                "NVML energy counter (nvmlDeviceGetTotalEnergyConsumption) and power (nvmlDeviceGetPowerUsage)"
            } else {
                "NVML power (nvmlDeviceGetPowerUsage); this GPU has no energy counter"
            };
            sources.push(NvmlSource {
                info: SourceInfo {
                    id: format!("nvml:{index}"),
                    vendor: Vendor::Nvidia,
                    device: name,
                    method: method.into(),
                    pci_bus,
                },
                device,
                has_energy,
            });
        }
        Ok(sources)
    }

    pub fn gpu(&self) -> NvidiaGpu {
        NvidiaGpu {
            name: self.info.device.clone(),
            vram_bytes: self.device.memory_info().ok().map(|m| m.total),
            pci_bus: self.info.pci_bus.clone(),
        }
    }
}

impl Source for NvmlSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn read(&mut self) -> Reading {
        let d = &self.device;
        let memory = d.memory_info().ok();
        let reasons = d.current_throttle_reasons().ok();
        let throttle = reasons
            .map(|r| {
                SLOWDOWNS
                    .iter()
                    .filter(|(flag, _)| r.contains(*flag))
                    .map(|(_, name)| name.to_string())
                    .collect()
            })
            .unwrap_or_default();
        Reading {
            power_w: d.power_usage().ok().map(|mw| mw as f64 / 1000.0),
            energy_j: if self.has_energy {
                d.total_energy_consumption()
                    .ok()
                    .map(|mj| mj as f64 / 1000.0)
            } else {
                None
            },
            vram_used_bytes: memory.as_ref().map(|m| m.used),
            vram_total_bytes: memory.as_ref().map(|m| m.total),
            gpu_clock_mhz: d.clock_info(Clock::Graphics).ok(),
            gpu_clock_max_mhz: d.max_clock_info(Clock::Graphics).ok(),
            mem_clock_mhz: d.clock_info(Clock::Memory).ok(),
            temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
            utilization_pct: d.utilization_rates().ok().map(|u| u.gpu as f64),
            throttle,
            throttle_read: reasons.is_some(),
        }
    }
}
