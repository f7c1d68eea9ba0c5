//! What every submission must pass before it is stored, each failure a 4xx with the reason:
//! the JSON Schema, size limits, a standard run's exact workload, valid images, scores that agree
//! with the per-image seconds (recomputed here), and timings a device of its class could make.

use sha2::{Digest, Sha256};

use sdbench_bench::result::BenchResult;
use sdbench_bench::stats::median;
use sdbench_bench::workload::{Workload, MAX_IMAGES};
use sdbench_bench::{Preset, SCHEMA_VERSION};
use sdbench_telemetry::hardware::Standing;
use sdbench_telemetry::summarize_hardware;

use crate::error::{Result, ServerError};
use crate::reference::ReferenceTable;

/// The largest request body taken (a long CPU run's telemetry samples are most of a result).
pub const MAX_BODY_BYTES: usize = 8 << 20;
/// Telemetry samples one result may carry.
pub const MAX_SAMPLES: usize = 200_000;
/// Relative disagreement allowed between a figure and its recomputation (JSON round-trips f64
/// exactly; this allows for a client that rounds).
const TOLERANCE: f64 = 1e-3;
/// The fastest a device class could plausibly run, in image-steps per second of SD1.5 at
/// 512x512 (other sizes and families are scaled by their cost). GPUs: several times the fastest
/// published SD1.5 figures (about 60 it/s on an H100 with TensorRT); CPUs: likewise over the
/// largest servers' (a few it/s).
pub const MAX_GPU_STEP_RATE: f64 = 250.0;
pub const MAX_CPU_STEP_RATE: f64 = 20.0;
/// No benchmark image takes longer than a day.
const MAX_IMAGE_SECONDS: f64 = 86_400.0;

/// What the store keeps of a checked submission, beside the document itself.
#[derive(Debug, Clone)]
pub struct Checked {
    pub result: BenchResult,
    /// sha256 of the timing figures: the same run sent under another id has the same.
    pub figures: String,
    pub gpu: String,
    pub memory_profile: String,
    /// The model revision, else a digest of its files' hashes (`ReferenceTable`'s key).
    pub model_key: String,
    pub reference_match: Option<bool>,
    /// The hardware's state over the timed region, recomputed from the samples.
    pub hardware: Standing,
}

fn unprocessable(reason: impl Into<String>) -> ServerError {
    ServerError::refused(422, reason)
}

/// The JSON Schema validator, built once.
pub struct SchemaCheck {
    validator: jsonschema::Validator,
}

impl SchemaCheck {
    pub fn new() -> Result<SchemaCheck> {
        let schema: serde_json::Value = serde_json::from_str(sdbench_bench::result::JSON_SCHEMA)
            .map_err(|e| ServerError::Config(format!("the result schema is not JSON: {e}")))?;
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| ServerError::Config(format!("the result schema is invalid: {e}")))?;
        Ok(SchemaCheck { validator })
    }
}

/// Every check, in order; the first failure is the answer.
pub fn check(body: &[u8], schema: &SchemaCheck, references: &ReferenceTable) -> Result<Checked> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ServerError::refused(
            413,
            format!(
                "the result is {} bytes; the limit is {MAX_BODY_BYTES}",
                body.len()
            ),
        ));
    }
    let json: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| ServerError::refused(400, format!("the body is not JSON: {e}")))?;
    match json.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == SCHEMA_VERSION as u64 => {}
        Some(v) => {
            return Err(unprocessable(format!(
                "schema_version {v} is not one this service takes (it takes {SCHEMA_VERSION}); update the service or send a version {SCHEMA_VERSION} result"
            )))
        }
        None => return Err(unprocessable("no schema_version: this is not an SD Bench result")),
    }
    let errors: Vec<String> = schema
        .validator
        .iter_errors(&json)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    if !errors.is_empty() {
        return Err(unprocessable(format!(
            "the result does not match schema v{SCHEMA_VERSION}: {}",
            errors.join("; ")
        )));
    }
    let result: BenchResult = serde_json::from_value(json)
        .map_err(|e| unprocessable(format!("the result cannot be read: {e}")))?;
    check_limits(&result)?;
    check_images(&result)?;
    if result.workload.standard {
        check_standard(&result)?;
    }
    check_scores(&result)?;
    check_plausible(&result)?;
    let hardware = check_hardware(&result)?;
    check_quality(&result)?;
    let model_key = model_key(&result);
    let reference_match = references.matches(&model_key, &result);
    Ok(Checked {
        figures: figures_digest(&result),
        gpu: result.backend.device.trim().to_string(),
        memory_profile: result
            .backend
            .memory_profile
            .clone()
            .unwrap_or_else(|| "full".into()),
        model_key,
        reference_match,
        hardware,
        result,
    })
}

