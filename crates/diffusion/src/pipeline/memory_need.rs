//! How much device memory a placement needs for a request, known before any weight is read: the
//! weights it keeps on the device plus the largest activations of denoising and of decoding. The
//! parameter counts are the upstream models' (diffusers, counted from their configs); the
//! activation coefficients come from peaks measured with `--vram-report` (README, "Memory
//! profiles"), with a margin for the allocator's pools.

use crate::device::SelectedDevice;
use crate::error::Result;
use crate::io::weights::Precision;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::{Family, LoadOptions, ModelSource, Pipeline, Placement};

/// What one family's models hold and use.
struct Footprint {
    text_encoder_params: u64,
    unet_params: u64,
    vae_decoder_params: u64,
}

fn footprint(family: Family) -> Footprint {
    match family {
        Family::Sd1 => Footprint {
            text_encoder_params: 123_060_480,
            unet_params: 859_520_964,
            vae_decoder_params: 49_490_199,
        },
        Family::Sd2 => Footprint {
            text_encoder_params: 340_387_840,
            unet_params: 865_910_724,
            vae_decoder_params: 49_490_199,
        },
        Family::Sdxl => Footprint {
            text_encoder_params: 123_060_480 + 694_659_840,
            unet_params: 2_567_463_684,
            vae_decoder_params: 49_490_199,
        },
    }
}

/// A denoising step's device memory beyond the weights, in f16 per latent pixel: a part that
/// does not depend on the rows the UNet runs at once (the allocator's pools, attention chunks)
/// and a part per row (f32 doubles both). SD's, from SD1.5 at 512x512 on lavapipe (64x64
/// latents), the allocator's peak reserved during the step less its in-use bytes after loading:
/// 455 MiB with batched guidance (2 rows, `full`) and 370 MiB with sequential guidance (1 row,
/// `low`): 85 MiB per row and 285 MiB besides (README, "Memory profiles").
const SD_UNET_STEP_BYTES_PER_LATENT_PIXEL: u64 = 73_000;
const SD_UNET_ROW_BYTES_PER_LATENT_PIXEL: u64 = 22_000;
/// SDXL's, from SDXL at 1024x1024 in `minimal` on lavapipe (128x128 latents, one row): the step's
/// peak reserved bytes less the in-use bytes after loading, 515 MiB, of which the int8
/// dequantization below is 112 MiB: 25,800 bytes per latent pixel for the step and one row (its
/// first level, a quarter of the pixels' work, has no attention). Split as SD's is (row 23%),
/// with a margin: 21,000 + 7,000. At 512x512 the second row cost 105 MiB (26 KB per latent
/// pixel), more than this split gives it, but pools dominate the figures at that size (see the
/// next constant) and at 1024x1024 SDXL's decode needs more than its step in every profile but
/// `minimal`, which runs one row, so there the split does not change a profile's need.
const SDXL_UNET_STEP_BYTES_PER_LATENT_PIXEL: u64 = 21_000;
const SDXL_UNET_ROW_BYTES_PER_LATENT_PIXEL: u64 = 7_000;
/// What SDXL's step holds in the allocator's pools beyond the per-pixel part, which the 1024
/// figure above leaves out at smaller sizes: at 512x512 on lavapipe (f16) the step's peak
/// reserved bytes were 544 MiB over the weights in use with one row (`low`) and 650 MiB with two
/// (`full`), where the per-pixel part is 109 and 137 MiB. SD's coefficients were measured at its
/// usual size and include its pools.
const SDXL_UNET_POOL_BYTES: u64 = 448 << 20;
/// Int8 weights are dequantized one layer at a time; the largest layer (a 3x3 convolution from
/// 2560 to 1280 channels in SD's and SDXL's up blocks, 29.5M weights) needs its packed bytes
/// unpacked and its f16 copy, about 4 bytes a weight, besides the activations. Measured: the
/// `minimal` step took 410 MiB over the weights where `low`'s took 370.
const INT8_DEQUANTIZE_BYTES: u64 = 4 * 29_491_200;
/// VAE decoder activations per output pixel (every family's VAE has the same shape), measured on
/// lavapipe as the run's peak reserved bytes over the weights in use: in f16 591 MiB over
/// 352x352-pixel tiles (SD1.5 512x512, `full`), 5.0 KB per pixel; in f32 956 MiB for an untiled
/// 352x352 decode (SD1.5, `balanced`), 8.1 KB per pixel. SDXL's VAE decodes in f32.
const VAE_F16_BYTES_PER_PIXEL: u64 = 5_000;
const VAE_F32_BYTES_PER_PIXEL: u64 = 8_200;

