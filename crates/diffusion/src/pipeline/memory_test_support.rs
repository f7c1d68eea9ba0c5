//! What the memory tests of every family share: a placement, the upstream model's size, its need
//! for a request, a square request.

use crate::device::SelectedDevice;
use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::pipeline::family::Family;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::memory_need::{estimate, MemoryNeed, ModelSize, RequestShape};
use crate::pipeline::{LoadOptions, Placement};

/// A VAE config for placements: diffusers' `AutoencoderKL` defaults (its precision rule,
/// `force_upcast`, is all a placement reads).
pub fn vae() -> VaeConfig {
    VaeConfig::default()
}

/// `family` placed as `profile` places it, in `precision` (with `vae()`).
pub fn placement(family: Family, profile: MemoryProfile, precision: Precision) -> Placement {
    let options = profile.load_options(LoadOptions::default());
    Placement::for_model(family, &vae(), precision, &options)
}

/// The upstream model of `family`, with its VAE's own tile.
pub fn upstream(family: Family) -> ModelSize {
    ModelSize::upstream(family, family.usual_side())
}

/// What the upstream model of `family` needs with `placement` for `work`.
pub fn need(family: Family, placement: &Placement, work: &RequestShape) -> MemoryNeed {
    estimate(&upstream(family), placement, work)
}

/// A GPU-like device of `memory` bytes (the CPU backend underneath: nothing runs).
pub fn gpu(memory: Option<u64>) -> SelectedDevice {
    SelectedDevice {
        kind: crate::BackendKind::Cuda,
        device: crate::device::cpu_device(),
        info: crate::DeviceInfo {
            index: 0,
            name: "a test GPU".into(),
            class: "discrete GPU",
            driver: None,
            memory_bytes: memory,
            pci_bus: None,
            software: false,
            pci_vendor: Some(0x10de),
        },
        memory_limit: None,
        memory_free: None,
    }
}

/// One guided image of `side` pixels.
pub fn work(side: usize) -> RequestShape {
    RequestShape::image(side, side)
}

/// What a CPU run of `preset`'s upstream model at its usual size needs of host memory, in
/// `precision` and `profile` (`host_memory::host_need`).
pub fn host_need_of(
    preset: crate::pipeline::Preset,
    precision: Precision,
    profile: MemoryProfile,
) -> u64 {
    let family = preset.family();
    let size = ModelSize::upstream(family, family.usual_side());
    let placement = placement(family, profile, precision);
    crate::pipeline::host_memory::host_need(&size, &placement, true, &RequestShape::usual(family))
}

/// Asserts that each estimate covers what was measured and is not far above it: within
/// [measured, 1.25 x measured]. `rows`: what was measured, the estimated bytes, the measured
/// bytes. Every row is printed, and every row outside is named in the failure.
pub fn assert_estimates_cover(rows: &[(String, u64, u64)]) {
    const MIB: u64 = 1 << 20;
    let mut outside = Vec::new();
    for (what, need, peak) in rows {
        let line = format!(
            "{what}: estimated {} MiB, measured {} MiB",
            need / MIB,
            peak / MIB
        );
        eprintln!("{line}");
        outside.extend((!(*peak..peak * 5 / 4).contains(need)).then_some(line));
    }
    assert!(outside.is_empty(), "{outside:#?}");
}