/// The hardware's state, recomputed from the timed samples of the telemetry source the result
/// names: a run that claims to be steady (or throttled) against its own samples is refused.
fn check_hardware(r: &BenchResult) -> Result<Standing> {
    let claimed = &r.scores.hardware;
    let recomputed = match claimed.source.as_deref() {
        None => summarize_hardware(&[], Err("no source named"), 0.0, 0.0),
        Some(id) => {
            let source = r
                .telemetry
                .sources
                .iter()
                .find(|s| s.id == id)
                .ok_or_else(|| {
                    unprocessable(format!(
                        "scores.hardware names the telemetry source {id}, which telemetry.sources does not list"
                    ))
                })?;
            let t = &r.telemetry.timed;
            summarize_hardware(&r.telemetry.samples, Ok(source), t.start, t.end)
        }
    };
    let standing = recomputed.standing();
    for (what, claim) in [
        ("scores.throttled", r.scores.throttled),
        ("scores.hardware.throttled", claimed.throttled),
    ] {
        if claim != recomputed.throttled {
            return Err(unprocessable(format!(
                "{what} is {claim}, but the run's telemetry samples make it {} ({})",
                recomputed.throttled,
                standing.name()
            )));
        }
    }
    if claimed.throttle_samples != recomputed.throttle_samples {
        return Err(unprocessable(format!(
            "scores.hardware counts {} samples with throttle reasons; the telemetry holds {}",
            claimed.throttle_samples, recomputed.throttle_samples
        )));
    }
    Ok(standing)
}

/// A CLIP score mean that follows from the pictures' scores, each of the first pass.
fn check_quality(r: &BenchResult) -> Result<()> {
    let scored: Vec<f64> = r.results.iter().filter_map(|i| i.clip_score).collect();
    let Some(q) = &r.scores.quality else {
        return match scored.is_empty() {
            true => Ok(()),
            false => Err(unprocessable(
                "pictures have CLIP scores but scores.quality is absent",
            )),
        };
    };
    let first_pass = r.results.iter().filter(|i| i.pass == 0).count();
    let all_first = r
        .results
        .iter()
        .all(|i| i.clip_score.is_none() || i.pass == 0);
    if scored.len() != first_pass || !all_first {
        return Err(unprocessable(format!(
            "{} pictures have a CLIP score; the first pass has {first_pass}, and only it is scored",
            scored.len()
        )));
    }
    let mean = scored.iter().sum::<f64>() / scored.len() as f64;
    if !close(q.clip_score_mean, mean) {
        return Err(unprocessable(format!(
            "the CLIP score mean {:.4} does not follow from the pictures' scores ({mean:.4})",
            q.clip_score_mean
        )));
    }
    Ok(())
}

fn check_limits(r: &BenchResult) -> Result<()> {
    if r.results.is_empty() {
        return Err(unprocessable("the result has no images"));
    }
    if r.results.len() > MAX_IMAGES {
        return Err(ServerError::refused(
            413,
            format!("{} images; the limit is {MAX_IMAGES}", r.results.len()),
        ));
    }
    if r.telemetry.samples.len() > MAX_SAMPLES {
        return Err(ServerError::refused(
            413,
            format!(
                "{} telemetry samples; the limit is {MAX_SAMPLES}",
                r.telemetry.samples.len()
            ),
        ));
    }
    if r.run_id.trim().is_empty() || r.run_id.len() > 100 {
        return Err(unprocessable("run_id must be 1 to 100 characters"));
    }
    if r.backend.device.trim().is_empty() || r.backend.device.len() > 200 {
        return Err(unprocessable("backend.device must be 1 to 200 characters"));
    }
    Ok(())
}

