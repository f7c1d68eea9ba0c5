//! diffusers' `FlowMatchEulerDiscreteScheduler` as rectified-flow pipelines drive it (FLUX.2,
//! Z-Image): the pipeline hands it sigmas (`linspace(1, 1/n, n)`) and a shift `mu` (a family's
//! own: FLUX.2's empirical fit is in families/flux2, FLUX.1's `calculate_shift` here); it shifts them in time,
//! appends 0, and each step moves the latents along the predicted velocity:
//! `x += (sigma_next - sigma) * v`. Options it has that change the schedule in ways the engine does
//! not implement are refused by name.

use std::path::Path;

use serde::Deserialize;

use crate::error::{DiffusionError, Result};

/// `scheduler/scheduler_config.json`, with diffusers' defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub struct FlowMatchConfig {
    pub num_train_timesteps: usize,
    pub shift: f64,
    pub use_dynamic_shifting: bool,
    pub base_shift: Option<f64>,
    pub max_shift: Option<f64>,
    pub base_image_seq_len: usize,
    pub max_image_seq_len: usize,
    pub invert_sigmas: bool,
    pub shift_terminal: Option<f64>,
    pub use_karras_sigmas: bool,
    pub use_exponential_sigmas: bool,
    pub use_beta_sigmas: bool,
    pub time_shift_type: String,
    pub stochastic_sampling: bool,
    /// Where present and true, pipelines pass no sigmas (not implemented: refused).
    pub use_flow_sigmas: bool,
}

impl Default for FlowMatchConfig {
    fn default() -> Self {
        FlowMatchConfig {
            num_train_timesteps: 1000,
            shift: 1.0,
            use_dynamic_shifting: false,
            base_shift: Some(0.5),
            max_shift: Some(1.15),
            base_image_seq_len: 256,
            max_image_seq_len: 4096,
            invert_sigmas: false,
            shift_terminal: None,
            use_karras_sigmas: false,
            use_exponential_sigmas: false,
            use_beta_sigmas: false,
            time_shift_type: "exponential".into(),
            stochastic_sampling: false,
            use_flow_sigmas: false,
        }
    }
}

/// The sigmas a run steps through (`steps + 1`, ending at 0) and the timesteps the model sees
/// (`sigma * num_train_timesteps`, one per step).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSchedule {
    pub sigmas: Vec<f32>,
    pub timesteps: Vec<f32>,
}

impl FlowSchedule {
    /// The model's timestep input for step `i` as the pipeline gives it: `t / 1000`, in f32.
    pub fn model_timestep(&self, i: usize) -> f32 {
        self.timesteps[i] / 1000.0
    }

    /// One Euler step in f32: `x + (sigma[i+1] - sigma[i]) * v`.
    pub fn step_size(&self, i: usize) -> f32 {
        self.sigmas[i + 1] - self.sigmas[i]
    }
}

impl FlowMatchConfig {
    /// FLUX.1's `calculate_shift` (diffusers' pipelines with dynamic shifting that fit no curve of
    /// their own, Z-Image's among them): `mu` linear in the image's token count, from
    /// `base_shift` at `base_image_seq_len` tokens to `max_shift` at `max_image_seq_len`.
    pub fn calculate_shift(&self, image_tokens: usize) -> f64 {
        let (base, max) = (
            self.base_shift.unwrap_or(0.5),
            self.max_shift.unwrap_or(1.15),
        );
        let (base_len, max_len) = (
            self.base_image_seq_len as f64,
            self.max_image_seq_len as f64,
        );
        let m = (max - base) / (max_len - base_len);
        let b = base - m * base_len;
        image_tokens as f64 * m + b
    }

    pub fn validate(&self, path: &Path) -> Result<()> {
        let refused = [
            (self.invert_sigmas, "invert_sigmas = true"),
            (self.use_karras_sigmas, "use_karras_sigmas = true"),
            (self.use_exponential_sigmas, "use_exponential_sigmas = true"),
            (self.use_beta_sigmas, "use_beta_sigmas = true"),
            (self.stochastic_sampling, "stochastic_sampling = true"),
            (self.use_flow_sigmas, "use_flow_sigmas = true"),
        ];
        if let Some((_, what)) = refused.iter().find(|(set, _)| *set) {
            return Err(DiffusionError::unsupported(
                path,
                format!("flow-matching scheduler option {what}"),
            ));
        }
        if !matches!(self.time_shift_type.as_str(), "exponential" | "linear") {
            return Err(DiffusionError::config(
                path,
                format!(
                    "`time_shift_type` must be \"exponential\" or \"linear\", not \"{}\"",
                    self.time_shift_type
                ),
            ));
        }
        if self.num_train_timesteps == 0 || !(self.shift.is_finite() && self.shift > 0.0) {
            return Err(DiffusionError::config(
                path,
                "num_train_timesteps and shift must be positive",
            ));
        }
        if self.use_dynamic_shifting && self.max_image_seq_len == self.base_image_seq_len {
            return Err(DiffusionError::config(
                path,
                "dynamic shifting needs `max_image_seq_len` and `base_image_seq_len` to differ",
            ));
        }
        if self
            .shift_terminal
            .is_some_and(|t| !(0.0..1.0).contains(&t))
        {
            return Err(DiffusionError::config(
                path,
                "`shift_terminal` must be in [0, 1)",
            ));
        }
        Ok(())
    }

