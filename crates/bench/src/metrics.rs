//! Scores from raw per-image timings and telemetry samples.

use sdbench_diffusion::{BackendKind, SelectedDevice};
use sdbench_telemetry::power::{peak_vram, summarize_power, throttle_reasons};
use sdbench_telemetry::{Sample, SourceInfo, Unavailable, Vendor};

use crate::result::{ImageResult, Power, Scores, Vram, Window};
use crate::stats::{median, Stats};

/// Which vendor's power reading describes the device the benchmark ran on: the device's PCI
/// vendor id, else its name (some drivers report no id). Software rasterisers (lavapipe) and the
/// CPU backend run on the CPU package.
pub fn device_vendor(device: &SelectedDevice) -> Option<Vendor> {
    if device.software || device.kind == BackendKind::Cpu {
        return Some(Vendor::Cpu);
    }
    if let Some(vendor) = device.pci_vendor.and_then(Vendor::from_pci_id) {
        return Some(vendor);
    }
    let name = device.name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if has(&["nvidia", "geforce", "quadro", "tesla", "rtx"]) {
        Some(Vendor::Nvidia)
    } else if has(&["amd", "radeon"]) {
        Some(Vendor::Amd)
    } else if has(&["intel"]) {
        Some(Vendor::Intel)
    } else if has(&["apple"]) {
        Some(Vendor::Apple)
    } else {
        None
    }
}

/// The telemetry source for the benchmark device, or why there is none.
pub fn choose_source<'a>(
    vendor: Option<Vendor>,
    device_name: &str,
    sources: &'a [SourceInfo],
    unavailable: &[Unavailable],
) -> Result<&'a SourceInfo, String> {
    let Some(vendor) = vendor else {
        return Err(format!("cannot tell which vendor made `{device_name}`"));
    };
    let candidates: Vec<&SourceInfo> = sources.iter().filter(|s| s.vendor == vendor).collect();
    let lower = device_name.to_ascii_lowercase();
    if let Some(exact) = candidates
        .iter()
        .find(|s| !lower.is_empty() && s.device.to_ascii_lowercase() == lower)
    {
        return Ok(exact);
    }
    if let Some(first) = candidates.first() {
        return Ok(first);
    }
    let reasons: Vec<String> = unavailable
        .iter()
        .filter(|u| u.vendor == vendor)
        .map(|u| format!("{}: {}", u.device, u.reason))
        .collect();
    Err(if reasons.is_empty() {
        format!(
            "no {} power or memory reader found on this system",
            vendor.name()
        )
    } else {
        reasons.join("; ")
    })
}

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
            let power = match summarize_power(input.samples, id, t0, t1) {
                Ok(p) => {
                    let images = input.results.len().max(1) as f64;
                    let idle = summarize_power(
                        input.samples,
                        id,
                        input.baseline.start,
                        input.baseline.end,
                    )
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
                        images_per_minute_per_watt: (p.avg_w > 0.0)
                            .then(|| images_per_minute / p.avg_w),
                    }
                }
                Err(reason) => unavailable_power(format!("{}: {reason}", source.id)),
            };
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
        throttled: !throttle.is_empty(),
        throttle_reasons: throttle,
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
