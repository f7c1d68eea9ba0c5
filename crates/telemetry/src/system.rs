//! The machine's identity for a result: OS, kernel, CPU, RAM and GPUs (sysfs on Linux, the device
//! manager on Windows, NVML for NVIDIA everywhere).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::reading::Vendor;
use crate::sysfs::{drm_cards, read_trimmed, read_u64, uevent};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct GpuInfo {
    pub name: String,
    pub vendor: String,
    pub driver: Option<String>,
    pub vram_bytes: Option<u64>,
    pub pci_bus: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SystemInfo {
    pub os: String,
    pub os_version: String,
    pub kernel: String,
    pub arch: String,
    pub cpu_model: String,
    pub cpu_physical_cores: Option<usize>,
    pub cpu_logical_cores: usize,
    pub ram_bytes: u64,
    pub gpus: Vec<GpuInfo>,
}

impl SystemInfo {
    /// The operating system as a person names it: "Debian GNU/Linux 12", "Windows 11 Pro", not the
    /// two fields side by side ("Debian GNU/Linux Linux (Debian GNU/Linux 12)").
    pub fn os_label(&self) -> String {
        os_label(&self.os, &self.os_version)
    }

    /// Reads the running machine (`root` is `/` except in tests; NVML is asked when `use_nvml`).
    pub fn collect(root: &Path, use_nvml: bool) -> SystemInfo {
        let mut sys = sysinfo::System::new();
        sys.refresh_memory();
        sys.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
        let cpu_model = sys
            .cpus()
            .first()
            // Whitespace collapsed as the engine's CPU device name has it
            // (`sdbench_diffusion::device::cpu_model`), so the two read alike in a result.
            .map(|c| c.brand().split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| "unknown CPU".into());
        let mut gpus = drm_gpus(root);
        gpus.extend(crate::windows::gpus());
        if use_nvml {
            merge_nvidia(&mut gpus);
        }
        SystemInfo {
            os: sysinfo::System::name().unwrap_or_else(|| std::env::consts::OS.into()),
            os_version: sysinfo::System::long_os_version()
                .or_else(sysinfo::System::os_version)
                .unwrap_or_default(),
            kernel: sysinfo::System::kernel_version().unwrap_or_default(),
            arch: std::env::consts::ARCH.into(),
            cpu_model,
            cpu_physical_cores: sysinfo::System::physical_core_count(),
            cpu_logical_cores: sys.cpus().len().max(1),
            ram_bytes: sys.total_memory(),
            gpus,
        }
    }
}

/// `name` and `version` as sysinfo gives them, said once: the version's parenthesised part when it
/// names the system (Linux: "Linux (Debian GNU/Linux 12)"), the version alone when it starts
/// with a name of its own ("Windows 11 Pro", macOS's "macOS 15.1 Sequoia" beside "Darwin"), else
/// both ("Debian GNU/Linux" and "12").
pub fn os_label(name: &str, version: &str) -> String {
    let inner = version
        .strip_suffix(')')
        .and_then(|v| v.rsplit_once('(').map(|(_, inner)| inner));
    match inner {
        Some(inner) if !name.is_empty() && inner.contains(name) => inner.to_string(),
        _ if version.starts_with(|c: char| c.is_alphabetic()) => version.to_string(),
        _ => format!("{name} {version}").trim().to_string(),
    }
}

/// GPUs listed by the Linux DRM subsystem under `root/sys/class/drm`.
pub fn drm_gpus(root: &Path) -> Vec<GpuInfo> {
    let mut gpus = Vec::new();
    for (card, _) in drm_cards(root) {
        let device = card.join("device");
        let Some(vendor_id) = read_trimmed(&device.join("vendor")) else {
            continue;
        };
        let vendor = Vendor::from_pci(&vendor_id)
            .map(|v| v.name().to_string())
            .unwrap_or(vendor_id);
        let device_id = read_trimmed(&device.join("device")).unwrap_or_default();
        gpus.push(GpuInfo {
            name: read_trimmed(&device.join("product_name"))
                .unwrap_or_else(|| format!("{vendor} GPU {device_id}").trim_end().to_string()),
            vendor,
            driver: uevent(&device, "DRIVER"),
            vram_bytes: read_u64(&device.join("mem_info_vram_total")),
            pci_bus: uevent(&device, "PCI_SLOT_NAME"),
        });
    }
    gpus
}

/// Fills NVIDIA entries (or adds them, off Linux) with NVML's name, VRAM and driver version.
fn merge_nvidia(gpus: &mut Vec<GpuInfo>) {
    let Ok(sources) = crate::nvidia::NvmlSource::all() else {
        return;
    };
    let driver = crate::nvidia::driver_version();
    for source in sources {
        let gpu = source.gpu();
        let bus = gpu.pci_bus.as_deref().map(normalize_pci_bus);
        let existing = gpus
            .iter_mut()
            .find(|g| g.vendor == "NVIDIA" && g.pci_bus.as_deref().map(normalize_pci_bus) == bus);
        let entry = GpuInfo {
            name: gpu.name,
            vendor: "NVIDIA".into(),
            driver: driver.clone().map(|v| format!("nvidia {v}")),
            vram_bytes: gpu.vram_bytes,
            pci_bus: gpu.pci_bus,
        };
        match existing {
            Some(slot) => *slot = entry,
            None => gpus.push(entry),
        }
    }
}

/// One spelling of a PCI bus id, for matching: NVML writes `00000000:01:00.0`, sysfs, CUDA and
/// Vulkan `0000:01:00.0`, some drivers upper case.
pub fn normalize_pci_bus(bus: &str) -> String {
    let lower = bus.to_ascii_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) => format!(
            "{:04x}:{rest}",
            u32::from_str_radix(domain, 16).unwrap_or(0)
        ),
        None => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::os_label;

    #[test]
    fn the_system_is_named_once() {
        // sysinfo on Debian, Windows and macOS.
        assert_eq!(
            os_label("Debian GNU/Linux", "Linux (Debian GNU/Linux 12)"),
            "Debian GNU/Linux 12"
        );
        assert_eq!(os_label("Windows", "Windows 11 Pro"), "Windows 11 Pro");
        assert_eq!(
            os_label("Darwin", "macOS 15.1 Sequoia"),
            "macOS 15.1 Sequoia"
        );
        assert_eq!(os_label("Debian GNU/Linux", "12"), "Debian GNU/Linux 12");
        assert_eq!(os_label("Linux", ""), "Linux");
        assert_eq!(os_label("", "12"), "12");
    }
}
