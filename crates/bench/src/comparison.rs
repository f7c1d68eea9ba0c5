//! Which runs compare: the properties two runs must share for their figures to mean the same
//! thing (llama-bench's rule), what differs when they do not, and the regression check over runs
//! of one key.

use serde::Serialize;

use crate::result::BenchResult;
use crate::stats::median;

/// What a run's speed depends on besides the hardware's speed. Runs compare only when all of it
/// matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ComparisonKey {
    /// Workload name and version (`sd15-512-30 v1`, or `custom`).
    pub workload: String,
    /// The model's architecture: its preset (sd15, sdxl-base…), else its family.
    pub model: String,
    pub size: String,
    pub steps: usize,
    pub batch: usize,
    pub scheduler: String,
    pub precision: String,
    /// The weights' stored types beyond plain floats (`Q4_K`, `F8_E4M3`), or `float`: a
    /// quantized file never compares with the model's own weights.
    pub weights: String,
    /// The memory profile (`full` for results that predate profiles).
    pub memory: String,
    pub backend: String,
    pub device: String,
    /// The CPU backend's worker threads (absent on a GPU).
    pub threads: Option<usize>,
}

impl ComparisonKey {
    pub fn of(r: &BenchResult) -> ComparisonKey {
        let w = &r.workload;
        ComparisonKey {
            workload: format!("{} v{}", w.name, w.version),
            model: w
                .model
                .preset
                .clone()
                .or_else(|| w.model.family.clone())
                .unwrap_or_else(|| "unknown".into()),
            size: format!("{}x{}", w.width, w.height),
            steps: w.steps,
            batch: w.batch,
            scheduler: w.scheduler.clone(),
            precision: r.backend.precision.clone(),
            weights: w
                .model
                .quantization
                .clone()
                .unwrap_or_else(|| "float".into()),
            memory: r
                .backend
                .memory_profile
                .clone()
                .unwrap_or_else(|| "full".into()),
            backend: r.backend.name.clone(),
            device: r.backend.device.clone(),
            threads: r.backend.threads,
        }
    }

    /// (property, value) in a fixed order, for saying what differs.
    fn properties(&self) -> [(&'static str, String); 12] {
        [
            ("workload", self.workload.clone()),
            ("model", self.model.clone()),
            ("size", self.size.clone()),
            ("steps", self.steps.to_string()),
            ("batch", self.batch.to_string()),
            ("scheduler", self.scheduler.clone()),
            ("precision", self.precision.clone()),
            ("weights", self.weights.clone()),
            ("memory profile", self.memory.clone()),
            ("backend", self.backend.clone()),
            ("device", self.device.clone()),
            (
                "CPU threads",
                self.threads.map_or("-".into(), |t| t.to_string()),
            ),
        ]
    }

    /// One line naming the key, e.g. `sd15-512-30 v1, sd15, 512x512, 30 steps, batch 1, …`.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{}, {}, {}, {} steps, batch {}, {}, {} on {} ({}, {} memory)",
            self.workload,
            self.model,
            self.size,
            self.steps,
            self.batch,
            self.scheduler,
            self.backend,
            self.device,
            self.precision,
            self.memory
        );
        if self.weights != "float" {
            text.push_str(&format!(", {} weights", self.weights));
        }
        if let Some(t) = self.threads {
            text.push_str(&format!(", {t} threads"));
        }
        text
    }
}

/// Of the key's properties, how many say what work a run did; the rest say what it ran on.
const WORK_PROPERTIES: usize = 6;

/// How runs differ, property by property (`size: 512x512 / 1024x1024`): in the work they did
/// (workload, model, size, steps, batch, scheduler), and in what they ran on (precision, memory
/// profile, backend, device, CPU threads) — the weights' quantization counts as setup, like
/// precision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Differences {
    pub work: Vec<String>,
    pub setup: Vec<String>,
}

pub fn differences(results: &[&BenchResult]) -> Differences {
    let keys: Vec<[(&str, String); 12]> = results
        .iter()
        .map(|r| ComparisonKey::of(r).properties())
        .collect();
    let mut found = Differences::default();
    let Some(first) = keys.first() else {
        return found;
    };
    for (i, (name, _)) in first.iter().enumerate() {
        let mut values: Vec<&str> = Vec::new();
        for key in &keys {
            if !values.contains(&key[i].1.as_str()) {
                values.push(&key[i].1);
            }
        }
        if values.len() > 1 {
            let line = format!("{name}: {}", values.join(" / "));
            if i < WORK_PROPERTIES {
                found.work.push(line);
            } else {
                found.setup.push(line);
            }
        }
    }
    found
}

