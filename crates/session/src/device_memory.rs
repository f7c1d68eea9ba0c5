//! Device selection for a run with the memory the fit check and `--memory auto` go by: the limit
//! given, else what the GPU's telemetry says is free (so memory that other programs hold is not
//! counted as ours), else the driver's total.

use std::path::Path;

use sdbench_diffusion::device::{self, BackendKind, BackendRequest, DeviceRequest};
use sdbench_diffusion::{
    choose_auto, MemoryProfile, ModelSource, Precision, RequestShape, SelectedDevice,
};
use sdbench_telemetry::{discover, Reading};

use crate::telemetry_source::{choose_source, device_vendor};

/// The most device memory a limit may name, in GiB.
pub const MAX_MEMORY_LIMIT_GIB: f64 = 4096.0;

/// A memory limit given in GiB (`--memory-limit`, the app's setting) in bytes; `None` for one
/// that is not a size (not above 0, not finite, above `MAX_MEMORY_LIMIT_GIB`).
pub fn memory_limit_bytes(gib: f64) -> Option<u64> {
    (gib.is_finite() && gib > 0.0 && gib <= MAX_MEMORY_LIMIT_GIB)
        .then_some((gib * (1u64 << 30) as f64) as u64)
}

/// Selects the device for `request` with `memory_limit` (bytes) applied and the free memory read
/// from telemetry where the device is a GPU that a telemetry source reads (`sysfs_root` is `/`
/// on a real machine; NVML is asked when `use_nvml`).
pub fn select_device(
    request: DeviceRequest,
    memory_limit: Option<u64>,
    sysfs_root: &Path,
    use_nvml: bool,
) -> sdbench_diffusion::Result<SelectedDevice> {
    let mut device = device::select(request)?;
    device.memory_limit = memory_limit;
    if memory_limit.is_none() {
        device.memory_free = free_memory(&device, sysfs_root, use_nvml);
    }
    Ok(device)
}

/// How the model is to be placed in device memory: a profile, or the fastest that fits (`auto`),
/// with the device memory the fit check assumes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryChoice {
    /// The profile asked for; with `auto`, ignored.
    pub profile: MemoryProfile,
    pub auto: bool,
    /// Bytes the fit check and `auto` assume instead of the device's own figure.
    pub limit: Option<u64>,
}

impl Default for MemoryChoice {
    fn default() -> Self {
        MemoryChoice {
            profile: MemoryProfile::Full,
            auto: false,
            limit: None,
        }
    }
}

/// The device a model is loaded on and the memory profile it is loaded with.
pub struct Placement {
    pub device: SelectedDevice,
    pub profile: MemoryProfile,
    /// With `auto`: why it chose `profile` (for a note).
    pub auto_reason: Option<String>,
}

/// The device and profile for requests of `shape` on `source`: the `cpu` profile runs on the CPU
/// backend; `auto` chooses the fastest profile whose need fits, and moves to the CPU backend when
/// none does.
pub fn place(
    request: DeviceRequest,
    memory: MemoryChoice,
    source: &ModelSource,
    precision: Option<Precision>,
    shape: &RequestShape,
    sysfs_root: &Path,
    use_nvml: bool,
) -> sdbench_diffusion::Result<Placement> {
    let select = |request| select_device(request, memory.limit, sysfs_root, use_nvml);
    let cpu = DeviceRequest::from(BackendRequest::Cpu);
    if !memory.auto {
        let request = if memory.profile.needs_cpu_backend() {
            cpu
        } else {
            request
        };
        return Ok(Placement {
            device: select(request)?,
            profile: memory.profile,
            auto_reason: None,
        });
    }
    let mut device = select(request)?;
    let auto = choose_auto(source, &device, precision, shape)?;
    if auto.profile.needs_cpu_backend() && device.kind != BackendKind::Cpu {
        device = select(cpu)?;
    }
    Ok(Placement {
        device,
        profile: auto.profile,
        auto_reason: Some(auto.reason),
    })
}

/// The device memory free for this process: the telemetry's total less its used, plus what this
/// process's allocator already holds in reserve (pooled memory is ours to reuse). `None` on the
/// CPU backend and software rasterisers, and where no source reads the device.
pub fn free_memory(device: &SelectedDevice, sysfs_root: &Path, use_nvml: bool) -> Option<u64> {
    let vendor = device_vendor(device)?;
    if vendor == sdbench_telemetry::Vendor::Cpu {
        return None;
    }
    let mut found = discover(sysfs_root, use_nvml);
    let infos: Vec<_> = found.sources.iter().map(|s| s.info().clone()).collect();
    let chosen = choose_source(Some(vendor), &device.info, &infos, &found.unavailable).ok()?;
    let index = infos.iter().position(|i| i.id == chosen.id)?;
    let reading = found.sources[index].read();
    let own = device.allocator_memory().map_or(0, |m| m.reserved);
    free_bytes(&reading, own)
}

