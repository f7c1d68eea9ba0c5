//! Intel GPUs through the i915 or xe driver's hwmon energy counter.
//!
//! `device/hwmon/hwmon*/energy1_input` (microjoules; xe also names the card counter
//! `energy2_input`). Power is the counter's rate between samples. Integrated GPUs usually expose
//! no hwmon: their power is part of the CPU package (RAPL).

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::reading::{EnergyTracker, Reading, Source, SourceInfo, Vendor};
use crate::sysfs::{card_name, hwmons, read_error, read_u64, uevent};

pub struct IntelGpuSource {
    info: SourceInfo,
    energy_file: PathBuf,
    hwmon: PathBuf,
    tracker: EnergyTracker,
}

impl IntelGpuSource {
    pub fn open(card: &Path) -> Result<IntelGpuSource, String> {
        let device = card.join("device");
        let card_name = card_name(card);
        let driver = uevent(&device, "DRIVER").unwrap_or_else(|| "i915".into());
        let mut first_error = None;
        for hwmon in hwmons(&device) {
            for name in ["energy1_input", "energy2_input"] {
                let file = hwmon.join(name);
                if read_u64(&file).is_some() {
                    return Ok(IntelGpuSource {
                        info: SourceInfo {
                            id: format!("{driver}:{card_name}"),
                            vendor: Vendor::Intel,
                            device: format!("Intel GPU ({card_name})"),
                            method: format!("{driver} hwmon energy counter {}", file.display()),
                            pci_bus: uevent(&device, "PCI_SLOT_NAME"),
                        },
                        energy_file: file,
                        hwmon: hwmon.clone(),
                        tracker: EnergyTracker::default(),
                    });
                }
                if first_error.is_none() && file.exists() {
                    first_error = read_error(&file);
                }
            }
        }
        Err(first_error.unwrap_or_else(|| {
            format!(
                "{} has no {driver} hwmon energy counter (integrated GPUs report through the CPU package)",
                device.display()
            )
        }))
    }
}

impl Source for IntelGpuSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn read(&mut self) -> Reading {
        let now = Instant::now();
        let (energy_j, power_w) = match read_u64(&self.energy_file) {
            Some(uj) => {
                let (total, power) = self.tracker.update(now, uj as f64 / 1e6, None);
                (Some(total), power)
            }
            None => (None, None),
        };
        Reading {
            energy_j,
            power_w,
            temperature_c: read_u64(&self.hwmon.join("temp1_input")).map(|m| m as f64 / 1000.0),
            ..Reading::default()
        }
    }
}