/// Set when runs did different work: their figures and scores do not compare at all.
pub fn comparison_warning(results: &[&BenchResult]) -> Option<String> {
    let work = differences(results).work;
    (!work.is_empty()).then(|| {
        format!(
            "These runs did different work ({}): their figures and scores are not comparable.",
            work.join("; ")
        )
    })
}

/// Set when runs did the same work on different setups: what the comparison is across.
pub fn comparison_note(results: &[&BenchResult]) -> Option<String> {
    let setup = differences(results).setup;
    (!setup.is_empty()).then(|| format!("Compared across {}.", setup.join("; ")))
}

/// The regression check's verdict on one run against earlier runs of its key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegressionCheck {
    pub run_id: String,
    pub key: ComparisonKey,
    /// The run's median seconds per image.
    pub seconds_per_image: f64,
    /// Earlier valid runs of the same key that the verdict rests on.
    pub earlier_runs: usize,
    /// Their median seconds per image; `None` with too few earlier runs.
    pub baseline: Option<f64>,
    /// Their noise: the widest any of them strayed from their median (at least 1% of it).
    pub noise: Option<f64>,
    /// (run - baseline) / baseline.
    pub change: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Slower than the baseline by more than the noise.
    Regression,
    /// Faster than the baseline by more than the noise.
    Improvement,
    /// Within the noise.
    Steady,
    /// Fewer earlier runs of this key than a verdict needs.
    TooFewRuns,
    /// The run itself is invalid (no trustworthy figure to check).
    Invalid,
}

/// Earlier runs a verdict needs: with fewer, their spread says nothing of the noise.
pub const MIN_EARLIER_RUNS: usize = 3;
/// The smallest noise band, relative to the baseline: timer and scheduling jitter.
pub const NOISE_FLOOR: f64 = 0.01;

