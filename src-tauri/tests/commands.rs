//! The shell's commands, invoked the way the UI invokes them, on Tauri's mock runtime: arguments
//! and results as JSON, channel messages captured, jobs run for real on the tiny model.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody, InvokeResponseBody};
use tauri::test::{
    get_ipc_response, mock_builder, mock_context, noop_assets, MockRuntime, INVOKE_KEY,
};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow, WebviewWindowBuilder};

use sdbench_app::commands::updates::Updates;
use sdbench_app::state::AppState;
use sdbench_diffusion::limits;
use sdbench_hub::HubSettings;
use sdbench_test_server::{FakeRepo, TestServer};

const JOB_TIMEOUT: Duration = Duration::from_secs(600);

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/diffusion/tests/fixtures/tiny-sd")
}

/// Channel messages by channel id, as the UI would receive them.
type Messages = Arc<Mutex<HashMap<u32, Vec<Value>>>>;

struct TestApp {
    app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    state: AppState,
    messages: Messages,
    dir: tempfile::TempDir,
}

fn hub_at(dir: &Path, endpoint: &str) -> HubSettings {
    HubSettings {
        cache_dir: dir.join("hub"),
        endpoint: endpoint.into(),
        token: None,
        offline: false,
    }
}

impl TestApp {
    /// An app over a fresh data folder, with the model cache at `hub` (None: an empty cache and a
    /// Hub that cannot be reached).
    fn new(hub: Option<&str>) -> TestApp {
        Self::build(hub, |b| b, |c| c)
    }

