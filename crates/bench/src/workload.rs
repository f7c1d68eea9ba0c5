//! The standard workloads and the overrides that turn a run into a custom one.

use serde::{Deserialize, Serialize};

use sdbench_diffusion::limits;
use sdbench_diffusion::{
    standard_workloads, Family, ModelSource, Precision, Preset, RequestShape, SchedulerKind,
    WorkloadSpec, STANDARD_WORKLOAD,
};
use sdbench_hub::HubSettings;
use sdbench_session::ModelName;

use crate::error::{BenchError, Result};

/// The workload a run that names none makes (the families' registry says which).
pub const STANDARD_NAME: &str = STANDARD_WORKLOAD.name;
pub const STANDARD_VERSION: u32 = STANDARD_WORKLOAD.version;
/// The most images a custom run may make.
pub const MAX_IMAGES: usize = 1000;

/// How a front end lists a standard workload: its name, a short label, what one run makes, and a
/// sentence describing it, all from the workload's own settings.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct WorkloadCard {
    pub name: String,
    pub label: String,
    pub run: String,
    pub description: String,
}

/// Every standard workload's card, the standard one first (`workload_names`' order).
pub fn cards() -> Vec<WorkloadCard> {
    standard_workloads()
        .map(|spec| Workload::from_spec(spec).card())
        .collect()
}

/// Every standard workload's name, the default first: what each model family declares, in the
/// registry's order.
pub fn workload_names() -> Vec<&'static str> {
    standard_workloads().map(|spec| spec.name).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct PromptSeed {
    pub prompt: String,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    pub version: u32,
    /// True only for an unmodified standard workload.
    pub standard: bool,
    /// The architecture the workload is defined on: only a model whose configs are this preset's
    /// gives a standard score, and the default model is this preset's repository.
    pub preset: Preset,
    pub width: usize,
    pub height: usize,
    pub steps: usize,
    pub scheduler: SchedulerKind,
    pub guidance: f64,
    pub negative_prompt: String,
    /// One timed generation per entry, in order.
    pub prompts: Vec<PromptSeed>,
    /// Images per generation, made together (one UNet call per step for the batch).
    pub batch: usize,
}

/// What a person may change; any `Some` makes the run custom.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub steps: Option<usize>,
    pub width: Option<usize>,
    pub height: Option<usize>,
    pub images: Option<usize>,
    pub scheduler: Option<SchedulerKind>,
    pub prompt: Option<String>,
    pub batch: Option<usize>,
}

impl Overrides {
    pub fn any(&self) -> bool {
        self.steps.is_some()
            || self.width.is_some()
            || self.height.is_some()
            || self.images.is_some()
            || self.scheduler.is_some()
            || self.prompt.is_some()
            || self.batch.is_some()
    }
}

impl Workload {
    /// The shape of every generation a run of this workload makes.
    pub fn request_shape(&self) -> RequestShape {
        RequestShape {
            width: self.width,
            height: self.height,
            batch: self.batch,
            guided: (self.preset.family().descriptor().guided)(self.guidance),
            image_to_image: false,
            reference_pixels: 0,
        }
    }

    /// The workload a run that names none makes (`STANDARD_NAME`).
    pub fn standard() -> Workload {
        Workload::from_spec(STANDARD_WORKLOAD)
    }

    /// A standard workload as its family declares it: one image per prompt and seed, an empty
    /// negative prompt.
    fn from_spec(spec: &WorkloadSpec) -> Workload {
        Workload {
            name: spec.name.into(),
            version: spec.version,
            standard: true,
            preset: spec.preset,
            width: spec.width,
            height: spec.height,
            steps: spec.steps,
            scheduler: spec.scheduler,
            guidance: spec.guidance,
            negative_prompt: String::new(),
            prompts: spec
                .prompts
                .pairs()
                .into_iter()
                .map(|(prompt, seed)| PromptSeed {
                    prompt: prompt.into(),
                    seed,
                })
                .collect(),
            batch: 1,
        }
    }

