//! Many clients at once, and a restart under load: nothing acknowledged is lost, nothing is
//! stored twice. Prints submissions per second and the p99 latency of a submit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::{agent, config, get, get_json, id, post, standard_result, Engine, Server};

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 200;
/// The whole load must finish in this (it takes a few seconds on loopback).
const BOUND: Duration = Duration::from_secs(240);

#[test]
fn eight_clients_on_sqlite() {
    concurrent(Engine::Sqlite);
}

#[test]
fn eight_clients_on_postgres() {
    concurrent(Engine::Postgres);
}

fn concurrent(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let Some(config) = config(engine, dir.path()) else {
        return;
    };
    let server = Server::start(&config);
    let url = format!("{}/api/v1/results", server.base);
    // Every client's bodies are made before the clock starts.
    let bodies: Vec<Vec<String>> = (0..CLIENTS)
        .map(|c| {
            (0..PER_CLIENT)
                .map(|i| {
                    let seconds = 2.0 + (c * PER_CLIENT + i) as f64 * 1e-4;
                    standard_result(
                        &format!("load-{c}-{i}"),
                        &format!("GPU {c}"),
                        "cuda",
                        seconds,
                    )
                    .to_string()
                })
                .collect()
        })
        .collect();
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let clients: Vec<_> = bodies
        .into_iter()
        .enumerate()
        .map(|(c, bodies)| {
            let (url, latencies) = (url.clone(), latencies.clone());
            std::thread::spawn(move || {
                let agent = agent();
                for (i, body) in bodies.iter().enumerate() {
                    let sent = Instant::now();
                    let (status, answer) = post(&agent, &url, body);
                    latencies.lock().unwrap().push(sent.elapsed());
                    assert_eq!(status, 201, "client {c}, submission {i}: {answer}");
                    // Every tenth is sent twice: the second is the same record, not a new one.
                    if i % 10 == 0 {
                        let (status, again) = post(&agent, &url, body);
                        assert_eq!((status, &again["id"]), (200, &answer["id"]));
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("a client failed");
    }
    let elapsed = start.elapsed();
    assert!(
        elapsed < BOUND,
        "{} submissions took {elapsed:?}",
        CLIENTS * PER_CLIENT
    );
    let mut latencies = latencies.lock().unwrap().clone();
    latencies.sort();
    let p99 = latencies[latencies.len() * 99 / 100];
    println!(
        "{engine:?}: {} submissions ({} requests) from {CLIENTS} clients in {:.2} s: {:.0} submissions/s, p99 latency {:.1} ms",
        CLIENTS * PER_CLIENT,
        latencies.len(),
        elapsed.as_secs_f64(),
        (CLIENTS * PER_CLIENT) as f64 / elapsed.as_secs_f64(),
        p99.as_secs_f64() * 1000.0
    );

    let agent = agent();
    let health = get_json(&agent, &format!("{}/api/v1/health", server.base));
    assert_eq!(health["runs"], (CLIENTS * PER_CLIENT) as u64);
    for c in 0..CLIENTS {
        let gpu = get_json(&agent, &format!("{}/api/v1/gpus/GPU%20{c}", server.base));
        assert_eq!(gpu["images_per_minute"]["count"], PER_CLIENT as u64);
        for i in (0..PER_CLIENT).step_by(37) {
            assert_eq!(
                get(&agent, &format!("{url}/{}", id(&format!("load-{c}-{i}")))).0,
                200
            );
        }
    }
    server.stop();
}

#[test]
fn a_restart_under_load_loses_nothing_acknowledged_on_sqlite() {
    restart(Engine::Sqlite);
}

#[test]
fn a_restart_under_load_loses_nothing_acknowledged_on_postgres() {
    restart(Engine::Postgres);
}

/// Two clients keep submitting while the server stops and a new one starts on the same
/// database: every submission answered 201 is there afterwards.
fn restart(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let Some(config) = config(engine, dir.path()) else {
        return;
    };
    let server = Arc::new(Mutex::new(Some(Server::start(&config))));
    let base = Arc::new(Mutex::new(
        server.lock().unwrap().as_ref().unwrap().base.clone(),
    ));
    let done = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..2)
        .map(|c| {
            let (base, done, acknowledged) = (base.clone(), done.clone(), acknowledged.clone());
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(10))
                    .build();
                let mut i = 0;
                while !done.load(Ordering::SeqCst) {
                    let name = format!("restart-{c}-{i}");
                    let body =
                        standard_result(&name, "GPU", "cuda", 2.0 + i as f64 * 1e-3 + c as f64)
                            .to_string();
                    let url = format!("{}/api/v1/results", base.lock().unwrap());
                    // A refused connection (between the two servers) is not acknowledged.
                    if let Ok(response) = agent
                        .post(&url)
                        .set("Content-Type", "application/json")
                        .send_string(&body)
                    {
                        assert_eq!(response.status(), 201);
                        acknowledged.lock().unwrap().push(id(&name));
                    }
                    i += 1;
                }
            })
        })
        .collect();
    let wait_for = |n: usize| {
        let until = Instant::now() + BOUND;
        while acknowledged.lock().unwrap().len() < n {
            assert!(Instant::now() < until, "the clients stalled");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(40);
    // Stop the first server in the middle of the stream, then start another on the same data.
    server.lock().unwrap().take().unwrap().stop();
    let before = acknowledged.lock().unwrap().len();
    let second = Server::start(&config);
    *base.lock().unwrap() = second.base.clone();
    wait_for(before + 40);
    done.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().expect("a client failed");
    }
    let agent = agent();
    let acknowledged = acknowledged.lock().unwrap().clone();
    for id in &acknowledged {
        let (status, _) = get(&agent, &format!("{}/api/v1/results/{id}", second.base));
        assert_eq!(status, 200, "{id} was acknowledged but is gone");
    }
    // Each id is stored once; a submission whose answer the stop cut off may be stored too.
    let health = get_json(&agent, &format!("{}/api/v1/health", second.base));
    let stored = health["runs"].as_u64().unwrap();
    assert!(
        (acknowledged.len() as u64..=acknowledged.len() as u64 + 2).contains(&stored),
        "{stored} stored, {} acknowledged",
        acknowledged.len()
    );
    second.stop();
}

/// Two instances on one PostgreSQL database (as behind a load balancer), each sent the same
/// runs at the same time: each run is stored once, one instance answers 201 and the other 200
/// with the same id, and both read every run.
#[test]
fn two_instances_share_one_postgres_database() {
    let dir = tempfile::tempdir().unwrap();
    let Some(config) = config(Engine::Postgres, dir.path()) else {
        return;
    };
    let (first, second) = (Server::start(&config), Server::start(&config));
    let runs: Vec<String> = (0..100)
        .map(|i| {
            standard_result(&format!("shared-{i}"), "GPU", "cuda", 2.0 + i as f64 * 1e-3)
                .to_string()
        })
        .collect();
    let send = |base: String, runs: Vec<String>| {
        std::thread::spawn(move || {
            let agent = agent();
            let url = format!("{base}/api/v1/results");
            runs.iter()
                .map(|body| {
                    let (status, answer) = post(&agent, &url, body);
                    (
                        status,
                        answer["id"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect::<Vec<_>>()
        })
    };
    let a = send(first.base.clone(), runs.clone());
    let b = send(second.base.clone(), runs.clone());
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    for (i, ((status_a, id_a), (status_b, id_b))) in a.iter().zip(&b).enumerate() {
        let id = id(&format!("shared-{i}"));
        assert_eq!((id_a, id_b), (&id, &id));
        let mut statuses = [*status_a, *status_b];
        statuses.sort();
        assert_eq!(statuses, [200, 201], "run {i}");
    }
    let agent = agent();
    for server in [&first, &second] {
        let health = get_json(&agent, &format!("{}/api/v1/health", server.base));
        assert_eq!(health["runs"], 100);
    }
    first.stop();
    second.stop();
}
