//! The denoising loop's timing and events, the same for every family: a cancel check before each
//! step, a device sync after each step (`StepSync::EveryStep`) or only after the loop
//! (`StageEdges`), step events, and the observer's own time left out of the loop's total.

use std::time::{Duration, Instant};

use crate::device::SelectedDevice;
use crate::error::{DiffusionError, Result};
use crate::pipeline::{observe, CancelToken, Progress, StepSync};

/// What the loop measured.
pub(crate) struct LoopTimes {
    /// Per-step seconds with `EveryStep` (empty otherwise).
    pub steps: Vec<f64>,
    /// The loop's seconds without the observer's.
    pub total: f64,
    /// Seconds the observer took, inside and after the loop.
    pub observing: Duration,
}

/// Runs `step(k)` for `k` in 0..`total`, then waits for the device.
pub(crate) fn run_steps(
    device: &SelectedDevice,
    sync: StepSync,
    total: usize,
    progress: &mut dyn FnMut(&Progress),
    cancel: &CancelToken,
    mut step: impl FnMut(usize) -> Result<()>,
) -> Result<LoopTimes> {
    let start = Instant::now();
    let mut times = LoopTimes {
        steps: Vec::new(),
        total: 0.0,
        observing: Duration::ZERO,
    };
    // StageEdges: step events wait for the loop's closing sync.
    let mut deferred = Vec::new();
    for k in 0..total {
        if cancel.is_cancelled() {
            return Err(DiffusionError::Cancelled);
        }
        let step_start = Instant::now();
        step(k)?;
        let event = |seconds| Progress::Step {
            index: k + 1,
            total,
            seconds,
        };
        match sync {
            StepSync::EveryStep => {
                device.sync()?;
                let seconds = step_start.elapsed().as_secs_f64();
                times.steps.push(seconds);
                // The device is idle while the observer runs: its time is left out.
                times.observing += observe(progress, &event(Some(seconds)));
            }
            StepSync::StageEdges => deferred.push(event(None)),
        }
    }
    device.sync()?;
    times.total = (start.elapsed() - times.observing).as_secs_f64();
    for event in &deferred {
        times.observing += observe(progress, event);
    }
    if cancel.is_cancelled() {
        return Err(DiffusionError::Cancelled);
    }
    Ok(times)
}
