//! `sdbench clip-score` end to end: pictures written as PNG files, scored with the tiny CLIP model
//! from its folder and fetched from a loopback Hub (then from the cache, offline), against the
//! scores torchmetrics gave (crates/diffusion/tests/fixtures/tiny-clip.reference.json).

use std::path::Path;
use std::process::Output;

use sdbench_diffusion::io::image::{write_png, RgbImage};
use sdbench_test_server::{FakeRepo, TestServer};

use crate::common::{fixtures, sdbench, text};

/// The reference's picture formula.
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

/// (picture file, torchmetrics' score) for each size, against `prompt`.
fn pictures(dir: &Path, prompt: &str) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(fixtures().join("tiny-clip.reference.json")).unwrap();
    let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
    reference["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["prompt"] == prompt)
        .map(|c| {
            let (w, h) = (
                c["width"].as_u64().unwrap() as usize,
                c["height"].as_u64().unwrap() as usize,
            );
            let path = dir.join(format!("{w}x{h}.png"));
            write_png(&path, &picture(w, h), &[]).unwrap();
            (path.display().to_string(), c["score"].as_f64().unwrap())
        })
        .collect()
}

fn scores(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn clip_score_matches_torchmetrics_from_a_folder_and_from_the_hub() {
    let home = tempfile::tempdir().unwrap();
    let prompt = "portrait of an old sailor";
    let cases = pictures(home.path(), prompt);
    assert_eq!(cases.len(), 6);
    let folder = fixtures().join("tiny-clip").display().to_string();
    let mut args = vec![
        "clip-score",
        "--model",
        &folder,
        "--prompt",
        prompt,
        "--json",
    ];
    args.extend(cases.iter().map(|(p, _)| p.as_str()));
    let got = scores(&sdbench(home.path(), "http://127.0.0.1:9", &args));
    let listed = got["images"].as_array().unwrap();
    assert_eq!(listed.len(), cases.len());
    for ((path, expected), row) in cases.iter().zip(listed) {
        assert_eq!(row["image"], path.as_str());
        let score = row["score"].as_f64().unwrap();
        assert!(
            (score - expected).abs() <= 0.1,
            "{path}: {score} against {expected}"
        );
    }
    let mean = cases.iter().map(|(_, s)| s).sum::<f64>() / cases.len() as f64;
    assert!((got["mean"].as_f64().unwrap() - mean).abs() <= 0.1);

    // From a Hub repository: fetched once, then read from the cache with no network.
    let server = TestServer::start();
    let repo = FakeRepo::from_folder(
        "test-org/tiny-clip",
        &"c1".repeat(20),
        &fixtures().join("tiny-clip"),
    )
    .unwrap();
    server.add_repo(repo);
    let mut hub_args = args.clone();
    hub_args[2] = "test-org/tiny-clip";
    let fetched = scores(&sdbench(home.path(), &server.url(), &hub_args));
    assert_eq!(fetched["images"], got["images"]);
    let offline = scores(&sdbench(home.path(), "http://127.0.0.1:9", &hub_args));
    assert_eq!(offline["images"], got["images"]);

    // A repository without CLIP's files is refused by name; a missing picture before any model.
    let server = TestServer::start();
    server.add_repo(
        FakeRepo::from_folder(
            "test-org/tiny-sd",
            &"c2".repeat(20),
            &fixtures().join("tiny-sd"),
        )
        .unwrap(),
    );
    hub_args[2] = "test-org/tiny-sd";
    let o = sdbench(home.path(), &server.url(), &hub_args);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("it has no config.json"),
        "{}",
        text(&o.stderr)
    );
    let o = sdbench(
        home.path(),
        "http://127.0.0.1:9",
        &["clip-score", "--prompt", "x", "/nonexistent.png"],
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("/nonexistent.png"),
        "{}",
        text(&o.stderr)
    );
}

/// `bench --quality FOLDER` records each picture's score and the mean, and prints the mean.
#[test]
fn bench_with_quality_records_the_clip_score() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("run.json");
    let model = fixtures().join("tiny-sd").display().to_string();
    let clip = fixtures().join("tiny-clip").display().to_string();
    let out_s = out.display().to_string();
    let o = sdbench(
        home.path(),
        "http://127.0.0.1:9",
        &[
            "bench",
            "--model",
            &model,
            "--backend",
            "cpu",
            "--steps",
            "1",
            "--width",
            "32",
            "--height",
            "24",
            "--images",
            "2",
            "--baseline",
            "0",
            "--quality",
            &clip,
            "--out",
            &out_s,
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let quality = &result["scores"]["quality"];
    assert_eq!(quality["clip_model"], clip.as_str());
    let scores: Vec<f64> = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["clip_score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores.len(), 2);
    let mean = scores.iter().sum::<f64>() / 2.0;
    assert!((quality["clip_score_mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert!(
        text(&o.stdout).contains("CLIP score (mean)"),
        "{}",
        text(&o.stdout)
    );
}

/// `generate --quality FOLDER` prints the picture's CLIP score and records it in the history.
#[test]
fn generate_with_quality_prints_and_records_the_clip_score() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("fox.png");
    let model = fixtures().join("tiny-sd").display().to_string();
    let clip = fixtures().join("tiny-clip");
    let (clip_s, out_s) = (clip.display().to_string(), out.display().to_string());
    let prompt = "a red fox standing in fresh snow";
    let o = sdbench(
        home.path(),
        "http://127.0.0.1:9",
        &[
            "generate",
            "--model",
            &model,
            "--prompt",
            prompt,
            "--backend",
            "cpu",
            "--steps",
            "1",
            "--width",
            "32",
            "--height",
            "24",
            "--quality",
            &clip_s,
            "--out",
            &out_s,
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let scorer =
        sdbench_diffusion::quality::clip_score::ClipScorer::<sdbench_diffusion::pipeline::B>::load(
            &clip,
            &sdbench_diffusion::device::cpu_device(),
        )
        .unwrap();
    let picture = sdbench_diffusion::io::image::read_image(&out).unwrap();
    let expected = scorer.score(&picture, prompt).unwrap().score;
    assert!(
        text(&o.stdout).contains(&format!("CLIP score {expected:.2} ({clip_s}): {out_s}")),
        "{}",
        text(&o.stdout)
    );
    let o = sdbench(
        home.path(),
        "http://127.0.0.1:9",
        &["history", "list", "--json"],
    );
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap();
    let o = sdbench(home.path(), "http://127.0.0.1:9", &["history", "show", id]);
    let record: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(record["clip_score"].as_f64(), Some(expected), "{record}");
}