fn check_images(r: &BenchResult) -> Result<()> {
    if !r.valid {
        return Err(unprocessable(format!(
            "sdbench marked this run invalid: {}",
            r.invalid_reasons.join("; ")
        )));
    }
    for (i, image) in r.results.iter().enumerate() {
        let check = &image.image.check;
        if !check.valid {
            return Err(unprocessable(format!(
                "image {} is not valid: {}",
                i + 1,
                check.reason.as_deref().unwrap_or("no reason given")
            )));
        }
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(&check.sha256, 64) || !hex(&check.phash, 16) {
            return Err(unprocessable(format!(
                "image {}'s hashes are malformed (sha256: 64 hex digits, phash: 16)",
                i + 1
            )));
        }
        if image.prompt_index >= r.workload.prompts.len() {
            return Err(unprocessable(format!(
                "image {} names prompt {} of {}",
                i + 1,
                image.prompt_index + 1,
                r.workload.prompts.len()
            )));
        }
    }
    Ok(())
}

/// A standard run is its workload exactly: prompts, seeds, steps, size, sampler, guidance, on a
/// model of the workload's architecture, in the full memory profile.
fn check_standard(r: &BenchResult) -> Result<()> {
    let w = &r.workload;
    let Ok(expected) = Workload::named(&w.name) else {
        return Err(unprocessable(format!(
            "a standard run of `{}`, which is not a standard workload",
            w.name
        )));
    };
    let differs = |what: &str| {
        Err(unprocessable(format!(
            "marked as a standard {} run, but it does not have the workload's {what}",
            w.name
        )))
    };
    let prompts_match = w.prompts.len() == expected.prompts.len()
        && w.prompts
            .iter()
            .zip(&expected.prompts)
            .all(|(a, b)| a.prompt == b.prompt && a.seed == b.seed);
    if !prompts_match {
        return differs("prompts or seeds");
    }
    if w.version != expected.version {
        return differs("version");
    }
    if w.steps != expected.steps {
        return differs("steps");
    }
    if (w.width, w.height) != (expected.width, expected.height) {
        return differs("image size");
    }
    if w.scheduler != expected.scheduler.name() || w.guidance != expected.guidance {
        return differs("sampler or guidance");
    }
    if w.negative_prompt != expected.negative_prompt || w.batch != 1 {
        return differs("negative prompt or batch");
    }
    if w.model.synthetic || w.model.preset.as_deref() != Some(expected.preset.name()) {
        return differs("model (its architecture, on real weights)");
    }
    if r.backend.memory_profile.as_deref().unwrap_or("full") != "full" {
        return differs("memory profile (full)");
    }
    if let Some(types) = &w.model.quantization {
        return differs(&format!("weights (plain floats, not {types})"));
    }
    check_passes(r, expected.prompts.len())?;
    if r.scores.score.is_none() {
        return Err(unprocessable("a standard run without a score"));
    }
    Ok(())
}

/// Every prompt once, in order, in whole passes; more than one pass only with a minimum duration,
/// and no pass begun after it had passed.
fn check_passes(r: &BenchResult, prompts: usize) -> Result<()> {
    let n = r.results.len();
    let whole = n > 0
        && n.is_multiple_of(prompts)
        && r.results
            .iter()
            .enumerate()
            .all(|(j, image)| image.prompt_index == j % prompts && image.pass == j / prompts);
    if !whole {
        return Err(unprocessable(format!(
            "marked as a standard {} run, but it does not have the workload's images (one per prompt, in order, in whole passes)",
            r.workload.name
        )));
    }
    let passes = n / prompts;
    if passes == 1 {
        return Ok(());
    }
    let Some(min) = r.workload.min_duration_seconds else {
        return Err(unprocessable(format!(
            "{passes} passes of the prompts without a minimum duration (one pass is the workload)"
        )));
    };
    let before_last: f64 = r.results[..n - prompts].iter().map(|i| i.seconds).sum();
    if before_last >= min * (1.0 + TOLERANCE) {
        return Err(unprocessable(format!(
            "the last of {passes} passes began after {before_last:.1} s of timed images, past the minimum duration of {min} s"
        )));
    }
    Ok(())
}

