//! The model store against a loopback server that behaves like the Hub.

use std::fs;
use std::path::Path;
use std::time::Duration;

use sdbench_hub::components::plan;
use sdbench_hub::{cache, Hub, HubError, HubSettings, RepoId, RetryPolicy, WantedComponent};
use sdbench_test_server::{FakeRepo, RepoFile, TestServer};
use serde_json::{Map, Value};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn file(path: &str, bytes: Vec<u8>, lfs: bool) -> RepoFile {
    RepoFile {
        path: path.into(),
        bytes,
        lfs,
    }
}

/// Bytes that differ per file and are long enough for partial transfers.
fn payload(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed as u32) as u8)
        .collect()
}

/// The test's stand-in for the engine's families (the hub names no component): every component
/// model_index.json lists but a safety checker or feature extractor; tokenizers and schedulers
/// by their class names, with the files each cannot be read without.
fn choose(index: &Map<String, Value>) -> Result<Vec<WantedComponent>, String> {
    let mut wanted = Vec::new();
    for (folder, value) in index {
        let Some(class) = value.get(1).and_then(Value::as_str) else {
            continue;
        };
        if matches!(folder.as_str(), "safety_checker" | "feature_extractor") {
            continue;
        }
        let (needs, weights) = if class.starts_with("CLIPTokenizer") {
            (vec!["vocab.json", "merges.txt"], false)
        } else if class.contains("Tokenizer") {
            (vec!["tokenizer.json"], false)
        } else if class.ends_with("Scheduler") {
            (vec!["scheduler_config.json"], false)
        } else {
            (vec!["config.json"], true)
        };
        wanted.push(WantedComponent {
            folder: folder.clone(),
            needs: needs.into_iter().map(str::to_string).collect(),
            weights,
        });
    }
    match index.get("_class_name").and_then(Value::as_str) {
        Some("KandinskyV22Pipeline") => {
            Err("holds a `KandinskyV22Pipeline`, which no family runs".into())
        }
        _ => Ok(wanted),
    }
}

const MODEL_INDEX_JSON: &str = r#"{"_class_name":"StableDiffusionPipeline","safety_checker":["stable_diffusion","StableDiffusionSafetyChecker"],"scheduler":["diffusers","PNDMScheduler"],"text_encoder":["transformers","CLIPTextModel"],"tokenizer":["transformers","CLIPTokenizer"],"unet":["diffusers","UNet2DConditionModel"],"vae":["diffusers","AutoencoderKL"]}"#;