    /// `set_timesteps(sigmas=linspace(1, 1/steps, steps), mu=mu)`, computed in f32 as diffusers
    /// does with its float32 arrays.
    pub fn schedule(&self, steps: usize, mu: f64) -> FlowSchedule {
        let steps = steps.max(1);
        let mut sigmas: Vec<f32> = (0..steps)
            .map(|i| {
                let last = 1.0 / steps as f64;
                let t = if steps == 1 {
                    1.0
                } else {
                    1.0 + (last - 1.0) * i as f64 / (steps - 1) as f64
                };
                t as f32
            })
            .collect();
        for s in &mut sigmas {
            *s = if self.use_dynamic_shifting {
                let inv = 1.0 / *s - 1.0;
                match self.time_shift_type.as_str() {
                    "linear" => mu as f32 / (mu as f32 + inv),
                    _ => {
                        let e = mu.exp() as f32;
                        e / (e + inv)
                    }
                }
            } else {
                let shift = self.shift as f32;
                shift * *s / (1.0 + (shift - 1.0) * *s)
            };
        }
        if let Some(terminal) = self.shift_terminal.filter(|t| *t != 0.0) {
            let last = 1.0 - sigmas[sigmas.len() - 1];
            let scale = last / (1.0 - terminal as f32);
            for s in &mut sigmas {
                *s = 1.0 - (1.0 - *s) / scale;
            }
        }
        let timesteps = sigmas
            .iter()
            .map(|s| s * self.num_train_timesteps as f32)
            .collect();
        sigmas.push(0.0);
        FlowSchedule { sigmas, timesteps }
    }

    /// `set_timesteps(steps, mu=mu)` with no sigmas, as SD3's pipelines call it: `steps` timesteps
    /// evenly from the scheduler's own largest to its smallest training sigma (shifted when it was
    /// made, in f32, unless the shift is dynamic), shifted again (or by `mu`) in f64 as numpy
    /// computes it, then rounded to f32.
    pub fn schedule_over_range(&self, steps: usize, mu: f64) -> FlowSchedule {
        let steps = steps.max(1);
        let n = self.num_train_timesteps as f32;
        let made = |s: f32| match self.use_dynamic_shifting {
            true => s,
            false => {
                let shift = self.shift as f32;
                shift * s / (1.0 + (shift - 1.0) * s)
            }
        };
        // The training sigmas run from N/N (exactly 1) down to 1/N.
        let (start, stop) = (made(1.0) as f64 * n as f64, made(1.0 / n) as f64 * n as f64);
        let mut sigmas: Vec<f64> = (0..steps)
            .map(|i| match steps {
                1 => start,
                _ if i + 1 == steps => stop,
                _ => start + (stop - start) / (steps - 1) as f64 * i as f64,
            })
            .map(|t| t / n as f64)
            .collect();
        for s in &mut sigmas {
            *s = if self.use_dynamic_shifting {
                let inv = 1.0 / *s - 1.0;
                match self.time_shift_type.as_str() {
                    "linear" => mu / (mu + inv),
                    _ => mu.exp() / (mu.exp() + inv),
                }
            } else {
                self.shift * *s / (1.0 + (self.shift - 1.0) * *s)
            };
        }
        if let Some(terminal) = self.shift_terminal.filter(|t| *t != 0.0) {
            let scale = (1.0 - sigmas[sigmas.len() - 1]) / (1.0 - terminal);
            for s in &mut sigmas {
                *s = 1.0 - (1.0 - *s) / scale;
            }
        }
        let mut sigmas: Vec<f32> = sigmas.into_iter().map(|s| s as f32).collect();
        let timesteps = sigmas.iter().map(|s| s * n).collect();
        sigmas.push(0.0);
        FlowSchedule { sigmas, timesteps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures from diffusers 0.42.1: `calculate_shift` and `FlowMatchEulerDiscreteScheduler`
    /// stepped as `ZImagePipeline` steps it (`sigmas=linspace(1, 1/n, n)`, `mu`).
    #[test]
    fn static_and_dynamic_shifts_match_diffusers() {
        let close = |got: &[f32], want: &[f32]| {
            assert_eq!(got.len(), want.len(), "{got:?}");
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() <= 2e-7 * w.abs().max(1.0),
                    "{got:?} against {want:?}"
                );
            }
        };
        // Z-Image-Turbo's scheduler: a static shift of 3, 9 steps (its mu is unused).
        let turbo = FlowMatchConfig {
            shift: 3.0,
            ..FlowMatchConfig::default()
        };
        turbo.validate(Path::new("scheduler_config.json")).unwrap();
        let mu = turbo.calculate_shift(4096);
        assert!((mu - 1.15).abs() < 1e-12);
        let schedule = turbo.schedule(9, mu);
        close(
            &schedule.sigmas,
            &[
                1.0,
                0.96000004,
                0.91304356,
                0.8571428,
                0.7894737,
                0.705_882_4,
                0.59999996,
                0.4615385,
                0.27272728,
                0.0,
            ],
        );
        close(
            &schedule.timesteps,
            &[
                1000.0, 960.00006, 913.0436, 857.1428, 789.4737, 705.8824, 599.99994, 461.5385,
                272.7273,
            ],
        );
        // Dynamic shifting with FLUX.1's mu, which extrapolates below the base length.
        assert!((turbo.calculate_shift(1024) - 0.63).abs() < 1e-12);
        assert!((turbo.calculate_shift(100) - 0.47359375).abs() < 1e-12);
        let dynamic = FlowMatchConfig {
            use_dynamic_shifting: true,
            ..turbo.clone()
        };
        close(
            &dynamic.schedule(4, dynamic.calculate_shift(1024)).sigmas,
            &[1.0, 0.8492348, 0.652_489_4, 0.38494474, 0.0],
        );
        let degenerate = FlowMatchConfig {
            max_image_seq_len: 256,
            ..dynamic
        };
        assert!(degenerate.validate(Path::new("s.json")).is_err());
    }
}
