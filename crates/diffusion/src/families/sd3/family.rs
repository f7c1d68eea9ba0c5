//! Stable Diffusion 3 and 3.5 as the registry describes them: the descriptor, the architectures
//! (SD3.5 Medium's MMDiT-X, SD3.5 Large's MMDiT with QK norms, SD3 Medium's plain MMDiT), their
//! presets and the standard workload.

use super::pipeline::Sd3Pipeline;
use super::spec::Spec;
use super::transformer::Sd3TransformerConfig;
use super::{CLIP_TOKENS, T5_TOKENS};
use crate::error::{DiffusionError, Result};
use crate::models::t5::T5Config;
use crate::pipeline::family::WorkloadSpec;
use crate::pipeline::family::{
    Architecture, Component, ComponentKind as Kind, DenoiserFiles, Family, FamilyDescriptor,
    Preset, PresetSpec,
};
use crate::pipeline::memory_need::{
    int8_dequantize_bytes, DenoiserMemory, RequestShape, UpstreamParameters,
};
use crate::pipeline::workload::MLPERF_CLIENT_PROMPTS;
use crate::pipeline::{FamilyPipeline, GenerateRequest, Placement};
use crate::scheduler::SchedulerKind;

/// Stable Diffusion 3 and 3.5 in the family registry.
pub static FAMILY: FamilyDescriptor = FamilyDescriptor {
    name: "Stable Diffusion 3",
    classes: &[("StableDiffusion3Pipeline", "Stable Diffusion 3 or 3.5")],
    components: &[
        Component::required("text_encoder", Kind::ClipTextWithProjection),
        Component::required("text_encoder_2", Kind::ClipTextWithProjection),
        Component::optional("text_encoder_3", Kind::T5Text),
        Component::required("tokenizer", Kind::ClipTokenizer),
        Component::required("tokenizer_2", Kind::ClipTokenizer),
        Component::optional("tokenizer_3", Kind::TokenizerJson),
        Component::required("transformer", Kind::Transformer),
        Component::required("vae", Kind::Vae),
        Component::required("scheduler", Kind::Scheduler),
    ],
    architectures: &[
        Family(&SD35_MEDIUM),
        Family(&SD35_LARGE),
        Family(&SD3_MEDIUM),
    ],
    presets: &[
        Preset(&MEDIUM_35),
        Preset(&LARGE_35),
        Preset(&LARGE_TURBO_35),
        Preset(&MEDIUM_3),
    ],
    schedulers: &[SchedulerKind::FlowMatchEuler],
    checkpoints: None,
    // diffusers guides above 1 (Large Turbo runs at 0).
    guided: |scale| scale > 1.0,
    guidance_options: false,
    skip_layer_guidance: true,
    true_cfg: false,
    latents: "[batch, 16, H/8, W/8]",
    reference_pictures: false,
    check_request,
    load: |source, device, precision, options| {
        let model: Box<dyn FamilyPipeline> =
            Box::new(Sd3Pipeline::load(source, device, precision, options)?);
        Ok(model)
    },
    model_size: Sd3Pipeline::model_size,
    denoiser_files: Some(DenoiserFiles {
        preset: super::files::file_preset,
        part_fits: super::files::part_fits,
        inside: super::files::inside,
    }),
    // scripts/make_sd3_fixtures.py.
    parity_fixtures: &["tiny-sd3"],
    workloads: &[&MEDIUM_35_1024_40],
};

/// What SD3 cannot do for any request, before a model is loaded: start from a picture or take
/// reference pictures (its scheduler is the registry's to check).
fn check_request(request: &GenerateRequest) -> Result<()> {
    if request.init_image.is_some() || !request.reference_images.is_empty() {
        return Err(DiffusionError::Request(
            "Stable Diffusion 3 makes images from a prompt only here: it takes no starting picture (--init-image) and no reference pictures (--reference-image)".into(),
        ));
    }
    Ok(())
}

