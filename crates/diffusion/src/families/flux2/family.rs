//! FLUX.2 klein as the registry describes it: its descriptor, architecture (the upstream
//! model's parameters, the transformer step's measured memory coefficients), preset and
//! standard workload.

use std::path::Path;

use super::pipeline::Flux2Pipeline;
use super::transformer::Flux2TransformerConfig;
use super::{check_family_request, text_layers, PROMPT_TOKENS};
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
use crate::pipeline::Placement;
use crate::scheduler::SchedulerKind;

/// FLUX.2 klein in the family registry.
pub static FAMILY: FamilyDescriptor = FamilyDescriptor {
    name: "FLUX.2 klein",
    classes: &[("Flux2KleinPipeline", "FLUX.2 klein")],
    components: &[
        Component::required("text_encoder", Kind::Qwen3Text),
        Component::required("tokenizer", Kind::TokenizerJson),
        Component::required("transformer", Kind::Transformer),
        Component::required("vae", Kind::Vae),
        Component::required("scheduler", Kind::Scheduler),
    ],
    architectures: &[Family(&FLUX2_KLEIN)],
    presets: &[Preset(&KLEIN_4B)],
    schedulers: &[SchedulerKind::FlowMatchEuler],
    guided: |scale| scale > 1.0,
    guidance_options: false,
    skip_layer_guidance: false,
    true_cfg: false,
    latents: "[batch, 128, H/16, W/16]",
    reference_pictures: true,
    checkpoints: None,
    check_request: check_family_request,
    load: |source, device, precision, options| {
        let model: Flux2Pipeline = three_parts::load(source, device, precision, options)?;
        Ok(Box::new(model))
    },
    model_size: three_parts::model_size::<Flux2Pipeline>,
    denoiser_files: Some(DenoiserFiles {
        preset: file_preset,
        part_fits,
        inside: |_| Vec::new(),
    }),
    // scripts/make_flux2_fixtures.py: the pipeline, and its generations with reference pictures.
    parity_fixtures: &["tiny-flux2-klein", "tiny-flux2-klein-references"],
    workloads: &[&KLEIN_1024_4],
};

/// klein 4B for a transformer file of its sizes (the only klein whose configs are built in).
fn file_preset(file: &Path) -> Result<Option<Preset>> {
    let groups = ["transformer_blocks.", "single_transformer_blocks."];
    let names = &super::bfl_names::NAMES;
    let Some(found) = component_file::denoiser_sizes(file, names, groups, "x_embedder.weight")?
    else {
        return Ok(None);
    };
    let config = Flux2TransformerConfig::klein_4b();
    let width = config.num_attention_heads * config.attention_head_dim;
    let expected = DenoiserSizes {
        blocks: [config.num_layers, config.num_single_layers],
        width: Some(width),
    };
    if found == expected {
        return Ok(Some(Preset::FLUX2_KLEIN_4B));
    }
    let [double, single] = found.blocks;
    Err(DiffusionError::unsupported(
        file,
        format!(
            "has {double} double- and {single} single-stream blocks {}; klein 4B's ({}, {}, width {width}) are the only FLUX.2 configs built in: give --model-config naming the diffusers folder of its own configs (klein 9B's, for one)",
            found.width_text(),
            config.num_layers,
            config.num_single_layers,
        ),
    ))
}

/// klein 4B's parts as files: a Qwen3 text encoder of Qwen3-4B's width (in either of its
/// namings), a VAE of FLUX.2's 32 latent channels.
fn part_fits(component: &Component, file: &Path) -> bool {
    let text = Qwen3Weights::CausalLm.file_names();
    let width = Qwen3Config::qwen3_4b().hidden_size;
    part_files::part_fits(component, file, (&text, width), &super::klein_vae())
}

/// A Qwen3 text encoder (three hidden states stacked per token), a rectified-flow transformer on
/// patched 32-channel latents, flow-matching Euler steps.
pub static FLUX2_KLEIN: Architecture = Architecture {
    name: "flux2-klein",
    usual_side: 1024,
    descriptor: &FAMILY,
    upstream: upstream_klein_4b,
    denoiser_memory: DenoiserMemory {
        load_pool_percent: FLUX2_LOAD_POOL_PERCENT,
        int8_load_pool_percent: FLUX2_LOAD_POOL_PERCENT,
        load_pool_bytes: 0,
        step_bytes: flux2_step_bytes,
    },
    honours_vae_force_upcast: false,
    image_to_image: false,
};

