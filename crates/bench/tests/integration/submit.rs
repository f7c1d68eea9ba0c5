//! Submission against a loopback endpoint: retries, the outbox, and sending it later.

use std::time::Duration;

use sdbench_bench::submit::{Outcome, Submitter};
use sdbench_bench::BenchResult;
use sdbench_test_server::TestServer;

fn result() -> BenchResult {
    let text = include_str!("../data/result-v1.json");
    BenchResult::from_json(text).unwrap()
}

#[test]
fn submits_retries_and_keeps_what_cannot_be_sent() {
    let server = TestServer::start();
    let outbox = tempfile::tempdir().unwrap();
    let endpoint = format!("{}/api/results", server.url());
    let submitter = Submitter::new(&endpoint, outbox.path().to_path_buf())
        .unwrap()
        .with_retries(3, Duration::from_millis(5));

    // Two 503s, then accepted on the third try.
    server.fail_posts(2);
    let r = result();
    assert_eq!(
        submitter.submit(&r).unwrap(),
        Outcome::Sent {
            status: 201,
            reply: None
        }
    );
    let posted = server.posted();
    assert_eq!(posted.len(), 1);
    assert_eq!(
        BenchResult::from_json(std::str::from_utf8(&posted[0]).unwrap()).unwrap(),
        r
    );
    let headers = server.requests().last().unwrap().headers.clone();
    assert_eq!(
        headers.get("content-type").map(String::as_str),
        Some("application/json")
    );

    // The endpoint keeps failing: the result waits in the outbox.
    server.fail_posts(3);
    let Outcome::Queued { path, reason } = submitter.submit(&r).unwrap() else {
        panic!("should be queued");
    };
    assert!(reason.contains("503"), "{reason}");
    assert_eq!(path, outbox.path().join(format!("{}.json", r.run_id)));
    assert_eq!(BenchResult::load(&path).unwrap(), r);

    // Later the endpoint is back: the outbox is flushed and emptied.
    let flushed = submitter.flush_outbox();
    assert_eq!(flushed.len(), 1);
    assert_eq!(flushed[0].1, Ok(201));
    assert!(!path.exists());
    assert_eq!(server.posted().len(), 2);
}

#[test]
fn an_unreachable_endpoint_queues_and_a_bad_url_is_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/submit", listener.local_addr().unwrap());
    drop(listener);
    let outbox = tempfile::tempdir().unwrap();
    let submitter = Submitter::new(&dead, outbox.path().to_path_buf())
        .unwrap()
        .with_retries(2, Duration::from_millis(1));
    assert!(matches!(
        submitter.submit(&result()).unwrap(),
        Outcome::Queued { .. }
    ));
    assert!(Submitter::new("ftp://example.com", outbox.path().to_path_buf()).is_err());
}
