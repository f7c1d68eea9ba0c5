//! The run's image phases: the untimed warm-up, the timed images (the scored region), and the
//! diagnostic image that times each step where the timed ones queue their steps.

use sdbench_diffusion::io::image::RgbImage;
use sdbench_diffusion::{
    family_of, CancelToken, DiffusionError, GenerateRequest, Generated, InitialNoise, ModelSource,
    Pipeline, Progress, StepSync,
};

use super::telemetry::{LiveTelemetry, RunTelemetry};
use crate::checks::check_image;
use crate::error::{BenchError, Result};
use crate::result::{
    ImageRecord, ImageResult, Stages, StepTiming, Window, STEP_TIMING_DIAGNOSTIC_IMAGE,
    STEP_TIMING_EVERY_STEP,
};
use crate::workload::{Workload, MAX_IMAGES};
use sdbench_session::events::Event;
use sdbench_session::vram_report::{VramPhase, VramRecorder, VramReport};
use std::time::{Duration, Instant};

/// The generation the result's VRAM report describes.
const VRAM_REPORT_GENERATION: &str =
    "after loading, then the per-step timing image (prompt 1, a device sync after every step)";

/// Whether the timed images queue their steps (a device that queues work), so that per-step
/// times need the diagnostic image.
pub(super) fn needs_diagnostic_image(pipeline: &Pipeline) -> bool {
    StepSync::for_timing(&pipeline.device) == StepSync::StageEdges
}

/// Whether a model of `source`'s family can run the workload's images at all, known before its
/// weights are read: a FLUX.2 model under an SD workload (or the other way round) is refused
/// before loading, naming the standard workloads made for its family.
pub(super) fn check_family_can_run(
    source: &ModelSource,
    workload: &Workload,
    model: &str,
) -> Result<()> {
    let family = family_of(source)?;
    let Err(problem) = family.check_request(&request(workload, 0)) else {
        return Ok(());
    };
    let own: Vec<&str> = family
        .architectures
        .iter()
        .filter_map(|&f| Workload::names_for(f))
        .collect();
    let own = match own.is_empty() {
        true => "no standard workload is made for its family".to_string(),
        false => format!("its family's: --workload {}", own.join(" or --workload ")),
    };
    Err(BenchError::Workload(format!(
        "the {} workload cannot run on {model}, a {} model: {problem}; {own}",
        workload.name, family.name,
    )))
}

/// Whether the loaded model can run the workload's images at all (its family's scheduler, sizes
/// and options), before the baseline and the warm-up spend time: a FLUX.2 model under an SD
/// workload is refused here with the workload made for its family.
pub(super) fn check_model_can_run(
    pipeline: &Pipeline,
    workload: &Workload,
    model: &str,
) -> Result<()> {
    let Err(problem) = pipeline.validate(&request(workload, 0)) else {
        return Ok(());
    };
    let family = pipeline.info.family;
    let own = Workload::names_for(family)
        .filter(|_| workload.preset.family() != family)
        .map(|name| format!("; its family's is --workload {name}"))
        .unwrap_or_default();
    Err(BenchError::Workload(format!(
        "the {} workload cannot run on {model}, a {} model: {problem}{own}",
        workload.name,
        family.name()
    )))
}

