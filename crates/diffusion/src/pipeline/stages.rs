//! The stage driver: one generation in diffusers' named steps (encode the prompt, prepare the
//! latents, the denoising loop, decode), the same for every family. A family supplies the steps
//! (`GenerationSteps`); the stage timing, progress events, cancel checks, step syncs, offload
//! between stages and the decode's one-image-at-a-time handling are written here once.

use std::time::Instant;

use burn::prelude::*;

use super::steps::run_steps;
use super::{
    observe, CancelToken, GenerateRequest, Generated, GeneratedImage, Placement, Progress,
    StageTimings, StepSync, B,
};
use crate::device::SelectedDevice;
use crate::error::Result;
use crate::scheduler::SchedulerKind;

/// What `prepare_latents` made: the loop's state and what the driver reports of it.
pub(crate) struct Prepared<L> {
    /// The latents and whatever each step reads beside them (schedule, noise, positions,
    /// reference tokens).
    pub latents: L,
    /// Steps the loop runs (image-to-image runs the schedule's tail).
    pub steps: usize,
    /// Seconds spent encoding pictures (image-to-image's start, reference pictures), bounded by
    /// device syncs; 0 where there were none.
    pub encode_seconds: f64,
    pub scheduler: SchedulerKind,
}

/// A family's steps of one generation. The driver calls them in order, once each but
/// `denoise_step` (once per step) and `decode` (once per image of the batch).
pub(crate) trait GenerationSteps {
    /// The prompt's conditioning as the denoiser takes it (both guidance rows where guided).
    type Prompt;
    type Latents;
    /// The denoiser while the loop holds it on the device.
    type Denoiser<'a>
    where
        Self: 'a;

    fn device(&self) -> &SelectedDevice;
    fn placement(&self) -> &Placement;
    fn encode_prompt(&self, request: &GenerateRequest) -> Result<Self::Prompt>;
    fn prepare_latents(
        &self,
        request: &GenerateRequest,
        prompt: &Self::Prompt,
    ) -> Result<Prepared<Self::Latents>>;
    /// The denoiser on the device (brought back where an earlier image offloaded it).
    fn denoiser(&self) -> Self::Denoiser<'_>;
    /// Step `k` of the loop: the denoiser's prediction(s), guidance, the scheduler's step.
    fn denoise_step(
        &self,
        denoiser: &Self::Denoiser<'_>,
        request: &GenerateRequest,
        prompt: &Self::Prompt,
        latents: &mut Self::Latents,
        k: usize,
    ) -> Result<()>;
    /// Moves the denoiser's weights to host memory (the placement's `denoiser_offload`).
    fn offload_denoiser(&self);
    /// Image `n` of the batch, decoded.
    fn decode(&self, latents: &Self::Latents, n: usize) -> Result<GeneratedImage>;
}

/// Classifier-free guidance as diffusers' SD and FLUX pipelines combine the two predictions:
/// `uncond + scale * (cond - uncond)`.
pub(crate) fn classifier_free<const D: usize>(
    uncond: Tensor<B, D>,
    cond: Tensor<B, D>,
    scale: f64,
) -> Tensor<B, D> {
    uncond.clone() + (cond - uncond) * scale
}

/// Runs one generation through `family`'s steps, waiting for the device where `sync` says.
/// Time spent in `progress` (the caller's drawing, events, allocator and telemetry reads) is not
/// model work: it is left out of every total it falls inside.
pub(crate) fn generate<S: GenerationSteps>(
    family: &S,
    request: &GenerateRequest,
    sync: StepSync,
    progress: &mut dyn FnMut(&Progress),
    cancel: &CancelToken,
) -> Result<Generated> {
    let device = family.device();
    let placement = family.placement();
    let mut timings = StageTimings::default();
    device.sync()?;
    let start = Instant::now();

    let prompt = family.encode_prompt(request)?;
    device.sync()?;
    timings.text_encoder = start.elapsed().as_secs_f64();
    let mut observing = observe(
        progress,
        &Progress::TextEncoded {
            seconds: timings.text_encoder,
        },
    );

    let Prepared {
        mut latents,
        steps,
        encode_seconds,
        scheduler,
    } = family.prepare_latents(request, &prompt)?;
    timings.vae_encode = encode_seconds;

    let denoiser = family.denoiser();
    let loop_times = run_steps(device, sync, steps, progress, cancel, |k| {
        family.denoise_step(&denoiser, request, &prompt, &mut latents, k)
    })?;
    timings.denoiser_steps = loop_times.steps;
    timings.denoiser_total = loop_times.total;
    timings.steps = steps;
    observing += loop_times.observing;

    // One image at a time, as diffusers' VAE slicing does: the same numbers as one batched
    // decode, with a batch's peak memory no higher than one image's.
    let vae_start = Instant::now();
    drop(denoiser);
    if placement.denoiser_offload {
        family.offload_denoiser();
    }
    if placement.release_memory_between_stages {
        device.release_unused_memory();
    }
    let images = (0..request.batch)
        .map(|n| family.decode(&latents, n))
        .collect::<Result<Vec<_>>>()?;
    timings.vae_decode = vae_start.elapsed().as_secs_f64();
    timings.total = (start.elapsed() - observing).as_secs_f64();
    progress(&Progress::Decoded {
        seconds: timings.vae_decode,
    });
    Ok(Generated {
        images,
        timings,
        scheduler,
    })
}
