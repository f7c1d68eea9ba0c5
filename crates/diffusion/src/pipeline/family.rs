//! What generic code knows of a model family: the descriptor each family folder exports
//! (`families::<family>::FAMILY`), the architectures it runs (`Family`) and its built-in presets
//! (`Preset`: upstream models whose configs are built in, for synthetic weights and single-file
//! checkpoints, which carry no configs). `engine::registry::FAMILIES` lists the descriptors; nothing
//! outside a family's folder names one of its families or presets.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::Path;

use super::memory_need::{DenoiserMemory, ModelSize, UpstreamParameters};
use super::workload::Prompts;
use super::{FamilyPipeline, GenerateRequest, LoadOptions, ModelSource};
use crate::device::SelectedDevice;
use crate::error::{DiffusionError, Result};
use crate::io::weights::Precision;
use crate::models::config::VaeConfig;
use crate::pipeline::op_timing::OpCases;
use crate::scheduler::SchedulerKind;

/// What a family knows of its denoiser kept as a file of its own (a ComfyUI transformer file,
/// which carries no configs or tokenizer, and runs with its text encoder and VAE as files).
#[derive(Clone, Copy)]
pub struct DenoiserFiles {
    /// The preset whose repository's configs a file of its needs, by its tensor shapes.
    /// `Ok(None)` when the file is not this family's denoiser; an error naming what was found
    /// when it is, but of no built-in preset's sizes.
    pub preset: fn(&Path) -> Result<Option<Preset>>,
    /// Whether a file holds the component (a text encoder, the VAE) as the built-in configs have
    /// it (by its names and widths), to find a denoiser file's parts among the files beside it.
    pub part_fits: fn(&Component, &Path) -> bool,
    /// The components a denoiser file holds beside the denoiser (a single file's VAE and text
    /// encoders), which need no file of their own.
    pub inside: fn(&Path) -> Vec<&'static str>,
}

/// A part a denoiser file runs with, given as a file of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePart {
    TextEncoder,
    Vae,
}

/// One component of a family's pipeline, as diffusers' model_index.json names it: what a download
/// fetches of a repository and what a model folder must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// Its key in model_index.json and its folder: "text_encoder_2", "unet", "scheduler".
    pub name: &'static str,
    pub kind: ComponentKind,
    /// Whether a model of the family may go without it (a second text encoder that only some of
    /// its architectures have).
    pub optional: bool,
}

impl Component {
    pub const fn required(name: &'static str, kind: ComponentKind) -> Component {
        Component {
            name,
            kind,
            optional: false,
        }
    }

    pub const fn optional(name: &'static str, kind: ComponentKind) -> Component {
        Component {
            name,
            kind,
            optional: true,
        }
    }
}

/// What a component is: a network with a config and weights, or the small files a tokenizer or
/// scheduler is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentKind {
    /// transformers' `CLIPTextModel`.
    ClipText,
    /// transformers' `CLIPTextModelWithProjection`.
    ClipTextWithProjection,
    /// transformers' `Qwen3Model` or `Qwen3ForCausalLM`, read as an encoder.
    Qwen3Text,
    /// transformers' `T5EncoderModel`.
    T5Text,
    /// diffusers' `UNet2DConditionModel`.
    UNet,
    /// A diffusion transformer.
    Transformer,
    /// A diffusers VAE (`AutoencoderKL`, `AutoencoderKLFlux2`).
    Vae,
    /// A CLIP byte-level BPE tokenizer in its original files.
    ClipTokenizer,
    /// A tokenizer in one tokenizers-library file (Qwen's, T5's).
    TokenizerJson,
    /// A scheduler config.
    Scheduler,
}

impl ComponentKind {
    /// A network: its safetensors weights beside its config.
    pub fn has_weights(self) -> bool {
        !matches!(
            self,
            ComponentKind::ClipTokenizer | ComponentKind::TokenizerJson | ComponentKind::Scheduler
        )
    }

    /// The part a file given on its own stands for (`--text-encoder`, `--vae`), for the
    /// networks that can be given so.
    pub fn file_part(self) -> Option<FilePart> {
        match self {
            ComponentKind::ClipText
            | ComponentKind::ClipTextWithProjection
            | ComponentKind::Qwen3Text
            | ComponentKind::T5Text => Some(FilePart::TextEncoder),
            ComponentKind::Vae => Some(FilePart::Vae),
            _ => None,
        }
    }

    /// What messages call it: "a CLIP text encoder".
    pub fn describe(self) -> &'static str {
        match self {
            ComponentKind::ClipText | ComponentKind::ClipTextWithProjection => {
                "a CLIP text encoder"
            }
            ComponentKind::Qwen3Text => "a Qwen3 text encoder",
            ComponentKind::T5Text => "a T5 encoder",
            ComponentKind::UNet => "a UNet",
            ComponentKind::Transformer => "a diffusion transformer",
            ComponentKind::Vae => "a VAE",
            ComponentKind::ClipTokenizer | ComponentKind::TokenizerJson => "a tokenizer",
            ComponentKind::Scheduler => "a scheduler config",
        }
    }

    /// The files of its folder it cannot be read without.
    pub fn needed_files(self) -> &'static [&'static str] {
        match self {
            ComponentKind::ClipTokenizer => &["vocab.json", "merges.txt"],
            ComponentKind::TokenizerJson => &["tokenizer.json"],
            ComponentKind::Scheduler => &["scheduler_config.json"],
            _ => &["config.json"],
        }
    }
}

