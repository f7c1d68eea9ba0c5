//! The Create screen: one image from a person's prompt, kept in the data folder with its
//! parameters inside the PNG and recorded in the history.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tauri::ipc::{Channel, Response};
use tauri::State;

use sdbench_bench::device_memory::select_device;
use sdbench_bench::ModelName;
use sdbench_diffusion::io::image::{decode_image, write_png};
use sdbench_diffusion::limits::{self, MAX_SIDE, MAX_STEPS, SIDE_MULTIPLE};
use sdbench_diffusion::pipeline::img2img_start;
use sdbench_diffusion::{
    choose_auto, BackendKind, BackendRequest, DeviceRequest, GenerateRequest, InitImage,
    InitialNoise, LoadOptions, MemoryProfile, ModelSource, Pipeline, Progress, RequestShape,
    SchedulerKind,
};
use sdbench_history::{Generation, Record};
use sdbench_hub::Hub;

use crate::errors::{UiError, UiResult};
use crate::events::JobEvent;
use crate::jobs::{JobContext, JobId, JobKind, Sink};
use crate::state::{AppState, LoadedPipeline, PipelineKey};

use super::jobs::channel_sink;
use super::{blocking, target_path};

/// The largest seed the UI can hold exactly (JavaScript numbers are doubles).
pub const MAX_SEED: u64 = (1 << 53) - 1;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
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
}

/// A picture picked on the Create screen: its file name, bytes (PNG or JPEG) and strength.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitImageInput {
    pub name: String,
    pub bytes: Vec<u8>,
    pub strength: f64,
}

impl CreateRequest {
    /// The picked picture, decoded and checked (`None` for text-to-image).
    fn init_image(&self) -> UiResult<Option<InitImage>> {
        let Some(input) = &self.init_image else {
            return Ok(None);
        };
        let image = decode_image(&input.bytes).map_err(|problem| {
            UiError::bad_input(
                format!("The picture {} {problem}", input.name),
                "Pick a PNG or JPEG picture.",
            )
        })?;
        if limits::side_problem(image.width).is_some()
            || limits::side_problem(image.height).is_some()
        {
            return Err(UiError::bad_input(
                format!(
                    "The picture {} is {}x{} pixels",
                    input.name, image.width, image.height
                ),
                format!("Use a picture whose sides are multiples of {SIDE_MULTIPLE}, up to {MAX_SIDE} pixels (crop or resize it)."),
            ));
        }
        img2img_start(self.steps, input.strength).map_err(|e| {
            UiError::bad_input(
                e.to_string(),
                "Use a strength above 0 and at most 1, with steps x strength at least 1.",
            )
        })?;
        Ok(Some(InitImage {
            image,
            strength: input.strength,
        }))
    }

    /// Checks the request before anything is loaded.
    fn check(&self) -> UiResult<(Option<SchedulerKind>, Option<BackendRequest>)> {
        if self.prompt.trim().is_empty() {
            return Err(UiError::bad_input(
                "The prompt is empty",
                "Describe the image to draw.",
            ));
        }
        for (name, side) in [("width", self.width), ("height", self.height)] {
            if limits::side_problem(side).is_some() {
                return Err(UiError::bad_input(
                    format!("A {name} of {side} pixels is not possible"),
                    format!(
                        "Use a multiple of {SIDE_MULTIPLE} from {SIDE_MULTIPLE} to {MAX_SIDE}."
                    ),
                ));
            }
        }
        if limits::steps_problem(self.steps).is_some() {
            return Err(UiError::bad_input(
                format!("{} steps is out of range", self.steps),
                format!("Use 1 to {MAX_STEPS} steps."),
            ));
        }
        if !self.guidance.is_finite() || !(0.0..=50.0).contains(&self.guidance) {
            return Err(UiError::bad_input(
                format!("A guidance of {} is out of range", self.guidance),
                "Use 0 to 50 (7.5 is usual; 1 or less turns guidance off).",
            ));
        }
        if self.seed > MAX_SEED {
            return Err(UiError::bad_input(
                format!("The seed {} is too large", self.seed),
                format!("Use 0 to {MAX_SEED}."),
            ));
        }
        let scheduler = self
            .scheduler
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(SchedulerKind::from_name)
            .transpose()
            .map_err(|e| UiError::bad_input(e.to_string(), "Choose a listed scheduler."))?;
        let backend = self
            .backend
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(BackendRequest::from_name)
            .transpose()
            .map_err(|e| UiError::bad_input(e.to_string(), "Choose a listed backend."))?;
        Ok((scheduler, backend))
    }
}

