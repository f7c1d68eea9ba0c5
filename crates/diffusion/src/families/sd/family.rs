//! Stable Diffusion's architectures as the registry describes them: the upstream models'
//! parameters and the UNet step's measured memory coefficients.

use crate::families::sd::FAMILY;
use crate::pipeline::family::{Architecture, Family};
use crate::pipeline::memory_need::{
    int8_dequantize_bytes, DenoiserMemory, RequestShape, UpstreamParameters,
};
use crate::pipeline::Placement;

pub static SD1: Architecture = Architecture {
    name: "sd1",
    usual_side: 512,
    descriptor: &FAMILY,
    upstream: || upstream(123_060_480, 859_520_964),
    denoiser_memory: SD_MEMORY,
    honours_vae_force_upcast: false,
    image_to_image: true,
};

pub static SD2: Architecture = Architecture {
    name: "sd2",
    usual_side: 768,
    upstream: || upstream(340_387_840, 865_910_724),
    ..SD1
};

pub static SDXL: Architecture = Architecture {
    name: "sdxl",
    usual_side: 1024,
    upstream: || upstream(123_060_480 + 694_659_840, 2_567_463_684),
    denoiser_memory: DenoiserMemory {
        load_pool_percent: 0,
        int8_load_pool_percent: 0,
        load_pool_bytes: 0,
        step_bytes: sdxl_step_bytes,
    },
    honours_vae_force_upcast: true,
    ..SD1
};

/// stable-diffusion-v1-5, stable-diffusion-2-1 and stable-diffusion-xl-base-1.0 (text encoders
/// and UNet counted from their diffusers configs, as `tests/integration/synthetic.rs` checks for
/// SD1.5), with SD's VAE.
fn upstream(text_encoders: u64, denoiser: u64) -> UpstreamParameters {
    UpstreamParameters {
        text_encoders,
        denoiser,
        denoiser_full_precision: 0,
        vae_decoder: 49_490_199,
        vae_encoder: 34_163_664,
    }
}

const SD_MEMORY: DenoiserMemory = DenoiserMemory {
    load_pool_percent: 0,
    int8_load_pool_percent: 0,
    load_pool_bytes: 0,
    step_bytes: sd_step_bytes,
};

impl Family {
    pub const SD1: Family = Family(&SD1);
    pub const SD2: Family = Family(&SD2);
    pub const SDXL: Family = Family(&SDXL);
}

/// A denoising step's device memory beyond the weights, in f16 per latent pixel: a part that
/// does not depend on the rows the UNet runs at once (the allocator's pools, attention chunks)
/// and a part per row (f32 doubles both). SD's, from SD1.5 at 512x512 on lavapipe (64x64
/// latents), the allocator's peak reserved during the step less its in-use bytes after loading:
/// 455 MiB with batched guidance (2 rows, `full`) and 370 MiB with sequential guidance (1 row,
/// `low`): 85 MiB per row and 285 MiB besides (docs/memory.md). A later run (group
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
const INT8_DEQUANTIZE_BYTES: u64 = int8_dequantize_bytes(29_491_200);

/// SD1.x's and SD2.x's UNet step: `rows` rows over the latent pixels.
fn sd_step_bytes(work: &RequestShape, rows: u64, placement: &Placement) -> u64 {
    unet_step_bytes(
        work,
        rows,
        placement,
        SD_UNET_STEP_BYTES_PER_LATENT_PIXEL,
        SD_UNET_ROW_BYTES_PER_LATENT_PIXEL,
    )
}

/// SDXL's UNet step, with the pools its coefficients leave out.
fn sdxl_step_bytes(work: &RequestShape, rows: u64, placement: &Placement) -> u64 {
    SDXL_UNET_POOL_BYTES
        + unet_step_bytes(
            work,
            rows,
            placement,
            SDXL_UNET_STEP_BYTES_PER_LATENT_PIXEL,
            SDXL_UNET_ROW_BYTES_PER_LATENT_PIXEL,
        )
}

fn unet_step_bytes(
    work: &RequestShape,
    rows: u64,
    placement: &Placement,
    per_step: u64,
    per_row: u64,
) -> u64 {
    let latent_pixels = (work.width / 8 * (work.height / 8)) as u64;
    let activations = (per_step + per_row * rows) * latent_pixels * placement.denoiser.bytes() / 2;
    match placement.denoiser_int8 {
        true => activations + INT8_DEQUANTIZE_BYTES,
        false => activations,
    }
}
