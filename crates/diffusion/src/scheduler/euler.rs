//! diffusers' `EulerDiscreteScheduler` and `EulerAncestralDiscreteScheduler` (k-diffusion's Euler
//! and Euler-a samplers on SD's discrete sigma schedule).

use burn::prelude::*;

use super::{
    interp_index, karras_sigmas, sigma_to_t, spaced_timesteps, train_sigmas, NoiseFn,
    PredictionType, Scheduler, SchedulerConfig,
};
use crate::error::Result;

pub struct Euler {
    timesteps: Vec<f32>,
    /// One per step plus the final sigma.
    sigmas: Vec<f32>,
    init_noise_sigma: f64,
    ancestral: bool,
    prediction: PredictionType,
}

impl Euler {
    pub fn new(cfg: &SchedulerConfig, steps: usize, ancestral: bool) -> Result<Self> {
        let prediction = cfg.prediction_type()?;
        cfg.only("interpolation_type", "linear", &["linear"])?;
        cfg.only("timestep_type", "discrete", &["discrete"])?;
        cfg.reject_true("use_exponential_sigmas")?;
        cfg.reject_true("use_beta_sigmas")?;
        let alphas_cumprod = cfg.alphas_cumprod()?;
        let spacing = cfg.str("timestep_spacing", "linspace")?;
        let mut timesteps = spaced_timesteps(cfg, steps, "linspace")?;
        if spacing == "linspace" {
            // Euler keeps linspace timesteps fractional (computed in f32 by numpy).
            timesteps = timesteps.iter().map(|&t| t as f32 as f64).collect();
        }
        let train = train_sigmas(&alphas_cumprod);
        let mut sigmas: Vec<f64> = timesteps.iter().map(|&t| interp_index(t, &train)).collect();
        // The ancestral scheduler has neither Karras sigmas nor a configurable final sigma.
        let karras = !ancestral && cfg.bool("use_karras_sigmas", false)?;
        if karras {
            let log_sigmas: Vec<f64> = train.iter().map(|s| s.ln()).collect();
            let lo = cfg
                .opt_f64("sigma_min")?
                .unwrap_or(*sigmas.last().expect("steps >= 1"));
            let hi = cfg.opt_f64("sigma_max")?.unwrap_or(sigmas[0]);
            sigmas = karras_sigmas(lo, hi, steps);
            timesteps = sigmas.iter().map(|&s| sigma_to_t(s, &log_sigmas)).collect();
        }
        let last = if ancestral {
            0.0
        } else {
            match cfg
                .only("final_sigmas_type", "zero", &["zero", "sigma_min"])?
                .as_str()
            {
                "zero" => 0.0,
                _ => train[0],
            }
        };
        sigmas.push(last);
        let sigmas: Vec<f32> = sigmas.into_iter().map(|s| s as f32).collect();
        let max_sigma = sigmas.iter().copied().fold(0f32, f32::max) as f64;
        let init_noise_sigma = if spacing == "linspace" || spacing == "trailing" {
            max_sigma
        } else {
            (max_sigma * max_sigma + 1.0).sqrt()
        };
        Ok(Euler {
            timesteps: timesteps.into_iter().map(|t| t as f32).collect(),
            sigmas,
            init_noise_sigma,
            ancestral,
            prediction,
        })
    }
}

impl<B: Backend> Scheduler<B> for Euler {
    fn timesteps(&self) -> &[f32] {
        &self.timesteps
    }

    fn sigmas(&self) -> &[f32] {
        &self.sigmas
    }

    fn init_noise_sigma(&self) -> f64 {
        self.init_noise_sigma
    }

    fn scale_model_input(&self, sample: Tensor<B, 4>, index: usize) -> Tensor<B, 4> {
        let sigma = self.sigmas[index] as f64;
        sample / (sigma * sigma + 1.0).sqrt()
    }

    fn prediction_type(&self) -> PredictionType {
        self.prediction
    }

    fn add_noise(&self, original: Tensor<B, 4>, noise: Tensor<B, 4>, index: usize) -> Tensor<B, 4> {
        original + noise * self.sigmas[index] as f64
    }

    fn step(
        &mut self,
        model_output: Tensor<B, 4>,
        index: usize,
        sample: Tensor<B, 4>,
        noise: &mut NoiseFn<B>,
    ) -> Tensor<B, 4> {
        let sigma = self.sigmas[index] as f64;
        let sigma_next = self.sigmas[index + 1] as f64;
        // The UNet saw x / sqrt(sigma^2 + 1), a DDPM-scaled sample with alpha = 1 / sqrt(sigma^2 + 1).
        let model_output = if self.prediction == PredictionType::Epsilon {
            model_output
        } else {
            let alpha = 1.0 / (sigma * sigma + 1.0).sqrt();
            let input = sample.clone() * alpha;
            self.prediction
                .epsilon(model_output, input, alpha, sigma * alpha)
        };
        // x0 = x - sigma * eps; derivative d = (x - x0) / sigma = eps.
        if !self.ancestral {
            return sample + model_output * (sigma_next - sigma);
        }
        let up = (sigma_next * sigma_next * (sigma * sigma - sigma_next * sigma_next)
            / (sigma * sigma))
            .sqrt();
        let down = (sigma_next * sigma_next - up * up).sqrt();
        let dims = sample.dims();
        // The noise is drawn on every step, also the last (where `up` is 0), as diffusers does.
        let n = noise(dims);
        sample + model_output * (down - sigma) + n * up
    }
}
