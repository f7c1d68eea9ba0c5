//! diffusers' `DDIMScheduler` with eta = 0 (deterministic), as the SD pipeline calls it.

use burn::prelude::*;

use super::{add_noise_at, spaced_timesteps, NoiseFn, PredictionType, Scheduler, SchedulerConfig};
use crate::error::Result;

pub struct Ddim {
    alphas_cumprod: Vec<f32>,
    final_alpha_cumprod: f32,
    timesteps: Vec<f32>,
    stride: i64,
    clip_sample: Option<f64>,
    prediction: PredictionType,
}

impl Ddim {
    pub fn new(cfg: &SchedulerConfig, steps: usize) -> Result<Self> {
        let prediction = cfg.prediction_type()?;
        cfg.reject_true("thresholding")?;
        let alphas_cumprod = cfg.alphas_cumprod()?;
        // DDIM's own defaults differ from PNDM's: clip_sample and set_alpha_to_one are true.
        let final_alpha_cumprod = if cfg.bool("set_alpha_to_one", true)? {
            1.0
        } else {
            alphas_cumprod[0]
        };
        let clip_sample = if cfg.bool("clip_sample", true)? {
            Some(cfg.f64("clip_sample_range", 1.0)?)
        } else {
            None
        };
        let train = cfg.usize("num_train_timesteps", 1000)? as i64;
        let timesteps = spaced_timesteps(cfg, steps, "leading")?
            .into_iter()
            .map(|t| t.round_ties_even() as f32)
            .collect();
        Ok(Ddim {
            alphas_cumprod,
            final_alpha_cumprod,
            timesteps,
            stride: train / steps as i64,
            clip_sample,
            prediction,
        })
    }
}

impl<B: Backend> Scheduler<B> for Ddim {
    fn timesteps(&self) -> &[f32] {
        &self.timesteps
    }

    fn prediction_type(&self) -> PredictionType {
        self.prediction
    }

    fn add_noise(&self, original: Tensor<B, 4>, noise: Tensor<B, 4>, index: usize) -> Tensor<B, 4> {
        add_noise_at(
            &self.alphas_cumprod,
            self.timesteps[index] as usize,
            original,
            noise,
        )
    }

    fn step(
        &mut self,
        model_output: Tensor<B, 4>,
        index: usize,
        sample: Tensor<B, 4>,
        _noise: &mut NoiseFn<B>,
    ) -> Tensor<B, 4> {
        let t = self.timesteps[index] as i64;
        let prev_t = t - self.stride;
        let a_t = self.alphas_cumprod[t as usize] as f64;
        let a_prev = if prev_t >= 0 {
            self.alphas_cumprod[prev_t as usize] as f64
        } else {
            self.final_alpha_cumprod as f64
        };
        let (alpha, sigma) = (a_t.sqrt(), (1.0 - a_t).sqrt());
        let eps = self
            .prediction
            .epsilon(model_output.clone(), sample.clone(), alpha, sigma);
        let mut x0 = self.prediction.original(model_output, sample, alpha, sigma);
        if let Some(range) = self.clip_sample {
            x0 = x0.clamp(-range, range);
        }
        // eta = 0: no variance term.
        x0 * a_prev.sqrt() + eps * (1.0 - a_prev).sqrt()
    }
}
