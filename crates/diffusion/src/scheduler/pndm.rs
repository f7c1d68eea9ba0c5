//! diffusers' `PNDMScheduler`: pseudo linear multistep (PLMS) steps, optionally preceded by
//! Runge-Kutta (PRK) warm-up steps when `skip_prk_steps` is false. SD1.5's config skips them.

use burn::prelude::*;

use super::{add_noise_at, spaced_timesteps, NoiseFn, PredictionType, Scheduler, SchedulerConfig};
use crate::error::Result;

pub struct Pndm<B: Backend> {
    alphas_cumprod: Vec<f32>,
    final_alpha_cumprod: f32,
    /// Model-call timesteps: PRK ones (if any) then PLMS ones.
    timesteps_int: Vec<i64>,
    timesteps: Vec<f32>,
    prk_count: usize,
    /// num_train_timesteps / num_inference_steps
    stride: i64,
    counter: usize,
    ets: Vec<Tensor<B, 4>>,
    cur_sample: Option<Tensor<B, 4>>,
    cur_model_output: Option<Tensor<B, 4>>,
    prediction: PredictionType,
}

impl<B: Backend> Pndm<B> {
    pub fn new(cfg: &SchedulerConfig, steps: usize) -> Result<Self> {
        let prediction = cfg.prediction_type()?;
        let alphas_cumprod = cfg.alphas_cumprod()?;
        let final_alpha_cumprod = if cfg.bool("set_alpha_to_one", false)? {
            1.0
        } else {
            alphas_cumprod[0]
        };
        let train = cfg.usize("num_train_timesteps", 1000)? as i64;
        // PNDM keeps its base timesteps ascending.
        let mut base: Vec<i64> = spaced_timesteps(cfg, steps, "leading")?
            .into_iter()
            .map(|t| t.round_ties_even() as i64)
            .collect();
        base.reverse();
        let n = base.len();
        let (prk, plms): (Vec<i64>, Vec<i64>) = if cfg.bool("skip_prk_steps", false)? {
            let mut plms: Vec<i64> = base[..n - 1].to_vec();
            plms.extend_from_slice(&base[n.saturating_sub(2)..n - 1]);
            plms.push(base[n - 1]);
            plms.reverse();
            (Vec::new(), plms)
        } else {
            let half = train / steps as i64 / 2;
            let tail = &base[n.saturating_sub(4)..];
            let mut prk: Vec<i64> = tail.iter().flat_map(|&t| [t, t + half]).collect();
            prk.pop();
            let mut prk: Vec<i64> = prk.iter().flat_map(|&t| [t, t]).collect();
            prk.remove(0);
            prk.pop();
            prk.reverse();
            let plms: Vec<i64> = base[..n.saturating_sub(3)].iter().rev().copied().collect();
            (prk, plms)
        };
        let prk_count = prk.len();
        let timesteps_int: Vec<i64> = prk.into_iter().chain(plms).collect();
        Ok(Pndm {
            alphas_cumprod,
            final_alpha_cumprod,
            timesteps: timesteps_int.iter().map(|&t| t as f32).collect(),
            timesteps_int,
            prk_count,
            stride: train / steps as i64,
            counter: 0,
            ets: Vec::new(),
            cur_sample: None,
            cur_model_output: None,
            prediction,
        })
    }

    fn alpha(&self, t: i64) -> f64 {
        if t >= 0 {
            self.alphas_cumprod[t as usize] as f64
        } else {
            self.final_alpha_cumprod as f64
        }
    }

    /// Formula (9) of the PNDM paper: x_{t-δ} from x_t and the (combined) model output, read as ε
    /// at x_t (diffusers converts a v prediction here, after the multistep combination).
    fn prev_sample(
        &self,
        sample: Tensor<B, 4>,
        t: i64,
        prev_t: i64,
        output: Tensor<B, 4>,
    ) -> Tensor<B, 4> {
        let a_t = self.alpha(t);
        let a_prev = self.alpha(prev_t);
        let b_t = 1.0 - a_t;
        let eps = self
            .prediction
            .epsilon(output, sample.clone(), a_t.sqrt(), b_t.sqrt());
        let b_prev = 1.0 - a_prev;
        let sample_coeff = (a_prev / a_t).sqrt();
        let denom = a_t * b_prev.sqrt() + (a_t * b_t * a_prev).sqrt();
        sample * sample_coeff - eps * ((a_prev - a_t) / denom)
    }

