//! How much device memory a placement needs for a request, known before any weight is read: the
//! weights it keeps on the device plus the largest activations of encoding (image-to-image),
//! denoising and decoding. The parameter counts are the model's own (a folder's weight files'
//! headers; the upstream model's for checkpoints and synthetic weights); the activation
//! coefficients are the family's, from peaks measured with `--vram-report` (README, "Memory
//! profiles"), with a margin for the allocator's pools.

use crate::device::SelectedDevice;
use crate::error::{DiffusionError, Result};
use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::models::flux2::transformer::Flux2TransformerConfig;
use crate::models::qwen3::Qwen3Config;
use crate::models::vae_tiling::VaeTiles;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::{Family, LoadOptions, ModelSource, Pipeline, Placement};

/// What a model holds, which its need is estimated from: its family (whose measured activation
/// coefficients below apply), each component's parameters and its VAE's tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSize {
    pub family: Family,
    /// Both text encoders for SDXL.
    pub text_encoder_params: u64,
    pub unet_params: u64,
    /// Of `unet_params`, those that int8 runs keep in the run's precision beyond the 2% that
    /// `estimate` allows every family (FLUX.2 klein's modulations and embedders; 0 for SD).
    pub unet_full_precision_params: u64,
    /// The VAE's decoder and `post_quant_conv`: what text-to-image runs.
    pub vae_decoder_params: u64,
    /// The VAE's encoder and `quant_conv`: loaded for image-to-image.
    pub vae_encoder_params: u64,
    /// The VAE's tile side in pixels (its config's `sample_size`, diffusers'
    /// `tile_sample_min_size`): SD1.x's 512, SD2.1's 768, SDXL's 1024.
    pub vae_tile: usize,
}

impl ModelSize {
    /// The upstream model of `family` (stable-diffusion-v1-5, stable-diffusion-2-1,
    /// stable-diffusion-xl-base-1.0: parameters counted from their diffusers configs, as
    /// `tests/integration/synthetic.rs` checks for SD1.5) with a VAE of `vae_tile`-pixel tiles.
    /// What a single-file checkpoint or synthetic weights hold.
    pub fn upstream(family: Family, vae_tile: usize) -> Self {
        let (text_encoder_params, unet_params, unet_full_precision_params) = match family {
            Family::Sd1 => (123_060_480, 859_520_964, 0),
            Family::Sd2 => (340_387_840, 865_910_724, 0),
            Family::Sdxl => (123_060_480 + 694_659_840, 2_567_463_684, 0),
            // FLUX.2-klein-4B: the Qwen3-4B layers the pipeline runs, and the transformer.
            Family::Flux2Klein => (
                Qwen3Config::qwen3_4b().parameters(crate::models::flux2::text_layers()),
                Flux2TransformerConfig::klein_4b().parameters(),
                Flux2TransformerConfig::klein_4b().full_precision_parameters(),
            ),
        };
        // FLUX.2's VAE is SD's with 32 latent channels: wider conv_in/post_quant_conv and
        // conv_out/quant_conv (130,060 and 262,192 more parameters).
        let (vae_decoder_params, vae_encoder_params) = match family {
            Family::Flux2Klein => (49_620_259, 34_425_856),
            _ => (49_490_199, 34_163_664),
        };
        ModelSize {
            family,
            text_encoder_params,
            unet_params,
            unet_full_precision_params,
            vae_decoder_params,
            vae_encoder_params,
            vae_tile,
        }
    }
}

