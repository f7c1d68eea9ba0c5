//! The model a person generates with, loaded once and kept while it serves: the same model, device,
//! precision and memory choice; a VAE encoder where the request starts from a picture; and, with
//! `auto`, a request that still fits the profile chosen earlier.

use std::path::Path;
use std::time::Instant;

use sdbench_diffusion::device::AllocatorMemory;
use sdbench_diffusion::pipeline::StageTimings;
use sdbench_diffusion::{
    family_of, BackendRequest, CancelToken, DeviceRequest, GenerateRequest, LoadOptions,
    MemoryProfile, ModelSource, Pipeline, Precision, Progress, RequestShape,
};
use sdbench_history::Generation;
use sdbench_hub::HubSettings;
use sdbench_session::device_memory::{place, MemoryChoice, Placement};
use sdbench_session::events::Event;
use sdbench_session::vram_report::{VramRecorder, VramReport};
use sdbench_session::ModelName;

use crate::error::Result;
use crate::output::{save, Destination};
use crate::request::GenerationRequest;

/// What the model is loaded from and on. A loaded model serves the next request while this stays
/// the same.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSetup {
    /// The model as the person named it (the history records this).
    pub label: String,
    pub model: ModelName,
    pub device: DeviceRequest,
    pub memory: MemoryChoice,
    /// `None`: f16 where the device supports it.
    pub precision: Option<Precision>,
}

/// Where a generation's model comes from and its records go.
pub struct Context<'a> {
    pub hub: &'a HubSettings,
    /// The history database.
    pub history: &'a Path,
    /// Written into each PNG's parameters.
    pub app_version: &'a str,
}

/// What a generation made.
pub struct Outcome {
    /// One per image, with the path it was written to.
    pub generations: Vec<Generation>,
    pub paths: Vec<std::path::PathBuf>,
    pub timings: StageTimings,
    pub width: usize,
    pub height: usize,
    /// Set when the images could not be added to the history (they are still written).
    pub history_warning: Option<String>,
    /// With `vram_report` asked for, on a backend with a device allocator.
    pub vram_report: Option<VramReport>,
}

impl Outcome {
    /// "X s: text encoder ..., N steps ... s (R it/s), vae decode ... s": the generation's time,
    /// loading left out, and its stages'.
    pub fn summary(&self) -> String {
        timing_summary(&self.timings)
    }
}

struct Loaded {
    setup: ModelSetup,
    pipeline: Pipeline,
    profile: MemoryProfile,
}

/// Holds the loaded model between requests (the app keeps one; the CLI makes one per run).
#[derive(Default)]
pub struct Generator {
    loaded: Option<Loaded>,
}

impl Generator {
    /// Frees the loaded model (before a benchmark loads its own, or the cache is cleaned).
    pub fn unload(&mut self) {
        self.loaded = None;
    }