/// One untimed image of prompt 1, synced after every step: it compiles kernels and settles
/// autotuning, and its second settled step gives the run's estimate. Returns its seconds.
pub(super) fn warm_up(
    pipeline: &Pipeline,
    workload: &Workload,
    telemetry: &RunTelemetry,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<f64> {
    let start = std::time::Instant::now();
    let total = workload.prompts.len();
    let mut live = LiveTelemetry::new(telemetry);
    observer(&Event::ImageStarted {
        index: 0,
        total,
        warmup: true,
    });
    let images = total + usize::from(needs_diagnostic_image(pipeline));
    let mut estimate = EstimateFromWarmup::default();
    let warm = generate(
        pipeline,
        workload,
        0,
        StepSync::EveryStep,
        cancel,
        &mut |step, steps, seconds| {
            observer(&Event::Step {
                index: 0,
                total,
                step,
                steps,
                seconds,
                warmup: true,
            });
            let compiled = sdbench_diffusion::kernel_cache::stats().compiled;
            if let Some(seconds) = estimate.after_step(step, steps, seconds, images, compiled) {
                observer(&Event::Estimate { seconds });
            }
            live.send(observer);
        },
        &mut |_| {},
    )?;
    observer(&Event::ImageFinished {
        index: 0,
        total,
        seconds: warm.timings.total,
        valid: true,
        warmup: true,
    });
    Ok(start.elapsed().as_secs_f64())
}

/// The timed images and what the scores are computed from.
pub(super) struct Timed {
    pub results: Vec<ImageResult>,
    /// The first pass's images (later passes repeat its prompts and seeds).
    pub images: Vec<RgbImage>,
    pub window: Window,
    /// The allocator's largest reservation at the step edges (`None` without an allocator).
    pub allocator_peak: Option<u64>,
    /// Timed image 1's denoising loop, against which the diagnostic image prices per-step syncs.
    pub first_loop_seconds: Option<f64>,
}

/// What the timed passes share while they run.
struct TimedRun<'a> {
    pipeline: &'a Pipeline,
    workload: &'a Workload,
    sync: StepSync,
    live: LiveTelemetry<'a>,
    timed: Timed,
}

/// Every prompt of the workload, each checked, between two device syncs; with a minimum
/// duration, the prompts again in further whole passes until it has passed (or the next pass
/// would exceed `MAX_IMAGES`).
pub(super) fn timed_images(
    pipeline: &Pipeline,
    workload: &Workload,
    min_duration: Option<Duration>,
    telemetry: &RunTelemetry,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<Timed> {
    let dev = &pipeline.device;
    let per_pass = workload.prompts.len();
    let mut run = TimedRun {
        pipeline,
        workload,
        sync: StepSync::for_timing(dev),
        live: LiveTelemetry::new(telemetry),
        timed: Timed {
            results: Vec::with_capacity(per_pass),
            images: Vec::with_capacity(per_pass),
            window: Window {
                start: 0.0,
                end: 0.0,
            },
            allocator_peak: None,
            first_loop_seconds: None,
        },
    };
    dev.sync()?;
    let start = telemetry.now();
    let clock = Instant::now();
    for pass in 0.. {
        if pass > 0 {
            let Some(min) = min_duration else { break };
            let elapsed = clock.elapsed();
            let next_total = (pass + 1) * per_pass * workload.batch;
            if elapsed >= min {
                break;
            }
            if next_total > MAX_IMAGES {
                observer(&Event::note(format!(
                    "stopped after {} timed images in {:.1} s, short of the minimum {:.0} s: another pass of the prompts would pass {MAX_IMAGES} images",
                    pass * per_pass * workload.batch,
                    elapsed.as_secs_f64(),
                    min.as_secs_f64()
                )));
                break;
            }
            observer(&Event::note(format!(
                "pass {} of the prompts: {:.1} s of the minimum {:.0} s timed so far",
                pass + 1,
                elapsed.as_secs_f64(),
                min.as_secs_f64()
            )));
        }
        for i in 0..per_pass {
            run.time_one(i, pass, (pass + 1) * per_pass, observer, cancel)?;
        }
    }
    run.timed.window = Window {
        start,
        end: telemetry.now(),
    };
    Ok(run.timed)
}

impl TimedRun<'_> {
    /// Prompt `i` in pass `pass`, timed and checked; `total`: the timed generations so far
    /// planned, which progress counts against.
    fn time_one(
        &mut self,
        i: usize,
        pass: usize,
        total: usize,
        observer: &mut dyn FnMut(&Event),
        cancel: &CancelToken,
    ) -> Result<()> {
        let dev = &self.pipeline.device;
        let index = pass * self.workload.prompts.len() + i + 1;
        observer(&Event::ImageStarted {
            index,
            total,
            warmup: false,
        });
        let (timed, live) = (&mut self.timed, &mut self.live);
        let generated = generate(
            self.pipeline,
            self.workload,
            i,
            self.sync,
            cancel,
            &mut |step, steps, seconds| {
                // Pools rarely shrink, so sampling at step edges catches the peak reservation.
                if let Some(m) = dev.allocator_memory() {
                    timed.allocator_peak = timed.allocator_peak.max(Some(m.reserved));
                }
                observer(&Event::Step {
                    index,
                    total,
                    step,
                    steps,
                    seconds,
                    warmup: false,
                });
                live.send(observer);
            },
            &mut |_| {},
        )?;
        let t = &generated.timings;
        timed.first_loop_seconds.get_or_insert(t.denoiser_total);
        let checks: Vec<_> = generated
            .images
            .iter()
            .map(|image| check_image(&image.image, image.non_finite))
            .collect();
        observer(&Event::ImageFinished {
            index,
            total,
            seconds: t.total,
            valid: checks.iter().all(|c| c.valid),
            warmup: false,
        });
        // A batch's images share its time: each records an equal part, so the mean over
        // images is the time per image and images per minute counts every image.
        let share = 1.0 / generated.images.len() as f64;
        for (batch_index, check) in checks.into_iter().enumerate() {
            timed.results.push(ImageResult {
                prompt_index: i,
                seed: self.workload.prompts[i].seed,
                batch_index,
                pass,
                clip_score: None,
                seconds: t.total * share,
                stages: Stages::from(t).scaled(share),
                step_seconds: t.denoiser_steps.clone(),
                steps_per_second: if t.denoiser_total > 0.0 {
                    t.steps as f64 / t.denoiser_total
                } else {
                    0.0
                },
                image: ImageRecord { file: None, check },
            });
        }
        if pass == 0 {
            timed
                .images
                .extend(generated.images.into_iter().map(|i| i.image));
        }
        Ok(())
    }
}

