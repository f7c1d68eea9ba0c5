//! The Create screen: one image from a person's prompt, kept in the data folder with its
//! parameters inside the PNG and recorded in the history.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tauri::ipc::{Channel, Response};
use tauri::State;

use sdbench_diffusion::{GuidanceOptions, InitialNoise, SchedulerKind, SkipLayerGuidance};
use sdbench_generate::{Context, Destination, GenerationRequest, InitPicture, Picture};
use sdbench_history::{Generation, Record};

use crate::errors::{UiError, UiResult};
use crate::events::JobEvent;
use crate::jobs::{JobId, JobKind, Sink};
use crate::state::AppState;

use super::jobs::channel_sink;
use super::{blocking, target_path};

/// The largest seed the UI can hold exactly (JavaScript numbers are doubles).
pub const MAX_SEED: u64 = (1 << 53) - 1;

#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields = nullable)]
pub struct CreateRequest {
    pub prompt: String,
    #[serde(default)]
    pub negative_prompt: String,
    pub steps: usize,
    pub guidance: f64,
    pub seed: u64,
    pub width: usize,
    pub height: usize,
    /// None: the model's own scheduler.
    #[serde(default)]
    pub scheduler: Option<String>,
    /// None: the backend in the settings.
    #[serde(default)]
    pub backend: Option<String>,
    /// Image-to-image: the picked picture (its size is the image's size).
    #[serde(default)]
    pub init_image: Option<InitImageInput>,
    /// Pictures to condition the image on (models that take them; the others refuse them).
    #[serde(default)]
    pub reference_images: Vec<PictureInput>,
    /// Steps past this fraction of the schedule run unguided (models whose guidance takes it; the
    /// others refuse it).
    #[serde(default)]
    pub cfg_truncation: Option<f64>,
    /// Each guided prediction's norm capped at this many times the unguided one's.
    #[serde(default)]
    pub cfg_normalization: Option<f64>,
    /// True classifier-free guidance at this scale (models that read the guidance scale as an
    /// input of their own; the others refuse it).
    #[serde(default)]
    pub true_cfg_scale: Option<f64>,
    /// Skip-layer guidance over these denoiser blocks (none: off), at `skip_layer_scale` (none:
    /// diffusers' 2.8) over diffusers' default steps.
    #[serde(default)]
    pub skip_layers: Vec<usize>,
    #[serde(default)]
    pub skip_layer_scale: Option<f64>,
}

/// A reference picture picked on the Create screen: its file name and bytes (PNG or JPEG).
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PictureInput {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A picture picked on the Create screen: its file name, bytes (PNG or JPEG) and strength.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct InitImageInput {
    pub name: String,
    pub bytes: Vec<u8>,
    pub strength: f64,
}

impl CreateRequest {
    /// The library's request; what only the window needs checked (an empty prompt, a seed the
    /// window cannot hold, a name from a list) is checked here, everything else by the use case.
    fn to_generation(&self) -> UiResult<GenerationRequest> {
        if self.prompt.trim().is_empty() {
            return Err(UiError::bad_input(
                "The prompt is empty",
                "Describe the image to draw.",
            ));
        }
        if self.seed > MAX_SEED {
            return Err(UiError::bad_input(
                format!("The seed {} is too large", self.seed),
                format!("Use 0 to {MAX_SEED}."),
            ));
        }
        let scheduler = (self.scheduler.as_deref())
            .filter(|name| !name.is_empty())
            .map(SchedulerKind::from_name)
            .transpose()
            .map_err(|e| UiError::bad_input(e.to_string(), "Choose a listed scheduler."))?;
        let init = self
            .init_image
            .as_ref()
            .map(|i| InitPicture::decode(&i.name, &i.bytes, i.strength))
            .transpose()?;
        let references = self
            .reference_images
            .iter()
            .map(|p| Picture::decode(&p.name, &p.bytes))
            .collect::<Result<Vec<_>, _>>()?;
        // The picture's size is the image's (the window sends the picture's).
        let sized = init.is_none();
        let request = GenerationRequest {
            negative_prompt: self.negative_prompt.clone(),
            steps: self.steps,
            guidance: self.guidance,
            scheduler,
            width: sized.then_some(self.width),
            height: sized.then_some(self.height),
            noise: InitialNoise::Seed(self.seed),
            init,
            references,
            guidance_options: GuidanceOptions {
                truncation: self.cfg_truncation,
                normalization: self.cfg_normalization,
                skip_layers: self.skip_layer_guidance()?,
                true_cfg: self.true_cfg_scale,
            },
            ..GenerationRequest::new(self.prompt.clone())
        };
        request.check()?;
        Ok(request)
    }

    /// Skip-layer guidance over `skip_layers` at `skip_layer_scale`, none without blocks.
    fn skip_layer_guidance(&self) -> UiResult<Option<SkipLayerGuidance>> {
        if self.skip_layers.is_empty() {
            return Ok(None);
        }
        let Some(skip) = SkipLayerGuidance::new(&self.skip_layers) else {
            return Err(UiError::bad_input(
                "A skip-layer guidance block is out of range",
                format!(
                    "Give the denoiser's block numbers, from 0 to {}.",
                    SkipLayerGuidance::MAX_LAYER
                ),
            ));
        };
        Ok(Some(SkipLayerGuidance {
            scale: self.skip_layer_scale.unwrap_or(skip.scale),
            ..skip
        }))
    }
}

#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct CreateOutput {
    pub generation: Generation,
    /// Set when the image could not be added to the history (the PNG is still saved).
    pub history_warning: Option<String>,
}