fn close(claimed: f64, computed: f64) -> bool {
    (claimed - computed).abs() <= TOLERANCE * computed.abs().max(1e-9)
}

/// The scores, recomputed from the per-image seconds and steps.
fn check_scores(r: &BenchResult) -> Result<()> {
    let batch = r.workload.batch.max(1) as f64;
    for (i, image) in r.results.iter().enumerate() {
        let n = i + 1;
        let s = &image.stages;
        let finite = [image.seconds, s.text_encoder, s.unet_loop, s.vae_decode]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0);
        if !finite || image.seconds <= 0.0 || s.unet_loop <= 0.0 {
            return Err(unprocessable(format!(
                "image {n}'s seconds are not positive finite numbers"
            )));
        }
        if image.seconds > MAX_IMAGE_SECONDS {
            return Err(unprocessable(format!(
                "image {n} took {:.0} s, more than a day",
                image.seconds
            )));
        }
        let stages = s.text_encoder + s.unet_loop + s.vae_decode;
        if stages > image.seconds * (1.0 + TOLERANCE) + 1e-6 {
            return Err(unprocessable(format!(
                "image {n}'s stages add up to {stages:.4} s, more than its {:.4} s",
                image.seconds
            )));
        }
        let steps_per_second = r.workload.steps as f64 / (s.unet_loop * batch);
        if !close(image.steps_per_second, steps_per_second) {
            return Err(unprocessable(format!(
                "image {n}: {} steps in {:.4} s of denoising loop is {steps_per_second:.4} steps/s, not the {:.4} claimed",
                r.workload.steps,
                s.unet_loop * batch,
                image.steps_per_second
            )));
        }
    }
    let seconds: Vec<f64> = r.results.iter().map(|i| i.seconds).collect();
    let images_per_minute = 60.0 * seconds.len() as f64 / seconds.iter().sum::<f64>();
    let claimed = &r.scores;
    if !close(claimed.images_per_minute, images_per_minute) {
        return Err(unprocessable(format!(
            "images per minute {:.4} does not follow from the images' seconds ({images_per_minute:.4})",
            claimed.images_per_minute
        )));
    }
    if let Some(score) = claimed.score {
        let expected = (images_per_minute * 100.0).round() as u64;
        if score.abs_diff(expected) > 1 {
            return Err(unprocessable(format!(
                "score {score} does not follow from the images' seconds ({expected})"
            )));
        }
    }
    let median_seconds = median(&seconds).unwrap_or(0.0);
    if !close(claimed.seconds_per_image.median, median_seconds) {
        return Err(unprocessable(format!(
            "median seconds per image {:.4} does not follow from the images' ({median_seconds:.4})",
            claimed.seconds_per_image.median
        )));
    }
    let rates: Vec<f64> = r.results.iter().map(|i| i.steps_per_second).collect();
    let median_rate = median(&rates).unwrap_or(0.0);
    if !close(claimed.steps_per_second, median_rate) {
        return Err(unprocessable(format!(
            "steps per second {:.4} is not the images' median ({median_rate:.4})",
            claimed.steps_per_second
        )));
    }
    Ok(())
}

/// Cost of one step of one image relative to SD1.5 at 512x512, for models of a known preset
/// (each preset's `step_cost` per pixel, from the family registry).
fn relative_step_cost(r: &BenchResult) -> Option<f64> {
    let per_pixel = Preset::named(r.workload.model.preset.as_deref()?)?.step_cost();
    Some(per_pixel * (r.workload.width * r.workload.height) as f64 / (512.0 * 512.0))
}

