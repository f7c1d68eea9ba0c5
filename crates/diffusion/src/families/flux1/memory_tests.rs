//! FLUX.1's memory estimate against what was measured on lavapipe (docs/memory.md, "FLUX.1").

use super::family::family_of;
use super::transformer::Flux1TransformerConfig;
use crate::io::kept_weights::KeptWeights;
use crate::io::weights::Precision;
use crate::pipeline::host_memory::choose_profile;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::memory_need::{
    check_fit, denoiser_step_bytes, estimate, ModelSize, RequestShape,
};
use crate::pipeline::memory_test_support::{
    assert_estimates_cover, gpu, need, placement, upstream, vae, work,
};
use crate::pipeline::{Family, LoadOptions, Placement};

const MIB: u64 = 1 << 20;

/// The Q4_K GGUF of the 4+8-block model (`scripts/q4k_transformer.py`): its weights in Q4_K
/// codes (every matrix whose rows are whole 256-value blocks), 864,320 biases and norms in F16.
const Q4_K_WEIGHTS: u64 = 2_545_090_560;

/// The estimate against what was measured on lavapipe with models of schnell's widths, 1+2 and
/// 4+8 double- and single-stream blocks, T5 over 256 tokens (f16, one unguided step), the 4+8 one
/// also as a Q4_K transformer file: the bytes reserved after loading and the step's reserved
/// bytes, each never below what was measured and not far above.
#[test]
fn the_estimate_covers_flux1_measured_peaks() {
    let mut rows = Vec::new();
    // (blocks, Q4_K file, profile, side, reserved after loading, the step's reserved), in MiB.
    for ((double, single), q4_k, profile, side, load, step) in [
        ((1, 2), false, MemoryProfile::Low, 512, 1776, 1896),
        ((1, 2), false, MemoryProfile::Low, 1024, 1776, 2080),
        ((1, 2), false, MemoryProfile::Minimal, 512, 1072, 1512),
        ((4, 8), false, MemoryProfile::Low, 512, 5616, 5736),
        ((4, 8), false, MemoryProfile::Minimal, 512, 2936, 3400),
        ((4, 8), true, MemoryProfile::Minimal, 512, 1992, 2232),
    ] {
        let config = Flux1TransformerConfig {
            num_layers: double,
            num_single_layers: single,
            ..Flux1TransformerConfig::schnell()
        };
        let family = family_of(&config);
        let kept = match q4_k {
            // 0.75 device bytes a weight (`code_bytes`); the largest, a block's norm1 linear.
            true => KeptWeights {
                params: Q4_K_WEIGHTS,
                device_bytes: Q4_K_WEIGHTS * 3 / 4,
                largest: 18_432 * 3072,
            },
            false => KeptWeights::default(),
        };
        let size = ModelSize {
            denoiser_params: config.parameters(),
            denoiser_full_precision_params: config.full_precision_parameters(),
            denoiser_kept: kept,
            ..upstream(family)
        };
        let placement = placement(family, profile, Precision::F16);
        let work = RequestShape {
            guided: false,
            ..work(side)
        };
        let need = estimate(&size, &placement, &work).denoise;
        let loaded = need - denoiser_step_bytes(&size, &placement, &work);
        let file = if q4_k { " (Q4_K file)" } else { "" };
        let what = format!("{double}+{single} blocks{file}, {profile} at {side}");
        rows.push((format!("{what}, loaded"), loaded, load * MIB));
        rows.push((format!("{what}, step"), need, step * MIB));
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
    // schnell unguided in `minimal` from its int8 weights and from a Q4_K file (every matrix in
    // codes, as the 4+8-block file above), for the 16 GB and 10 GB targets.
    let family = Family::FLUX1_SCHNELL;
    let unguided = RequestShape {
        guided: false,
        ..work(1024)
    };
    let minimal = placement(family, MemoryProfile::Minimal, Precision::F16);
    let size = upstream(family);
    let q4_k = ModelSize {
        denoiser_kept: KeptWeights {
            params: size.denoiser_params - size.denoiser_full_precision_params,
            device_bytes: (size.denoiser_params - size.denoiser_full_precision_params) * 3 / 4,
            largest: 18_432 * 3072,
        },
        ..size
    };
    let (int8, coded) = (
        estimate(&size, &minimal, &unguided).peak(),
        estimate(&q4_k, &minimal, &unguided).peak(),
    );
    eprintln!(
        "{family} unguided in minimal: int8 {:.2} GB, a Q4_K file {:.2} GB",
        int8 as f64 / 1e9,
        coded as f64 / 1e9
    );
    assert!(
        int8 < 16_000_000_000 && coded < int8 * 3 / 4,
        "{int8} {coded}"
    );
}

/// The fit check's advice for FLUX.1 [schnell] at 1024x1024 from bf16 weights in `full`: a 16 GB
/// GPU is told that `minimal` fits, its int8 weights as small as an FP8 or Q8_0 file's; a 12 GB
/// one that a Q4_K file of the model would fit, and how to give it; an 8 GB one that nothing
/// does. `--memory auto` gives the 12 GB GPU the same advice beside its choice of the CPU, and a
/// Q4_K file is not told to get one.
#[test]
fn the_fit_check_names_the_profile_or_file_that_fits_a_smaller_gpu() {
    let family = Family::FLUX1_SCHNELL;
    let size = upstream(family);
    let work = RequestShape {
        guided: false,
        ..work(1024)
    };
    let full = MemoryProfile::Full.load_options(LoadOptions::default());
    let refusal = |size: &ModelSize, gib: u64| {
        let placement = Placement::for_model(family, &vae(), Precision::Bf16, &full);
        check_fit(
            size,
            &vae(),
            &placement,
            &gpu(Some(gib << 30)),
            &work,
            &full,
        )
        .unwrap_err()
        .to_string()
    };
    let sixteen = refusal(&size, 16);
    eprintln!("{sixteen}");
    assert!(
        sixteen.contains(
            "--memory minimal (the denoiser's weights in int8: as small as an FP8 or Q8_0 file \
             of it) needs about"
        ),
        "{sixteen}"
    );
    let twelve = refusal(&size, 12);
    eprintln!("{twelve}");
    assert!(
        twelve.contains(
            "no profile fits these weights, but with the denoiser in 4-bit codes (a Q4_K GGUF \
             file of this model, given with --model; `sdbench models` lists the files it finds) \
             --memory minimal needs about"
        ),
        "{twelve}"
    );
    let eight = refusal(&size, 8);
    assert!(eight.contains("no profile on this device fits"), "{eight}");

    let auto = choose_profile(
        &size,
        &vae(),
        &gpu(Some(12 << 30)),
        Precision::Bf16,
        &work,
        None,
    )
    .unwrap();
    assert_eq!(auto.profile, MemoryProfile::Cpu);
    assert!(
        auto.reason
            .contains("; with the denoiser in 4-bit codes (a Q4_K GGUF"),
        "{}",
        auto.reason
    );

    // A Q4_K file's own weights (0.75 device bytes a weight): no 4-bit file is suggested, and
    // a profile fits 12 GB (the codes are kept in every profile) without the int8 remark.
    let params = size.denoiser_params - size.denoiser_full_precision_params;
    let q4_k = ModelSize {
        denoiser_kept: KeptWeights {
            params,
            device_bytes: params * 3 / 4,
            largest: 15_360 * 3072,
        },
        ..size
    };
    let eight = refusal(&q4_k, 8);
    assert!(!eight.contains("Q4_K"), "{eight}");
    let twelve = refusal(&q4_k, 12);
    assert!(
        twelve.contains("needs about") && !twelve.contains("Q4_K") && !twelve.contains("int8"),
        "{twelve}"
    );
}