/// The request a need is estimated for.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub width: usize,
    pub height: usize,
    pub batch: usize,
    /// Classifier-free guidance (guidance scale above 1).
    pub guided: bool,
    /// The VAE's tile (pixels per side) when decoding tiles.
    pub vae_tile: usize,
}

/// Device bytes a placement needs: the larger of denoising and decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryNeed {
    pub denoise: u64,
    pub decode: u64,
}

impl MemoryNeed {
    pub fn peak(self) -> u64 {
        self.denoise.max(self.decode)
    }
}

fn bytes(precision: Precision) -> u64 {
    match precision {
        Precision::F32 => 4,
        Precision::F16 => 2,
    }
}

/// The device memory `placement` needs for `work` on a `family` model.
pub fn estimate(family: Family, placement: &Placement, work: &Workload) -> MemoryNeed {
    let f = footprint(family);
    let text = if placement.text_encoders_on_cpu {
        0
    } else {
        f.text_encoder_params * bytes(placement.text_encoders)
    };
    // Int8: a byte per weight, plus the layers kept in the run's precision and the scales (2%).
    let unet = if placement.unet_int8 {
        f.unet_params * 102 / 100
    } else {
        f.unet_params * bytes(placement.unet)
    };
    let vae = if placement.vae_on_cpu {
        0
    } else {
        f.vae_decoder_params * bytes(placement.vae)
    };
    let latent_pixels = (work.width / 8 * (work.height / 8)) as u64;
    let rows = work.batch as u64
        * if work.guided && !placement.sequential_cfg {
            2
        } else {
            1
        };
    let (per_step, per_row) = match family {
        Family::Sdxl => (
            SDXL_UNET_STEP_BYTES_PER_LATENT_PIXEL,
            SDXL_UNET_ROW_BYTES_PER_LATENT_PIXEL,
        ),
        Family::Sd1 | Family::Sd2 => (
            SD_UNET_STEP_BYTES_PER_LATENT_PIXEL,
            SD_UNET_ROW_BYTES_PER_LATENT_PIXEL,
        ),
    };
    let mut unet_activations =
        (per_step + per_row * rows) * latent_pixels * bytes(placement.unet) / 2;
    if placement.unet_int8 {
        unet_activations += INT8_DEQUANTIZE_BYTES;
    }
    if family == Family::Sdxl {
        unet_activations += SDXL_UNET_POOL_BYTES;
    }
    // Images decode one at a time; a tiled decode holds one tile's activations.
    let mut decoded_pixels = (work.width * work.height) as u64;
    if placement.vae_tiling {
        let tile = match placement.small_vae_tiles {
            true => work.vae_tile / 2,
            false => work.vae_tile,
        };
        decoded_pixels = decoded_pixels.min((tile * tile) as u64);
    }
    let vae_activations = if placement.vae_on_cpu {
        0
    } else {
        decoded_pixels
            * match placement.vae {
                Precision::F16 => VAE_F16_BYTES_PER_PIXEL,
                Precision::F32 => VAE_F32_BYTES_PER_PIXEL,
            }
    };
    let unet_while_decoding = if placement.unet_offload { 0 } else { unet };
    MemoryNeed {
        denoise: text + unet + vae + unet_activations,
        decode: text + unet_while_decoding + vae + vae_activations,
    }
}

/// The profiles that run on the device, from the fastest to the one that needs least.
pub const DEVICE_PROFILES: [MemoryProfile; 4] = [
    MemoryProfile::Full,
    MemoryProfile::Balanced,
    MemoryProfile::Low,
    MemoryProfile::Minimal,
];

/// The first profile (fastest first) whose need fits in `available` bytes, with its need; `None`
/// when none does (only `cpu` would run).
pub fn first_fitting(
    available: u64,
    need_of: impl Fn(MemoryProfile) -> MemoryNeed,
) -> Option<(MemoryProfile, MemoryNeed)> {
    DEVICE_PROFILES
        .into_iter()
        .map(|p| (p, need_of(p)))
        .find(|(_, need)| need.peak() <= available)
}

/// What `--memory auto` chose, and why, for the front ends to show.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoChoice {
    pub profile: MemoryProfile,
    pub reason: String,
}

