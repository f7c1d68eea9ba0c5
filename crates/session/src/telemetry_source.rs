//! Which telemetry source reads the device a model runs on: the benchmark's power and VRAM
//! figures and the fit check's free memory both come from it.

use sdbench_diffusion::{BackendKind, DeviceInfo, SelectedDevice};
use sdbench_telemetry::{normalize_pci_bus, SourceInfo, Unavailable, Vendor};

/// Which vendor's power reading describes the device the benchmark ran on: the device's PCI
/// vendor id, else its name (some drivers report no id). Software rasterisers (lavapipe) and the
/// CPU backend run on the CPU package.
pub fn device_vendor(device: &SelectedDevice) -> Option<Vendor> {
    if device.info.software || device.kind == BackendKind::Cpu {
        return Some(Vendor::Cpu);
    }
    if let Some(vendor) = device.info.pci_vendor.and_then(Vendor::from_pci_id) {
        return Some(vendor);
    }
    let name = device.info.name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if has(&["nvidia", "geforce", "quadro", "tesla", "rtx"]) {
        Some(Vendor::Nvidia)
    } else if has(&["amd", "radeon"]) {
        Some(Vendor::Amd)
    } else if has(&["intel"]) {
        Some(Vendor::Intel)
    } else if has(&["apple"]) {
        Some(Vendor::Apple)
    } else {
        None
    }
}

/// The telemetry source for the benchmark device, or why there is none. The card's PCI bus id
/// decides where both sides know it, so a two-GPU machine reads the card that ran; otherwise a lone
/// source of the vendor, or the one with the device's exact name. Several candidates and nothing
/// to tell them apart is "no figure": power from the wrong card would be worse.
pub fn choose_source<'a>(
    vendor: Option<Vendor>,
    device: &DeviceInfo,
    sources: &'a [SourceInfo],
    unavailable: &[Unavailable],
) -> Result<&'a SourceInfo, String> {
    let Some(vendor) = vendor else {
        return Err(format!("cannot tell which vendor made `{}`", device.name));
    };
    let candidates: Vec<&SourceInfo> = sources.iter().filter(|s| s.vendor == vendor).collect();
    let device_bus = device.pci_bus.as_deref().map(normalize_pci_bus);
    if let Some(bus) = &device_bus {
        if let Some(same_card) = candidates
            .iter()
            .find(|s| s.pci_bus.as_deref().map(normalize_pci_bus).as_ref() == Some(bus))
        {
            return Ok(same_card);
        }
    }
    if let [only] = candidates.as_slice() {
        return Ok(only);
    }
    let lower = device.name.to_ascii_lowercase();
    let named: Vec<&&SourceInfo> = candidates
        .iter()
        .filter(|s| !lower.is_empty() && s.device.to_ascii_lowercase() == lower)
        .collect();
    if let [only] = named.as_slice() {
        return Ok(only);
    }
    if candidates.len() > 1 {
        let listed: Vec<String> = candidates
            .iter()
            .map(|s| match &s.pci_bus {
                Some(bus) => format!("{} at {bus}", s.device),
                None => s.device.clone(),
            })
            .collect();
        return Err(format!(
            "{} {} readers ({}) and none is known to be `{}`{}; no figure rather than another card's",
            candidates.len(),
            vendor.name(),
            listed.join(", "),
            device.name,
            match &device.pci_bus {
                Some(bus) => format!(" at {bus}"),
                None => " (its driver gives no PCI bus id)".into(),
            }
        ));
    }
    let reasons: Vec<String> = unavailable
        .iter()
        .filter(|u| u.vendor == vendor)
        .map(|u| format!("{}: {}", u.device, u.reason))
        .collect();
    Err(if reasons.is_empty() {
        format!(
            "no {} power or memory reader found on this system",
            vendor.name()
        )
    } else {
        reasons.join("; ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(name: &str, bus: Option<&str>) -> DeviceInfo {
        DeviceInfo {
            index: 1,
            name: name.into(),
            class: "NVIDIA GPU",
            driver: None,
            memory_bytes: None,
            pci_bus: bus.map(Into::into),
            software: false,
            pci_vendor: Some(0x10de),
        }
    }

    fn nvml(index: usize, name: &str, bus: &str) -> SourceInfo {
        SourceInfo {
            id: format!("nvml:{index}"),
            vendor: Vendor::Nvidia,
            device: name.into(),
            method: "NVML".into(),
            pci_bus: Some(bus.into()),
        }
    }

    #[test]
    fn the_card_that_ran_is_found_by_bus_id_among_identical_cards() {
        // Two identical cards; CUDA's order (fastest first) need not be NVML's (bus order).
        let sources = [
            nvml(0, "NVIDIA GeForce RTX 4090", "00000000:01:00.0"),
            nvml(1, "NVIDIA GeForce RTX 4090", "00000000:41:00.0"),
        ];
        let ran = gpu("NVIDIA GeForce RTX 4090", Some("0000:41:00.0"));
        let chosen = choose_source(Some(Vendor::Nvidia), &ran, &sources, &[]).unwrap();
        assert_eq!(chosen.id, "nvml:1");
    }

    #[test]
    fn identical_cards_without_a_bus_id_give_no_figure_rather_than_a_guess() {
        let sources = [
            nvml(0, "NVIDIA GeForce RTX 4090", "00000000:01:00.0"),
            nvml(1, "NVIDIA GeForce RTX 4090", "00000000:41:00.0"),
        ];
        let ran = gpu("NVIDIA GeForce RTX 4090", None);
        let why = choose_source(Some(Vendor::Nvidia), &ran, &sources, &[]).unwrap_err();
        assert!(
            why.contains("2 NVIDIA readers") && why.contains("no PCI bus id"),
            "{why}"
        );
    }

    #[test]
    fn different_cards_are_told_apart_by_name_and_a_lone_card_needs_nothing() {
        let sources = [
            nvml(0, "NVIDIA GeForce RTX 3060", "00000000:01:00.0"),
            nvml(1, "NVIDIA GeForce RTX 4090", "00000000:41:00.0"),
        ];
        let ran = gpu("NVIDIA GeForce RTX 4090", None);
        let chosen = choose_source(Some(Vendor::Nvidia), &ran, &sources, &[]).unwrap();
        assert_eq!(chosen.id, "nvml:1");
        // A Vulkan driver may spell the name differently and give no bus: one card is that card.
        let vulkan = gpu("NVIDIA RTX 4090 (Vulkan)", None);
        let chosen = choose_source(Some(Vendor::Nvidia), &vulkan, &sources[1..], &[]).unwrap();
        assert_eq!(chosen.id, "nvml:1");
        // A bus that matches nothing among several is not guessed either.
        let elsewhere = gpu("NVIDIA GeForce RTX 4090", Some("0000:81:00.0"));
        let chosen = choose_source(Some(Vendor::Nvidia), &elsewhere, &sources, &[]).unwrap();
        assert_eq!(chosen.id, "nvml:1", "the name still tells them apart");
    }

    #[test]
    fn no_reader_of_the_vendor_says_why() {
        let unavailable = [Unavailable {
            vendor: Vendor::Amd,
            device: "card1".into(),
            reason: "permission denied".into(),
        }];
        let mut ran = gpu("Radeon RX 7900 XTX", Some("0000:03:00.0"));
        ran.pci_vendor = Some(0x1002);
        let why = choose_source(Some(Vendor::Amd), &ran, &[], &unavailable).unwrap_err();
        assert_eq!(why, "card1: permission denied");
        let why = choose_source(None, &ran, &[], &unavailable).unwrap_err();
        assert!(why.contains("cannot tell which vendor"), "{why}");
    }
}
