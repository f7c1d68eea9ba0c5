//! Z-Image as the registry describes it: its descriptor, architecture (the upstream model's
//! parameters, the transformer step's memory coefficients), preset and standard workload.

use std::path::Path;

use super::pipeline::ZImagePipeline;
use super::spec::Spec;
use super::transformer::ZImageTransformerConfig;
use super::PROMPT_TOKENS;
use crate::error::{DiffusionError, Result};
use crate::io::component_file::{self, DenoiserSizes};
use crate::models::qwen3::{Qwen3Config, Qwen3Weights};
use crate::pipeline::family::WorkloadSpec;
use crate::pipeline::family::{
    Architecture, Component, ComponentKind as Kind, DenoiserFiles, Family, FamilyDescriptor,
    Preset, PresetSpec,
};
use crate::pipeline::memory_need::{
    int8_dequantize_bytes, DenoiserMemory, RequestShape, UpstreamParameters,
};
use crate::pipeline::part_files;
use crate::pipeline::three_parts;
use crate::pipeline::workload::MLPERF_CLIENT_PROMPTS;
use crate::pipeline::{GenerateRequest, Placement};
use crate::scheduler::SchedulerKind;

/// Z-Image in the family registry.
pub static FAMILY: FamilyDescriptor = FamilyDescriptor {
    name: "Z-Image",
    classes: &[("ZImagePipeline", "Z-Image-Turbo")],
    components: &[
        Component::required("text_encoder", Kind::Qwen3Text),
        Component::required("tokenizer", Kind::TokenizerJson),
        Component::required("transformer", Kind::Transformer),
        Component::required("vae", Kind::Vae),
        Component::required("scheduler", Kind::Scheduler),
    ],
    architectures: &[Family(&ZIMAGE)],
    presets: &[Preset(&TURBO)],
    schedulers: &[SchedulerKind::FlowMatchEuler],
    checkpoints: None,
    // diffusers guides whenever the scale is above 0 (Turbo runs at 0).
    guided: |scale| scale > 0.0,
    guidance_options: true,
    skip_layer_guidance: false,
    true_cfg: false,
    latents: "[batch, 16, H/8, W/8]",
    reference_pictures: false,
    check_request,
    load: |source, device, precision, options| {
        let model: ZImagePipeline = three_parts::load(source, device, precision, options)?;
        Ok(Box::new(model))
    },
    model_size: three_parts::model_size::<ZImagePipeline>,
    denoiser_files: Some(DenoiserFiles {
        preset: file_preset,
        part_fits,
        inside: |_| Vec::new(),
    }),
    // scripts/make_zimage_fixtures.py.
    parity_fixtures: &["tiny-zimage"],
    workloads: &[&TURBO_1024_9],
};

/// Turbo for a transformer file of its sizes (the only Z-Image whose configs are built in).
fn file_preset(file: &Path) -> Result<Option<Preset>> {
    let groups = ["layers.", "noise_refiner."];
    let names = &super::original_names::NAMES;
    let width_of = "all_x_embedder.2-1.weight";
    let Some(found) = component_file::denoiser_sizes(file, names, groups, width_of)? else {
        return Ok(None);
    };
    let config = ZImageTransformerConfig::default();
    let expected = DenoiserSizes {
        blocks: [config.n_layers, config.n_refiner_layers],
        width: Some(config.dim),
    };
    if found == expected {
        return Ok(Some(Preset::ZIMAGE_TURBO));
    }
    let [layers, refiners] = found.blocks;
    Err(DiffusionError::unsupported(
        file,
        format!(
            "has {layers} layers and {refiners} refiner layers {}; Z-Image-Turbo's ({}, {}, width {}) are the only Z-Image configs built in: give --model-config naming the diffusers folder of its own configs",
            found.width_text(),
            config.n_layers,
            config.n_refiner_layers,
            config.dim,
        ),
    ))
}

/// Turbo's parts as files: a Qwen3 text encoder of Qwen3-4B's width (in either of its namings), a
/// VAE of 16 latent channels.
fn part_fits(component: &Component, file: &Path) -> bool {
    let text = Qwen3Weights::Bare.file_names();
    let width = Qwen3Config::qwen3_4b().hidden_size;
    part_files::part_fits(component, file, (&text, width), &super::spec::turbo_vae())
}