    /// How a front end lists this workload (the app's Benchmark screen).
    pub fn card(&self) -> WorkloadCard {
        let (short, long) = (self.preset.short_label(), self.preset.long_label());
        let note = standard_workloads()
            .find(|spec| spec.name == self.name)
            .map_or("", |spec| spec.note);
        let (w, h, steps, images) = (self.width, self.height, self.steps, self.prompts.len());
        WorkloadCard {
            name: self.name.clone(),
            label: format!("{short} · {w}×{h} · {steps} steps"),
            run: format!("{images} images, {w}x{h}, {steps} steps"),
            description: format!(
                "{long}, {w}×{h}, {steps} steps of {}, guidance {}{note}, {images} fixed prompts and seeds, after an untimed warm-up image. Its scores compare only with runs of this workload.",
                self.scheduler.name(),
                self.guidance
            ),
        }
    }

    /// The standard workload called `name` (one of `workload_names()`).
    pub fn named(name: &str) -> Result<Workload> {
        match standard_workloads().find(|spec| spec.name == name) {
            Some(spec) => Ok(Workload::from_spec(spec)),
            None => Err(BenchError::Workload(format!(
                "there is no workload {name:?}; choose {}",
                workload_names().join(", ")
            ))),
        }
    }

    /// The standard workload defined on a model of `family` (SD2 has none).
    pub fn names_for(family: Family) -> Option<&'static str> {
        standard_workloads()
            .find(|spec| spec.preset.family() == family)
            .map(|spec| spec.name)
    }

    /// The standard workload for a benchmark that names `model` and no workload, and why it
    /// is that one (for a note): the one made for the model's architecture, read from its configs
    /// (a Hub model's from the cache, or by the preset whose repository it is); the default one
    /// for a Hub model that is not here yet, whose configs are checked against it as they
    /// download. An error names the model's architecture when its family has no standard
    /// workload. `label`: the model as the person named it.
    pub fn standard_for_model(
        model: &ModelName,
        label: &str,
        hub: &HubSettings,
        revision: &str,
    ) -> Result<(Workload, String)> {
        let made_for = |family| -> Result<(Workload, String)> {
            let workload = Workload::for_architecture(family, label)?;
            Ok((
                workload,
                format!("the standard workload for {label}'s architecture ({family})"),
            ))
        };
        let source = match model {
            ModelName::Local(source) => source.clone(),
            ModelName::Hub { id, .. } => {
                if let Some(preset) = Preset::all().find(|p| p.repository() == id.as_str()) {
                    return made_for(preset.family());
                }
                match sdbench_hub::cache::cached_snapshot(
                    hub,
                    id,
                    revision,
                    sdbench_session::hub_components::engine_components,
                ) {
                    Some(snapshot) => ModelSource::Folder(snapshot.path),
                    None => {
                        return Ok((
                            Workload::standard(),
                            format!(
                                "the default: {label} is not in the model cache, so its \
                                 architecture is not known before its configs download (name \
                                 one with --workload)"
                            ),
                        ))
                    }
                }
            }
        };
        let (size, _) = sdbench_diffusion::Pipeline::model_size(&source, Precision::F32)?;
        made_for(size.family)
    }

    /// The standard workload made for `family`, else the first made for another architecture of
    /// its model family (an SD2.x model runs SD1.5's); `model`: what the model is called in the
    /// error when its family has none.
    pub fn for_architecture(family: Family, model: &str) -> Result<Workload> {
        let own = std::iter::once(family).chain(family.descriptor().architectures.iter().copied());
        match own.filter_map(Workload::names_for).next() {
            Some(name) => Workload::named(name),
            None => Err(BenchError::Workload(format!(
                "{model} is a {family} model ({}), for which no standard workload is made: name \
                 one with --workload ({}) and change it with --steps, --width, --height (a custom run)",
                family.descriptor().name,
                workload_names().join(", ")
            ))),
        }
    }

    /// This workload with `overrides` applied (any override makes it custom; the preset stays).
    /// `--images N` cycles through the prompts; a repeated prompt gets its seed plus the round
    /// number, so every image differs.
    pub fn with_overrides(self, overrides: &Overrides) -> Result<Workload> {
        let mut w = self;
        if !overrides.any() {
            return Ok(w);
        }
        w.name = "custom".into();
        w.standard = false;
        if let Some(steps) = overrides.steps {
            if let Some(problem) = limits::steps_error(steps) {
                return Err(BenchError::Workload(problem));
            }
            w.steps = steps;
        }
        for (name, value, slot) in [
            ("width", overrides.width, &mut w.width),
            ("height", overrides.height, &mut w.height),
        ] {
            if let Some(v) = value {
                if let Some(problem) = limits::side_error(name, v) {
                    return Err(BenchError::Workload(problem));
                }
                *slot = v;
            }
        }
        if let Some(kind) = overrides.scheduler {
            w.scheduler = kind;
        }
        if let Some(batch) = overrides.batch {
            if let Some(problem) = limits::batch_error(batch) {
                return Err(BenchError::Workload(problem));
            }
            w.batch = batch;
        }
        let count = overrides.images.unwrap_or(w.prompts.len());
        if count == 0 || count > MAX_IMAGES {
            return Err(BenchError::Workload(format!(
                "images must be from 1 to {MAX_IMAGES} (got {count})"
            )));
        }
        let base = w.prompts.clone();
        w.prompts = (0..count)
            .map(|i| {
                let standard = &base[i % base.len()];
                PromptSeed {
                    prompt: overrides
                        .prompt
                        .clone()
                        .unwrap_or_else(|| standard.prompt.clone()),
                    seed: standard.seed + (i / base.len()) as u64,
                }
            })
            .collect();
        if w.prompts.iter().any(|p| p.prompt.trim().is_empty()) {
            return Err(BenchError::Workload("the prompt is empty".into()));
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_workload_is_the_published_one() {
        let w = Workload::standard()
            .with_overrides(&Overrides::default())
            .unwrap();
        assert_eq!(w, Workload::standard());
        assert_eq!(Workload::named("sd15-512-30").unwrap(), w);
        assert_eq!(w.preset, Preset::SD15);
        assert!(w.standard);
        assert_eq!(
            (w.name.as_str(), w.width, w.height, w.steps),
            ("sd15-512-30", 512, 512, 30)
        );
        assert_eq!(w.scheduler, SchedulerKind::Euler);
        let seeds: Vec<u64> = w.prompts.iter().map(|p| p.seed).collect();
        assert_eq!(seeds, [42, 1234, 2718, 31415, 8080]);
    }

    #[test]
    fn each_family_with_a_standard_workload_names_it() {
        assert_eq!(Workload::names_for(Family::SD1), Some(STANDARD_NAME));
        assert_eq!(Workload::names_for(Family::SDXL), Some("sdxl-1024-20"));
        assert_eq!(
            Workload::names_for(Family::FLUX2_KLEIN),
            Some("flux2-klein-1024-4")
        );
        assert_eq!(Workload::names_for(Family::SD2), None);
    }

    #[test]
    fn a_model_without_a_workload_of_its_own_runs_its_familys() {
        let named = |f| Workload::for_architecture(f, "m").unwrap().name;
        assert_eq!(named(Family::SD1), STANDARD_NAME);
        assert_eq!(named(Family::SDXL), "sdxl-1024-20");
        assert_eq!(named(Family::FLUX2_KLEIN), "flux2-klein-1024-4");
        assert_eq!(named(Family::ZIMAGE), "zimage-turbo-1024-9");
        assert_eq!(named(Family::SD35_MEDIUM), "sd35-medium-1024-40");
        assert_eq!(named(Family::FLUX1_SCHNELL), "flux1-schnell-1024-4");
        // FLUX.1 [dev] has none: its family's first (schnell's).
        assert_eq!(named(Family::FLUX1_DEV), "flux1-schnell-1024-4");
        // SD2.x has none: its family's first (SD1.5's).
        assert_eq!(named(Family::SD2), STANDARD_NAME);
    }

    #[test]
    fn any_override_makes_it_custom() {
        let same_steps = Overrides {
            steps: Some(30),
            ..Overrides::default()
        };
        let w = Workload::standard().with_overrides(&same_steps).unwrap();
        assert!(!w.standard);
        assert_eq!(w.name, "custom");

        let seven = Overrides {
            images: Some(7),
            prompt: Some("a red cube".into()),
            ..Overrides::default()
        };
        let w = Workload::named("sdxl-1024-20")
            .unwrap()
            .with_overrides(&seven)
            .unwrap();
        assert_eq!((w.preset, w.width, w.steps), (Preset::SDXL_BASE, 1024, 20));
        let seeds: Vec<u64> = w.prompts.iter().map(|p| p.seed).collect();
        assert_eq!(seeds, [42, 1234, 2718, 31415, 8080, 43, 1235]);
        assert!(w.prompts.iter().all(|p| p.prompt == "a red cube"));
    }

    #[test]
    fn cards_describe_each_standard_workload_from_its_settings() {
        let cards = cards();
        assert_eq!(
            cards.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            [
                "sd15-512-30",
                "sdxl-1024-20",
                "flux2-klein-1024-4",
                "zimage-turbo-1024-9",
                "sd35-medium-1024-40",
                "flux1-schnell-1024-4"
            ]
        );
        assert_eq!(workload_names()[0], STANDARD_NAME);
        assert_eq!(cards[0].label, "SD1.5 · 512×512 · 30 steps");
        assert_eq!(cards[0].run, "5 images, 512x512, 30 steps");
        assert!(cards[0]
            .description
            .contains("512×512, 30 steps of euler, guidance 7.5,"));
        assert_eq!(cards[1].label, "SDXL · 1024×1024 · 20 steps");
        assert!(cards[1]
            .description
            .contains("guidance 8 (MLPerf's settings)"));
        assert_eq!(cards[2].label, "FLUX.2 klein · 1024×1024 · 4 steps");
        assert_eq!(cards[2].run, "16 images, 1024x1024, 4 steps");
        assert!(cards[2].description.contains("4 steps of flow_euler"));
    }

    #[test]
    fn the_flux2_klein_workload_is_mlperf_clients() {
        let w = Workload::named("flux2-klein-1024-4").unwrap();
        assert!(w.standard);
        assert_eq!((w.version, w.preset), (1, Preset::FLUX2_KLEIN_4B));
        assert_eq!((w.width, w.height, w.steps, w.batch), (1024, 1024, 4, 1));
        assert_eq!(w.scheduler, SchedulerKind::FlowMatchEuler);
        // Four prompts, each with seeds 42-45: sixteen timed images.
        assert_eq!(w.prompts.len(), 16);
        let seeds: Vec<u64> = w.prompts.iter().map(|p| p.seed).collect();
        assert_eq!(&seeds[..4], [42, 43, 44, 45]);
        assert_eq!(&seeds[12..], [42, 43, 44, 45]);
        assert!(w.prompts[0]
            .prompt
            .starts_with("A photorealistic close-up of a fluffy ginger"));
        assert!(w.prompts[15].prompt.contains("\"GOOD MORNING\""));
        let custom = w
            .with_overrides(&Overrides {
                images: Some(2),
                ..Overrides::default()
            })
            .unwrap();
        assert!(!custom.standard && custom.name == "custom");
    }

    #[test]
    fn the_zimage_turbo_workload_is_its_model_cards_on_mlperf_clients_prompts() {
        let w = Workload::named("zimage-turbo-1024-9").unwrap();
        let klein = Workload::named("flux2-klein-1024-4").unwrap();
        assert!(w.standard);
        assert_eq!((w.version, w.preset), (1, Preset::ZIMAGE_TURBO));
        assert_eq!((w.width, w.height, w.steps, w.batch), (1024, 1024, 9, 1));
        assert_eq!(
            (w.scheduler, w.guidance),
            (SchedulerKind::FlowMatchEuler, 0.0)
        );
        assert!(!w.request_shape().guided);
        assert_eq!(w.prompts, klein.prompts);
        let card = w.card();
        assert_eq!(card.label, "Z-Image-Turbo · 1024×1024 · 9 steps");
        assert!(
            card.description.contains("guidance 0"),
            "{}",
            card.description
        );
    }

    #[test]
    fn the_flux1_schnell_workload_is_unguided_on_mlperf_clients_prompts() {
        let w = Workload::named("flux1-schnell-1024-4").unwrap();
        let klein = Workload::named("flux2-klein-1024-4").unwrap();
        assert!(w.standard);
        assert_eq!((w.version, w.preset), (1, Preset::FLUX1_SCHNELL));
        assert_eq!((w.width, w.height, w.steps, w.batch), (1024, 1024, 4, 1));
        assert_eq!(
            (w.scheduler, w.guidance),
            (SchedulerKind::FlowMatchEuler, 0.0)
        );
        assert!(!w.request_shape().guided);
        assert_eq!(w.prompts, klein.prompts);
        let card = w.card();
        assert_eq!(card.label, "FLUX.1 schnell · 1024×1024 · 4 steps");
        assert!(
            card.description.contains("guidance 0"),
            "{}",
            card.description
        );
    }

    #[test]
    fn the_sd35_medium_workload_is_its_model_cards_on_mlperf_clients_prompts() {
        let w = Workload::named("sd35-medium-1024-40").unwrap();
        let klein = Workload::named("flux2-klein-1024-4").unwrap();
        assert!(w.standard);
        assert_eq!((w.version, w.preset), (1, Preset::SD35_MEDIUM));
        assert_eq!((w.width, w.height, w.steps, w.batch), (1024, 1024, 40, 1));
        assert_eq!(
            (w.scheduler, w.guidance),
            (SchedulerKind::FlowMatchEuler, 4.5)
        );
        assert!(w.request_shape().guided);
        assert_eq!(w.prompts, klein.prompts);
        let card = w.card();
        assert_eq!(card.label, "SD3.5 Medium · 1024×1024 · 40 steps");
        assert!(
            card.description.contains("guidance 4.5"),
            "{}",
            card.description
        );
    }

    #[test]
    fn bad_overrides_are_refused_by_name() {
        for (o, flag) in [
            (
                Overrides {
                    batch: Some(0),
                    ..Default::default()
                },
                "batch must be from 1 to 64 images (got 0)",
            ),
            (
                Overrides {
                    width: Some(500),
                    ..Default::default()
                },
                "width must be a multiple of 8 from 8 to 2048 pixels (got 500)",
            ),
            (
                Overrides {
                    height: Some(0),
                    ..Default::default()
                },
                "height must be a multiple of 8 from 8 to 2048 pixels (got 0)",
            ),
            (
                Overrides {
                    steps: Some(0),
                    ..Default::default()
                },
                "steps must be from 1 to 1000 (got 0)",
            ),
            (
                Overrides {
                    images: Some(0),
                    ..Default::default()
                },
                "images must be from 1 to 1000 (got 0)",
            ),
            (
                Overrides {
                    prompt: Some(" ".into()),
                    ..Default::default()
                },
                "the prompt is empty",
            ),
        ] {
            let err = Workload::standard()
                .with_overrides(&o)
                .unwrap_err()
                .to_string();
            assert!(err.contains(flag), "{err}");
        }
    }

    #[test]
    fn the_sdxl_workload_is_mlperfs_settings_on_the_standard_prompts() {
        let w = Workload::named("sdxl-1024-20").unwrap();
        assert!(w.standard);
        assert_eq!(
            (w.name.as_str(), w.version, w.preset),
            ("sdxl-1024-20", 1, Preset::SDXL_BASE)
        );
        assert_eq!(
            (w.width, w.height, w.steps, w.guidance),
            (1024, 1024, 20, 8.0)
        );
        assert_eq!(w.scheduler, SchedulerKind::Euler);
        assert_eq!(w.prompts, Workload::standard().prompts);
        assert_eq!(w.batch, 1);
        let err = Workload::named("sd3").unwrap_err().to_string();
        assert!(
            err.contains("\"sd3\"")
                && err.contains("sdxl-1024-20")
                && err.contains("flux2-klein-1024-4"),
            "{err}"
        );
    }
}
