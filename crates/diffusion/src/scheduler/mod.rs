//! Noise schedulers with diffusers' semantics, built from `scheduler/scheduler_config.json` the way
//! diffusers' `from_config` does: keys the file has are used, every other key takes the target
//! scheduler's own default (e.g. `timestep_spacing` is "leading" for PNDM/DDIM but "linspace" for
//! Euler and DPM-Solver). The schedule (betas, timesteps, sigmas) is computed on the CPU; each step
//! combines f32 tensors with scalars computed in f64.

mod ddim;
mod dpm_solver;
mod euler;
pub mod flow_match;
mod pndm;

use std::fmt;
use std::path::Path;

use burn::prelude::*;
use serde_json::{Map, Value};

use crate::error::{DiffusionError, Result};

/// The schedulers a person can pick by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerKind {
    Pndm,
    Ddim,
    Euler,
    EulerAncestral,
    DpmSolverPP2M {
        karras: bool,
    },
    /// Flow-matching Euler (`FlowMatchEulerDiscreteScheduler`): the rectified-flow models' own
    /// (FLUX.2), not a choice for Stable Diffusion's.
    FlowMatchEuler,
}

impl SchedulerKind {
    pub const ALL: [SchedulerKind; 7] = [
        SchedulerKind::Pndm,
        SchedulerKind::Ddim,
        SchedulerKind::Euler,
        SchedulerKind::EulerAncestral,
        SchedulerKind::DpmSolverPP2M { karras: false },
        SchedulerKind::DpmSolverPP2M { karras: true },
        SchedulerKind::FlowMatchEuler,
    ];

