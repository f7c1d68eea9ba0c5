//! Driver-library probes through `libloading`: only C entry points that return error codes.

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
unsafe fn symbol<'l, T>(lib: &'l Library, name: &str, what: &str) -> Result<Symbol<'l, T>, String> {
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
