//! A service instance on a loopback port in its own runtime, the two engines, HTTP helpers and
//! results that pass every check.

use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use sdbench_bench::workload::Workload;
use sdbench_server::{Config, Service};

pub struct Server {
    pub base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(config: &Config) -> Server {
        let service = Arc::new(Service::open(config).expect("the service opens"));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(4)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                sdbench_server::serve(listener, service, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
            });
        });
        Server {
            base,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Stops taking connections, lets requests in flight finish, and waits.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// A configuration on a fresh database of `engine` (a new PostgreSQL database for each call, on
/// the server `SDBENCH_TEST_POSTGRES` names); `None` when PostgreSQL is not there and not
/// required (`SDBENCH_REQUIRE_POSTGRES=1`, as CI sets it, makes that a failure).
pub fn config(engine: Engine, dir: &Path) -> Option<Config> {
    let database = match engine {
        Engine::Sqlite => None,
        Engine::Postgres => {
            let Ok(admin) = std::env::var("SDBENCH_TEST_POSTGRES") else {
                assert!(
                    std::env::var_os("SDBENCH_REQUIRE_POSTGRES").is_none(),
                    "SDBENCH_REQUIRE_POSTGRES is set but SDBENCH_TEST_POSTGRES (a PostgreSQL URL) is not"
                );
                eprintln!("skipped: no SDBENCH_TEST_POSTGRES (scripts/test starts one)");
                return None;
            };
            let name = format!(
                "sdbench_test_{}_{}",
                std::process::id(),
                DATABASES.fetch_add(1, Ordering::SeqCst)
            );
            let mut client = postgres::Client::connect(&admin, postgres::NoTls)
                .expect("connect to SDBENCH_TEST_POSTGRES");
            client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
                .unwrap();
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
            let (base, _) = admin.rsplit_once('/').expect("a URL with a database name");
            Some(format!("{base}/{name}"))
        }
    };
    Some(Config {
        database,
        data_dir: dir.to_path_buf(),
        reference_hashes: None,
        submissions_per_minute: 0,
        trust_forwarded_for: false,
    })
}

pub fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(std::time::Duration::from_secs(60))
        .build()
}

/// Status and JSON body of a POST (4xx and 5xx included).
pub fn post(agent: &ureq::Agent, url: &str, body: &str) -> (u16, Value) {
    let response = match agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST {url}: {e}"),
    };
    let status = response.status();
    let text = response.into_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Status and text of a GET.
pub fn get(agent: &ureq::Agent, url: &str) -> (u16, String) {
    let response = match agent.get(url).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {url}: {e}"),
    };
    let status = response.status();
    (status, response.into_string().unwrap_or_default())
}

pub fn get_json(agent: &ureq::Agent, url: &str) -> Value {
    let (status, text) = get(agent, url);
    assert_eq!(status, 200, "GET {url}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// The perceptual hash each standard prompt's image has in `standard_result`.
pub const PHASHES: [&str; 5] = [
    "0123456789abcdef",
    "fedcba9876543210",
    "00ff00ff00ff00ff",
    "123456789abcdef0",
    "0f0f0f0f0f0f0f0f",
];

fn sha(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A run id (a UUID, as results have) made from a readable name.
pub fn id(name: &str) -> String {
    let h = sha(name);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A standard `sd15-512-30` result that passes every check, with the run id `id(name)`: five
/// images taking about `seconds` each (a little more for each later one), on `gpu` with
/// `backend`.
pub fn standard_result(name: &str, gpu: &str, backend: &str, seconds: f64) -> Value {
    let mut r: Value =
        serde_json::from_str(include_str!("../../../bench/tests/data/result-v1.json")).unwrap();
    let w = Workload::standard();
    let run_id = id(name);
    r["run_id"] = json!(run_id);
    r["backend"]["name"] = json!(backend);
    r["backend"]["device"] = json!(gpu);
    r["workload"]["prompts"] = json!(w
        .prompts
        .iter()
        .map(|p| json!({"prompt": p.prompt, "seed": p.seed}))
        .collect::<Vec<_>>());
    let times: Vec<f64> = (0..5).map(|i| seconds * (1.0 + 0.01 * i as f64)).collect();
    let images: Vec<Value> = times
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let unet = 0.9 * s;
            json!({
                "prompt_index": i,
                "seed": w.prompts[i].seed,
                "seconds": s,
                "stages": {"text_encoder": 0.02 * s, "unet_loop": unet, "vae_decode": 0.05 * s},
                "step_seconds": [],
                "steps_per_second": 30.0 / unet,
                "image": {
                    "file": format!("image-{}.png", i + 1),
                    "sha256": sha(&format!("{run_id}/{i}")),
                    "phash": PHASHES[i],
                    "pixel_stdev": 40.0,
                    "valid": true
                }
            })
        })
        .collect();
    r["results"] = json!(images);
    let total: f64 = times.iter().sum();
    let ipm = 60.0 * times.len() as f64 / total;
    let mut rates: Vec<f64> = times.iter().map(|s| 30.0 / (0.9 * s)).collect();
    rates.sort_by(f64::total_cmp);
    r["scores"]["images_per_minute"] = json!(ipm);
    r["scores"]["score"] = json!((ipm * 100.0).round() as u64);
    r["scores"]["seconds_per_image"] = json!({
        "mean": total / 5.0, "median": times[2], "stdev": 0.0, "min": times[0], "max": times[4]
    });
    r["scores"]["steps_per_second"] = json!(rates[2]);
    r
}