    /// Every scheduler's `--scheduler` name (each family takes some: its descriptor's
    /// `schedulers`).
    pub const NAMES: &'static [&'static str] = &[
        "pndm",
        "ddim",
        "euler",
        "euler_a",
        "dpmpp_2m",
        "dpmpp_2m_karras",
        "flow_euler",
    ];

    pub fn from_name(name: &str) -> Result<Self> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "pndm" => SchedulerKind::Pndm,
            "ddim" => SchedulerKind::Ddim,
            "euler" => SchedulerKind::Euler,
            "euler_a" | "euler_ancestral" => SchedulerKind::EulerAncestral,
            "dpmpp_2m" => SchedulerKind::DpmSolverPP2M { karras: false },
            "dpmpp_2m_karras" => SchedulerKind::DpmSolverPP2M { karras: true },
            "flow_euler" => SchedulerKind::FlowMatchEuler,
            _ => {
                return Err(DiffusionError::Request(format!(
                    "unknown scheduler `{name}`; choose one of: {}",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    /// The kind a folder's `scheduler_config.json` names in `_class_name`.
    /// Its `num_train_timesteps` is checked here, as the config loads: each schedule `build` makes
    /// holds a value per training step, bounded like every count from a config.
    pub fn from_class_name(class: &str, config: &Map<String, Value>, path: &Path) -> Result<Self> {
        let train = SchedulerConfig { map: config, path }.usize("num_train_timesteps", 1000)?;
        crate::models::config::check_counts(path, &[("num_train_timesteps", train)])?;
        Ok(match class {
            "PNDMScheduler" => SchedulerKind::Pndm,
            "DDIMScheduler" => SchedulerKind::Ddim,
            "EulerDiscreteScheduler" => SchedulerKind::Euler,
            "EulerAncestralDiscreteScheduler" => SchedulerKind::EulerAncestral,
            "DPMSolverMultistepScheduler" => SchedulerKind::DpmSolverPP2M {
                karras: config
                    .get("use_karras_sigmas")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            other => {
                return Err(DiffusionError::unsupported(
                    path,
                    format!(
                        "scheduler class `{other}`; choose one with --scheduler ({})",
                        Self::NAMES.join(", ")
                    ),
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Pndm => "pndm",
            SchedulerKind::Ddim => "ddim",
            SchedulerKind::Euler => "euler",
            SchedulerKind::EulerAncestral => "euler_a",
            SchedulerKind::DpmSolverPP2M { karras: false } => "dpmpp_2m",
            SchedulerKind::DpmSolverPP2M { karras: true } => "dpmpp_2m_karras",
            SchedulerKind::FlowMatchEuler => "flow_euler",
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the denoiser predicts (diffusers' `prediction_type`): the noise (SD1.x, SD2.x-base, SDXL) or
/// the velocity `v = alpha * eps - sigma * x0` (SD2.x at 768 px, Salimans & Ho 2022).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PredictionType {
    Epsilon,
    VPrediction,
}

impl PredictionType {
    pub fn name(self) -> &'static str {
        match self {
            PredictionType::Epsilon => "epsilon",
            PredictionType::VPrediction => "v_prediction",
        }
    }

    /// The noise a model output stands for, at a sample `x = alpha * x0 + sigma * eps` (the
    /// DDPM scaling: alpha = sqrt(alphas_cumprod), sigma = sqrt(1 - alphas_cumprod)).
    pub fn epsilon<B: Backend>(
        self,
        output: Tensor<B, 4>,
        sample: Tensor<B, 4>,
        alpha: f64,
        sigma: f64,
    ) -> Tensor<B, 4> {
        match self {
            PredictionType::Epsilon => output,
            PredictionType::VPrediction => output * alpha + sample * sigma,
        }
    }

    /// The clean sample `x0` a model output stands for, at `x = alpha * x0 + sigma * eps`.
    pub fn original<B: Backend>(
        self,
        output: Tensor<B, 4>,
        sample: Tensor<B, 4>,
        alpha: f64,
        sigma: f64,
    ) -> Tensor<B, 4> {
        match self {
            PredictionType::Epsilon => (sample - output * sigma) / alpha,
            PredictionType::VPrediction => sample * alpha - output * sigma,
        }
    }
}

/// A source of standard-normal tensors for ancestral samplers.
pub type NoiseFn<'a, B> = dyn FnMut([usize; 4]) -> Tensor<B, 4> + 'a;

/// One denoising run's scheduler state.
pub trait Scheduler<B: Backend>: Send {
    /// The timesteps passed to the UNet, one per model call.
    fn timesteps(&self) -> &[f32];
    /// Sigmas, where the scheduler has them (Euler, DPM-Solver); empty otherwise.
    fn sigmas(&self) -> &[f32] {
        &[]
    }
    /// Initial latents are standard noise times this (1 for the DDPM-family schedulers).
    fn init_noise_sigma(&self) -> f64 {
        1.0
    }
    /// Scales the latents before the UNet call of step `index`.
    fn scale_model_input(&self, sample: Tensor<B, 4>, _index: usize) -> Tensor<B, 4> {
        sample
    }
    /// What the model's output is read as (the config's `prediction_type`).
    fn prediction_type(&self) -> PredictionType;
    /// `original` noised to the level of step `index` (the start of an img2img run), as diffusers'
    /// `add_noise` does at `timesteps[index]`.
    fn add_noise(&self, original: Tensor<B, 4>, noise: Tensor<B, 4>, index: usize) -> Tensor<B, 4>;
    /// Advances `sample` (f32) by one step given the UNet's (guided) output at step `index`.
    fn step(
        &mut self,
        model_output: Tensor<B, 4>,
        index: usize,
        sample: Tensor<B, 4>,
        noise: &mut NoiseFn<B>,
    ) -> Tensor<B, 4>;
}

/// Builds the scheduler `kind` for `steps` steps from a folder's scheduler config.
pub fn build<B: Backend>(
    kind: SchedulerKind,
    config: &Map<String, Value>,
    steps: usize,
    path: &Path,
) -> Result<Box<dyn Scheduler<B>>> {
    if steps == 0 {
        return Err(DiffusionError::Request("steps must be at least 1".into()));
    }
    let cfg = SchedulerConfig { map: config, path };
    let train = cfg.usize("num_train_timesteps", 1000)?;
    if steps > train {
        return Err(DiffusionError::Request(format!(
            "steps ({steps}) cannot exceed the scheduler's num_train_timesteps ({train})"
        )));
    }
    Ok(match kind {
        SchedulerKind::Pndm => Box::new(pndm::Pndm::new(&cfg, steps)?),
        SchedulerKind::Ddim => Box::new(ddim::Ddim::new(&cfg, steps)?),
        SchedulerKind::Euler => Box::new(euler::Euler::new(&cfg, steps, false)?),
        SchedulerKind::EulerAncestral => Box::new(euler::Euler::new(&cfg, steps, true)?),
        SchedulerKind::DpmSolverPP2M { karras } => {
            Box::new(dpm_solver::DpmSolverPP2M::new(&cfg, steps, karras)?)
        }
        // The family registry's check refuses it before a request gets here.
        SchedulerKind::FlowMatchEuler => {
            return Err(DiffusionError::Request(
                "flow_euler steps flow-matching models; this model predicts noise: choose pndm, ddim, euler, euler_a, dpmpp_2m or dpmpp_2m_karras".into(),
            ))
        }
    })
}

/// Typed access to the config map with diffusers' per-scheduler defaults.
pub(crate) struct SchedulerConfig<'a> {
    map: &'a Map<String, Value>,
    path: &'a Path,
}

impl SchedulerConfig<'_> {
    fn present(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn error(&self, key: &str, expected: &str) -> DiffusionError {
        DiffusionError::config(self.path, format!("`{key}` must be {expected}"))
    }

    pub fn f64(&self, key: &str, default: f64) -> Result<f64> {
        match self.present(key) {
            None => Ok(default),
            Some(v) => v.as_f64().ok_or_else(|| self.error(key, "a number")),
        }
    }

    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>> {
        self.present(key)
            .map(|v| v.as_f64().ok_or_else(|| self.error(key, "a number")))
            .transpose()
    }

    pub fn usize(&self, key: &str, default: usize) -> Result<usize> {
        match self.present(key) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| self.error(key, "a non-negative integer")),
        }
    }

    pub fn bool(&self, key: &str, default: bool) -> Result<bool> {
        match self.present(key) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.error(key, "true or false")),
        }
    }

    pub fn str(&self, key: &str, default: &str) -> Result<String> {
        match self.present(key) {
            None => Ok(default.to_string()),
            Some(v) => v
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| self.error(key, "a string")),
        }
    }

    /// Fails when `key` is set to anything but `allowed` values (options not implemented here).
    pub fn only(&self, key: &str, default: &str, allowed: &[&str]) -> Result<String> {
        let value = self.str(key, default)?;
        if allowed.contains(&value.as_str()) {
            Ok(value)
        } else {
            Err(DiffusionError::unsupported(
                self.path,
                format!(
                    "scheduler option {key} = {value:?} (supported: {})",
                    allowed.join(", ")
                ),
            ))
        }
    }

    pub fn reject_true(&self, key: &str) -> Result<()> {
        if self.bool(key, false)? {
            return Err(DiffusionError::unsupported(
                self.path,
                format!("scheduler option {key} = true"),
            ));
        }
        Ok(())
    }

    /// `alphas_cumprod` from the beta schedule, in f32 as diffusers (torch) holds it.
    pub fn alphas_cumprod(&self) -> Result<Vec<f32>> {
        self.reject_true("rescale_betas_zero_snr")?;
        let n = self.usize("num_train_timesteps", 1000)?;
        let betas: Vec<f32> = if let Some(list) = self.present("trained_betas") {
            let list = list
                .as_array()
                .ok_or_else(|| self.error("trained_betas", "a list of numbers"))?;
            let betas = list
                .iter()
                .map(|v| v.as_f64().map(|b| b as f32))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| self.error("trained_betas", "a list of numbers"))?;
            if betas.len() != n {
                return Err(self.error("trained_betas", "one value per training timestep"));
            }
            betas
        } else {
            let start = self.f64("beta_start", 0.0001)?;
            let end = self.f64("beta_end", 0.02)?;
            match self.str("beta_schedule", "linear")?.as_str() {
                "linear" => linspace_f32(start as f32, end as f32, n),
                "scaled_linear" => linspace_f32(start.sqrt() as f32, end.sqrt() as f32, n)
                    .into_iter()
                    .map(|b| b * b)
                    .collect(),
                "squaredcos_cap_v2" => {
                    let alpha_bar = |t: f64| {
                        ((t + 0.008) / 1.008 * std::f64::consts::PI / 2.0)
                            .cos()
                            .powi(2)
                    };
                    (0..n)
                        .map(|i| {
                            let (t1, t2) = (i as f64 / n as f64, (i + 1) as f64 / n as f64);
                            (1.0 - alpha_bar(t2) / alpha_bar(t1)).min(0.999) as f32
                        })
                        .collect()
                }
                other => {
                    return Err(DiffusionError::unsupported(
                        self.path,
                        format!("beta_schedule {other:?}"),
                    ))
                }
            }
        };
        // torch's CPU cumprod accumulates float in double.
        let mut acc = 1f64;
        Ok(betas
            .iter()
            .map(|b| {
                acc *= (1.0 - b) as f64;
                acc as f32
            })
            .collect())
    }

    /// `prediction_type`: "epsilon" or "v_prediction" ("sample" is refused by name).
    pub fn prediction_type(&self) -> Result<PredictionType> {
        Ok(
            match self
                .only("prediction_type", "epsilon", &["epsilon", "v_prediction"])?
                .as_str()
            {
                "v_prediction" => PredictionType::VPrediction,
                _ => PredictionType::Epsilon,
            },
        )
    }
}

/// torch.linspace in f32: the first half counts up from `start`, the second down from `end`.
fn linspace_f32(start: f32, end: f32, n: usize) -> Vec<f32> {
    if n == 1 {
        return vec![start];
    }
    let step = (end - start) / (n - 1) as f32;
    let half = n / 2;
    (0..n)
        .map(|i| {
            if i < half {
                start + step * i as f32
            } else {
                end - step * (n - 1 - i) as f32
            }
        })
        .collect()
}

/// numpy.linspace(start, stop, n) in f64.
fn np_linspace(start: f64, stop: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![start];
    }
    let step = (stop - start) / (n - 1) as f64;
    let mut v: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
    v[n - 1] = stop;
    v
}

/// numpy.arange(start, stop, step) in f64 (numpy's length rule).
fn np_arange(start: f64, stop: f64, step: f64) -> Vec<f64> {
    let len = ((stop - start) / step).ceil().max(0.0) as usize;
    (0..len).map(|i| start + i as f64 * step).collect()
}

/// numpy.interp over xp = 0, 1, 2, ...
fn interp_index(x: f64, fp: &[f64]) -> f64 {
    if x <= 0.0 {
        return fp[0];
    }
    let last = fp.len() - 1;
    if x >= last as f64 {
        return fp[last];
    }
    let i = x.floor() as usize;
    let w = x - i as f64;
    // numpy's formula: slope * (x - xp[i]) + fp[i]
    (fp[i + 1] - fp[i]) * w + fp[i]
}

/// Karras et al. (2022) sigma ramp with rho = 7, as diffusers' `_convert_to_karras`.
fn karras_sigmas(sigma_min: f64, sigma_max: f64, steps: usize) -> Vec<f64> {
    let rho = 7.0;
    let (min_inv, max_inv) = (sigma_min.powf(1.0 / rho), sigma_max.powf(1.0 / rho));
    np_linspace(0.0, 1.0, steps)
        .into_iter()
        .map(|r| (max_inv + r * (min_inv - max_inv)).powf(rho))
        .collect()
}

/// diffusers' `_sigma_to_t`: the (fractional) training timestep whose log-sigma matches.
fn sigma_to_t(sigma: f64, log_sigmas: &[f64]) -> f64 {
    let log_sigma = sigma.max(1e-10).ln();
    let count = log_sigmas
        .iter()
        .filter(|&&ls| log_sigma - ls >= 0.0)
        .count();
    // argmax of cumsum(dists >= 0): the last index where the running count first reaches its max.
    let low = if count == 0 {
        0
    } else {
        let mut seen = 0;
        let mut idx = 0;
        for (i, &ls) in log_sigmas.iter().enumerate() {
            if log_sigma - ls >= 0.0 {
                seen += 1;
                if seen == count {
                    idx = i;
                    break;
                }
            }
        }
        idx
    }
    .min(log_sigmas.len() - 2);
    let (lo, hi) = (log_sigmas[low], log_sigmas[low + 1]);
    let w = ((lo - log_sigma) / (lo - hi)).clamp(0.0, 1.0);
    (1.0 - w) * low as f64 + w * (low + 1) as f64
}

/// The descending integer timesteps of "leading", "linspace" or "trailing" spacing
/// (PNDM's are reversed by the caller to ascending where its reference is).
fn spaced_timesteps(
    cfg: &SchedulerConfig,
    steps: usize,
    default_spacing: &str,
) -> Result<Vec<f64>> {
    let train = cfg.usize("num_train_timesteps", 1000)?;
    let offset = cfg.usize("steps_offset", 0)? as f64;
    let spacing = cfg.only(
        "timestep_spacing",
        default_spacing,
        &["leading", "linspace", "trailing"],
    )?;
    Ok(match spacing.as_str() {
        "linspace" => np_linspace(0.0, (train - 1) as f64, steps)
            .into_iter()
            .rev()
            .collect(),
        "leading" => {
            let ratio = (train / steps) as f64;
            (0..steps)
                .rev()
                .map(|k| k as f64 * ratio + offset)
                .collect()
        }
        _ => {
            let ratio = train as f64 / steps as f64;
            np_arange(train as f64, 0.0, -ratio)
                .into_iter()
                .map(|t| t.round_ties_even() - 1.0)
                .collect()
        }
    })
}

/// DDPM-style noising at one training timestep: `sqrt(a) * x0 + sqrt(1 - a) * noise`, with the
/// coefficients rounded to f32 as torch holds them.
fn add_noise_at<B: Backend>(
    alphas_cumprod: &[f32],
    timestep: usize,
    original: Tensor<B, 4>,
    noise: Tensor<B, 4>,
) -> Tensor<B, 4> {
    let a = alphas_cumprod[timestep];
    original * a.sqrt() as f64 + noise * (1.0 - a).sqrt() as f64
}

/// `((1 - a) / a) ** 0.5` for each alpha_cumprod, in f32 as torch computes it, widened to f64.
fn train_sigmas(alphas_cumprod: &[f32]) -> Vec<f64> {
    alphas_cumprod
        .iter()
        .map(|&a| ((1.0 - a) / a).sqrt() as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in SchedulerKind::NAMES {
            assert_eq!(SchedulerKind::from_name(name).unwrap().name(), *name);
        }
        assert!(SchedulerKind::from_name("heun")
            .unwrap_err()
            .to_string()
            .contains("dpmpp_2m"));
    }

    #[test]
    fn numpy_helpers_match_numpy() {
        assert_eq!(
            np_arange(1000.0, 0.0, -250.0),
            vec![1000.0, 750.0, 500.0, 250.0]
        );
        assert_eq!(np_linspace(0.0, 999.0, 4), vec![0.0, 333.0, 666.0, 999.0]);
        assert_eq!(interp_index(1.5, &[0.0, 2.0, 4.0]), 3.0);
        assert_eq!(interp_index(7.0, &[0.0, 2.0, 4.0]), 4.0);
    }
}