/// `--memory auto`: the fastest profile whose estimated need for one guided `width` x `height`
/// image fits the device's memory; `cpu` when none does (the caller then selects the CPU
/// backend), or on the CPU backend; `full` when the device's memory size or the model's
/// architecture is unknown, saying so.
pub fn choose_auto(
    source: &ModelSource,
    device: &SelectedDevice,
    precision: Option<Precision>,
    width: usize,
    height: usize,
) -> Result<AutoChoice> {
    let choice = |profile, reason: String| Ok(AutoChoice { profile, reason });
    if device.kind == crate::BackendKind::Cpu {
        return choice(MemoryProfile::Cpu, "the CPU backend runs everything".into());
    }
    let Some(available) = device.memory_for_fit() else {
        return choice(
            MemoryProfile::Full,
            format!(
                "{} does not report its memory size, so auto keeps full; --memory-limit GIB tells it",
                device.info.name
            ),
        );
    };
    let Some(preset) = Pipeline::preset_of(source)? else {
        return choice(
            MemoryProfile::Full,
            "the model is not one of the built-in architectures, whose needs are measured, so auto keeps full".into(),
        );
    };
    let family = preset.family();
    let vae = preset.configs().vae;
    let precision = precision.unwrap_or_else(|| device.default_precision());
    let work = Workload {
        width,
        height,
        batch: 1,
        guided: true,
        vae_tile: vae.sample_size,
    };
    let need = |p: MemoryProfile| {
        let options = p.load_options(LoadOptions::default());
        estimate(
            family,
            &Placement::for_model(family, &vae, precision, &options),
            &work,
        )
    };
    match first_fitting(available, need) {
        Some((profile, need)) => choice(
            profile,
            format!(
                "needs about {} of the {} the device has ({})",
                gib(need.peak()),
                gib(available),
                device.memory_for_fit_meaning()
            ),
        ),
        None => choice(
            MemoryProfile::Cpu,
            format!(
                "even minimal needs about {} and the device has {} ({})",
                gib(need(MemoryProfile::Minimal).peak()),
                gib(available),
                device.memory_for_fit_meaning()
            ),
        ),
    }
}