    /// Checks `request` and `destination`, loads the model if the one held cannot serve the
    /// request, generates, checks the images are finite, writes them and records them.
    pub fn generate(
        &mut self,
        setup: &ModelSetup,
        request: &GenerationRequest,
        destination: &Destination,
        context: &Context,
        observer: &mut dyn FnMut(&Event),
        cancel: &CancelToken,
    ) -> Result<Outcome> {
        // Cheap checks first: nothing is loaded when the request cannot succeed.
        let engine_request = request.engine_request()?;
        destination.check()?;
        let loaded = self.load_for(setup, &engine_request, context.hub, observer, cancel)?;
        // The pipeline checks what its family needs of the request (sides a multiple of its
        // patch) before any work.
        let pipeline = &loaded.pipeline;
        let family = pipeline.info.family.descriptor();
        if pipeline.ignores_guidance() && (family.guided)(request.guidance) {
            observer(&Event::note(format!(
                "this model is step-distilled ({}): it runs without classifier-free guidance, whatever the guidance says",
                family.name
            )));
        }
        let mut vram = request
            .vram_report
            .then(|| VramRecorder::new(|| pipeline.device.allocator_memory()))
            .flatten()
            .map(|recorder| VramPhases { recorder, sent: 0 });
        if let Some(vram) = vram.as_mut() {
            vram.record(None, observer);
        }
        observer(&Event::ImageStarted {
            index: 1,
            total: 1,
            warmup: false,
        });
        // Every step ends with a device sync, so each phase's memory is what the device holds then.
        let generated = pipeline.generate(
            &engine_request,
            &mut |p| {
                if let Some(vram) = vram.as_mut() {
                    vram.record(Some(p), observer);
                }
                observer(&progress_event(p))
            },
            cancel,
        )?;
        let vram_report = vram.map(|v| v.recorder.finish("this generation"));
        // A non-finite image is not written, but how long it took still says what ran.
        if let Err(e) = pipeline.require_finite(&generated) {
            observer(&Event::note(format!(
                "generated nothing usable in {}",
                timing_summary(&generated.timings)
            )));
            return Err(e.into());
        }
        observer(&Event::ImageFinished {
            index: 1,
            total: 1,
            seconds: generated.timings.total,
            valid: true,
            warmup: false,
        });
        let init_name = request.init.as_ref().map(|i| i.name.as_str());
        let mut generations: Vec<Generation> = (0..generated.images.len())
            .map(|k| {
                let mut record = Generation::from_engine(
                    &setup.label,
                    &engine_request,
                    pipeline,
                    loaded.profile,
                    &generated,
                    k,
                    init_name,
                );
                record.vram_report = vram_report.clone();
                record.reference_images =
                    request.references.iter().map(|p| p.name.clone()).collect();
                record
            })
            .collect();
        let images: Vec<_> = generated.images.iter().map(|i| &i.image).collect();
        let (paths, history_warning) = save(
            &images,
            &mut generations,
            destination,
            request.latents_file.as_deref(),
            context.app_version,
            context.history,
        )?;
        Ok(Outcome {
            generations,
            paths,
            timings: generated.timings,
            width: engine_request.width,
            height: engine_request.height,
            history_warning,
            vram_report,
        })
    }

    /// The loaded model where it serves `request`, or a newly loaded one that does.
    fn load_for(
        &mut self,
        setup: &ModelSetup,
        request: &GenerateRequest,
        hub: &HubSettings,
        observer: &mut dyn FnMut(&Event),
        cancel: &CancelToken,
    ) -> Result<&Loaded> {
        let loaded = match self.loaded.take() {
            Some(loaded) => match loaded.serves(
                setup,
                &request.shape(loaded.pipeline.info.family.descriptor()),
            ) {
                Ok(true) => loaded,
                Ok(false) => {
                    // Free the old model's memory before loading the new one.
                    drop(loaded);
                    load(setup, request, hub, observer, cancel)?
                }
                Err(e) => {
                    self.loaded = Some(loaded);
                    return Err(e);
                }
            },
            None => load(setup, request, hub, observer, cancel)?,
        };
        Ok(self.loaded.insert(loaded))
    }
}

/// The event a generation's progress is reported as (its one image, not warm-up).
fn progress_event(progress: &Progress) -> Event {
    match *progress {
        Progress::TextEncoded { seconds } => Event::TextEncoded { seconds },
        Progress::Step {
            index,
            total,
            seconds,
        } => Event::Step {
            index: 1,
            total: 1,
            step: index,
            steps: total,
            seconds,
            warmup: false,
        },
        Progress::Decoded { seconds } => Event::Decoded { seconds },
    }
}

