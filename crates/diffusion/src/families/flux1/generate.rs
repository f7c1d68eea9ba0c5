//! One FLUX.1 generation's steps for the stage driver: the prompt's conditioning, the seeded
//! latents packed into tokens with their schedule and RoPE tables, each step's transformer call
//! ([dev]'s guidance scale embedded in it), and the flow-matching Euler step.

use std::sync::MutexGuard;

use burn::prelude::*;
use burn::tensor::DType;

use super::latents::{pack, unpack};
use super::pipeline::Flux1Pipeline;
use super::transformer::{Flux1Transformer, Rope};
use crate::device::SelectedDevice;
use crate::error::Result;
use crate::nn::modulation::half_round;
use crate::pipeline::decode::decoded_image;
use crate::pipeline::offload::Slot;
use crate::pipeline::stages::{classifier_free, GenerationSteps, Prepared};
use crate::pipeline::{GenerateRequest, GeneratedImage, Placement, B};
use crate::scheduler::flow_match::FlowSchedule;
use crate::scheduler::SchedulerKind;

/// One FLUX.1 generation's steps for the stage driver.
pub(super) struct Flux1Run<'a>(pub(super) &'a Flux1Pipeline);

/// The prompt's conditioning, a row per image, and under true CFG the negative prompt's.
pub(super) struct Flux1Prompt {
    states: Tensor<B, 3>,
    pooled: Tensor<B, 2>,
    negative: Option<(Tensor<B, 3>, Tensor<B, 2>)>,
}

pub(super) struct Flux1Latents {
    /// Packed tokens [batch, (h/2)(w/2), 4C] (f32).
    tokens: Tensor<B, 3>,
    /// The unpacked latents' height and width.
    size: (usize, usize),
    schedule: FlowSchedule,
    /// The RoPE tables of the text's and image's positions, made at the first step.
    rope: Option<Rope<B>>,
}

impl GenerationSteps for Flux1Run<'_> {
    type Prompt = Flux1Prompt;
    type Latents = Flux1Latents;
    type Denoiser<'a>
        = MutexGuard<'a, Slot<Flux1Transformer<B>>>
    where
        Self: 'a;

    fn device(&self) -> &SelectedDevice {
        &self.0.device
    }

    fn placement(&self) -> &Placement {
        &self.0.info.placement
    }

    fn encode_prompt(&self, request: &GenerateRequest) -> Result<Flux1Prompt> {
        let batch = request.batch;
        let (states, pooled) = self.0.encode_prompt(&request.prompt)?;
        let negative = match request.runs_true_cfg() {
            true => {
                let (states, pooled) = self.0.encode_prompt(&request.negative_prompt)?;
                Some((states.repeat_dim(0, batch), pooled.repeat_dim(0, batch)))
            }
            false => None,
        };
        Ok(Flux1Prompt {
            states: states.repeat_dim(0, batch),
            pooled: pooled.repeat_dim(0, batch),
            negative,
        })
    }

    fn prepare_latents(
        &self,
        request: &GenerateRequest,
        _prompt: &Flux1Prompt,
    ) -> Result<Prepared<Flux1Latents>> {
        let pipe = self.0;
        let shape = pipe.latent_shape(request);
        let (latents, _) = request.noise.latents(shape, &pipe.device.device);
        let size = (shape[2], shape[3]);
        Ok(Prepared {
            latents: Flux1Latents {
                tokens: pack(latents),
                size,
                schedule: pipe.schedule(request.steps, size),
                rope: None,
            },
            steps: request.steps,
            encode_seconds: 0.0,
            scheduler: SchedulerKind::FlowMatchEuler,
        })
    }

    fn denoiser(&self) -> MutexGuard<'_, Slot<Flux1Transformer<B>>> {
        self.0.transformer.on_device(&self.0.device)
    }

    fn denoise_step(
        &self,
        transformer: &MutexGuard<'_, Slot<Flux1Transformer<B>>>,
        request: &GenerateRequest,
        prompt: &Flux1Prompt,
        state: &mut Flux1Latents,
        i: usize,
    ) -> Result<()> {
        let pipe = self.0;
        let transformer = &transformer.module;
        let dtype = pipe.info.placement.denoiser.dtype();
        let rope = state.rope.get_or_insert_with(|| {
            transformer.rope(&pipe.positions(state.size), dtype, &pipe.device.device)
        });
        // diffusers hands the model `t.to(latents.dtype) / 1000` (computed in that dtype).
        let t = state.schedule.timesteps[i];
        let sigma = half_round(half_round(t, dtype) / 1000.0, dtype);
        let guidance = pipe.takes_guidance.then_some(request.guidance_scale as f32);
        let tokens = state.tokens.clone().cast(dtype);
        let velocity = match &prompt.negative {
            // One call on [negative; prompt] rows (diffusers makes two; each row is its own).
            Some((negative, negative_pooled)) => {
                let batch = tokens.dims()[0];
                let both = transformer
                    .forward(
                        Tensor::cat(vec![tokens.clone(), tokens], 0),
                        Tensor::cat(vec![negative.clone(), prompt.states.clone()], 0),
                        Tensor::cat(vec![negative_pooled.clone(), prompt.pooled.clone()], 0),
                        sigma,
                        guidance,
                        rope,
                    )
                    .cast(DType::F32);
                let uncond = both.clone().narrow(0, 0, batch);
                let cond = both.narrow(0, batch, batch);
                let scale = request.guidance_options.true_cfg.unwrap_or(1.0);
                classifier_free(uncond, cond, scale)
            }
            None => transformer
                .forward(
                    tokens,
                    prompt.states.clone(),
                    prompt.pooled.clone(),
                    sigma,
                    guidance,
                    rope,
                )
                .cast(DType::F32),
        };
        state.tokens = state.tokens.clone() + velocity * state.schedule.step_size(i);
        Ok(())
    }

    fn offload_denoiser(&self) {
        self.0.transformer.offload(&self.0.device, &self.0.cpu);
    }

    fn decode(&self, state: &Flux1Latents, n: usize) -> Result<GeneratedImage> {
        let (h, w) = state.size;
        let latents = unpack(state.tokens.clone().narrow(0, n, 1), h, w);
        decoded_image(self.0.decode(latents))
    }
}