/// Per-step times: the timed images' own where each step was synced; otherwise one more image of
/// prompt 1 after the timed region, synced after every step (not scored), which also records the
/// VRAM report, going on from the phase recorded after loading.
pub(super) fn step_timing(
    pipeline: &Pipeline,
    workload: &Workload,
    first_loop_seconds: Option<f64>,
    vram_after_load: Option<VramPhase>,
    observer: &mut dyn FnMut(&Event),
    cancel: &CancelToken,
) -> Result<(StepTiming, Option<VramReport>)> {
    if !needs_diagnostic_image(pipeline) {
        let timing = StepTiming {
            method: STEP_TIMING_EVERY_STEP.into(),
            step_seconds: Vec::new(),
            sync_cost_ratio: None,
        };
        return Ok((timing, None));
    }
    observer(&Event::note(
        "timing each step: one more image of prompt 1, with a device sync after every step (not scored)",
    ));
    let dev = &pipeline.device;
    let mut vram = vram_after_load
        .and_then(|load| VramRecorder::resume(|| dev.allocator_memory(), vec![load]));
    let synced = generate(
        pipeline,
        workload,
        0,
        StepSync::EveryStep,
        cancel,
        &mut |_, _, _| {},
        &mut |event| {
            if let Some(recorder) = vram.as_mut() {
                recorder.observe(event)
            }
        },
    )?;
    let timing = StepTiming {
        method: STEP_TIMING_DIAGNOSTIC_IMAGE.into(),
        sync_cost_ratio: first_loop_seconds
            .filter(|&queued| queued > 0.0)
            .map(|queued| synced.timings.denoiser_total / queued),
        step_seconds: synced.timings.denoiser_steps,
    };
    Ok((timing, vram.map(|r| r.finish(VRAM_REPORT_GENERATION))))
}

/// The run's remaining time, from the first warm-up step after the first that compiled no GPU
/// kernel (the first step, and any that compiles, carries one-off costs): sent once.
#[derive(Default)]
struct EstimateFromWarmup {
    sent: bool,
    compiled: Option<u64>,
}

