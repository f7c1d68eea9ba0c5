//! Power and energy over a time window, from one source's samples.

use serde::{Deserialize, Serialize};

use crate::reading::Sample;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerSummary {
    pub avg_w: f64,
    pub min_w: f64,
    pub max_w: f64,
    /// Energy over the whole window: average power x window length.
    pub energy_j: f64,
    /// "energy counter" when the average comes from the counter's difference, else "power samples".
    pub method: String,
    pub samples: usize,
}

/// Summarises `source`'s samples with `t0 <= t <= t1`. The average comes from the energy counter
/// where the source has one (exact, independent of the sampling rate), else from the trapezoid
/// integral of the power samples; min and max are over the power samples.
pub fn summarize_power(
    samples: &[Sample],
    source: &str,
    t0: f64,
    t1: f64,
) -> Result<PowerSummary, String> {
    let window: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.source == source && s.t >= t0 && s.t <= t1)
        .collect();
    let powers: Vec<(f64, f64)> = window
        .iter()
        .filter_map(|s| s.reading.power_w.map(|p| (s.t, p)))
        .filter(|(_, p)| p.is_finite() && *p >= 0.0)
        .collect();
    let energies: Vec<(f64, f64)> = window
        .iter()
        .filter_map(|s| s.reading.energy_j.map(|e| (s.t, e)))
        .collect();
    let duration = t1 - t0;
    let too_short = || {
        format!(
            "the window lasted {duration:.2} s and held {} reading(s) of {source}; at least two are needed",
            window.len()
        )
    };
    let (avg_w, method) = match (energies.first(), energies.last()) {
        (Some(&(ta, ea)), Some(&(tb, eb))) if tb > ta && eb >= ea => {
            ((eb - ea) / (tb - ta), "energy counter")
        }
        _ => {
            if powers.len() < 2 {
                return Err(too_short());
            }
            let area: f64 = powers
                .windows(2)
                .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
                .sum();
            let span = powers.last().unwrap().0 - powers[0].0;
            if span <= 0.0 {
                return Err(too_short());
            }
            (area / span, "power samples")
        }
    };
    let (min_w, max_w) = if powers.is_empty() {
        (avg_w, avg_w)
    } else {
        powers
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &(_, p)| {
                (lo.min(p), hi.max(p))
            })
    };
    Ok(PowerSummary {
        avg_w,
        min_w,
        max_w,
        energy_j: avg_w * duration,
        method: method.into(),
        samples: window.len(),
    })
}

/// The largest VRAM use `source` reported in the window.
pub fn peak_vram(samples: &[Sample], source: &str, t0: f64, t1: f64) -> Option<u64> {
    samples
        .iter()
        .filter(|s| s.source == source && s.t >= t0 && s.t <= t1)
        .filter_map(|s| s.reading.vram_used_bytes)
        .max()
}

/// Every distinct throttle reason `source` reported in the window.
pub fn throttle_reasons(samples: &[Sample], source: &str, t0: f64, t1: f64) -> Vec<String> {
    let mut reasons: Vec<String> = samples
        .iter()
        .filter(|s| s.source == source && s.t >= t0 && s.t <= t1)
        .flat_map(|s| s.reading.throttle.iter().cloned())
        .collect();
    reasons.sort();
    reasons.dedup();
    reasons
}
