//! FLUX.2 klein's memory estimate against what was measured on lavapipe (docs/memory.md).

use super::family::FLUX2_STEP_BYTES_PER_TOKEN;
use super::transformer::Flux2TransformerConfig;
use crate::io::weights::Precision;
use crate::pipeline::family::Family;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::memory_need::{estimate, ModelSize, RequestShape};
use crate::pipeline::memory_test_support::{
    assert_estimates_cover, need, placement, upstream, work,
};

/// The target for FLUX.2 klein 4B at 1024x1024 in `minimal`: under 8 GB of device
/// memory (measured on lavapipe: 5416 MiB, `the_estimate_covers_the_measured_peaks`).
#[test]
fn flux2_klein_minimal_is_estimated_under_8_gb_at_1024() {
    let family = Family::FLUX2_KLEIN;
    let minimal = placement(family, MemoryProfile::Minimal, Precision::F16);
    let peak = need(family, &minimal, &work(1024)).peak();
    assert!(peak < 8_000_000_000, "{peak}");
}

/// A 1024x1024 reference picture adds its 4096 tokens to every step's sequence (4608 ->
/// 8704 tokens) and the VAE encoder to the device.
#[test]
fn flux2_reference_pictures_count_their_tokens_and_the_encoder() {
    let family = Family::FLUX2_KLEIN;
    let full = placement(family, MemoryProfile::Full, Precision::F16);
    // klein 4B is step-distilled: one transformer row per image.
    let base = RequestShape {
        guided: false,
        ..work(1024)
    };
    let plain = need(family, &full, &base);
    let referenced = need(
        family,
        &full,
        &RequestShape {
            image_to_image: true,
            reference_pixels: 1024 * 1024,
            ..base
        },
    );
    let extra_tokens = FLUX2_STEP_BYTES_PER_TOKEN * 4096;
    let encoder = upstream(family).vae_encoder_params * 2;
    assert_eq!(referenced.denoise - plain.denoise, extra_tokens + encoder);
    assert!(referenced.encode > 0 && plain.encode == 0);
}

/// FLUX.2 klein against its peaks measured on lavapipe.
#[test]
fn the_estimate_covers_flux2_klein_measured_peaks() {
    let mib = 1u64 << 20;
    // FLUX.2 klein on lavapipe (f16, one step): a model of klein 4B's widths, VAE and
    // encoder placement with 1 double- and 4 single-stream blocks; the step's peak reserved.
    let shallow = Flux2TransformerConfig {
        num_layers: 1,
        num_single_layers: 4,
        ..Flux2TransformerConfig::klein_4b()
    };
    let size = ModelSize {
        denoiser_params: shallow.parameters(),
        denoiser_full_precision_params: shallow.full_precision_parameters(),
        ..upstream(Family::FLUX2_KLEIN)
    };
    let mut rows = Vec::new();
    for (profile, side, peak) in [
        (MemoryProfile::Minimal, 1024, 1984 * mib),
        (MemoryProfile::Minimal, 512, 1792 * mib),
        (MemoryProfile::Low, 512, 2464 * mib),
        (MemoryProfile::Low, 1024, 2752 * mib),
    ] {
        let placement = placement(Family::FLUX2_KLEIN, profile, Precision::F16);
        let distilled = RequestShape {
            guided: false,
            ..work(side)
        };
        let denoise = estimate(&size, &placement, &distilled).denoise;
        rows.push((format!("1+4 blocks, {profile} at {side}"), denoise, peak));
    }
    // The whole of klein 4B (`synthetic-flux2-klein`), the same way: `minimal` at 1024x1024.
    let minimal = placement(Family::FLUX2_KLEIN, MemoryProfile::Minimal, Precision::F16);
    let distilled = RequestShape {
        guided: false,
        ..work(1024)
    };
    let denoise = estimate(&upstream(Family::FLUX2_KLEIN), &minimal, &distilled).denoise;
    rows.push(("klein 4B, minimal at 1024".into(), denoise, 5416 * mib));
    assert_estimates_cover(&rows);
}

/// FLUX.2 klein 4B at its usual size: its upstream size, a VAE config, the request.
fn klein_host() -> (ModelSize, crate::models::config::VaeConfig, RequestShape) {
    let family = Family::FLUX2_KLEIN;
    let size = ModelSize::upstream(family, family.usual_side());
    let vae = super::klein_vae();
    (size, vae, RequestShape::usual(family))
}

/// `--precision auto` on the CPU: f32 where it fits, bf16 (said in a note) where only that
/// fits, and f32 again where neither does (the check then refuses it, naming bf16's need).
#[test]
fn auto_precision_takes_bf16_on_the_cpu_only_when_f32_does_not_fit() {
    use crate::pipeline::host_memory::auto_precision;
    let cpu = crate::device::select(crate::BackendRequest::Cpu).unwrap();
    let (size, vae, work) = klein_host();
    let options = crate::pipeline::LoadOptions::default();
    let gib = |n: u64| Some(n << 30);
    let auto = |available| auto_precision(&size, &vae, &cpu, &work, &options, available);
    assert_eq!(auto(gib(64)), (Precision::F32, None));
    let (precision, note) = auto(gib(22));
    assert_eq!(precision, Precision::Bf16);
    assert!(note.unwrap().contains("runs bf16 on the CPU"));
    assert_eq!(auto(gib(4)), (Precision::F32, None));
    assert_eq!(auto(None), (Precision::F32, None));
}

/// On a GPU the host holds what a profile moved off the device: klein's f32 text encoder in
/// `balanced` (16 GB) is refused on a small host, naming `--memory full`.
#[test]
fn a_gpu_run_counts_what_its_profile_keeps_in_host_memory() {
    use crate::pipeline::host_memory::{check_host_fit, host_need, PROCESS_BYTES};
    use crate::pipeline::{LoadOptions, Placement};
    let gpu = crate::device::SelectedDevice {
        kind: crate::BackendKind::Cuda,
        ..crate::device::select(crate::BackendRequest::Cpu).unwrap()
    };
    let (size, vae, work) = klein_host();
    let balanced = MemoryProfile::Balanced.load_options(LoadOptions::default());
    let placement = Placement::for_model(size.family, &vae, Precision::F16, &balanced);
    let need = host_need(&size, &placement, false, &work);
    assert!(need > size.text_encoder_params * 4, "{need}");
    let full = Placement::for_model(size.family, &vae, Precision::F16, &LoadOptions::default());
    assert_eq!(host_need(&size, &full, false, &work), PROCESS_BYTES);
    let refused = check_host_fit(&size, &vae, &placement, &gpu, &work, &balanced, 8 << 30)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("--memory full"), "{refused}");
    assert!(check_host_fit(&size, &vae, &placement, &gpu, &work, &balanced, 64 << 30).is_ok());
}
