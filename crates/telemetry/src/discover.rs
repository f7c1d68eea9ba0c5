//! Finds every telemetry source this machine offers, and why the others are unavailable.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::amd::AmdgpuSource;
use crate::cpu_state::CpuState;
use crate::intel::IntelGpuSource;
use crate::nvidia::NvmlSource;
use crate::rapl::RaplSource;
use crate::reading::{Source, Vendor};
use crate::sysfs::{drm_cards, read_trimmed};

/// A figure SD Bench cannot read here, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Unavailable {
    pub vendor: Vendor,
    pub device: String,
    pub reason: String,
}

pub struct Discovery {
    pub sources: Vec<Box<dyn Source>>,
    pub unavailable: Vec<Unavailable>,
}

/// Looks under `root` (`/` on a real machine) for sysfs sources, and asks NVML when `use_nvml`.
pub fn discover(root: &Path, use_nvml: bool) -> Discovery {
    let mut sources: Vec<Box<dyn Source>> = Vec::new();
    let mut unavailable = Vec::new();
    let mut nvidia_cards = Vec::new();

    for (card, name) in drm_cards(root) {
        let Some(vendor) =
            read_trimmed(&card.join("device/vendor")).and_then(|v| Vendor::from_pci(&v))
        else {
            continue;
        };
        let opened: Result<Box<dyn Source>, String> = match vendor {
            Vendor::Amd => AmdgpuSource::open(&card).map(|s| Box::new(s) as Box<dyn Source>),
            Vendor::Intel => IntelGpuSource::open(&card).map(|s| Box::new(s) as Box<dyn Source>),
            Vendor::Nvidia => {
                nvidia_cards.push(name.clone());
                continue;
            }
            _ => continue,
        };
        match opened {
            Ok(source) => sources.push(source),
            Err(reason) => unavailable.push(Unavailable {
                vendor,
                device: name,
                reason,
            }),
        }
    }

    if use_nvml {
        match NvmlSource::all() {
            Ok(found) => sources.extend(found.into_iter().map(|s| Box::new(s) as Box<dyn Source>)),
            Err(reason) => unavailable.push(Unavailable {
                vendor: Vendor::Nvidia,
                device: if nvidia_cards.is_empty() {
                    "NVIDIA GPU".into()
                } else {
                    nvidia_cards.join(", ")
                },
                reason,
            }),
        }
    }

    let powercap = root.join("sys/class/powercap");
    if cfg!(target_os = "linux") || powercap.exists() {
        match RaplSource::open(&powercap) {
            Ok(source) => sources.push(Box::new(source.with_cpu_state(CpuState::open(root)))),
            Err(reason) => unavailable.push(Unavailable {
                vendor: Vendor::Cpu,
                device: "CPU package".into(),
                reason,
            }),
        }
    } else {
        let reason = if cfg!(windows) {
            "CPU package energy on Windows is only readable through a kernel driver (the CPU's \
             energy registers), which SD Bench does not install"
        } else {
            "CPU package energy is read through Linux RAPL only"
        };
        unavailable.push(Unavailable {
            vendor: Vendor::Cpu,
            device: "CPU package".into(),
            reason: reason.into(),
        });
    }
    // Windows has no sysfs: the device manager names the GPUs whose power has no reader there.
    for adapter in crate::windows::display_adapters() {
        let Some(vendor) = adapter.vendor() else {
            continue;
        };
        if let Some(reason) = crate::windows::power_unavailable_reason(vendor) {
            unavailable.push(Unavailable {
                vendor,
                device: adapter.description,
                reason: reason.into(),
            });
        }
    }
    #[cfg(target_os = "macos")]
    match crate::apple::AppleGpuSource::open() {
        Ok(source) => sources.push(Box::new(source)),
        Err(reason) => unavailable.push(Unavailable {
            vendor: Vendor::Apple,
            device: "Apple GPU".into(),
            reason,
        }),
    }
    Discovery {
        sources,
        unavailable,
    }
}
