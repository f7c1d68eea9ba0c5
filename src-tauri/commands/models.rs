//! The models on this machine, for the model choice on the Create and Benchmark screens.

use serde::Serialize;
use tauri::State;

use sdbench_bench::workload::Workload;
use sdbench_session::local_models::{self, LocalKind};
use sdbench_session::model_folders;

use super::blocking;
use crate::errors::UiResult;
use crate::state::AppState;

/// What a run of a model uses by default: its family's standard workload's size, steps and
/// guidance (FLUX.2 klein: 1024x1024, 4 steps; SD1.5: 512x512, 30 steps, 7.5).
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ModelDefaults {
    pub width: usize,
    pub height: usize,
    pub steps: usize,
    pub guidance: f64,
}

/// The guidance options a model's family takes, so that the Create screen offers only those.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct GuidanceChoices {
    /// CFG truncation and normalization.
    pub truncation_and_normalization: bool,
    pub skip_layer_guidance: bool,
    pub true_cfg: bool,
}

/// One model the choice lists.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct LocalModelView {
    /// What the model setting takes: a Hub id, a path, or `synthetic-<preset>`.
    pub name: String,
    /// The model family ("Stable Diffusion", "FLUX.2 klein", "Z-Image") and the architecture its
    /// configs describe ("sdxl"); none when they could not be read.
    pub family: Option<String>,
    pub architecture: Option<String>,
    /// Where it is and in what form ("diffusers folder (Hugging Face cache)", "single file
    /// (ComfyUI), GGUF Q8_0+F16", ...).
    pub format: String,
    pub synthetic: bool,
    pub size_bytes: Option<u64>,
    /// Why SD Bench cannot run it; none when it can.
    pub problem: Option<String>,
    pub defaults: Option<ModelDefaults>,
    /// None when the family is not known.
    pub guidance: Option<GuidanceChoices>,
    /// Whether its family conditions images on reference pictures; none when it is not known.
    pub reference_pictures: Option<bool>,
    /// A model file's text encoder and VAE files found beside it, which choosing it saves as the
    /// text encoder and VAE settings.
    pub text_encoders: Vec<String>,
    pub vae: Option<String>,
}

/// The Hugging Face cache's models, other apps' model folders (and the model folders setting's
/// and `SDBENCH_MODELS_DIRS`'), a folder or file the model setting names, and each preset's synthetic weights (nothing is
/// copied or moved).
#[tauri::command]
pub async fn local_models(state: State<'_, AppState>) -> UiResult<Vec<LocalModelView>> {
    let state = state.inner().clone();
    blocking(move || {
        let settings = state.settings();
        let named = settings.model;
        let added: Vec<std::path::PathBuf> = settings.model_dirs.iter().map(Into::into).collect();
        let folders = model_folders::from_environment(&added);
        let models = local_models::list(
            &state.hub,
            super::benchmark::REVISION,
            Some(&named),
            &folders,
        );
        Ok(models
            .into_iter()
            .map(|m| LocalModelView {
                family: m.architecture.map(|a| a.descriptor().name.to_string()),
                architecture: m.architecture.map(|a| a.name().to_string()),
                format: m.describe(),
                synthetic: m.kind == LocalKind::Synthetic,
                size_bytes: m.size_bytes,
                defaults: m.architecture.and_then(|a| {
                    let w = Workload::for_architecture(a, &m.name).ok()?;
                    Some(ModelDefaults {
                        width: w.width,
                        height: w.height,
                        steps: w.steps,
                        guidance: w.guidance,
                    })
                }),
                guidance: m.architecture.map(|a| {
                    let family = a.descriptor();
                    GuidanceChoices {
                        truncation_and_normalization: family.guidance_options,
                        skip_layer_guidance: family.skip_layer_guidance,
                        true_cfg: family.true_cfg,
                    }
                }),
                reference_pictures: m.architecture.map(|a| a.descriptor().reference_pictures),
                problem: m.problem,
                text_encoders: m
                    .parts
                    .text_encoders
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                vae: m.parts.vae.map(|p| p.display().to_string()),
                name: m.name,
            })
            .collect())
    })
    .await
}