/// A denoising step's device memory beyond the weights, in f16 per latent pixel: a part that
/// does not depend on the rows the UNet runs at once (the allocator's pools, attention chunks)
/// and a part per row (f32 doubles both). SD's, from SD1.5 at 512x512 on lavapipe (64x64
/// latents), the allocator's peak reserved during the step less its in-use bytes after loading:
/// 455 MiB with batched guidance (2 rows, `full`) and 370 MiB with sequential guidance (1 row,
/// `low`): 85 MiB per row and 285 MiB besides (README, "Memory profiles"). A later run (group
/// norm in two steps) peaked at 282 MiB over the weights in `low`: the coefficients keep the
/// larger figures.
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
/// The VAE's activations (every family's VAE has the same shape; SDXL's decodes in f32): a part
/// per output pixel and the allocator's pools beside it, measured on lavapipe as a decode's peak
/// reserved bytes over the weights in use, SD1.5 decoding untiled in f16 (`full`) and f32
/// (`balanced`) at 256x256 and 352x352 (the widest lavapipe's 128 MiB buffers take). f16: 495
/// and 751 MiB, 4.6 KB per pixel beside the 208 MiB the load left pooled; f32: 892 and 1116 MiB,
/// where a line through both gives the pools 640 MiB and the pixels 4.0 KB, under f16's, as the
/// decode reuses what loading f32 weights left pooled (476 MiB): taken as 512 MiB and 6.7 KB, the
/// larger of the two sizes' per-pixel figures over the load's reserved bytes, so that large
/// decodes (SDXL's 1024 pixels) are not underestimated.
const VAE_F16_POOL_BYTES: u64 = 256 << 20;
const VAE_F16_BYTES_PER_PIXEL: u64 = 4_700;
const VAE_F32_POOL_BYTES: u64 = 512 << 20;
const VAE_F32_BYTES_PER_PIXEL: u64 = 6_700;

/// FLUX.2 klein's transformer step in f16: the allocator's pools and attention chunks, which do
/// not grow with the image, and a part per token of one row (text and image tokens alike).
/// Measured on lavapipe (README, "Memory profiles") with a model of klein 4B's widths and 1
/// double- and 4 single-stream blocks (of its 5 and 20: the blocks run one after another, so a
/// step's activations do not grow with depth) as the step's peak reserved bytes less the
/// reserved bytes after loading: in `minimal`, 464 MiB at 512x512 (1,536 tokens) and 656 MiB at
/// 1024x1024 (4,608 tokens), 64 KiB per token and 368 MiB besides (the largest int8 layer's
/// dequantization, below, among them); in `low` (f16 weights), 304 MiB and 592 MiB, 96
/// KiB per token and 160 MiB besides. The whole model's 1024x1024 step in `minimal` added the
/// same 656 MiB to its load's. Taken as 100 KB per token and 256 MiB.
const FLUX2_STEP_POOL_BYTES: u64 = 256 << 20;
const FLUX2_STEP_BYTES_PER_TOKEN: u64 = 100_000;
/// What loading FLUX.2 klein's transformer leaves reserved beyond its weights: pool pages its
/// tensors only partly fill, which handing unused memory back does not free. Measured on
/// lavapipe (f16) as the reserved bytes after loading less the in-use bytes, over the
/// transformer's device bytes: 159 over 1,075 MiB (1+4 blocks, `minimal`), 289 over 1,776 MiB
/// (1+4 blocks, `low`) and 780 over 3,886 MiB (the whole model, `minimal`): 15-20%, 22% of the
/// int8 layers alone in both `minimal` loads. Taken as 22%.
const FLUX2_LOAD_POOL_PERCENT: u64 = 22;
/// The largest int8 layer FLUX.2 klein dequantizes: a single block's `to_out`, 12,288 x 3072
/// weights (the fused projections load as their parts, each smaller), about 4 bytes a weight
/// while it is unpacked. Measured over each load's reserved bytes, `minimal`'s step took 64
/// (1024x1024) to 160 MiB (512x512) more than `low`'s.
const FLUX2_INT8_DEQUANTIZE_BYTES: u64 = 4 * 12_288 * 3072;

/// FLUX.2 klein's activations for one step of `work` at `rows` transformer rows.
fn flux2_step_bytes(work: &RequestShape, rows: u64, placement: &Placement) -> u64 {
    let tokens = (work.width / 16 * (work.height / 16)
        + work.reference_pixels / 256
        + crate::models::flux2::PROMPT_TOKENS) as u64;
    let mut step = FLUX2_STEP_BYTES_PER_TOKEN * tokens * rows * placement.unet.bytes() / 2
        + FLUX2_STEP_POOL_BYTES;
    if placement.unet_int8 {
        step += FLUX2_INT8_DEQUANTIZE_BYTES;
    }
    step
}