/// How a family loads a model.
pub type LoadFn =
    fn(&ModelSource, SelectedDevice, Precision, LoadOptions) -> Result<Box<dyn FamilyPipeline>>;

/// A model family: the pipeline one folder under `families/` implements, and everything the
/// engine, the bench and the front ends need to know of it without naming it.
pub struct FamilyDescriptor {
    /// What messages call its models: "Stable Diffusion", "FLUX.2 klein".
    pub name: &'static str,
    /// The `model_index.json` `_class_name`s it loads, each with what such a pipeline holds
    /// (for the refusal of a class no family claims).
    pub classes: &'static [(&'static str, &'static str)],
    /// Its pipeline's components, in model_index.json's names: all a download fetches of its
    /// repositories (anything else they list, a safety checker, is not read).
    pub components: &'static [Component],
    /// The architectures it runs (Stable Diffusion's: SD1.x, SD2.x, SDXL).
    pub architectures: &'static [Family],
    /// Its built-in presets.
    pub presets: &'static [Preset],
    /// The schedulers its models step with.
    pub schedulers: &'static [SchedulerKind],
    /// For a family that reads whole single-file checkpoints (the original, non-diffusers layout,
    /// its text encoders and VAE inside): whether a file is one of its own, by its tensor names
    /// (`Ok(false)`: not this family's; an error naming what it is when it is this family's but of
    /// a kind it does not run). `registry::file_owner` asks every family.
    pub checkpoints: Option<fn(&Path) -> Result<bool>>,
    /// Whether a guidance scale runs classifier-free guidance (two denoiser passes a step, and
    /// the negative prompt): the rule of the family's diffusers pipeline (above 1, or above 0),
    /// the one its pipeline, the memory estimate and the bench read.
    pub guided: fn(f64) -> bool,
    /// Whether its guidance takes `GuidanceOptions`' truncation and normalization.
    pub guidance_options: bool,
    /// Whether its guidance takes `GuidanceOptions`' skip-layer guidance.
    pub skip_layer_guidance: bool,
    /// Whether it takes `GuidanceOptions`' true classifier-free guidance.
    pub true_cfg: bool,
    /// The initial latents' shape a request's `--latents` gives, for help texts:
    /// "[batch, 4, H/8, W/8]".
    pub latents: &'static str,
    /// Whether it conditions images on reference pictures (`GenerateRequest::reference_images`);
    /// `check_request` refuses them where it does not.
    pub reference_pictures: bool,
    /// What it cannot do for any request (pictures, sizes, options), checked before a model is
    /// loaded; the scheduler is checked against `schedulers` beside it.
    pub check_request: fn(&GenerateRequest) -> Result<()>,
    /// Loads a model of this family (the device supports `precision`).
    pub load: LoadFn,
    /// What the memory estimate needs of a model: parameters from its configs and weight headers
    /// (nothing is loaded), and its VAE's config.
    pub model_size: fn(&ModelSource, Precision) -> Result<(ModelSize, VaeConfig)>,
    /// For a family whose denoiser files carry no configs or tokenizer (a ComfyUI transformer
    /// file): the preset such a file needs, and the parts it runs with.
    pub denoiser_files: Option<DenoiserFiles>,
    /// Its tiny random-weight pipelines with diffusers' generations
    /// (`crates/diffusion/tests/fixtures/<name>`), which `sdbench parity` checks.
    pub parity_fixtures: &'static [&'static str],
    /// The standard workloads defined on its presets, the one a model of its runs by default
    /// first (per architecture: `sdbench bench --model M` runs the first made for M's).
    pub workloads: &'static [&'static WorkloadSpec],
}

impl FamilyDescriptor {
    /// Whether a model folder whose `model_index.json` names `class` is this family's.
    pub fn claims(&self, class: &str) -> bool {
        self.classes.iter().any(|(c, _)| *c == class)
    }

    /// The request's scheduler (if any) against `schedulers`, then the family's own checks.
    pub fn check_request(&self, request: &GenerateRequest) -> Result<()> {
        if let Some(kind) = request.scheduler {
            if !self.schedulers.contains(&kind) {
                return Err(DiffusionError::Request(format!(
                    "--scheduler {} does not apply to {} models; they take {}",
                    kind.name(),
                    self.name,
                    self.scheduler_names().join(", ")
                )));
            }
        }
        let options = &request.guidance_options;
        if !self.guidance_options && options.shapes_the_scale() {
            return Err(DiffusionError::Request(format!(
                "guidance truncation and normalization do not apply to {} models",
                self.name
            )));
        }
        if !self.skip_layer_guidance && options.skip_layers.is_some() {
            return Err(DiffusionError::Request(format!(
                "skip-layer guidance does not apply to {} models",
                self.name
            )));
        }
        if !self.true_cfg && options.true_cfg.is_some() {
            return Err(DiffusionError::Request(format!(
                "true classifier-free guidance (--true-cfg-scale) does not apply to {} models; their guidance is the guidance scale",
                self.name
            )));
        }
        if let Some(problem) =
            crate::pipeline::limits::guidance_options_error(&request.guidance_options)
        {
            return Err(DiffusionError::Request(problem));
        }
        (self.check_request)(request)
    }

