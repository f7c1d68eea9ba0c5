//! diffusers' `DPMSolverMultistepScheduler` with `algorithm_type="dpmsolver++"` and
//! `solver_order=2` (DPM-Solver++ 2M), optionally on Karras sigmas.

use burn::prelude::*;

use super::{
    interp_index, karras_sigmas, sigma_to_t, spaced_timesteps, train_sigmas, NoiseFn,
    PredictionType, Scheduler, SchedulerConfig,
};
use crate::error::{DiffusionError, Result};

pub struct DpmSolverPP2M<B: Backend> {
    timesteps: Vec<f32>,
    sigmas: Vec<f32>,
    midpoint: bool,
    lower_order_final: bool,
    euler_at_final: bool,
    final_sigma_zero: bool,
    previous_x0: Option<Tensor<B, 4>>,
    lower_order_nums: usize,
    prediction: PredictionType,
}

impl<B: Backend> DpmSolverPP2M<B> {
    pub fn new(cfg: &SchedulerConfig, steps: usize, karras: bool) -> Result<Self> {
        let prediction = cfg.prediction_type()?;
        cfg.reject_true("thresholding")?;
        cfg.reject_true("use_exponential_sigmas")?;
        cfg.reject_true("use_beta_sigmas")?;
        cfg.reject_true("use_lu_lambdas")?;
        cfg.reject_true("use_flow_sigmas")?;
        // The name picks the algorithm: a folder configured for another DPM variant still runs 2M++.
        let solver = cfg.only("solver_type", "midpoint", &["midpoint", "heun"])?;
        if cfg
            .opt_f64("lambda_min_clipped")?
            .is_some_and(|v| v.is_finite())
        {
            return Err(DiffusionError::unsupported(
                cfg.path,
                "scheduler option lambda_min_clipped",
            ));
        }
        let alphas_cumprod = cfg.alphas_cumprod()?;
        let train = train_sigmas(&alphas_cumprod);
        let spacing = cfg.str("timestep_spacing", "linspace")?;
        // DPM-Solver spaces steps + 1 points and drops the last (t = 0), except for "trailing".
        let mut timesteps: Vec<f64> = if spacing == "trailing" {
            spaced_timesteps(cfg, steps, "linspace")?
        } else {
            let mut t = spaced_timesteps(cfg, steps + 1, "linspace")?;
            t.pop();
            t.into_iter().map(|x| x.round_ties_even()).collect()
        };
        if spacing == "leading" {
            // DPM's leading ratio is num_train // (steps + 1), unlike the shared helper's.
            let n = cfg.usize("num_train_timesteps", 1000)?;
            let ratio = (n / (steps + 1)) as f64;
            let offset = cfg.usize("steps_offset", 0)? as f64;
            timesteps = (1..=steps)
                .rev()
                .map(|k| k as f64 * ratio + offset)
                .collect();
        }
        let mut sigmas: Vec<f64>;
        if karras || cfg.bool("use_karras_sigmas", false)? {
            let log_sigmas: Vec<f64> = train.iter().map(|s| s.ln()).collect();
            let lo = cfg.opt_f64("sigma_min")?.unwrap_or(train[0]);
            let hi = cfg
                .opt_f64("sigma_max")?
                .unwrap_or(*train.last().expect("non-empty"));
            sigmas = karras_sigmas(lo, hi, steps);
            timesteps = sigmas
                .iter()
                .map(|&s| sigma_to_t(s, &log_sigmas).round_ties_even())
                .collect();
        } else {
            sigmas = timesteps.iter().map(|&t| interp_index(t, &train)).collect();
        }
        let final_sigma_zero =
            cfg.only("final_sigmas_type", "zero", &["zero", "sigma_min"])? == "zero";
        sigmas.push(if final_sigma_zero { 0.0 } else { train[0] });
        Ok(DpmSolverPP2M {
            timesteps: timesteps.into_iter().map(|t| t as f32).collect(),
            sigmas: sigmas.into_iter().map(|s| s as f32).collect(),
            midpoint: solver == "midpoint",
            lower_order_final: cfg.bool("lower_order_final", true)?,
            euler_at_final: cfg.bool("euler_at_final", false)?,
            final_sigma_zero,
            previous_x0: None,
            lower_order_nums: 0,
            prediction,
        })
    }

    /// (alpha_t, sigma_t, lambda_t) for a k-diffusion sigma.
    fn alpha_sigma_lambda(sigma: f64) -> (f64, f64, f64) {
        let alpha = 1.0 / (sigma * sigma + 1.0).sqrt();
        let sigma_t = sigma * alpha;
        (alpha, sigma_t, alpha.ln() - sigma_t.ln())
    }
}

impl<B: Backend> Scheduler<B> for DpmSolverPP2M<B> {
    fn timesteps(&self) -> &[f32] {
        &self.timesteps
    }

    fn sigmas(&self) -> &[f32] {
        &self.sigmas
    }

    fn prediction_type(&self) -> PredictionType {
        self.prediction
    }

    fn add_noise(&self, original: Tensor<B, 4>, noise: Tensor<B, 4>, index: usize) -> Tensor<B, 4> {
        let (alpha, sigma, _) = Self::alpha_sigma_lambda(self.sigmas[index] as f64);
        original * alpha + noise * sigma
    }

    fn step(
        &mut self,
        model_output: Tensor<B, 4>,
        index: usize,
        sample: Tensor<B, 4>,
        _noise: &mut NoiseFn<B>,
    ) -> Tensor<B, 4> {
        let steps = self.timesteps.len();
        let lower_order_final = index == steps - 1
            && (self.euler_at_final
                || (self.lower_order_final && steps < 15)
                || self.final_sigma_zero);
        let (alpha_s, sigma_s, lambda_s) = Self::alpha_sigma_lambda(self.sigmas[index] as f64);
        // Data prediction (x0) from the model's output.
        let x0 = self
            .prediction
            .original(model_output, sample.clone(), alpha_s, sigma_s);
        let (alpha_t, sigma_t, lambda_t) = Self::alpha_sigma_lambda(self.sigmas[index + 1] as f64);
        let h = lambda_t - lambda_s;
        // At sigma = 0, lambda_t is infinite and exp(-h) is 0: the step lands on x0.
        let exp_m1 = (-h).exp() - 1.0;
        let ratio = if sigma_t == 0.0 {
            0.0
        } else {
            sigma_t / sigma_s
        };
        let first_order = self.lower_order_nums < 1 || lower_order_final;
        let prev = match (&self.previous_x0, first_order) {
            (Some(m1), false) => {
                let (_, _, lambda_s1) = Self::alpha_sigma_lambda(self.sigmas[index - 1] as f64);
                let r0 = (lambda_s - lambda_s1) / h;
                let d1 = (x0.clone() - m1.clone()) * (1.0 / r0);
                let base = sample * ratio - x0.clone() * (alpha_t * exp_m1);
                if self.midpoint {
                    base - d1 * (0.5 * alpha_t * exp_m1)
                } else {
                    base + d1 * (alpha_t * (exp_m1 / h + 1.0))
                }
            }
            _ => sample * ratio - x0.clone() * (alpha_t * exp_m1),
        };
        self.previous_x0 = Some(x0);
        if self.lower_order_nums < 2 {
            self.lower_order_nums += 1;
        }
        prev
    }
}
