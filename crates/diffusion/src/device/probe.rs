//! Which backends this machine can run, and their devices, found without initialising anything.

use super::native;
use super::wgpu_adapters::{wgpu_adapters, Adapter};
use super::{BackendKind, BackendStatus, DeviceInfo};

/// Probes every backend without initialising any of them.
pub fn probe_all() -> Vec<BackendStatus> {
    BackendKind::ALL.iter().map(|&k| probe(k)).collect()
}

pub fn probe(kind: BackendKind) -> BackendStatus {
    let (usable, detail, devices) = match list_devices(kind, &wgpu_adapters(kind)) {
        Ok(devices) => {
            let detail = match kind {
                BackendKind::Cpu => "burn flex (pure Rust, always available)".to_string(),
                BackendKind::Cuda => format!("NVIDIA driver with {} device(s)", devices.len()),
                BackendKind::Rocm => format!("HIP runtime with {} device(s)", devices.len()),
                _ => format!("{} adapter(s)", devices.len()),
            };
            (true, detail, devices)
        }
        Err(why) => (false, why, vec![]),
    };
    if !kind.built_in() {
        return BackendStatus {
            kind,
            usable: false,
            detail: format!(
                "not in this build of SD Bench (compiled without the `{kind}` feature); {detail}"
            ),
            devices: vec![],
        };
    }
    BackendStatus {
        kind,
        usable,
        detail,
        devices,
    }
}

/// A backend's devices in its own order, or why it has none. Asks the driver libraries, or
/// describes the wgpu `adapters` the caller enumerated (`wgpu_adapters(kind)`); initialises nothing.
pub(super) fn list_devices(
    kind: BackendKind,
    adapters: &[Adapter],
) -> std::result::Result<Vec<DeviceInfo>, String> {
    match kind {
        BackendKind::Cpu => Ok(vec![DeviceInfo::cpu()]),
        BackendKind::Cuda => {
            let devices = native::cuda_devices()?;
            if devices.is_empty() {
                return Err("NVIDIA driver found but it reports no CUDA device".into());
            }
            native::nvrtc_present()?;
            Ok(devices)
        }
        BackendKind::Rocm => {
            let devices = native::hip_devices()?;
            if devices.is_empty() {
                return Err("HIP runtime found but it reports no GPU".into());
            }
            Ok(devices)
        }
        BackendKind::Vulkan | BackendKind::Metal | BackendKind::Dx12 => {
            if adapters.is_empty() {
                return Err(format!(
                    "no {} adapter found (no driver, or not this platform)",
                    kind.name()
                ));
            }
            Ok(adapters.iter().map(Adapter::device_info).collect())
        }
    }
}
