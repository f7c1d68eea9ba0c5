//! The CLIP score against torchmetrics' `CLIPScore` on the tiny random-weight `CLIPModel` that
//! scripts/make_clip_score_fixtures.py writes (openai's processor settings and legacy
//! end-of-text rule): for pictures of 224x224, larger squares, both non-square orientations and
//! one smaller than 224 (resized up), against three prompts, one past 77 tokens. On the CPU and on
//! wgpu through Vulkan, in f32.
//!
//! Tolerances: the target is 0.1 (of 100) for the score. Stages are checked on their own
//! first, so a fault names its stage: the token ids exactly; the processor's pixel values within
//! one 8-bit level over CLIP's smallest standard deviation (2/255/0.2613 = 0.03: PIL's fixed-point
//! bicubic done here in the same fixed point, so a level off is rounding at most); the features
//! within 1e-3 of their largest value (f32 sums of a few hundred terms).

use crate::common;

use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::io::image::RgbImage;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::quality::clip_score::ClipScorer;

/// The fixture's picture formula (see the reference's `picture`).
fn picture(width: usize, height: usize) -> RgbImage {
    let mut pixels = Vec::with_capacity(width * height * 3);
    for y in 0..height as i64 {
        for x in 0..width as i64 {
            for c in 0..3i64 {
                let v =
                    (x * x / 7 + y * 3 + c * 70 + ((x / 9 + y / 13) % 2) * 90 + (x * y) / 50) % 256;
                pixels.push(v as u8);
            }
        }
    }
    RgbImage {
        width,
        height,
        pixels,
    }
}

fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(got: &[f32], expected: &[f64], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}");
    let scale = expected.iter().fold(0f64, |m, v| m.max(v.abs()));
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            (f64::from(*g) - e).abs() <= 1e-3 * scale,
            "{what}[{i}]: {g} against {e}"
        );
    }
}

fn check_against_torchmetrics(device: &burn::DispatchDevice, on: &str) {
    let text =
        std::fs::read_to_string(common::fixtures().join("tiny-clip.reference.json")).unwrap();
    let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reference["image_processor"], "CLIPImageProcessor");
    let scorer = ClipScorer::<B>::load(&common::fixtures().join("tiny-clip"), device).unwrap();
    let cases = reference["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 18);
    let mut truncated = false;
    for case in cases {
        let (w, h) = (
            case["width"].as_u64().unwrap() as usize,
            case["height"].as_u64().unwrap() as usize,
        );
        let prompt = case["prompt"].as_str().unwrap();
        let what = format!("{on} {w}x{h} {:?}", &prompt[..prompt.len().min(20)]);
        let ids: Vec<u32> = numbers(&case["token_ids"])
            .iter()
            .map(|&v| v as u32)
            .collect();
        assert_eq!(scorer.token_ids(prompt).unwrap(), ids, "{what}");
        truncated |= ids.len() == 77;

        let image = picture(w, h);
        let pixels = scorer.pixels(&image).unwrap();
        let level = 2.0 / 255.0 / 0.26130258;
        let sum: f64 = pixels.iter().map(|&v| f64::from(v)).sum();
        let expected_sum = case["pixel_values_sum"].as_f64().unwrap();
        assert!(
            (sum - expected_sum).abs() <= level * pixels.len() as f64 * 0.01,
            "{what}: pixel values sum {sum} against {expected_sum}"
        );
        // [c, 100, 100..104] of [3, 224, 224].
        let head: Vec<f32> = (0..3)
            .flat_map(|c| (100..104).map(move |x| (c, x)))
            .map(|(c, x)| pixels[c * 224 * 224 + 100 * 224 + x])
            .collect();
        for (g, e) in head.iter().zip(numbers(&case["pixel_values_head"])) {
            assert!(
                (f64::from(*g) - e).abs() <= level,
                "{what}: pixel {g} against {e}"
            );
        }

        close(
            &scorer.image_features(&image).unwrap(),
            &numbers(&case["image_features"]),
            &format!("{what} image features"),
        );
        close(
            &scorer.text_features(prompt).unwrap(),
            &numbers(&case["text_features"]),
            &format!("{what} text features"),
        );
        let score = scorer.score(&image, prompt).unwrap();
        let (similarity, expected) = (
            case["similarity"].as_f64().unwrap(),
            case["score"].as_f64().unwrap(),
        );
        assert!(
            (score.similarity - similarity).abs() <= 0.1,
            "{what}: {score:?} against {similarity}"
        );
        assert!(
            (score.score - expected).abs() <= 0.1,
            "{what}: {score:?} against {expected}"
        );
    }
    assert!(truncated, "a prompt past 77 tokens is among the cases");
}

#[test]
fn clip_scores_match_torchmetrics_on_the_cpu() {
    check_against_torchmetrics(&cpu_device(), "cpu");
}

#[test]
fn clip_scores_match_torchmetrics_on_vulkan() {
    let Some(device) = common::vulkan_device() else {
        return;
    };
    check_against_torchmetrics(&device.device, "vulkan");
}

/// A folder that is not a CLIP model says what to give instead.
#[test]
fn a_folder_without_a_clip_model_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let Err(e) = ClipScorer::<B>::load(dir.path(), &cpu_device()) else {
        panic!("an empty folder loaded");
    };
    assert!(
        e.to_string()
            .contains("give the folder of a transformers CLIPModel"),
        "{e}"
    );
}
