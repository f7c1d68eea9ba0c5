//! Parity with diffusers on the reference fixtures `scripts/make_fixtures.py` writes: a tiny
//! random-weight model folder `NAME/` beside `NAME.reference.json` and `NAME.reference.safetensors`.
//! Each fixture's full generations (every scheduler, with and without a negative prompt) run from
//! the reference's own initial latents and are compared with diffusers' images. The engine's
//! tests and `sdbench parity` (which `scripts/gpu-check` runs on every backend) share this.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::engine::Pipeline;
use crate::error::{DiffusionError, Result};
use crate::io::image::RgbImage;
use crate::io::safetensors::SafeTensors;
use crate::io::weights::Precision;
use crate::pipeline::CancelToken;
use crate::pipeline::{
    GenerateRequest, GuidanceOptions, InitialNoise, LoadOptions, SkipLayerGuidance,
};
use crate::scheduler::SchedulerKind;

/// Every family's tiny pipelines (`FamilyDescriptor::parity_fixtures`), in the registry's order;
/// a name ending in `REFERENCES_SUFFIX` holds generations with reference pictures.
pub fn fixtures() -> Vec<&'static str> {
    crate::engine::registry::FAMILIES
        .iter()
        .flat_map(|f| f.parity_fixtures.iter().copied())
        .collect()
}

/// A fixture named `MODEL-references` holds generations of fixture `MODEL`'s pipeline conditioned
/// on reference pictures (`pattern_picture`s of the sizes each run lists).
const REFERENCES_SUFFIX: &str = "-references";

/// The model folder fixture `name`'s generations run on, and how it is loaded: a references
/// fixture's pipeline with its VAE encoder.
pub fn fixture_model(name: &str) -> (&str, LoadOptions) {
    match name.strip_suffix(REFERENCES_SUFFIX) {
        Some(model) => (
            model,
            LoadOptions {
                vae_encoder: true,
                ..LoadOptions::default()
            },
        ),
        None => (name, LoadOptions::default()),
    }
}

/// The reference pictures of the fixtures: detail at every scale, the same bytes as
/// scripts/make_flux2_fixtures.py's `pattern_image` (`((x*37 + y*91 + c*53) ^ (x*y)) mod 256`).
pub fn pattern_picture(width: usize, height: usize) -> RgbImage {
    let mut pixels = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            for c in 0..3 {
                pixels.push((((x * 37 + y * 91 + c * 53) ^ (x * y)) % 256) as u8);
            }
        }
    }
    RgbImage {
        width,
        height,
        pixels,
    }
}

/// Largest absolute difference allowed on a generated image's [0, 1] values where a fixture has
/// no bound of its own: in f32 1/20 of an 8-bit level (what `sdbench parity` reports as its
/// default; each fixture's own, derived bound is `fixture_tolerance`'s); in f16, whose activations carry about three
/// significant digits, 3e-2 after four guided steps; in bf16, with 8 significant bits to f16's
/// eleven, eight times that (measured on the CPU: the fixtures' worst bf16 errors, 2e-2 to 7.3e-2,
/// are about eight times their f16 ones, 2.5e-3 to 9e-3, and under a third of the bound).
pub const fn image_tolerance(precision: Precision) -> f32 {
    match precision {
        Precision::F32 => 2e-4,
        Precision::F16 => 3e-2,
        Precision::Bf16 => 0.24,
    }
}