/// Scheduler names for the Create screen.
#[tauri::command]
pub async fn schedulers() -> UiResult<Vec<String>> {
    Ok(SchedulerKind::NAMES.iter().map(|s| s.to_string()).collect())
}

/// Generates one image with the configured model (loaded once and kept for the next image).
#[tauri::command]
pub async fn start_generation(
    state: State<'_, AppState>,
    request: CreateRequest,
    on_event: Channel<JobEvent>,
) -> UiResult<JobId> {
    start_generation_job(state.inner(), request, channel_sink(on_event))
}

/// The body of `start_generation`, callable without a window.
pub fn start_generation_job(
    state: &AppState,
    request: CreateRequest,
    sink: Sink,
) -> UiResult<JobId> {
    let generation = request.to_generation()?;
    let setup = state.settings().model_setup(request.backend.as_deref())?;
    let state = state.clone();
    state
        .jobs
        .clone()
        .start(JobKind::Generation, sink, move |cx| {
            let context = Context {
                hub: &state.hub,
                history: &state.paths.history,
                app_version: env!("CARGO_PKG_VERSION"),
            };
            let outcome = state.generator().generate(
                &setup,
                &generation,
                &Destination::Folder(state.paths.images.clone()),
                &context,
                &mut |e| cx.emit(JobEvent::from(e)),
                &cx.cancel,
            )?;
            let generation = outcome.generations.into_iter().next();
            let generation =
                generation.ok_or_else(|| UiError::internal("the generation made no image"))?;
            let output = CreateOutput {
                generation,
                history_warning: outcome.history_warning,
            };
            serde_json::to_value(output).map_err(|e| UiError::internal(e.to_string()))
        })
}

/// Saves a generated image (with its parameters inside) at `path`.
#[tauri::command]
pub async fn save_image(state: State<'_, AppState>, id: String, path: String) -> UiResult<String> {
    let state = state.inner().clone();
    blocking(move || {
        let target = target_path(&path, &["png"])?;
        let source = match state.history()?.get(&id) {
            Ok(Record::Generation(g)) => g.image_path.map(PathBuf::from),
            Ok(Record::Benchmark(_)) => None,
            Err(sdbench_history::HistoryError::NotFound(_)) => {
                return Err(UiError::not_found(format!("There is no image {id}")))
            }
            Err(e) => return Err(e.into()),
        };
        let source = source.filter(|p| p.is_file()).ok_or_else(|| {
            UiError::not_found(format!("The image file of {id} is no longer on disk"))
        })?;
        let bytes = std::fs::read(&source)?;
        sdbench_bench::result::write_atomically(&target, &bytes)?;
        Ok(target.display().to_string())
    })
    .await
}

/// The bytes of a PNG the app made (benchmark or Create images), for display. Only files under the
/// data folder's runs and images folders are served: the web view cannot read other files through
/// it, whatever path it names (`..` and links are resolved first).
#[tauri::command]
pub async fn read_image(state: State<'_, AppState>, path: String) -> UiResult<Response> {
    let roots = [state.paths.runs.clone(), state.paths.images.clone()];
    blocking(move || {
        let path = PathBuf::from(path);
        let is_png = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"));
        if !is_png || !path.is_file() {
            return Err(UiError::not_found(format!(
                "{} is not a PNG image on this disk",
                path.display()
            )));
        }
        let real = path.canonicalize()?;
        let inside = roots
            .iter()
            .filter_map(|root| root.canonicalize().ok())
            .any(|root| real.starts_with(root));
        if !inside {
            return Err(UiError::bad_input(
                format!("{} is not an image SD Bench made", path.display()),
                format!(
                    "Only images under {} and {} are shown here",
                    roots[0].display(),
                    roots[1].display()
                ),
            ));
        }
        Ok(Response::new(std::fs::read(&path)?))
    })
    .await
}
