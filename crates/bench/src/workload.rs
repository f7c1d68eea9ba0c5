//! The standard workloads and the overrides that turn a run into a custom one.

use serde::{Deserialize, Serialize};

use sdbench_diffusion::limits;
use sdbench_diffusion::{Family, ModelSource, Precision, Preset, RequestShape, SchedulerKind};
use sdbench_hub::HubSettings;
use sdbench_session::ModelName;

use crate::error::{BenchError, Result};

pub const STANDARD_NAME: &str = "sd15-512-30";
pub const STANDARD_VERSION: u32 = 1;
pub const SDXL_NAME: &str = "sdxl-1024-20";
pub const FLUX2_KLEIN_NAME: &str = "flux2-klein-1024-4";
pub const FLUX2_KLEIN_VERSION: u32 = 1;
pub const ZIMAGE_TURBO_NAME: &str = "zimage-turbo-1024-9";
pub const ZIMAGE_TURBO_VERSION: u32 = 1;
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

/// Every standard workload's card, the standard one first (`WORKLOAD_NAMES`' order).
pub fn cards() -> Vec<WorkloadCard> {
    WORKLOAD_NAMES
        .iter()
        .filter_map(|name| Workload::named(name).ok())
        .map(|w| w.card())
        .collect()
}
pub const SDXL_VERSION: u32 = 1;
/// Every standard workload, the default first.
pub const WORKLOAD_NAMES: [&str; 4] = [
    STANDARD_NAME,
    SDXL_NAME,
    FLUX2_KLEIN_NAME,
    ZIMAGE_TURBO_NAME,
];

/// The five prompts and seeds of both standard workloads (version 1).
pub const STANDARD_PROMPTS: [(&str, u64); 5] = [
    ("a photograph of an astronaut riding a horse on the moon, highly detailed", 42),
    ("a cozy wooden cabin in a snowy pine forest at dusk, warm light in the windows, oil painting", 1234),
    ("portrait of an old fisherman with a weathered face, dramatic studio lighting, 85mm photograph", 2718),
    ("a futuristic city skyline at night, neon signs, flying cars, digital art", 31415),
    ("a bowl of fresh fruit on a marble table, still life, soft window light", 8080),
];

