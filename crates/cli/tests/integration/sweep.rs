//! `sdbench sweep` end to end on the tiny fixture model: backends crossed with batch sizes into one
//! sweep file that `sdbench report` draws, `--batch max` stopping at the fit check's limit, and
//! the axes' refusals.

use std::path::Path;
use std::process::{Command, Output};

use sdbench_bench::sweep::{Sweep, SWEEP_JSON_SCHEMA};
use sdbench_diffusion::{
    BackendKind, MemoryProfile, ModelSource, Pipeline, Precision, RequestShape,
};

use crate::cli::vulkan_usable;
use crate::common::{fixtures, sdbench, text};

fn tiny() -> std::path::PathBuf {
    fixtures().join("tiny-sd")
}

/// `sdbench` with no Hub to reach (the models are folders).
fn run(home: &Path, args: &[&str]) -> Output {
    sdbench(home, "http://127.0.0.1:9", args)
}

/// The common arguments: the tiny model, one step of one image at 32x24, no idle baseline.
fn small(model: &str) -> Vec<&str> {
    vec![
        "sweep",
        "--model",
        model,
        "--steps",
        "1",
        "--images",
        "1",
        "--size",
        "32x24",
        "--baseline",
        "0",
        "--precision",
        "f32",
    ]
}

fn read_sweep(path: &Path) -> Sweep {
    let text = std::fs::read_to_string(path).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(SWEEP_JSON_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let result_schema: serde_json::Value =
        serde_json::from_str(sdbench_bench::result::JSON_SCHEMA).unwrap();
    let results = jsonschema::validator_for(&result_schema).unwrap();
    for point in value["points"].as_array().unwrap() {
        if !point["result"].is_null() {
            let errors: Vec<String> = results
                .iter_errors(&point["result"])
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{errors:?}");
        }
    }
    Sweep::from_json(&text).unwrap()
}

/// `--backend cpu,vulkan --batch 1,2,4`: six points, each a run of the same prompt and seed with
/// its batch, in one schema-checked file; the table names the fastest; the report draws the
/// throughput against the batch size per backend.
#[test]
fn a_sweep_over_backends_and_batches_writes_every_point_and_the_report_draws_it() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("sweep.json");
    let model = tiny().display().to_string();
    let backends = if vulkan_usable() { "cpu,vulkan" } else { "cpu" };
    let mut args = small(&model);
    let out_s = out.display().to_string();
    args.extend(["--backend", backends, "--batch", "1,2,4", "--out", &out_s]);
    let o = run(home.path(), &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sweep = read_sweep(&out);
    let expected: Vec<(String, usize)> = backends
        .split(',')
        .flat_map(|b| [1, 2, 4].map(|n| (b.to_string(), n)))
        .collect();
    let got: Vec<(String, usize)> = sweep
        .points
        .iter()
        .map(|p| (p.settings.backend.clone(), p.settings.batch))
        .collect();
    assert_eq!(got, expected);
    for p in &sweep.points {
        let r = p.result.as_ref().expect("every point runs");
        assert_eq!(r.backend.name, p.settings.backend);
        assert_eq!(r.workload.batch, p.settings.batch);
        assert_eq!(
            r.results.len(),
            p.settings.batch,
            "one prompt, a batch of images"
        );
        assert_eq!(
            r.workload.prompts,
            sweep.points[0].result.as_ref().unwrap().workload.prompts
        );
        assert!(r.valid);
    }
    let fastest = sweep.fastest.expect("a point ran");
    let best = sweep.points[fastest].megapixels_per_second().unwrap();
    assert!(sweep
        .points
        .iter()
        .all(|p| p.megapixels_per_second().unwrap() <= best));
    let table = text(&o.stdout);
    assert_eq!(table.lines().count(), 1 + expected.len() + 1, "{table}");
    assert!(
        table.contains(&format!(
            "fastest: {} ({best:.3} megapixels/s)",
            sweep.points[fastest].settings.describe()
        )),
        "{table}"
    );

    let page = home.path().join("sweep.html");
    let page_s = page.display().to_string();
    let o = run(home.path(), &["report", &out_s, "--out", &page_s]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Images per minute against batch size"));
    assert_eq!(
        html.matches("<svg").count(),
        2,
        "batch lines and the points' bars"
    );
    assert_eq!(html.matches("<tr").count(), 1 + expected.len());
    for backend in backends.split(',') {
        assert!(
            html.contains(&format!("{backend} f32 full 32x24")),
            "{backend}"
        );
    }
    let o = run(home.path(), &["report", &out_s, "--out", "sweep.md"]);
    assert!(text(&o.stderr).contains("a sweep's report is HTML"));

    // The history keeps every point under the sweep's id.
    let o = run(
        home.path(),
        &["history", "list", "--sweep", &sweep.sweep_id, "--json"],
    );
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut expected_ids: Vec<&str> = sweep
        .points
        .iter()
        .map(|p| p.result.as_ref().unwrap().run_id.as_str())
        .collect();
    ids.sort_unstable();
    expected_ids.sort_unstable();
    assert_eq!(ids, expected_ids);
    assert!(sweep
        .points
        .iter()
        .all(|p| p.result.as_ref().unwrap().sweep_id.as_deref() == Some(sweep.sweep_id.as_str())));
}

/// `--batch max` where the memory is fixed between what two batches need (the host's, for the CPU
/// backend, by SD Bench's host memory limit): the smaller and every batch below it run, the next
/// is skipped by the fit check before anything is allocated, and the sweep names the largest that
/// ran. (The tiny model's need grows with the batch only where the denoiser's activations pass the
/// VAE's: the first such batch is searched for.)
#[test]
fn batch_max_stops_at_the_fit_checks_limit() {
    let need = |batch: usize| {
        Pipeline::memory_need(
            &ModelSource::Folder(tiny()),
            BackendKind::Cpu,
            Precision::F32,
            MemoryProfile::Full,
            &RequestShape {
                batch,
                ..RequestShape::image(32, 24)
            },
        )
        .unwrap()
    };
    let batches = || std::iter::successors(Some(1usize), |b| (*b < 32).then_some(b * 2));
    let largest = batches()
        .find(|&b| need(b) < need(2 * b))
        .expect("the need grows with the batch");
    let limit = (need(largest) + need(2 * largest)) as f64 / 2.0 / (1u64 << 30) as f64;
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("max.json");
    let model = tiny().display().to_string();
    let out_s = out.display().to_string();
    let mut args = small(&model);
    args.extend(["--backend", "cpu", "--batch", "max", "--out", &out_s]);
    let o = Command::new(env!("CARGO_BIN_EXE_sdbench"))
        .args(&args)
        .env("HF_HUB_CACHE", home.path().join("hub"))
        .env("SDBENCH_DATA_DIR", home.path().join("data"))
        .env("HF_HUB_OFFLINE", "1")
        .env("SDBENCH_HOST_MEMORY_LIMIT_GIB", format!("{limit:.9}"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sweep = read_sweep(&out);
    let ran: Vec<(usize, bool)> = sweep
        .points
        .iter()
        .map(|p| (p.settings.batch, p.result.is_some()))
        .collect();
    let mut expected: Vec<(usize, bool)> = batches()
        .take_while(|&b| b <= largest)
        .map(|b| (b, true))
        .collect();
    expected.push((2 * largest, false));
    assert_eq!(ran, expected);
    let skipped = sweep.points.last().unwrap().skipped.as_deref().unwrap();
    assert!(
        skipped.starts_with("does not fit: out of host memory before starting"),
        "{skipped}"
    );
    let l = &sweep.largest_batches[0];
    assert_eq!((l.batch, l.next), (Some(largest), Some(2 * largest)));
    assert!(text(&o.stdout).contains(&format!(
        "largest batch, cpu f32 full 32x24: {largest} (batch {} did not run: see the skipped point above)",
        2 * largest
    )));
}

/// Each axis is checked before anything runs, with the value named.
#[test]
fn the_axes_are_refused_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    let model = tiny().display().to_string();
    for (extra, says) in [
        (
            vec!["--batch", "0"],
            "--batch 0: batch must be from 1 to 64 images",
        ),
        (
            vec!["--batch", "max,2"],
            "--batch max: give whole numbers, or max alone",
        ),
        (vec!["--size", "33x24"], "--size 33x24: width"),
        (vec!["--size", "32"], "--size 32: give WIDTHxHEIGHT"),
        (
            vec!["--backend", "all,cpu"],
            "--backend all already names every usable backend",
        ),
        (vec!["--backend", "tpu"], "--backend tpu"),
        (vec!["--memory", "tiny"], "--memory tiny: choose full"),
        (vec!["--precision", "f8"], "--precision f8"),
        (vec!["--out", "sweep.txt"], "must end in .json"),
    ] {
        let mut args = small(&model);
        args.extend(extra.iter().copied());
        let o = run(home.path(), &args);
        assert!(!o.status.success());
        let err = text(&o.stderr);
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!err.contains("point 1"), "{extra:?} ran: {err}");
    }
}