/// `total - used + own_reserved`, capped at the total; `None` without both figures.
pub fn free_bytes(reading: &Reading, own_reserved: u64) -> Option<u64> {
    let total = reading.vram_total_bytes?;
    let used = reading.vram_used_bytes?;
    Some(
        total
            .saturating_sub(used)
            .saturating_add(own_reserved)
            .min(total),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sdbench_diffusion::device::BackendRequest;

    #[test]
    fn free_memory_is_the_unused_part_plus_our_own_pool() {
        let gib = 1u64 << 30;
        let reading = |used, total| Reading {
            vram_used_bytes: used,
            vram_total_bytes: total,
            ..Reading::default()
        };
        assert_eq!(
            free_bytes(&reading(Some(3 * gib), Some(8 * gib)), 0),
            Some(5 * gib)
        );
        assert_eq!(
            free_bytes(&reading(Some(3 * gib), Some(8 * gib)), gib),
            Some(6 * gib)
        );
        // Another program's use is never handed back, and the result never exceeds the card.
        assert_eq!(
            free_bytes(&reading(Some(9 * gib), Some(8 * gib)), 0),
            Some(0)
        );
        assert_eq!(
            free_bytes(&reading(Some(gib), Some(8 * gib)), 9 * gib),
            Some(8 * gib)
        );
        assert_eq!(free_bytes(&reading(None, Some(8 * gib)), 0), None);
        assert_eq!(free_bytes(&reading(Some(gib), None), 0), None);
    }

    #[test]
    fn an_amd_card_is_read_by_its_bus_and_other_programs_use_is_left_out() {
        let root = tempfile::tempdir().unwrap();
        let card = root.path().join("sys/class/drm/card1/device");
        std::fs::create_dir_all(&card).unwrap();
        let put = |file: &str, text: &str| std::fs::write(card.join(file), text).unwrap();
        put("vendor", "0x1002\n");
        put("uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n");
        put("mem_info_vram_total", &format!("{}\n", 8u64 << 30));
        put("mem_info_vram_used", &format!("{}\n", 3u64 << 30));
        let mut gpu = SelectedDevice {
            kind: sdbench_diffusion::BackendKind::Vulkan,
            device: device::cpu_device(),
            info: sdbench_diffusion::DeviceInfo {
                index: 0,
                name: "AMD Radeon RX 7600".into(),
                class: "discrete GPU",
                driver: None,
                memory_bytes: None,
                pci_bus: Some("0000:03:00.0".into()),
                software: false,
                pci_vendor: Some(0x1002),
            },
            memory_limit: None,
            memory_free: None,
        };
        assert_eq!(free_memory(&gpu, root.path(), false), Some(5 << 30));
        gpu.memory_free = free_memory(&gpu, root.path(), false);
        assert_eq!(gpu.memory_for_fit(), Some(5 << 30));
        assert_eq!(gpu.memory_for_fit_meaning(), "free");
        // The driver's total caps it, and a limit given wins.
        gpu.info.memory_bytes = Some(4 << 30);
        assert_eq!(gpu.memory_for_fit(), Some(4 << 30));
        gpu.memory_limit = Some(2 << 30);
        assert_eq!(gpu.memory_for_fit(), Some(2 << 30));
        assert_eq!(gpu.memory_for_fit_meaning(), "the limit given");
        // Another card on another bus is not this one's figure.
        gpu.info.pci_bus = Some("0000:04:00.0".into());
        gpu.info.name = "AMD Radeon RX 7900".into();
        put("product_name", "AMD Radeon RX 6600\n");
        let second = root.path().join("sys/class/drm/card2/device");
        std::fs::create_dir_all(&second).unwrap();
        std::fs::write(second.join("vendor"), "0x1002\n").unwrap();
        std::fs::write(second.join("mem_info_vram_used"), "1\n").unwrap();
        assert_eq!(free_memory(&gpu, root.path(), false), None);
    }

    #[test]
    fn a_memory_limit_is_a_positive_size_in_gib() {
        assert_eq!(memory_limit_bytes(2.5), Some(5 << 29));
        assert_eq!(memory_limit_bytes(MAX_MEMORY_LIMIT_GIB), Some(4096 << 30));
        for bad in [
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            MAX_MEMORY_LIMIT_GIB + 1.0,
        ] {
            assert_eq!(memory_limit_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_cpu_backend_has_no_device_memory_to_read() {
        let cpu = select_device(
            DeviceRequest::from(BackendRequest::Cpu),
            None,
            Path::new("/nonexistent"),
            false,
        )
        .unwrap();
        assert_eq!(cpu.memory_free, None);
        assert_eq!(cpu.memory_for_fit(), None);
        let limited = select_device(
            DeviceRequest::from(BackendRequest::Cpu),
            Some(1 << 30),
            Path::new("/nonexistent"),
            false,
        )
        .unwrap();
        assert_eq!(limited.memory_limit, Some(1 << 30));
    }
}
