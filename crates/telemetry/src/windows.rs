//! GPUs on Windows, from the device manager's display adapters (SetupAPI): name, vendor, PCI bus,
//! and the driver's version and memory size from the adapter's driver key in the registry. Linux
//! reads the same from sysfs (see `system::drm_gpus`). The parsing is plain Rust, tested on every
//! platform; only `display_adapters` calls Windows.

use crate::reading::Vendor;
use crate::system::GpuInfo;

/// The PCI vendor id in a hardware id such as `PCI\VEN_10DE&DEV_2684&SUBSYS_16F110DE&REV_A1`.
pub fn pci_vendor_id(hardware_id: &str) -> Option<u32> {
    let upper = hardware_id.to_ascii_uppercase();
    let rest = upper.split("VEN_").nth(1)?;
    let hex: String = rest.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
    u32::from_str_radix(&hex, 16).ok()
}

/// The PCI bus id (`0000:01:00.0`, as sysfs, CUDA and Vulkan write it) from SetupAPI's bus number
/// and address (device number in the high word, function in the low word).
pub fn pci_bus_id(bus: u32, address: u32) -> String {
    format!(
        "0000:{bus:02x}:{:02x}.{:x}",
        address >> 16,
        address & 0xffff
    )
}

/// One adapter as the device manager describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct DisplayAdapter {
    pub description: String,
    pub hardware_id: Option<String>,
    pub bus: Option<(u32, u32)>,
    pub driver_provider: Option<String>,
    pub driver_version: Option<String>,
    pub memory_bytes: Option<u64>,
}

impl DisplayAdapter {
    /// The GPU maker, from the PCI vendor id in the hardware id.
    pub fn vendor(&self) -> Option<Vendor> {
        Vendor::from_pci_id(pci_vendor_id(self.hardware_id.as_deref()?)?)
    }

    /// The GPU entry of a result; None for adapters that are not GPUs (Microsoft's Basic Display
    /// Adapter and remote-desktop drivers have no PCI vendor).
    pub fn gpu(&self) -> Option<GpuInfo> {
        let vendor_id = pci_vendor_id(self.hardware_id.as_deref()?)?;
        let vendor = Vendor::from_pci_id(vendor_id)
            .map(|v| v.name().to_string())
            .unwrap_or_else(|| format!("0x{vendor_id:04x}"));
        let driver = self
            .driver_version
            .as_ref()
            .map(|version| match &self.driver_provider {
                Some(provider) => format!("{provider} {version}"),
                None => version.clone(),
            });
        Some(GpuInfo {
            name: self.description.clone(),
            vendor,
            driver,
            vram_bytes: self.memory_bytes,
            pci_bus: self.bus.map(|(bus, address)| pci_bus_id(bus, address)),
        })
    }
}

/// The GPUs the device manager lists (none off Windows).
pub fn gpus() -> Vec<GpuInfo> {
    display_adapters()
        .iter()
        .filter_map(DisplayAdapter::gpu)
        .collect()
}

#[cfg(not(windows))]
pub fn display_adapters() -> Vec<DisplayAdapter> {
    Vec::new()
}