/// Checks `run` against the `earlier` runs (any key, any order; those of other keys, later ones
/// and invalid ones are left out): slower than their median by more than their noise is a
/// regression.
pub fn check_regression(run: &BenchResult, earlier: &[&BenchResult]) -> RegressionCheck {
    let key = ComparisonKey::of(run);
    let value = run.scores.seconds_per_image.median;
    let values: Vec<f64> = earlier
        .iter()
        .filter(|r| {
            r.run_id != run.run_id
                && r.valid
                && r.created_at < run.created_at
                && ComparisonKey::of(r) == key
        })
        .map(|r| r.scores.seconds_per_image.median)
        .collect();
    let mut check = RegressionCheck {
        run_id: run.run_id.clone(),
        key,
        seconds_per_image: value,
        earlier_runs: values.len(),
        baseline: None,
        noise: None,
        change: None,
        verdict: Verdict::TooFewRuns,
    };
    if !run.valid {
        check.verdict = Verdict::Invalid;
        return check;
    }
    if values.len() < MIN_EARLIER_RUNS {
        return check;
    }
    let Some(baseline) = median(&values) else {
        return check;
    };
    let spread = values
        .iter()
        .map(|v| (v - baseline).abs())
        .fold(0.0, f64::max);
    let noise = spread.max(baseline * NOISE_FLOOR);
    check.baseline = Some(baseline);
    check.noise = Some(noise);
    check.change = Some((value - baseline) / baseline);
    check.verdict = if value > baseline + noise {
        Verdict::Regression
    } else if value < baseline - noise {
        Verdict::Improvement
    } else {
        Verdict::Steady
    };
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BenchResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/result-v1.json");
        BenchResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A valid run of the sample's key at `seconds` per image, made on day `day`.
    fn run(day: u32, seconds: f64) -> BenchResult {
        let mut r = sample();
        r.run_id = format!("run-{day}");
        r.created_at = format!("2026-11-{day:02}T10:00:00Z");
        r.scores.seconds_per_image.median = seconds;
        r.valid = true;
        r
    }

    #[test]
    fn every_property_of_the_key_tells_runs_apart() {
        let base = sample();
        type Change = (&'static str, fn(&mut BenchResult));
        let changes: [Change; 12] = [
            ("workload", |r| r.workload.version += 1),
            ("model", |r| {
                r.workload.model.preset = Some("sdxl-base".into())
            }),
            ("size", |r| r.workload.width = 768),
            ("steps", |r| r.workload.steps = 20),
            ("batch", |r| r.workload.batch = 4),
            ("scheduler", |r| {
                r.workload.scheduler = "a-scheduler-of-its-own".into()
            }),
            ("precision", |r| r.backend.precision = "f32".into()),
            ("weights", |r| {
                r.workload.model.quantization = Some("Q4_K+Q6_K".into())
            }),
            ("memory profile", |r| {
                r.backend.memory_profile = Some("low".into())
            }),
            ("backend", |r| r.backend.name = "vulkan".into()),
            ("device", |r| r.backend.device = "Other GPU".into()),
            ("CPU threads", |r| r.backend.threads = Some(8)),
        ];
        for (i, (name, change)) in changes.iter().enumerate() {
            let mut other = sample();
            change(&mut other);
            assert_ne!(
                ComparisonKey::of(&base),
                ComparisonKey::of(&other),
                "{name}"
            );
            let found = differences(&[&base, &other]);
            let (side, other_side) = if i < WORK_PROPERTIES {
                (&found.work, &found.setup)
            } else {
                (&found.setup, &found.work)
            };
            assert!(
                side.len() == 1 && side[0].starts_with(&format!("{name}: ")),
                "{name}: {found:?}"
            );
            assert!(other_side.is_empty(), "{name}: {found:?}");
        }
        // A result from before profiles ran as `full` does.
        let mut full = sample();
        full.backend.memory_profile = Some("full".into());
        assert_eq!(ComparisonKey::of(&base), ComparisonKey::of(&full));
        // What does not bear on speed (the run's id, its date, its prompts' text) is not in it.
        let mut same = sample();
        same.run_id = "another".into();
        same.created_at = "2027-01-01T00:00:00Z".into();
        assert_eq!(differences(&[&base, &same]), Differences::default());
        assert_eq!(comparison_warning(&[&base, &same]), None);
        assert_eq!(comparison_note(&[&base, &same]), None);
    }

    #[test]
    fn different_work_is_a_warning_and_a_different_setup_is_what_is_compared() {
        let a = sample();
        let mut xl = sample();
        xl.workload.width = 1024;
        xl.workload.height = 1024;
        xl.backend.device = "Other GPU".into();
        let warning = comparison_warning(&[&a, &xl]).unwrap();
        assert!(
            warning.contains("size: 512x512 / 1024x1024") && warning.contains("not comparable"),
            "{warning}"
        );
        let note = comparison_note(&[&a, &xl]).unwrap();
        assert_eq!(note, "Compared across device: NVIDIA H100 / Other GPU.");
    }

    #[test]
    fn a_run_slower_than_earlier_runs_beyond_their_noise_is_a_regression() {
        let earlier = [run(1, 10.0), run(2, 10.2), run(3, 9.9), run(4, 10.1)];
        let earlier_refs: Vec<&BenchResult> = earlier.iter().collect();
        // Median 10.05, widest stray 0.15: a band of 9.9 to 10.2.
        let slow = run(5, 10.5);
        let c = check_regression(&slow, &earlier_refs);
        assert_eq!(c.verdict, Verdict::Regression);
        assert_eq!(c.earlier_runs, 4);
        assert!((c.baseline.unwrap() - 10.05).abs() < 1e-9);
        assert!((c.noise.unwrap() - 0.15).abs() < 1e-9);
        assert!((c.change.unwrap() - (10.5 - 10.05) / 10.05).abs() < 1e-9);

        assert_eq!(
            check_regression(&run(5, 10.19), &earlier_refs).verdict,
            Verdict::Steady
        );
        assert_eq!(
            check_regression(&run(5, 9.8), &earlier_refs).verdict,
            Verdict::Improvement
        );
    }

    #[test]
    fn only_earlier_valid_runs_of_the_same_key_count() {
        let mut other_device = run(1, 5.0);
        other_device.backend.device = "Other GPU".into();
        let mut invalid = run(2, 5.0);
        invalid.valid = false;
        let later = run(9, 5.0);
        let same = [run(3, 10.0), run(4, 10.0)];
        let all = [&other_device, &invalid, &later, &same[0], &same[1]];
        let c = check_regression(&run(5, 20.0), &all);
        assert_eq!((c.earlier_runs, c.verdict), (2, Verdict::TooFewRuns));
        assert_eq!(c.baseline, None);

        // A third earlier run makes a verdict; identical timings still get the 1% noise floor.
        let third = run(1, 10.0);
        let all = [&same[0], &same[1], &third];
        assert_eq!(
            check_regression(&run(5, 10.09), &all).verdict,
            Verdict::Steady
        );
        assert_eq!(
            check_regression(&run(5, 10.11), &all).verdict,
            Verdict::Regression
        );

        let mut broken = run(5, 30.0);
        broken.valid = false;
        assert_eq!(check_regression(&broken, &all).verdict, Verdict::Invalid);
    }
}
