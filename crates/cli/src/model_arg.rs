//! `--model`: a local folder, a single-file checkpoint, a Hub id (from the cache, or downloaded),
//! or `synthetic`; with a model file, `--model-config` (the folder describing it) and the
//! component files kept apart from it (`--text-encoder`, `--vae`).

use std::path::PathBuf;

use anyhow::Context;
use sdbench_diffusion::{ComponentFiles, ModelSource, Preset, FAMILIES, PLAIN_SYNTHETIC};
use sdbench_hub::HubSettings;
use sdbench_session::{Event, ModelName};

use crate::progress::DownloadBar;

/// What goes with a model file given to `--model`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ModelFileArgs {
    /// For a model file: a diffusers model folder whose configs, tokenizer and scheduler describe
    /// it. Without it, a checkpoint is read with its built-in preset's configs, found by its tensor
    /// names, and a transformer file (ComfyUI's) of a built-in preset's sizes with that preset's Hub
    /// repository's (fetched once, no weights); docs/models.md lists them. A transformer file's
    /// text encoder and VAE come from this folder unless --text-encoder and --vae name files.
    #[arg(long, value_name = "FOLDER")]
    pub model_config: Option<PathBuf>,
    /// For a transformer file kept apart from its model: a text encoder as a file of its own
    /// (ComfyUI's `text_encoders/`; transformers' names, safetensors, FP8 or GGUF). Give it once
    /// for each text encoder the model has, in any order: each file's role is found from its
    /// tensor names and widths (docs/models.md lists the files each model takes).
    #[arg(long, value_name = "FILE")]
    pub text_encoder: Vec<PathBuf>,
    /// For a model file: its VAE as a file of its own (ComfyUI's `vae/`, a fine-tuned VAE), in the
    /// original names or diffusers'; replaces a checkpoint's own VAE.
    #[arg(long, value_name = "FILE")]
    pub vae: Option<PathBuf>,
}

impl ModelFileArgs {
    fn parts(&self) -> ComponentFiles {
        ComponentFiles {
            text_encoders: self.text_encoder.clone(),
            vae: self.vae.clone(),
        }
    }
}

/// Parses `--model`; a renamed Hub id is mapped to its successor with a note on stderr.
pub fn parse(text: &str, with: &ModelFileArgs) -> anyhow::Result<ModelName> {
    let name = ModelName::parse(text, with.model_config.as_deref(), &with.parts())?;
    if let ModelName::Hub {
        note: Some(note), ..
    } = &name
    {
        eprintln!("note: {note}");
    }
    Ok(name)
}

/// The model as the engine loads it: Hub ids come from the cache, or are downloaded with a
/// progress bar.
pub fn resolve(text: &str, with: &ModelFileArgs) -> anyhow::Result<ModelSource> {
    let name = parse(text, with)?;
    let mut bar = DownloadBar::new();
    let cancel = crate::interrupt::token();
    let source = name
        .resolve(
            &HubSettings::from_env(),
            &mut |event| match event {
                Event::Download(p) => bar.update(p),
                Event::Note { text } => {
                    bar.finish();
                    eprintln!("note: {text}");
                }
                _ => {}
            },
            &cancel,
            &mut |_| Ok(()),
        )
        .with_context(|| format!("getting {text} failed"))?;
    bar.finish();
    Ok(source)
}

/// `--scheduler`'s help: the schedulers each model family takes, from the family registry.
pub fn scheduler_help(what: &str) -> String {
    let families: Vec<String> = sdbench_diffusion::FAMILIES
        .iter()
        .map(|f| format!("{} models take {}", f.name, f.scheduler_names().join(", ")))
        .collect();
    format!("{what} ({})", families.join("; "))
}

/// `--model`'s help: the families and presets from the family registry.
pub fn model_help() -> String {
    let names = |keep: &dyn Fn(&sdbench_diffusion::FamilyDescriptor) -> bool| {
        let names: Vec<&str> = FAMILIES
            .iter()
            .filter(|f| keep(f))
            .map(|f| f.name)
            .collect();
        names.join(", ")
    };
    let presets: Vec<String> = Preset::all()
        .map(|p| format!("`synthetic-{}`", p.name()))
        .collect();
    format!(
        "A diffusers model folder ({}), a single-file checkpoint ({}) or a transformer file ({}) \
         with the files its parts need (.safetensors or .gguf; see --model-config, \
         --text-encoder and --vae), a Hub id (from the Hugging Face cache, downloaded if missing), \
         or `synthetic` for {}'s architecture with generated weights ({}: those models')",
        names(&|_| true),
        names(&|f| f.checkpoints.is_some()),
        names(&|f| f.denoiser_files.is_some()),
        PLAIN_SYNTHETIC.short_label(),
        presets.join(", ")
    )
}

/// `--latents`' help: each family's latent shape, from the family registry.
pub fn latents_help() -> String {
    let shapes: Vec<String> = FAMILIES
        .iter()
        .map(|f| format!("{}: {}", f.name, f.latents))
        .collect();
    format!(
        "Initial latents: a float32 .npy of the model's latent shape ({}), used like diffusers' \
         `latents=` (with --init-image: the noise added to the picture)",
        shapes.join("; ")
    )
}