/// Present display adapters, through SetupAPI. Anything it cannot read is left out, never an error:
/// system information is best effort.
#[cfg(windows)]
pub fn display_adapters() -> Vec<DisplayAdapter> {
    use windows_sys::Win32::Devices::DeviceAndDriverInstallation::{
        SetupDiDestroyDeviceInfoList, SetupDiEnumDeviceInfo, SetupDiGetClassDevsW,
        SetupDiOpenDevRegKey, DICS_FLAG_GLOBAL, DIGCF_PRESENT, DIREG_DRV, GUID_DEVCLASS_DISPLAY,
        SPDRP_ADDRESS, SPDRP_BUSNUMBER, SPDRP_DEVICEDESC, SPDRP_HARDWAREID, SP_DEVINFO_DATA,
    };
    use windows_sys::Win32::System::Registry::{RegCloseKey, KEY_READ};

    let mut adapters = Vec::new();
    // SAFETY: a class enumeration with no enumerator or window; the list is destroyed below.
    let set = unsafe {
        SetupDiGetClassDevsW(
            &GUID_DEVCLASS_DISPLAY,
            std::ptr::null(),
            std::ptr::null_mut(),
            DIGCF_PRESENT,
        )
    };
    if set == -1 {
        return adapters;
    }
    for index in 0.. {
        // SAFETY: SP_DEVINFO_DATA is plain data; cbSize must be set before the call.
        let mut data: SP_DEVINFO_DATA = unsafe { std::mem::zeroed() };
        data.cbSize = std::mem::size_of::<SP_DEVINFO_DATA>() as u32;
        // SAFETY: `set` is a valid list and `data` is sized.
        if unsafe { SetupDiEnumDeviceInfo(set, index, &mut data) } == 0 {
            break;
        }
        let Some(description) = registry_property(set, &data, SPDRP_DEVICEDESC)
            .as_deref()
            .and_then(first_string)
        else {
            continue;
        };
        let hardware_id = registry_property(set, &data, SPDRP_HARDWAREID)
            .as_deref()
            .and_then(first_string);
        let bus = registry_property(set, &data, SPDRP_BUSNUMBER)
            .as_deref()
            .and_then(dword)
            .zip(
                registry_property(set, &data, SPDRP_ADDRESS)
                    .as_deref()
                    .and_then(dword),
            );
        let mut adapter = DisplayAdapter {
            description,
            hardware_id,
            bus,
            driver_provider: None,
            driver_version: None,
            memory_bytes: None,
        };
        // SAFETY: opens the adapter's driver key for reading; closed below.
        let key =
            unsafe { SetupDiOpenDevRegKey(set, &data, DICS_FLAG_GLOBAL, 0, DIREG_DRV, KEY_READ) };
        if !key.is_null() && key as isize != -1 {
            adapter.driver_provider = registry_value(key, "ProviderName")
                .as_deref()
                .and_then(first_string);
            adapter.driver_version = registry_value(key, "DriverVersion")
                .as_deref()
                .and_then(first_string);
            adapter.memory_bytes = registry_value(key, "HardwareInformation.qwMemorySize")
                .as_deref()
                .and_then(qword)
                .or_else(|| {
                    registry_value(key, "HardwareInformation.MemorySize")
                        .as_deref()
                        .and_then(dword)
                        .map(u64::from)
                });
            // SAFETY: `key` was opened above.
            unsafe { RegCloseKey(key) };
        }
        adapters.push(adapter);
    }
    // SAFETY: `set` came from SetupDiGetClassDevsW.
    unsafe { SetupDiDestroyDeviceInfoList(set) };
    adapters
}

/// A device's registry property as raw bytes.
#[cfg(windows)]
fn registry_property(
    set: windows_sys::Win32::Devices::DeviceAndDriverInstallation::HDEVINFO,
    data: &windows_sys::Win32::Devices::DeviceAndDriverInstallation::SP_DEVINFO_DATA,
    property: u32,
) -> Option<Vec<u8>> {
    use windows_sys::Win32::Devices::DeviceAndDriverInstallation::SetupDiGetDeviceRegistryPropertyW;
    let mut buffer = vec![0u8; 1024];
    let mut needed = 0u32;
    // SAFETY: the buffer's length is passed; the call writes at most that many bytes.
    let ok = unsafe {
        SetupDiGetDeviceRegistryPropertyW(
            set,
            data,
            property,
            std::ptr::null_mut(),
            buffer.as_mut_ptr(),
            buffer.len() as u32,
            &mut needed,
        )
    };
    (ok != 0).then(|| {
        buffer.truncate(needed as usize);
        buffer
    })
}

/// A registry value of an open key as raw bytes.
#[cfg(windows)]
fn registry_value(key: windows_sys::Win32::System::Registry::HKEY, name: &str) -> Option<Vec<u8>> {
    use windows_sys::Win32::System::Registry::RegQueryValueExW;
    let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
    let mut buffer = vec![0u8; 1024];
    let mut size = buffer.len() as u32;
    // SAFETY: `wide` is NUL-terminated and `size` is the buffer's length.
    let status = unsafe {
        RegQueryValueExW(
            key,
            wide.as_ptr(),
            std::ptr::null(),
            std::ptr::null_mut(),
            buffer.as_mut_ptr(),
            &mut size,
        )
    };
    (status == 0).then(|| {
        buffer.truncate(size as usize);
        buffer
    })
}

