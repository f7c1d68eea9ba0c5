//! The pages in a real browser: Debian's chromium, headless, driven over WebDriver by
//! chromedriver. Screenshots go to the test build's temporary folder (printed).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::harness::{agent, config, id, post, standard_result, Engine, Server};

/// The W3C WebDriver element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Driver {
    process: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
}

impl Driver {
    /// Starts chromedriver and a headless chromium session; `None` when they are not installed
    /// and not required (`SDBENCH_REQUIRE_BROWSER=1`, as CI sets it).
    fn start() -> Option<Driver> {
        let installed = ["/usr/bin/chromedriver", "/usr/bin/chromium"]
            .iter()
            .all(|p| std::path::Path::new(p).exists());
        if !installed {
            assert!(
                std::env::var_os("SDBENCH_REQUIRE_BROWSER").is_none(),
                "SDBENCH_REQUIRE_BROWSER is set but chromium and chromedriver are not installed"
            );
            eprintln!(
                "skipped: no chromium and chromedriver (apt-get install chromium chromium-driver)"
            );
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let process = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let base = format!("http://127.0.0.1:{port}");
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(60))
            .build();
        let until = Instant::now() + Duration::from_secs(30);
        while agent.get(&format!("{base}/status")).call().is_err() {
            assert!(Instant::now() < until, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1400"]
            }
        }}});
        let mut driver = Driver {
            process,
            base,
            session: String::new(),
            agent,
        };
        let created = driver.call("POST", "/session", Some(capabilities));
        driver.session = created["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        Some(driver)
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let request = self.agent.request(method, &url);
        let response = match body {
            Some(body) => request.send_json(body),
            None => request.call(),
        };
        let text = match response {
            Ok(r) => r.into_string().unwrap(),
            Err(ureq::Error::Status(code, r)) => {
                panic!(
                    "WebDriver {method} {path}: HTTP {code} {}",
                    r.into_string().unwrap_or_default()
                )
            }
            Err(e) => panic!("WebDriver {method} {path}: {e}"),
        };
        serde_json::from_str::<Value>(&text).unwrap()["value"].clone()
    }

    fn session(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    fn open(&self, url: &str) {
        self.session("POST", "/url", Some(json!({ "url": url })));
    }

    fn url(&self) -> String {
        self.session("GET", "/url", None)
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Waits until the page's address contains `part` (a click's navigation is not awaited).
    fn wait_for_url(&self, part: &str) {
        let until = Instant::now() + Duration::from_secs(20);
        while !self.url().contains(part) {
            assert!(Instant::now() < until, "the page stayed at {}", self.url());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn find_all(&self, css: &str) -> Vec<String> {
        self.session(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        )
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[ELEMENT].as_str().unwrap().to_string())
        .collect()
    }

    fn find(&self, css: &str) -> String {
        let found = self.find_all(css);
        assert!(!found.is_empty(), "no `{css}` on {}", self.url());
        found[0].clone()
    }

    fn click(&self, css: &str) {
        let element = self.find(css);
        self.session(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    fn text(&self, css: &str) -> String {
        let element = self.find(css);
        self.session("GET", &format!("/element/{element}/text"), None)
            .as_str()
            .unwrap()
            .to_string()
    }

    fn screenshot(&self, name: &str) {
        let data = self.session("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("server-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, png).unwrap();
        println!("screenshot: {}", path.display());
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(&format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

#[test]
fn the_pages_in_a_headless_browser() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&config(Engine::Sqlite, dir.path()).unwrap());
    let agent = agent();
    let url = format!("{}/api/v1/results", server.base);
    let runs = [
        ("nv-1", "NVIDIA GeForce RTX 4090", "cuda", 2.0),
        ("nv-2", "NVIDIA GeForce RTX 4090", "cuda", 2.1),
        ("nv-3", "NVIDIA GeForce RTX 4090", "cuda", 2.4),
        ("amd-1", "AMD Radeon RX 7900 XTX", "vulkan", 5.0),
        ("amd-2", "AMD Radeon RX 7900 XTX", "vulkan", 5.5),
    ];
    for (id, gpu, backend, seconds) in runs {
        let r = standard_result(id, gpu, backend, seconds);
        assert_eq!(post(&agent, &url, &r.to_string()).0, 201);
    }

    // The leaderboard, then filtered to Vulkan with the form.
    driver.open(&format!("{}/", server.base));
    assert_eq!(driver.find_all("#leaderboard tr.gpu-row").len(), 2);
    assert!(driver
        .text("#leaderboard tr.gpu-row")
        .contains("NVIDIA GeForce RTX 4090"));
    driver.screenshot("leaderboard.png");
    driver.click("#filter-backend option[value=vulkan]");
    driver.click("#apply");
    driver.wait_for_url("backend=vulkan");
    let rows = driver.find_all("#leaderboard tr.gpu-row");
    assert_eq!(rows.len(), 1);
    assert!(driver
        .text("#leaderboard tr.gpu-row")
        .contains("AMD Radeon RX 7900 XTX"));
    driver.screenshot("leaderboard-vulkan.png");

    // A GPU's page from its link: the chart is drawn, with a bar per bin.
    driver.open(&format!("{}/", server.base));
    driver.click("#leaderboard tr.gpu-row a");
    driver.wait_for_url("/gpus/");
    assert!(driver.text("#gpu-name").contains("NVIDIA GeForce RTX 4090"));
    assert!(driver.find_all("#distribution-chart svg rect").len() >= 5);
    assert_eq!(driver.find_all("#runs tr.run-row").len(), 3);
    driver.screenshot("gpu.png");

    // Two of its runs compared.
    let boxes = driver.find_all("#runs input[type=checkbox]");
    for element in &boxes[..2] {
        driver.session(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }
    driver.click("#compare");
    driver.wait_for_url("/compare?");
    assert!(driver.text("h1").contains("comparison"));
    assert!(!driver.find_all("figure svg").is_empty());
    driver.screenshot("compare.png");

    // A run's page: every image's hashes.
    driver.open(&format!("{}/runs/{}", server.base, id("amd-1")));
    assert_eq!(driver.find_all("#hashes tr").len(), 6);
    assert!(driver.text("#reference").contains("no reference hashes"));
    driver.screenshot("run.png");
    server.stop();
}
