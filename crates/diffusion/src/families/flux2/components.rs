//! FLUX.2 klein's components on plain values, for parity tests, tools and `sdbench timing`
//! (which times one transformer call at batch 1, the distilled model's one call per step, and
//! one VAE decode).

use burn::prelude::*;
use burn::tensor::{DType, TensorData};

use super::pipeline::Flux2Pipeline;
use super::PROMPT_TOKENS;
use crate::error::{DiffusionError, Result};
use crate::noise::NormalGenerator;
use crate::pipeline::backend_failure::guard;
use crate::pipeline::{tensor_to_vec, FamilyPipeline, TimedCall, B};

impl Flux2Pipeline {
    /// Component access for timing and tools, on plain values: a prompt's conditioning
    /// [1, 512, 3 x hidden] as f32.
    pub fn run_prompt_encoding(&self, prompt: &str) -> Result<Vec<f32>> {
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || tensor_to_vec(self.encode_prompt(prompt)?),
        )
    }

    /// One transformer call on packed latents [1, h*w, channels] for a `grid` of h x w tokens
    /// with `context` [1, S, joint width] (both row-major f32), at `timestep` in [0, 1].
    pub fn run_transformer_values(
        &self,
        latents: &[f32],
        grid: (usize, usize),
        context: &[f32],
        timestep: f32,
    ) -> Result<Vec<f32>> {
        let dev = &self.device.device;
        let (channels, width) = (self.in_channels, self.context_dim);
        let tokens = grid.0 * grid.1;
        if latents.len() != tokens * channels
            || context.is_empty()
            || !context.len().is_multiple_of(width)
        {
            return Err(DiffusionError::Request(format!(
                "the transformer takes {tokens} x {channels} latent values and a multiple of {width} context values; got {} and {}",
                latents.len(),
                context.len()
            )));
        }
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || {
                let x = Tensor::<B, 3>::from_data(
                    TensorData::new(latents.to_vec(), [1, tokens, channels]),
                    dev,
                );
                let c = Tensor::<B, 3>::from_data(
                    TensorData::new(context.to_vec(), [1, context.len() / width, width]),
                    dev,
                );
                tensor_to_vec(self.run_transformer(x, c, timestep, grid).cast(DType::F32))
            },
        )
    }

    /// The VAE decode of unpatched latents `shape` = [1, C, h, w] -> [1, 3, H, W] values.
    pub fn run_vae_decode(&self, latents: &[f32], shape: [usize; 4]) -> Result<Vec<f32>> {
        if latents.len() != shape.iter().product::<usize>() || shape[1] != self.info.latent_channels
        {
            return Err(DiffusionError::Request(format!(
                "the VAE decodes [1, {}, h, w] latents; got {} values for {shape:?}",
                self.info.latent_channels,
                latents.len()
            )));
        }
        guard(
            &self.device,
            self.memory_profile(),
            Some(self.info.placement.denoiser),
            || {
                let z = Tensor::<B, 4>::from_data(
                    TensorData::new(latents.to_vec(), shape),
                    self.vae_device(),
                );
                tensor_to_vec(self.decode(z).cast(DType::F32))
            },
        )
    }

    pub(super) fn timing_calls(&self, width: usize, height: usize) -> Result<Vec<TimedCall<'_>>> {
        let f = self.info.vae_scale_factor;
        let c = self.info.latent_channels;
        let (h, w) = (height / f, width / f);
        if h % 2 != 0 || w % 2 != 0 {
            return Err(DiffusionError::Request(format!(
                "--width and --height must be multiples of {} for FLUX.2 (the VAE's {f} times 2x2 patches)",
                2 * f
            )));
        }
        let grid = (h / 2, w / 2);
        let mut noise = NormalGenerator::new(1);
        let context = self.run_prompt_encoding("a photograph of an astronaut riding a horse")?;
        let latents = noise.normals(4 * c * grid.0 * grid.1);
        let z = noise.normals(c * h * w);
        let transformer = TimedCall {
            label: format!(
                "transformer call (batch 1, {} image + {PROMPT_TOKENS} text tokens)",
                grid.0 * grid.1
            ),
            run: Box::new(move || {
                self.run_transformer_values(&latents, grid, &context, 0.5)
                    .map(|_| ())
            }),
        };
        let vae = TimedCall {
            label: format!("vae decode ({c}x{h}x{w} -> 3x{height}x{width})"),
            run: Box::new(move || self.run_vae_decode(&z, [1, c, h, w]).map(|_| ())),
        };
        Ok(vec![transformer, vae])
    }
}
