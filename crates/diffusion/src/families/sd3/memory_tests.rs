//! SD3's memory estimate against what was measured on lavapipe (docs/memory.md, "SD3.5 Medium").

use super::transformer::Sd3TransformerConfig;
use crate::io::weights::Precision;
use crate::pipeline::family::Family;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::memory_need::{estimate, ModelSize};
use crate::pipeline::memory_test_support::{need, placement, upstream, work};

const MIB: u64 = 1 << 20;

/// A model of SD3.5 Medium's widths with `blocks` MMDiT-X blocks, the first half with the second
/// attention (as `scripts/torch_reference_timing.py --sd3-depth` makes it), and Medium's VAE.
fn shallow(blocks: usize) -> ModelSize {
    let config = Sd3TransformerConfig {
        num_layers: blocks,
        dual_attention_layers: (0..blocks.div_ceil(2)).collect(),
        ..Sd3TransformerConfig::medium_35()
    };
    ModelSize {
        denoiser_params: config.parameters() - config.table_parameters(),
        ..upstream(Family::SD35_MEDIUM)
    }
}

/// The estimate against the peaks measured on lavapipe (f16, one guided step at 4.5, the step's
/// peak reserved bytes): never below them, and not far above. The 6-block `low` row is a load
/// only, its step taken as the 2-block model's at that size (264 MiB over the load).
#[test]
fn the_estimate_covers_sd3_measured_peaks() {
    let mut outside = Vec::new();
    for (blocks, profile, side, peak) in [
        (2, MemoryProfile::Minimal, 512, 664 * MIB),
        (2, MemoryProfile::Minimal, 1024, 856 * MIB),
        (2, MemoryProfile::Low, 512, 824 * MIB),
        (6, MemoryProfile::Minimal, 512, 984 * MIB),
        (6, MemoryProfile::Low, 512, (1296 + 264) * MIB),
    ] {
        let placement = placement(Family::SD35_MEDIUM, profile, Precision::F16);
        let need = estimate(&shallow(blocks), &placement, &work(side)).denoise;
        let line = format!(
            "{blocks} blocks, {profile} at {side}: estimated {} MiB, measured {} MiB",
            need / MIB,
            peak / MIB
        );
        eprintln!("{line}");
        outside.extend((!(peak..peak * 5 / 4).contains(&need)).then_some(line));
    }
    assert!(outside.is_empty(), "{outside:#?}");
}

/// A model of SD3.5 Large's widths with 2 of its 38 blocks (the second the last) and its VAE.
fn shallow_large() -> ModelSize {
    let config = Sd3TransformerConfig {
        num_layers: 2,
        ..Sd3TransformerConfig::large_35()
    };
    ModelSize {
        denoiser_params: config.parameters() - config.table_parameters(),
        ..upstream(Family::SD35_LARGE)
    }
}

/// Large's per-token figure is Medium's scaled by the width (2432 against 1536): the estimate
/// against a 2-block model of Large's widths on lavapipe, measured the same way (at 768, not
/// 1024: there lavapipe was asked for a 152 MiB buffer, past its 128). Its step grew by 77 KiB a
/// token from 512 to 768, under the 101 KiB the scaled figure gives, so the estimate is 19-20%
/// above these rows.
#[test]
fn the_estimate_covers_a_large_width_models_measured_peaks() {
    let mut outside = Vec::new();
    for (side, peak) in [(512, 888 * MIB), (768, 984 * MIB)] {
        let minimal = placement(Family::SD35_LARGE, MemoryProfile::Minimal, Precision::F16);
        let need = estimate(&shallow_large(), &minimal, &work(side)).denoise;
        let line = format!(
            "2 blocks of Large's widths, minimal at {side}: estimated {} MiB, measured {} MiB",
            need / MIB,
            peak / MIB
        );
        eprintln!("{line}");
        outside.extend((!(peak..peak * 5 / 4).contains(&need)).then_some(line));
    }
    assert!(outside.is_empty(), "{outside:#?}");
}

/// The targets at 1024x1024 in `minimal` (one guided image): SD3.5 Medium under 6 GB,
/// SD3.5 Large under 12 GB, their int8 MMDiTs the most of it.
#[test]
fn sd35_minimal_is_estimated_under_the_targets_at_1024() {
    for (family, target) in [
        (Family::SD35_MEDIUM, 6_000_000_000),
        (Family::SD35_LARGE, 12_000_000_000),
    ] {
        let minimal = placement(family, MemoryProfile::Minimal, Precision::F16);
        let peak = need(family, &minimal, &work(1024)).peak();
        eprintln!(
            "{}: {:.2} GB",
            family.architecture().name,
            peak as f64 / 1e9
        );
        assert!(peak < target, "{}: {peak}", family.architecture().name);
    }
}
