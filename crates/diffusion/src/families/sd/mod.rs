//! Stable Diffusion 1.x, 2.x and XL: CLIP text encoders, the conditional UNet, the KL VAE and the
//! SD schedulers, as diffusers' `StableDiffusionPipeline` and `StableDiffusionXLPipeline` run them.

pub mod checkpoint;
pub mod family;
pub mod generate;
mod op_cases;
pub mod pipeline;
pub mod presets;
pub mod spec;
mod timing;
pub mod unet;
pub mod workloads;

#[cfg(test)]
mod memory_tests;

use crate::pipeline::family::{Component, ComponentKind as Kind, Family, FamilyDescriptor, Preset};
use crate::pipeline::FamilyPipeline;
use crate::scheduler::SchedulerKind;
use pipeline::SdPipeline;

/// Stable Diffusion in the family registry.
pub static FAMILY: FamilyDescriptor = FamilyDescriptor {
    name: "Stable Diffusion",
    classes: &[
        ("StableDiffusionPipeline", "SD1.x, SD2.x"),
        ("StableDiffusionXLPipeline", "SDXL base"),
    ],
    // SDXL's second text encoder and tokenizer beside the first.
    components: &[
        Component::required("text_encoder", Kind::ClipText),
        Component::optional("text_encoder_2", Kind::ClipTextWithProjection),
        Component::required("tokenizer", Kind::ClipTokenizer),
        Component::optional("tokenizer_2", Kind::ClipTokenizer),
        Component::required("unet", Kind::UNet),
        Component::required("vae", Kind::Vae),
        Component::required("scheduler", Kind::Scheduler),
    ],
    architectures: &[
        Family(&family::SD1),
        Family(&family::SD2),
        Family(&family::SDXL),
    ],
    presets: &[
        Preset(&presets::SD15),
        Preset(&presets::SD21),
        Preset(&presets::SDXL_BASE),
    ],
    schedulers: &[
        SchedulerKind::Pndm,
        SchedulerKind::Ddim,
        SchedulerKind::Euler,
        SchedulerKind::EulerAncestral,
        SchedulerKind::DpmSolverPP2M { karras: false },
        SchedulerKind::DpmSolverPP2M { karras: true },
    ],
    guided: |scale| scale > 1.0,
    guidance_options: false,
    skip_layer_guidance: false,
    true_cfg: false,
    latents: "[batch, 4, H/8, W/8]",
    reference_pictures: false,
    checkpoints: Some(checkpoint::claims),
    check_request: pipeline::check_family_request,
    load: |source, device, precision, options| {
        let model: Box<dyn FamilyPipeline> =
            Box::new(SdPipeline::load(source, device, precision, options)?);
        Ok(model)
    },
    model_size: SdPipeline::model_size,
    // A checkpoint holds its text encoders and VAE, and SD1.5's, SD2.1's and SDXL base's
    // configs and tokenizers are built in.
    denoiser_files: None,
    // SD1.x-like, a variant of every option, SD2.x-like (v-prediction), SDXL-like
    // (scripts/make_fixtures.py).
    parity_fixtures: &["tiny-sd", "tiny-variant", "tiny-sd2", "tiny-sdxl"],
    // An SD2.x model has none of its own: it runs SD1.5's.
    workloads: &[&workloads::SD15_512_30, &workloads::SDXL_1024_20],
};
