//! One Stable Diffusion 3 generation's steps for the stage driver: both prompts' conditioning,
//! the seeded latents and schedule, each step's transformer call(s) with classifier-free and
//! skip-layer guidance, and the flow-matching Euler step.

use std::sync::MutexGuard;

use burn::prelude::*;
use burn::tensor::DType;

use super::pipeline::Sd3Pipeline;
use super::transformer::Sd3Transformer;
use crate::device::SelectedDevice;
use crate::error::Result;
use crate::pipeline::decode::decoded_image;
use crate::pipeline::offload::Slot;
use crate::pipeline::stages::{classifier_free, GenerationSteps, Prepared};
use crate::pipeline::{GenerateRequest, GeneratedImage, Placement, B};
use crate::scheduler::flow_match::FlowSchedule;
use crate::scheduler::SchedulerKind;

/// One SD3 generation's steps for the stage driver.
pub(super) struct Sd3Run<'a>(pub(super) &'a Sd3Pipeline);

/// The prompt's conditioning, a row per image: the text states and pooled embedding, and where
/// guided the negative prompt's.
pub(super) struct Sd3Prompt {
    states: Tensor<B, 3>,
    pooled: Tensor<B, 2>,
    negative: Option<(Tensor<B, 3>, Tensor<B, 2>)>,
}

pub(super) struct Sd3Latents {
    /// [batch, C, h, w] (f32).
    latents: Tensor<B, 4>,
    schedule: FlowSchedule,
    /// The transformer's positional table cropped for these latents, at the first step.
    positions: Option<Tensor<B, 2>>,
}

impl GenerationSteps for Sd3Run<'_> {
    type Prompt = Sd3Prompt;
    type Latents = Sd3Latents;
    type Denoiser<'a>
        = MutexGuard<'a, Slot<Sd3Transformer<B>>>
    where
        Self: 'a;

    fn device(&self) -> &SelectedDevice {
        &self.0.device
    }

    fn placement(&self) -> &Placement {
        &self.0.info.placement
    }

    fn encode_prompt(&self, request: &GenerateRequest) -> Result<Sd3Prompt> {
        let batch = request.batch;
        let (states, pooled) = self.0.encode_prompt(&request.prompt)?;
        let negative = match (super::FAMILY.guided)(request.guidance_scale) {
            true => {
                let (states, pooled) = self.0.encode_prompt(&request.negative_prompt)?;
                Some((states.repeat_dim(0, batch), pooled.repeat_dim(0, batch)))
            }
            false => None,
        };
        Ok(Sd3Prompt {
            states: states.repeat_dim(0, batch),
            pooled: pooled.repeat_dim(0, batch),
            negative,
        })
    }

    fn prepare_latents(
        &self,
        request: &GenerateRequest,
        _prompt: &Sd3Prompt,
    ) -> Result<Prepared<Sd3Latents>> {
        let pipe = self.0;
        let shape = pipe.latent_shape(request);
        let (latents, _) = request.noise.latents(shape, &pipe.device.device);
        Ok(Prepared {
            latents: Sd3Latents {
                latents,
                schedule: pipe.schedule(request.steps, (shape[2], shape[3])),
                positions: None,
            },
            steps: request.steps,
            encode_seconds: 0.0,
            scheduler: SchedulerKind::FlowMatchEuler,
        })
    }

    fn denoiser(&self) -> MutexGuard<'_, Slot<Sd3Transformer<B>>> {
        self.0.transformer.on_device(&self.0.device)
    }

    fn denoise_step(
        &self,
        transformer: &MutexGuard<'_, Slot<Sd3Transformer<B>>>,
        request: &GenerateRequest,
        prompt: &Sd3Prompt,
        state: &mut Sd3Latents,
        i: usize,
    ) -> Result<()> {
        let transformer = &transformer.module;
        let t = state.schedule.timesteps[i];
        let latents = state.latents.clone();
        let positions = state
            .positions
            .get_or_insert_with(|| transformer.positions(&latents))
            .clone();
        let prediction = match &prompt.negative {
            Some((negative, negative_pooled)) => {
                // One call on [negative; prompt] rows, as diffusers batches them.
                let batch = latents.dims()[0];
                let both = transformer
                    .forward(
                        Tensor::cat(vec![latents.clone(), latents.clone()], 0),
                        positions.clone(),
                        Tensor::cat(vec![negative.clone(), prompt.states.clone()], 0),
                        Tensor::cat(vec![negative_pooled.clone(), prompt.pooled.clone()], 0),
                        t,
                        &[],
                    )
                    .cast(DType::F32);
                let uncond = both.clone().narrow(0, 0, batch);
                let cond = both.narrow(0, batch, batch);
                let guided = classifier_free(uncond, cond.clone(), request.guidance_scale);
                match request.guidance_options.skip_layers {
                    Some(skip) if skip.applies(i, request.steps) => {
                        let skipped = transformer
                            .forward(
                                latents,
                                positions,
                                prompt.states.clone(),
                                prompt.pooled.clone(),
                                t,
                                &skip.layer_list(),
                            )
                            .cast(DType::F32);
                        guided + (cond - skipped) * skip.scale
                    }
                    _ => guided,
                }
            }
            None => transformer
                .forward(
                    latents,
                    positions,
                    prompt.states.clone(),
                    prompt.pooled.clone(),
                    t,
                    &[],
                )
                .cast(DType::F32),
        };
        state.latents = state.latents.clone() + prediction * state.schedule.step_size(i);
        Ok(())
    }

    fn offload_denoiser(&self) {
        self.0.transformer.offload(&self.0.device, &self.0.cpu);
    }

    fn decode(&self, state: &Sd3Latents, n: usize) -> Result<GeneratedImage> {
        decoded_image(self.0.decode(state.latents.clone().narrow(0, n, 1)))
    }
}
