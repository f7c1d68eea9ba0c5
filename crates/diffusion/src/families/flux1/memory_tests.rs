//! FLUX.1's memory estimate against what was measured on lavapipe (docs/memory.md, "FLUX.1").

use super::family::family_of;
use super::transformer::Flux1TransformerConfig;
use crate::io::weights::Precision;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::memory_need::{estimate, ModelSize};
use crate::pipeline::memory_test_support::{
    assert_estimates_cover, need, placement, upstream, work,
};
use crate::pipeline::Family;

const MIB: u64 = 1 << 20;

/// The estimate against the peaks measured on lavapipe with a model of schnell's widths, 1
/// double- and 2 single-stream blocks and T5 over 256 tokens (f16, one step, the step's reserved
/// bytes): never below them, and not far above.
#[test]
fn the_estimate_covers_flux1_measured_peaks() {
    let config = Flux1TransformerConfig {
        num_layers: 1,
        num_single_layers: 2,
        ..Flux1TransformerConfig::schnell()
    };
    let family = family_of(&config);
    let size = ModelSize {
        denoiser_params: config.parameters(),
        denoiser_full_precision_params: config.full_precision_parameters(),
        ..upstream(family)
    };
    let mut rows = Vec::new();
    for (profile, side, peak) in [
        (MemoryProfile::Low, 512, 1896 * MIB),
        (MemoryProfile::Low, 1024, 2080 * MIB),
        (MemoryProfile::Minimal, 512, 1512 * MIB),
    ] {
        let placement = placement(family, profile, Precision::F16);
        let need = estimate(&size, &placement, &work(side)).denoise;
        rows.push((format!("1+2 blocks, {profile} at {side}"), need, peak));
    }
    assert_estimates_cover(&rows);
}

/// What the whole models are estimated to need at 1024x1024 (one image), printed for
/// docs/memory.md: `minimal` (int8) well under `low` (f16 weights), which is over 24 GB.
#[test]
fn flux1_at_1024_is_estimated_per_profile() {
    for family in [Family::FLUX1_SCHNELL, Family::FLUX1_DEV] {
        let peak = |profile| {
            let placement = placement(family, profile, Precision::F16);
            need(family, &placement, &work(1024)).peak()
        };
        let (minimal, low) = (peak(MemoryProfile::Minimal), peak(MemoryProfile::Low));
        eprintln!(
            "{family}: minimal {:.2} GB, low {:.2} GB",
            minimal as f64 / 1e9,
            low as f64 / 1e9
        );
        assert!(minimal < low * 2 / 3, "{family}: {minimal} {low}");
        assert!(low > 24_000_000_000, "{family}: {low}");
    }
}