#[derive(Debug, Serialize)]
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
    let (scheduler, backend) = request.check()?;
    let init_image = request.init_image()?;
    let settings = state.settings();
    // A backend named in the request runs on its best device; the settings' own on theirs.
    let device_request = match (backend, request.backend.as_deref()) {
        (Some(backend), Some(name)) => {
            settings.for_memory_profile(DeviceRequest::from(backend), name)?
        }
        _ => settings.device_request()?,
    };
    let key = PipelineKey {
        model: settings.model.clone(),
        model_config: settings.model_config.clone(),
        backend: request.backend.clone().unwrap_or(settings.backend.clone()),
        device: device_request.index,
        precision: settings.precision.clone(),
        memory: settings.memory.clone(),
        memory_limit: settings.memory_limit()?,
    };
    let mut profile = settings.memory_profile()?;
    let memory_auto = settings.memory_auto();
    let precision = settings.precision()?;
    // Image-to-image makes an image of the picture's size.
    let (width, height) = match &init_image {
        Some(init) => (init.image.width, init.image.height),
        None => (request.width, request.height),
    };
    let shape = RequestShape {
        width,
        height,
        batch: 1,
        guided: request.guidance > 1.0,
        image_to_image: init_image.is_some(),
    };
    let model_name = settings.model_name()?;
    let state = state.clone();
    state
        .jobs
        .clone()
        .start(JobKind::Generation, sink, move |cx| {
            let mut loaded = state.loaded_pipeline();
            // A pipeline with the VAE encoder serves both kinds of request; one without is
            // reloaded with it for the first image-to-image request.
            let needs_encoder = init_image.is_some();
            // With `auto`, the profile chosen for an earlier request is kept while this one
            // fits in it; a request that does not (a larger size) chooses again.
            let usable = loaded.as_ref().is_some_and(|l| {
                l.key == key
                    && (l.pipeline.has_vae_encoder() || !needs_encoder)
                    && (!memory_auto || l.pipeline.check_fits(&shape).is_ok())
            });
            // `auto` fell back to the CPU for an earlier request that no profile on the device
            // could hold: each request asks again (from the loaded model's own source, so the
            // model is not resolved again while it stays on the CPU), and one the device holds
            // goes back to it.
            let back_to_device = match loaded.as_ref() {
                Some(l)
                    if usable
                        && memory_auto
                        && l.memory == MemoryProfile::Cpu
                        && device_request.backend != BackendRequest::Cpu =>
                {
                    let device =
                        select_device(device_request, key.memory_limit, Path::new("/"), true)?;
                    let source = &l.pipeline.info.source;
                    choose_auto(source, &device, precision, &shape)?.profile != MemoryProfile::Cpu
                }
                _ => false,
            };
            if !usable || back_to_device {
                let source = model_source(&state, model_name, cx)?;
                let start = Instant::now();
                let mut device =
                    select_device(device_request, key.memory_limit, Path::new("/"), true)?;
                if memory_auto {
                    let auto = choose_auto(&source, &device, precision, &shape)?;
                    profile = auto.profile;
                    if profile.needs_cpu_backend() && device.kind != BackendKind::Cpu {
                        let cpu = DeviceRequest::from(BackendRequest::Cpu);
                        device = select_device(cpu, None, Path::new("/"), true)?;
                    }
                }
                // Free the old model's memory before loading the new one.
                *loaded = None;
                cx.emit(JobEvent::Loading {
                    model: key.model.clone(),
                    backend: key.backend.clone(),
                });
                let options = profile.load_options(LoadOptions {
                    vae_encoder: needs_encoder,
                    planned: Some(shape),
                    ..LoadOptions::default()
                });
                let pipeline = Pipeline::load_with(&source, device, precision, options)?;
                cx.emit(JobEvent::Loaded {
                    seconds: start.elapsed().as_secs_f64(),
                    device: pipeline.device.info.name.clone(),
                    precision: pipeline.precision.name().into(),
                });
                *loaded = Some(LoadedPipeline {
                    key: key.clone(),
                    pipeline,
                    memory: profile,
                });
            }
            let Some(current) = loaded.as_ref() else {
                return Err(UiError::internal("the model was not loaded"));
            };
            let out = generate(&state, current, &request, init_image, scheduler, cx)?;
            serde_json::to_value(out).map_err(|e| UiError::internal(e.to_string()))
        })
}