/// MLPerf Client 2.0's FLUX.2 klein 4B prompts (mlcommons/mlperf_client,
/// `data/prompts/flux_2_klein_4b/flux_2_klein_prompts.json`), each made with every seed of
/// `FLUX2_KLEIN_SEEDS` (its four images per prompt).
pub const FLUX2_KLEIN_PROMPTS: [&str; 4] = [
    "A photorealistic close-up of a fluffy ginger tabby cat perched on a weathered wooden windowsill at golden-hour sunset, warm amber light streaming through the dusty glass and rim-lighting its soft fur, a blurred city skyline and slowly drifting dust motes in the background, shallow depth of field, shot on a 50mm lens, highly detailed with natural color grading.",
    "A sweeping cinematic aerial view of a sprawling futuristic megacity at night, towering glass skyscrapers glowing with bands of teal and magenta light along their facades, sleek flying vehicles streaking between the buildings and leaving long light trails, reflections shimmering on rain-slicked empty streets far below, volumetric fog and dramatic atmospheric lighting, ultra-detailed science-fiction concept art.",
    "A serene Japanese garden in early autumn at dawn, a vermilion wooden footbridge arching over a still koi pond that mirrors the pale sky, maple trees turning crimson and gold, a moss-covered stone lantern beside smooth river rocks, delicate morning mist hanging in the air, soft diffused light and a painterly composition with rich natural color, extremely detailed.",
    "Ultra-realistic commercial studio product photography of two minimalist ceramic coffee mugs on a polished concrete surface: a matte black mug centered in the foreground with hot coffee and visible steam rising, the words \"GOOD MORNING\" printed across its front in clean, crisp white capital letters facing the camera, and a matching matte yellow mug to its right; concrete gray studio backdrop, soft white highlights, three-point softbox lighting with diffused reflections and no harsh shadows, rule-of-thirds composition, high-angle medium shot, sharp focus on the mugs, steam, and lettering, shot on an 85mm lens at f/5.6, ISO 200.",
];
pub const FLUX2_KLEIN_SEEDS: [u64; 4] = [42, 43, 44, 45];

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
    /// The standard workload's architecture (what `synthetic` names).
    pub const STANDARD_PRESET: Preset = Preset::SD15;

    /// The shape of every generation a run of this workload makes.
    pub fn request_shape(&self) -> RequestShape {
        RequestShape {
            width: self.width,
            height: self.height,
            batch: self.batch,
            guided: self.guidance > 1.0,
            image_to_image: false,
            reference_pixels: 0,
        }
    }

    /// `sd15-512-30` v1: SD1.5, 512x512, 30 steps, euler, guidance 7.5, empty negative prompt.
    pub fn standard() -> Workload {
        Workload {
            name: STANDARD_NAME.into(),
            version: STANDARD_VERSION,
            standard: true,
            preset: Workload::STANDARD_PRESET,
            width: 512,
            height: 512,
            steps: 30,
            scheduler: SchedulerKind::Euler,
            guidance: 7.5,
            negative_prompt: String::new(),
            prompts: STANDARD_PROMPTS
                .iter()
                .map(|(p, s)| PromptSeed {
                    prompt: p.to_string(),
                    seed: *s,
                })
                .collect(),
            batch: 1,
        }
    }

    /// `sdxl-1024-20` v1: SDXL base 1.0, 1024x1024, 20 steps, euler, guidance 8 (MLPerf's
    /// text-to-image settings), the same five prompts and seeds, empty negative prompt. The VAE
    /// decodes in f32 unless the model's VAE is marked safe in f16 (`force_upcast: false`).
    pub fn sdxl() -> Workload {
        Workload {
            name: SDXL_NAME.into(),
            version: SDXL_VERSION,
            preset: Preset::SDXL_BASE,
            width: 1024,
            height: 1024,
            steps: 20,
            guidance: 8.0,
            ..Workload::standard()
        }
    }

    /// `flux2-klein-1024-4` v1: FLUX.2 [klein] 4B at MLPerf Client 2.0's settings: 1024x1024, 4
    /// steps of flow-matching Euler, its 4 prompts with seeds 42-45 each (16 timed images). The
    /// model is step-distilled: it runs without guidance (recorded as 1).
    pub fn flux2_klein() -> Workload {
        Workload {
            name: FLUX2_KLEIN_NAME.into(),
            version: FLUX2_KLEIN_VERSION,
            standard: true,
            preset: Preset::FLUX2_KLEIN_4B,
            width: 1024,
            height: 1024,
            steps: 4,
            scheduler: SchedulerKind::FlowMatchEuler,
            guidance: 1.0,
            negative_prompt: String::new(),
            prompts: FLUX2_KLEIN_PROMPTS
                .iter()
                .flat_map(|p| {
                    FLUX2_KLEIN_SEEDS.iter().map(|&seed| PromptSeed {
                        prompt: p.to_string(),
                        seed,
                    })
                })
                .collect(),
            batch: 1,
        }
    }

    /// `zimage-turbo-1024-9` v1: Z-Image-Turbo at its model card's settings, 1024x1024, 9 steps
    /// of flow-matching Euler, guidance 0 (the distilled model runs unguided), on MLPerf Client
    /// 2.0's FLUX.2 klein prompts and seeds (16 timed images), so the two compare image for image.
    pub fn zimage_turbo() -> Workload {
        Workload {
            name: ZIMAGE_TURBO_NAME.into(),
            version: ZIMAGE_TURBO_VERSION,
            preset: Preset::ZIMAGE_TURBO,
            steps: 9,
            guidance: 0.0,
            ..Workload::flux2_klein()
        }
    }

    /// How a front end lists this workload (the app's Benchmark screen).
    pub fn card(&self) -> WorkloadCard {
        let (short, long) = (self.preset.short_label(), self.preset.long_label());
        let note = match self.name.as_str() {
            SDXL_NAME => " (MLPerf's settings)",
            FLUX2_KLEIN_NAME => " (step-distilled: no guidance; MLPerf Client 2.0's settings)",
            ZIMAGE_TURBO_NAME => {
                " (distilled: no guidance; MLPerf Client 2.0's FLUX.2 klein prompts and seeds)"
            }
            _ => "",
        };
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

    /// The standard workload called `name` (one of `WORKLOAD_NAMES`).
    pub fn named(name: &str) -> Result<Workload> {
        match name {
            STANDARD_NAME => Ok(Workload::standard()),
            SDXL_NAME => Ok(Workload::sdxl()),
            FLUX2_KLEIN_NAME => Ok(Workload::flux2_klein()),
            ZIMAGE_TURBO_NAME => Ok(Workload::zimage_turbo()),
            other => Err(BenchError::Workload(format!(
                "there is no workload {other:?}; choose {}",
                WORKLOAD_NAMES.join(", ")
            ))),
        }
    }

    /// The standard workload defined on a model of `family` (SD2 has none).
    pub fn names_for(family: Family) -> Option<&'static str> {
        WORKLOAD_NAMES
            .into_iter()
            .find(|name| Workload::named(name).is_ok_and(|w| w.preset.family() == family))
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
                match sdbench_hub::cache::cached_snapshot(hub, id, revision) {
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
                WORKLOAD_NAMES.join(", ")
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
        assert_eq!(Workload::names_for(Family::SDXL), Some(SDXL_NAME));
        assert_eq!(
            Workload::names_for(Family::FLUX2_KLEIN),
            Some(FLUX2_KLEIN_NAME)
        );
        assert_eq!(Workload::names_for(Family::SD2), None);
    }

    #[test]
    fn a_model_without_a_workload_of_its_own_runs_its_familys() {
        let named = |f| Workload::for_architecture(f, "m").unwrap().name;
        assert_eq!(named(Family::SD1), STANDARD_NAME);
        assert_eq!(named(Family::SDXL), SDXL_NAME);
        assert_eq!(named(Family::FLUX2_KLEIN), FLUX2_KLEIN_NAME);
        assert_eq!(named(Family::ZIMAGE), ZIMAGE_TURBO_NAME);
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
        let w = Workload::sdxl().with_overrides(&seven).unwrap();
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
            WORKLOAD_NAMES
        );
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
        let w = Workload::named(ZIMAGE_TURBO_NAME).unwrap();
        let klein = Workload::flux2_klein();
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
