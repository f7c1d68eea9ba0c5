//! FLUX.1 as the registry describes it: the descriptor, the architectures (schnell's transformer
//! and [dev]'s, which adds the guidance embedding), their presets and memory coefficients.

use super::pipeline::Flux1Pipeline;
use super::spec::{dev_scheduler, schnell_scheduler, Spec};
use super::transformer::Flux1TransformerConfig;
use super::{DEV_T5_TOKENS, SCHNELL_T5_TOKENS};
use crate::error::{DiffusionError, Result};
use crate::models::t5::T5Config;
use crate::pipeline::family::{
    Architecture, Component, ComponentKind as Kind, DenoiserFiles, Family, FamilyDescriptor,
    Preset, PresetSpec, WorkloadSpec,
};
use crate::pipeline::memory_need::{
    int8_dequantize_bytes, DenoiserMemory, RequestShape, UpstreamParameters,
};
use crate::pipeline::workload::MLPERF_CLIENT_PROMPTS;
use crate::pipeline::{FamilyPipeline, GenerateRequest, Placement};
use crate::scheduler::SchedulerKind;

/// FLUX.1 in the family registry.
pub static FAMILY: FamilyDescriptor = FamilyDescriptor {
    name: "FLUX.1",
    classes: &[("FluxPipeline", "FLUX.1")],
    components: &[
        Component::required("text_encoder", Kind::ClipText),
        Component::required("text_encoder_2", Kind::T5Text),
        Component::required("tokenizer", Kind::ClipTokenizer),
        Component::required("tokenizer_2", Kind::TokenizerJson),
        Component::required("transformer", Kind::Transformer),
        Component::required("vae", Kind::Vae),
        Component::required("scheduler", Kind::Scheduler),
    ],
    architectures: &[Family(&FLUX1_SCHNELL), Family(&FLUX1_DEV)],
    presets: &[Preset(&SCHNELL), Preset(&DEV), Preset(&KREA_DEV)],
    schedulers: &[SchedulerKind::FlowMatchEuler],
    checkpoints: None,
    // The guidance scale never runs a second pass: [dev] embeds it, schnell ignores it. True
    // CFG (`GuidanceOptions::true_cfg`) does.
    guided: |_| false,
    guidance_options: false,
    skip_layer_guidance: false,
    true_cfg: true,
    latents: "[batch, 16, H/8, W/8], unpacked (its pipeline packs them into 2x2 patches)",
    reference_pictures: false,
    check_request,
    load: |source, device, precision, options| {
        let model: Box<dyn FamilyPipeline> =
            Box::new(Flux1Pipeline::load(source, device, precision, options)?);
        Ok(model)
    },
    model_size: Flux1Pipeline::model_size,
    denoiser_files: Some(DenoiserFiles {
        preset: super::files::file_preset,
        part_fits: super::files::part_fits,
        // Black Forest Labs' files hold the transformer alone.
        inside: |_| Vec::new(),
    }),
    // scripts/make_flux1_fixtures.py.
    parity_fixtures: &["tiny-flux1-schnell", "tiny-flux1-dev"],
    workloads: &[&SCHNELL_1024_4],
};

/// What FLUX.1 cannot do for any request, before a model is loaded: start from a picture, take
/// reference pictures, or a negative prompt without true CFG (which diffusers would ignore).
fn check_request(request: &GenerateRequest) -> Result<()> {
    if request.init_image.is_some() || !request.reference_images.is_empty() {
        return Err(DiffusionError::Request(
            "FLUX.1 makes images from a prompt only here: it takes no starting picture (--init-image) and no reference pictures (--reference-image)".into(),
        ));
    }
    if !request.negative_prompt.is_empty() && !request.runs_true_cfg() {
        return Err(DiffusionError::Request(
            "FLUX.1 reads a negative prompt only in true classifier-free guidance: add --true-cfg-scale above 1 (a second transformer pass a step), or leave the negative prompt out; its guidance is otherwise the scale [dev] reads as an input (--guidance)".into(),
        ));
    }
    Ok(())
}

/// An architecture's statics: its upstream transformer and the T5 tokens its prompts take.
macro_rules! architecture {
    ($name:literal, $upstream:ident, $text_tokens:expr) => {
        Architecture {
            name: $name,
            usual_side: 1024,
            descriptor: &FAMILY,
            upstream: $upstream,
            denoiser_memory: DenoiserMemory {
                load_pool_percent: LOAD_POOL_PERCENT,
                int8_load_pool_percent: INT8_LOAD_POOL_PERCENT,
                load_pool_bytes: LOAD_POOL_BYTES,
                step_bytes: |work, rows, placement| step_bytes(work, rows, placement, $text_tokens),
            },
            honours_vae_force_upcast: false,
            image_to_image: false,
        }
    };
}