/// The tolerance for fixture `name`'s images in `precision`, derived from the computation:
/// - f32: the fixture's `f32_tolerance`, which scripts/measure_f32_rounding.py derives from how
///   far diffusers' own f32 images of it lie from the same computation in float64 (its
///   `f32_rounding`, 1.5e-6 to 1.8e-5 on the fixtures): the engine's f32 image and diffusers' each
///   lie within about that of the exact image, so they may differ by twice it, and the engine's
///   kernels (Winograd convolutions, blocked attention, other summation orders) may round up to
///   four times as far as diffusers' do: 8 times the worst image's. The measured bound holds
///   whatever the SIMD path, since it bounds rounding, not one machine's result.
/// - f16: the fixture's `f16_tolerance` where its script measured one (twice the most diffusers'
///   own f16 images differ from its f32 ones: FLUX.2's 28 text-encoder layers carry f16's error
///   further), at least `image_tolerance`.
/// - bf16: `image_tolerance`. diffusers' bf16 images are no measure of the engine's: those of
///   tiny-flux2-klein differ from its f32 ones by up to 0.5 (its norms and softmax run in bf16
///   too; the engine's stay in f32 and its bf16 images are within 4.1e-2).
pub fn fixture_tolerance(dir: &Path, name: &str, precision: Precision) -> Result<f32> {
    let reference = Reference::open(dir, name)?;
    let own = |key: &str| reference.meta[key].as_f64().map(|t| t as f32);
    Ok(match precision {
        Precision::F32 => own("f32_tolerance").ok_or_else(|| DiffusionError::Config {
            path: reference.path.with_extension("json"),
            problem: "has no f32_tolerance: measure it with scripts/measure_f32_rounding.py".into(),
        })?,
        Precision::F16 => own("f16_tolerance")
            .unwrap_or(0.0)
            .max(image_tolerance(precision)),
        Precision::Bf16 => image_tolerance(precision),
    })
}

/// The f32 tolerance for component `key` of fixture `name` (one text-encoder, denoiser or VAE
/// call on the fixture's stored inputs), derived as `fixture_tolerance` derives the images' bound:
/// scripts/measure_f32_rounding.py --components reruns the call in float64 and records how far
/// diffusers' f32 output lies from it (`component_rounding`: 6e-7 to 7e-5 on the fixtures, the
/// larger ones on outputs of magnitude 9 to 67); the bound is 8 times that
/// (`component_tolerance`), for the same reasons.
pub fn component_tolerance(dir: &Path, name: &str, key: &str) -> Result<f32> {
    let reference = Reference::open(dir, name)?;
    reference.meta["component_tolerance"][key]
        .as_f64()
        .map(|t| t as f32)
        .ok_or_else(|| DiffusionError::Config {
            path: reference.path.with_extension("json"),
            problem: format!(
                "has no component_tolerance for {key}: measure it with \
                 scripts/measure_f32_rounding.py --components"
            ),
        })
}

/// A fixture's reference file and its description.
pub struct Reference {
    path: PathBuf,
    file: SafeTensors,
    pub meta: Value,
}

impl Reference {
    /// `NAME.reference.safetensors` and `.json` in `dir`.
    pub fn open(dir: &Path, name: &str) -> Result<Self> {
        let path = dir.join(format!("{name}.reference.safetensors"));
        let file = SafeTensors::open(&path)?;
        let json = dir.join(format!("{name}.reference.json"));
        let text = std::fs::read_to_string(&json).map_err(|source| DiffusionError::Io {
            path: json.clone(),
            source,
        })?;
        let meta = serde_json::from_str(&text).map_err(|e| DiffusionError::Config {
            path: json,
            problem: e.to_string(),
        })?;
        Ok(Reference { path, file, meta })
    }

    pub fn has(&self, key: &str) -> bool {
        self.file.info(key).is_some()
    }

    pub fn shape(&self, key: &str) -> Result<Vec<usize>> {
        self.file
            .info(key)
            .map(|info| info.shape.clone())
            .ok_or_else(|| self.missing(key))
    }

    pub fn get(&mut self, key: &str) -> Result<Vec<f32>> {
        if !self.has(key) {
            return Err(self.missing(key));
        }
        self.file.read_f32(key)
    }

    fn missing(&self, key: &str) -> DiffusionError {
        DiffusionError::Weights {
            path: self.path.clone(),
            problem: format!("has no reference tensor `{key}`"),
        }
    }

