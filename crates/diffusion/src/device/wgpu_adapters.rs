//! wgpu's adapters of one graphics API (Vulkan, Metal, DX12): enumerated without a device, ranked,
//! and bound to their API once per process.

use burn::backend::wgpu::{graphics, init_setup, RuntimeOptions, WgpuDevice};

use super::{class_rank, BackendKind, DeviceInfo, DISCRETE, INTEGRATED, VIRTUAL};
use crate::error::{DiffusionError, Result};

/// wgpu devices already bound to a graphics API in this process (cubecl allows one binding each).
pub(super) static BOUND_WGPU: std::sync::Mutex<Vec<(WgpuDevice, BackendKind)>> =
    std::sync::Mutex::new(Vec::new());

/// Binds `device` to `kind`'s graphics API before any tensor touches it, once per process.
pub(super) fn bind_wgpu_device(
    kind: BackendKind,
    device: &WgpuDevice,
    describe: &str,
) -> Result<()> {
    let mut bound = BOUND_WGPU.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, api)) = bound.iter().find(|(d, _)| d == device) {
        if *api == kind {
            return Ok(());
        }
        return Err(DiffusionError::BackendUnavailable {
            backend: kind.name().into(),
            reason: format!("{describe} is already in use through {api} in this process"),
        });
    }
    let options = RuntimeOptions::default();
    let setup = std::panic::catch_unwind(|| match kind {
        BackendKind::Vulkan => init_setup::<graphics::Vulkan>(device, options),
        BackendKind::Metal => init_setup::<graphics::Metal>(device, options),
        _ => init_setup::<graphics::Dx12>(device, options),
    });
    if setup.is_err() {
        return Err(DiffusionError::BackendUnavailable {
            backend: kind.name().into(),
            reason: format!("initialising {describe} failed"),
        });
    }
    bound.push((device.clone(), kind));
    Ok(())
}

/// An adapter of one graphics API, with its index among adapters of the same type (cubecl's
/// `WgpuDevice` numbering).
pub(super) struct Adapter {
    info: wgpu::AdapterInfo,
    /// Its place in `wgpu_adapters`' list: the `--device` number.
    index: usize,
    index_in_type: usize,
}

impl Adapter {
    /// Lower is better; `None` for software and unknown adapters.
    pub(super) fn hardware_rank(&self) -> Option<u8> {
        Some(class_rank(self.class())).filter(|&r| r != u8::MAX)
    }

    fn class(&self) -> &'static str {
        match self.info.device_type {
            wgpu::DeviceType::DiscreteGpu => DISCRETE,
            wgpu::DeviceType::IntegratedGpu => INTEGRATED,
            wgpu::DeviceType::VirtualGpu => VIRTUAL,
            wgpu::DeviceType::Cpu => "software (CPU)",
            wgpu::DeviceType::Other => "other",
        }
    }

    pub(super) fn wgpu_device(&self) -> WgpuDevice {
        match self.info.device_type {
            wgpu::DeviceType::DiscreteGpu => WgpuDevice::DiscreteGpu(self.index_in_type),
            wgpu::DeviceType::IntegratedGpu => WgpuDevice::IntegratedGpu(self.index_in_type),
            wgpu::DeviceType::VirtualGpu => WgpuDevice::VirtualGpu(self.index_in_type),
            _ => WgpuDevice::Cpu,
        }
    }

    pub(super) fn device_info(&self) -> DeviceInfo {
        let driver = format!("{} {}", self.info.driver, self.info.driver_info);
        let driver = driver.split_whitespace().collect::<Vec<_>>().join(" ");
        let bus = self.info.device_pci_bus_id.trim();
        DeviceInfo {
            index: self.index,
            name: self.info.name.clone(),
            class: self.class(),
            driver: (!driver.is_empty()).then_some(driver),
            memory_bytes: None,
            pci_bus: (!bus.is_empty()).then(|| bus.to_string()),
            software: self.info.device_type == wgpu::DeviceType::Cpu,
            pci_vendor: Some(self.info.vendor),
        }
    }
}

/// The API's adapters in enumeration order (cubecl picks among those of one type by that order).
pub(super) fn wgpu_adapters(kind: BackendKind) -> Vec<Adapter> {
    let Some(backend) = kind.wgpu_backend() else {
        return Vec::new();
    };
    let backends = wgpu::Backends::from(backend);
    let found = std::panic::catch_unwind(|| {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        pollster::block_on(instance.enumerate_adapters(backends))
            .into_iter()
            .map(|a| a.get_info())
            .collect::<Vec<_>>()
    })
    .unwrap_or_default();
    let mut per_type: Vec<(wgpu::DeviceType, usize)> = Vec::new();
    found
        .into_iter()
        .filter(|info| info.device_type != wgpu::DeviceType::Other)
        .enumerate()
        .map(|(index, info)| {
            let index_in_type = match per_type.iter_mut().find(|(t, _)| *t == info.device_type) {
                Some((_, n)) => {
                    *n += 1;
                    *n - 1
                }
                None => {
                    per_type.push((info.device_type, 1));
                    0
                }
            };
            Adapter {
                info,
                index,
                index_in_type,
            }
        })
        .collect()
}

/// Call at the start of `main`, before any other thread exists (it sets an environment variable).
/// Mesa's device-select Vulkan layer asks the Wayland compositor which GPU drives the desktop;
/// with no desktop session (no usable `XDG_RUNTIME_DIR`) libwayland prints "error:
/// XDG_RUNTIME_DIR is invalid or not set in the environment." for every Vulkan instance, though
/// nothing failed. Without a session the layer has nothing to choose by, and SD Bench ranks the
/// adapters itself, so the layer is switched off then (`NODEVICE_SELECT=1`, its own switch).
pub fn quiet_vulkan_without_desktop_session() {
    let has_session =
        std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|dir| std::path::Path::new(&dir).is_dir());
    if cfg!(target_os = "linux") && !has_session && std::env::var_os("NODEVICE_SELECT").is_none() {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}
