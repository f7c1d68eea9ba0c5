//! Whether a run's CLIP score sits far below the other runs of its workload scored by the same
//! CLIP model: pictures that a backend, a quantized file or a wrong kernel turned into
//! plausible-looking noise still time well, but score low. The bar comes from the runs
//! themselves (no fixed floor): their median less `FAR_BELOW` robust standard deviations.

use sdbench_bench::stats::median;
use sdbench_bench::submit::QualityComparison;

/// Other runs needed before a score is judged.
pub const MIN_PEERS: usize = 10;
/// Robust standard deviations (1.4826 x the median absolute deviation) under the median that
/// count as far below.
pub const FAR_BELOW: f64 = 5.0;
/// The least spread assumed, in CLIP score points: runs of one model and workload on different
/// backends differ by about that, so identical scores do not make every small difference far.
pub const MIN_SPREAD: f64 = 1.0;

/// `mean` judged against `others`.
pub fn judge(mean: f64, others: &[f64]) -> QualityComparison {
    let middle = median(others);
    let mut judged = QualityComparison {
        clip_score_mean: mean,
        runs: others.len(),
        median: middle,
        far_below: false,
        not_judged: None,
    };
    let Some(middle) = middle.filter(|_| others.len() >= MIN_PEERS) else {
        judged.not_judged = Some(format!(
            "{} other runs of this workload have a CLIP score of this model; {MIN_PEERS} are needed to judge one",
            others.len()
        ));
        return judged;
    };
    let deviations: Vec<f64> = others.iter().map(|v| (v - middle).abs()).collect();
    let spread = (1.4826 * median(&deviations).unwrap_or(0.0)).max(MIN_SPREAD);
    judged.far_below = mean < middle - FAR_BELOW * spread;
    judged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_score_is_judged_against_enough_others_by_their_spread() {
        let few = judge(5.0, &[30.0; 9]);
        assert!(!few.far_below && few.not_judged.is_some());
        // Ten runs around 30 (spread under the minimum of 1 point): 25 is exactly 5 points under.
        let others: Vec<f64> = (0..10).map(|i| 29.8 + 0.05 * i as f64).collect();
        let m = median(&others).unwrap();
        assert!(!judge(m - 4.9, &others).far_below);
        assert!(judge(m - 5.1, &others).far_below);
        // A wider spread moves the bar: MAD 2 -> robust deviation 2.97, bar 14.8 under.
        let wide = [26.0, 26.0, 28.0, 28.0, 30.0, 30.0, 32.0, 32.0, 34.0, 34.0];
        let j = judge(20.0, &wide);
        assert_eq!(j.median, Some(30.0));
        assert!(!j.far_below);
        assert!(judge(15.0, &wide).far_below);
        assert!(j.not_judged.is_none());
    }
}