impl EstimateFromWarmup {
    /// After warm-up step `step` of `steps` took `seconds`, followed by `images` timed images;
    /// `compiled`: the kernels compiled in the process so far.
    fn after_step(
        &mut self,
        step: usize,
        steps: usize,
        seconds: Option<f64>,
        images: usize,
        compiled: u64,
    ) -> Option<f64> {
        let compiling = self.compiled.is_some_and(|before| compiled > before);
        self.compiled = Some(compiled);
        let seconds = seconds.filter(|_| step >= 2 && !compiling && !self.sent)?;
        self.sent = true;
        Some(remaining_seconds(step, steps, seconds, images))
    }
}

/// The seconds left in a run after warm-up step `step` of `steps` took `seconds`, followed by
/// `images` timed images. Text encoding and decoding are left out, so it errs short.
fn remaining_seconds(step: usize, steps: usize, seconds: f64, images: usize) -> f64 {
    seconds * ((steps - step) + images * steps) as f64
}

/// The workload's request for its prompt `index`, with its seed.
fn request(workload: &Workload, index: usize) -> GenerateRequest {
    let spec = &workload.prompts[index];
    GenerateRequest {
        prompt: spec.prompt.clone(),
        negative_prompt: workload.negative_prompt.clone(),
        steps: workload.steps,
        guidance_scale: workload.guidance,
        scheduler: Some(workload.scheduler),
        width: workload.width,
        height: workload.height,
        noise: InitialNoise::Seed(spec.seed),
        batch: workload.batch,
        init_image: None,
        reference_images: Vec::new(),
        guidance_options: Default::default(),
    }
}

/// Prompt `index` of the workload.
fn generate(
    pipeline: &Pipeline,
    workload: &Workload,
    index: usize,
    sync: StepSync,
    cancel: &CancelToken,
    on_step: &mut dyn FnMut(usize, usize, Option<f64>),
    on_event: &mut dyn FnMut(&Progress),
) -> Result<Generated> {
    let request = request(workload, index);
    let mut progress = |p: &Progress| {
        on_event(p);
        if let Progress::Step {
            index,
            total,
            seconds,
        } = p
        {
            on_step(*index, *total, *seconds)
        }
    };
    pipeline
        .generate_with_sync(&request, sync, &mut progress, cancel)
        .map_err(|e| match e {
            DiffusionError::Cancelled => BenchError::Cancelled,
            other => other.into(),
        })
}

#[cfg(test)]
mod tests {
    use super::{remaining_seconds, EstimateFromWarmup};

    #[test]
    fn the_estimate_comes_once_from_the_second_warm_up_step() {
        let mut estimate = EstimateFromWarmup::default();
        assert_eq!(estimate.after_step(1, 30, Some(9.0), 5, 10), None);
        assert_eq!(
            estimate.after_step(2, 30, Some(1.5), 5, 10),
            Some(1.5 * 178.0)
        );
        assert_eq!(estimate.after_step(3, 30, Some(1.5), 5, 10), None);
        assert_eq!(remaining_seconds(2, 2, 0.5, 3), 3.0);
        let mut unsynced = EstimateFromWarmup::default();
        assert_eq!(unsynced.after_step(2, 30, None, 5, 0), None);
    }

    #[test]
    fn the_estimate_skips_steps_that_compiled_kernels() {
        let mut estimate = EstimateFromWarmup::default();
        assert_eq!(estimate.after_step(1, 30, Some(60.0), 5, 120), None);
        // Step 2 compiled 40 more kernels (a new shape, an autotune): its time is not the rate.
        assert_eq!(estimate.after_step(2, 30, Some(20.0), 5, 160), None);
        assert_eq!(estimate.after_step(3, 30, Some(1.0), 5, 160), Some(177.0));
        assert_eq!(estimate.after_step(4, 30, Some(1.0), 5, 160), None);
    }
}
