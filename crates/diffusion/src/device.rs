//! Backend probing and device selection. Probing never crashes the process: the CUDA and ROCm
//! backends abort when their driver libraries are missing, so those libraries are looked for and
//! asked for a device count (through `libloading`) before burn touches them; wgpu adapters are
//! enumerated before one is initialised.
//!
//! CUDA and ROCm are cargo features (`cuda`, `rocm`, on by default): the test build leaves them out,
//! since they cannot run without their drivers and they double the compile time of burn's
//! dispatch layer. A build without one still probes its driver and says the backend is not built in.

use std::fmt;
use std::sync::OnceLock;

use burn::backend::wgpu::{graphics, init_setup, RuntimeOptions, WgpuDevice};
use burn::tensor::DType;
use burn::{Dispatch, DispatchDevice};

use crate::error::{DiffusionError, Result};
use crate::io::weights::Precision;

/// What `--backend` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendRequest {
    Auto,
    Cpu,
    Cuda,
    Rocm,
    Vulkan,
    Metal,
    Dx12,
}

impl BackendRequest {
    pub const NAMES: &'static [&'static str] =
        &["auto", "cpu", "cuda", "rocm", "vulkan", "metal", "dx12"];

    pub fn from_name(name: &str) -> Result<Self> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "auto" => BackendRequest::Auto,
            "cpu" => BackendRequest::Cpu,
            "cuda" => BackendRequest::Cuda,
            "rocm" | "hip" => BackendRequest::Rocm,
            "vulkan" => BackendRequest::Vulkan,
            "metal" => BackendRequest::Metal,
            "dx12" => BackendRequest::Dx12,
            _ => {
                return Err(DiffusionError::Request(format!(
                    "unknown backend `{name}`; choose one of: {}",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }
}

/// A concrete backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    Cpu,
    Cuda,
    Rocm,
    Vulkan,
    Metal,
    Dx12,
}

impl BackendKind {
    pub const ALL: [BackendKind; 6] = [
        BackendKind::Cuda,
        BackendKind::Rocm,
        BackendKind::Vulkan,
        BackendKind::Metal,
        BackendKind::Dx12,
        BackendKind::Cpu,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Rocm => "rocm",
            BackendKind::Vulkan => "vulkan",
            BackendKind::Metal => "metal",
            BackendKind::Dx12 => "dx12",
        }
    }

    /// Whether this build contains the backend (see the module docs on the `cuda` and `rocm` features).
    pub fn built_in(self) -> bool {
        let left_out = (self == BackendKind::Cuda && cfg!(not(feature = "cuda")))
            || (self == BackendKind::Rocm && cfg!(not(feature = "rocm")));
        !left_out
    }

    fn wgpu_backend(self) -> Option<wgpu::Backend> {
        match self {
            BackendKind::Vulkan => Some(wgpu::Backend::Vulkan),
            BackendKind::Metal => Some(wgpu::Backend::Metal),
            BackendKind::Dx12 => Some(wgpu::Backend::Dx12),
            _ => None,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One backend's probe result, for `sdbench devices` and the UI.
#[derive(Debug, Clone)]
pub struct BackendStatus {
    pub kind: BackendKind,
    pub usable: bool,
    /// Why it is not usable, or what was found.
    pub detail: String,
    /// Devices found, best first.
    pub devices: Vec<String>,
}

/// The device a pipeline runs on.
#[derive(Debug, Clone)]
pub struct SelectedDevice {
    pub kind: BackendKind,
    pub device: DispatchDevice,
    /// A human-readable name (GPU model, or the CPU backend's name).
    pub name: String,
    /// Whether the device is a software rasteriser / CPU implementation of a GPU API.
    pub software: bool,
    /// The GPU's PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel…); `None` on the CPU backend.
    pub pci_vendor: Option<u32>,
}

impl SelectedDevice {
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
            Precision::F16 => {
                let usage = <Dispatch as burn::tensor::backend::Backend>::dtype_usage(
                    &self.device,
                    DType::F16,
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

impl SelectedDevice {
    /// The allocator's current holdings; `None` on the CPU backend, which has no device memory.
    pub fn allocator_memory(&self) -> Option<AllocatorMemory> {
        use cubecl::Runtime;
        let query = || match &self.device {
            DispatchDevice::Wgpu(d) => cubecl::wgpu::WgpuRuntime::client(d).memory_usage().ok(),
            #[cfg(feature = "cuda")]
            DispatchDevice::Cuda(d) => cubecl::cuda::CudaRuntime::client(d).memory_usage().ok(),
            #[cfg(feature = "rocm")]
            DispatchDevice::Rocm(d) => cubecl::hip::HipRuntime::client(d).memory_usage().ok(),
            _ => None,
        };
        // A runtime that cannot answer is "no figure", never a crash.
        let usage = std::panic::catch_unwind(std::panic::AssertUnwindSafe(query))
            .ok()
            .flatten()?;
        Some(AllocatorMemory {
            in_use: usage.bytes_in_use + usage.bytes_padding,
            reserved: usage.bytes_reserved,
        })
    }
}

/// Probes every backend without initialising any of them.
pub fn probe_all() -> Vec<BackendStatus> {
    BackendKind::ALL.iter().map(|&k| probe(k)).collect()
}

pub fn probe(kind: BackendKind) -> BackendStatus {
    let (usable, detail, devices) = match kind {
        BackendKind::Cpu => (
            true,
            "burn flex (pure Rust, always available)".to_string(),
            vec![cpu_name()],
        ),
        BackendKind::Cuda => match native::cuda_device_count() {
            Ok(0) => (
                false,
                "NVIDIA driver found but it reports no CUDA device".into(),
                vec![],
            ),
            Ok(n) => match native::nvrtc_present() {
                Ok(()) => (
                    true,
                    format!("NVIDIA driver with {n} device(s)"),
                    (0..n).map(|i| format!("cuda:{i}")).collect(),
                ),
                Err(why) => (false, why, vec![]),
            },
            Err(why) => (false, why, vec![]),
        },
        BackendKind::Rocm => match native::hip_device_count() {
            Ok(0) => (
                false,
                "HIP runtime found but it reports no GPU".into(),
                vec![],
            ),
            Ok(n) => (
                true,
                format!("HIP runtime with {n} device(s)"),
                (0..n).map(|i| format!("rocm:{i}")).collect(),
            ),
            Err(why) => (false, why, vec![]),
        },
        BackendKind::Vulkan | BackendKind::Metal | BackendKind::Dx12 => {
            let adapters = wgpu_adapters(kind);
            if adapters.is_empty() {
                (
                    false,
                    format!(
                        "no {} adapter found (no driver, or not this platform)",
                        kind.name()
                    ),
                    vec![],
                )
            } else {
                let names = adapters.iter().map(|a| a.describe()).collect();
                (true, format!("{} adapter(s)", adapters.len()), names)
            }
        }
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

/// Chooses and initialises a device. `Auto` takes CUDA where an NVIDIA driver is present, ROCm where
/// the HIP runtime is, else the best hardware wgpu adapter (discrete before integrated), else the CPU.
pub fn select(request: BackendRequest) -> Result<SelectedDevice> {
    let (kind, allow_software) = resolve(request);
    let (mut selected, wgpu_describe) = pick(kind, allow_software)?;
    if let (Some(describe), DispatchDevice::Wgpu(device)) = (wgpu_describe, &selected.device) {
        bind_wgpu_device(kind, device, &describe)?;
    }
    if kind == BackendKind::Cpu {
        // Fixes the thread count now (the default unless set before), so the name tells the truth.
        set_cpu_threads(None)?;
        selected.name = cpu_name();
    }
    Ok(selected)
}

/// What `select` would run on, found without initialising anything (no backend runtime is
/// started and no wgpu device is bound to a graphics API): for showing the choice.
#[derive(Debug, Clone, PartialEq)]
pub struct DevicePreview {
    pub kind: BackendKind,
    pub name: String,
    pub software: bool,
    /// The precision `auto` would use where it is known without the device (f32 on the CPU
    /// backend); on a GPU it is f16 where the device supports it, which takes the device to tell.
    pub precision: Option<Precision>,
}

pub fn preview(request: BackendRequest) -> Result<DevicePreview> {
    let (kind, allow_software) = resolve(request);
    let (selected, _) = pick(kind, allow_software)?;
    Ok(DevicePreview {
        kind,
        name: selected.name,
        software: selected.software,
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

/// The CPU backend's device, where components placed on the CPU run beside another device.
pub fn cpu_device() -> DispatchDevice {
    DispatchDevice::Flex(Default::default())
}

/// The device `kind` runs on, not yet initialised; for a wgpu device, also the adapter's
/// description, for binding it to its graphics API before use.
fn pick(kind: BackendKind, allow_software: bool) -> Result<(SelectedDevice, Option<String>)> {
    let unavailable = |reason: String| DiffusionError::BackendUnavailable {
        backend: kind.name().into(),
        reason,
    };
    match kind {
        BackendKind::Cpu => Ok((
            SelectedDevice {
                kind,
                device: cpu_device(),
                name: cpu_name(),
                software: false,
                pci_vendor: None,
            },
            None,
        )),
        BackendKind::Cuda | BackendKind::Rocm => {
            // Only touch the backend once its driver library answered with a device.
            let status = probe(kind);
            if !status.usable {
                return Err(unavailable(status.detail));
            }
            let (device, name, vendor) = native_device(kind)
                .ok_or_else(|| unavailable("not in this build of SD Bench".into()))?;
            Ok((
                SelectedDevice {
                    kind,
                    device,
                    name: name.into(),
                    software: false,
                    pci_vendor: Some(vendor),
                },
                None,
            ))
        }
        BackendKind::Vulkan | BackendKind::Metal | BackendKind::Dx12 => {
            let adapters = wgpu_adapters(kind);
            let chosen = adapters
                .iter()
                .filter(|a| allow_software || a.hardware_rank().is_some())
                .min_by_key(|a| a.hardware_rank().unwrap_or(u8::MAX))
                .ok_or_else(|| unavailable(format!("no {} adapter found", kind.name())))?;
            Ok((
                SelectedDevice {
                    kind,
                    device: DispatchDevice::Wgpu(chosen.wgpu_device()),
                    name: chosen.info.name.clone(),
                    software: chosen.info.device_type == wgpu::DeviceType::Cpu,
                    pci_vendor: Some(chosen.info.vendor),
                },
                Some(chosen.describe()),
            ))
        }
    }
}

/// The burn device, name and PCI vendor of a CUDA or ROCm backend this build contains.
fn native_device(kind: BackendKind) -> Option<(DispatchDevice, &'static str, u32)> {
    match kind {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Some((
            DispatchDevice::Cuda(Default::default()),
            "CUDA device 0",
            0x10de,
        )),
        #[cfg(feature = "rocm")]
        BackendKind::Rocm => Some((
            DispatchDevice::Rocm(Default::default()),
            "ROCm device 0",
            0x1002,
        )),
        _ => None,
    }
}

/// wgpu devices already bound to a graphics API in this process (cubecl allows one binding each).
static BOUND_WGPU: std::sync::Mutex<Vec<(WgpuDevice, BackendKind)>> =
    std::sync::Mutex::new(Vec::new());

/// Binds `device` to `kind`'s graphics API before any tensor touches it, once per process.
fn bind_wgpu_device(kind: BackendKind, device: &WgpuDevice, describe: &str) -> Result<()> {
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
struct Adapter {
    info: wgpu::AdapterInfo,
    index_in_type: usize,
}

impl Adapter {
    /// Lower is better; `None` for software and unknown adapters.
    fn hardware_rank(&self) -> Option<u8> {
        match self.info.device_type {
            wgpu::DeviceType::DiscreteGpu => Some(0),
            wgpu::DeviceType::IntegratedGpu => Some(1),
            wgpu::DeviceType::VirtualGpu => Some(2),
            _ => None,
        }
    }

    fn wgpu_device(&self) -> WgpuDevice {
        match self.info.device_type {
            wgpu::DeviceType::DiscreteGpu => WgpuDevice::DiscreteGpu(self.index_in_type),
            wgpu::DeviceType::IntegratedGpu => WgpuDevice::IntegratedGpu(self.index_in_type),
            wgpu::DeviceType::VirtualGpu => WgpuDevice::VirtualGpu(self.index_in_type),
            _ => WgpuDevice::Cpu,
        }
    }

    fn describe(&self) -> String {
        let kind = match self.info.device_type {
            wgpu::DeviceType::DiscreteGpu => "discrete GPU",
            wgpu::DeviceType::IntegratedGpu => "integrated GPU",
            wgpu::DeviceType::VirtualGpu => "virtual GPU",
            wgpu::DeviceType::Cpu => "software (CPU)",
            wgpu::DeviceType::Other => "other",
        };
        format!(
            "{} ({kind}, driver {} {})",
            self.info.name, self.info.driver, self.info.driver_info
        )
        .replace("  ", " ")
    }
}

fn wgpu_adapters(kind: BackendKind) -> Vec<Adapter> {
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
        .map(|info| {
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
                index_in_type,
            }
        })
        .collect()
}

fn cpu_name() -> String {
    match cpu_threads() {
        1 => "CPU (1 thread)".to_string(),
        n => format!("CPU ({n} threads)"),
    }
}

/// Worker threads of the CPU backend in this process, once set (burn-flex runs its kernels on
/// rayon's global pool, which cannot be resized once built).
static CPU_THREADS: OnceLock<usize> = OnceLock::new();

/// One thread per physical core: a second hardware thread on a core adds little to these
/// compute-bound kernels and slows the first.
pub fn default_cpu_threads() -> usize {
    num_cpus::get_physical().max(1)
}

/// Sets the CPU backend's worker threads for this process (`None`: one per physical core) and
/// returns the count in effect. The first call, or the first CPU device selected, fixes it; a later
/// call asking for another count is refused.
pub fn set_cpu_threads(requested: Option<usize>) -> Result<usize> {
    if requested == Some(0) {
        return Err(DiffusionError::Request(
            "the CPU thread count must be at least 1".into(),
        ));
    }
    let wanted = requested.unwrap_or_else(default_cpu_threads);
    let in_effect = *CPU_THREADS.get_or_init(|| {
        match rayon::ThreadPoolBuilder::new()
            .num_threads(wanted)
            .build_global()
        {
            Ok(()) => wanted,
            // Something ran on the pool before: it has rayon's default size.
            Err(_) => rayon::current_num_threads(),
        }
    });
    match requested {
        Some(n) if n != in_effect => Err(DiffusionError::Request(format!(
            "the CPU backend already runs on {in_effect} threads in this process; \
             it cannot switch to {n} (start a new process to use another count)"
        ))),
        _ => Ok(in_effect),
    }
}

/// The CPU backend's worker threads: the count set, or the one the first CPU run will take.
pub fn cpu_threads() -> usize {
    CPU_THREADS
        .get()
        .copied()
        .unwrap_or_else(default_cpu_threads)
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

/// Driver-library probes through `libloading`: only C entry points that return error codes.
mod native {
    use libloading::{Library, Symbol};

    fn load_first(names: &[String]) -> Result<Library, String> {
        let mut last = String::new();
        for name in names {
            // SAFETY: loading a vendor driver library runs its initialisers, which is what the
            // backend itself would do; no symbol is called unless it resolves.
            match unsafe { Library::new(name) } {
                Ok(lib) => return Ok(lib),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!("none of {names:?} could be loaded ({last})"))
    }

    fn cuda_driver_names() -> Vec<String> {
        if cfg!(windows) {
            vec!["nvcuda.dll".into()]
        } else {
            vec!["libcuda.so.1".into(), "libcuda.so".into()]
        }
    }

    pub fn cuda_device_count() -> Result<usize, String> {
        let lib = load_first(&cuda_driver_names()).map_err(|e| format!("no NVIDIA driver: {e}"))?;
        // SAFETY: signatures from cuda.h: CUresult cuInit(unsigned int), cuDeviceGetCount(int*).
        unsafe {
            let init: Symbol<unsafe extern "C" fn(u32) -> i32> = lib
                .get(b"cuInit\0")
                .map_err(|e| format!("NVIDIA driver lacks cuInit: {e}"))?;
            let count: Symbol<unsafe extern "C" fn(*mut i32) -> i32> = lib
                .get(b"cuDeviceGetCount\0")
                .map_err(|e| format!("NVIDIA driver lacks cuDeviceGetCount: {e}"))?;
            let code = init(0);
            if code != 0 {
                return Err(format!(
                    "the NVIDIA driver failed to initialise (CUresult {code})"
                ));
            }
            let mut n = 0i32;
            let code = count(&mut n);
            if code != 0 {
                return Err(format!(
                    "the NVIDIA driver could not count devices (CUresult {code})"
                ));
            }
            Ok(n.max(0) as usize)
        }
    }

    /// The CUDA backend compiles its kernels with NVRTC at run time.
    pub fn nvrtc_present() -> Result<(), String> {
        let names: Vec<String> = if cfg!(windows) {
            [
                "nvrtc64_130_0.dll",
                "nvrtc64_120_0.dll",
                "nvrtc64_112_0.dll",
                "nvrtc64_110_0.dll",
                "nvrtc.dll",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        } else {
            [
                "libnvrtc.so",
                "libnvrtc.so.13",
                "libnvrtc.so.12",
                "libnvrtc.so.11.2",
                "libnvrtc.so.11",
                "libnvrtc.so.1",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        };
        load_first(&names)
            .map(|_| ())
            .map_err(|e| format!("NVIDIA driver present but the CUDA runtime compiler (NVRTC) is missing; install the CUDA toolkit or use --backend vulkan: {e}"))
    }

    pub fn hip_device_count() -> Result<usize, String> {
        let names: Vec<String> = if cfg!(windows) {
            vec![
                "amdhip64.dll".into(),
                "amdhip64_6.dll".into(),
                "amdhip64_7.dll".into(),
            ]
        } else {
            let mut names = Vec::new();
            for root in ["ROCM_PATH", "HIP_PATH"]
                .iter()
                .filter_map(|v| std::env::var(v).ok())
            {
                names.push(format!("{root}/lib/libamdhip64.so"));
            }
            names.extend([
                "libamdhip64.so".into(),
                "libamdhip64.so.7".into(),
                "libamdhip64.so.6".into(),
            ]);
            names
        };
        let lib = load_first(&names).map_err(|e| format!("no HIP runtime (ROCm): {e}"))?;
        // SAFETY: hipError_t hipGetDeviceCount(int*) from hip_runtime_api.h.
        unsafe {
            let count: Symbol<unsafe extern "C" fn(*mut i32) -> i32> = lib
                .get(b"hipGetDeviceCount\0")
                .map_err(|e| format!("HIP runtime lacks hipGetDeviceCount: {e}"))?;
            let mut n = 0i32;
            let code = count(&mut n);
            if code != 0 {
                return Err(format!(
                    "the HIP runtime found no usable GPU (hipError {code})"
                ));
            }
            Ok(n.max(0) as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_names_what_select_picks_without_binding_a_device() {
        let cpu = preview(BackendRequest::Cpu).unwrap();
        assert_eq!(cpu.kind, BackendKind::Cpu);
        assert_eq!(cpu.precision, Some(Precision::F32));
        assert_eq!(cpu.name, select(BackendRequest::Cpu).unwrap().name);

        let require_vulkan = std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() == Ok("1");
        match preview(BackendRequest::Vulkan) {
            Ok(vulkan) => {
                assert!(
                    BOUND_WGPU.lock().unwrap().is_empty(),
                    "preview bound a device"
                );
                assert_eq!(vulkan.precision, None);
                let selected = select(BackendRequest::Vulkan).unwrap();
                assert_eq!(
                    (vulkan.kind, vulkan.name, vulkan.software),
                    (selected.kind, selected.name, selected.software)
                );
            }
            Err(e) => assert!(!require_vulkan, "no Vulkan adapter: {e}"),
        }

        let auto = preview(BackendRequest::Auto).unwrap();
        let selected = select(BackendRequest::Auto).unwrap();
        assert_eq!((auto.kind, auto.name), (selected.kind, selected.name));
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
