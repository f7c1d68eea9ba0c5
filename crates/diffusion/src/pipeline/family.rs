//! Model families (the pipeline structure a model folder describes) and the built-in presets:
//! upstream models whose configs are built in, for synthetic weights and single-file checkpoints
//! (which carry no configs). Each family's presets live in its folder (`models::sd::presets`,
//! `models::flux2`).

use std::fmt;

use super::{registered, GenerateRequest, ModelSource};
use crate::error::Result;
use crate::models::{flux2, sd};

/// How a model turns a prompt into an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Stable Diffusion 1.x: one CLIP ViT-L text encoder, its last hidden state.
    Sd1,
    /// Stable Diffusion 2.x: one OpenCLIP ViT-H text encoder (stored as a gelu `CLIPTextModel`), its
    /// last hidden state; epsilon or v-prediction.
    Sd2,
    /// Stable Diffusion XL: two text encoders (penultimate hidden states side by side), the second
    /// one's projected pooled output and the image's size and crop as added conditions.
    Sdxl,
    /// FLUX.2 [klein]: a Qwen3 text encoder (three hidden states stacked per token), a
    /// rectified-flow transformer on patched 32-channel latents, flow-matching Euler steps.
    Flux2Klein,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Sd1 => "sd1",
            Family::Sd2 => "sd2",
            Family::Sdxl => "sdxl",
            Family::Flux2Klein => "flux2-klein",
        }
    }

    /// The image side the family's models are made for (what a load with no planned request is
    /// checked for).
    pub fn usual_side(self) -> usize {
        match self {
            Family::Sd1 => 512,
            Family::Sd2 => 768,
            Family::Sdxl | Family::Flux2Klein => 1024,
        }
    }

    /// Whether the family runs Stable Diffusion's UNet pipeline.
    pub fn is_stable_diffusion(self) -> bool {
        !matches!(self, Family::Flux2Klein)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The family pipeline that loads a model, known without loading it: what a request can be
/// checked against before the weights are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipelineKind {
    /// SD1.x, SD2.x and SDXL.
    StableDiffusion,
    Flux2Klein,
}

impl PipelineKind {
    /// `source`'s: a folder's by its `model_index.json`, a preset's by its family; single-file
    /// checkpoints are Stable Diffusion's.
    pub fn of(source: &ModelSource) -> Result<PipelineKind> {
        Ok(match source {
            ModelSource::Folder(folder) => registered(folder)?.0,
            ModelSource::Checkpoint { .. } => PipelineKind::StableDiffusion,
            ModelSource::Synthetic(preset) => match preset.family() {
                Family::Flux2Klein => PipelineKind::Flux2Klein,
                _ => PipelineKind::StableDiffusion,
            },
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            PipelineKind::StableDiffusion => "Stable Diffusion",
            PipelineKind::Flux2Klein => "FLUX.2 klein",
        }
    }

    /// What the family cannot do for any request (the pipelines' `validate` makes these checks
    /// too, with those that need the loaded model).
    pub fn check_request(self, request: &GenerateRequest) -> Result<()> {
        match self {
            PipelineKind::StableDiffusion => sd::pipeline::check_family_request(request),
            PipelineKind::Flux2Klein => flux2::check_family_request(request),
        }
    }
}

/// An upstream model whose configs are built in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    /// stable-diffusion-v1-5/stable-diffusion-v1-5
    Sd15,
    /// stabilityai/stable-diffusion-2-1 (768 px, v-prediction)
    Sd21,
    /// stabilityai/stable-diffusion-xl-base-1.0
    SdxlBase,
    /// black-forest-labs/FLUX.2-klein-4B (step-distilled, 4 steps)
    Flux2Klein4b,
}

impl Preset {
    pub const ALL: [Preset; 4] = [
        Preset::Sd15,
        Preset::Sd21,
        Preset::SdxlBase,
        Preset::Flux2Klein4b,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Sd15 => "sd15",
            Preset::Sd21 => "sd21",
            Preset::SdxlBase => "sdxl-base",
            Preset::Flux2Klein4b => "flux2-klein",
        }
    }

    /// The Hub repository whose config files the preset copies.
    pub fn repository(self) -> &'static str {
        match self {
            Preset::Sd15 => "stable-diffusion-v1-5/stable-diffusion-v1-5",
            Preset::Sd21 => "stabilityai/stable-diffusion-2-1",
            Preset::SdxlBase => "stabilityai/stable-diffusion-xl-base-1.0",
            Preset::Flux2Klein4b => "black-forest-labs/FLUX.2-klein-4B",
        }
    }

    pub fn family(self) -> Family {
        match self {
            Preset::Sd15 => Family::Sd1,
            Preset::Sd21 => Family::Sd2,
            Preset::SdxlBase => Family::Sdxl,
            Preset::Flux2Klein4b => Family::Flux2Klein,
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
