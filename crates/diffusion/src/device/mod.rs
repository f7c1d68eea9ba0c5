//! Backend probing and device selection. Probing never crashes the process: the CUDA and ROCm
//! backends abort when their driver libraries are missing, so those libraries are looked for and
//! asked for a device count (through `libloading`) before burn touches them; wgpu adapters are
//! enumerated before one is initialised.
//!
//! CUDA and ROCm are cargo features (`cuda`, `rocm`, on by default): the test build leaves them out,
//! since they cannot run without their drivers and they double the compile time of burn's
//! dispatch layer. A build without one still probes its driver and says the backend is not built in.

use burn::{Dispatch, DispatchDevice};

use crate::error::{DiffusionError, Result};
use crate::io::weights::Precision;

pub(crate) mod backend_kind;
mod cpu;
mod cpu_heap;
pub mod kernel_cache;
mod native;
mod probe;
mod request;
mod wgpu_adapters;

pub use backend_kind::BackendKind;
pub use cpu::{cpu_device, cpu_model, cpu_threads, default_cpu_threads, set_cpu_threads};
pub use cpu_heap::return_freed as return_freed_heap;
pub use probe::{probe, probe_all};
pub use request::{BackendRequest, DeviceRequest};
pub use wgpu_adapters::quiet_vulkan_without_desktop_session;

use cpu::cpu_name;
use probe::list_devices;
use wgpu_adapters::{bind_wgpu_device, wgpu_adapters};

/// One backend's probe result, for `sdbench devices` and the UI.
#[derive(Debug, Clone)]
pub struct BackendStatus {
    pub kind: BackendKind,
    pub usable: bool,
    /// Why it is not usable, or what was found.
    pub detail: String,
    /// Devices found, in the backend's own order (their `index`).
    pub devices: Vec<DeviceInfo>,
}

/// One device of a backend, as its driver describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Its number among the backend's devices: what `--device N` takes.
    pub index: usize,
    /// The product name the driver reports.
    pub name: String,
    /// "discrete GPU", "integrated GPU", "software (CPU)"…
    pub class: &'static str,
    /// Driver name and version, where the API reports them.
    pub driver: Option<String>,
    /// Device memory, where the API reports it (CUDA and HIP do; wgpu does not).
    pub memory_bytes: Option<u64>,
    /// PCI bus id (`0000:01:00.0`), where the API reports it: how telemetry finds this card.
    pub pci_bus: Option<String>,
    /// A software implementation of a GPU API (Mesa lavapipe).
    pub software: bool,
    /// PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel…); `None` on the CPU backend.
    pub pci_vendor: Option<u32>,
}

impl DeviceInfo {
    /// One line: name, class, memory, driver, bus.
    pub fn describe(&self) -> String {
        let mut parts = vec![self.class.to_string()];
        if let Some(bytes) = self.memory_bytes {
            parts.push(format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64));
        }
        if let Some(driver) = &self.driver {
            parts.push(format!("driver {driver}"));
        }
        if let Some(bus) = &self.pci_bus {
            parts.push(format!("PCI {bus}"));
        }
        format!("{} ({})", self.name, parts.join(", "))
    }

    fn cpu() -> DeviceInfo {
        DeviceInfo {
            index: 0,
            name: cpu_name(),
            class: "burn flex",
            driver: None,
            memory_bytes: None,
            pci_bus: None,
            software: false,
            pci_vendor: None,
        }
    }
}

/// The device a pipeline runs on.
#[derive(Debug, Clone)]
pub struct SelectedDevice {
    pub kind: BackendKind,
    pub device: DispatchDevice,
    /// Name, driver, memory, bus: what the driver said of it.
    pub info: DeviceInfo,
    /// Device memory the fit check and `--memory auto` assume instead of `info.memory_bytes`
    /// (`--memory-limit`: what a smaller GPU would fit).
    pub memory_limit: Option<u64>,
    /// Device memory free for this run when it was selected (what other programs hold
    /// subtracted), where the GPU's telemetry tells (NVML, amdgpu's sysfs): set by the caller,
    /// which owns the telemetry.
    pub memory_free: Option<u64>,
}

impl SelectedDevice {
    /// The device memory a placement must fit in: the limit given, else what was free when the
    /// device was selected, else the total the driver reports (CUDA, HIP; wgpu reports none).
    /// `None` on the CPU backend, whose memory is the host's.
    pub fn memory_for_fit(&self) -> Option<u64> {
        if self.kind == BackendKind::Cpu {
            return None;
        }
        let known = match (self.memory_free, self.info.memory_bytes) {
            (Some(free), Some(total)) => Some(free.min(total)),
            (free, total) => free.or(total),
        };
        self.memory_limit.or(known)
    }