    fn field<'a>(&self, value: &'a Value, what: &str) -> Result<&'a Value> {
        value.get(what).ok_or_else(|| DiffusionError::Config {
            path: self.path.with_extension("json"),
            problem: format!("no `{what}`"),
        })
    }
}

/// One reference generation compared.
#[derive(Debug, Clone)]
pub struct RunDiff {
    /// The reference's key, e.g. `generate.euler.neg`.
    pub key: String,
    /// Largest |ours - diffusers'| over the image's values (infinite if ours has a NaN or inf).
    pub max_abs_diff: f32,
}

/// Largest absolute difference; infinite where `actual` is not finite.
pub fn max_abs_diff(actual: &[f32], expected: &[f32]) -> f32 {
    actual
        .iter()
        .zip(expected)
        .map(|(a, e)| {
            if a.is_finite() {
                (a - e).abs()
            } else {
                f32::INFINITY
            }
        })
        .fold(0f32, f32::max)
}

/// The reference generations listed under `section` of fixture `name`'s description (each naming
/// its prompt, size, steps, guidance and seed), run on `pipe`.
pub fn listed_generations(
    pipe: &Pipeline,
    dir: &Path,
    name: &str,
    section: &str,
) -> Result<Vec<RunDiff>> {
    let mut r = Reference::open(dir, name)?;
    let runs = r
        .field(&r.meta, section)?
        .as_array()
        .cloned()
        .unwrap_or_default();
    seeded_generations(pipe, &mut r, name, &runs, None)
}

/// Reference generations that each name their prompt, size, steps, guidance and seed (the
/// engine's documented noise), and any reference pictures' sizes, as
/// scripts/make_flux2_fixtures.py writes them.
fn seeded_generations(
    pipe: &Pipeline,
    r: &mut Reference,
    name: &str,
    runs: &[Value],
    only: Option<&[&str]>,
) -> Result<Vec<RunDiff>> {
    let mut diffs = Vec::new();
    for run in runs {
        let key = run["key"].as_str().unwrap_or_default();
        if only.is_some_and(|keys| !keys.contains(&key)) {
            continue;
        }
        let number = |what: &str| -> Result<f64> {
            run[what].as_f64().ok_or_else(|| {
                DiffusionError::Request(format!("{name} {key}: `{what}` is not a number"))
            })
        };
        let mut reference_images = Vec::new();
        for size in run["pictures"].as_array().into_iter().flatten() {
            let side = |i: usize| size[i].as_u64().map(|s| s as usize);
            let (Some(w), Some(h)) = (side(0), side(1)) else {
                return Err(DiffusionError::Request(format!(
                    "{name} {key}: a picture's size is not [width, height]: {size}"
                )));
            };
            reference_images.push(pattern_picture(w, h));
        }
        // Z-Image's and SD3's guidance options, where a run records them
        // (`cfg_normalization` as a factor, or true for 1).
        let guidance_options = GuidanceOptions {
            truncation: run["cfg_truncation"].as_f64().filter(|t| *t < 1.0),
            normalization: match &run["cfg_normalization"] {
                Value::Bool(true) => Some(1.0),
                value => value.as_f64().filter(|f| *f > 0.0),
            },
            skip_layers: skip_layer_guidance(&run["skip_layer_guidance"], name, key)?,
            true_cfg: run["true_cfg_scale"].as_f64(),
        };
        let request = GenerateRequest {
            guidance_options,
            steps: number("steps")? as usize,
            guidance_scale: number("guidance")?,
            scheduler: None,
            width: number("width")? as usize,
            height: number("height")? as usize,
            noise: InitialNoise::Seed(number("seed")? as u64),
            reference_images,
            negative_prompt: run["negative_prompt"].as_str().unwrap_or_default().into(),
            ..GenerateRequest::new(run["prompt"].as_str().unwrap_or_default())
        };
        diffs.push(compare(pipe, r, name, key, &request)?);
    }
    Ok(diffs)
}