    /// The names `--scheduler` takes for this family's models.
    pub fn scheduler_names(&self) -> Vec<&'static str> {
        self.schedulers.iter().map(|k| k.name()).collect()
    }
}

impl fmt::Debug for FamilyDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for FamilyDescriptor {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for FamilyDescriptor {}

/// One architecture a family runs (what results record as the model's family).
pub struct Architecture {
    /// Its name in results and reports: "sd1", "sdxl", "flux2-klein".
    pub name: &'static str,
    /// The image side its models are made for (what a load with no planned request is checked
    /// for).
    pub usual_side: usize,
    pub descriptor: &'static FamilyDescriptor,
    /// The upstream model's parameters: what a single-file checkpoint or synthetic weights hold.
    pub upstream: fn() -> UpstreamParameters,
    /// Its denoiser's device memory beyond the weights (measured coefficients).
    pub denoiser_memory: DenoiserMemory,
    /// Whether its pipeline decodes in f32 when the VAE's config says `force_upcast` (diffusers'
    /// SDXL pipeline does; SD1.x's and SD2.x's ignore the flag).
    pub honours_vae_force_upcast: bool,
    /// Whether it starts from a picture (image-to-image), so a load may keep the VAE encoder.
    pub image_to_image: bool,
}

/// A handle to an `Architecture`: compared by identity, printed by name.
#[derive(Clone, Copy)]
pub struct Family(pub &'static Architecture);

impl Family {
    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn usual_side(self) -> usize {
        self.0.usual_side
    }

    /// The family pipeline that runs it.
    pub fn descriptor(self) -> &'static FamilyDescriptor {
        self.0.descriptor
    }

    pub fn architecture(self) -> &'static Architecture {
        self.0
    }
}

impl PartialEq for Family {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Family {}

impl Hash for Family {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name.hash(state)
    }
}

impl fmt::Debug for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

/// An upstream model whose configs are built in.
pub struct PresetSpec {
    /// Its name after `synthetic-`: "sd15", "flux2-klein".
    pub name: &'static str,
    /// The Hub repository whose config files it copies.
    pub repository: &'static str,
    pub family: Family,
    /// How front ends name it: short ("SDXL") and long ("Stable Diffusion XL base 1.0").
    pub short_label: &'static str,
    pub long_label: &'static str,
    /// One step of one image per pixel, relative to SD1.5's: what the results service counts
    /// against the step rates no device could reach.
    pub step_cost: f64,
    /// Its layers that `sdbench timing --ops --ops-of <name>` times alone, if any.
    pub op_cases: Option<OpCases>,
}

/// One standard workload: fixed settings and prompts that a benchmark run makes images of
/// (crates/bench turns one into a run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkloadSpec {
    /// What scores are filed under: `<model>-<side>-<steps>`.
    pub name: &'static str,
    /// Raised whenever anything below changes.
    pub version: u32,
    /// The model it is defined on: only a model of this preset's configs gives a standard score,
    /// and the default model is this preset's repository. Families write `Preset(&SPEC)`: the
    /// `Preset::X` constants would make the registry's statics a cycle for the compiler.
    pub preset: Preset,
    pub width: usize,
    pub height: usize,
    pub steps: usize,
    pub scheduler: SchedulerKind,
    /// The guidance scale (0 or 1 for a distilled model that runs unguided).
    pub guidance: f64,
    /// The timed generations, one per prompt and seed.
    pub prompts: Prompts,
    /// What a workload card adds after its guidance, e.g. " (MLPerf's settings)"; may be empty.
    pub note: &'static str,
}

/// A handle to a `PresetSpec`: compared by identity, printed by name.
#[derive(Clone, Copy)]
pub struct Preset(pub &'static PresetSpec);

// `Preset::all` and `Preset::named` read the registry, so they live in `engine/registry.rs`.
impl Preset {
    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn repository(self) -> &'static str {
        self.0.repository
    }

    pub fn family(self) -> Family {
        self.0.family
    }

    pub fn short_label(self) -> &'static str {
        self.0.short_label
    }

    pub fn long_label(self) -> &'static str {
        self.0.long_label
    }

    pub fn step_cost(self) -> f64 {
        self.0.step_cost
    }

    pub fn op_cases(self) -> Option<OpCases> {
        self.0.op_cases
    }
}

impl PartialEq for Preset {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Preset {}

impl Hash for Preset {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name.hash(state)
    }
}

impl fmt::Debug for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}