/// A Hub model is taken from the cache, or downloaded with progress.
fn model_source(state: &AppState, name: ModelName, cx: &JobContext) -> UiResult<ModelSource> {
    Ok(match name {
        ModelName::Local(source) => source,
        ModelName::Hub { id, .. } => {
            let resolved = Hub::new(state.hub.clone()).resolve(
                &id,
                "main",
                &mut |p| cx.emit(JobEvent::from(p)),
                &|| cx.is_cancelled(),
            )?;
            if let Some(reason) = resolved.offline_reason {
                cx.emit(JobEvent::Note {
                    text: format!("The Hub is not reachable ({reason}); using the cached copy."),
                });
            }
            ModelSource::Folder(resolved.path)
        }
    })
}

fn generate(
    state: &AppState,
    loaded: &LoadedPipeline,
    request: &CreateRequest,
    init_image: Option<InitImage>,
    scheduler: Option<SchedulerKind>,
    cx: &JobContext,
) -> UiResult<CreateOutput> {
    let pipeline = &loaded.pipeline;
    // Image-to-image makes an image of the picture's size.
    let (width, height) = match &init_image {
        Some(init) => (init.image.width, init.image.height),
        None => (request.width, request.height),
    };
    let engine_request = GenerateRequest {
        prompt: request.prompt.clone(),
        negative_prompt: request.negative_prompt.clone(),
        steps: request.steps,
        guidance_scale: request.guidance,
        scheduler,
        width,
        height,
        noise: InitialNoise::Seed(request.seed),
        batch: 1,
        init_image,
    };
    pipeline.validate(&engine_request)?;
    cx.emit(JobEvent::ImageStarted {
        index: 1,
        total: 1,
        warmup: false,
    });
    let generated = pipeline.generate(
        &engine_request,
        &mut |p| {
            if let Progress::Step {
                index,
                total,
                seconds,
            } = p
            {
                cx.emit(JobEvent::Step {
                    index: 1,
                    total: 1,
                    step: *index,
                    steps: *total,
                    seconds: *seconds,
                    warmup: false,
                })
            }
        },
        &cx.cancel,
    )?;
    pipeline.require_finite(&generated)?;
    let t = &generated.timings;
    cx.emit(JobEvent::ImageFinished {
        index: 1,
        total: 1,
        seconds: t.total,
        valid: true,
        warmup: false,
    });
    let init_name = request.init_image.as_ref().map(|i| i.name.as_str());
    let mut generation = Generation::from_engine(
        &loaded.key.model,
        &engine_request,
        pipeline,
        loaded.memory,
        &generated,
        0,
        init_name,
    );
    let path = state.paths.images.join(format!("{}.png", generation.id));
    write_png(
        &path,
        &generated.images[0].image,
        &generation.png_text(None, env!("CARGO_PKG_VERSION")),
    )?;
    generation.image_path = Some(path.display().to_string());
    let history_warning = state
        .history()
        .and_then(|h| Ok(h.add_generation(&generation)?))
        .err()
        .map(|e| e.message);
    Ok(CreateOutput {
        generation,
        history_warning,
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
