//! CPU package energy through the Linux powercap RAPL interface (Intel, and AMD Zen which exposes
//! the same files): `/sys/class/powercap/intel-rapl:N/energy_uj` wrapping at
//! `max_energy_range_uj`. Since 2020 kernels make `energy_uj` root-only; the reason is reported.
//! Each sample also carries the CPU's clocks, temperature and throttling (`cpu_state`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cpu_state::CpuState;
use crate::reading::{EnergyTracker, Reading, Source, SourceInfo, Vendor};
use crate::sysfs::{entries, read_error, read_u64};

struct Zone {
    energy: PathBuf,
    range_j: Option<f64>,
    tracker: EnergyTracker,
}

pub struct RaplSource {
    info: SourceInfo,
    zones: Vec<Zone>,
    /// The CPU's clocks, temperature and throttling, read with each sample.
    cpu: CpuState,
}

impl RaplSource {
    /// `powercap`: `/sys/class/powercap`. Every package zone (`intel-rapl:N`, not its subzones) is summed.
    pub fn open(powercap: &Path) -> Result<RaplSource, String> {
        let packages: Vec<PathBuf> = entries(powercap, "intel-rapl:")
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .matches(':')
                    .count()
                    == 1
            })
            .collect();
        if packages.is_empty() {
            return Err(format!(
                "no RAPL package zones under {}",
                powercap.display()
            ));
        }
        let mut zones = Vec::new();
        for package in &packages {
            let energy = package.join("energy_uj");
            if read_u64(&energy).is_none() {
                return Err(read_error(&energy)
                    .unwrap_or_else(|| format!("{} is not a number", energy.display())));
            }
            zones.push(Zone {
                range_j: read_u64(&package.join("max_energy_range_uj")).map(|uj| uj as f64 / 1e6),
                energy,
                tracker: EnergyTracker::default(),
            });
        }
        Ok(RaplSource {
            info: SourceInfo {
                id: "rapl:package".into(),
                vendor: Vendor::Cpu,
                device: format!(
                    "CPU package ({} zone{})",
                    zones.len(),
                    if zones.len() == 1 { "" } else { "s" }
                ),
                method: format!(
                    "RAPL powercap {}",
                    packages
                        .iter()
                        .map(|p| p.join("energy_uj").display().to_string())
                        .collect::<Vec<_>>()
                        .join(" + ")
                ),
                pci_bus: None,
            },
            zones,
            cpu: CpuState::default(),
        })
    }

    /// Reads the CPU's clocks, temperature and throttling (`cpu`) with each sample too.
    pub fn with_cpu_state(self, cpu: CpuState) -> RaplSource {
        RaplSource { cpu, ..self }
    }
}

impl Source for RaplSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn read(&mut self) -> Reading {
        let mut reading = self.read_energy();
        self.cpu.read_into(&mut reading);
        reading
    }
}

impl RaplSource {
    /// The package zones' energy and power, none if a zone cannot be read now.
    fn read_energy(&mut self) -> Reading {
        let now = Instant::now();
        let mut energy = 0.0;
        let mut power = Some(0.0);
        for zone in &mut self.zones {
            let Some(uj) = read_u64(&zone.energy) else {
                return Reading::default();
            };
            let (total, p) = zone.tracker.update(now, uj as f64 / 1e6, zone.range_j);
            energy += total;
            power = match (power, p) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        Reading {
            energy_j: Some(energy),
            power_w: power,
            ..Reading::default()
        }
    }
}
