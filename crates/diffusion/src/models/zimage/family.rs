//! Z-Image as the registry describes it: its descriptor, architecture (the upstream model's
//! parameters, the transformer step's memory coefficients) and preset.

use super::pipeline::ZImagePipeline;
use super::spec::Spec;
use super::transformer::ZImageTransformerConfig;
use super::PROMPT_TOKENS;
use crate::error::Result;
use crate::models::qwen3::Qwen3Config;
use crate::pipeline::family::{Architecture, Family, FamilyDescriptor, Preset, PresetSpec};
use crate::pipeline::memory_need::{
    int8_dequantize_bytes, DenoiserMemory, RequestShape, UpstreamParameters,
};
use crate::pipeline::{FamilyPipeline, GenerateRequest, Placement};
use crate::scheduler::SchedulerKind;

/// Z-Image in the family registry.
pub static FAMILY: FamilyDescriptor = FamilyDescriptor {
    name: "Z-Image",
    classes: &[("ZImagePipeline", "Z-Image-Turbo")],
    architectures: &[Family(&ZIMAGE)],
    presets: &[Preset(&TURBO)],
    schedulers: &[SchedulerKind::FlowMatchEuler],
    reads_checkpoints: false,
    guidance_options: true,
    check_request,
    load: |source, device, precision, options| {
        let model: Box<dyn FamilyPipeline> =
            Box::new(ZImagePipeline::load(source, device, precision, options)?);
        Ok(model)
    },
    model_size: ZImagePipeline::model_size,
};

/// A bare Qwen3 text encoder (its penultimate hidden states at the real tokens), a
/// single-stream DiT on 2x2 patches of 16-channel latents, flow-matching Euler steps.
pub static ZIMAGE: Architecture = Architecture {
    name: "zimage",
    usual_side: 1024,
    descriptor: &FAMILY,
    upstream: upstream_turbo,
    denoiser_memory: DenoiserMemory {
        load_pool_percent: LOAD_POOL_PERCENT,
        step_bytes,
    },
    honours_vae_force_upcast: false,
    image_to_image: false,
};

/// Tongyi-MAI/Z-Image-Turbo (8-step distilled; runs without guidance).
static TURBO: PresetSpec = PresetSpec {
    name: "zimage-turbo",
    repository: "Tongyi-MAI/Z-Image-Turbo",
    family: Family(&ZIMAGE),
    short_label: "Z-Image-Turbo",
    long_label: "Z-Image-Turbo (6B)",
    // FLUX.2 klein's reasoning: 6.2B transformer parameters over about 4,100 tokens at
    // 1024x1024, one call per step, some 1.6 times klein's arithmetic: counted at 5 per pixel.
    step_cost: 5.0,
    op_cases: Some(super::op_cases::TURBO_OP_CASES),
};

impl Family {
    pub const ZIMAGE: Family = Family(&ZIMAGE);
}

impl Preset {
    pub const ZIMAGE_TURBO: Preset = Preset(&TURBO);
}

/// What Z-Image cannot do for any request, before a model is loaded: start from a picture or
/// take reference pictures (its scheduler is the registry's to check).
fn check_request(request: &GenerateRequest) -> Result<()> {
    if request.init_image.is_some() || !request.reference_images.is_empty() {
        return Err(crate::error::DiffusionError::Request(
            "Z-Image makes images from a prompt only: it takes no starting picture (--init-image) and no reference pictures (--reference-image)".into(),
        ));
    }
    Ok(())
}

/// Z-Image-Turbo: the Qwen3-4B layers the pipeline runs (35 of 36), the 6.15B transformer, and
/// FLUX.1's VAE (SD's with 16 latent channels and no quant convolutions; counted with diffusers'
/// `AutoencoderKL` of that config).
fn upstream_turbo() -> UpstreamParameters {
    let spec = Spec::turbo();
    UpstreamParameters {
        text_encoders: Qwen3Config::qwen3_4b().parameters(spec.text_layers()),
        denoiser: ZImageTransformerConfig::default().parameters(),
        denoiser_full_precision: 0,
        vae_decoder: 49_545_475,
        vae_encoder: 34_274_208,
    }
}

// Not yet measured on a device: FLUX.2 klein's coefficients (README, "Memory profiles"), scaled
// by the model widths (3840 against 3072) where they depend on them. A measurement on lavapipe
// the way klein's were replaces them.
/// The step's pools and attention chunks beside its tokens.
const STEP_POOL_BYTES: u64 = 256 << 20;
/// Per token of one row (image and caption tokens alike), in f16: klein's 100 KB times 1.25.
pub(crate) const STEP_BYTES_PER_TOKEN: u64 = 125_000;
/// Pool pages the transformer's weights only partly fill: klein's measured 22%.
const LOAD_POOL_PERCENT: u64 = 22;
/// The largest int8 layer: a block's `w1` or `w3`, 3840 x 10240 weights.
const INT8_DEQUANTIZE_BYTES: u64 = int8_dequantize_bytes(3840 * 10_240);

/// One step of `work` at `rows` transformer rows: the image's tokens and a caption of at most
/// 512, each padded to 32.
fn step_bytes(work: &RequestShape, rows: u64, placement: &Placement) -> u64 {
    let image = (work.width / 16 * (work.height / 16)).div_ceil(32) * 32;
    let tokens = (image + PROMPT_TOKENS) as u64;
    let mut step =
        STEP_BYTES_PER_TOKEN * tokens * rows * placement.denoiser.bytes() / 2 + STEP_POOL_BYTES;
    if placement.denoiser_int8 {
        step += INT8_DEQUANTIZE_BYTES;
    }
    step
}
