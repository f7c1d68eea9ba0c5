//! What a generation request may ask for, decided once: the engine checks requests against these,
//! and the CLI, the bench and the app (and through it the UI) take the same numbers and names
//! from here.

use crate::io::weights::Precision;
use crate::pipeline::GuidanceOptions;

/// The largest image side in pixels. SDXL at 2048x2048 is already 16 times the work of 512x512;
/// larger sides are beyond what a benchmark or a person waiting on the result needs.
pub const MAX_SIDE: usize = 2048;
/// Image sides are multiples of this (the VAE's downscale).
pub const SIDE_MULTIPLE: usize = 8;
/// The most denoising steps one image may take.
pub const MAX_STEPS: usize = 1000;
/// The most images one call makes at once.
pub const MAX_BATCH: usize = 64;
/// The precision names a person can choose: `auto` (f16 where the device supports it, else f32)
/// and each precision's own name.
pub const PRECISION_CHOICES: [&str; 4] = ["auto", "f32", "f16", "bf16"];

/// The largest classifier-free guidance scale a request may ask for (the usual is 3 to 10).
pub const MAX_GUIDANCE: f64 = 50.0;

/// Why `side` cannot be the image's `name` ("width", "height"), or `None`: the one message for
/// this rule, which the engine, the CLI and the app all show.
pub fn side_error(name: &str, side: usize) -> Option<String> {
    (side == 0 || !side.is_multiple_of(SIDE_MULTIPLE) || side > MAX_SIDE).then(|| {
        format!(
            "{name} must be a multiple of {SIDE_MULTIPLE} from {SIDE_MULTIPLE} to {MAX_SIDE} pixels (got {side})"
        )
    })
}

/// Why `steps` cannot be a step count, or `None`.
pub fn steps_error(steps: usize) -> Option<String> {
    (steps == 0 || steps > MAX_STEPS)
        .then(|| format!("steps must be from 1 to {MAX_STEPS} (got {steps})"))
}

/// Why `batch` cannot be a batch size, or `None`.
pub fn batch_error(batch: usize) -> Option<String> {
    (batch == 0 || batch > MAX_BATCH)
        .then(|| format!("batch must be from 1 to {MAX_BATCH} images (got {batch})"))
}

/// Why `guidance` cannot be a guidance scale, or `None`.
pub fn guidance_error(guidance: f64) -> Option<String> {
    (!guidance.is_finite() || !(0.0..=MAX_GUIDANCE).contains(&guidance))
        .then(|| format!("guidance must be from 0 to {MAX_GUIDANCE} (got {guidance})"))
}

/// Why `options` cannot shape guidance, or `None`: a truncation is a fraction of the schedule
/// (0 to 1), a normalization a factor above 0.
pub fn guidance_options_error(options: &GuidanceOptions) -> Option<String> {
    if let Some(skip) = &options.skip_layers {
        if skip.layers == 0 {
            return Some("skip-layer guidance needs at least one layer to skip".into());
        }
        if !skip.scale.is_finite() {
            return Some(format!(
                "the skip-layer guidance scale must be a finite number (got {})",
                skip.scale
            ));
        }
        if !(0.0..=1.0).contains(&skip.start) || !(0.0..=1.0).contains(&skip.stop) {
            return Some(format!(
                "skip-layer guidance's start and stop are fractions of the steps from 0 to 1 (got {} and {})",
                skip.start, skip.stop
            ));
        }
    }
    if let Some(s) = options.true_cfg.filter(|s| !(s.is_finite() && *s > 0.0)) {
        return Some(format!(
            "the true CFG scale must be a number above 0 (got {s}; above 1 runs it)"
        ));
    }
    if let Some(t) = options.truncation.filter(|t| !(0.0..=1.0).contains(t)) {
        return Some(format!(
            "the guidance truncation must be a fraction from 0 to 1 (got {t})"
        ));
    }
    options
        .normalization
        .filter(|f| !(f.is_finite() && *f > 0.0))
        .map(|f| {
            format!("the guidance normalization must be a factor above 0 (got {f}; 1 caps each guided prediction at the unguided one's norm)")
        })
}

/// The precision a choice names: `None` for `auto`.
pub fn precision_choice(name: &str) -> Result<Option<Precision>, String> {
    match name {
        "auto" => Ok(None),
        "f32" => Ok(Some(Precision::F32)),
        "f16" => Ok(Some(Precision::F16)),
        "bf16" => Ok(Some(Precision::Bf16)),
        other => Err(format!(
            "unknown precision {other:?}: choose {}",
            PRECISION_CHOICES.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_are_multiples_of_8_up_to_the_limit() {
        for side in [8, 512, 1024, MAX_SIDE] {
            assert_eq!(side_error("width", side), None, "{side}");
        }
        for side in [0, 7, 12, 513, MAX_SIDE + 8] {
            let problem = side_error("height", side).expect("refused");
            assert!(problem.starts_with("height must be"), "{problem}");
            assert!(problem.contains(&format!("(got {side})")), "{problem}");
        }
    }

    #[test]
    fn steps_batch_and_guidance_have_bounds() {
        assert_eq!(steps_error(1), None);
        assert_eq!(steps_error(MAX_STEPS), None);
        assert!(steps_error(0).is_some() && steps_error(MAX_STEPS + 1).is_some());
        assert_eq!(batch_error(MAX_BATCH), None);
        assert!(batch_error(0).is_some() && batch_error(MAX_BATCH + 1).is_some());
        for fine in [0.0, 1.0, 7.5, MAX_GUIDANCE] {
            assert_eq!(guidance_error(fine), None, "{fine}");
        }
        for bad in [-1.0, MAX_GUIDANCE + 0.5, f64::NAN, f64::INFINITY] {
            assert!(
                guidance_error(bad).unwrap().starts_with("guidance must be"),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_precision_choice_parses() {
        for name in PRECISION_CHOICES {
            let parsed = precision_choice(name).expect(name);
            assert_eq!(parsed.map_or("auto", Precision::name), name);
        }
        let problem = precision_choice("fp8").unwrap_err();
        assert!(problem.contains("auto, f32, f16, bf16"), "{problem}");
    }
}
