//! `sdbench bench`, `download`, `cache` and `submit` end to end, against the tiny fixture model and a
//! loopback server that behaves like the Hub.

use std::path::{Path, PathBuf};
use std::process::Output;

use sdbench_diffusion::io::image::{write_png, RgbImage};
use sdbench_test_server::{FakeRepo, TestServer};

use crate::common::{sdbench, text};

fn tiny() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures/tiny-sd")
}

/// An address where nothing listens.
fn dead_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "failed:\nstdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn validate(value: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(sdbench_bench::result::JSON_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

const SMALL: &[&str] = &[
    "--backend",
    "cpu",
    "--steps",
    "2",
    "--width",
    "32",
    "--height",
    "24",
    "--images",
    "2",
    "--baseline",
    "0.2",
];

#[test]
fn bench_on_a_local_folder_writes_result_images_and_summary() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("run.json");
    let model = tiny().display().to_string();
    let out_s = out.display().to_string();
    let mut args = vec![
        "bench",
        "--model",
        &model,
        "--out",
        &out_s,
        "--format",
        "json",
        "--threads",
        "1",
    ];
    args.extend_from_slice(SMALL);
    let o = sdbench(home.path(), &dead_endpoint(), &args);
    ok(&o);
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["workload"], "custom");
    assert_eq!(summary["standard"], false);
    assert_eq!(summary["valid"], true);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    validate(&result);
    assert_eq!(result["run_id"], summary["run_id"]);
    assert_eq!(result["backend"]["threads"], 1, "{}", result["backend"]);
    let device = format!("{} (1 thread)", sdbench_diffusion::device::cpu_model());
    assert_eq!(result["backend"]["device"], device.as_str());
    assert_eq!(
        result["backend"]["device_index"], 0,
        "{}",
        result["backend"]
    );
    assert_eq!(result["results"].as_array().unwrap().len(), 2);
    assert_eq!(
        result["results"][0]["step_seconds"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for i in 1..=2 {
        let png = home.path().join(format!("run-{i}.png"));
        assert!(png.is_file(), "{} missing", png.display());
        assert_eq!(
            result["results"][i - 1]["image"]["file"],
            format!("run-{i}.png")
        );
    }
    let stderr = text(&o.stderr);
    assert!(stderr.contains("warm-up"), "{stderr}");
    assert!(stderr.contains("estimated time left"), "{stderr}");
    assert!(stderr.contains("image 2/2"), "{stderr}");

    // The other summary formats.
    for (format, needle) in [
        ("md", "| images per minute |"),
        ("csv", "metric,value,unit"),
        ("table", "steps per second"),
    ] {
        let out2 = home.path().join(format!("run-{format}.json"));
        let out2_s = out2.display().to_string();
        let mut args = vec![
            "bench", "--model", &model, "--out", &out2_s, "--format", format,
        ];
        // SMALL without its trailing `--images 2 --baseline 0.2`.
        args.extend_from_slice(&SMALL[..SMALL.len() - 4]);
        args.extend_from_slice(&["--images", "1", "--baseline", "0"]);
        let o = sdbench(home.path(), &dead_endpoint(), &args);
        ok(&o);
        assert!(
            text(&o.stdout).contains(needle),
            "{format}: {}",
            text(&o.stdout)
        );
    }

    // Every run is in the history, newest first; it reads back, exports and is forgotten.
    let history = |args: &[&str]| {
        let mut all = vec!["history"];
        all.extend_from_slice(args);
        sdbench(home.path(), &dead_endpoint(), &all)
    };
    let o = history(&["list", "--json"]);
    ok(&o);
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 4);
    let first_id = result["run_id"].as_str().unwrap();
    assert_eq!(runs[3]["id"], first_id, "the first run is the oldest");
    assert_eq!(runs[3]["kind"], "benchmark");
    let o = history(&["show", first_id]);
    ok(&o);
    let shown: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown["results"], result["results"]);
    let export = home.path().join("export.json");
    ok(&history(&[
        "export",
        first_id,
        "--out",
        &export.display().to_string(),
    ]));
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert_eq!(exported["runs"][0]["run"]["run_id"], first_id);
    ok(&history(&["delete", first_id]));
    let o = history(&["delete", first_id]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("no run"), "{}", text(&o.stderr));
    let o = history(&["list"]);
    ok(&o);
    assert_eq!(text(&o.stdout).lines().count(), 3);
    assert!(!text(&o.stdout).contains(first_id));
}

