//! Every endpoint and every refusal, on both engines.

use serde_json::{json, Value};

use crate::harness::{
    agent, config, get, get_json, id, post, standard_result, Engine, Server, PHASHES,
};

#[test]
fn the_api_on_sqlite() {
    exercise(Engine::Sqlite);
}

#[test]
fn the_api_on_postgres() {
    exercise(Engine::Postgres);
}

fn exercise(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut config) = config(engine, dir.path()) else {
        return;
    };
    // Reference hashes for the fixture's model revision ("abc"): the images match them.
    let table = dir.path().join("references.json");
    std::fs::write(
        &table,
        json!({"abc": {"workload": "sd15-512-30", "phash": PHASHES}}).to_string(),
    )
    .unwrap();
    config.reference_hashes = Some(table);
    let server = Server::start(&config);
    let agent = agent();
    let results = format!("{}/api/v1/results", server.base);
    let health = get_json(&agent, &format!("{}/api/v1/health", server.base));
    assert_eq!(health["runs"], 0);
    assert_eq!(
        health["engine"],
        if engine == Engine::Sqlite {
            "sqlite"
        } else {
            "postgresql"
        }
    );

    // A new run: 201, readable, matching the reference.
    let first = standard_result("run-a", "NVIDIA GeForce RTX 4090", "cuda", 2.0);
    let (status, body) = post(&agent, &results, &first.to_string());
    assert_eq!(status, 201, "{body}");
    let run_a = id("run-a");
    assert_eq!(body["id"], run_a);
    assert_eq!(body["duplicate"], false);
    assert_eq!(body["reference_match"], true);
    assert_eq!(
        body["comparison"]["runs"], 0,
        "the run is not compared with itself"
    );
    let stored = get_json(&agent, &format!("{results}/{run_a}"));
    assert_eq!(stored["run"]["gpu"], "NVIDIA GeForce RTX 4090");
    let sent: Value = serde_json::from_str(&first.to_string()).unwrap();
    assert_eq!(stored["result"], sent, "the document comes back as sent");
    assert_eq!(get(&agent, &format!("{results}/nothing")).0, 404);

    // The same run again, and the same figures under another id: the existing record.
    let (status, body) = post(&agent, &results, &first.to_string());
    assert_eq!(
        (status, body["id"].clone(), body["duplicate"].clone()),
        (200, json!(run_a), json!(true))
    );
    let mut renamed = first.clone();
    renamed["run_id"] = json!(id("run-a-again"));
    let (status, body) = post(&agent, &results, &renamed.to_string());
    assert_eq!((status, body["id"].clone()), (200, json!(run_a)));

    // Images that differ from the reference are stored and marked.
    let mut other_images = standard_result("run-b", "NVIDIA GeForce RTX 4090", "cuda", 2.2);
    other_images["results"][3]["image"]["phash"] = json!("ffffffffffffffff");
    let (status, body) = post(&agent, &results, &other_images.to_string());
    assert_eq!(
        (status, body["reference_match"].clone()),
        (201, json!(false)),
        "{body}"
    );

    for (why, body, status, says) in refusals() {
        let (got, answer) = post(&agent, &results, &body);
        assert_eq!(got, status, "{why}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default().to_string();
        assert!(error.contains(says), "{why}: `{error}` should say `{says}`");
    }

    assert_eq!(too_large(&server.base), 413);

    // More GPUs for the leaderboard and the distributions. The fastest run so far is faster
    // than every other (itself is not among them).
    for (i, seconds) in [1.9, 2.1, 2.3].iter().enumerate() {
        let r = standard_result(
            &format!("run-c{i}"),
            "NVIDIA GeForce RTX 4090",
            "cuda",
            *seconds,
        );
        let (status, body) = post(&agent, &results, &r.to_string());
        assert_eq!(status, 201);
        if i == 0 {
            assert_eq!(body["comparison"]["percentile"], 100.0, "{body}");
        }
    }
    for (i, seconds) in [6.0, 6.5].iter().enumerate() {
        let r = standard_result(
            &format!("run-v{i}"),
            "AMD Radeon RX 7900 XTX",
            "vulkan",
            *seconds,
        );
        assert_eq!(post(&agent, &results, &r.to_string()).0, 201);
    }
    let mut minimal = standard_result("run-m", "AMD Radeon RX 7900 XTX", "vulkan", 7.0);
    minimal["workload"]["standard"] = json!(false);
    minimal["backend"]["memory_profile"] = json!("minimal");
    assert_eq!(post(&agent, &results, &minimal.to_string()).0, 201);

    let board = get_json(&agent, &format!("{}/api/v1/leaderboard", server.base));
    let rows = board["rows"].as_array().unwrap();
    let gpus: Vec<&str> = rows.iter().map(|r| r["gpu"].as_str().unwrap()).collect();
    assert_eq!(gpus, ["NVIDIA GeForce RTX 4090", "AMD Radeon RX 7900 XTX"]);
    assert_eq!(rows[0]["images_per_minute"]["count"], 5);
    assert_eq!(
        rows[1]["images_per_minute"]["count"], 2,
        "custom runs are left out by default"
    );
    let vulkan = get_json(
        &agent,
        &format!("{}/api/v1/leaderboard?backend=vulkan&kind=all", server.base),
    );
    let rows = vulkan["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["images_per_minute"]["count"], 3);
    let minimal_only = get_json(
        &agent,
        &format!(
            "{}/api/v1/leaderboard?profile=minimal&kind=all",
            server.base
        ),
    );
    assert_eq!(minimal_only["rows"][0]["images_per_minute"]["count"], 1);

    let gpu = get_json(
        &agent,
        &format!(
            "{}/api/v1/gpus/NVIDIA%20GeForce%20RTX%204090?value=29",
            server.base
        ),
    );
    let d = &gpu["images_per_minute"];
    assert_eq!(d["count"], 5);
    let rates: Vec<f64> = gpu["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["images_per_minute"].as_f64().unwrap())
        .collect();
    assert!(rates.windows(2).all(|w| w[0] >= w[1]), "fastest first");
    assert!((d["median"].as_f64().unwrap() - rates[2]).abs() < 1e-9);
    assert!(d["p10"].as_f64().unwrap() < d["median"].as_f64().unwrap());
    assert!(d["p90"].as_f64().unwrap() > d["median"].as_f64().unwrap());
    let below = rates.iter().filter(|r| **r < 29.0).count() as f64;
    assert_eq!(gpu["percentile"].as_f64().unwrap(), 100.0 * below / 5.0);

    // The pages.
    let (status, page) = get(&agent, &format!("{}/", server.base));
    assert_eq!(status, 200);
    assert!(page.contains("NVIDIA GeForce RTX 4090") && page.contains("id=\"leaderboard\""));
    let (status, page) = get(
        &agent,
        &format!(
            "{}/gpus/AMD%20Radeon%20RX%207900%20XTX?kind=all",
            server.base
        ),
    );
    assert_eq!(status, 200);
    assert!(
        page.contains("<svg")
            && page.contains(&id("run-m"))
            && page.contains("minimal (not the standard profile)")
    );
    let (status, page) = get(&agent, &format!("{}/runs/{run_a}", server.base));
    assert_eq!(status, 200);
    assert!(page.contains("images match the reference") && page.contains(PHASHES[4]));
    let (status, page) = get(&agent, &format!("{}/runs/{}", server.base, id("run-b")));
    assert!(status == 200 && page.contains("images differ from the reference"));
    let run_v0 = id("run-v0");
    let (status, page) = get(
        &agent,
        &format!("{}/compare?ids={run_a}&ids={run_v0}", server.base),
    );
    assert_eq!(status, 200);
    assert!(
        page.contains(&format!("AMD Radeon RX 7900 XTX · {}", &run_v0[..8]))
            && page.contains("<svg")
    );
    assert_eq!(
        get(&agent, &format!("{}/compare?ids={run_a}", server.base)).0,
        400
    );
    assert_eq!(get(&agent, &format!("{}/runs/nothing", server.base)).0, 404);

    let health = get_json(&agent, &format!("{}/api/v1/health", server.base));
    assert_eq!(health["runs"], 8);
    server.stop();
}

/// (what, body, status, words the reason has)
fn refusals() -> Vec<(&'static str, String, u16, &'static str)> {
    let good = || standard_result("bad", "NVIDIA GeForce RTX 4090", "cuda", 2.0);
    let with = |change: &dyn Fn(&mut Value)| {
        let mut r = good();
        change(&mut r);
        r.to_string()
    };
    vec![
        ("not JSON", "{not json".into(), 400, "not JSON"),
        (
            "a newer schema",
            with(&|r| r["schema_version"] = json!(2)),
            422,
            "schema_version 2",
        ),
        (
            "a field missing",
            with(&|r| {
                r.as_object_mut().unwrap().remove("scores");
            }),
            422,
            "does not match schema",
        ),
        (
            "another prompt",
            with(&|r| r["workload"]["prompts"][2]["prompt"] = json!("a dog")),
            422,
            "prompts or seeds",
        ),
        (
            "another seed",
            with(&|r| r["workload"]["prompts"][0]["seed"] = json!(7)),
            422,
            "prompts or seeds",
        ),
        (
            "fewer steps",
            with(&|r| r["workload"]["steps"] = json!(20)),
            422,
            "steps",
        ),
        (
            "another size",
            with(&|r| r["workload"]["width"] = json!(768)),
            422,
            "image size",
        ),
        (
            "a blank image",
            with(&|r| {
                r["results"][1]["image"]["valid"] = json!(false);
                r["results"][1]["image"]["reason"] = json!("the image is blank");
            }),
            422,
            "image 2 is not valid",
        ),
        (
            "a score that does not follow",
            with(&|r| r["scores"]["score"] = json!(99999)),
            422,
            "score 99999",
        ),
        (
            "images per minute that do not follow",
            with(&|r| r["scores"]["images_per_minute"] = json!(100.0)),
            422,
            "images per minute",
        ),
        (
            "steps per second that do not follow",
            with(&|r| r["results"][0]["steps_per_second"] = json!(99.0)),
            422,
            "steps/s",
        ),
        (
            "stages longer than the image",
            with(&|r| r["results"][0]["stages"]["vae_decode"] = json!(50.0)),
            422,
            "stages add up",
        ),
        (
            "impossibly fast",
            serde_json::to_string(&standard_result("fast", "Fake GPU", "cuda", 0.05)).unwrap(),
            422,
            "not plausible",
        ),
        (
            "impossibly fast for a CPU",
            serde_json::to_string(&standard_result("slowish", "AMD EPYC", "cpu", 1.0)).unwrap(),
            422,
            "more than a CPU",
        ),
        (
            "not the full profile",
            with(&|r| r["backend"]["memory_profile"] = json!("low")),
            422,
            "/workload/standard",
        ),
        (
            "synthetic weights",
            with(&|r| r["workload"]["model"]["preset"] = json!("sdxl-base")),
            422,
            "model",
        ),
        (
            "marked invalid",
            with(&|r| {
                r["valid"] = json!(false);
                r["invalid_reasons"] = json!(["throttled"]);
                r["scores"]["score"] = json!(null);
                r["workload"]["standard"] = json!(false);
            }),
            422,
            "marked this run invalid",
        ),
    ]
}

/// The status of a POST that announces a body over the limit (the body is never sent: the
/// service answers from the length alone).
fn too_large(base: &str) -> u16 {
    use std::io::{Read, Write};
    let address = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let length = sdbench_server::checks::MAX_BODY_BYTES + 1;
    write!(
        stream,
        "POST /api/v1/results HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn submissions_over_the_rate_limit_are_told_when_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(Engine::Sqlite, dir.path()).unwrap();
    config.submissions_per_minute = 2;
    let server = Server::start(&config);
    let agent = agent();
    let url = format!("{}/api/v1/results", server.base);
    for i in 0..2 {
        let r = standard_result(&format!("r{i}"), "GPU", "cuda", 2.0);
        assert_eq!(post(&agent, &url, &r.to_string()).0, 201);
    }
    let r = standard_result("r2", "GPU", "cuda", 2.0);
    let response = agent
        .post(&url)
        .send_string(&r.to_string())
        .expect_err("over the limit");
    match response {
        ureq::Error::Status(429, response) => {
            assert_eq!(response.header("retry-after"), Some("30"));
            assert!(response
                .into_string()
                .unwrap()
                .contains("too many submissions"));
        }
        other => panic!("expected 429, got {other:?}"),
    }
    server.stop();
}

/// A service on an SQLite file of its own, with no runs (the folder lives as long as it is held).
fn fresh_sqlite_service() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let config = config(Engine::Sqlite, dir.path()).expect("SQLite needs no server");
    let server = Server::start(&config);
    (dir, server)
}

/// `result` with `n` telemetry samples of nvml:0 in its timed window, each holding `reasons`,
/// and the hardware state it claims.
fn with_hardware(mut result: Value, reasons: &[&str], claim_throttled: bool) -> Value {
    let (start, end) = (12.0, 13.5);
    result["telemetry"]["timed"] = json!({"start": start, "end": end});
    let samples: Vec<Value> = (0..10)
        .map(|i| {
            json!({"t": start + 0.1 * i as f64, "source": "nvml:0", "power_w": 300.0,
                   "gpu_clock_mhz": 1500, "throttle": reasons, "throttle_read": true})
        })
        .collect();
    result["telemetry"]["samples"] = json!(samples);
    result["scores"]["throttled"] = json!(claim_throttled);
    result["scores"]["hardware"] = json!({
        "source": "nvml:0", "samples": 10, "gpu_clock_mhz": null, "gpu_clock_max_mhz": null,
        "gpu_clock_median_share": null, "mem_clock_mhz": null, "temperature_peak_c": null,
        "throttle": reasons.iter().map(|r| json!({"reason": r, "share": 1.0})).collect::<Vec<_>>(),
        "throttle_samples": 10, "throttled": claim_throttled, "unavailable": []
    });
    result
}

/// A run whose samples show a throttle reason is stored as throttled and ranked apart: the
/// default lists leave it out and say so, `hardware=throttled` shows it; a claim its own samples
/// contradict is refused.
#[test]
fn throttled_runs_are_ranked_apart() {
    let (_dir, server) = fresh_sqlite_service();
    let agent = agent();
    let results = format!("{}/api/v1/results", server.base);
    let gpu = "NVIDIA H100 80GB HBM3";

    let steady = with_hardware(standard_result("steady", gpu, "cuda", 1.0), &[], false);
    let (status, body) = post(&agent, &results, &steady.to_string());
    assert_eq!(
        (status, body["hardware_state"].as_str()),
        (201, Some("steady")),
        "{body}"
    );

    let hot = standard_result("hot", gpu, "cuda", 1.3);
    let lying = with_hardware(hot.clone(), &["sw_thermal"], false);
    let (status, body) = post(&agent, &results, &lying.to_string());
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("scores.throttled is false, but the run's telemetry samples make it true"),
        "{body}"
    );
    let hot = with_hardware(hot, &["sw_thermal"], true);
    let (status, body) = post(&agent, &results, &hot.to_string());
    assert_eq!(
        (status, body["hardware_state"].as_str()),
        (201, Some("throttled")),
        "{body}"
    );
    assert_eq!(
        body["comparison"]["runs"], 1,
        "a throttled run is placed among the steady runs: {body}"
    );

    let count = |query: &str| {
        let board = get_json(
            &agent,
            &format!("{}/api/v1/leaderboard{query}", server.base),
        );
        board["rows"][0]["images_per_minute"]["count"].as_u64()
    };
    assert_eq!(
        count(""),
        Some(1),
        "the default leaderboard leaves the throttled run out"
    );
    assert_eq!(count("?hardware=throttled"), Some(1));
    assert_eq!(count("?hardware=any"), Some(2));

    let (status, page) = get(&agent, &format!("{}/", server.base));
    assert_eq!(status, 200);
    assert!(
        page.contains("1 throttled run (a throttle reason held for 2% of the timed samples or more) is ranked apart: <a href=\"?hardware=throttled\">show it</a>"),
        "{page}"
    );
    let (_, page) = get(
        &agent,
        &format!(
            "{}/gpus/NVIDIA%20H100%2080GB%20HBM3?hardware=any",
            server.base
        ),
    );
    assert!(
        page.contains("<td class=\"hardware-state\">throttled</td>")
            && page.contains("<td class=\"hardware-state\">steady</td>")
            && !page.contains("id=\"throttled-apart\""),
        "{page}"
    );
    let (_, page) = get(&agent, &format!("{}/runs/{}", server.base, id("hot")));
    assert!(page.contains("sw_thermal 100% of the time"), "{page}");
    server.stop();
}

/// A standard run with a minimum duration repeats its prompts in whole passes; a second pass
/// without one, or one begun after it had passed, is refused.
#[test]
fn a_standard_run_timed_for_a_minimum_duration_is_whole_passes() {
    let (_dir, server) = fresh_sqlite_service();
    let agent = agent();
    let results = format!("{}/api/v1/results", server.base);
    // Two passes of the same images: the scores are the one pass's.
    let two_passes = |name: &str, min: Option<f64>| {
        let mut r = standard_result(name, "NVIDIA GeForce RTX 4090", "cuda", 2.0);
        let first = r["results"].as_array().unwrap().clone();
        let mut second = first.clone();
        for image in &mut second {
            image["pass"] = json!(1);
        }
        r["results"] = json!([first, second].concat());
        if let Some(min) = min {
            r["workload"]["min_duration_seconds"] = json!(min);
        }
        r
    };
    // The first pass took about 10.2 s.
    let (status, body) = post(
        &agent,
        &results,
        &two_passes("long", Some(12.0)).to_string(),
    );
    assert_eq!(status, 201, "{body}");
    for (r, says) in [
        (
            two_passes("no-minimum", None),
            "2 passes of the prompts without a minimum duration",
        ),
        (
            two_passes("too-many", Some(8.0)),
            "the last of 2 passes began after 10.2 s of timed images, past the minimum duration of 8 s",
        ),
    ] {
        let (status, body) = post(&agent, &results, &r.to_string());
        assert_eq!(status, 422, "{body}");
        assert!(body["error"].as_str().unwrap().contains(says), "{body}");
    }
    let mut shuffled = two_passes("shuffled", Some(12.0));
    shuffled["results"][6]["pass"] = json!(0);
    let (status, body) = post(&agent, &results, &shuffled.to_string());
    assert!(
        status == 422 && body["error"].as_str().unwrap().contains("in whole passes"),
        "{body}"
    );
    server.stop();
}

/// `result` with each picture's CLIP score and their mean.
fn with_clip_scores(mut result: Value, scores: &[f64]) -> Value {
    for (image, score) in result["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(scores)
    {
        image["clip_score"] = json!(score);
    }
    let mean = scores.iter().sum::<f64>() / scores.len() as f64;
    result["scores"]["quality"] = json!({
        "clip_model": "openai/clip-vit-large-patch14", "clip_score_mean": mean,
        "started_at": 20.0, "seconds": 3.0, "note": null
    });
    result
}

/// A run whose mean CLIP score sits far below ten other runs of its workload (scored by the same
/// CLIP model) is told so and its page says so; a mean that does not follow from its pictures'
/// scores is refused; with fewer others nothing is judged.
#[test]
fn a_clip_score_far_below_the_other_runs_is_flagged() {
    let (_dir, server) = fresh_sqlite_service();
    let agent = agent();
    let results = format!("{}/api/v1/results", server.base);
    let gpu = "NVIDIA GeForce RTX 4090";
    for i in 0..10 {
        let base = 30.0 + 0.1 * i as f64;
        let r = standard_result(&format!("good-{i}"), gpu, "cuda", 2.0 + 0.01 * i as f64);
        let r = with_clip_scores(r, &[base, base + 0.2, base - 0.2, base, base + 0.1]);
        let (status, body) = post(&agent, &results, &r.to_string());
        assert_eq!(status, 201, "{body}");
        if i == 0 {
            assert!(
                body["quality"]["not_judged"]
                    .as_str()
                    .unwrap()
                    .contains("10 are needed"),
                "{body}"
            );
        }
    }
    let mut wrong = with_clip_scores(standard_result("wrong", gpu, "cuda", 2.5), &[30.0; 5]);
    wrong["scores"]["quality"]["clip_score_mean"] = json!(40.0);
    let (status, body) = post(&agent, &results, &wrong.to_string());
    assert_eq!(status, 422);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("does not follow from the pictures' scores"),
        "{body}"
    );

    let noise = with_clip_scores(standard_result("noise", gpu, "cuda", 2.6), &[12.0; 5]);
    let (status, body) = post(&agent, &results, &noise.to_string());
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["quality"]["far_below"], true, "{body}");
    assert_eq!(body["quality"]["runs"], 10);
    let fine = with_clip_scores(standard_result("fine", gpu, "cuda", 2.7), &[29.0; 5]);
    let (_, body) = post(&agent, &results, &fine.to_string());
    assert_eq!(body["quality"]["far_below"], false, "{body}");

    let (_, page) = get(&agent, &format!("{}/runs/{}", server.base, id("noise")));
    assert!(
        page.contains("CLIP score 12.00 (the median of 11 other runs of this workload is 30.")
            && page.contains("FAR BELOW the others"),
        "{page}"
    );
    server.stop();
}