    fn step_prk(&mut self, model_output: Tensor<B, 4>, sample: Tensor<B, 4>) -> Tensor<B, 4> {
        let timestep_now = self.timesteps_int[self.counter];
        let diff = if self.counter % 2 == 1 {
            0
        } else {
            self.stride / 2
        };
        let prev_t = timestep_now - diff;
        let t = self.timesteps_int[self.counter / 4 * 4];
        let add = |acc: Option<Tensor<B, 4>>, x: Tensor<B, 4>| match acc {
            Some(a) => a + x,
            None => x,
        };
        let model_output = match self.counter % 4 {
            0 => {
                self.cur_model_output = Some(add(
                    self.cur_model_output.take(),
                    model_output.clone() / 6.0,
                ));
                self.ets.push(model_output.clone());
                self.cur_sample = Some(sample.clone());
                model_output
            }
            1 | 2 => {
                self.cur_model_output = Some(add(
                    self.cur_model_output.take(),
                    model_output.clone() / 3.0,
                ));
                model_output
            }
            _ => {
                let out = add(self.cur_model_output.take(), model_output / 6.0);
                self.cur_model_output = None;
                out
            }
        };
        let cur = self.cur_sample.clone().unwrap_or(sample);
        let prev = self.prev_sample(cur, t, prev_t, model_output);
        self.counter += 1;
        prev
    }

    fn step_plms(
        &mut self,
        model_output: Tensor<B, 4>,
        timestep: i64,
        sample: Tensor<B, 4>,
    ) -> Tensor<B, 4> {
        let mut t = timestep;
        let mut prev_t = t - self.stride;
        if self.counter != 1 {
            let keep = self.ets.len().saturating_sub(3);
            self.ets.drain(..keep);
            self.ets.push(model_output.clone());
        } else {
            prev_t = t;
            t += self.stride;
        }
        let e = &self.ets;
        let n = e.len();
        let (eps, sample) = if n == 1 && self.counter == 0 {
            self.cur_sample = Some(sample.clone());
            (model_output, sample)
        } else if n == 1 && self.counter == 1 {
            let s = self.cur_sample.take().expect("PLMS keeps the first sample");
            ((model_output + e[0].clone()) / 2.0, s)
        } else if n == 2 {
            ((e[1].clone() * 3.0 - e[0].clone()) / 2.0, sample)
        } else if n == 3 {
            (
                (e[2].clone() * 23.0 - e[1].clone() * 16.0 + e[0].clone() * 5.0) / 12.0,
                sample,
            )
        } else {
            (
                (e[n - 1].clone() * 55.0 - e[n - 2].clone() * 59.0 + e[n - 3].clone() * 37.0
                    - e[n - 4].clone() * 9.0)
                    / 24.0,
                sample,
            )
        };
        let prev = self.prev_sample(sample, t, prev_t, eps);
        self.counter += 1;
        prev
    }
}

impl<B: Backend> Scheduler<B> for Pndm<B> {
    fn timesteps(&self) -> &[f32] {
        &self.timesteps
    }

    fn prediction_type(&self) -> PredictionType {
        self.prediction
    }

    fn add_noise(&self, original: Tensor<B, 4>, noise: Tensor<B, 4>, index: usize) -> Tensor<B, 4> {
        add_noise_at(
            &self.alphas_cumprod,
            self.timesteps_int[index] as usize,
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
        if self.counter < self.prk_count {
            self.step_prk(model_output, sample)
        } else {
            self.step_plms(model_output, self.timesteps_int[index], sample)
        }
    }
}
