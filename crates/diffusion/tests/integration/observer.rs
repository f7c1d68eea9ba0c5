//! Nothing but model work inside the clock: time spent in the caller's progress handler (the CLI's
//! drawing, the app's events, the bench's allocator and telemetry reads) is left out of the stage
//! totals a benchmark scores.

use std::time::Duration;

use sdbench_diffusion::device::select;
use sdbench_diffusion::pipeline::StageTimings;
use sdbench_diffusion::{
    BackendRequest, CancelToken, GenerateRequest, ModelSource, Pipeline, Precision,
};

use crate::common;

#[test]
fn a_slow_progress_handler_does_not_change_the_timings() {
    let device = select(BackendRequest::Cpu).unwrap();
    let model = ModelSource::Folder(common::fixtures().join("tiny-sd"));
    let pipe = Pipeline::load(&model, device, Some(Precision::F32)).unwrap();
    let request = GenerateRequest {
        width: 32,
        height: 32,
        steps: 4,
        ..GenerateRequest::new("a cat")
    };
    let run = |delay: Duration| -> (StageTimings, usize) {
        let mut events = 0;
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
        (out.timings, events)
    };
    run(Duration::ZERO);
    let (quick, _) = run(Duration::ZERO);
    let (slow, events) = run(Duration::from_millis(50));
    // Text encoded, each step (PNDM runs five for four), decoded: all but the last fall inside the
    // totals (300 ms if counted, 250 ms of it inside the UNet loop); allow 60 ms of noise.
    assert_eq!(slow.unet_steps.len(), 5);
    assert_eq!(events, 7);
    assert!(
        slow.total - quick.total < 0.06,
        "total {:.3} s with a 50 ms handler against {:.3} s",
        slow.total,
        quick.total
    );
    assert!(
        slow.unet_total - quick.unet_total < 0.06,
        "UNet loop {:.3} s with a 50 ms handler against {:.3} s",
        slow.unet_total,
        quick.unet_total
    );
    let steps: f64 = slow.unet_steps.iter().sum();
    assert!(slow.unet_total >= steps && slow.unet_total - steps < 0.05);
}