/// An architecture's statics: the upstream transformer it is sized by, and its width (what its
/// activations per token and its largest int8 layer scale with).
macro_rules! architecture {
    ($name:literal, $upstream:ident, $width:literal) => {
        Architecture {
            name: $name,
            usual_side: 1024,
            descriptor: &FAMILY,
            upstream: $upstream,
            denoiser_memory: DenoiserMemory {
                load_pool_percent: LOAD_POOL_PERCENT,
                int8_load_pool_percent: INT8_LOAD_POOL_PERCENT,
                load_pool_bytes: 0,
                step_bytes: |work, rows, placement| step_bytes(work, rows, placement, $width),
            },
            honours_vae_force_upcast: false,
            image_to_image: false,
        }
    };
}

/// SD3.5 Medium's MMDiT-X: a second, image-only attention in its first 13 blocks, QK norms.
pub static SD35_MEDIUM: Architecture = architecture!("sd35-medium", upstream_medium_35, 1536);
/// SD3.5 Large's (and Large Turbo's) MMDiT: 38 blocks of width 2432, QK norms.
pub static SD35_LARGE: Architecture = architecture!("sd35-large", upstream_large_35, 2432);
/// SD3 Medium's MMDiT: 24 blocks of width 1536, no QK norms.
pub static SD3_MEDIUM: Architecture = architecture!("sd3-medium", upstream_medium_3, 1536);

impl Family {
    pub const SD35_MEDIUM: Family = Family(&SD35_MEDIUM);
    pub const SD35_LARGE: Family = Family(&SD35_LARGE);
    pub const SD3_MEDIUM: Family = Family(&SD3_MEDIUM);
}

/// The architecture a transformer config is, by what sets them apart: a second attention in some
/// blocks (SD3.5 Medium's MMDiT-X), QK norms without it (SD3.5 Large's), neither (SD3's).
pub(super) fn family_of(config: &Sd3TransformerConfig) -> Family {
    match (
        config.dual_attention_layers.is_empty(),
        config.qk_norm.is_some(),
    ) {
        (false, _) => Family::SD35_MEDIUM,
        (true, true) => Family::SD35_LARGE,
        (true, false) => Family::SD3_MEDIUM,
    }
}

/// stabilityai/stable-diffusion-3.5-medium: 40 steps at guidance 4.5 on its model card.
static MEDIUM_35: PresetSpec = PresetSpec {
    name: "sd35-medium",
    repository: "stabilityai/stable-diffusion-3.5-medium",
    family: Family(&SD35_MEDIUM),
    short_label: "SD3.5 Medium",
    long_label: "Stable Diffusion 3.5 Medium (2.5B)",
    // Z-Image-Turbo's reasoning: a 2.5B transformer over 4,429 tokens at 1024x1024, two calls a
    // guided step, some 0.4 times Z-Image's arithmetic a call: counted at 2 per pixel.
    step_cost: 2.0,
    op_cases: Some(super::op_cases::MEDIUM_35_OP_CASES),
};

/// stabilityai/stable-diffusion-3.5-large: 28 steps at guidance 3.5 on its model card.
static LARGE_35: PresetSpec = PresetSpec {
    name: "sd35-large",
    repository: "stabilityai/stable-diffusion-3.5-large",
    family: Family(&SD35_LARGE),
    short_label: "SD3.5 Large",
    long_label: "Stable Diffusion 3.5 Large (8.1B)",
    // 3.3 times Medium's parameters a call: counted at 6.5.
    step_cost: 6.5,
    op_cases: Some(super::op_cases::LARGE_35_OP_CASES),
};

/// stabilityai/stable-diffusion-3.5-large-turbo: Large distilled to 4 steps without guidance.
static LARGE_TURBO_35: PresetSpec = PresetSpec {
    name: "sd35-large-turbo",
    repository: "stabilityai/stable-diffusion-3.5-large-turbo",
    family: Family(&SD35_LARGE),
    short_label: "SD3.5 Large Turbo",
    long_label: "Stable Diffusion 3.5 Large Turbo (8.1B, 4 steps)",
    step_cost: 6.5,
    op_cases: Some(super::op_cases::LARGE_35_OP_CASES),
};