/// FLUX.1 [schnell]'s transformer: no guidance embedding, T5 over 256 tokens.
pub static FLUX1_SCHNELL: Architecture =
    architecture!("flux1-schnell", upstream_schnell, SCHNELL_T5_TOKENS);
/// FLUX.1 [dev]'s (and Krea [dev]'s): the guidance embedding, T5 over 512 tokens.
pub static FLUX1_DEV: Architecture = architecture!("flux1-dev", upstream_dev, DEV_T5_TOKENS);

impl Family {
    pub const FLUX1_SCHNELL: Family = Family(&FLUX1_SCHNELL);
    pub const FLUX1_DEV: Family = Family(&FLUX1_DEV);
}

/// The architecture a transformer config is: [dev]'s with a guidance embedding, else schnell's.
pub(super) fn family_of(config: &Flux1TransformerConfig) -> Family {
    match config.guidance_embeds {
        true => Family::FLUX1_DEV,
        false => Family::FLUX1_SCHNELL,
    }
}

// The transformer's 12B parameters over 4,096 image tokens at 1024x1024, one call a step: some
// three times FLUX.2 klein's 3.9B a call (counted at 3), so counted at 9 per pixel.
/// black-forest-labs/FLUX.1-schnell (Apache-2.0; step-distilled, 4 steps, no guidance).
static SCHNELL: PresetSpec = PresetSpec {
    name: "flux1-schnell",
    repository: "black-forest-labs/FLUX.1-schnell",
    family: Family(&FLUX1_SCHNELL),
    short_label: "FLUX.1 schnell",
    long_label: "FLUX.1 [schnell] (12B, 4 steps)",
    step_cost: 9.0,
    op_cases: None,
};

/// black-forest-labs/FLUX.1-dev (guidance-distilled; the FLUX.1 [dev] Non-Commercial License,
/// a gated repository).
static DEV: PresetSpec = PresetSpec {
    name: "flux1-dev",
    repository: "black-forest-labs/FLUX.1-dev",
    family: Family(&FLUX1_DEV),
    short_label: "FLUX.1 dev",
    long_label: "FLUX.1 [dev] (12B; non-commercial licence, gated)",
    step_cost: 9.0,
    op_cases: None,
};

/// black-forest-labs/FLUX.1-Krea-dev: [dev]'s architecture, Krea's weights (the same licence).
static KREA_DEV: PresetSpec = PresetSpec {
    name: "flux1-krea-dev",
    repository: "black-forest-labs/FLUX.1-Krea-dev",
    family: Family(&FLUX1_DEV),
    short_label: "FLUX.1 Krea dev",
    long_label: "FLUX.1 Krea [dev] (12B; non-commercial licence, gated)",
    step_cost: 9.0,
    op_cases: None,
};

impl Preset {
    pub const FLUX1_SCHNELL: Preset = Preset(&SCHNELL);
    pub const FLUX1_DEV: Preset = Preset(&DEV);
    pub const FLUX1_KREA_DEV: Preset = Preset(&KREA_DEV);
}

/// `flux1-schnell-1024-4` v1: FLUX.1 [schnell] at Black Forest Labs' settings, 1024x1024, 4 steps
/// of flow-matching Euler without guidance (schnell has none: recorded as 0), on MLPerf Client
/// 2.0's four prompts with seeds 42-45 (sixteen images), so that it compares image for image with
/// the other families' workloads.
pub static SCHNELL_1024_4: WorkloadSpec = WorkloadSpec {
    name: "flux1-schnell-1024-4",
    version: 1,
    preset: Preset(&SCHNELL),
    width: 1024,
    height: 1024,
    steps: 4,
    scheduler: SchedulerKind::FlowMatchEuler,
    guidance: 0.0,
    prompts: MLPERF_CLIENT_PROMPTS,
    note: " (step-distilled: no guidance; MLPerf Client 2.0's prompts and seeds)",
};

/// A preset's built-in configs.
pub(super) fn built_in_spec(preset: Preset) -> Result<Spec> {
    let (transformer, scheduler) = match preset {
        p if p == Preset::FLUX1_SCHNELL => (Flux1TransformerConfig::schnell(), schnell_scheduler()),
        p if p == Preset::FLUX1_DEV || p == Preset::FLUX1_KREA_DEV => {
            (Flux1TransformerConfig::dev(), dev_scheduler())
        }
        _ => {
            return Err(DiffusionError::Request(format!(
                "{preset} is not a FLUX.1 preset"
            )))
        }
    };
    Ok(Spec::built_in(preset.repository(), transformer, scheduler))
}

