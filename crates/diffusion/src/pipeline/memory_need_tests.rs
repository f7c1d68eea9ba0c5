//! The fit check and `auto`'s choice, on every architecture the registry lists. Each family's own
//! measured peaks are tested in its folder (families/<family>/).

use super::*;
use crate::engine::choose_auto;
use crate::engine::registry::FAMILIES;
use crate::io::kept_weights::KeptWeights;
use crate::pipeline::host_memory::choose_profile;
use crate::pipeline::memory_test_support::{gpu, need, placement, upstream, vae, work};
use crate::pipeline::{ModelSource, Preset};

/// Every architecture of every family.
fn architectures() -> impl Iterator<Item = Family> {
    FAMILIES
        .iter()
        .flat_map(|d| d.architectures.iter().copied())
}

#[test]
fn each_device_profile_needs_less_than_the_one_before() {
    for family in architectures() {
        let usual = RequestShape::usual(family);
        let needs: Vec<u64> = DEVICE_PROFILES
            .into_iter()
            .map(|p| need(family, &placement(family, p, Precision::F16), &usual).peak())
            .collect();
        assert!(needs.windows(2).all(|w| w[0] > w[1]), "{family}: {needs:?}");
    }
}

#[test]
fn the_first_fitting_profile_is_the_fastest_that_fits() {
    for family in architectures() {
        let usual = RequestShape::usual(family);
        let need = |p| need(family, &placement(family, p, Precision::F16), &usual);
        let huge = 200u64 << 30;
        assert_eq!(first_fitting(huge, need).unwrap().0, MemoryProfile::Full);
        let minimal = need(MemoryProfile::Minimal).peak();
        assert_eq!(
            first_fitting(minimal, need).unwrap().0,
            MemoryProfile::Minimal,
            "{family}"
        );
        assert_eq!(first_fitting(minimal - 1, need), None, "{family}");
    }
    assert_eq!(gib(3 << 29), "1.5 GiB");
}

#[test]
fn auto_picks_the_fastest_profile_that_fits_and_says_why() {
    // The first preset the registry lists, at its usual side.
    let preset = Preset::all().next().unwrap();
    let (family, side) = (preset.family(), preset.family().usual_side());
    let synthetic = ModelSource::Synthetic(preset);
    let choose_for = |device: &SelectedDevice, work: &RequestShape| {
        choose_auto(&synthetic, device, Some(Precision::F16), work).unwrap()
    };
    let choose = |device: &SelectedDevice| choose_for(device, &work(side));
    assert_eq!(choose(&gpu(Some(24 << 30))).profile, MemoryProfile::Full);
    let need_of = |p: MemoryProfile, work: &RequestShape| {
        let placement = placement(family, p, Precision::F16);
        need(family, &placement, work).peak()
    };
    let just_low = gpu(Some(need_of(MemoryProfile::Low, &work(side))));
    let low = choose(&just_low);
    assert_eq!(low.profile, MemoryProfile::Low);
    assert!(
        low.reason.starts_with("needs about")
            && low.reason.contains(&format!("one {side}x{side} image")),
        "{}",
        low.reason
    );
    // A batch needs more: the same device holds four images only in a lighter profile.
    let four = RequestShape {
        batch: 4,
        ..work(side)
    };
    let batch = choose_for(&just_low, &four);
    assert_ne!(batch.profile, MemoryProfile::Low);
    assert!(
        batch.reason.contains(&format!("4 {side}x{side} images")),
        "{}",
        batch.reason
    );
    // The limit wins over the driver's figure.
    let mut limited = gpu(Some(24 << 30));
    limited.memory_limit = Some(need_of(MemoryProfile::Minimal, &work(side)) - 1);
    let cpu = choose(&limited);
    assert_eq!(cpu.profile, MemoryProfile::Cpu);
    assert!(cpu.reason.contains("even minimal needs"), "{}", cpu.reason);
    let unknown = choose(&gpu(None));
    assert_eq!(unknown.profile, MemoryProfile::Full);
    assert!(
        unknown.reason.contains("--memory-limit"),
        "{}",
        unknown.reason
    );
}

/// `--memory auto` on a GPU weighs what each profile keeps in host memory: a profile that fits
/// the device but not the RAM is passed over (and named), and when every profile that fits the
/// device keeps too much in RAM the run is refused before loading, with both figures.
#[test]
fn auto_passes_over_profiles_whose_host_part_does_not_fit() {
    for family in architectures() {
        let (size, vae, w) = (upstream(family), vae(), work(family.usual_side()));
        let device_need = |p| need(family, &placement(family, p, Precision::F16), &w).peak();
        let host_need = |p| {
            crate::pipeline::host_memory::host_need(
                &size,
                &placement(family, p, Precision::F16),
                false,
                &w,
            )
        };
        // A device that holds `balanced` but not `full`.
        let device = gpu(Some(device_need(MemoryProfile::Balanced)));
        let choose = |host| choose_profile(&size, &vae, &device, Precision::F16, &w, host);
        assert_eq!(
            choose(None).unwrap().profile,
            MemoryProfile::Balanced,
            "{family}"
        );
        let balanced = host_need(MemoryProfile::Balanced);
        assert_eq!(
            choose(Some(balanced)).unwrap().profile,
            MemoryProfile::Balanced
        );
        // Low and minimal keep more in RAM than balanced (the denoiser while decoding): with
        // RAM for balanced only, nothing lighter is chosen instead.
        assert!(host_need(MemoryProfile::Low) > balanced, "{family}");
        let message = choose(Some(balanced - 1)).unwrap_err().to_string();
        assert!(
            message.contains("out of host memory before starting")
                && message.contains("balanced fits a test GPU")
                && message.contains(&gib(balanced)),
            "{family}: {message}"
        );
        // A device that holds only `low` and `minimal`, with RAM for minimal's host part but
        // not low's (minimal's int8 denoiser is smaller while offloaded): minimal, and why.
        let small = gpu(Some(device_need(MemoryProfile::Low)));
        let minimal = host_need(MemoryProfile::Minimal);
        assert!(minimal < host_need(MemoryProfile::Low), "{family}");
        let chosen =
            choose_profile(&size, &vae, &small, Precision::F16, &w, Some(minimal)).unwrap();
        assert_eq!(chosen.profile, MemoryProfile::Minimal, "{family}");
        assert!(
            chosen
                .reason
                .contains("low fits the device too, but keeps about"),
            "{}",
            chosen.reason
        );
    }
}