/// The request a need is estimated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestShape {
    pub width: usize,
    pub height: usize,
    pub batch: usize,
    /// Classifier-free guidance (guidance scale above 1).
    pub guided: bool,
    /// Image-to-image: the VAE encoder runs on the picture before denoising.
    pub image_to_image: bool,
    /// Reference pictures' pixels, all together (FLUX.2 klein: each 16x16 is one more token in
    /// every transformer call).
    pub reference_pixels: usize,
}

impl RequestShape {
    /// One guided text-to-image picture of `width` x `height`.
    pub fn image(width: usize, height: usize) -> Self {
        RequestShape {
            width,
            height,
            batch: 1,
            guided: true,
            image_to_image: false,
            reference_pixels: 0,
        }
    }

    /// One guided image at `family`'s usual size (SD1.x 512, SD2.x 768, SDXL and FLUX.2 1024):
    /// what a load with no planned request is checked for.
    pub fn usual(family: Family) -> Self {
        let side = family.usual_side();
        RequestShape::image(side, side)
    }

    /// "one 512x512 image", "4 768x768 images".
    pub fn describe(&self) -> String {
        let (w, h) = (self.width, self.height);
        match self.batch {
            1 => format!("one {w}x{h} image"),
            n => format!("{n} {w}x{h} images"),
        }
    }
}

/// Device bytes a placement needs in each phase; the largest is what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryNeed {
    /// Image-to-image's encoding of the picture (0 for text-to-image).
    pub encode: u64,
    pub denoise: u64,
    pub decode: u64,
}

impl MemoryNeed {
    pub fn peak(self) -> u64 {
        self.encode.max(self.denoise).max(self.decode)
    }
}

