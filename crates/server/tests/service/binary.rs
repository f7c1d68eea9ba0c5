//! The `sdbench-server` binary: it starts with no arguments but a data folder, serves, stops
//! cleanly on SIGTERM, and refuses a bad database URL with a message and exit status 2.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::harness::{agent, get_json};

#[test]
fn the_binary_serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdbench-server"))
        .args(["--listen", "127.0.0.1:0", "--data"])
        .arg(dir.path())
        .env_remove("SDBENCH_SERVER_DATABASE")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in `{first}`"))
        .to_string();
    assert!(first.contains("sqlite"), "{first}");
    let health = get_json(&agent(), &format!("{base}/api/v1/health"));
    assert_eq!(health["runs"], 0);
    assert!(dir.path().join("results.sqlite3").exists());
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());
    assert_eq!(lines.next().unwrap().unwrap(), "stopped");
}

#[test]
fn a_bad_database_url_is_named_with_exit_status_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_sdbench-server"))
        .args(["--database", "mysql://somewhere/results"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("give a postgres:// URL"), "{said}");
    let output = Command::new(env!("CARGO_BIN_EXE_sdbench-server"))
        .args(["--database", "postgres://nobody@127.0.0.1:1/results"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("cannot connect to PostgreSQL at postgres://nobody@127.0.0.1:1/results"),
        "{said}"
    );
}

#[test]
fn add_reference_writes_the_table_the_service_loads() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("references.json");
    let result = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bench/tests/data/result-v1.json"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_sdbench-server"))
        .args(["add-reference", result, "--table"])
        .arg(&table)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("added abc (sd15-512-30)"));
    let loaded = sdbench_server::reference::ReferenceTable::load(&table).unwrap();
    assert_eq!(loaded.len(), 1);
    // A file that is not a result: named, exit 2, the table untouched.
    let output = Command::new(env!("CARGO_BIN_EXE_sdbench-server"))
        .args(["add-reference", "/nonexistent.json", "--table"])
        .arg(&table)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nonexistent.json"));
    assert_eq!(
        sdbench_server::reference::ReferenceTable::load(&table)
            .unwrap()
            .len(),
        1
    );
}