/// `history check` puts the newest run (or one named) against the earlier runs of its key.
#[test]
fn history_check_flags_a_run_slower_than_its_keys_noise() {
    let home = tempfile::tempdir().unwrap();
    let check = |args: &[&str]| {
        let mut all = vec!["history", "check"];
        all.extend_from_slice(args);
        sdbench(home.path(), &dead_endpoint(), &all)
    };
    let o = check(&[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no benchmark runs"),
        "{}",
        text(&o.stderr)
    );

    let sample = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bench/tests/data/result-v1.json");
    let sample = sdbench_bench::BenchResult::load(&sample).unwrap();
    std::fs::create_dir_all(home.path().join("data")).unwrap();
    let history = sdbench_history::History::open(&home.path().join("data/history.sqlite")).unwrap();
    let add = |day: u32, seconds: f64, device: &str| {
        let mut r = sample.clone();
        r.run_id = format!("00000000-0000-0000-0000-0000000000{day:02}");
        r.created_at = format!("2026-11-{day:02}T10:00:00Z");
        r.scores.seconds_per_image.median = seconds;
        r.backend.device = device.into();
        history.add_benchmark(&r).unwrap();
        r.run_id
    };
    for (day, seconds) in [(1, 2.00), (2, 2.04), (3, 1.98), (4, 2.02)] {
        add(day, seconds, "NVIDIA H100");
    }
    // A faster card's runs are another key: they do not make the H100 look slow.
    add(5, 1.0, "NVIDIA B200");
    let steady = add(6, 2.03, "NVIDIA H100");
    let slow = add(7, 2.30, "NVIDIA H100");

    let o = check(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("run {slow}")) && out.contains("REGRESSION"),
        "{out}"
    );
    assert!(out.contains("earlier runs of this key: 5"), "{out}");
    assert!(
        text(&o.stderr).contains("is a regression"),
        "{}",
        text(&o.stderr)
    );

    let o = check(&[&steady, "--json"]);
    ok(&o);
    let verdict: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(verdict["verdict"], "steady", "{verdict}");
    assert_eq!(verdict["earlier_runs"], 4);
    assert_eq!(verdict["key"]["device"], "NVIDIA H100");

    let lone = add(8, 0.9, "NVIDIA B200");
    let o = check(&[&lone]);
    ok(&o);
    assert!(
        text(&o.stdout).contains("no verdict: 1 earlier valid run(s)"),
        "{}",
        text(&o.stdout)
    );

    // `regressions` finds the slow run among all of them, and only it.
    let o = sdbench(
        home.path(),
        &dead_endpoint(),
        &["history", "regressions", "--json"],
    );
    assert_eq!(o.status.code(), Some(1));
    let found: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [slow.as_str()]);
    assert!(text(&o.stderr).contains("1 of 8 benchmark runs are regressions"));
    history.delete(&slow).unwrap();
    let o = sdbench(home.path(), &dead_endpoint(), &["history", "regressions"]);
    ok(&o);
    assert!(
        text(&o.stdout).contains("no regressions among 7"),
        "{}",
        text(&o.stdout)
    );
}

/// `--workload sdxl-1024-20` runs the SDXL workload's settings (guidance 8) on an SDXL model.
#[test]
fn bench_runs_the_sdxl_workload() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("xl.json");
    let model = tiny().with_file_name("tiny-sdxl").display().to_string();
    let out_s = out.display().to_string();
    let args = [
        "bench",
        "--workload",
        "sdxl-1024-20",
        "--model",
        &model,
        "--out",
        &out_s,
        "--backend",
        "cpu",
        "--steps",
        "1",
        "--width",
        "32",
        "--height",
        "32",
        "--images",
        "1",
        "--baseline",
        "0",
    ];
    let o = sdbench(home.path(), &dead_endpoint(), &args);
    ok(&o);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    validate(&result);
    assert_eq!(result["workload"]["guidance"], 8.0);
    assert_eq!(result["workload"]["model"]["family"], "sdxl");
    assert_eq!(result["workload"]["standard"], false);
}

