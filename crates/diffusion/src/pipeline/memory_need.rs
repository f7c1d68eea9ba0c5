//! How much device memory a placement needs for a request, known before any weight is read: the
//! weights it keeps on the device plus the largest activations of encoding (image-to-image),
//! denoising and decoding. The parameter counts are the model's own (a folder's weight files'
//! headers; the upstream model's for checkpoints and synthetic weights); the activation
//! coefficients are the family's, from peaks measured with `--vram-report` (docs/memory.md), with
//! a margin for the allocator's pools.

use crate::device::SelectedDevice;
use crate::error::{DiffusionError, Result};
use crate::io::ggml_blocks::GgmlType;
use crate::io::kept_weights::{code_bytes, KeptWeights};
use crate::io::safetensors::StDtype;
use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::models::vae_tiling::VaeTiles;
use crate::pipeline::memory::MemoryProfile;
use crate::pipeline::{Family, LoadOptions, Placement};

/// What a model holds, which its need is estimated from: its family (whose measured activation
/// coefficients below apply), each component's parameters and its VAE's tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSize {
    pub family: Family,
    /// Both text encoders for SDXL.
    pub text_encoder_params: u64,
    pub denoiser_params: u64,
    /// Of `denoiser_params`, those that int8 runs keep in the run's precision beyond the 2% that
    /// `estimate` allows every family (FLUX.2 klein's modulations and embedders; 0 for SD).
    pub denoiser_full_precision_params: u64,
    /// The VAE's decoder and `post_quant_conv`: what text-to-image runs.
    pub vae_decoder_params: u64,
    /// The VAE's encoder and `quant_conv`: loaded for image-to-image.
    pub vae_encoder_params: u64,
    /// The VAE's tile side in pixels (its config's `sample_size`, diffusers'
    /// `tile_sample_min_size`): SD1.x's 512, SD2.1's 768, SDXL's 1024.
    pub vae_tile: usize,
    /// Of `denoiser_params`, those its file keeps in their codes (GGUF, FP8), and their bytes.
    pub denoiser_kept: KeptWeights,
}

/// An upstream model's parameters (what a single-file checkpoint or synthetic weights hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamParameters {
    pub text_encoders: u64,
    pub denoiser: u64,
    /// Of `denoiser`, those int8 runs keep in the run's precision (`ModelSize`).
    pub denoiser_full_precision: u64,
    pub vae_decoder: u64,
    pub vae_encoder: u64,
}

/// An architecture's denoiser memory beyond its weights, from its measured coefficients.
#[derive(Debug, Clone, Copy)]
pub struct DenoiserMemory {
    /// Pool pages the denoiser's weights only partly fill, as a percentage of its weight bytes
    /// (0 where the coefficients were measured on whole models, pages included).
    pub load_pool_percent: u64,
    /// The same with int8 weights, whose tensors are half the size and fill pages differently.
    pub int8_load_pool_percent: u64,
    /// Pool bytes the load leaves besides, whatever the model's depth (0 where the percentage was
    /// fitted with none).
    pub load_pool_bytes: u64,
    /// One denoising step's activations for `work` with `rows` rows at once (guidance's two rows
    /// per image, or one), int8 dequantization included.
    pub step_bytes: fn(work: &RequestShape, rows: u64, placement: &Placement) -> u64,
}

impl ModelSize {
    /// The upstream model of `family` with a VAE of `vae_tile`-pixel tiles: what a single-file
    /// checkpoint or synthetic weights hold.
    pub fn upstream(family: Family, vae_tile: usize) -> Self {
        let p = (family.architecture().upstream)();
        ModelSize {
            family,
            text_encoder_params: p.text_encoders,
            denoiser_params: p.denoiser,
            denoiser_full_precision_params: p.denoiser_full_precision,
            vae_decoder_params: p.vae_decoder,
            vae_encoder_params: p.vae_encoder,
            vae_tile,
            denoiser_kept: KeptWeights::default(),
        }
    }
}