/// stabilityai/stable-diffusion-3-medium-diffusers.
static MEDIUM_3: PresetSpec = PresetSpec {
    name: "sd3-medium",
    repository: "stabilityai/stable-diffusion-3-medium-diffusers",
    family: Family(&SD3_MEDIUM),
    short_label: "SD3 Medium",
    long_label: "Stable Diffusion 3 Medium (2B)",
    step_cost: 1.7,
    op_cases: Some(super::op_cases::MEDIUM_3_OP_CASES),
};

impl Preset {
    pub const SD35_MEDIUM: Preset = Preset(&MEDIUM_35);
    pub const SD35_LARGE: Preset = Preset(&LARGE_35);
    pub const SD35_LARGE_TURBO: Preset = Preset(&LARGE_TURBO_35);
    pub const SD3_MEDIUM: Preset = Preset(&MEDIUM_3);
}

/// The transformer config a preset is built with.
fn preset_transformer(preset: Preset) -> Option<Sd3TransformerConfig> {
    match preset {
        p if p == Preset::SD35_MEDIUM => Some(Sd3TransformerConfig::medium_35()),
        p if p == Preset::SD35_LARGE || p == Preset::SD35_LARGE_TURBO => {
            Some(Sd3TransformerConfig::large_35())
        }
        p if p == Preset::SD3_MEDIUM => Some(Sd3TransformerConfig::medium_3()),
        _ => None,
    }
}

/// A preset's built-in configs.
pub(super) fn built_in_spec(preset: Preset) -> Result<Spec> {
    let transformer = preset_transformer(preset).ok_or_else(|| {
        DiffusionError::Request(format!("{preset} is not a Stable Diffusion 3 preset"))
    })?;
    Ok(Spec::built_in(preset.repository(), transformer))
}

/// The preset whose configs a model's are (its weights may differ; its cost does not). Large
/// and Large Turbo share their configs: such a model is counted as Large.
pub(super) fn matching_preset(spec: &Spec) -> Option<Preset> {
    FAMILY.presets.iter().copied().find(|&preset| {
        let Ok(other) = built_in_spec(preset) else {
            return false;
        };
        other.transformer.value == spec.transformer.value
            && other.clip_l.value == spec.clip_l.value
            && other.clip_g.value == spec.clip_g.value
            && other.vae.value == spec.vae.value
            && spec.t5.as_ref().map(|c| &c.value) == other.t5.as_ref().map(|c| &c.value)
    })
}

/// `sd35-medium-1024-40` v1: SD3.5 Medium at its model card's settings, 1024x1024, 40 steps of
/// flow-matching Euler at guidance 4.5 (the empty negative prompt), on MLPerf Client 2.0's prompts
/// and seeds (sixteen images), so that it compares image for image with the other families'.
pub static MEDIUM_35_1024_40: WorkloadSpec = WorkloadSpec {
    name: "sd35-medium-1024-40",
    version: 1,
    preset: Preset(&MEDIUM_35),
    width: 1024,
    height: 1024,
    steps: 40,
    scheduler: SchedulerKind::FlowMatchEuler,
    guidance: 4.5,
    prompts: MLPERF_CLIENT_PROMPTS,
    note: " (its model card's settings; MLPerf Client 2.0's prompts and seeds)",
};

/// CLIP-L and CLIP-G with their projections (123,650,304 and 694,659,840 parameters) and
/// T5-XXL's encoder (4,762,310,656, its embeddings once), counted with transformers' models on
/// the meta device; SD3's VAE is FLUX.1's (49,545,475 decoder and 34,274,208 encoder
/// parameters, diffusers' `AutoencoderKL`).
fn upstream(transformer: Sd3TransformerConfig) -> UpstreamParameters {
    UpstreamParameters {
        text_encoders: 123_650_304 + 694_659_840 + T5Config::xxl().parameters(),
        // On the device: the positional table stays on the host.
        denoiser: transformer.parameters() - transformer.table_parameters(),
        denoiser_full_precision: 0,
        vae_decoder: 49_545_475,
        vae_encoder: 34_274_208,
    }
}

