//! Scores from raw per-image timings and telemetry samples.

use sdbench_telemetry::power::{peak_vram, summarize_power, throttle_reasons};
use sdbench_telemetry::{summarize_hardware, Sample, SourceInfo};

use crate::result::{ImageResult, Power, Scores, Vram, Window};
use crate::stats::{median, Stats};

/// Everything the scores are computed from.
pub struct ScoreInputs<'a> {
    pub results: &'a [ImageResult],
    pub samples: &'a [Sample],
    pub baseline: Window,
    pub timed: Window,
    /// The benchmark device's telemetry source, or why there is none.
    pub source: Result<&'a SourceInfo, String>,
    pub allocator_peak: Option<u64>,
    pub allocator_reason: Option<String>,
    /// False when any check failed: the run gets no score.
    pub valid: bool,
}

pub fn compute_scores(input: &ScoreInputs) -> Scores {
    let seconds: Vec<f64> = input.results.iter().map(|r| r.seconds).collect();
    let total: f64 = seconds.iter().sum();
    let images_per_minute = if total > 0.0 {
        60.0 * seconds.len() as f64 / total
    } else {
        0.0
    };
    let steps_per_second = median(
        &input
            .results
            .iter()
            .map(|r| r.steps_per_second)
            .collect::<Vec<_>>(),
    )
    .unwrap_or(0.0);
    let seconds_per_image = Stats::of(&seconds).unwrap_or(Stats {
        mean: 0.0,
        median: 0.0,
        stdev: 0.0,
        min: 0.0,
        max: 0.0,
    });
    let (t0, t1) = (input.timed.start, input.timed.end);

    let (power, device_used_peak, device_source, throttle) = match &input.source {
        Ok(source) => {
            let id = source.id.as_str();
            let power = timed_power(input, source, images_per_minute);
            (
                power,
                peak_vram(input.samples, id, t0, t1),
                Some(format!("{} ({})", source.id, source.device)),
                throttle_reasons(input.samples, id, t0, t1),
            )
        }
        Err(reason) => (unavailable_power(reason.clone()), None, None, Vec::new()),
    };
    let vram_peak_bytes = match (input.allocator_peak, device_used_peak) {
        (Some(a), Some(d)) => Some(a.max(d)),
        (a, d) => a.or(d),
    };
    let mut missing = Vec::new();
    if input.allocator_peak.is_none() {
        missing.push(format!(
            "allocator: {}",
            input
                .allocator_reason
                .clone()
                .unwrap_or_else(|| "not reported".into())
        ));
    }
    if device_used_peak.is_none() {
        missing.push(match &input.source {
            Ok(s) => format!("device: {} reports no memory use", s.id),
            Err(reason) => format!("device: {reason}"),
        });
    }
    let hardware = summarize_hardware(
        input.samples,
        input.source.as_ref().map(|s| *s).map_err(String::as_str),
        t0,
        t1,
    );
    Scores {
        score: (input.valid && images_per_minute > 0.0)
            .then(|| (100.0 * images_per_minute).round() as u64),
        images_per_minute,
        seconds_per_image,
        steps_per_second,
        vram_peak_bytes,
        vram: Vram {
            allocator_peak_bytes: input.allocator_peak,
            device_used_peak_bytes: device_used_peak,
            device_source: device_source.filter(|_| device_used_peak.is_some()),
            reason: (!missing.is_empty()).then(|| missing.join("; ")),
        },
        power,
        throttled: hardware.throttled,
        throttle_reasons: throttle,
        hardware,
        quality: None,
    }
}

/// The power `source` drew over the timed region, per image and against the idle baseline.
fn timed_power(input: &ScoreInputs, source: &SourceInfo, images_per_minute: f64) -> Power {
    let (t0, t1) = (input.timed.start, input.timed.end);
    let p = match summarize_power(input.samples, &source.id, t0, t1) {
        Ok(p) => p,
        Err(reason) => return unavailable_power(format!("{}: {reason}", source.id)),
    };
    let images = input.results.len().max(1) as f64;
    let (b0, b1) = (input.baseline.start, input.baseline.end);
    let idle = summarize_power(input.samples, &source.id, b0, b1)
        .ok()
        .map(|b| b.avg_w);
    Power {
        available: true,
        reason: None,
        source: Some(format!("{} ({})", source.id, source.device)),
        method: Some(format!("{}; {}", p.method, source.method)),
        avg_w: Some(p.avg_w),
        min_w: Some(p.min_w),
        max_w: Some(p.max_w),
        idle_w: idle,
        energy_j_per_image: Some(p.energy_j / images),
        images_per_minute_per_watt: (p.avg_w > 0.0).then(|| images_per_minute / p.avg_w),
    }
}

fn unavailable_power(reason: String) -> Power {
    Power {
        available: false,
        reason: Some(reason),
        source: None,
        method: None,
        avg_w: None,
        min_w: None,
        max_w: None,
        idle_w: None,
        energy_j_per_image: None,
        images_per_minute_per_watt: None,
    }
}
