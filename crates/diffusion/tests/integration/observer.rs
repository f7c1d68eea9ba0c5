//! Nothing but model work inside the clock: time spent in the caller's progress handler (the CLI's
//! drawing, the app's events, the bench's allocator and telemetry reads) is left out of the stage
//! totals a benchmark scores.

use std::time::{Duration, Instant};

use sdbench_diffusion::device::select;
use sdbench_diffusion::pipeline::StageTimings;
use sdbench_diffusion::{
    BackendKind, BackendRequest, CancelToken, GenerateRequest, ModelSource, Pipeline, Precision,
    Progress, StepSync,
};

use crate::common;

#[test]
fn a_slow_progress_handler_stays_outside_the_timings() {
    let device = select(BackendRequest::Cpu).unwrap();
    let model = ModelSource::Folder(common::fixtures().join("tiny-sd"));
    let pipe = Pipeline::load(&model, device, Some(Precision::F32)).unwrap();
    let request = GenerateRequest {
        width: 32,
        height: 32,
        steps: 4,
        ..GenerateRequest::new("a cat")
    };
    let delay = Duration::from_millis(100);
    let mut events = 0;
    let wall = Instant::now();
    let out = pipe
        .generate(
            &request,
            &mut |_| {
                events += 1;
                std::thread::sleep(delay);
            },
            &CancelToken::new(),
        )
        .unwrap();
    let wall = wall.elapsed().as_secs_f64();
    let t: StageTimings = out.timings;
    // Text encoded, each step (PNDM runs five for four), decoded: all but the last event fall
    // inside the image's clock, and the steps' events inside the UNet loop's. Bounds that hold
    // however loaded the machine is: the clock misses at least the handler's sleeps.
    assert_eq!(t.denoiser_steps.len(), 5);
    assert_eq!(events, 7);
    let inside = 6.0 * delay.as_secs_f64();
    assert!(
        wall - t.total >= inside,
        "image total {:.3} s of a {wall:.3} s call counts part of the handler's {inside:.3} s",
        t.total
    );
    // The loop total is its steps plus bookkeeping, not the five 100 ms waits between them.
    let steps: f64 = t.denoiser_steps.iter().sum();
    assert!(
        t.denoiser_total >= steps && t.denoiser_total - steps < 0.25,
        "UNet loop {:.3} s against its steps' {steps:.3} s",
        t.denoiser_total
    );
}

/// Steps queued without per-step syncs: the same image, no per-step times, the loop's step
/// events after its closing sync (so a slow observer never holds up the queue), and a handler's
/// time outside the totals. On Vulkan where present (a device that queues work), else the CPU.
#[test]
fn queued_steps_make_the_same_image_and_report_after_the_loop() {
    let require_vulkan = std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() == Ok("1");
    let device = match select(BackendRequest::Vulkan) {
        Ok(device) => device,
        Err(e) => {
            assert!(!require_vulkan, "no Vulkan device: {e}");
            select(BackendRequest::Cpu).unwrap()
        }
    };
    assert_eq!(
        StepSync::for_timing(&device) == StepSync::StageEdges,
        device.kind != BackendKind::Cpu
    );
    let model = ModelSource::Folder(common::fixtures().join("tiny-sd"));
    let pipe = Pipeline::load(&model, device, Some(Precision::F32)).unwrap();
    let request = GenerateRequest {
        width: 32,
        height: 32,
        steps: 4,
        ..GenerateRequest::new("a cat")
    };
    let synced = pipe
        .generate_with_sync(
            &request,
            StepSync::EveryStep,
            &mut |_| {},
            &CancelToken::new(),
        )
        .unwrap();
    let delay = Duration::from_millis(100);
    let mut seen: Vec<String> = Vec::new();
    let wall = Instant::now();
    let queued = pipe
        .generate_with_sync(
            &request,
            StepSync::StageEdges,
            &mut |p| {
                seen.push(match p {
                    Progress::TextEncoded { .. } => "text".into(),
                    Progress::Step { index, seconds, .. } => format!("step {index} {seconds:?}"),
                    Progress::Decoded { .. } => "decoded".into(),
                });
                std::thread::sleep(delay);
            },
            &CancelToken::new(),
        )
        .unwrap();
    let wall = wall.elapsed().as_secs_f64();
    assert_eq!(
        seen,
        [
            "text",
            "step 1 None",
            "step 2 None",
            "step 3 None",
            "step 4 None",
            "step 5 None",
            "decoded"
        ]
    );
    let t = &queued.timings;
    assert!(t.denoiser_steps.is_empty());
    assert_eq!(t.steps, synced.timings.steps);
    assert_eq!(t.steps, 5, "PNDM runs five steps for four");
    assert_eq!(queued.images[0].float_image, synced.images[0].float_image);
    // Six of the seven handler calls fall inside the image's clock; none may count.
    let inside = 6.0 * delay.as_secs_f64();
    assert!(
        wall - t.total >= inside,
        "image total {:.3} s of a {wall:.3} s call counts part of the handler's {inside:.3} s",
        t.total
    );
    assert!(t.denoiser_total > 0.0 && t.denoiser_total < t.total);
}