/// A run's skip-layer guidance as scripts/make_sd3_fixtures.py records it (`layers`, `scale`,
/// `start`, `stop`), if any.
fn skip_layer_guidance(run: &Value, name: &str, key: &str) -> Result<Option<SkipLayerGuidance>> {
    if run.is_null() {
        return Ok(None);
    }
    let bad = || {
        DiffusionError::Request(format!(
            "{name} {key}: `skip_layer_guidance` is not {{layers, scale, start, stop}}"
        ))
    };
    let layers: Vec<usize> = run["layers"]
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|l| l.as_u64().map(|l| l as usize).ok_or_else(bad))
        .collect::<Result<_>>()?;
    let number = |what: &str| run[what].as_f64().ok_or_else(bad);
    Ok(Some(SkipLayerGuidance {
        scale: number("scale")?,
        start: number("start")?,
        stop: number("stop")?,
        ..SkipLayerGuidance::new(&layers).ok_or_else(bad)?
    }))
}

/// One reference generation `key` of `request` against its reference image.
fn compare(
    pipe: &Pipeline,
    r: &mut Reference,
    name: &str,
    key: &str,
    request: &GenerateRequest,
) -> Result<RunDiff> {
    let out = pipe.generate(request, &mut |_| {}, &CancelToken::new())?;
    let expected = r.get(key)?;
    let image = out.images.first().ok_or_else(|| {
        DiffusionError::Request(format!("{name} {key}: the generation returned no image"))
    })?;
    if image.float_image.len() != expected.len() {
        return Err(DiffusionError::Request(format!(
            "{name} {key}: {} values against the reference's {}",
            image.float_image.len(),
            expected.len()
        )));
    }
    Ok(RunDiff {
        key: key.to_string(),
        max_abs_diff: max_abs_diff(&image.float_image, &expected),
    })
}

/// Runs fixture `name`'s reference generations (those `only` lists; all when `None`) on `pipe`.
pub fn generations(
    pipe: &Pipeline,
    dir: &Path,
    name: &str,
    only: Option<&[&str]>,
) -> Result<Vec<RunDiff>> {
    let mut r = Reference::open(dir, name)?;
    let g = r.field(&r.meta, "generate")?.clone();
    if let Value::Array(runs) = &g {
        return seeded_generations(pipe, &mut r, name, runs, only);
    }
    let latents = r.get("generate.latents")?;
    let shape = r.shape("generate.latents")?;
    let number = |what: &str| -> Result<f64> {
        r.field(&g, what)?.as_f64().ok_or_else(|| {
            DiffusionError::Request(format!("{name}: `generate.{what}` is not a number"))
        })
    };
    let (steps, guidance) = (number("steps")? as usize, number("guidance")?);
    let (width, height) = (number("width")? as usize, number("height")? as usize);
    let prompt = r
        .field(&g, "prompt")?
        .as_str()
        .unwrap_or_default()
        .to_string();
    let runs = r.field(&g, "runs")?.as_array().cloned().unwrap_or_default();
    let mut diffs = Vec::new();
    for run in &runs {
        let key = run["key"].as_str().unwrap_or_default();
        if only.is_some_and(|keys| !keys.contains(&key)) {
            continue;
        }
        let scheduler = SchedulerKind::from_name(run["scheduler"].as_str().unwrap_or_default())?;
        let request = GenerateRequest {
            negative_prompt: run["negative"].as_str().unwrap_or("").into(),
            steps,
            guidance_scale: guidance,
            scheduler: Some(scheduler),
            width,
            height,
            noise: InitialNoise::Latents {
                shape: shape.clone(),
                data: latents.clone(),
                step_seed: 0,
            },
            ..GenerateRequest::new(&prompt)
        };
        diffs.push(compare(pipe, &mut r, name, key, &request)?);
    }
    Ok(diffs)
}