/// Int8 weights are dequantized one layer at a time: the largest layer of `weights` weights
/// needs its packed bytes unpacked and its f16 copy, about 4 bytes a weight, besides the
/// activations.
pub const fn int8_dequantize_bytes(weights: u64) -> u64 {
    4 * weights
}

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
pub(crate) const VAE_F16_BYTES_PER_PIXEL: u64 = 4_700;
const VAE_F32_POOL_BYTES: u64 = 512 << 20;
const VAE_F32_BYTES_PER_PIXEL: u64 = 6_700;

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
    let denoiser = denoiser_weight_bytes(size, placement);
    let memory = family.architecture().denoiser_memory;
    let pool_percent = match placement.denoiser_int8 {
        true => memory.int8_load_pool_percent,
        false => memory.load_pool_percent,
    };
    let denoiser = denoiser + denoiser * pool_percent / 100 + memory.load_pool_bytes;
    let vae = if placement.vae_on_cpu {
        0
    } else {
        let encoder = match placement.vae_encoder || work.image_to_image {
            true => size.vae_encoder_params,
            false => 0,
        };
        (size.vae_decoder_params + encoder) * placement.vae.bytes()
    };
    let denoiser_activations = denoiser_step_bytes(size, placement, work);
    let vae_pixels = vae_pixels(size, placement, work);
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
    let denoiser_while_decoding = if placement.denoiser_offload {
        0
    } else {
        denoiser
    };
    MemoryNeed {
        // Before denoising the denoiser is on the device (after a first image, `denoiser_offload`
        // brings it back only for the steps, but a first image's encode has it there).
        encode: match work.image_to_image {
            true => text + denoiser + vae + vae_activations,
            false => 0,
        },
        denoise: text + denoiser + vae + denoiser_activations,
        decode: text + denoiser_while_decoding + vae + vae_activations,
    }
}

/// The denoiser's weights as the placement holds them. Int8: a byte per weight, plus the scales and
/// SD's few layers kept in the run's precision (2%), plus the layers a family names as kept.
/// Weights kept in their file's codes (GGUF, FP8) count their codes' bytes and the working memory
/// of dequantizing the largest of them, whatever the placement.
pub(crate) fn denoiser_weight_bytes(size: &ModelSize, placement: &Placement) -> u64 {
    let coded = &size.denoiser_kept;
    let params = size.denoiser_params.saturating_sub(coded.params);
    let coded_bytes = if coded.params > 0 {
        coded.device_bytes + coded.dequantize_bytes(placement.denoiser.bytes())
    } else {
        0
    };
    coded_bytes
        + if placement.denoiser_int8 {
            let full = size.denoiser_full_precision_params.min(params);
            (params - full) * 102 / 100 + full * placement.denoiser.bytes()
        } else {
            params * placement.denoiser.bytes()
        }
}

/// The activations of one denoising step (the family's measured coefficients).
pub(crate) fn denoiser_step_bytes(
    size: &ModelSize,
    placement: &Placement,
    work: &RequestShape,
) -> u64 {
    let rows = work.batch as u64
        * if work.guided && !placement.sequential_cfg {
            2
        } else {
            1
        };
    // A denoiser whose weights are all kept in their file's codes (but for 1% at most) has no
    // int8 layers to unpack: its largest matrix's dequantization is counted with its weights
    // (`denoiser_weight_bytes`). Where that matrix is not known (`largest` 0: an estimate of a
    // file not at hand), the int8 layers' working memory, which is larger, stands for it.
    let kept = &size.denoiser_kept;
    let int8_params = size
        .denoiser_params
        .saturating_sub(size.denoiser_full_precision_params + kept.params);
    let int8_layers = kept.largest == 0 || int8_params * 100 > size.denoiser_params;
    let placement = Placement {
        denoiser_int8: placement.denoiser_int8 && int8_layers,
        ..*placement
    };
    (size.family.architecture().denoiser_memory.step_bytes)(work, rows, &placement)
}

/// The pixels one VAE pass holds activations for. Images decode one at a time, and
/// image-to-image encodes its one picture; a tiled pass holds one tile's activations. The
/// encoder's are taken as the decoder's, which bound them: at every resolution it has at most the
/// decoder's channels and fewer layers. FLUX.2's reference pictures encode one at a time, each at
/// most about 1024x1024; their sum bounds the largest.
pub(crate) fn vae_pixels(size: &ModelSize, placement: &Placement, work: &RequestShape) -> u64 {
    let pixels = (work.width * work.height).max(work.reference_pixels) as u64;
    if !placement.vae_tiling {
        return pixels;
    }
    let side = match placement.small_vae_tiles {
        true => size.vae_tile / 2,
        false => size.vae_tile,
    };
    // Rounded as the pipeline rounds it (every family's VAE scales by 8).
    let tile = VaeTiles::new(side, 8).sample;
    pixels.min((tile * tile) as u64)
}

/// What a pipeline keeps to check requests against the device's memory: the model's size, its
/// VAE's config and the load's options.
#[derive(Debug, Clone)]
pub struct FitContext {
    pub size: ModelSize,
    pub vae: VaeConfig,
    pub options: LoadOptions,
    /// A step-distilled model makes one denoiser call a step whatever the guidance.
    pub one_call_per_step: bool,
}

impl FitContext {
    pub fn new(size: ModelSize, vae: VaeConfig, options: LoadOptions) -> Self {
        FitContext {
            size,
            vae,
            options,
            one_call_per_step: false,
        }
    }

