//! SD3's memory estimate against what was measured on lavapipe (docs/memory.md, "SD3.5 Medium").

use super::family::family_of;
use super::transformer::Sd3TransformerConfig;
use crate::io::weights::Precision;
use crate::pipeline::family::Family;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::memory_need::{estimate, ModelSize};
use crate::pipeline::memory_test_support::{
    assert_estimates_cover, need, placement, upstream, work,
};

const MIB: u64 = 1 << 20;

/// A model of `config`'s widths with `blocks` blocks, the first half with MMDiT-X's second
/// attention where `config` has one (as `scripts/torch_reference_timing.py --sd3-depth` makes
/// it), sized as its architecture with that architecture's VAE.
fn shallow(config: Sd3TransformerConfig, blocks: usize) -> (Family, ModelSize) {
    let dual = match config.dual_attention_layers.is_empty() {
        true => Vec::new(),
        false => (0..blocks.div_ceil(2)).collect(),
    };
    let config = Sd3TransformerConfig {
        num_layers: blocks,
        dual_attention_layers: dual,
        ..config
    };
    let family = family_of(&config);
    let size = ModelSize {
        denoiser_params: config.parameters() - config.table_parameters(),
        ..upstream(family)
    };
    (family, size)
}

/// The estimate against the peaks measured on lavapipe (f16, one guided step at 4.5, the step's
/// peak reserved bytes): never below them, and not far above. The 6-block `low` row is a load
/// only, its step taken as the 2-block model's at that size (264 MiB over the load).
///
/// Large's per-token figure is Medium's scaled by the width (2432 against 1536), so a 2-block
/// model of Large's widths was measured the same way (at 768, not 1024: there lavapipe was asked
/// for a 152 MiB buffer, past its 128). Its step grew by 77 KiB a token from 512 to 768, under
/// the 101 KiB the scaled figure gives, so the estimate is 19-20% above those rows.
#[test]
fn the_estimate_covers_sd3_measured_peaks() {
    let (medium, large) = (
        Sd3TransformerConfig::medium_35(),
        Sd3TransformerConfig::large_35(),
    );
    let mut rows = Vec::new();
    for (name, config, blocks, profile, side, peak) in [
        ("Medium", &medium, 2, MemoryProfile::Minimal, 512, 664 * MIB),
        (
            "Medium",
            &medium,
            2,
            MemoryProfile::Minimal,
            1024,
            856 * MIB,
        ),
        ("Medium", &medium, 2, MemoryProfile::Low, 512, 824 * MIB),
        ("Medium", &medium, 6, MemoryProfile::Minimal, 512, 984 * MIB),
        (
            "Medium",
            &medium,
            6,
            MemoryProfile::Low,
            512,
            (1296 + 264) * MIB,
        ),
        ("Large", &large, 2, MemoryProfile::Minimal, 512, 888 * MIB),
        ("Large", &large, 2, MemoryProfile::Minimal, 768, 984 * MIB),
    ] {
        let (family, size) = shallow(config.clone(), blocks);
        let placement = placement(family, profile, Precision::F16);
        let need = estimate(&size, &placement, &work(side)).denoise;
        let what = format!("{blocks} blocks of {name}'s widths, {profile} at {side}");
        rows.push((what, need, peak));
    }
    assert_estimates_cover(&rows);
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