/// Image-steps per second no device of the run's class could reach are refused. Models of no
/// known preset (tiny test models, unknown fine-tune architectures) have no known cost.
fn check_plausible(r: &BenchResult) -> Result<()> {
    let Some(cost) = relative_step_cost(r) else {
        return Ok(());
    };
    let on_cpu = r.backend.name == "cpu" || r.backend.software;
    let (limit, class) = match on_cpu {
        true => (MAX_CPU_STEP_RATE, "a CPU"),
        false => (MAX_GPU_STEP_RATE, "a GPU"),
    };
    let rate = r.scores.steps_per_second * r.workload.batch.max(1) as f64 * cost;
    if rate > limit {
        return Err(unprocessable(format!(
            "{:.1} steps/s is {rate:.0} SD1.5-512 image-steps per second, more than {class} can do ({limit:.0}): the timings are not plausible",
            r.scores.steps_per_second
        )));
    }
    Ok(())
}

/// The model's identity for reference hashes: its Hub revision, else a digest of its files.
pub fn model_key(r: &BenchResult) -> String {
    let m = &r.workload.model;
    if let Some(revision) = &m.revision {
        return revision.clone();
    }
    if m.synthetic || m.files.is_empty() {
        return "synthetic".into();
    }
    let mut hasher = Sha256::new();
    for file in &m.files {
        hasher.update(file.sha256.as_bytes());
        hasher.update(b"\n");
    }
    format!("files:{}", sdbench_bench::checks::hex(&hasher.finalize()))
}

/// sha256 over the per-image figures (seconds, stages, steps, pixels' hash).
fn figures_digest(r: &BenchResult) -> String {
    let figures: Vec<serde_json::Value> = r
        .results
        .iter()
        .map(|i| {
            serde_json::json!([
                i.seconds,
                i.stages.text_encoder,
                i.stages.unet_loop,
                i.stages.vae_decode,
                i.step_seconds,
                i.image.check.sha256
            ])
        })
        .collect();
    let text = serde_json::to_string(&figures).unwrap_or_default();
    sdbench_bench::checks::hex(&Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(preset: &str, side: usize) -> BenchResult {
        let mut r: BenchResult =
            serde_json::from_str(include_str!("../../bench/tests/data/result-v1.json")).unwrap();
        r.workload.model.preset = Some(preset.into());
        (r.workload.width, r.workload.height) = (side, side);
        r
    }

    #[test]
    fn each_known_family_has_a_step_cost_that_grows_with_the_image() {
        assert_eq!(relative_step_cost(&result("sd15", 512)), Some(1.0));
        assert_eq!(relative_step_cost(&result("sdxl-base", 1024)), Some(8.0));
        assert_eq!(relative_step_cost(&result("flux2-klein", 1024)), Some(12.0));
        assert_eq!(
            relative_step_cost(&result("zimage-turbo", 1024)),
            Some(20.0)
        );
        assert_eq!(relative_step_cost(&result("sd35-medium", 1024)), Some(8.0));
        assert_eq!(relative_step_cost(&result("a-tiny-model", 512)), None);
        // FLUX.2 klein at 1024x1024: 20 steps/s on a GPU passes, 25 does not.
        let mut klein = result("flux2-klein", 1024);
        klein.backend.name = "cuda".into();
        klein.backend.software = false;
        klein.scores.steps_per_second = 20.0;
        assert!(check_plausible(&klein).is_ok());
        klein.scores.steps_per_second = 25.0;
        assert!(check_plausible(&klein).is_err());
    }

    #[test]
    fn a_standard_run_on_quantized_weights_is_refused() {
        let mut r = result("sd15", 512);
        r.workload.prompts = Workload::named("sd15-512-30").unwrap().prompts;
        // The sample holds one image of the workload's prompts: refused for that, not its weights.
        let plain = check_standard(&r).unwrap_err().to_string();
        assert!(
            plain.contains("images") && !plain.contains("weights"),
            "{plain}"
        );
        r.workload.model.quantization = Some("Q4_K".into());
        let quantized = check_standard(&r).unwrap_err().to_string();
        assert!(
            quantized.contains("weights (plain floats, not Q4_K)"),
            "{quantized}"
        );
    }
}