/// The first string of a UTF-16 (multi-)string value.
pub fn first_string(bytes: &[u8]) -> Option<String> {
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .take_while(|&unit| unit != 0)
        .collect();
    let text = String::from_utf16_lossy(&units).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// A little-endian 32-bit value.
pub fn dword(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?))
}

/// A little-endian 64-bit value.
pub fn qword(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?))
}

/// Why a GPU's power cannot be read on Windows, for vendors without a reader there (NVIDIA has NVML).
pub fn power_unavailable_reason(vendor: Vendor) -> Option<&'static str> {
    match vendor {
        Vendor::Amd => Some(
            "AMD GPU power on Windows is only available through AMD's ADLX SDK, which SD Bench does not use",
        ),
        Vendor::Intel => Some(
            "Intel GPU power on Windows is only available through Intel's IGCL SDK, which SD Bench does not use",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str) -> Vec<u8> {
        text.encode_utf16()
            .chain([0, 0])
            .flat_map(u16::to_le_bytes)
            .collect()
    }

    #[test]
    fn reads_vendor_from_hardware_ids() {
        assert_eq!(
            pci_vendor_id(r"PCI\VEN_10DE&DEV_2684&SUBSYS_16F110DE&REV_A1"),
            Some(0x10de)
        );
        assert_eq!(pci_vendor_id(r"pci\ven_1002&dev_744c"), Some(0x1002));
        assert_eq!(pci_vendor_id(r"ROOT\BasicDisplay"), None);
    }

    #[test]
    fn bus_ids_match_other_apis() {
        assert_eq!(pci_bus_id(1, 0), "0000:01:00.0");
        assert_eq!(pci_bus_id(0x65, (0x1f << 16) | 3), "0000:65:1f.3");
    }

    #[test]
    fn decodes_registry_values() {
        let multi = [utf16(r"PCI\VEN_8086&DEV_56A0"), utf16(r"PCI\VEN_8086")].concat();
        assert_eq!(
            first_string(&multi).as_deref(),
            Some(r"PCI\VEN_8086&DEV_56A0")
        );
        assert_eq!(first_string(&utf16("")), None);
        assert_eq!(dword(&[1, 0, 0, 0]), Some(1));
        assert_eq!(dword(&[1, 0]), None);
        assert_eq!(qword(&(16u64 << 30).to_le_bytes()), Some(16 << 30));
    }

    #[test]
    fn adapters_become_gpus() {
        let adapter = DisplayAdapter {
            description: "NVIDIA GeForce RTX 4090".into(),
            hardware_id: Some(r"PCI\VEN_10DE&DEV_2684".into()),
            bus: Some((1, 0)),
            driver_provider: Some("NVIDIA".into()),
            driver_version: Some("32.0.15.6094".into()),
            memory_bytes: Some(24 << 30),
        };
        let gpu = adapter.gpu().unwrap();
        assert_eq!(gpu.vendor, "NVIDIA");
        assert_eq!(gpu.driver.as_deref(), Some("NVIDIA 32.0.15.6094"));
        assert_eq!(gpu.pci_bus.as_deref(), Some("0000:01:00.0"));
        assert_eq!(gpu.vram_bytes, Some(24 << 30));
        assert_eq!(adapter.vendor(), Some(Vendor::Nvidia));
        assert_eq!(power_unavailable_reason(Vendor::Nvidia), None);

        let basic = DisplayAdapter {
            description: "Microsoft Basic Display Adapter".into(),
            hardware_id: Some(r"ROOT\BasicDisplay".into()),
            bus: None,
            driver_provider: None,
            driver_version: None,
            memory_bytes: None,
        };
        assert_eq!(basic.gpu(), None);
    }
}
