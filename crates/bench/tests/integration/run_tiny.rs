//! The runner end to end on the tiny diffusers fixture: a custom small workload on the CPU, with a
//! fake RAPL counter that a background thread advances at a known rate, so power and energy
//! figures can be checked. The result must validate against the committed schema and round-trip.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sdbench_bench::result::{AppInfo, BenchResult, JSON_SCHEMA};
use sdbench_bench::runner::{self, Event};
use sdbench_bench::summary;
use sdbench_bench::{BenchError, ModelChoice, Overrides, RunOptions, Workload};
use sdbench_diffusion::device::cpu_device;
use sdbench_diffusion::pipeline::B;
use sdbench_diffusion::quality::clip_score::ClipScorer;
use sdbench_diffusion::{BackendRequest, CancelToken, ModelSource, Precision};
use sdbench_hub::{HubSettings, RepoId};

fn tiny() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures/tiny-sd")
}

/// A sysfs tree with one RAPL package whose counter rises at `watts` while the guard lives.
struct FakeRapl {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeRapl {
    fn start(root: &Path, watts: f64) -> FakeRapl {
        let zone = root.join("sys/class/powercap/intel-rapl:0");
        std::fs::create_dir_all(&zone).unwrap();
        std::fs::write(zone.join("max_energy_range_uj"), "262143328850").unwrap();
        std::fs::write(zone.join("energy_uj"), "1000000").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while !flag.load(Ordering::SeqCst) {
                let uj = 1_000_000.0 + watts * 1e6 * start.elapsed().as_secs_f64();
                // Write-then-rename so a reader never sees a half-written number.
                let tmp = zone.join("energy_uj.tmp");
                std::fs::write(&tmp, format!("{}", uj as u64)).unwrap();
                std::fs::rename(&tmp, zone.join("energy_uj")).unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        FakeRapl {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FakeRapl {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn options(root: &Path, images: usize) -> RunOptions {
    let workload = Workload::standard()
        .with_overrides(&Overrides {
            steps: Some(3),
            width: Some(32),
            height: Some(24),
            images: Some(images),
            ..Overrides::default()
        })
        .unwrap();
    let mut options = RunOptions::new(
        workload,
        ModelChoice::Local(ModelSource::Folder(tiny())),
        AppInfo {
            name: "sdbench".into(),
            version: "test".into(),
            commit: None,
        },
    );
    options.backend = BackendRequest::Cpu;
    options.precision = Some(Precision::F32);
    options.sysfs_root = root.to_path_buf();
    options.use_nvml = false;
    options.baseline = Duration::from_millis(400);
    options.hub = HubSettings {
        cache_dir: root.join("hub"),
        endpoint: "http://127.0.0.1:9".into(),
        token: None,
        offline: true,
    };
    options
}

pub fn validate(value: &serde_json::Value) -> Result<(), Vec<String>> {
    let schema: serde_json::Value = serde_json::from_str(JSON_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Equal after a JSON round trip: serde_json may read a float back one unit in the last place
/// away, so numbers compare to 1e-12 relative, everything else exactly.
fn assert_same(a: &BenchResult, b: &BenchResult) {
    fn close(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
        use serde_json::Value::*;
        match (a, b) {
            (Number(x), Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!(
                    (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                    "{path}: {x} != {y}"
                );
            }
            (Array(x), Array(y)) => {
                assert_eq!(x.len(), y.len(), "{path}");
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    close(u, v, &format!("{path}[{i}]"));
                }
            }
            (Object(x), Object(y)) => {
                assert_eq!(
                    x.keys().collect::<Vec<_>>(),
                    y.keys().collect::<Vec<_>>(),
                    "{path}"
                );
                for (k, u) in x {
                    close(u, &y[k], &format!("{path}.{k}"));
                }
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }
    close(
        &serde_json::to_value(a).unwrap(),
        &serde_json::to_value(b).unwrap(),
        "",
    );
}

#[test]
fn a_custom_run_on_the_tiny_model_produces_a_valid_schema_checked_result() {
    let root = tempfile::tempdir().unwrap();
    let _rapl = FakeRapl::start(root.path(), 40.0);
    let mut events = Vec::new();
    // At 32x24 an idle machine times the three images in under 0.2 s: too few 10 Hz readings
    // for a power figure (it needs two), and too short to average the fake counter's ticks.
    let mut options = options(root.path(), 3);
    (options.workload.width, options.workload.height) = (96, 64);
    // The fake counter's writer thread lags behind its clock when the machine is busy (CI runs
    // two tests per core's worth): over a 0.4 s baseline a 40 ms lag was 10% of the idle figure.
    options.baseline = Duration::from_secs(1);
    let mut output = runner::run(
        &options,
        &mut |e| events.push(e.clone()),
        &CancelToken::new(),
    )
    .unwrap();
    let r = &output.result;

    // Workload and identity.
    assert_eq!(r.workload.name, "custom");
    assert!(!r.workload.standard);
    assert_eq!(r.workload.model.source, "folder");
    assert_eq!(r.workload.model.files.len(), 3);
    assert!(r
        .workload
        .model
        .files
        .iter()
        .all(|f| f.sha256.len() == 64 && f.bytes > 0));
    assert_eq!(
        (r.backend.name.as_str(), r.backend.precision.as_str()),
        ("cpu", "f32")
    );
    assert_eq!(r.results.len(), 3);
    let seeds: Vec<u64> = r.results.iter().map(|x| x.seed).collect();
    assert_eq!(seeds, [42, 1234, 2718]);

    // Per-image timings are consistent with each other.
    for x in &r.results {
        assert_eq!(x.step_seconds.len(), 3);
        let steps: f64 = x.step_seconds.iter().sum();
        assert!(steps <= x.stages.unet_loop + 1e-6);
        let stages = x.stages.text_encoder + x.stages.unet_loop + x.stages.vae_decode;
        assert!(
            stages <= x.seconds + 1e-6 && x.seconds < stages + 0.05,
            "{x:?}"
        );
        assert!((x.steps_per_second - 3.0 / x.stages.unet_loop).abs() < 1e-9);
        assert!(x.image.check.valid, "{:?}", x.image.check.reason);
    }
    // The CPU backend runs each operation as it is called: its steps are timed where they ran.
    let timing = r.step_timing.as_ref().unwrap();
    assert_eq!(timing.method, "every_step");
    assert!(timing.step_seconds.is_empty() && timing.sync_cost_ratio.is_none());
    // No device allocator on the CPU: no VRAM report.
    assert!(r.vram_report.is_none());
    let total: f64 = r.results.iter().map(|x| x.seconds).sum();
    let s = &r.scores;
    assert!((s.images_per_minute - 180.0 / total).abs() < 1e-9);
    assert_eq!(s.score, Some((100.0 * s.images_per_minute).round() as u64));
    assert!(r.valid && r.invalid_reasons.is_empty());

    // Power from the fake RAPL counter: 40 W, during the run and the baseline (within 15%: the
    // writer's lag on a busy machine).
    let p = &s.power;
    assert!(p.available, "{:?}", p.reason);
    assert_eq!(
        p.source.as_deref(),
        Some("rapl:package (CPU package (1 zone))")
    );
    let avg = p.avg_w.unwrap();
    assert!((avg - 40.0).abs() < 6.0, "avg {avg}");
    let idle = p.idle_w.unwrap();
    assert!((idle - 40.0).abs() < 6.0, "idle {idle}");
    let window = r.telemetry.timed.end - r.telemetry.timed.start;
    assert!((p.energy_j_per_image.unwrap() - avg * window / 3.0).abs() < 1e-6);
    assert!((p.images_per_minute_per_watt.unwrap() - s.images_per_minute / avg).abs() < 1e-9);
    // The CPU backend has no allocator; the reason says so.
    assert_eq!(s.vram_peak_bytes, None);
    assert!(s
        .vram
        .reason
        .as_deref()
        .unwrap()
        .contains("cpu backend has no device memory"));

    // The hardware's state: the fake RAPL package reports no clock, temperature or throttle
    // reasons, each said by name, and the run is not called throttled for want of them.
    let h = &s.hardware;
    assert_eq!(h.source.as_deref(), Some("rapl:package"));
    assert!(h.samples >= 1, "{h:?}");
    assert!(!h.throttled && !s.throttled && h.throttle.is_empty());
    for what in ["core clock", "temperature", "throttle reasons"] {
        assert!(
            h.unavailable
                .iter()
                .any(|u| u.starts_with(what) && u.contains("rapl:package")),
            "{what}: {:?}",
            h.unavailable
        );
    }

    // Telemetry covers the baseline and the timed window at about 10 Hz.
    assert!(r.telemetry.baseline.end <= r.telemetry.timed.start);
    assert!(
        r.telemetry.samples.len() >= 4,
        "{}",
        r.telemetry.samples.len()
    );
    assert!(r.telemetry.samples.last().unwrap().t >= r.telemetry.timed.end);

    // Events: a warm-up before the timed images, steps in order.
    let started: Vec<(usize, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ImageStarted { index, warmup, .. } => Some((*index, *warmup)),
            _ => None,
        })
        .collect();
    assert_eq!(started, [(0, true), (1, false), (2, false), (3, false)]);
    assert!(r.cold_start.warmup_seconds > 0.0 && r.cold_start.load_seconds > 0.0);

    // Schema and round trip, before and after saving the images.
    let value = serde_json::to_value(r).unwrap();
    validate(&value).unwrap();
    assert_same(&BenchResult::from_json(&r.to_json()).unwrap(), r);
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("result.json");
    let images = runner::save(&mut output, &json).unwrap();
    assert_eq!(images.len(), 3);
    assert!(images.iter().all(|p| p.is_file()));
    let loaded = BenchResult::load(&json).unwrap();
    assert_same(&loaded, &output.result);
    assert_eq!(
        loaded.results[1].image.file.as_deref(),
        Some("result-2.png")
    );
    validate(&serde_json::to_value(&loaded).unwrap()).unwrap();
}

/// On a device that queues work the timed images queue their steps (syncs at stage edges only);
/// the per-step times come from one more image synced after every step, after the timed region,
/// which also prices those syncs.
#[test]
fn on_a_queueing_device_steps_are_timed_on_a_separate_diagnostic_image() {
    if sdbench_diffusion::device::probe(sdbench_diffusion::BackendKind::Vulkan)
        .devices
        .is_empty()
    {
        assert!(
            std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() != Ok("1"),
            "no Vulkan device"
        );
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 2);
    o.backend = BackendRequest::Vulkan;
    let mut events = Vec::new();
    let output = runner::run(&o, &mut |e| events.push(e.clone()), &CancelToken::new()).unwrap();
    let r = &output.result;
    assert_eq!(r.backend.name, "vulkan");
    for x in &r.results {
        assert!(x.step_seconds.is_empty(), "{x:?}");
        assert!((x.steps_per_second - 3.0 / x.stages.unet_loop).abs() < 1e-9);
    }
    let timing = r.step_timing.as_ref().unwrap();
    assert_eq!(timing.method, "diagnostic_image");
    assert_eq!(timing.step_seconds.len(), 3);
    let ratio = timing.sync_cost_ratio.unwrap();
    assert!(ratio > 0.0 && ratio.is_finite(), "{ratio}");
    // Timed images' step events carry no time; the warm-up's do.
    for e in &events {
        if let Event::Step {
            seconds, warmup, ..
        } = e
        {
            assert_eq!(seconds.is_some(), *warmup, "{e:?}");
        }
    }
    let notes = events
        .iter()
        .filter(|e| matches!(e, Event::Note { text: n } if n.contains("sync after every step")))
        .count();
    assert_eq!(notes, 1);
    // The allocator after loading, then the diagnostic image's phases, each after a sync.
    let vram = r.vram_report.as_ref().unwrap();
    let phases: Vec<_> = vram.phases.iter().map(|p| p.phase.as_str()).collect();
    assert_eq!(
        phases,
        ["load", "text_encode", "step", "step", "step", "decode"]
    );
    assert!(
        vram.phases
            .iter()
            .all(|p| p.in_use_bytes > 0 && p.reserved_bytes >= p.in_use_bytes),
        "{vram:?}"
    );
    // lavapipe has no clock, temperature or throttle readings: said, and not throttled.
    let h = &r.scores.hardware;
    assert!(!h.throttled && !r.scores.throttled, "{h:?}");
    assert!(
        h.temperature_peak_c.is_some() || h.unavailable.iter().any(|u| u.contains("temperature")),
        "{h:?}"
    );
    validate(&serde_json::to_value(r).unwrap()).unwrap();
    assert_same(&BenchResult::from_json(&r.to_json()).unwrap(), r);
    let rows = sdbench_bench::summary::rows(r);
    assert!(
        rows.iter()
            .any(|(m, _, _)| m == "hardware state unavailable" || m == "peak temperature"),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .any(|(m, v, _)| m.starts_with("denoising loop with a sync")
                && v == &format!("{ratio:.3}")),
        "{rows:?}"
    );
}

/// `--batch 2`: two images per prompt in one generation, each recording half its time.
#[test]
fn a_batched_run_records_every_image_and_its_share_of_the_time() {
    let root = tempfile::tempdir().unwrap();
    let mut options = options(root.path(), 2);
    options.workload = Workload::standard()
        .with_overrides(&Overrides {
            steps: Some(2),
            width: Some(32),
            height: Some(24),
            images: Some(2),
            batch: Some(2),
            ..Overrides::default()
        })
        .unwrap();
    let mut output = runner::run(&options, &mut |_| {}, &CancelToken::new()).unwrap();
    let r = &output.result;
    assert_eq!(r.workload.batch, 2);
    let placed: Vec<(u64, usize)> = r.results.iter().map(|x| (x.seed, x.batch_index)).collect();
    assert_eq!(placed, [(42, 0), (42, 1), (1234, 0), (1234, 1)]);
    for pair in r.results.chunks(2) {
        assert_eq!(pair[0].seconds, pair[1].seconds);
        assert_eq!(pair[0].step_seconds, pair[1].step_seconds);
        assert_ne!(pair[0].image.check.sha256, pair[1].image.check.sha256);
    }
    let total: f64 = r.results.iter().map(|x| x.seconds).sum();
    assert!((r.scores.images_per_minute - 4.0 * 60.0 / total).abs() < 1e-9);
    validate(&serde_json::to_value(r).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let images = runner::save(&mut output, &dir.path().join("result.json")).unwrap();
    assert_eq!(images.len(), 4);
}

/// `--min-duration`: whole passes of the prompts until the minimum has passed, none begun after
/// it; the images kept and saved are the first pass's, and the result says how it was timed.
#[test]
fn a_minimum_duration_times_whole_passes_until_it_has_passed() {
    let root = tempfile::tempdir().unwrap();
    let mut options = options(root.path(), 2);
    assert!(options.set_min_duration(0.0).is_err());
    assert!(options.set_min_duration(4000.0).is_err());
    options.set_min_duration(1.0).unwrap();
    let (mut output, notes) = run_noting(&options);
    let r = &output.result;
    assert_eq!(r.workload.min_duration_seconds, Some(1.0));
    let passes = r.results.len() / 2;
    assert!(
        passes >= 2,
        "a tiny image takes far less than 0.5 s: {passes} passes"
    );
    let order: Vec<(usize, usize)> = r.results.iter().map(|x| (x.pass, x.prompt_index)).collect();
    let whole: Vec<(usize, usize)> = (0..passes).flat_map(|p| [(p, 0), (p, 1)]).collect();
    assert_eq!(order, whole);
    let window = r.telemetry.timed.end - r.telemetry.timed.start;
    assert!(window >= 1.0, "the timed region lasted {window} s");
    let before_last: f64 = r.results[..r.results.len() - 2]
        .iter()
        .map(|x| x.seconds)
        .sum();
    assert!(
        before_last < 1.0,
        "a pass began after the minimum: {before_last} s"
    );
    let total: f64 = r.results.iter().map(|x| x.seconds).sum();
    assert!((r.scores.images_per_minute - 60.0 * r.results.len() as f64 / total).abs() < 1e-9);
    assert_eq!(
        notes.iter().filter(|n| n.starts_with("pass ")).count(),
        passes - 1,
        "{notes:?}"
    );
    let timed_for = summary::header(r)
        .into_iter()
        .find(|(k, _)| k == "timed for")
        .unwrap()
        .1;
    assert!(
        timed_for.contains(&format!(
            "(at least 1 s asked): {} images in {passes} passes of the prompts",
            r.results.len()
        )),
        "{timed_for}"
    );
    validate(&serde_json::to_value(r).unwrap()).unwrap();
    let back = BenchResult::from_json(&serde_json::to_string(r).unwrap()).unwrap();
    assert_same(r, &back);
    assert_eq!(output.images.len(), 2, "the first pass's images");
    let dir = tempfile::tempdir().unwrap();
    let saved = runner::save(&mut output, &dir.path().join("result.json")).unwrap();
    assert_eq!(saved.len(), 2);
    let files: Vec<bool> = output
        .result
        .results
        .iter()
        .map(|x| x.image.file.is_some())
        .collect();
    assert!(files[..2].iter().all(|&f| f) && files[2..].iter().all(|&f| !f));
}

/// `--quality`: each first-pass picture's CLIP score against its prompt (the scorer's own on the
/// saved picture), their mean, and the scoring after the timed region: it began after the timed
/// window's end, and the timed figures are the images' own seconds.
#[test]
fn quality_scores_the_pictures_after_the_timed_region() {
    let root = tempfile::tempdir().unwrap();
    let mut options = options(root.path(), 2);
    let folder =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures/tiny-clip");
    options.quality = Some(runner::QualityModel {
        name: "tiny-clip".into(),
        folder: folder.clone(),
    });
    let (output, notes) = run_noting(&options);
    let r = &output.result;
    let q = r.scores.quality.as_ref().expect("scored");
    assert_eq!(q.clip_model, "tiny-clip");
    assert!(
        q.note.is_none(),
        "the tiny model's weights are its own, not synthetic"
    );
    assert!(
        q.started_at >= r.telemetry.timed.end,
        "{} < {}",
        q.started_at,
        r.telemetry.timed.end
    );
    assert!(
        notes.iter().any(|n| n.contains("after the timed region")),
        "{notes:?}"
    );
    let scorer = ClipScorer::<B>::load(&folder, &cpu_device()).unwrap();
    let mut sum = 0.0;
    for (image, entry) in output.images.iter().zip(&r.results) {
        let prompt = &r.workload.prompts[entry.prompt_index].prompt;
        let expected = scorer.score(image, prompt).unwrap().score;
        assert_eq!(entry.clip_score, Some(expected));
        sum += expected;
    }
    assert!((q.clip_score_mean - sum / 2.0).abs() < 1e-12);
    let total: f64 = r.results.iter().map(|x| x.seconds).sum();
    assert!((r.scores.images_per_minute - 120.0 / total).abs() < 1e-9);
    validate(&serde_json::to_value(r).unwrap()).unwrap();
    let row = summary::rows(r)
        .into_iter()
        .find(|(k, _, _)| k == "CLIP score (mean)")
        .unwrap();
    assert!(
        row.1.contains("(tiny-clip, after the timed region)"),
        "{row:?}"
    );
}

#[test]
fn a_cancelled_run_returns_cancelled() {
    let root = tempfile::tempdir().unwrap();
    let cancel = CancelToken::new();
    let c = cancel.clone();
    let err = runner::run(
        &options(root.path(), 2),
        &mut |e| {
            if matches!(
                e,
                Event::Step {
                    warmup: true,
                    step: 1,
                    ..
                }
            ) {
                c.cancel();
            }
        },
        &cancel,
    )
    .err()
    .unwrap();
    assert!(matches!(err, BenchError::Cancelled), "{err}");
}

#[test]
fn without_telemetry_power_says_why() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.baseline = Duration::ZERO;
    let output = runner::run(&o, &mut |_| {}, &CancelToken::new()).unwrap();
    let p = &output.result.scores.power;
    assert!(!p.available);
    assert!(
        p.reason.as_deref().unwrap().contains("RAPL"),
        "{:?}",
        p.reason
    );
    assert_eq!(p.avg_w, None);
    validate(&serde_json::to_value(&output.result).unwrap()).unwrap();
}

#[test]
fn a_single_file_checkpoint_runs_and_is_recorded_as_one_file() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.baseline = Duration::ZERO;
    let file = tiny().with_file_name("tiny-sd.ldm.safetensors");
    o.model = ModelChoice::Local(ModelSource::Checkpoint {
        file: file.clone(),
        config: Some(tiny()),
        parts: Default::default(),
    });
    let output = runner::run(&o, &mut |_| {}, &CancelToken::new()).unwrap();
    let model = &output.result.workload.model;
    assert_eq!(model.source, "checkpoint");
    assert_eq!(model.id, file.display().to_string());
    assert!(!model.sd15_architecture);
    assert_eq!(model.files.len(), 1);
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(model.files[0].bytes, bytes.len() as u64);
    assert_eq!(
        model.files[0].sha256,
        sdbench_bench::checks::hex(&<sha2::Sha256 as sha2::Digest>::digest(&bytes))
    );
    // Plain float weights: no quantization, each type's parameters counted.
    assert_eq!(model.quantization, None);
    assert!(
        model.files[0].weight_types["F16"] > 100_000,
        "{:?}",
        model.files[0].weight_types
    );
    assert!(output.result.valid);
    validate(&serde_json::to_value(&output.result).unwrap()).unwrap();
}

#[test]
fn a_gguf_checkpoint_is_recorded_with_its_quantization() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.baseline = Duration::ZERO;
    let file = tiny().with_file_name("weight-formats/tiny-sd.ldm.q8_0.gguf");
    o.model = ModelChoice::Local(ModelSource::Checkpoint {
        file: file.clone(),
        config: Some(tiny()),
        parts: Default::default(),
    });
    let output = runner::run(&o, &mut |_| {}, &CancelToken::new()).unwrap();
    let model = &output.result.workload.model;
    assert_eq!(model.quantization.as_deref(), Some("Q8_0"));
    let types = &model.files[0].weight_types;
    assert!(types["Q8_0"] > 0 && types["F16"] > 0, "{types:?}");
    let key = sdbench_bench::comparison::ComparisonKey::of(&output.result);
    assert_eq!(key.weights, "Q8_0");
    assert!(
        key.describe().contains("Q8_0 weights"),
        "{}",
        key.describe()
    );
    assert!(!output.result.workload.standard);
    // The summary says what the weights were.
    let header = sdbench_bench::summary::header(&output.result);
    assert!(
        header.iter().any(
            |(k, v)| k == "weights" && v.starts_with("Q8_0, linear layers kept in those codes")
        ),
        "{header:?}"
    );
    validate(&serde_json::to_value(&output.result).unwrap()).unwrap();
}

/// A run and the notes it sent.
fn run_noting(o: &RunOptions) -> (runner::RunOutput, Vec<String>) {
    let mut notes = Vec::new();
    let output = runner::run(
        o,
        &mut |e| {
            if let Event::Note { text: n } = e {
                notes.push(n.clone())
            }
        },
        &CancelToken::new(),
    )
    .unwrap();
    (output, notes)
}

#[test]
fn the_standard_workload_on_another_architecture_is_not_called_standard() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.baseline = Duration::ZERO;
    // The standard workload's identity on a small size, so the tiny model runs it quickly: what
    // is checked is that a model with other configs never yields a standard result.
    o.workload.standard = true;
    o.workload.name = Workload::standard().name;
    let (output, notes) = run_noting(&o);
    let r = &output.result;
    assert!(!r.workload.model.sd15_architecture);
    assert_eq!(r.workload.model.family.as_deref(), Some("sd1"));
    assert_eq!(r.workload.model.preset, None);
    assert!(!r.workload.standard);
    assert!(
        notes.iter().any(|n| n
            .contains("does not have stable-diffusion-v1-5/stable-diffusion-v1-5's architecture")),
        "{notes:?}"
    );
    // Offline, with nothing of the repository in the cache, its own weights cannot be told.
    assert!(
        notes.iter().any(|n| n.contains(
            "could not be checked against stable-diffusion-v1-5/stable-diffusion-v1-5's files (HF_HUB_OFFLINE is set"
        )),
        "{notes:?}"
    );
    validate(&serde_json::to_value(r).unwrap()).unwrap();

    // Every shard of a sharded component is recorded with its sha256.
    let mut klein = options(root.path(), 1);
    klein.model = ModelChoice::Local(ModelSource::Folder(
        tiny().with_file_name("tiny-flux2-klein"),
    ));
    let flux = Workload::named("flux2-klein-1024-4").unwrap();
    klein.workload.name = flux.name.clone();
    klein.workload.preset = flux.preset;
    klein.workload.scheduler = flux.scheduler;
    klein.workload.guidance = flux.guidance;
    klein.workload.width = 32;
    klein.workload.height = 32;
    klein.workload.steps = 1;
    let (output, _) = run_noting(&klein);
    let files = &output.result.workload.model.files;
    let shards = files
        .iter()
        .filter(|f| f.path.contains("text_encoder/model-0000"))
        .count();
    assert_eq!(shards, 7, "{files:?}");
    assert!(files
        .iter()
        .all(|f| f.sha256.len() == 64 && !f.weight_types.is_empty()));
}

/// When this machine's Hugging Face cache holds the workload's repository files with the same
/// sha256 as the model's, its weights count as the workload's own: no note says otherwise.
#[test]
fn weights_found_in_the_workloads_cached_repository_are_its_own() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.baseline = Duration::ZERO;
    o.workload.standard = true;
    o.workload.name = Workload::standard().name;
    let (output, _) = run_noting(&o);
    let blobs = o
        .hub
        .model_dir(&RepoId::parse(o.workload.preset.repository()).unwrap().0)
        .join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    for file in &output.result.workload.model.files {
        std::fs::write(blobs.join(&file.sha256), b"").unwrap();
    }
    let (_, notes) = run_noting(&o);
    assert!(
        !notes
            .iter()
            .any(|n| n.contains("could not be checked") || n.contains("is none of")),
        "{notes:?}"
    );
    // One file that is not the repository's is named.
    let (first, rest) = output.result.workload.model.files.split_first().unwrap();
    std::fs::remove_file(blobs.join(&first.sha256)).unwrap();
    assert!(!rest.is_empty());
    let (_, notes) = run_noting(&o);
    assert!(
        notes.iter().any(|n| n.contains("could not be checked")),
        "{notes:?}"
    );
}

/// FLUX.2 klein's workload on a Stable Diffusion model is refused before the model is loaded
/// (its scheduler is not an SD one), naming the SD workloads.
#[test]
fn another_familys_workload_is_refused_before_loading() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.baseline = Duration::ZERO;
    let klein = Workload::named("flux2-klein-1024-4").unwrap();
    o.workload.name = klein.name.clone();
    o.workload.preset = klein.preset;
    o.workload.scheduler = klein.scheduler;
    let mut events = Vec::new();
    let err = runner::run(&o, &mut |e| events.push(e.clone()), &CancelToken::new())
        .err()
        .expect("refused");
    assert!(matches!(err, BenchError::Workload(_)), "{err:?}");
    let message = err.to_string();
    for needle in [
        "a Stable Diffusion model",
        "flow_euler",
        "--workload sd15-512-30 or --workload sdxl-1024-20",
    ] {
        assert!(message.contains(needle), "{needle}: {message}");
    }
    assert!(
        !events.iter().any(|e| matches!(e, Event::Loading { .. })),
        "{events:?}"
    );
}

/// The SDXL workload's identity at a small size on the tiny SDXL model: it runs the SDXL
/// pipeline, records the family, and (its configs not being SDXL base's) is not standard.
#[test]
fn the_sdxl_workload_runs_an_sdxl_model_and_names_its_family() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.baseline = Duration::ZERO;
    o.model = ModelChoice::Local(ModelSource::Folder(tiny().with_file_name("tiny-sdxl")));
    let sdxl = Workload::named("sdxl-1024-20").unwrap();
    o.workload.name = sdxl.name.clone();
    o.workload.preset = sdxl.preset;
    o.workload.guidance = sdxl.guidance;
    o.workload.standard = true;
    let (output, notes) = run_noting(&o);
    let r = &output.result;
    assert!(r.valid, "{:?}", r.invalid_reasons);
    assert_eq!(r.workload.name, "sdxl-1024-20");
    assert_eq!(r.workload.model.family.as_deref(), Some("sdxl"));
    assert!(!r.workload.standard);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("stabilityai/stable-diffusion-xl-base-1.0")),
        "{notes:?}"
    );
    let header = sdbench_bench::summary::header(r);
    assert!(
        header[0]
            .1
            .contains("not stabilityai/stable-diffusion-xl-base-1.0's architecture"),
        "{header:?}"
    );
    validate(&serde_json::to_value(r).unwrap()).unwrap();
}

/// A copy of the tiny model (fp32 files) whose VAE decoder writes NaN into every pixel.
fn tiny_with_nan_vae(dir: &Path) -> PathBuf {
    use sdbench_diffusion::io::safetensors::{write_f32, SafeTensors};
    let model = dir.join("nan-model");
    for sub in ["", "scheduler", "text_encoder", "tokenizer", "unet", "vae"] {
        std::fs::create_dir_all(model.join(sub)).unwrap();
        for entry in std::fs::read_dir(tiny().join(sub)).unwrap() {
            let p = entry.unwrap().path();
            if p.is_file() && !p.to_string_lossy().contains(".fp16.") {
                std::fs::copy(&p, model.join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    let vae = model.join("vae/diffusion_pytorch_model.safetensors");
    let mut file = SafeTensors::open(&vae).unwrap();
    let names: Vec<String> = file.names().map(str::to_string).collect();
    let mut tensors = Vec::new();
    for name in &names {
        let shape = file.info(name).unwrap().shape.clone();
        let mut values = file.read_f32(name).unwrap();
        if name == "decoder.conv_out.bias" {
            values.iter_mut().for_each(|v| *v = f32::NAN);
        }
        tensors.push((name.clone(), shape, values));
    }
    drop(file);
    let refs: Vec<(&str, Vec<usize>, &[f32])> = tensors
        .iter()
        .map(|(n, s, v)| (n.as_str(), s.clone(), v.as_slice()))
        .collect();
    write_f32(&vae, &refs).unwrap();
    model
}

#[test]
fn a_nan_image_makes_the_run_invalid_and_unscored() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 2);
    o.baseline = Duration::ZERO;
    o.model = ModelChoice::Local(ModelSource::Folder(tiny_with_nan_vae(root.path())));
    let output = runner::run(&o, &mut |_| {}, &CancelToken::new()).unwrap();
    let r = &output.result;
    assert!(!r.valid);
    assert_eq!(r.scores.score, None);
    assert_eq!(r.invalid_reasons.len(), 2, "{:?}", r.invalid_reasons);
    assert!(
        r.invalid_reasons[0].contains("NaN or infinite"),
        "{:?}",
        r.invalid_reasons
    );
    assert!(r.results.iter().all(|x| !x.image.check.valid));
    // Timing figures are still reported, so the failure can be diagnosed.
    assert!(r.scores.images_per_minute > 0.0);
    validate(&serde_json::to_value(r).unwrap()).unwrap();
}

/// `--memory minimal`: the result records the profile and what it chose (int8 UNet weights
/// included), and says it is not the standard profile (the schema refuses a standard result with
/// another profile); `auto` records the profile it chose and says why.
#[test]
fn a_memory_profile_is_recorded_and_is_never_standard() {
    let root = tempfile::tempdir().unwrap();
    let mut o = options(root.path(), 1);
    o.workload = Workload::standard()
        .with_overrides(&Overrides {
            steps: Some(2),
            width: Some(32),
            height: Some(32),
            images: Some(1),
            ..Overrides::default()
        })
        .unwrap();
    o.memory = sdbench_diffusion::MemoryProfile::Minimal;
    let output = runner::run(&o, &mut |_| {}, &CancelToken::new()).unwrap();
    let r = &output.result;
    assert_eq!(r.backend.memory_profile.as_deref(), Some("minimal"));
    let p = r.backend.placement.as_ref().unwrap();
    assert_eq!(
        (
            p.text_encoders.as_str(),
            p.cfg.as_str(),
            p.unet_weights.as_str()
        ),
        ("cpu", "sequential", "int8")
    );
    assert!(p.vae_tiling && p.release_between_stages && p.unet_offload);
    // What the decode did at this size, and the VAE's precision (the CPU runs f32).
    let tiles = p.vae_decode_tiles.unwrap();
    assert!(tiles >= 1);
    assert_eq!(p.vae_precision.as_deref(), Some("f32"));
    assert!(!r.workload.standard);
    assert!(r.results.iter().all(|x| x.image.check.valid));
    validate(&serde_json::to_value(r).unwrap()).unwrap();
    let header = sdbench_bench::summary::header(r);
    let tiles_said = match tiles {
        1 => None,
        n => Some(format!("VAE decoded in {n} tiles (half-size tiles)")),
    };
    assert!(
        header.iter().any(|(m, v)| m == "memory profile"
            && v.starts_with("minimal (not the standard profile)")
            && v.ends_with("int8 UNet weights")
            && tiles_said
                .as_ref()
                .map_or(!v.contains("tiles"), |t| v.contains(t.as_str()))),
        "{header:?}"
    );

    // On the CPU backend auto can only choose cpu.
    o.memory = sdbench_diffusion::MemoryProfile::Full;
    o.memory_auto = true;
    let mut notes = Vec::new();
    let output = runner::run(
        &o,
        &mut |e| {
            if let Event::Note { text } = e {
                notes.push(text.clone())
            }
        },
        &CancelToken::new(),
    )
    .unwrap();
    assert_eq!(output.result.backend.memory_profile.as_deref(), Some("cpu"));
    assert!(
        notes
            .iter()
            .any(|n| n == "memory profile: auto chose cpu (the CPU backend runs everything)"),
        "{notes:?}"
    );
}