#[test]
fn bench_refuses_bad_input_before_any_work() {
    let home = tempfile::tempdir().unwrap();
    let model = tiny().display().to_string();
    for (args, needle) in [
        (
            vec!["bench", "--model", &model, "--width", "30"],
            "width must be a multiple of 8 from 8 to 2048 pixels (got 30)",
        ),
        (
            vec!["bench", "--model", &model, "--out", "result.txt"],
            "must end in .json",
        ),
        (
            vec![
                "bench",
                "--model",
                &model,
                "--out",
                "/no/such/folder/r.json",
            ],
            "does not exist",
        ),
        (
            vec!["bench", "--model", "./missing-folder"],
            "does not exist",
        ),
        (vec!["bench", "--model", "not a model"], "a Hub id like"),
        (
            vec!["bench", "--model", &model, "--baseline", "61"],
            "an idle baseline of 61 s is out of range: use 0 to 60 seconds",
        ),
        (vec!["bench", "--model", "a/b c"], "not a model id"),
    ] {
        let o = sdbench(home.path(), &dead_endpoint(), &args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(needle),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    // An unknown workload is a usage error that lists the workloads.
    let o = sdbench(
        home.path(),
        &dead_endpoint(),
        &["bench", "--workload", "sd3-1024-28", "--model", &model],
    );
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("sd3-1024-28") && stderr.contains("sdxl-1024-20"),
        "{stderr}"
    );
    // A named Hub model that is neither cached nor reachable is an error, not a silent fallback.
    let o = sdbench(
        home.path(),
        &dead_endpoint(),
        &["bench", "--model", "someone/some-model", "--backend", "cpu"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("sdbench download --model someone/some-model"),
        "{}",
        text(&o.stderr)
    );
    assert!(!Path::new("benchmark_diffusion_result.json").exists());
}

#[test]
fn with_no_network_and_no_cache_bench_says_so_and_runs_synthetic() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("offline.json");
    let out_s = out.display().to_string();
    let o = sdbench(
        home.path(),
        &dead_endpoint(),
        &[
            "bench",
            "--out",
            &out_s,
            "--backend",
            "cpu",
            "--steps",
            "1",
            "--width",
            "64",
            "--height",
            "64",
            "--images",
            "1",
            "--baseline",
            "0",
        ],
    );
    ok(&o);
    let stderr = text(&o.stderr);
    assert!(stderr.contains("synthetic weights"), "{stderr}");
    assert!(
        stderr.contains("stable-diffusion-v1-5/stable-diffusion-v1-5"),
        "{stderr}"
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    validate(&result);
    assert_eq!(result["workload"]["model"]["synthetic"], true);
    assert_eq!(result["workload"]["standard"], false);
}

/// The tiny fixture folder served as a Hub repository (weights as LFS files).
fn tiny_repo() -> FakeRepo {
    FakeRepo::from_folder(
        "test-org/tiny-sd",
        "feedfacefeedfacefeedfacefeedfacefeedface",
        std::path::Path::new(&tiny()),
    )
    .unwrap()
}

#[test]
fn download_use_offline_list_and_clean_the_cache() {
    let server = TestServer::start();
    server.add_repo(tiny_repo());
    server.drop_next_download("unet/diffusion_pytorch_model.fp16.safetensors", 1000);
    let home = tempfile::tempdir().unwrap();

    let o = sdbench(
        home.path(),
        &server.url(),
        &["download", "--model", "test-org/tiny-sd"],
    );
    ok(&o);
    assert!(
        text(&o.stdout).contains("test-org/tiny-sd @ feedfacefe ready"),
        "{}",
        text(&o.stdout)
    );
    assert!(
        text(&o.stderr).contains("downloading"),
        "{}",
        text(&o.stderr)
    );

    // With the network gone, the cached copy serves generate.
    let png = home.path().join("cached.png");
    let png_s = png.display().to_string();
    let o = sdbench(
        home.path(),
        &dead_endpoint(),
        &[
            "generate",
            "--model",
            "test-org/tiny-sd",
            "--prompt",
            "a barn",
            "--backend",
            "cpu",
            "--width",
            "24",
            "--height",
            "16",
            "--steps",
            "2",
            "--out",
            &png_s,
        ],
    );
    ok(&o);
    assert!(png.is_file());
    assert!(
        text(&o.stderr).contains("; using the cached test-org/tiny-sd at "),
        "{}",
        text(&o.stderr)
    );

    let o = sdbench(home.path(), &server.url(), &["cache", "list", "--json"]);
    ok(&o);
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let model = &listed["models"][0];
    assert_eq!(model["repo"], "test-org/tiny-sd");
    assert_eq!(model["runnable"], true);
    let size = model["size_bytes"].as_u64().unwrap();
    assert!(size > 100_000, "{size}");

    // Cleaning asks first; without a terminal it needs --yes.
    let o = sdbench(
        home.path(),
        &server.url(),
        &["cache", "clean", "--model", "test-org/tiny-sd"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--yes"), "{}", text(&o.stderr));
    assert!(home.path().join("hub/models--test-org--tiny-sd").exists());
    let o = sdbench(
        home.path(),
        &server.url(),
        &["cache", "clean", "--model", "test-org/tiny-sd", "--yes"],
    );
    ok(&o);
    assert!(
        text(&o.stdout).contains(&format!("({size} bytes)")),
        "{}",
        text(&o.stdout)
    );
    assert!(!home.path().join("hub/models--test-org--tiny-sd").exists());
    let o = sdbench(home.path(), &server.url(), &["cache", "list"]);
    ok(&o);
    assert!(text(&o.stdout).contains("(no models)"));
}

/// FLUX.2 klein as the Hub serves it: the text encoder in shards with their index (seven in the
/// tiny fixture), the tokenizer as `tokenizer.json` with its chat template. A dropped connection
/// in the middle of a shard is resumed; the cached copy generates with the network gone. A
/// repository whose index names a shard it does not have is refused by name, not cached as ready.
#[test]
fn a_sharded_flux2_repository_downloads_and_generates_offline() {
    let fixture = tiny().join("../tiny-flux2-klein");
    let repo = FakeRepo::from_folder("test-org/tiny-klein", &"c0de".repeat(10), &fixture).unwrap();
    let shard = "text_encoder/model-00003-of-00007.safetensors";
    let server = TestServer::start();
    server.add_repo(repo.clone());
    server.drop_next_download(shard, 100);
    let home = tempfile::tempdir().unwrap();

    let o = sdbench(
        home.path(),
        &server.url(),
        &["download", "--model", "test-org/tiny-klein"],
    );
    ok(&o);
    let snapshot = home
        .path()
        .join("hub/models--test-org--tiny-klein/snapshots")
        .join("c0de".repeat(10));
    for part in 1..=7 {
        let name = format!("text_encoder/model-0000{part}-of-00007.safetensors");
        assert_eq!(
            std::fs::read(snapshot.join(&name)).unwrap(),
            std::fs::read(fixture.join(&name)).unwrap(),
            "{name}"
        );
    }
    for file in ["tokenizer/tokenizer.json", "tokenizer/chat_template.jinja"] {
        assert!(snapshot.join(file).is_file(), "{file}");
    }
    let resumed = server
        .downloads()
        .iter()
        .any(|(path, range)| path.ends_with(shard) && range.is_some());
    assert!(resumed, "the dropped shard was not resumed with a range");

    let png = home.path().join("klein.png");
    let png_s = png.display().to_string();
    let args = [
        "generate",
        "--model",
        "test-org/tiny-klein",
        "--prompt",
        "a cube",
        "--backend",
        "cpu",
        "--width",
        "32",
        "--height",
        "32",
        "--steps",
        "1",
        "--scheduler",
        "flow_euler",
        "--out",
        &png_s,
    ];
    let o = sdbench(home.path(), &dead_endpoint(), &args);
    ok(&o);
    assert!(png.is_file());
    // And benchmarks from the cache in bf16, the dtype its files hold: the result is the schema's.
    // SD1.5's workload (its scheduler Euler) is refused before loading, naming the FLUX.2 one.
    let out = home.path().join("klein.json");
    let out_s = out.display().to_string();
    let mut args = vec!["bench", "--model", "test-org/tiny-klein"];
    args.extend(["--precision", "bf16", "--out", out_s.as_str()]);
    args.extend(SMALL);
    let mut sd_workload = args.clone();
    sd_workload.extend(["--workload", "sd15-512-30"]);
    let o = sdbench(home.path(), &dead_endpoint(), &sd_workload);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    let refused = "the custom workload cannot run on test-org/tiny-klein, a FLUX.2 klein model";
    assert!(stderr.contains(refused), "{stderr}");
    assert!(stderr.contains("they take flow_euler"), "{stderr}");
    assert!(
        stderr.contains("its family's: --workload flux2-klein-1024-4"),
        "{stderr}"
    );
    assert!(!stderr.contains("loading") && !out.exists(), "{stderr}");
    // Without --workload, the one made for its architecture runs, and says so.
    let o = sdbench(home.path(), &dead_endpoint(), &args);
    ok(&o);
    let running = "note: running --workload flux2-klein-1024-4, the standard workload for \
                   test-org/tiny-klein's architecture (flux2-klein)";
    assert!(text(&o.stderr).contains(running), "{}", text(&o.stderr));
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    validate(&result);
    assert_eq!(result["backend"]["precision"], "bf16");
    let placement = &result["backend"]["placement"];
    assert_eq!(placement["unet_weights"], "bf16", "{placement}");
    assert_eq!(placement["vae_precision"], "bf16", "{placement}");

    // The same repository without one of its shards.
    let mut broken = repo;
    broken.id = "test-org/klein-missing-a-shard".into();
    broken
        .files
        .retain(|f| !f.path.ends_with("model-00005-of-00007.safetensors"));
    server.add_repo(broken);
    let o = sdbench(
        home.path(),
        &server.url(),
        &["download", "--model", "test-org/klein-missing-a-shard"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr)
            .contains("model-00005-of-00007.safetensors, which the repository does not have"),
        "{}",
        text(&o.stderr)
    );
    let o = sdbench(home.path(), &server.url(), &["cache", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let broken = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["repo"] == "test-org/klein-missing-a-shard");
    assert!(broken.is_none_or(|m| m["runnable"] == false), "{listed}");
}

/// A Hub model whose family cannot serve the request is refused once its configs are in, before
/// any weights are fetched; a request it can serve then downloads them.
#[test]
fn a_model_that_cannot_serve_the_request_stops_before_its_weights_download() {
    let fixture = tiny().join("../tiny-flux2-klein");
    let repo = FakeRepo::from_folder("test-org/tiny-klein", &"beef".repeat(10), &fixture).unwrap();
    let server = TestServer::start();
    server.add_repo(repo);
    let home = tempfile::tempdir().unwrap();
    let weights_fetched = || {
        server
            .downloads()
            .iter()
            .filter(|(path, _)| path.ends_with(".safetensors"))
            .count()
    };

    // SD1.5's workload (the default, as the model is not cached yet) on a FLUX.2 model.
    let mut args = vec!["bench", "--model", "test-org/tiny-klein"];
    args.extend(SMALL);
    let o = sdbench(home.path(), &server.url(), &args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("running --workload sd15-512-30, the default: test-org/tiny-klein is not in the model cache"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot run on test-org/tiny-klein, a FLUX.2 klein model"),
        "{stderr}"
    );
    let configs_fetched = server
        .downloads()
        .iter()
        .any(|(path, _)| path.ends_with("model_index.json"));
    assert!(configs_fetched, "{:?}", server.downloads());
    assert_eq!(weights_fetched(), 0, "{:?}", server.downloads());

    // A picture to start from, which FLUX.2 klein does not take.
    let picture = tiny().with_file_name("tiny-sd.init.png");
    let png = home.path().join("klein.png");
    let (picture_s, png_s) = (picture.display().to_string(), png.display().to_string());
    let mut args = vec![
        "generate",
        "--model",
        "test-org/tiny-klein",
        "--prompt",
        "a cube",
    ];
    args.extend(["--backend", "cpu", "--steps", "2", "--out", &png_s]);
    let with_picture = [args.as_slice(), &["--init-image", &picture_s]].concat();
    let o = sdbench(home.path(), &server.url(), &with_picture);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--reference-image"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(weights_fetched(), 0, "{:?}", server.downloads());
    assert!(!png.exists());

    args.extend(["--width", "32", "--height", "32"]);
    let o = sdbench(home.path(), &server.url(), &args);
    ok(&o);
    assert!(weights_fetched() > 0 && png.is_file());
}

#[test]
fn submit_dry_run_send_and_outbox() {
    let server = TestServer::start();
    let home = tempfile::tempdir().unwrap();
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/tests/data/result-v1.json");
    let file_s = file.display().to_string();
    let endpoint = format!("{}/api/results", server.url());

    let o = sdbench(
        home.path(),
        &server.url(),
        &["submit", &file_s, "--endpoint", &endpoint, "--dry-run"],
    );
    ok(&o);
    assert!(text(&o.stdout).contains("\"run_id\""));
    assert!(server.posted().is_empty());

    // Unreachable: exit 1, kept in the outbox.
    let dead = format!("{}/api/results", dead_endpoint());
    let o = sdbench(
        home.path(),
        &server.url(),
        &["submit", &file_s, "--endpoint", &dead],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("outbox"), "{}", text(&o.stderr));
    let outbox = home.path().join("data/outbox");
    assert_eq!(std::fs::read_dir(&outbox).unwrap().count(), 1);

    // Reachable: the queued one goes first, then this one.
    let o = sdbench(
        home.path(),
        &server.url(),
        &["submit", &file_s, "--endpoint", &endpoint],
    );
    ok(&o);
    assert_eq!(server.posted().len(), 2);
    assert_eq!(std::fs::read_dir(&outbox).unwrap().count(), 0);

    let bad = home.path().join("bad.json");
    std::fs::write(&bad, r#"{"schema_version": 9}"#).unwrap();
    let o = sdbench(
        home.path(),
        &server.url(),
        &[
            "submit",
            &bad.display().to_string(),
            "--endpoint",
            &endpoint,
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("schema_version 9"),
        "{}",
        text(&o.stderr)
    );
}

/// A results service (sdbench-server's code) on a loopback port for the rest of the test run,
/// with the reference hash table `references`.
fn results_service(data: &Path, references: &Path) -> String {
    let config = sdbench_server::Config {
        database: None,
        data_dir: data.to_path_buf(),
        reference_hashes: Some(references.to_path_buf()),
        submissions_per_minute: 30,
        trust_forwarded_for: false,
    };
    let service = std::sync::Arc::new(sdbench_server::Service::open(&config).unwrap());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            sdbench_server::serve(listener, service, std::future::pending())
                .await
                .unwrap();
        });
    });
    base
}

#[test]
fn a_benchmark_submitted_to_the_results_service_is_on_its_leaderboard() {
    let home = tempfile::tempdir().unwrap();
    let run = |out: &Path| {
        let (model, out_s) = (tiny().display().to_string(), out.display().to_string());
        let mut args = vec!["bench", "--model", &model, "--out", &out_s];
        args.extend_from_slice(&["--threads", "1", "--precision", "f32"]);
        args.extend_from_slice(SMALL);
        ok(&sdbench(home.path(), &dead_endpoint(), &args));
        sdbench_bench::BenchResult::load(out).unwrap()
    };
    // The reference table holds the tiny model's images from one run; the submitted run is
    // another (its own timings, the same pictures).
    let reference = run(&home.path().join("reference.json"));
    let mut table = sdbench_server::reference::ReferenceTable::default();
    table.add_run(&reference).unwrap();
    let table_path = home.path().join("references.json");
    std::fs::write(&table_path, table.to_json()).unwrap();
    let service = results_service(&home.path().join("service"), &table_path);
    let out = home.path().join("run.json");
    let out_s = out.display().to_string();
    run(&out);

    let endpoint = format!("{service}/api/v1/results");
    let o = sdbench(
        home.path(),
        &dead_endpoint(),
        &["submit", &out_s, "--endpoint", &endpoint],
    );
    ok(&o);
    let said = text(&o.stdout);
    assert!(said.contains("(HTTP 201)"), "{said}");
    let device = format!("{} (1 thread)", sdbench_diffusion::device::cpu_model());
    assert!(
        said.contains(&format!("the first run of {device} with this setup")),
        "{said}"
    );
    assert!(said.contains("the images match the reference"), "{said}");
    let run_id = serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&out).unwrap())
        .unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(said.contains(&format!("{service}/runs/{run_id}")), "{said}");

    // On the leaderboard of custom runs, and on its own page.
    let page = ureq::get(&format!("{service}/?workload=custom&kind=all"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(page.contains(&device), "{page}");
    let page = ureq::get(&format!("{service}/runs/{run_id}"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(page.contains(&run_id));

    // Sent again: the same record.
    let o = sdbench(
        home.path(),
        &dead_endpoint(),
        &["submit", &out_s, "--endpoint", &endpoint],
    );
    ok(&o);
    assert!(
        text(&o.stdout).contains("(already there)"),
        "{}",
        text(&o.stdout)
    );

    // No endpoint: told there is no public service, exit 1.
    let o = sdbench(home.path(), &dead_endpoint(), &["submit", &out_s]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no public one yet"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn report_writes_html_markdown_and_comparisons() {
    let home = tempfile::tempdir().unwrap();
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/tests/data/result-v1.json");
    let file_s = file.display().to_string();
    let out = |name: &str| home.path().join(name).display().to_string();
    let run = |args: &[&str]| sdbench(home.path(), &dead_endpoint(), args);

    let html = out("report.html");
    ok(&run(&["report", &file_s, "--out", &html]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));

    let md = out("report.md");
    ok(&run(&["report", &file_s, "--out", &md]));
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("| metric | value | unit |"));

    let compare = out("compare.html");
    ok(&run(&["report", &file_s, &file_s, "--out", &compare]));
    assert!(std::fs::read_to_string(&compare)
        .unwrap()
        .contains("comparison"));

    // Two runs with their pictures beside them: paired by prompt and seed, with the difference.
    let picture = |shift: u8| RgbImage {
        width: 8,
        height: 4,
        pixels: (0..96)
            .map(|i| (i as u8).wrapping_mul(7).wrapping_add(shift))
            .collect(),
    };
    let mut pair = Vec::new();
    for (name, shift) in [("a", 0u8), ("b", 2u8)] {
        let dir = home.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&file, dir.join("result.json")).unwrap();
        write_png(&dir.join("x-1.png"), &picture(shift), &[]).unwrap();
        pair.push(dir.join("result.json").display().to_string());
    }
    let pictures = out("pictures.html");
    ok(&run(&["report", &pair[0], &pair[1], "--out", &pictures]));
    let page = std::fs::read_to_string(&pictures).unwrap();
    assert!(page.contains("<h2>Images side by side</h2>"), "{page}");
    assert_eq!(
        page.matches("<img ").count(),
        3,
        "both pictures and their difference"
    );
    // Every channel differs by 2 (but where adding 2 wrapped past 255): PSNR 10·log10(255²/4).
    let (a, b) = (picture(0), picture(2));
    let diffs: Vec<f64> = a
        .pixels
        .iter()
        .zip(&b.pixels)
        .map(|(x, y)| f64::from(x.abs_diff(*y)))
        .collect();
    let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
    let mse = diffs.iter().map(|d| d * d).sum::<f64>() / diffs.len() as f64;
    let psnr = 10.0 * (255.0f64 * 255.0 / mse).log10();
    assert!(
        page.contains(&format!(
            "<td class=\"num\">{mean:.2}</td><td class=\"num\">{psnr:.1}</td>"
        )),
        "{page}"
    );
    // A picture that is not there says so, and the report is still written.
    std::fs::remove_file(home.path().join("b/x-1.png")).unwrap();
    ok(&run(&["report", &pair[0], &pair[1], "--out", &pictures]));
    let page = std::fs::read_to_string(&pictures).unwrap();
    assert!(page.contains("x-1.png: No such file"), "{page}");

    // Bad requests name the problem and write nothing.
    for (args, needle) in [
        (vec!["report", &file_s, &file_s, "--out", &md], "one run"),
        (
            vec!["report", &file_s, "--out", &out("r.pdf")],
            ".html or .md",
        ),
        (
            vec!["report", "/nonexistent.json", "--out", &out("x.html")],
            "nonexistent.json",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1));
        assert!(text(&o.stderr).contains(needle), "{}", text(&o.stderr));
    }
    assert!(!home.path().join("r.pdf").exists() && !home.path().join("x.html").exists());
}
