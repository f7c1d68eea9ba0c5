//! `sdbench-test-server REPO_ID FOLDER`: serves FOLDER as the Hub repository REPO_ID on loopback
//! and accepts result submissions (a POST to any path), for tests that run outside Rust (the
//! desktop app's end-to-end test).
//!
//! Prints `url <base URL>` once it listens, then `posted <body>` for each accepted POST (the body
//! on one line, as sent). Stops when its standard input closes.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sdbench_test_server::{FakeRepo, TestServer};

/// The commit the served repository reports.
const COMMIT: &str = "e2e0000000000000000000000000000000000000";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [repo_id, folder] = args.as_slice() else {
        eprintln!("usage: sdbench-test-server REPO_ID FOLDER");
        std::process::exit(2);
    };
    let repo = match FakeRepo::from_folder(repo_id, COMMIT, Path::new(folder)) {
        Ok(repo) => repo,
        Err(e) => {
            eprintln!("cannot read {folder}: {e}");
            std::process::exit(1);
        }
    };
    let server = TestServer::start();
    server.add_repo(repo);
    println!("url {}", server.url());
    let _ = std::io::stdout().flush();

    let stdin_closed = Arc::new(AtomicBool::new(false));
    let closed = stdin_closed.clone();
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {}
        closed.store(true, Ordering::SeqCst);
    });
    let mut reported = 0;
    while !stdin_closed.load(Ordering::SeqCst) {
        let posted = server.posted();
        for body in &posted[reported..] {
            println!(
                "posted {}",
                String::from_utf8_lossy(body).replace('\n', " ")
            );
        }
        reported = posted.len();
        let _ = std::io::stdout().flush();
        std::thread::sleep(Duration::from_millis(50));
    }
}