    fn build(
        hub: Option<&str>,
        extend: impl FnOnce(tauri::Builder<MockRuntime>) -> tauri::Builder<MockRuntime>,
        configure: impl FnOnce(tauri::Context<MockRuntime>) -> tauri::Context<MockRuntime>,
    ) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let hub = hub_at(dir.path(), hub.unwrap_or("http://127.0.0.1:9"));
        let mut state = AppState::new(&dir.path().join("data"), hub).unwrap();
        // The storage view's kernel folder is the test's own (the engine's is the test run's).
        state.kernel_cache = Some(dir.path().join("kernels"));
        let messages: Messages = Default::default();
        let sink = messages.clone();
        let builder = mock_builder().channel_interceptor(move |_, channel, _, body| {
            let value = match body {
                InvokeResponseBody::Json(text) => serde_json::from_str(text).unwrap(),
                InvokeResponseBody::Raw(bytes) => json!({ "raw": bytes.len() }),
            };
            sink.lock()
                .unwrap()
                .entry(channel.0)
                .or_default()
                .push(value);
            true
        });
        let app = sdbench_app::with_commands(extend(builder), state.clone())
            .build(configure(mock_context(noop_assets())))
            .unwrap();
        let window = WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .unwrap();
        TestApp {
            app,
            window,
            state,
            messages,
            dir,
        }
    }

    fn request(&self, cmd: &str, args: Value) -> Result<InvokeResponseBody, Value> {
        get_ipc_response(
            &self.window,
            InvokeRequest {
                cmd: cmd.into(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                url: "tauri://localhost".parse().unwrap(),
                body: InvokeBody::Json(args),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
    }

    fn invoke(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        self.request(cmd, args)
            .map(|body| body.deserialize::<Value>().unwrap())
    }

    fn ok(&self, cmd: &str, args: Value) -> Value {
        self.invoke(cmd, args.clone())
            .unwrap_or_else(|e| panic!("{cmd} {args} failed: {e}"))
    }

    /// The error's kind; panics when the command succeeds.
    fn error_kind(&self, cmd: &str, args: Value) -> String {
        let e = self
            .invoke(cmd, args.clone())
            .expect_err(&format!("{cmd} {args} should fail"));
        assert!(!e["message"].as_str().unwrap().is_empty(), "{e}");
        assert!(!e["hint"].as_str().unwrap().is_empty(), "{e}");
        e["kind"].as_str().unwrap().to_string()
    }

    /// Saves settings changed by `change` from the current ones.
    fn set(&self, change: Value) {
        let mut settings = self.ok("get_settings", json!({}));
        for (k, v) in change.as_object().unwrap() {
            settings[k] = v.clone();
        }
        self.ok("save_settings", json!({ "settings": settings }));
    }

    /// Starts a job command with channel `channel` and waits for its end; returns its status.
    fn run_job(&self, cmd: &str, mut args: Value, channel: u32) -> Value {
        args["onEvent"] = json!(format!("__CHANNEL__:{channel}"));
        let id = self.ok(cmd, args);
        self.state
            .jobs
            .wait(id.as_u64().unwrap(), JOB_TIMEOUT)
            .unwrap();
        self.ok("job_status", json!({ "id": id }))
    }

    fn messages(&self, channel: u32) -> Vec<Value> {
        self.messages
            .lock()
            .unwrap()
            .get(&channel)
            .cloned()
            .unwrap_or_default()
    }

    fn use_tiny_model(&self) {
        self.set(json!({ "model": tiny(), "backend": "cpu", "precision": "f32" }));
    }
}

fn count(events: &[Value], name: &str) -> usize {
    events.iter().filter(|e| e["event"] == name).count()
}

#[test]
fn settings_are_validated_kept_and_the_system_is_described() {
    let app = TestApp::new(None);
    let defaults = app.ok("get_settings", json!({}));
    assert_eq!(
        defaults["model"],
        "stable-diffusion-v1-5/stable-diffusion-v1-5"
    );
    assert_eq!(defaults["backend"], "auto");

    app.set(json!({ "backend": "cpu", "submitEndpoint": "https://example.org/results" }));
    let saved: Value =
        serde_json::from_slice(&std::fs::read(&app.state.paths.settings).unwrap()).unwrap();
    assert_eq!(saved["backend"], "cpu");

    let mut bad = app.ok("get_settings", json!({}));
    bad["backend"] = json!("tpu");
    assert_eq!(
        app.error_kind("save_settings", json!({ "settings": bad })),
        "badInput"
    );
    bad["backend"] = json!("cpu");
    bad["model"] = json!("/no/such/model/folder");
    assert_eq!(
        app.error_kind("save_settings", json!({ "settings": bad })),
        "badInput"
    );
    assert_eq!(app.ok("get_settings", json!({}))["backend"], "cpu");
    bad["model"] = json!("synthetic");
    bad["cpuThreads"] = json!(0);
    assert_eq!(
        app.error_kind("save_settings", json!({ "settings": bad })),
        "badInput"
    );
    app.set(json!({ "cpuThreads": 3 }));
    assert_eq!(app.ok("get_settings", json!({}))["cpuThreads"], 3);

    assert!(app
        .ok("startup_notes", json!({}))
        .as_array()
        .unwrap()
        .is_empty());

    let system = app.ok("system_info", json!({}));
    assert!(system["cpuThreads"].as_u64().unwrap() >= 1, "{system}");
    let cpu = system["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["backend"] == "cpu")
        .expect("the cpu backend is listed");
    assert_eq!(cpu["usable"], true);
    assert!(system["system"]["cpu_logical_cores"].as_u64().unwrap() >= 1);
    assert_eq!(
        system["dataDir"],
        app.dir.path().join("data").display().to_string()
    );
    assert!(system["backendNames"]
        .as_array()
        .unwrap()
        .contains(&json!("auto")));
    assert_eq!(system["precisions"], json!(limits::PRECISION_CHOICES));
    assert_eq!(
        system["memoryProfiles"],
        json!(["full", "balanced", "low", "minimal", "cpu", "auto"])
    );

    let workloads = app.ok("workloads", json!({}));
    assert_eq!(workloads[0]["name"], "sd15-512-30", "{workloads}");
    assert_eq!(workloads[1]["label"], "SDXL · 1024×1024 · 20 steps");

    // The UI's forms take their bounds from here: the engine's own limits.
    assert_eq!(
        app.ok("request_limits", json!({})),
        json!({
            "maxSide": limits::MAX_SIDE,
            "sideMultiple": limits::SIDE_MULTIPLE,
            "maxSteps": limits::MAX_STEPS,
            "maxBatch": limits::MAX_BATCH,
            "maxImages": sdbench_bench::workload::MAX_IMAGES,
        })
    );
}

#[test]
fn a_quick_benchmark_streams_progress_and_its_result_is_saved_reported_and_submitted() {
    let server = TestServer::start();
    let app = TestApp::new(None);
    app.use_tiny_model();
    assert_eq!(app.ok("model_status", json!({}))["ready"], true);

    let request = json!({
        "request": { "custom": { "steps": 2, "width": 32, "height": 24, "images": 2 }, "baselineSeconds": 0 }
    });
    let status = app.run_job("start_benchmark", request, 7);
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(status["kind"], "benchmark");
    let output = &status["output"];
    let run_id = output["result"]["run_id"].as_str().unwrap().to_string();
    assert_eq!(output["result"]["workload"]["standard"], false);

    // Warm-up plus two images, two steps each; the last message is the output.
    let events = app.messages(7);
    assert_eq!(count(&events, "loading"), 1);
    assert_eq!(count(&events, "step"), 6);
    assert_eq!(count(&events, "imageFinished"), 3);
    let last = events.last().unwrap();
    assert_eq!(last["event"], "finished");
    assert_eq!(last["output"]["result"]["run_id"], run_id.as_str());
    for image in output["images"].as_array().unwrap() {
        assert!(Path::new(image.as_str().unwrap()).is_file());
    }
    assert_eq!(output["rows"][0][0], "score");
    assert_eq!(output["imageCells"].as_array().unwrap().len(), 2);
    let view = app.ok("benchmark_view", json!({ "runId": run_id }));
    assert_eq!(view["images"], output["images"]);

    // In the history, with charts.
    let list = app.ok("history_list", json!({}));
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], run_id.as_str());
    let filtered = app.ok(
        "history_list",
        json!({ "filter": { "kind": "generation" } }),
    );
    assert!(filtered.as_array().unwrap().is_empty());
    let record = app.ok("history_get", json!({ "id": run_id }));
    assert_eq!(record["kind"], "benchmark");
    let charts = app.ok("run_charts", json!({ "ids": [run_id] }));
    for name in ["secondsPerImage", "stageBreakdown", "stepTimes"] {
        assert!(
            charts[name]["svg"].as_str().unwrap().starts_with("<svg"),
            "{name}"
        );
    }
    let power = &charts["powerOverTime"];
    assert!(power["svg"].is_string() || power["reason"].is_string());
    assert!(charts["warning"].is_null(), "{}", charts["warning"]);
    assert_eq!(charts["pictures"], json!([]));
    // A run beside itself: each image paired with itself, identical.
    let twice = app.ok("run_charts", json!({ "ids": [run_id, run_id] }));
    let pairs = twice["pictures"][0]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{twice}");
    for pair in pairs {
        assert_eq!(pair["psnr"], "identical", "{pair}");
        assert_eq!(pair["meanAbsDifference"], 0.0);
        assert!(pair["first"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"));
    }

    // Saved where the person chose, with the images beside it.
    let out = app.dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let json_path = out.join("run.json");
    app.ok("save_result", json!({ "runId": run_id, "path": json_path }));
    let saved: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(saved["results"][1]["image"]["file"], "run-2.png");
    assert!(out.join("run-1.png").is_file() && out.join("run-2.png").is_file());
    let relative = json!({ "runId": run_id, "path": "run.json" });
    assert_eq!(app.error_kind("save_result", relative), "badInput");

    // Reports.
    let html = out.join("report.html");
    app.ok("export_report", json!({ "runIds": [run_id], "path": html }));
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("<svg") && text.contains(&run_id[..8]));
    let md = out.join("report.md");
    app.ok("export_report", json!({ "runIds": [run_id], "path": md }));
    assert!(std::fs::read_to_string(&md).unwrap().contains("| "));
    let txt = json!({ "runIds": [run_id], "path": out.join("report.txt") });
    assert_eq!(app.error_kind("export_report", txt), "badInput");
    assert!(!out.join("report.txt").exists());

    // Submission: refused without an endpoint; previewed, then sent.
    assert_eq!(
        app.error_kind("submission_preview", json!({ "runId": run_id })),
        "badInput"
    );
    app.set(json!({ "submitEndpoint": format!("{}/api/results", server.url()) }));
    let preview = app.ok("submission_preview", json!({ "runId": run_id }));
    assert!(preview["payload"].as_str().unwrap().contains(&run_id));
    let sent = app.ok("submit_result", json!({ "runId": run_id }));
    assert_eq!(sent["outcome"], "sent", "{sent}");
    let posted: Value = serde_json::from_slice(&server.posted()[0]).unwrap();
    assert_eq!(posted["run_id"], run_id.as_str());

    // Export and delete: the run folder goes with the run.
    let export = out.join("history.json");
    assert_eq!(
        app.ok("history_export", json!({ "ids": [run_id], "path": export })),
        1
    );
    let run_dir = app.state.paths.runs.join(&run_id);
    assert!(run_dir.is_dir());
    assert_eq!(app.ok("history_delete", json!({ "ids": [run_id] })), 1);
    assert!(!run_dir.exists());
    assert!(app
        .ok("history_list", json!({}))
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(
        app.error_kind("history_get", json!({ "id": run_id })),
        "notFound"
    );
}

/// "Score the pictures with CLIP": the CLIP model fetched from the Hub into the cache once (its
/// download's progress in the job's events), every picture scored after the timed region.
#[test]
fn a_benchmark_scores_its_pictures_with_clip_fetched_once() {
    let server = TestServer::start();
    let clip =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/diffusion/tests/fixtures/tiny-clip");
    server.add_repo(
        FakeRepo::from_folder("openai/clip-vit-large-patch14", &"c3".repeat(20), &clip).unwrap(),
    );
    let app = TestApp::new(Some(&server.url()));
    app.use_tiny_model();
    let request = json!({
        "request": { "custom": { "steps": 1, "width": 32, "height": 24, "images": 2 }, "baselineSeconds": 0, "quality": true }
    });
    for (channel, downloads) in [(12, true), (13, false)] {
        let status = app.run_job("start_benchmark", request.clone(), channel);
        assert_eq!(status["state"], "finished", "{status}");
        let result = &status["output"]["result"];
        let quality = &result["scores"]["quality"];
        assert_eq!(quality["clip_model"], "openai/clip-vit-large-patch14");
        let scores: Vec<f64> = result["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["clip_score"].as_f64().unwrap())
            .collect();
        assert_eq!(scores.len(), 2);
        assert!(
            (quality["clip_score_mean"].as_f64().unwrap() - (scores[0] + scores[1]) / 2.0).abs()
                < 1e-12
        );
        let fetched = app
            .messages(channel)
            .iter()
            .any(|e| e["event"] == "download");
        assert_eq!(fetched, downloads, "the second run reads the cache");
    }
}

/// "Compare backends": the chosen run once on every usable backend (the CPU, and lavapipe where
/// it is), ranked in one table with the fastest named and a chart; the sweep file is saved and
/// every point is in the history under the sweep's id.
#[test]
fn compare_backends_runs_the_workload_on_every_usable_backend() {
    let app = TestApp::new(None);
    app.use_tiny_model();
    app.set(json!({ "precision": "f32" }));
    let backends: Vec<&str> = match vulkan_usable() {
        // In `sdbench devices` order: the GPUs first, the CPU last.
        true => vec!["vulkan", "cpu"],
        false => vec!["cpu"],
    };
    let request = json!({
        "request": { "custom": { "steps": 1, "width": 32, "height": 24, "images": 1 }, "baselineSeconds": 0 }
    });
    let status = app.run_job("start_compare_backends", request, 11);
    assert_eq!(status["state"], "finished", "{status}");
    let view = &status["output"];
    let rows = view["rows"].as_array().unwrap();
    let ran: Vec<&str> = rows
        .iter()
        .filter(|r| r["figures"].is_array())
        .map(|r| r["setup"][0].as_str().unwrap())
        .collect();
    assert_eq!(ran, backends, "{view}");
    assert_eq!(view["columns"][6], "img/min");
    assert_eq!(rows.iter().filter(|r| r["fastest"] == true).count(), 1);
    assert!(view["fastest"].as_str().unwrap().starts_with("fastest: "));
    assert!(view["chart"]["svg"].as_str().unwrap().starts_with("<svg"));
    let sweep =
        sdbench_bench::sweep::Sweep::load(Path::new(view["sweepPath"].as_str().unwrap())).unwrap();
    assert_eq!(sweep.sweep_id, view["sweepId"].as_str().unwrap());
    let events = app.messages(11);
    assert_eq!(count(&events, "loading"), backends.len());
    let list = app.ok("history_list", json!({}));
    let points: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["sweep_id"] == sweep.sweep_id.as_str())
        .collect();
    assert_eq!(points.len(), backends.len(), "{list}");
}

#[test]
fn create_makes_a_png_with_its_parameters_and_keeps_the_model_loaded() {
    let app = TestApp::new(None);
    app.use_tiny_model();
    let request = json!({
        "prompt": "a red bicycle in the snow", "negativePrompt": "blurry", "steps": 3,
        "guidance": 7.5, "seed": 42, "width": 32, "height": 16, "scheduler": "euler"
    });
    let status = app.run_job("start_generation", json!({ "request": request }), 3);
    assert_eq!(status["state"], "finished", "{status}");
    let generation = &status["output"]["generation"];
    assert_eq!(generation["seed"], 42);
    assert_eq!(generation["step_seconds"].as_array().unwrap().len(), 3);
    let image = PathBuf::from(generation["image_path"].as_str().unwrap());
    assert!(image.starts_with(&app.state.paths.images));
    let png = std::fs::read(&image).unwrap();
    let text = String::from_utf8_lossy(&png);
    assert!(text.contains("a red bicycle in the snow") && text.contains("Seed: 42"));
    let events = app.messages(3);
    assert_eq!(count(&events, "loading"), 1);
    assert_eq!(count(&events, "step"), 3);

    // The image as the UI reads it, and saved elsewhere.
    let bytes = app.request("read_image", json!({ "path": image })).unwrap();
    match bytes {
        InvokeResponseBody::Raw(raw) => assert_eq!(raw, png),
        other => panic!("expected raw bytes, got {other:?}"),
    }
    let not_png = json!({ "path": app.state.paths.settings });
    assert_eq!(app.error_kind("read_image", not_png), "notFound");
    let copy = app.dir.path().join("copy.png");
    let id = generation["id"].as_str().unwrap();
    app.ok("save_image", json!({ "id": id, "path": copy }));
    assert_eq!(std::fs::read(&copy).unwrap(), png);
    // A PNG outside the data folder's image folders is not served, however the path is spelled.
    assert_eq!(
        app.error_kind("read_image", json!({ "path": copy })),
        "badInput"
    );
    let climbing = app
        .state
        .paths
        .images
        .join("..")
        .join("..")
        .join("copy.png");
    assert_eq!(
        app.error_kind("read_image", json!({ "path": climbing })),
        "badInput"
    );

    // The second image reuses the loaded model.
    let status = app.run_job("start_generation", json!({ "request": request }), 4);
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(count(&app.messages(4), "loading"), 0);
    let list = app.ok(
        "history_list",
        json!({ "filter": { "kind": "generation" } }),
    );
    assert_eq!(list.as_array().unwrap().len(), 2);

    // Deleting the image's run removes the PNG the app kept, not the copy.
    assert_eq!(app.ok("history_delete", json!({ "ids": [id] })), 1);
    assert!(!image.exists() && copy.exists());

    // Bad requests are refused before anything runs.
    for change in [
        json!({ "width": 30 }),
        json!({ "prompt": "  " }),
        json!({ "steps": 0 }),
        json!({ "seed": 1u64 << 60 }),
        json!({ "scheduler": "nope" }),
        json!({ "backend": "tpu" }),
        json!({ "skipLayers": [64] }),
    ] {
        let mut bad = request.clone();
        for (k, v) in change.as_object().unwrap() {
            bad[k] = v.clone();
        }
        let args = json!({ "request": bad, "onEvent": "__CHANNEL__:5" });
        assert_eq!(
            app.error_kind("start_generation", args),
            "badInput",
            "{change}"
        );
    }

    // The cpu memory profile holds a backend the request names to the CPU: another is refused
    // by name before anything loads.
    app.set(json!({ "memory": "cpu" }));
    let mut on_vulkan = request.clone();
    on_vulkan["backend"] = json!("vulkan");
    let args = json!({ "request": on_vulkan, "onEvent": "__CHANNEL__:5" });
    let e = app.invoke("start_generation", args).unwrap_err();
    assert_eq!(e["kind"], "badInput", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("cpu memory profile runs everything on the CPU, but the backend is vulkan"),
        "{e}"
    );
    app.set(json!({ "memory": "full" }));

    // Image-to-image from a picked picture: the model is reloaded once with the VAE encoder, and
    // the image has the picture's size.
    let picture = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("crates/diffusion/tests/fixtures/tiny-sd.init.png"),
    )
    .unwrap();
    let mut img2img = request.clone();
    img2img["initImage"] = json!({ "name": "barn.png", "bytes": picture, "strength": 0.7 });
    let status = app.run_job("start_generation", json!({ "request": img2img }), 6);
    assert_eq!(status["state"], "finished", "{status}");
    let generation = &status["output"]["generation"];
    assert_eq!(
        (&generation["width"], &generation["height"]),
        (&json!(24), &json!(16))
    );
    assert_eq!(generation["init_image"]["source"], "barn.png");
    assert_eq!(generation["step_seconds"].as_array().unwrap().len(), 2);
    assert_eq!(count(&app.messages(6), "loading"), 1);
    for (bytes, strength, what) in [
        (json!([1, 2, 3]), json!(0.5), "not a picture"),
        (json!(picture), json!(0), "strength 0"),
        (json!(picture), json!(1.5), "strength 1.5"),
    ] {
        let mut bad = request.clone();
        bad["initImage"] = json!({ "name": "x.png", "bytes": bytes, "strength": strength });
        let args = json!({ "request": bad, "onEvent": "__CHANNEL__:7" });
        assert_eq!(
            app.error_kind("start_generation", args),
            "badInput",
            "{what}"
        );
    }
    // Reference pictures are read before the job starts: one that is not a picture is refused by
    // name.
    let mut bad = request.clone();
    bad["referenceImages"] = json!([{ "name": "notes.txt", "bytes": [1, 2, 3] }]);
    let e = app
        .invoke(
            "start_generation",
            json!({ "request": bad, "onEvent": "__CHANNEL__:8" }),
        )
        .unwrap_err();
    assert_eq!(e["kind"], "badInput", "{e}");
    assert!(e["message"].as_str().unwrap().contains("notes.txt"), "{e}");
}

/// Whether a Vulkan device is usable; without one, fails where CI requires it
/// (SDBENCH_REQUIRE_VULKAN=1) and skips elsewhere.
fn vulkan_usable() -> bool {
    let usable =
        sdbench_diffusion::device::select(sdbench_diffusion::BackendRequest::Vulkan).is_ok();
    assert!(
        usable || std::env::var("SDBENCH_REQUIRE_VULKAN").as_deref() != Ok("1"),
        "no Vulkan device"
    );
    usable
}

/// `auto` with the GPU memory setting: the Create screen runs on the device in the profile that
/// fits the assumed memory, on the CPU when no profile does, and back on the device when the
/// setting allows it again.
#[test]
fn auto_memory_follows_the_gpu_memory_setting() {
    if !vulkan_usable() {
        return;
    }
    let app = TestApp::new(None);
    app.use_tiny_model();
    let request = json!({
        "prompt": "a red barn", "negativePrompt": "", "steps": 1, "guidance": 7.5, "seed": 3,
        "width": 32, "height": 32, "scheduler": "euler"
    });
    let run = |limit_gib: f64, channel: u32| {
        app.set(json!({
            "backend": "vulkan", "precision": "auto", "memory": "auto",
            "memoryLimitGib": limit_gib
        }));
        let status = app.run_job("start_generation", json!({ "request": request }), channel);
        assert_eq!(status["state"], "finished", "{status}");
        let g = &status["output"]["generation"];
        let loads = count(&app.messages(channel), "loading");
        (
            g["backend"].as_str().unwrap().to_string(),
            g["memory_profile"].as_str().unwrap().to_string(),
            loads,
        )
    };
    // The tiny model's need at 32x32 is about 0.25 GiB in every profile (the VAE's pools).
    assert_eq!(run(0.3, 3), ("vulkan".into(), "full".into(), 1));
    assert_eq!(run(0.3, 4), ("vulkan".into(), "full".into(), 0));
    assert_eq!(run(0.1, 5), ("cpu".into(), "cpu".into(), 1));
    assert_eq!(run(0.3, 6), ("vulkan".into(), "full".into(), 1));

    // A limit that is not a size is refused by name.
    let mut settings = app.ok("get_settings", json!({}));
    settings["memoryLimitGib"] = json!(0);
    let e = app
        .invoke("save_settings", json!({ "settings": settings }))
        .unwrap_err();
    assert_eq!(e["kind"], "badInput", "{e}");
    assert!(e["message"].as_str().unwrap().contains("0 GiB"), "{e}");
}

#[test]
fn a_cancelled_run_saves_nothing_and_only_one_job_runs_at_a_time() {
    let app = TestApp::new(None);
    app.use_tiny_model();
    // A long idle baseline keeps the job running until it is cancelled.
    let args = json!({
        "request": { "custom": { "steps": 1, "width": 16, "height": 16, "images": 1 }, "baselineSeconds": 30 },
        "onEvent": "__CHANNEL__:11"
    });
    let id = app.ok("start_benchmark", args.clone());
    assert_eq!(app.ok("running_job", json!({}))["id"], id);
    assert_eq!(app.error_kind("start_benchmark", args), "busy");
    let clean = json!({ "models": ["test-org/tiny-sd"] });
    assert_eq!(app.error_kind("clean_cache", clean), "busy");

    assert_eq!(app.ok("cancel_job", json!({ "id": id })), true);
    let status = app
        .state
        .jobs
        .wait(id.as_u64().unwrap(), JOB_TIMEOUT)
        .unwrap();
    assert!(
        status.elapsed_seconds < 25.0,
        "cancel took {}",
        status.elapsed_seconds
    );
    assert_eq!(
        app.ok("job_status", json!({ "id": id }))["state"],
        "cancelled"
    );
    assert_eq!(app.messages(11).last().unwrap()["event"], "cancelled");
    assert_eq!(app.ok("cancel_job", json!({ "id": id })), false);
    assert!(app.ok("running_job", json!({})).is_null());
    assert!(app
        .ok("history_list", json!({}))
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(std::fs::read_dir(&app.state.paths.runs).unwrap().count(), 0);
    assert_eq!(
        app.error_kind("job_status", json!({ "id": 999 })),
        "notFound"
    );
}

#[test]
fn the_model_downloads_with_progress_and_the_cache_is_cleaned_up() {
    let server = TestServer::start();
    let mut repo = FakeRepo::from_folder("test-org/tiny-sd", &"ab".repeat(20), &tiny()).unwrap();
    repo.license = Some("creativeml-openrail-m".into());
    let size: u64 = repo.files.iter().map(|f| f.bytes.len() as u64).sum();
    server.add_repo(repo);
    let app = TestApp::new(Some(&server.url()));
    app.set(json!({ "model": "test-org/tiny-sd", "backend": "cpu", "precision": "f32" }));

    let status = app.ok("model_status", json!({}));
    assert_eq!(status["ready"], false);
    assert_eq!(status["source"], "hub");
    // The pipeline's files, not everything in the repository.
    let pipeline_bytes = status["downloadBytes"].as_u64().unwrap();
    assert!(pipeline_bytes > 0 && pipeline_bytes < size, "{status}");
    // Its licence is shown before the download, and again when it is done.
    let license = status["licenseNote"].as_str().unwrap();
    assert!(
        license.contains("(creativeml-openrail-m)")
            && license.contains("https://huggingface.co/test-org/tiny-sd"),
        "{license}"
    );

    let job = app.run_job("start_download", json!({}), 21);
    assert_eq!(job["state"], "finished", "{job}");
    assert_eq!(job["output"]["bytes"], pipeline_bytes);
    assert_eq!(job["output"]["licenseNote"], json!(license));
    let events = app.messages(21);
    let last_progress = events
        .iter()
        .rev()
        .find(|e| e["event"] == "download")
        .unwrap();
    assert_eq!(last_progress["done"], pipeline_bytes);
    assert_eq!(last_progress["total"], pipeline_bytes);
    assert_eq!(app.ok("model_status", json!({}))["ready"], true);

    // The model choice lists it with its family and its family's settings, beside every
    // preset's synthetic weights.
    let models = app.ok("local_models", json!({}));
    let tiny_sd = &models[0];
    assert_eq!(tiny_sd["name"], "test-org/tiny-sd", "{models}");
    assert_eq!(tiny_sd["family"], "Stable Diffusion");
    assert!(tiny_sd["format"]
        .as_str()
        .unwrap()
        .contains("Hugging Face cache"));
    assert!(tiny_sd["problem"].is_null() && tiny_sd["sizeBytes"].as_u64().unwrap() > 0);
    assert_eq!(
        tiny_sd["defaults"],
        json!({ "width": 512, "height": 512, "steps": 30, "guidance": 7.5 })
    );
    // After the cache: what other apps' usual folders hold on this machine (if any), then each
    // preset's synthetic weights.
    let synthetic: Vec<&Value> = models.as_array().unwrap()[1..]
        .iter()
        .filter(|m| m["synthetic"] == true)
        .collect();
    assert!(synthetic
        .iter()
        .any(|m| m["name"] == "synthetic-zimage-turbo"));

    // A model folder the settings add is searched too; one that is not there is refused.
    let mine = tempfile::tempdir().unwrap();
    let gguf = mine.path().join("tiny-sd.gguf");
    std::fs::copy(
        tiny().with_file_name("weight-formats/tiny-sd.ldm.q8_0.gguf"),
        &gguf,
    )
    .unwrap();
    let mut settings = app.ok("get_settings", json!({}));
    settings["modelDirs"] = json!(["/no/such/models/folder"]);
    assert_eq!(
        app.error_kind("save_settings", json!({ "settings": settings })),
        "badInput"
    );
    app.set(json!({ "modelDirs": [mine.path()] }));
    let models = app.ok("local_models", json!({}));
    let listed = models
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == json!(gguf))
        .unwrap_or_else(|| panic!("the added folder's model is not listed: {models}"));
    let format = listed["format"].as_str().unwrap();
    assert!(
        format.contains("added folder") && format.contains("GGUF"),
        "{listed}"
    );
    app.set(json!({ "modelDirs": [] }));

    let cache = app.ok("cache_info", json!({}));
    assert_eq!(cache["models"][0]["repo"], "test-org/tiny-sd");
    assert_eq!(cache["models"][0]["runnable"], true);
    let on_disk = cache["totalBytes"].as_u64().unwrap();
    assert!(on_disk >= pipeline_bytes);

    let cleaned = app.ok("clean_cache", json!({ "models": ["test-org/tiny-sd"] }));
    assert_eq!(cleaned["freedBytes"], on_disk);
    assert_eq!(cleaned["removed"], json!(["test-org/tiny-sd"]));
    assert!(app.ok("cache_info", json!({}))["models"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(app.ok("model_status", json!({}))["ready"], false);
}

#[test]
fn compiled_gpu_kernels_are_shown_and_cleaned_with_the_models() {
    let app = TestApp::new(None);
    let dir = app.dir.path().join("kernels");
    let empty = app.ok("cache_info", json!({}))["kernels"].clone();
    assert_eq!(empty["totalBytes"], 0, "{empty}");
    assert_eq!(empty["dir"], dir.display().to_string());

    let device = dir
        .join("sdbench-0_cubecl-0.10.0_00000000")
        .join("cuda_sm90");
    std::fs::create_dir_all(&device).unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(device.join(format!("{name}.kernel")), [7u8; 1000]).unwrap();
    }
    let kernels = app.ok("cache_info", json!({}))["kernels"].clone();
    assert_eq!(
        (
            &kernels["kernels"],
            &kernels["devices"],
            &kernels["totalBytes"]
        ),
        (&json!(3), &json!(1), &json!(3000)),
        "{kernels}"
    );

    let cleaned = app.ok("clean_kernel_cache", json!({}));
    assert_eq!(cleaned["freedBytes"], 3000);
    assert!(!dir.exists());
    assert_eq!(app.ok("cache_info", json!({}))["kernels"]["totalBytes"], 0);
}

#[test]
fn without_a_network_the_download_says_so() {
    let app = TestApp::new(None);
    app.set(json!({ "model": "test-org/tiny-sd" }));
    let status = app.ok("model_status", json!({}));
    assert_eq!(status["ready"], false);
    assert!(status["downloadBytes"].is_null());
    assert!(
        status["problem"].as_str().unwrap().contains("cannot reach"),
        "{status}"
    );

    let job = app.run_job("start_download", json!({}), 31);
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["error"]["kind"], "network");
    assert!(job["error"]["hint"].as_str().unwrap().contains("offline"));
    assert_eq!(app.messages(31).last().unwrap()["event"], "failed");

    // A local model has nothing to download.
    app.set(json!({ "model": "synthetic" }));
    let args = json!({ "onEvent": "__CHANNEL__:32" });
    assert_eq!(app.error_kind("start_download", args), "badInput");

    // The default model stands for each workload's own; an unknown workload is refused.
    app.set(json!({ "model": "stable-diffusion-v1-5/stable-diffusion-v1-5" }));
    let sdxl = app.ok("model_status", json!({ "workload": "sdxl-1024-20" }));
    assert_eq!(sdxl["model"], "stabilityai/stable-diffusion-xl-base-1.0");
    assert_eq!(sdxl["ready"], false);
    let sd15 = app.ok("model_status", json!({}));
    assert_eq!(sd15["model"], "stable-diffusion-v1-5/stable-diffusion-v1-5");
    assert_eq!(
        app.error_kind("model_status", json!({ "workload": "sd3" })),
        "badInput"
    );
}

/// The Create screen's true CFG and skip-layer guidance reach the engine and the history: a model
/// that takes true CFG runs it and records its scale; one that takes neither refuses each by name.
#[test]
fn create_passes_guidance_options_to_the_engine_and_the_history() {
    let app = TestApp::new(None);
    let dev = tiny().with_file_name("tiny-flux1-dev");
    app.set(json!({ "model": dev, "backend": "cpu", "precision": "f32" }));
    let request = json!({
        "prompt": "a lighthouse", "negativePrompt": "fog", "steps": 2, "guidance": 3.5,
        "seed": 7, "width": 32, "height": 32, "trueCfgScale": 2.5
    });
    let status = app.run_job("start_generation", json!({ "request": request }), 3);
    assert_eq!(status["state"], "finished", "{status}");
    let generation = &status["output"]["generation"];
    assert_eq!(generation["true_cfg_scale"], 2.5, "{generation}");
    let id = generation["id"].as_str().unwrap();
    let stored = app.ok("history_get", json!({ "id": id }));
    assert_eq!(stored["run"]["true_cfg_scale"], 2.5, "{stored}");
    let png = std::fs::read(generation["image_path"].as_str().unwrap()).unwrap();
    assert!(String::from_utf8_lossy(&png).contains("True CFG scale: 2.5"));

    app.use_tiny_model();
    for (change, named) in [
        (
            json!({ "trueCfgScale": 2.5 }),
            "true classifier-free guidance",
        ),
        (
            json!({ "skipLayers": [0], "skipLayerScale": 3.0 }),
            "skip-layer",
        ),
    ] {
        let mut asked = json!({
            "prompt": "a lighthouse", "steps": 2, "guidance": 7.5, "seed": 7, "width": 32,
            "height": 32
        });
        for (k, v) in change.as_object().unwrap() {
            asked[k] = v.clone();
        }
        // Refused when the job starts or when the model is loaded, by name either way.
        let args = json!({ "request": asked, "onEvent": "__CHANNEL__:4" });
        let e = match app.invoke("start_generation", args) {
            Err(e) => e,
            Ok(id) => {
                app.state
                    .jobs
                    .wait(id.as_u64().unwrap(), JOB_TIMEOUT)
                    .unwrap();
                let job = app.ok("job_status", json!({ "id": id }));
                assert_eq!(job["state"], "failed", "{change}: {job}");
                job["error"].clone()
            }
        };
        let message = e["message"].as_str().unwrap().to_lowercase();
        assert!(message.contains(named), "{change}: {e}");
    }
}

/// A model set in the settings brings its own standard workload: the Benchmark screen switches to
/// it, and says why.
#[test]
fn the_model_set_names_its_own_workload() {
    let app = TestApp::new(None);
    let klein = tiny().with_file_name("tiny-flux2-klein");
    app.set(json!({ "model": klein, "backend": "cpu" }));
    let status = app.ok("model_status", json!({}));
    assert_eq!(
        status["ownWorkload"]["name"], "flux2-klein-1024-4",
        "{status}"
    );
    let why = status["ownWorkload"]["why"].as_str().unwrap();
    assert!(why.contains("architecture (flux2-klein)"), "{why}");
    let status = app.ok("model_status", json!({ "workload": "flux2-klein-1024-4" }));
    assert!(status["ownWorkload"].is_null(), "{status}");
    // The model choice lists the folder first, with klein's own settings.
    let listed = &app.ok("local_models", json!({}))[0];
    assert_eq!(listed["name"], json!(klein), "{listed}");
    assert_eq!(listed["family"], "FLUX.2 klein");
    assert_eq!(listed["format"], "diffusers folder");
    assert_eq!(
        (&listed["defaults"]["steps"], &listed["defaults"]["width"]),
        (&json!(4), &json!(1024))
    );
    // Synthetic SD1.5 under SDXL's workload: SD1.5's own.
    app.set(json!({ "model": "synthetic" }));
    let status = app.ok("model_status", json!({ "workload": "sdxl-1024-20" }));
    assert_eq!(status["ownWorkload"]["name"], "sd15-512-30", "{status}");
    // The untouched default stands for every workload's own model.
    app.set(json!({ "model": sdbench_hub::DEFAULT_MODEL }));
    let status = app.ok("model_status", json!({ "workload": "sdxl-1024-20" }));
    assert!(status["ownWorkload"].is_null(), "{status}");
}

/// The SDXL workload chosen in the app runs its settings (guidance 8) on the model set.
#[test]
fn the_sdxl_workload_runs_from_the_app() {
    let app = TestApp::new(None);
    app.set(json!({ "model": tiny().with_file_name("tiny-sdxl"), "backend": "cpu", "precision": "f32" }));
    let request = json!({
        "request": { "workload": "sdxl-1024-20", "custom": { "steps": 1, "width": 32, "height": 32, "images": 1 }, "baselineSeconds": 0 }
    });
    let status = app.run_job("start_benchmark", request, 41);
    assert_eq!(status["state"], "finished", "{status}");
    let workload = &status["output"]["result"]["workload"];
    assert_eq!(workload["guidance"], 8.0);
    assert_eq!(workload["model"]["family"], "sdxl");
    assert_eq!(workload["standard"], false);
}

/// The update check through tauri-plugin-updater with the app's real public key, against a
/// local endpoint.
#[test]
fn the_update_check_asks_the_configured_endpoint() {
    let server = TestServer::start();
    let manifest = |version: &str| {
        let platform = json!({ "url": format!("{}/sdbench.tar.gz", server.url()), "signature": "unused by a check" });
        json!({
            "version": version, "notes": "Faster VAE", "pub_date": "2026-11-01T00:00:00Z",
            "platforms": {
                "linux-x86_64": platform, "linux-aarch64": platform, "darwin-aarch64": platform,
                "darwin-x86_64": platform, "windows-x86_64": platform
            }
        })
        .to_string()
    };
    server.add_file("/newer.json", manifest("9.9.9").as_bytes());
    server.add_file("/same.json", manifest("0.1.0").as_bytes());

    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tauri.conf.json"))
            .unwrap(),
    )
    .unwrap();
    let mut updater = config["plugins"]["updater"].clone();
    assert!(updater["pubkey"].as_str().unwrap().len() > 40);
    updater["dangerousInsecureTransportProtocol"] = json!(true);
    let app = TestApp::build(
        None,
        |b| b.plugin(tauri_plugin_updater::Builder::new().build()),
        |mut context| {
            context
                .config_mut()
                .plugins
                .0
                .insert("updater".into(), updater);
            context
        },
    );

    // As the real app's setup does.
    use tauri_plugin_updater::UpdaterExt;
    let handle = app.app.handle().clone();
    app.app.manage(Updates::new(
        move || handle.updater_builder(),
        || {},
        "0.1.0".into(),
    ));

    app.set(json!({ "updateEndpoint": format!("{}/newer.json", server.url()) }));
    let info = app.ok("check_for_update", json!({}));
    assert_eq!(info["available"], true, "{info}");
    assert_eq!(info["version"], "9.9.9");
    assert_eq!(info["notes"], "Faster VAE");

    app.set(json!({ "updateEndpoint": format!("{}/same.json", server.url()) }));
    let info = app.ok("check_for_update", json!({}));
    assert_eq!(info["available"], false, "{info}");

    app.set(json!({ "updateEndpoint": format!("{}/missing.json", server.url()) }));
    assert_eq!(app.error_kind("check_for_update", json!({})), "network");
}

#[test]
fn a_damaged_settings_file_is_set_aside_and_the_app_starts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("settings.json"), b"{ \"backend\": ").unwrap();
    let state = AppState::new(&data, hub_at(dir.path(), "http://127.0.0.1:9")).unwrap();
    assert_eq!(state.settings(), sdbench_app::settings::Settings::default());
    assert_eq!(state.startup_notes.len(), 1);
    assert!(
        state.startup_notes[0].contains("settings.damaged.json"),
        "{:?}",
        state.startup_notes
    );
    assert_eq!(
        std::fs::read(data.join("settings.damaged.json")).unwrap(),
        b"{ \"backend\": "
    );
}