    /// `check_fit` for `work` on `device` with `placement`.
    pub fn check(
        &self,
        placement: &Placement,
        device: &SelectedDevice,
        work: &RequestShape,
    ) -> Result<()> {
        let work = RequestShape {
            guided: work.guided && !self.one_call_per_step,
            ..*work
        };
        check_fit(
            &self.size,
            &self.vae,
            placement,
            device,
            &work,
            &self.options,
        )
    }

    /// `check` for the request the front end plans, else one guided image at the family's usual
    /// size: a placement that cannot hold it is refused before any weight is read.
    pub fn check_planned(&self, placement: &Placement, device: &SelectedDevice) -> Result<()> {
        let planned = self
            .options
            .planned
            .unwrap_or_else(|| RequestShape::usual(self.size.family));
        self.check(placement, device, &planned)
    }

    /// The memory profile the load's options are (`None` for options no profile gives).
    pub fn profile(&self) -> Option<MemoryProfile> {
        MemoryProfile::of_options(&self.options)
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
            placement.denoiser,
            &profile.load_options(base),
        )
    };
    let current = MemoryProfile::of_options(options).map_or("this placement".to_string(), |p| {
        format!("the {p} memory profile")
    });
    let fitting = first_fitting(available, |p| estimate(size, &placement_of(p), work));
    let advice = match fitting {
        Some((profile, need)) => format!(
            "--memory {profile}{} needs about {} (in the app: System, Memory profile)",
            int8_remark(size, profile),
            gib(need.peak())
        ),
        None => no_profile_fits(size, &placement_of(MemoryProfile::Minimal), work, available),
    };
    Err(DiffusionError::DoesNotFit(format!(
        "out of device memory before starting: {current} needs about {} for {} \
         ({}, {}) but {} has {} ({}); {advice}",
        gib(need.peak()),
        work.describe(),
        size.family,
        placement.denoiser.name(),
        device.info.name,
        gib(available),
        device.memory_for_fit_meaning(),
    )))
}

/// What `minimal` is, where it fits a model whose file is not already in codes: its denoiser's
/// weights in int8, as small on the device as an 8-bit file's (so no such file is needed).
fn int8_remark(size: &ModelSize, profile: MemoryProfile) -> &'static str {
    match profile == MemoryProfile::Minimal && size.denoiser_kept.params == 0 {
        true => " (the denoiser's weights in int8: as small as an FP8 or Q8_0 file of it)",
        false => "",
    }
}

/// The advice when no profile fits the model's weights: a 4-bit file of the model where one would
/// fit (`four_bit_advice`), else the CPU or a smaller request.
fn no_profile_fits(
    size: &ModelSize,
    minimal: &Placement,
    work: &RequestShape,
    available: u64,
) -> String {
    match four_bit_advice(size, minimal, work, available) {
        Some(advice) => format!("no profile fits these weights, but {advice}"),
        None => "no profile on this device fits: use --memory cpu, a smaller size or fewer images \
                 per batch"
            .to_string(),
    }
}

/// "with the denoiser in 4-bit codes (a Q4_K GGUF file...) --memory minimal needs about X" where
/// such a file of the model would fit `available` bytes in `minimal` (its placement given), and
/// the model's own file is not that small already.
pub fn four_bit_advice(
    size: &ModelSize,
    minimal: &Placement,
    work: &RequestShape,
    available: u64,
) -> Option<String> {
    let need = estimate(&in_four_bit_codes(size)?, minimal, work).peak();
    (need <= available).then(|| {
        format!(
            "with the denoiser in 4-bit codes (a Q4_K GGUF file of this model, given with \
             --model; `sdbench models` lists the files it finds) --memory minimal needs about {}",
            gib(need)
        )
    })
}

/// The model with its denoiser's matrices in Q4_K codes (the 4-bit GGUF people run most) as the
/// device keeps them (`code_bytes`); the layers every run keeps in full precision stay so. `None`
/// when its file's codes are that small already. The largest matrix's dequantization is counted
/// by `minimal`'s int8 working memory, which is larger.
fn in_four_bit_codes(size: &ModelSize) -> Option<ModelSize> {
    const SIDE: usize = 4096;
    let q4_k = StDtype::Ggml(GgmlType::Q4K);
    let bytes_per_matrix = code_bytes(q4_k, SIDE, SIDE)?;
    let per_matrix = (SIDE * SIDE) as u64;
    let kept = &size.denoiser_kept;
    if kept.params > 0 && kept.device_bytes * per_matrix <= kept.params * bytes_per_matrix {
        return None;
    }
    let params = size.denoiser_params
        - size
            .denoiser_full_precision_params
            .min(size.denoiser_params);
    Some(ModelSize {
        denoiser_kept: KeptWeights {
            params,
            device_bytes: params * bytes_per_matrix / per_matrix,
            largest: 0,
        },
        ..*size
    })
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

/// `bytes` as "3.2 GiB".
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
#[path = "memory_need_tests.rs"]
mod tests;