/// A pipeline repository with extra files SD Bench must not fetch.
fn fake_pipeline() -> FakeRepo {
    let json = |s: &str| s.as_bytes().to_vec();
    FakeRepo {
        id: "test-org/tiny-pipeline".into(),
        commit: COMMIT.into(),
        files: vec![
            file("model_index.json", json(MODEL_INDEX_JSON), false),
            file(
                "scheduler/scheduler_config.json",
                json(r#"{"_class_name":"PNDMScheduler"}"#),
                false,
            ),
            file("text_encoder/config.json", json(r#"{"te":1}"#), false),
            file("tokenizer/vocab.json", json(r#"{"a":0}"#), false),
            file("tokenizer/merges.txt", json("#version: 0.2\n"), false),
            file(
                "tokenizer/tokenizer_config.json",
                json(r#"{"tok":1}"#),
                false,
            ),
            file("unet/config.json", json(r#"{"unet":1}"#), false),
            file("vae/config.json", json(r#"{"vae":1}"#), false),
            file("text_encoder/model.safetensors", payload(1, 30_000), true),
            file(
                "text_encoder/model.fp16.safetensors",
                payload(2, 15_000),
                true,
            ),
            file(
                "unet/diffusion_pytorch_model.safetensors",
                payload(3, 80_000),
                true,
            ),
            file(
                "unet/diffusion_pytorch_model.fp16.safetensors",
                payload(4, 40_000),
                true,
            ),
            // No fp16 variant: the plain file is taken.
            file(
                "vae/diffusion_pytorch_model.safetensors",
                payload(5, 20_000),
                true,
            ),
            file("safety_checker/config.json", json(r#"{"sc":1}"#), false),
            file("safety_checker/model.safetensors", payload(6, 50_000), true),
            file("v1-5-pruned.safetensors", payload(7, 90_000), true),
        ],
        license: Some("creativeml-openrail-m".into()),
    }
}

const EXPECTED_FILES: &[&str] = &[
    "model_index.json",
    "scheduler/scheduler_config.json",
    "text_encoder/config.json",
    "tokenizer/vocab.json",
    "tokenizer/merges.txt",
    "tokenizer/tokenizer_config.json",
    "unet/config.json",
    "vae/config.json",
    "text_encoder/model.fp16.safetensors",
    "unet/diffusion_pytorch_model.fp16.safetensors",
    "vae/diffusion_pytorch_model.safetensors",
];

fn settings(cache: &Path, endpoint: &str) -> HubSettings {
    HubSettings {
        cache_dir: cache.to_path_buf(),
        endpoint: endpoint.to_string(),
        token: None,
        offline: false,
    }
}

fn quick_retry() -> RetryPolicy {
    RetryPolicy {
        attempts: 3,
        first_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
    }
}

fn repo_id() -> RepoId {
    RepoId::parse("test-org/tiny-pipeline").unwrap().0
}

fn never() -> bool {
    false
}

/// An address where nothing listens.
fn dead_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

#[test]
fn downloads_only_the_pipeline_files_into_the_hf_layout() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let mut events = Vec::new();
    let snapshot = hub
        .download(&repo_id(), "main", &mut |p| events.push(p.clone()), &never)
        .unwrap();

    let model_dir = dir.path().join("models--test-org--tiny-pipeline");
    assert_eq!(snapshot.commit, COMMIT);
    // The model card's licence, as the Hub's API reports it.
    assert_eq!(snapshot.license.as_deref(), Some("creativeml-openrail-m"));
    assert_eq!(snapshot.path, model_dir.join("snapshots").join(COMMIT));
    assert_eq!(
        fs::read_to_string(model_dir.join("refs/main")).unwrap(),
        COMMIT
    );
    let repo = fake_pipeline();
    let mut fetched: Vec<String> = server.downloads().into_iter().map(|(p, _)| p).collect();
    fetched.sort();
    let mut expected: Vec<String> = EXPECTED_FILES
        .iter()
        .map(|f| format!("/test-org/tiny-pipeline/resolve/{COMMIT}/{f}"))
        .collect();
    expected.sort();
    assert_eq!(fetched, expected);
    for name in EXPECTED_FILES {
        let local = snapshot.path.join(name);
        let original = repo.files.iter().find(|f| f.path == *name).unwrap();
        assert_eq!(fs::read(&local).unwrap(), original.bytes, "{name}");
        // Relative links into blobs/, as huggingface_hub makes them.
        let link = fs::read_link(&local).unwrap();
        assert!(link.starts_with(".."), "{name} -> {}", link.display());
        assert!(fs::canonicalize(&local)
            .unwrap()
            .starts_with(fs::canonicalize(model_dir.join("blobs")).unwrap()));
    }
    // Weights blobs are named by their sha256.
    let unet = snapshot
        .files
        .iter()
        .find(|f| f.path == "unet/diffusion_pytorch_model.fp16.safetensors")
        .unwrap();
    assert_eq!(unet.sha256.as_deref(), Some(unet.blob_id.as_str()));
    assert!(model_dir.join("blobs").join(&unet.blob_id).is_file());
    let total: u64 = snapshot.files.iter().map(|f| f.size).sum();
    assert_eq!(snapshot.downloaded_bytes, total);
    let last = events.last().unwrap();
    assert_eq!((last.done, last.total), (total, total));
    assert!(events.windows(2).all(|w| w[0].done <= w[1].done));
    assert!(cache::missing_pipeline_files(&snapshot.path, choose).is_empty());

    // A second download finds everything cached and fetches nothing.
    let before = server.downloads().len();
    let again = hub
        .download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert_eq!(again.downloaded_bytes, 0);
    assert_eq!(server.downloads().len(), before);
}

#[test]
fn a_dropped_connection_is_resumed_with_a_range_request() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    server.drop_next_download("unet/diffusion_pytorch_model.fp16.safetensors", 12_345);
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let snapshot = hub
        .download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    let unet = snapshot
        .path
        .join("unet/diffusion_pytorch_model.fp16.safetensors");
    assert_eq!(fs::read(unet).unwrap(), payload(4, 40_000));
    let unet_requests: Vec<Option<String>> = server
        .downloads()
        .into_iter()
        .filter(|(p, _)| p.ends_with("unet/diffusion_pytorch_model.fp16.safetensors"))
        .map(|(_, r)| r)
        .collect();
    assert_eq!(unet_requests, vec![None, Some("bytes=12345-".to_string())]);
}

#[test]
fn an_interrupted_download_keeps_no_broken_file_and_resumes_next_time() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    server.drop_next_download("unet/diffusion_pytorch_model.fp16.safetensors", 5_000);
    let dir = tempfile::tempdir().unwrap();
    let no_retry = RetryPolicy {
        attempts: 0,
        ..quick_retry()
    };
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(no_retry);
    let err = hub
        .download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap_err();
    assert!(matches!(err, HubError::Network { .. }), "{err}");
    assert!(err.to_string().contains("5000 of 40000"), "{err}");
    let snapshot = dir
        .path()
        .join("models--test-org--tiny-pipeline/snapshots")
        .join(COMMIT);
    assert!(!snapshot
        .join("unet/diffusion_pytorch_model.fp16.safetensors")
        .exists());
    assert!(cache::cached_snapshot(hub.settings(), &repo_id(), "main", choose).is_none());

    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let done = hub
        .download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    let unet = done
        .path
        .join("unet/diffusion_pytorch_model.fp16.safetensors");
    assert_eq!(fs::read(unet).unwrap(), payload(4, 40_000));
    assert!(server
        .downloads()
        .iter()
        .any(|(_, r)| r.as_deref() == Some("bytes=5000-")));
}

#[test]
fn a_corrupt_file_is_refused_and_removed() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    server.corrupt("vae/diffusion_pytorch_model.safetensors");
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let err = hub
        .download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap_err();
    assert!(matches!(err, HubError::Checksum { .. }), "{err}");
    assert!(err
        .to_string()
        .contains("vae/diffusion_pytorch_model.safetensors"));
    let blobs = dir.path().join("models--test-org--tiny-pipeline/blobs");
    let leftovers: Vec<String> = fs::read_dir(blobs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".incomplete"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(cache::cached_snapshot(hub.settings(), &repo_id(), "main", choose).is_none());
}

/// `resolve_checked` shows the caller the configs before the weights: a refusal there fetches no
/// weights, and the same call that accepts them downloads the rest.
#[test]
fn a_check_on_the_configs_can_stop_a_download_before_the_weights() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let mut seen = Vec::new();
    let err = hub
        .resolve_checked(&repo_id(), "main", &mut |_| {}, &never, &mut |configs| {
            seen.push(fs::read_to_string(configs.join("model_index.json")).unwrap());
            assert!(configs.join("tokenizer/vocab.json").is_file());
            Err(HubError::Cancelled)
        })
        .unwrap_err();
    assert!(matches!(err, HubError::Cancelled), "{err}");
    assert_eq!(seen, [MODEL_INDEX_JSON]);
    let weights: Vec<_> = server
        .downloads()
        .into_iter()
        .filter(|(path, _)| path.ends_with(".safetensors"))
        .collect();
    assert!(weights.is_empty(), "{weights:?}");
    assert!(cache::cached_snapshot(hub.settings(), &repo_id(), "main", choose).is_none());

    let mut calls = 0;
    let resolved = hub
        .resolve_checked(&repo_id(), "main", &mut |_| {}, &never, &mut |_| {
            calls += 1;
            Ok::<_, HubError>(())
        })
        .unwrap();
    assert_eq!(calls, 1);
    assert!(resolved
        .path
        .join("unet/diffusion_pytorch_model.fp16.safetensors")
        .is_file());
}

#[test]
fn a_cached_model_works_with_no_network_and_a_missing_one_says_what_to_do() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    let dir = tempfile::tempdir().unwrap();
    let online = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let downloaded = online
        .resolve(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert!(downloaded.offline_reason.is_none());
    assert_eq!(downloaded.license.as_deref(), Some("creativeml-openrail-m"));

    let start = std::time::Instant::now();
    let offline =
        Hub::new(settings(dir.path(), &dead_endpoint()), choose).with_retry(quick_retry());
    let resolved = offline
        .resolve(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "offline fallback was slow"
    );
    assert_eq!(resolved.path, downloaded.path);
    // The reason is the transport's words: the notes that quote it name the Hub themselves.
    let reason = resolved.offline_reason.unwrap();
    assert!(!reason.contains(&dead_endpoint()), "{reason}");
    assert!(reason.contains("Connection Failed"), "{reason}");

    let mut forced = settings(dir.path(), &server.url());
    forced.offline = true;
    let before = server.requests().len();
    let resolved = Hub::new(forced, choose)
        .resolve(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert_eq!(resolved.path, downloaded.path);
    assert_eq!(
        server.requests().len(),
        before,
        "HF_HUB_OFFLINE touched the network"
    );

    let empty = tempfile::tempdir().unwrap();
    let offline =
        Hub::new(settings(empty.path(), &dead_endpoint()), choose).with_retry(quick_retry());
    let err = offline
        .resolve(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap_err();
    assert!(matches!(err, HubError::NotCached { .. }), "{err}");
    assert!(err
        .to_string()
        .contains("sdbench download --model test-org/tiny-pipeline"));
}

#[test]
fn listing_cleaning_and_the_download_lock() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let snapshot = hub
        .download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    // Something else in the shared cache must survive cleanup.
    let other = dir.path().join("models--someone--llm/blobs");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("abc"), vec![0u8; 1000]).unwrap();

    let models = cache::list(hub.settings(), choose).unwrap();
    let names: Vec<&str> = models.iter().map(|m| m.repo.as_str()).collect();
    assert_eq!(names, ["someone/llm", "test-org/tiny-pipeline"]);
    let ours = &models[1];
    let total: u64 = snapshot.files.iter().map(|f| f.size).sum();
    // Blobs plus refs/main.
    assert_eq!(ours.size_bytes, total + COMMIT.len() as u64);
    assert!(ours.runnable);
    assert!(!models[0].runnable);

    {
        let _held = cache::DownloadLock::acquire(hub.settings(), &repo_id()).unwrap();
        let err = cache::remove(hub.settings(), &repo_id()).unwrap_err();
        assert!(matches!(err, HubError::Busy { .. }), "{err}");
    }
    let freed = cache::remove(hub.settings(), &repo_id()).unwrap();
    assert_eq!(freed, total + COMMIT.len() as u64);
    let left: Vec<String> = cache::list(hub.settings(), choose)
        .unwrap()
        .into_iter()
        .map(|m| m.repo)
        .collect();
    assert_eq!(left, ["someone/llm"]);
    assert_eq!(cache::remove(hub.settings(), &repo_id()).unwrap(), 0);
}

#[test]
fn tokens_are_sent_and_errors_name_the_problem() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    let mut incomplete = fake_pipeline();
    incomplete.id = "test-org/not-a-pipeline".into();
    incomplete.files.retain(|f| !f.path.starts_with("unet/"));
    server.add_repo(incomplete);
    let dir = tempfile::tempdir().unwrap();
    let mut with_token = settings(dir.path(), &server.url());
    with_token.token = Some("hf_secret".into());
    let hub = Hub::new(with_token, choose).with_retry(quick_retry());
    hub.download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert!(server
        .requests()
        .iter()
        .all(|r| r.headers.get("authorization").map(String::as_str) == Some("Bearer hf_secret")));

    let bad = RepoId::parse("test-org/not-a-pipeline").unwrap().0;
    let err = hub.download(&bad, "main", &mut |_| {}, &never).unwrap_err();
    assert!(matches!(err, HubError::NotAPipeline { .. }), "{err}");
    assert!(err.to_string().contains("unet/config.json"), "{err}");

    let missing = RepoId::parse("test-org/nothing-here").unwrap().0;
    let err = hub
        .download(&missing, "main", &mut |_| {}, &never)
        .unwrap_err();
    assert!(matches!(err, HubError::Http { status: 404, .. }), "{err}");

    let cancel = || true;
    let err = hub.download(
        &RepoId::parse("test-org/tiny-pipeline").unwrap().0,
        "main",
        &mut |_| {},
        &cancel,
    );
    // Everything is cached already, so there is nothing to cancel; a fresh cache is cancelled.
    assert!(err.is_ok());
    let fresh = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(fresh.path(), &server.url()), choose);
    let err = hub
        .download(&repo_id(), "main", &mut |_| {}, &cancel)
        .unwrap_err();
    assert!(matches!(err, HubError::Cancelled), "{err}");
}

/// A model file kept apart from its repository needs only the repository's configs and
/// tokenizer: those are fetched, no weights, and served from the cache afterwards (offline too).
#[test]
fn configs_alone_are_fetched_without_weights_and_cached() {
    let server = TestServer::start();
    server.add_repo(fake_pipeline());
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let resolved = hub
        .configs(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert!(resolved.offline_reason.is_none());
    for file in &EXPECTED_FILES[..6] {
        assert!(resolved.path.join(file).is_file(), "{file}");
    }
    let fetched = server.downloads();
    assert!(
        !fetched
            .iter()
            .any(|(path, _)| path.ends_with(".safetensors")),
        "{fetched:?}"
    );
    // Not a runnable snapshot: the whole pipeline is still fetched when asked for.
    assert!(cache::cached_snapshot(hub.settings(), &repo_id(), "main", choose).is_none());

    let mut forced = settings(dir.path(), &server.url());
    forced.offline = true;
    let before = server.requests().len();
    let again = Hub::new(forced, choose)
        .configs(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert_eq!(again.path, resolved.path);
    assert_eq!(server.requests().len(), before);

    let empty = tempfile::tempdir().unwrap();
    let err = Hub::new(settings(empty.path(), &dead_endpoint()), choose)
        .with_retry(quick_retry())
        .configs(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap_err();
    assert!(matches!(err, HubError::NotCached { .. }), "{err}");

    let full = hub
        .resolve(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap();
    assert_eq!(full.path, resolved.path);
    assert!(full
        .path
        .join("unet/diffusion_pytorch_model.fp16.safetensors")
        .is_file());
}

/// A repository layout from tests/fixtures/listings, with what diffusers downloads of it
/// (scripts/make_hub_listing_fixtures.py ran diffusers' own download on the listing).
struct Layout {
    name: String,
    repo: String,
    model_index: Map<String, Value>,
    not_read: Vec<String>,
    files: Vec<String>,
    diffusers: Vec<String>,
}

fn layouts() -> Vec<Layout> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/listings");
    let mut layouts: Vec<Layout> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let json: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            let strings = |key: &str| -> Vec<String> {
                json[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect()
            };
            Layout {
                name: path.file_stem().unwrap().to_string_lossy().to_string(),
                repo: json["repo"].as_str().unwrap().to_string(),
                model_index: json["model_index"].as_object().unwrap().clone(),
                not_read: strings("not_read"),
                files: strings("files"),
                diffusers: strings("diffusers"),
            }
        })
        .collect();
    layouts.sort_by(|a, b| a.name.cmp(&b.name));
    layouts
}

/// What diffusers fetches, less the weights it takes from folders model_index.json does not list
/// (SDXL base's `vae_1_0/`, fetched without its config): SD Bench reads the listed components
/// only.
fn diffusers_for_listed(layout: &Layout) -> Vec<String> {
    layout
        .diffusers
        .iter()
        .filter(|f| match f.split_once('/') {
            Some((folder, _)) => layout.model_index.contains_key(folder),
            None => true,
        })
        .cloned()
        .collect()
}

/// For every layout, the plan over the components a caller reads is the set of files diffusers'
/// download fetches when the others are passed as None.
#[test]
fn every_layout_fetches_what_diffusers_fetches() {
    let layouts = layouts();
    assert!(layouts.len() >= 5, "{} layouts", layouts.len());
    for layout in &layouts {
        let mut index = layout.model_index.clone();
        index.retain(|k, _| !layout.not_read.contains(k));
        let wanted = choose(&index).unwrap();
        let paths: Vec<&str> = layout.files.iter().map(String::as_str).collect();
        let mut planned: Vec<String> = plan(&paths, &wanted)
            .unwrap_or_else(|m| panic!("{}: {m:?}", layout.name))
            .into_iter()
            .map(|f| f.path)
            .collect();
        planned.sort();
        assert_eq!(planned, diffusers_for_listed(layout), "{}", layout.name);
    }
}

fn served(layout: &Layout) -> FakeRepo {
    let files = layout
        .files
        .iter()
        .enumerate()
        .map(|(i, path)| {
            if path == "model_index.json" {
                let bytes = serde_json::to_vec(&layout.model_index).unwrap();
                file(path, bytes, false)
            } else if path.contains(".index.") {
                // A shard index naming its folder's shards of the same variant.
                let (folder, name) = path.rsplit_once('/').unwrap();
                let fp16 = name.contains(".fp16.");
                let weight_map: Map<String, Value> = layout
                    .files
                    .iter()
                    .filter_map(|f| f.strip_prefix(&format!("{folder}/")))
                    .filter(|f| f.contains("-of-") && f.contains(".fp16") == fp16)
                    .map(|f| (format!("tensor.{f}"), Value::String(f.to_string())))
                    .collect();
                let bytes = serde_json::to_vec(&serde_json::json!({ "weight_map": weight_map }));
                file(path, bytes.unwrap(), false)
            } else {
                let weights = path.ends_with(".safetensors");
                file(
                    path,
                    payload(i as u8, if weights { 3_000 } else { 40 }),
                    weights,
                )
            }
        })
        .collect();
    FakeRepo {
        id: layout.repo.clone(),
        commit: COMMIT.into(),
        files,
        license: Some("other".into()),
    }
}

/// A Stable Diffusion 3.5 layout (three text encoders, three tokenizers, T5 in fp16 shards) over
/// a loopback Hub: exactly diffusers' files are fetched, and the cache serves it offline.
#[test]
fn an_sd35_layout_downloads_exactly_diffusers_files_and_is_served_offline() {
    let layout = layouts()
        .into_iter()
        .find(|l| l.name == "sd35-medium")
        .unwrap();
    let server = TestServer::start();
    server.add_repo(served(&layout));
    let dir = tempfile::tempdir().unwrap();
    let (repo, _) = RepoId::parse(&layout.repo).unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let snapshot = hub.download(&repo, "main", &mut |_| {}, &never).unwrap();
    let prefix = format!("/{}/resolve/{COMMIT}/", layout.repo);
    let mut fetched: Vec<String> = server
        .downloads()
        .into_iter()
        .map(|(p, _)| p.strip_prefix(&prefix).unwrap().to_string())
        .collect();
    fetched.sort();
    assert_eq!(fetched, layout.diffusers);
    for name in [
        "text_encoder_3/model.fp16-00002-of-00002.safetensors",
        "tokenizer_3/spiece.model",
    ] {
        assert!(snapshot.path.join(name).is_file(), "{name}");
    }
    assert!(cache::missing_pipeline_files(&snapshot.path, choose).is_empty());

    let offline =
        Hub::new(settings(dir.path(), &dead_endpoint()), choose).with_retry(quick_retry());
    let resolved = offline.resolve(&repo, "main", &mut |_| {}, &never).unwrap();
    assert_eq!(resolved.path, snapshot.path);
    assert!(resolved.offline_reason.is_some());
    // A shard gone from the cache: not complete, so not served.
    fs::remove_file(
        snapshot
            .path
            .join("text_encoder_3/model.fp16-00001-of-00002.safetensors"),
    )
    .unwrap();
    assert_eq!(
        cache::missing_pipeline_files(&snapshot.path, choose),
        ["text_encoder_3/model.fp16-00001-of-00002.safetensors"]
    );
    assert!(offline.resolve(&repo, "main", &mut |_| {}, &never).is_err());
}

/// A pipeline the engine refuses costs model_index.json alone, read and not kept, and the refusal
/// says why.
#[test]
fn a_pipeline_the_engine_refuses_fetches_nothing_but_its_model_index() {
    let mut repo = fake_pipeline();
    repo.files[0] = file(
        "model_index.json",
        br#"{"_class_name":"KandinskyV22Pipeline","unet":["diffusers","UNet2DConditionModel"]}"#
            .to_vec(),
        false,
    );
    let server = TestServer::start();
    server.add_repo(repo);
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new(settings(dir.path(), &server.url()), choose).with_retry(quick_retry());
    let err = hub
        .download(&repo_id(), "main", &mut |_| {}, &never)
        .unwrap_err();
    assert!(matches!(err, HubError::NotAPipeline { .. }), "{err}");
    assert!(err.to_string().contains("KandinskyV22Pipeline"), "{err}");
    let fetched: Vec<String> = server.downloads().into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        fetched,
        [format!(
            "/test-org/tiny-pipeline/resolve/{COMMIT}/model_index.json"
        )]
    );
    // Nothing was written to the cache.
    assert!(cache::list(hub.settings(), choose).unwrap().is_empty());
}
