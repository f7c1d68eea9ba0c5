//! Parity with diffusers on the reference fixtures `scripts/make_fixtures.py` writes: a tiny
//! random-weight model folder `NAME/` beside `NAME.reference.json` and `NAME.reference.safetensors`.
//! Each fixture's full generations (every scheduler, with and without a negative prompt) run from
//! the reference's own initial latents and are compared with diffusers' images. The engine's
//! tests and `sdbench parity` (which `scripts/gpu-check` runs on every backend) share this.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{DiffusionError, Result};
use crate::io::safetensors::SafeTensors;
use crate::io::weights::Precision;
use crate::pipeline::{GenerateRequest, InitialNoise, Pipeline};
use crate::scheduler::SchedulerKind;
use crate::CancelToken;

/// The tiny pipelines: SD1.x-like, a variant of every option, SD2.x-like (v-prediction) and
/// SDXL-like.
pub const FIXTURES: [&str; 4] = ["tiny-sd", "tiny-variant", "tiny-sd2", "tiny-sdxl"];

/// Largest absolute difference allowed on a generated image's [0, 1] values: in f32 1/20 of an
/// 8-bit level (the CPU is at about 3e-6; the bound leaves room for other summation orders and
/// still fails on any wiring or formula error); in f16, whose activations carry about three
/// significant digits, 3e-2 after four guided steps.
pub const fn image_tolerance(precision: Precision) -> f32 {
    match precision {
        Precision::F32 => 2e-4,
        Precision::F16 => 3e-2,
    }
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

/// Runs fixture `name`'s reference generations (those `only` lists; all when `None`) on `pipe`.
pub fn generations(
    pipe: &Pipeline,
    dir: &Path,
    name: &str,
    only: Option<&[&str]>,
) -> Result<Vec<RunDiff>> {
    let mut r = Reference::open(dir, name)?;
    let g = r.field(&r.meta, "generate")?.clone();
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
        let out = pipe.generate(&request, &mut |_| {}, &CancelToken::new())?;
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
        diffs.push(RunDiff {
            key: key.to_string(),
            max_abs_diff: max_abs_diff(&image.float_image, &expected),
        });
    }
    Ok(diffs)
}
