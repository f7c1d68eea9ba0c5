//! AMD GPUs through the amdgpu driver's sysfs files.
//!
//! `device/hwmon/hwmon*/power1_average` or `power1_input` (microwatts), `temp1_input`
//! (millidegrees C), `freq1_input` (shader clock, Hz), `device/mem_info_vram_used` and
//! `mem_info_vram_total` (bytes), `device/gpu_busy_percent`. amdgpu has no energy counter, so
//! energy is integrated from the power samples.

use std::path::{Path, PathBuf};

use crate::reading::{Reading, Source, SourceInfo, Vendor};
use crate::sysfs::{card_name, hwmons, read_error, read_trimmed, read_u64, uevent};

pub struct AmdgpuSource {
    info: SourceInfo,
    device: PathBuf,
    power_file: Option<PathBuf>,
    hwmon: Option<PathBuf>,
}

impl AmdgpuSource {
    /// `card`: `/sys/class/drm/cardN`.
    pub fn open(card: &Path) -> Result<AmdgpuSource, String> {
        let device = card.join("device");
        let card_name = card_name(card);
        let hwmon = hwmons(&device).into_iter().next();
        let power_file = hwmon.as_ref().and_then(|h| {
            ["power1_average", "power1_input"]
                .iter()
                .map(|f| h.join(f))
                .find(|p| read_u64(p).is_some())
        });
        let vram = read_u64(&device.join("mem_info_vram_used"));
        if power_file.is_none() && vram.is_none() {
            let why = hwmon
                .as_ref()
                .and_then(|h| read_error(&h.join("power1_average")))
                .unwrap_or_else(|| {
                    format!("{} has no amdgpu power or VRAM files", device.display())
                });
            return Err(why);
        }
        let method = match &power_file {
            Some(p) => format!("amdgpu sysfs {}", p.display()),
            None => format!("amdgpu sysfs {} (VRAM only)", device.display()),
        };
        Ok(AmdgpuSource {
            info: SourceInfo {
                id: format!("amdgpu:{card_name}"),
                vendor: Vendor::Amd,
                device: read_trimmed(&device.join("product_name"))
                    .unwrap_or_else(|| format!("AMD GPU ({card_name})")),
                method,
                pci_bus: uevent(&device, "PCI_SLOT_NAME"),
            },
            device,
            power_file,
            hwmon,
        })
    }
}

impl Source for AmdgpuSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn read(&mut self) -> Reading {
        let hw = |f: &str| self.hwmon.as_ref().and_then(|h| read_u64(&h.join(f)));
        Reading {
            power_w: self
                .power_file
                .as_ref()
                .and_then(|p| read_u64(p))
                .map(|uw| uw as f64 / 1e6),
            vram_used_bytes: read_u64(&self.device.join("mem_info_vram_used")),
            vram_total_bytes: read_u64(&self.device.join("mem_info_vram_total")),
            gpu_clock_mhz: hw("freq1_input").map(|hz| (hz / 1_000_000) as u32),
            gpu_clock_max_mhz: std::fs::read_to_string(self.device.join("pp_dpm_sclk"))
                .ok()
                .and_then(|levels| top_dpm_level_mhz(&levels)),
            mem_clock_mhz: hw("freq2_input").map(|hz| (hz / 1_000_000) as u32),
            temperature_c: hw("temp1_input").map(|m| m as f64 / 1000.0),
            utilization_pct: read_u64(&self.device.join("gpu_busy_percent")).map(|p| p as f64),
            ..Reading::default()
        }
    }
}

/// The highest clock of an amdgpu `pp_dpm_*` table ("0: 500Mhz\n1: 2505Mhz *\n"; the `*` marks
/// the current level).
pub fn top_dpm_level_mhz(levels: &str) -> Option<u32> {
    levels
        .lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(':')?;
            let mhz = rest.trim().trim_end_matches('*').trim();
            let digits = mhz
                .strip_suffix("Mhz")
                .or_else(|| mhz.strip_suffix("MHz"))?;
            digits.trim().parse::<u32>().ok()
        })
        .max()
}