    /// What `memory_for_fit`'s figure is, for messages: "the limit given", "free" or "in all".
    pub fn memory_for_fit_meaning(&self) -> &'static str {
        match (self.memory_limit, self.memory_free) {
            (Some(_), _) => "the limit given",
            (None, Some(_)) => "free",
            (None, None) => "in all",
        }
    }

    /// f16 where the device supports it (never on the CPU backend, which is faster in f32).
    pub fn default_precision(&self) -> Precision {
        if self.kind != BackendKind::Cpu && self.supports(Precision::F16) {
            Precision::F16
        } else {
            Precision::F32
        }
    }

    pub fn supports(&self, precision: Precision) -> bool {
        match precision {
            Precision::F32 => true,
            Precision::F16 | Precision::Bf16 => {
                let usage = <Dispatch as burn::tensor::backend::Backend>::dtype_usage(
                    &self.device,
                    precision.dtype(),
                );
                !usage.is_empty()
            }
        }
    }

    /// The CPU backend's worker threads; `None` on a GPU.
    pub fn cpu_threads(&self) -> Option<usize> {
        (self.kind == BackendKind::Cpu).then(cpu_threads)
    }

    /// Waits for all queued work on the device; timing code calls this at region edges.
    pub fn sync(&self) -> Result<()> {
        <Dispatch as burn::tensor::backend::Backend>::sync(&self.device).map_err(|e| {
            DiffusionError::Backend {
                backend: self.kind.name().into(),
                message: format!("{e:?}"),
            }
        })
    }
}

/// Bytes a GPU backend's memory allocator holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocatorMemory {
    /// Bytes in live allocations (padding included).
    pub in_use: u64,
    /// Bytes reserved from the device (pools keep freed memory for reuse).
    pub reserved: u64,
}