fn upstream_medium_35() -> UpstreamParameters {
    upstream(Sd3TransformerConfig::medium_35())
}

fn upstream_large_35() -> UpstreamParameters {
    upstream(Sd3TransformerConfig::large_35())
}

fn upstream_medium_3() -> UpstreamParameters {
    upstream(Sd3TransformerConfig::medium_3())
}

// Measured on lavapipe (docs/memory.md, "SD3.5 Medium"): models of SD3.5 Medium's widths with 2
// and 6 MMDiT-X blocks, f16, one guided step (sequential guidance in `low` and `minimal`).
/// The step's pools beside its tokens and its int8 layer: with 2 blocks the step adds 232 MiB
/// (`minimal`) and 264 MiB (`low`) to the load's reserved bytes at 512x512, 1,357 tokens' 85 MiB
/// of it; and the load's own pool pages (120 MiB in `low`, 115 to 151 in `minimal`), counted
/// here rather than per byte.
const STEP_POOL_BYTES: u64 = 300 << 20;
/// Per token of one row and per unit of width, in f16: 192 MiB more from 1,357 to 4,429 tokens
/// at Medium's width 1536 (64 KiB a token, 43 bytes a width). Activations grow with the width
/// (the feed-forward's 4 widths); attention's scores are chunked to a fixed size.
const STEP_BYTES_PER_TOKEN_WIDTH: u64 = 43;
/// Pool pages the transformer's f16 weights leave empty (`low`): 2 blocks 131 MiB over 334 MiB
/// of weights, 6 blocks 156 over 1,046: 3.5% of each block added, taken as 5.
const LOAD_POOL_PERCENT: u64 = 5;
/// The same for int8 weights (`minimal`): 151 MiB over 186 (2 blocks), 115 over 543 (6 blocks),
/// so the pages do not grow with the blocks here; taken as Z-Image's 15% (of larger matrices)
/// until a larger SD3 is measured.
const INT8_LOAD_POOL_PERCENT: u64 = 15;

/// One step of `work` at `rows` transformer rows of `width`: the image's 2x2 patches and the
/// text's 333 tokens, and in `minimal` the largest int8 layer (the feed-forward's 4 widths)
/// unpacked.
fn step_bytes(work: &RequestShape, rows: u64, placement: &Placement, width: u64) -> u64 {
    let tokens = (work.width / 16 * (work.height / 16) + CLIP_TOKENS + T5_TOKENS) as u64;
    let per_token = STEP_BYTES_PER_TOKEN_WIDTH * width;
    let mut step = per_token * tokens * rows * placement.denoiser.bytes() / 2 + STEP_POOL_BYTES;
    if placement.denoiser_int8 {
        step += int8_dequantize_bytes(width * 4 * width);
    }
    step
}

#[cfg(test)]
mod tests {
    use super::*;

    /// diffusers' StableDiffusion3Pipeline guides above 1 only: Large Turbo's 0 and a scale of 1
    /// plan for one transformer pass a step.
    #[test]
    fn guidance_above_one_is_planned_as_guided() {
        let request = |scale| GenerateRequest {
            guidance_scale: scale,
            ..GenerateRequest::new("a cat")
        };
        assert!(request(4.5).shape(&FAMILY).guided);
        assert!(!request(1.0).shape(&FAMILY).guided);
        assert!(!request(0.0).shape(&FAMILY).guided);
    }

    /// Each preset's built-in configs are valid, are found as that preset again, and are sized
    /// by the architecture their transformer is.
    #[test]
    fn every_preset_is_found_by_its_configs() {
        for &preset in FAMILY.presets {
            let spec = built_in_spec(preset).unwrap();
            spec.validate().unwrap();
            let found = matching_preset(&spec).unwrap();
            // Large Turbo's configs are Large's.
            let expected = match preset == Preset::SD35_LARGE_TURBO {
                true => Preset::SD35_LARGE,
                false => preset,
            };
            assert_eq!(found, expected);
            assert_eq!(family_of(&spec.transformer.value), preset.family());
        }
    }
}