/// black-forest-labs/FLUX.2-klein-4B (step-distilled, 4 steps).
static KLEIN_4B: PresetSpec = PresetSpec {
    name: "flux2-klein",
    repository: "black-forest-labs/FLUX.2-klein-4B",
    family: Family(&FLUX2_KLEIN),
    short_label: "FLUX.2 klein",
    long_label: "FLUX.2 [klein] 4B",
    // The transformer (3.9B parameters over 4,608 tokens at 1024x1024, one call per step) does
    // some fifty times a guided SD1.5-512 step's arithmetic, but large matrix products run far
    // nearer a GPU's peak than SD1.5's small UNet does: counted at 3 per pixel (12 at 1024x1024).
    step_cost: 3.0,
    op_cases: Some(super::op_cases::KLEIN_4B_OP_CASES),
};

impl Family {
    pub const FLUX2_KLEIN: Family = Family(&FLUX2_KLEIN);
}

/// `flux2-klein-1024-4` v1: FLUX.2 [klein] 4B as MLPerf Client 2.0 runs it, 1024x1024, 4 steps
/// of flow-matching Euler, its four prompts with seeds 42-45 each (sixteen images). The model is
/// step-distilled: it runs without guidance (recorded as 1).
pub static KLEIN_1024_4: WorkloadSpec = WorkloadSpec {
    name: "flux2-klein-1024-4",
    version: 1,
    preset: Preset(&KLEIN_4B),
    width: 1024,
    height: 1024,
    steps: 4,
    scheduler: SchedulerKind::FlowMatchEuler,
    guidance: 1.0,
    prompts: MLPERF_CLIENT_PROMPTS,
    note: " (step-distilled: no guidance; MLPerf Client 2.0's settings)",
};

impl Preset {
    pub const FLUX2_KLEIN_4B: Preset = Preset(&KLEIN_4B);
}

/// FLUX.2-klein-4B: the Qwen3-4B layers the pipeline runs, the transformer, and FLUX.2's VAE
/// (SD's with 32 latent channels: wider conv_in/post_quant_conv and conv_out/quant_conv, 130,060
/// and 262,192 more parameters).
fn upstream_klein_4b() -> UpstreamParameters {
    let transformer = Flux2TransformerConfig::klein_4b();
    UpstreamParameters {
        text_encoders: Qwen3Config::qwen3_4b().parameters(text_layers()),
        denoiser: transformer.parameters(),
        denoiser_full_precision: transformer.full_precision_parameters(),
        vae_decoder: 49_620_259,
        vae_encoder: 34_425_856,
    }
}

/// FLUX.2 klein's transformer step in f16: the allocator's pools and attention chunks, which do
/// not grow with the image, and a part per token of one row (text and image tokens alike).
/// Measured on lavapipe (docs/memory.md) with a model of klein 4B's widths and 1
/// double- and 4 single-stream blocks (of its 5 and 20: the blocks run one after another, so a
/// step's activations do not grow with depth) as the step's peak reserved bytes less the
/// reserved bytes after loading: in `minimal`, 464 MiB at 512x512 (1,536 tokens) and 656 MiB at
/// 1024x1024 (4,608 tokens), 64 KiB per token and 368 MiB besides (the largest int8 layer's
/// dequantization, below, among them); in `low` (f16 weights), 304 MiB and 592 MiB, 96
/// KiB per token and 160 MiB besides. The whole model's 1024x1024 step in `minimal` added the
/// same 656 MiB to its load's. Taken as 100 KB per token and 256 MiB.
const FLUX2_STEP_POOL_BYTES: u64 = 256 << 20;
pub(crate) const FLUX2_STEP_BYTES_PER_TOKEN: u64 = 100_000;
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
const FLUX2_INT8_DEQUANTIZE_BYTES: u64 = int8_dequantize_bytes(12_288 * 3072);

/// FLUX.2 klein's activations for one step of `work` at `rows` transformer rows.
fn flux2_step_bytes(work: &RequestShape, rows: u64, placement: &Placement) -> u64 {
    let tokens =
        (work.width / 16 * (work.height / 16) + work.reference_pixels / 256 + PROMPT_TOKENS) as u64;
    let mut step = FLUX2_STEP_BYTES_PER_TOKEN * tokens * rows * placement.denoiser.bytes() / 2
        + FLUX2_STEP_POOL_BYTES;
    if placement.denoiser_int8 {
        step += FLUX2_INT8_DEQUANTIZE_BYTES;
    }
    step
}