/// Runs `$body` with `$client` bound to the compute client of `$device`'s runtime: `None` on the
/// CPU backend, and when the runtime panics (a runtime that cannot answer is "no figure", never a
/// crash).
macro_rules! with_client {
    ($device:expr, |$client:ident| $body:expr) => {{
        use cubecl::Runtime;
        let run = || match $device {
            DispatchDevice::Wgpu(d) => {
                let $client = cubecl::wgpu::WgpuRuntime::client(d);
                Some($body)
            }
            #[cfg(feature = "cuda")]
            DispatchDevice::Cuda(d) => {
                let $client = cubecl::cuda::CudaRuntime::client(d);
                Some($body)
            }
            #[cfg(feature = "rocm")]
            DispatchDevice::Rocm(d) => {
                let $client = cubecl::hip::HipRuntime::client(d);
                Some($body)
            }
            _ => None,
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .ok()
            .flatten()
    }};
}

impl SelectedDevice {
    /// The allocator's current holdings; `None` on the CPU backend, which has no device memory.
    pub fn allocator_memory(&self) -> Option<AllocatorMemory> {
        let usage = with_client!(&self.device, |client| client.memory_usage().ok())??;
        Some(AllocatorMemory {
            in_use: usage.bytes_in_use + usage.bytes_padding,
            reserved: usage.bytes_reserved,
        })
    }

    /// The largest buffer the device's allocator can hold, where it has one (`None` on the CPU).
    pub fn max_buffer_bytes(&self) -> Option<u64> {
        with_client!(&self.device, |client| client
            .properties()
            .memory
            .max_page_size)
    }

    /// Gives the allocator's unused pooled memory back to the device (nothing on the CPU). burn's
    /// dispatch backend does not forward `memory_cleanup`, so the runtime's client is asked.
    /// Memory that stays pooled is slower to reuse elsewhere, never an error.
    pub fn release_unused_memory(&self) {
        with_client!(&self.device, |client| client.memory_cleanup());
    }
}

/// Chooses and initialises a device. `Auto` takes CUDA where an NVIDIA driver is present, ROCm where
/// the HIP runtime is, else the best hardware wgpu adapter (discrete before integrated), else the CPU.
/// With an index, that device of the backend (`Auto` resolves the backend first).
pub fn select(request: impl Into<DeviceRequest>) -> Result<SelectedDevice> {
    let request = request.into();
    let (kind, allow_software) = resolve(request.backend);
    if kind != BackendKind::Cpu {
        crate::device::kernel_cache::ensure_default();
    }
    let mut selected = pick(kind, request.index, allow_software)?;
    if let DispatchDevice::Wgpu(device) = &selected.device {
        bind_wgpu_device(kind, device, &selected.info.describe())?;
    }
    if kind == BackendKind::Cpu {
        // Fixes the thread count now (the default unless set before), so the name tells the truth.
        set_cpu_threads(None)?;
        cpu_heap::keep_freed();
        selected.info.name = cpu_name();
    }
    Ok(selected)
}

/// What `select` would run on, found without initialising anything (no backend runtime is
/// started and no wgpu device is bound to a graphics API): for showing the choice.
#[derive(Debug, Clone, PartialEq)]
pub struct DevicePreview {
    pub kind: BackendKind,
    pub info: DeviceInfo,
    /// The precision `auto` would use where it is known without the device (f32 on the CPU
    /// backend); on a GPU it is f16 where the device supports it, which takes the device to tell.
    pub precision: Option<Precision>,
}

pub fn preview(request: impl Into<DeviceRequest>) -> Result<DevicePreview> {
    let request = request.into();
    let (kind, allow_software) = resolve(request.backend);
    let selected = pick(kind, request.index, allow_software)?;
    Ok(DevicePreview {
        kind,
        info: selected.info,
        precision: (kind == BackendKind::Cpu).then_some(Precision::F32),
    })
}

/// The backend a request names, or the best one `Auto` finds; and whether a software adapter may
/// serve it (only when asked for by name).
fn resolve(request: BackendRequest) -> (BackendKind, bool) {
    let explicit = match request {
        BackendRequest::Auto => None,
        BackendRequest::Cpu => Some(BackendKind::Cpu),
        BackendRequest::Cuda => Some(BackendKind::Cuda),
        BackendRequest::Rocm => Some(BackendKind::Rocm),
        BackendRequest::Vulkan => Some(BackendKind::Vulkan),
        BackendRequest::Metal => Some(BackendKind::Metal),
        BackendRequest::Dx12 => Some(BackendKind::Dx12),
    };
    if let Some(kind) = explicit {
        return (kind, true);
    }
    for kind in [BackendKind::Cuda, BackendKind::Rocm] {
        if probe(kind).usable {
            return (kind, false);
        }
    }
    let preferred_apis: &[BackendKind] = if cfg!(target_os = "macos") {
        &[BackendKind::Metal]
    } else if cfg!(target_os = "windows") {
        &[BackendKind::Vulkan, BackendKind::Dx12]
    } else {
        &[BackendKind::Vulkan]
    };
    // Best hardware adapter across the platform's APIs: discrete, then integrated, then virtual.
    let mut best: Option<(u8, BackendKind)> = None;
    for &kind in preferred_apis {
        for adapter in wgpu_adapters(kind) {
            if let Some(rank) = adapter.hardware_rank() {
                if best.is_none_or(|(r, _)| rank < r) {
                    best = Some((rank, kind));
                }
            }
        }
    }
    (best.map_or(BackendKind::Cpu, |(_, kind)| kind), false)
}

/// The device `kind` runs on, not yet initialised: device `index` of the backend, or its best.
fn pick(kind: BackendKind, index: Option<usize>, allow_software: bool) -> Result<SelectedDevice> {
    let unavailable = |reason: String| DiffusionError::BackendUnavailable {
        backend: kind.name().into(),
        reason,
    };
    if !kind.built_in() {
        return Err(unavailable(probe(kind).detail));
    }
    // One enumeration serves both the listing and the device it picks.
    let adapters = wgpu_adapters(kind);
    let devices = list_devices(kind, &adapters).map_err(unavailable)?;
    let info = match index {
        Some(i) => devices.get(i).cloned().ok_or_else(|| {
            let listed: Vec<String> = devices
                .iter()
                .map(|d| format!("{}: {}", d.index, d.name))
                .collect();
            DiffusionError::Request(format!(
                "there is no {kind} device {i}; this machine has {} ({}); `sdbench devices` lists them",
                devices.len(),
                listed.join(", ")
            ))
        })?,
        // The best: wgpu adapters by class (software only when the backend was named); the
        // driver's first device otherwise.
        None => devices
            .iter()
            .filter(|d| allow_software || !d.software)
            .min_by_key(|d| class_rank(d.class))
            .cloned()
            .ok_or_else(|| unavailable(format!("no hardware {} adapter found", kind.name())))?,
    };
    let device = match kind {
        BackendKind::Cpu => cpu_device(),
        BackendKind::Cuda | BackendKind::Rocm => native_device(kind, info.index)
            .ok_or_else(|| unavailable("not in this build of SD Bench".into()))?,
        BackendKind::Vulkan | BackendKind::Metal | BackendKind::Dx12 => {
            let adapter = adapters
                .get(info.index)
                .ok_or_else(|| unavailable(format!("{} is gone", info.name)))?;
            DispatchDevice::Wgpu(adapter.wgpu_device())
        }
    };
    Ok(SelectedDevice {
        kind,
        device,
        info,
        memory_limit: None,
        memory_free: None,
    })
}

/// Lower is better: discrete, integrated, virtual GPUs, then the rest (CPU, software).
fn class_rank(class: &str) -> u8 {
    match class {
        DISCRETE => 0,
        INTEGRATED => 1,
        VIRTUAL => 2,
        _ => u8::MAX,
    }
}

const DISCRETE: &str = "discrete GPU";
const INTEGRATED: &str = "integrated GPU";
const VIRTUAL: &str = "virtual GPU";

/// The burn device of a CUDA or ROCm backend this build contains.
fn native_device(kind: BackendKind, index: usize) -> Option<DispatchDevice> {
    let _ = index;
    match kind {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Some(DispatchDevice::Cuda(cubecl::cuda::CudaDevice { index })),
        #[cfg(feature = "rocm")]
        BackendKind::Rocm => Some(DispatchDevice::Rocm(cubecl::hip::AmdDevice { index })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::wgpu_adapters::BOUND_WGPU;
    use super::*;

    #[test]
    fn preview_names_what_select_picks_without_binding_a_device() {
        let cpu = preview(BackendRequest::Cpu).unwrap();
        assert_eq!(cpu.kind, BackendKind::Cpu);
        assert_eq!(cpu.precision, Some(Precision::F32));
        assert_eq!(cpu.info, select(BackendRequest::Cpu).unwrap().info);

        let require_vulkan = std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() == Ok("1");
        match preview(BackendRequest::Vulkan) {
            Ok(vulkan) => {
                assert!(
                    BOUND_WGPU.lock().unwrap().is_empty(),
                    "preview bound a device"
                );
                assert_eq!(vulkan.precision, None);
                let selected = select(BackendRequest::Vulkan).unwrap();
                assert_eq!((vulkan.kind, vulkan.info), (selected.kind, selected.info));
            }
            Err(e) => assert!(!require_vulkan, "no Vulkan adapter: {e}"),
        }

        let auto = preview(BackendRequest::Auto).unwrap();
        let selected = select(BackendRequest::Auto).unwrap();
        assert_eq!((auto.kind, auto.info), (selected.kind, selected.info));
    }

    #[test]
    fn a_device_number_picks_that_listed_device_and_a_missing_one_is_refused() {
        for kind in BackendKind::ALL {
            let status = probe(kind);
            let request = |index| DeviceRequest {
                backend: BackendRequest::from_name(kind.name()).unwrap(),
                index: Some(index),
            };
            for (i, listed) in status.devices.iter().enumerate() {
                assert_eq!(listed.index, i, "{kind}: devices are numbered in order");
                let picked = preview(request(i)).unwrap();
                assert_eq!(&picked.info, listed, "{kind} device {i}");
            }
            if status.usable {
                let missing = status.devices.len();
                let err = preview(request(missing)).unwrap_err();
                assert!(matches!(err, DiffusionError::Request(_)), "{err}");
                let text = err.to_string();
                assert!(
                    text.contains(&format!("no {kind} device {missing}"))
                        && text.contains(&status.devices[0].name),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn a_device_line_names_its_memory_driver_and_bus() {
        let info = DeviceInfo {
            index: 1,
            name: "NVIDIA GeForce RTX 4090".into(),
            class: "NVIDIA GPU",
            driver: Some("CUDA 12.4".into()),
            memory_bytes: Some(24 * (1 << 30)),
            pci_bus: Some("0000:01:00.0".into()),
            software: false,
            pci_vendor: Some(0x10de),
        };
        assert_eq!(
            info.describe(),
            "NVIDIA GeForce RTX 4090 (NVIDIA GPU, 24.0 GiB, driver CUDA 12.4, PCI 0000:01:00.0)"
        );
        assert_eq!(
            native::c_string(b"Radeon RX 7900 XTX\0junk"),
            Some("Radeon RX 7900 XTX".into())
        );
        assert_eq!(native::c_string(b"\0"), None);
        assert_eq!(native::c_string(b"no terminator"), None);
    }

    #[test]
    fn a_backend_left_out_of_the_build_says_so_and_is_never_chosen() {
        for (kind, request) in [
            (BackendKind::Cuda, BackendRequest::Cuda),
            (BackendKind::Rocm, BackendRequest::Rocm),
        ] {
            let status = probe(kind);
            let left_out = status.detail.contains("not in this build");
            assert_eq!(left_out, !kind.built_in(), "{kind}: {}", status.detail);
            if !kind.built_in() {
                assert!(!status.usable && status.devices.is_empty());
                let err = select(request).unwrap_err().to_string();
                assert!(err.contains("not in this build"), "{err}");
                assert_ne!(select(BackendRequest::Auto).unwrap().kind, kind);
            }
        }
    }
}
