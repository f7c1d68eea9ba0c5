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

/// A backend and, optionally, which of its devices (`--device N`: the number `sdbench devices`
/// lists; without one, the backend's best device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceRequest {
    pub backend: BackendRequest,
    pub index: Option<usize>,
}

impl From<BackendRequest> for DeviceRequest {
    fn from(backend: BackendRequest) -> Self {
        DeviceRequest {
            backend,
            index: None,
        }
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
fn list_devices(
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

/// Chooses and initialises a device. `Auto` takes CUDA where an NVIDIA driver is present, ROCm where
/// the HIP runtime is, else the best hardware wgpu adapter (discrete before integrated), else the CPU.
/// With an index, that device of the backend (`Auto` resolves the backend first).
pub fn select(request: impl Into<DeviceRequest>) -> Result<SelectedDevice> {
    let request = request.into();
    let (kind, allow_software) = resolve(request.backend);
    if kind != BackendKind::Cpu {
        crate::kernel_cache::ensure_default();
    }
    let mut selected = pick(kind, request.index, allow_software)?;
    if let DispatchDevice::Wgpu(device) = &selected.device {
        bind_wgpu_device(kind, device, &selected.info.describe())?;
    }
    if kind == BackendKind::Cpu {
        // Fixes the thread count now (the default unless set before), so the name tells the truth.
        set_cpu_threads(None)?;
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

/// The CPU backend's device, where components placed on the CPU run beside another device.
pub fn cpu_device() -> DispatchDevice {
    DispatchDevice::Flex(Default::default())
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
    /// Its place in `wgpu_adapters`' list: the `--device` number.
    index: usize,
    index_in_type: usize,
}

impl Adapter {
    /// Lower is better; `None` for software and unknown adapters.
    fn hardware_rank(&self) -> Option<u8> {
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

    fn wgpu_device(&self) -> WgpuDevice {
        match self.info.device_type {
            wgpu::DeviceType::DiscreteGpu => WgpuDevice::DiscreteGpu(self.index_in_type),
            wgpu::DeviceType::IntegratedGpu => WgpuDevice::IntegratedGpu(self.index_in_type),
            wgpu::DeviceType::VirtualGpu => WgpuDevice::VirtualGpu(self.index_in_type),
            _ => WgpuDevice::Cpu,
        }
    }

    fn device_info(&self) -> DeviceInfo {
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

    use super::DeviceInfo;

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

    /// What a driver entry point that fills a C string wrote, up to its NUL.
    pub(super) fn c_string(buffer: &[u8]) -> Option<String> {
        let end = buffer.iter().position(|&b| b == 0)?;
        let text = String::from_utf8_lossy(&buffer[..end]).trim().to_string();
        (!text.is_empty()).then_some(text)
    }

    /// A driver entry point that writes a C string about a device: (buffer, its length, device).
    type TextQuery = unsafe extern "C" fn(*mut u8, i32, i32) -> i32;

    /// What `query` writes about `device`, or `None` when it fails or writes nothing.
    unsafe fn ask_text(query: &Symbol<TextQuery>, device: i32) -> Option<String> {
        let mut buffer = [0u8; 256];
        // SAFETY: the caller resolved `query` with this signature; the buffer outlives the call
        // and its length is passed.
        let code = unsafe { query(buffer.as_mut_ptr(), buffer.len() as i32, device) };
        if code == 0 {
            c_string(&buffer)
        } else {
            None
        }
    }

    /// A NUL-terminated symbol of `lib`, or a message naming what the driver lacks.
    unsafe fn symbol<'l, T>(
        lib: &'l Library,
        name: &str,
        what: &str,
    ) -> Result<Symbol<'l, T>, String> {
        let c_name = format!("{name}\0");
        // SAFETY: the caller gives the C signature `T` of `name`.
        unsafe { lib.get(c_name.as_bytes()) }.map_err(|e| format!("{what} lacks {name}: {e}"))
    }

    /// Every CUDA device in the driver's order (the ordinal burn's CUDA backend takes), with its
    /// name, memory and PCI bus id. Properties the driver does not answer are left out.
    pub fn cuda_devices() -> Result<Vec<DeviceInfo>, String> {
        let lib = load_first(&cuda_driver_names()).map_err(|e| format!("no NVIDIA driver: {e}"))?;
        let what = "the NVIDIA driver";
        // SAFETY: signatures from cuda.h: CUresult cuInit(unsigned int), cuDeviceGetCount(int*),
        // cuDeviceGet(CUdevice*, int), cuDeviceGetName(char*, int, CUdevice),
        // cuDeviceTotalMem_v2(size_t*, CUdevice), cuDeviceGetPCIBusId(char*, int, CUdevice),
        // cuDriverGetVersion(int*); CUdevice is an int. Buffers outlive the calls and their
        // lengths are passed.
        unsafe {
            let init: Symbol<unsafe extern "C" fn(u32) -> i32> = symbol(&lib, "cuInit", what)?;
            let count: Symbol<unsafe extern "C" fn(*mut i32) -> i32> =
                symbol(&lib, "cuDeviceGetCount", what)?;
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
            let get: Option<Symbol<unsafe extern "C" fn(*mut i32, i32) -> i32>> =
                symbol(&lib, "cuDeviceGet", what).ok();
            let name: Option<Symbol<TextQuery>> = symbol(&lib, "cuDeviceGetName", what).ok();
            let memory: Option<Symbol<unsafe extern "C" fn(*mut usize, i32) -> i32>> =
                symbol(&lib, "cuDeviceTotalMem_v2", what).ok();
            let bus: Option<Symbol<TextQuery>> = symbol(&lib, "cuDeviceGetPCIBusId", what).ok();
            let version: Option<Symbol<unsafe extern "C" fn(*mut i32) -> i32>> =
                symbol(&lib, "cuDriverGetVersion", what).ok();
            let driver = version.and_then(|f| {
                let mut v = 0i32;
                (f(&mut v) == 0 && v > 0).then(|| format!("CUDA {}.{}", v / 1000, (v % 1000) / 10))
            });
            let mut devices = Vec::new();
            for ordinal in 0..n.max(0) {
                let handle = match &get {
                    Some(get) => {
                        let mut handle = 0i32;
                        (get(&mut handle, ordinal) == 0).then_some(handle)
                    }
                    None => None,
                };
                let text = |f: &Option<Symbol<TextQuery>>| ask_text(f.as_ref()?, handle?);
                let memory_bytes = match (&memory, handle) {
                    (Some(f), Some(handle)) => {
                        let mut bytes = 0usize;
                        (f(&mut bytes, handle) == 0 && bytes > 0).then_some(bytes as u64)
                    }
                    _ => None,
                };
                devices.push(DeviceInfo {
                    index: ordinal as usize,
                    name: text(&name).unwrap_or_else(|| format!("CUDA device {ordinal}")),
                    class: "NVIDIA GPU",
                    driver: driver.clone(),
                    memory_bytes,
                    pci_bus: text(&bus),
                    software: false,
                    pci_vendor: Some(0x10de),
                });
            }
            Ok(devices)
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

    /// Every HIP device in the runtime's order (the ordinal burn's ROCm backend takes), with its
    /// name, memory and PCI bus id.
    pub fn hip_devices() -> Result<Vec<DeviceInfo>, String> {
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
        let what = "the HIP runtime";
        // SAFETY: signatures from hip_runtime_api.h: hipGetDeviceCount(int*),
        // hipDeviceGetName(char*, int, hipDevice_t), hipDeviceTotalMem(size_t*, hipDevice_t),
        // hipDeviceGetPCIBusId(char*, int, int), hipRuntimeGetVersion(int*); hipDevice_t is the
        // device ordinal (an int). Buffers outlive the calls and their lengths are passed.
        unsafe {
            let count: Symbol<unsafe extern "C" fn(*mut i32) -> i32> =
                symbol(&lib, "hipGetDeviceCount", what)?;
            let mut n = 0i32;
            let code = count(&mut n);
            if code != 0 {
                return Err(format!(
                    "the HIP runtime found no usable GPU (hipError {code})"
                ));
            }
            let name: Option<Symbol<TextQuery>> = symbol(&lib, "hipDeviceGetName", what).ok();
            let memory: Option<Symbol<unsafe extern "C" fn(*mut usize, i32) -> i32>> =
                symbol(&lib, "hipDeviceTotalMem", what).ok();
            let bus: Option<Symbol<TextQuery>> = symbol(&lib, "hipDeviceGetPCIBusId", what).ok();
            let version: Option<Symbol<unsafe extern "C" fn(*mut i32) -> i32>> =
                symbol(&lib, "hipRuntimeGetVersion", what).ok();
            // HIP_VERSION = major * 10^7 + minor * 10^5 + patch.
            let driver = version.and_then(|f| {
                let mut v = 0i32;
                (f(&mut v) == 0 && v > 0).then(|| {
                    format!(
                        "HIP {}.{}.{}",
                        v / 10_000_000,
                        (v / 100_000) % 100,
                        v % 100_000
                    )
                })
            });
            let mut devices = Vec::new();
            for ordinal in 0..n.max(0) {
                let text = |f: &Option<Symbol<TextQuery>>| ask_text(f.as_ref()?, ordinal);
                let memory_bytes = memory.as_ref().and_then(|f| {
                    let mut bytes = 0usize;
                    (f(&mut bytes, ordinal) == 0 && bytes > 0).then_some(bytes as u64)
                });
                devices.push(DeviceInfo {
                    index: ordinal as usize,
                    name: text(&name).unwrap_or_else(|| format!("HIP device {ordinal}")),
                    class: "AMD GPU",
                    driver: driver.clone(),
                    memory_bytes,
                    pci_bus: text(&bus),
                    software: false,
                    pci_vendor: Some(0x1002),
                });
            }
            Ok(devices)
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