/// The preset whose configs a model's are (its weights may differ; its cost does not). [dev]
/// and Krea [dev] share their configs: such a model is counted as [dev].
pub(super) fn matching_preset(spec: &Spec) -> Option<Preset> {
    FAMILY.presets.iter().copied().find(|&preset| {
        let Ok(other) = built_in_spec(preset) else {
            return false;
        };
        other.transformer.value == spec.transformer.value
            && other.clip.value == spec.clip.value
            && other.t5.value == spec.t5.value
            && other.vae.value == spec.vae.value
    })
}

/// CLIP-L's text model (123,060,480 parameters) and T5-XXL's encoder; FLUX.1's VAE (49,545,475
/// decoder and 34,274,208 encoder parameters, diffusers' `AutoencoderKL`).
fn upstream(transformer: Flux1TransformerConfig) -> UpstreamParameters {
    UpstreamParameters {
        text_encoders: 123_060_480 + T5Config::xxl().parameters(),
        denoiser: transformer.parameters(),
        denoiser_full_precision: transformer.full_precision_parameters(),
        vae_decoder: 49_545_475,
        vae_encoder: 34_274_208,
    }
}

fn upstream_schnell() -> UpstreamParameters {
    upstream(Flux1TransformerConfig::schnell())
}

fn upstream_dev() -> UpstreamParameters {
    upstream(Flux1TransformerConfig::dev())
}

// Measured on lavapipe (docs/memory.md, "FLUX.1"): a model of schnell's widths with 1 double- and
// 2 single-stream blocks (of 19 and 38: the blocks run one after another, so a step's activations
// do not grow with depth), f16, one step, as the step's reserved bytes less the load's.
/// The step's pools and attention chunks, which do not grow with the image: `low`'s step took
/// 120 MiB at 512x512 (1,280 tokens) and 304 MiB at 1024x1024 (4,352), 61 KiB a token and 43
/// MiB besides.
const STEP_POOL_BYTES: u64 = 48 << 20;
/// Per token of one row in f16 (the 61 KiB measured, rounded up).
const STEP_BYTES_PER_TOKEN: u64 = 64 << 10;
/// Pool pages the transformer's weights leave empty: reserved after loading less in use (the VAE's
/// 94 MiB is the rest in use), at two depths. `low` (f16): 390 MiB over the transformer's 1,291
/// MiB (1+2 blocks), 665 over 4,856 (4+8 blocks): 7.7% of each block added and 290 MiB besides.
const LOAD_POOL_PERCENT: u64 = 8;
/// The same for int8 weights (`minimal`): 280 MiB over 698 MiB, 359 over 2,483: 4.4% of each
/// block added and 249 MiB besides.
const INT8_LOAD_POOL_PERCENT: u64 = 5;
/// What neither depth's pages grow with (the larger of the two fits, rounded up).
const LOAD_POOL_BYTES: u64 = 296 << 20;
/// What `minimal`'s step takes beyond `low`'s: 320 MiB more at 512x512, about two of its largest
/// int8 layers (a single block's `proj_out`, 15,360 x 3072 weights) unpacked at once.
const INT8_DEQUANTIZE_BYTES: u64 = 2 * int8_dequantize_bytes(15_360 * 3072);

/// One step of `work` at `rows` transformer rows: the image's 2x2 patches and T5's tokens.
fn step_bytes(work: &RequestShape, rows: u64, placement: &Placement, text_tokens: usize) -> u64 {
    let tokens = (work.width / 16 * (work.height / 16) + text_tokens) as u64;
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

    /// Each preset's built-in configs are valid, are found as that preset again (Krea [dev]'s
    /// as [dev]'s), and are sized by the architecture their transformer is.
    #[test]
    fn every_preset_is_found_by_its_configs() {
        for &preset in FAMILY.presets {
            let spec = built_in_spec(preset).unwrap();
            spec.validate().unwrap();
            let expected = match preset == Preset::FLUX1_KREA_DEV {
                true => Preset::FLUX1_DEV,
                false => preset,
            };
            assert_eq!(matching_preset(&spec), Some(expected));
            assert_eq!(family_of(&spec.transformer.value), preset.family());
        }
        let schnell = built_in_spec(Preset::FLUX1_SCHNELL).unwrap();
        assert_eq!(schnell.t5_tokens(), 256);
        assert_eq!(built_in_spec(Preset::FLUX1_DEV).unwrap().t5_tokens(), 512);
    }

    /// The guidance scale never plans a second transformer pass.
    #[test]
    fn no_guidance_scale_is_planned_as_two_passes() {
        for scale in [0.0, 1.0, 3.5, 7.0] {
            let request = GenerateRequest {
                guidance_scale: scale,
                ..GenerateRequest::new("a cat")
            };
            assert!(!request.shape(&FAMILY).guided);
        }
    }
}