/// Finds the model, checks that its family can serve `request` at all (before its weights are
/// downloaded or read), places it for requests of that shape, and loads it.
fn load(
    setup: &ModelSetup,
    request: &GenerateRequest,
    hub: &HubSettings,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<Loaded> {
    let check = |source: &ModelSource| family_of(source)?.check_request(request);
    let source = setup
        .model
        .resolve(hub, observer, cancel, &mut |s| Ok(check(s)?))?;
    check(&source)?;
    let shape = &request.shape(family_of(&source)?);
    let placement = place_for(setup, &source, shape)?;
    if let Some(reason) = &placement.auto_reason {
        observer(&Event::note(format!(
            "memory profile: auto chose {} ({reason})",
            placement.profile
        )));
    } else if placement.profile != MemoryProfile::Full {
        observer(&Event::note(format!(
            "memory profile: {}",
            placement.profile
        )));
    }
    observer(&Event::Loading {
        model: setup.label.clone(),
        backend: placement.device.kind.name().into(),
    });
    let start = Instant::now();
    let options = placement.profile.load_options(LoadOptions {
        vae_encoder: shape.image_to_image,
        planned: Some(*shape),
        ..LoadOptions::default()
    });
    let pipeline = Pipeline::load_with(&source, placement.device, setup.precision, options)?;
    for note in &pipeline.notes {
        observer(&Event::note(note.clone()));
    }
    observer(&Event::Loaded {
        seconds: start.elapsed().as_secs_f64(),
        device: pipeline.device.info.name.clone(),
        precision: pipeline.precision.name().into(),
    });
    Ok(Loaded {
        setup: setup.clone(),
        pipeline,
        profile: placement.profile,
    })
}

impl Loaded {
    /// Whether the loaded model can serve a request of `shape` as `setup` asks.
    fn serves(&self, setup: &ModelSetup, shape: &RequestShape) -> Result<bool> {
        let loaded = self;
        let auto = setup.memory.auto;
        // A pipeline with the VAE encoder serves both kinds of request; one without is reloaded
        // with it for the first image-to-image request. With `auto`, the profile chosen for an
        // earlier request is kept while this one fits in it; one that does not chooses again.
        let usable = loaded.setup == *setup
            && (loaded.pipeline.has_vae_encoder() || !shape.image_to_image)
            && (!auto || loaded.pipeline.check_fits(shape).is_ok());
        if !usable {
            return Ok(false);
        }
        // `auto` fell back to the CPU for an earlier request that no profile on the device could
        // hold: each request asks again (from the loaded model's own source, so the model is not
        // resolved again while it stays on the CPU), and one the device holds goes back to it.
        if auto
            && loaded.profile == MemoryProfile::Cpu
            && setup.device.backend != BackendRequest::Cpu
        {
            let placement = place_for(setup, &loaded.pipeline.info.source, shape)?;
            return Ok(placement.profile == MemoryProfile::Cpu);
        }
        Ok(true)
    }
}

/// The allocator's memory after each phase, each sent as `Event::Vram` as it is recorded.
struct VramPhases<Q: FnMut() -> Option<AllocatorMemory>> {
    recorder: VramRecorder<Q>,
    sent: usize,
}

impl<Q: FnMut() -> Option<AllocatorMemory>> VramPhases<Q> {
    /// Records the phase `progress` ends (`None`: the model is loaded).
    fn record(&mut self, progress: Option<&Progress>, observer: &mut dyn FnMut(&Event)) {
        match progress {
            Some(p) => self.recorder.observe(p),
            None => self.recorder.record("load", None),
        }
        for phase in &self.recorder.phases()[self.sent..] {
            observer(&Event::Vram {
                phase: phase.clone(),
            });
        }
        self.sent = self.recorder.phases().len();
    }
}

fn place_for(setup: &ModelSetup, source: &ModelSource, shape: &RequestShape) -> Result<Placement> {
    Ok(place(
        setup.device,
        setup.memory,
        source,
        setup.precision,
        shape,
        Path::new("/"),
        true,
    )?)
}

fn timing_summary(t: &StageTimings) -> String {
    let rate = t.denoiser_steps.len() as f64 / t.denoiser_total.max(1e-9);
    let encode = if t.vae_encode > 0.0 {
        format!(", vae encode {:.2} s", t.vae_encode)
    } else {
        String::new()
    };
    format!(
        "{:.2} s: text encoder {:.2} s{encode}, {} steps {:.2} s ({:.2} it/s), vae decode {:.2} s",
        t.total,
        t.text_encoder,
        t.denoiser_steps.len(),
        t.denoiser_total,
        rate,
        t.vae_decode
    )
}