/// `bytes` as "3.2 GiB".
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::config::VaeConfig;
    use crate::pipeline::LoadOptions;

    fn placement(family: Family, profile: MemoryProfile, precision: Precision) -> Placement {
        let options = profile.load_options(LoadOptions::default());
        let vae = VaeConfig::sd15();
        Placement::for_model(family, &vae, precision, &options)
    }

    /// One guided image of `side` pixels; SDXL's VAE tiles are 1024 pixels, the others' 512.
    fn work(side: usize) -> Workload {
        Workload {
            width: side,
            height: side,
            batch: 1,
            guided: true,
            vae_tile: if side >= 1024 { 1024 } else { 512 },
        }
    }

    #[test]
    fn each_device_profile_needs_less_than_the_one_before() {
        for (family, side) in [(Family::Sd1, 512), (Family::Sd2, 768), (Family::Sdxl, 1024)] {
            let needs: Vec<u64> = DEVICE_PROFILES
                .into_iter()
                .map(|p| {
                    estimate(family, &placement(family, p, Precision::F16), &work(side)).peak()
                })
                .collect();
            assert!(needs.windows(2).all(|w| w[0] > w[1]), "{family}: {needs:?}");
        }
    }

    #[test]
    fn the_need_counts_weights_and_grows_with_the_image() {
        let full = placement(Family::Sd1, MemoryProfile::Full, Precision::F16);
        let small = estimate(Family::Sd1, &full, &work(256));
        let large = estimate(Family::Sd1, &full, &work(1024));
        // At least the f16 weights of all three components.
        assert!(small.peak() > (123_060_480 + 859_520_964 + 49_490_199) * 2);
        assert!(large.denoise > small.denoise && large.decode > small.decode);
        // f32 holds twice the weights.
        let f32 = placement(Family::Sd1, MemoryProfile::Full, Precision::F32);
        assert!(estimate(Family::Sd1, &f32, &work(512)).peak() > small.peak() * 3 / 2);
        // Sequential guidance halves the UNet's activations; a batch of two doubles them.
        let low = placement(Family::Sd1, MemoryProfile::Low, Precision::F16);
        let mut two = work(512);
        two.batch = 2;
        let one = estimate(Family::Sd1, &low, &work(512)).denoise;
        assert!(estimate(Family::Sd1, &low, &two).denoise > one);
    }

    /// The estimate against the peaks measured on lavapipe (SD1.5, 512x512, f16; README): never
    /// below them, and not far above. The measured runs decoded in tiles (lavapipe's 128 MiB
    /// buffers: 352-pixel tiles for full, balanced and low; minimal's own 256-pixel tiles), so
    /// the estimate is made for those tiles.
    #[test]
    fn the_estimate_covers_the_measured_peaks() {
        let mib = 1u64 << 20;
        let measured = [
            (MemoryProfile::Full, 352, 2488 * mib),
            (MemoryProfile::Balanced, 352, 2304 * mib),
            (MemoryProfile::Low, 352, 2104 * mib),
            (MemoryProfile::Minimal, 512, 1328 * mib),
        ];
        for (profile, tile, peak) in measured {
            let mut placement = placement(Family::Sd1, profile, Precision::F16);
            placement.vae_tiling = true;
            let mut work = work(512);
            work.vae_tile = tile;
            let need = estimate(Family::Sd1, &placement, &work).peak();
            assert!(
                (peak..peak * 5 / 4).contains(&need),
                "{profile}: estimated {need}, measured {peak}"
            );
        }
        // The target: SD1.5 at 512x512 under 2.5 GB in minimal.
        let minimal = placement(Family::Sd1, MemoryProfile::Minimal, Precision::F16);
        assert!(estimate(Family::Sd1, &minimal, &work(512)).peak() < 2_500_000_000);

        // SDXL at 1024x1024 in minimal on lavapipe: the step's peak reserved (decoding was not
        // measured: lavapipe's 128 MiB buffers would have cut its tiles smaller than a GPU's).
        let minimal = placement(Family::Sdxl, MemoryProfile::Minimal, Precision::F16);
        let denoise = estimate(Family::Sdxl, &minimal, &work(1024)).denoise;
        let peak = 3168 * mib;
        assert!(
            (peak..peak * 5 / 4).contains(&denoise),
            "SDXL minimal: estimated {denoise}, measured {peak}"
        );
        // The target: SDXL at 1024x1024 under 4 GB in minimal.
        assert!(estimate(Family::Sdxl, &minimal, &work(1024)).peak() < 4_000_000_000);

        // SDXL on lavapipe (f16), one row and two: the step's peak reserved.
        for (profile, side, peak) in [
            (MemoryProfile::Low, 512, 5632 * mib),
            (MemoryProfile::Full, 512, 7104 * mib),
            (MemoryProfile::Low, 1024, 5728 * mib),
            (MemoryProfile::Balanced, 1024, 5952 * mib),
            (MemoryProfile::Full, 1024, 7352 * mib),
        ] {
            let placement = placement(Family::Sdxl, profile, Precision::F16);
            let denoise = estimate(Family::Sdxl, &placement, &work(side)).denoise;
            assert!(
                (peak..peak * 5 / 4).contains(&denoise),
                "SDXL {profile} at {side}: estimated {denoise}, measured {peak}"
            );
        }

        // The VAE in f32, untiled: SD1.5 at 352x352 in balanced on lavapipe, its peak reserved
        // (the decode's).
        let balanced = placement(Family::Sd1, MemoryProfile::Balanced, Precision::F32);
        let need = estimate(Family::Sd1, &balanced, &work(352));
        let peak = 4424 * mib;
        assert!(need.decode > need.denoise);
        assert!(
            (peak..peak * 5 / 4).contains(&need.peak()),
            "SD1.5 f32 balanced at 352: estimated {}, measured {peak}",
            need.peak()
        );
    }

    #[test]
    fn the_first_fitting_profile_is_the_fastest_that_fits() {
        let need = |p| {
            estimate(
                Family::Sdxl,
                &placement(Family::Sdxl, p, Precision::F16),
                &work(1024),
            )
        };
        let huge = 80u64 << 30;
        assert_eq!(first_fitting(huge, need).unwrap().0, MemoryProfile::Full);
        let minimal = need(MemoryProfile::Minimal).peak();
        assert_eq!(
            first_fitting(minimal, need).unwrap().0,
            MemoryProfile::Minimal
        );
        assert_eq!(first_fitting(minimal - 1, need), None);
        assert_eq!(gib(3 << 29), "1.5 GiB");
    }

    /// A GPU-like device of `memory` bytes (the CPU backend underneath: nothing runs).
    fn gpu(memory: Option<u64>) -> SelectedDevice {
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

    #[test]
    fn auto_picks_the_fastest_profile_that_fits_and_says_why() {
        let sd15 = ModelSource::Synthetic(crate::Preset::Sd15);
        let choose = |device: &SelectedDevice| {
            choose_auto(&sd15, device, Some(Precision::F16), 512, 512).unwrap()
        };
        assert_eq!(choose(&gpu(Some(24 << 30))).profile, MemoryProfile::Full);
        let need = |p: MemoryProfile| {
            let placement = placement(Family::Sd1, p, Precision::F16);
            estimate(Family::Sd1, &placement, &work(512)).peak()
        };
        let just_low = gpu(Some(need(MemoryProfile::Low)));
        let low = choose(&just_low);
        assert_eq!(low.profile, MemoryProfile::Low);
        assert!(low.reason.starts_with("needs about"), "{}", low.reason);
        // The limit wins over the driver's figure.
        let mut limited = gpu(Some(24 << 30));
        limited.memory_limit = Some(need(MemoryProfile::Minimal) - 1);
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
}