/// A denoiser whose file keeps most of its weights in codes (GGUF, FP8) is estimated at their
/// codes' bytes plus the working memory of dequantizing the largest, and the rest of its weights
/// as the placement holds them: far under the same model in f16.
#[test]
fn weights_kept_in_codes_count_their_codes_bytes() {
    for family in architectures() {
        let plain = upstream(family);
        let params = plain.denoiser_params;
        // Q4_K-like: 90% of the weights at 0.75 bytes each, the largest 1% of the model.
        let kept = KeptWeights {
            params: params * 9 / 10,
            device_bytes: params * 9 / 10 * 3 / 4,
            largest: params / 100,
        };
        let coded = ModelSize {
            denoiser_kept: kept,
            ..plain
        };
        let rest = ModelSize {
            denoiser_params: params - kept.params,
            ..plain
        };
        for profile in [MemoryProfile::Full, MemoryProfile::Minimal] {
            let p = placement(family, profile, Precision::F16);
            assert_eq!(
                denoiser_weight_bytes(&coded, &p),
                denoiser_weight_bytes(&rest, &p) + kept.device_bytes + kept.dequantize_bytes(2),
                "{} {profile:?}",
                family.name()
            );
        }
        let p = placement(family, MemoryProfile::Full, Precision::F16);
        let (coded, f16) = (
            denoiser_weight_bytes(&coded, &p),
            denoiser_weight_bytes(&plain, &p),
        );
        // 0.75 bytes a weight for 90%, f16 for the rest, and the working memory: well under f16.
        assert!(coded < f16 * 3 / 5, "{}: {coded} vs {f16}", family.name());
    }
    // The largest matrix in the activations' dtype: what the one-pass decoders allocate.
    let large = KeptWeights {
        largest: 1 << 26,
        ..KeptWeights::default()
    };
    assert_eq!(large.dequantize_bytes(2), 2 << 26);
    assert_eq!(large.dequantize_bytes(4), 4 << 26);
}

/// `--memory auto` on the CPU backend: `cpu` where the weights fit the host in the run's
/// precision, `minimal` (int8 denoiser weights) where only those fit, said with both needs, and
/// `cpu` again where neither does (the host check then refuses the run with its own message) or
/// the host's memory is unknown.
#[test]
fn auto_on_the_cpu_takes_int8_weights_only_where_nothing_else_fits_the_host() {
    let cpu = SelectedDevice {
        kind: crate::BackendKind::Cpu,
        ..gpu(None)
    };
    let mut lighter = 0;
    for family in architectures() {
        let size = upstream(family);
        let side = family.usual_side();
        let need = |profile: MemoryProfile| {
            let placement = placement(family, profile, Precision::Bf16);
            crate::pipeline::host_memory::host_need(&size, &placement, true, &work(side))
        };
        let (full, int8) = (need(MemoryProfile::Cpu), need(MemoryProfile::Minimal));
        let choose = |host: Option<u64>| {
            choose_profile(&size, &vae(), &cpu, Precision::Bf16, &work(side), host).unwrap()
        };
        assert_eq!(choose(Some(full)).profile, MemoryProfile::Cpu, "{family}");
        assert_eq!(choose(None).profile, MemoryProfile::Cpu, "{family}");
        assert_eq!(
            choose(Some(int8 - 1)).profile,
            MemoryProfile::Cpu,
            "{family}"
        );
        if int8 >= full {
            // `minimal` keeps the text encoders in f32 (SD3.5's T5-XXL): not lighter here.
            assert_eq!(
                choose(Some(full - 1)).profile,
                MemoryProfile::Cpu,
                "{family}"
            );
            continue;
        }
        lighter += 1;
        let squeezed = choose(Some(full - 1));
        assert_eq!(squeezed.profile, MemoryProfile::Minimal, "{family}");
        assert!(
            squeezed.reason.contains("in bf16 it needs about")
                && squeezed
                    .reason
                    .contains(&format!("int8 denoiser weights need about {}", gib(int8))),
            "{family}: {}",
            squeezed.reason
        );
    }
    assert!(
        lighter > 0,
        "minimal was lighter on the CPU for no architecture"
    );
}