/// The device memory `placement` needs for `work` on a model of `size`.
pub fn estimate(size: &ModelSize, placement: &Placement, work: &RequestShape) -> MemoryNeed {
    let family = size.family;
    let text = if placement.text_encoders_on_cpu {
        0
    } else {
        size.text_encoder_params * placement.text_encoders.bytes()
    };
    // Int8: a byte per weight, plus the scales and SD's few layers kept in the run's precision
    // (2%), plus the layers a family names as kept.
    let unet = if placement.unet_int8 {
        let kept = size.unet_full_precision_params.min(size.unet_params);
        (size.unet_params - kept) * 102 / 100 + kept * placement.unet.bytes()
    } else {
        size.unet_params * placement.unet.bytes()
    };
    // With FLUX.2's, the pages its weights only partly fill (SD's coefficients were measured on
    // the whole models, their weights' pages included).
    let unet = match family {
        Family::Flux2Klein => unet + unet * FLUX2_LOAD_POOL_PERCENT / 100,
        _ => unet,
    };
    let vae = if placement.vae_on_cpu {
        0
    } else {
        let encoder = match placement.vae_encoder || work.image_to_image {
            true => size.vae_encoder_params,
            false => 0,
        };
        (size.vae_decoder_params + encoder) * placement.vae.bytes()
    };
    let latent_pixels = (work.width / 8 * (work.height / 8)) as u64;
    let rows = work.batch as u64
        * if work.guided && !placement.sequential_cfg {
            2
        } else {
            1
        };
    let (per_step, per_row) = match family {
        Family::Flux2Klein => (0, 0),
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
        (per_step + per_row * rows) * latent_pixels * placement.unet.bytes() / 2;
    if placement.unet_int8 {
        unet_activations += INT8_DEQUANTIZE_BYTES;
    }
    if family == Family::Sdxl {
        unet_activations += SDXL_UNET_POOL_BYTES;
    }
    if family == Family::Flux2Klein {
        unet_activations = flux2_step_bytes(work, rows, placement);
    }
    // Images decode one at a time, and image-to-image encodes its one picture; a tiled pass
    // holds one tile's activations. The encoder's are taken as the decoder's, which bound them:
    // at every resolution it has at most the decoder's channels and fewer layers.
    // FLUX.2's reference pictures encode one at a time, each at most about 1024x1024; their sum
    // bounds the largest.
    let mut vae_pixels = (work.width * work.height).max(work.reference_pixels) as u64;
    if placement.vae_tiling {
        let side = match placement.small_vae_tiles {
            true => size.vae_tile / 2,
            false => size.vae_tile,
        };
        // Rounded as the pipeline rounds it (every family's VAE scales by 8).
        let tile = VaeTiles::new(side, 8).sample;
        vae_pixels = vae_pixels.min((tile * tile) as u64);
    }
    let vae_activations = if placement.vae_on_cpu {
        0
    } else {
        match placement.vae {
            Precision::F16 | Precision::Bf16 => {
                VAE_F16_POOL_BYTES + vae_pixels * VAE_F16_BYTES_PER_PIXEL
            }
            Precision::F32 => VAE_F32_POOL_BYTES + vae_pixels * VAE_F32_BYTES_PER_PIXEL,
        }
    };
    let unet_while_decoding = if placement.unet_offload { 0 } else { unet };
    MemoryNeed {
        // Before denoising the UNet is on the device (after a first image, `unet_offload`
        // brings it back only for the steps, but a first image's encode has it there).
        encode: match work.image_to_image {
            true => text + unet + vae + vae_activations,
            false => 0,
        },
        denoise: text + unet + vae + unet_activations,
        decode: text + unet_while_decoding + vae + vae_activations,
    }
}

/// Refuses work that will not fit the device's memory, naming what it needs and the profile that
/// would fit. Checked where the device's memory size is known (the free memory NVML or amdgpu's
/// sysfs report, the CUDA or HIP driver's total, or `--memory-limit`). `options`: the load's
/// (their profile is the one named; the others are tried with the same VAE encoder choice).
pub fn check_fit(
    size: &ModelSize,
    vae: &VaeConfig,
    placement: &Placement,
    device: &SelectedDevice,
    work: &RequestShape,
    options: &LoadOptions,
) -> Result<()> {
    let Some(available) = device.memory_for_fit() else {
        return Ok(());
    };
    let need = estimate(size, placement, work);
    if need.peak() <= available {
        return Ok(());
    }
    let base = LoadOptions {
        vae_encoder: options.vae_encoder,
        ..LoadOptions::default()
    };
    let placement_of = |profile: MemoryProfile| {
        Placement::for_model(
            size.family,
            vae,
            placement.unet,
            &profile.load_options(base),
        )
    };
    let current = MemoryProfile::of_options(options).map_or("this placement".to_string(), |p| {
        format!("the {p} memory profile")
    });
    let fitting = first_fitting(available, |p| estimate(size, &placement_of(p), work));
    let advice = match fitting {
        Some((profile, need)) => format!(
            "--memory {profile} needs about {} (in the app: System, Memory profile)",
            gib(need.peak())
        ),
        None => "no profile on this device fits: use --memory cpu, a smaller size or fewer \
                 images per batch"
            .to_string(),
    };
    Err(DiffusionError::DoesNotFit(format!(
        "out of device memory before starting: {current} needs about {} for {} \
         ({}, {}) but {} has {} ({}); {advice}",
        gib(need.peak()),
        work.describe(),
        size.family,
        placement.unet.name(),
        device.info.name,
        gib(available),
        device.memory_for_fit_meaning(),
    )))
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

/// `--memory auto`: the fastest profile whose estimated need for `work` fits the device's memory;
/// `cpu` when none does (the caller then selects the CPU backend), or on the CPU backend; `full`
/// when the device's memory size is unknown, saying so.
pub fn choose_auto(
    source: &ModelSource,
    device: &SelectedDevice,
    precision: Option<Precision>,
    work: &RequestShape,
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
    let precision = precision.unwrap_or_else(|| device.default_precision());
    let (size, vae) = Pipeline::model_size(source, precision)?;
    let need = |p: MemoryProfile| {
        let options = p.load_options(LoadOptions {
            vae_encoder: work.image_to_image,
            ..LoadOptions::default()
        });
        estimate(
            &size,
            &Placement::for_model(size.family, &vae, precision, &options),
            work,
        )
    };
    let what = work.describe();
    match first_fitting(available, need) {
        Some((profile, need)) => choice(
            profile,
            format!(
                "needs about {} for {what} of the {} the device has ({})",
                gib(need.peak()),
                gib(available),
                device.memory_for_fit_meaning()
            ),
        ),
        None => choice(
            MemoryProfile::Cpu,
            format!(
                "even minimal needs about {} for {what} and the device has {} ({})",
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
#[path = "memory_need_tests.rs"]
mod tests;