/// A bare Qwen3 text encoder (its penultimate hidden states at the real tokens), a
/// single-stream DiT on 2x2 patches of 16-channel latents, flow-matching Euler steps.
pub static ZIMAGE: Architecture = Architecture {
    name: "zimage",
    usual_side: 1024,
    descriptor: &FAMILY,
    upstream: upstream_turbo,
    denoiser_memory: DenoiserMemory {
        load_pool_percent: LOAD_POOL_PERCENT,
        int8_load_pool_percent: INT8_LOAD_POOL_PERCENT,
        load_pool_bytes: 0,
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

/// `zimage-turbo-1024-9` v1: Z-Image-Turbo at its model card's settings, 1024x1024, 9 steps of
/// flow-matching Euler, guidance 0 (the distilled model runs unguided), on MLPerf Client 2.0's
/// prompts and seeds (sixteen images), so that it compares image for image with FLUX.2 klein's.
pub static TURBO_1024_9: WorkloadSpec = WorkloadSpec {
    name: "zimage-turbo-1024-9",
    version: 1,
    preset: Preset(&TURBO),
    width: 1024,
    height: 1024,
    steps: 9,
    scheduler: SchedulerKind::FlowMatchEuler,
    guidance: 0.0,
    prompts: MLPERF_CLIENT_PROMPTS,
    note: " (distilled: no guidance; MLPerf Client 2.0's prompts and seeds)",
};

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

// Measured on lavapipe in f16 (docs/memory.md: `generate --vram-report`, a model of
// Turbo's widths with 1 main block and 1+1 refiners, and one with 4 main blocks, loaded only;
// then checked against the whole transformer's load).
// The load's pool pages fit `a + b x weight bytes` at both precisions with a = 115 MiB; b is the
// percentage below, a is counted with the step's pools.
/// The step's pools beside its tokens and its int8 layer (1+1+1 blocks: 256 MiB over the load in
/// `minimal` at 512x512, 1,056 tokens; 488 MiB at 1024x1024, 4,128 tokens; 112 MiB in `low` at
/// 512x512; 20-40 MiB of that is neither), and the load's 115 MiB of pool pages.
const STEP_POOL_BYTES: u64 = 160 << 20;
/// Per token of one row (image and caption tokens alike), in f16: the step grew by 232 MiB from
/// 1,056 to 4,128 tokens in `minimal`, 79 KB a token.
pub(crate) const STEP_BYTES_PER_TOKEN: u64 = 80_000;
/// Pool pages the transformer's f16 weights leave empty (`low`): 647 MiB over 1,051 MiB of
/// weights (1 main block), 1,172 over 2,086 (4 main blocks): 51% of each block added. A block's
/// 75 MiB feed-forward matrices fill their pages badly.
const LOAD_POOL_PERCENT: u64 = 52;
/// The same for int8 weights (`minimal`): 193 MiB over 525, 264 over 1,011: 15% of each block.
const INT8_LOAD_POOL_PERCENT: u64 = 16;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::weights::Precision;
    use crate::pipeline::memory::MemoryProfile;
    use crate::pipeline::memory_need::{estimate, ModelSize};
    use crate::pipeline::memory_test_support::assert_estimates_cover;
    use crate::pipeline::LoadOptions;

    const MIB: u64 = 1 << 20;

    /// diffusers' ZImagePipeline guides at any scale above 0, so a request at 0.5 plans for two
    /// transformer passes a step, as the pipeline runs it; Turbo's 0 plans for one.
    #[test]
    fn a_scale_above_zero_is_planned_as_guided() {
        let request = |scale| GenerateRequest {
            guidance_scale: scale,
            ..GenerateRequest::new("a cat")
        };
        assert!(request(0.5).shape(&FAMILY).guided);
        assert!(!request(0.0).shape(&FAMILY).guided);
    }

    /// A model of Turbo's widths with `main` main blocks and 1+1 refiners, as measured.
    fn shallow(main: usize) -> ModelSize {
        let config = ZImageTransformerConfig {
            n_layers: main,
            n_refiner_layers: 1,
            ..ZImageTransformerConfig::default()
        };
        ModelSize {
            denoiser_params: config.parameters(),
            ..ModelSize::upstream(Family::ZIMAGE, 1024)
        }
    }

    fn placement(profile: MemoryProfile) -> Placement {
        let options = profile.load_options(LoadOptions::default());
        let vae = super::super::spec::turbo_vae();
        Placement::for_model(Family::ZIMAGE, &vae, Precision::F16, &options)
    }

    fn unguided(side: usize) -> RequestShape {
        RequestShape {
            guided: false,
            ..RequestShape::image(side, side)
        }
    }

    /// The estimate against the peaks measured on lavapipe (f16, one unguided step, the step's
    /// peak reserved): never below them, and not far above. The 4-block rows are loads only,
    /// their step taken as the 1-block model's at that size, and so is the whole model's (its
    /// load measured: 7032 MiB reserved; its step did not end within 100 minutes).
    #[test]
    fn the_estimate_covers_the_measured_peaks() {
        let whole = ModelSize::upstream(Family::ZIMAGE, 1024);
        let mut rows = Vec::new();
        for (model, size, profile, side, peak) in [
            (
                "1 main block",
                shallow(1),
                MemoryProfile::Minimal,
                512,
                1088 * MIB,
            ),
            (
                "1 main block",
                shallow(1),
                MemoryProfile::Minimal,
                1024,
                1320 * MIB,
            ),
            (
                "1 main block",
                shallow(1),
                MemoryProfile::Low,
                512,
                1904 * MIB,
            ),
            (
                "4 main blocks",
                shallow(4),
                MemoryProfile::Minimal,
                512,
                (1432 + 256) * MIB,
            ),
            (
                "4 main blocks",
                shallow(4),
                MemoryProfile::Low,
                512,
                (3352 + 112) * MIB,
            ),
            (
                "the whole model",
                whole,
                MemoryProfile::Minimal,
                1024,
                (7032 + 488) * MIB,
            ),
        ] {
            let need = estimate(&size, &placement(profile), &unguided(side)).denoise;
            rows.push((format!("{model}, {profile} at {side}"), need, peak));
        }
        assert_estimates_cover(&rows);
    }

    /// Z-Image-Turbo in `minimal` at 1024x1024 fits a card sold as 8 GB (8 GiB): estimated at
    /// 8.08e9 bytes (7.5 GiB), the int8 transformer 6.3 GB of it.
    #[test]
    fn turbo_minimal_is_estimated_under_8_gib_at_1024() {
        let size = ModelSize::upstream(Family::ZIMAGE, 1024);
        let need = estimate(&size, &placement(MemoryProfile::Minimal), &unguided(1024));
        assert!(need.peak() < 8 << 30, "{need:?}");
    }
}
