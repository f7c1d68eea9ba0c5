//! The history on a real SQLite file: add, list with every filter, read back whole, delete, export,
//! reopen, and refuse a damaged or newer file with a message that says what to do.

use std::path::PathBuf;

use sdbench_bench::result::BenchResult;
use sdbench_history::{
    Filter, Generation, History, HistoryError, Record, RunKind, SkipLayerRecord, Stages,
    EXPORT_FORMAT,
};

fn sample_result() -> BenchResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/tests/data/result-v1.json");
    BenchResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn benchmark(id: &str, created_at: &str, backend: &str, device: &str, ipm: f64) -> BenchResult {
    let mut r = sample_result();
    r.run_id = id.into();
    r.created_at = created_at.into();
    r.backend.name = backend.into();
    r.backend.device = device.into();
    r.scores.images_per_minute = ipm;
    r.scores.score = Some((ipm * 100.0).round() as u64);
    r
}

fn generation(id: &str, created_at: &str, prompt: &str) -> Generation {
    Generation {
        id: id.into(),
        created_at: created_at.into(),
        prompt: prompt.into(),
        negative_prompt: "blurry".into(),
        steps: 20,
        guidance: 7.5,
        seed: Some(42),
        width: 512,
        height: 512,
        scheduler: "euler".into(),
        model: "stable-diffusion-v1-5/stable-diffusion-v1-5".into(),
        backend: "cuda".into(),
        device: "NVIDIA H100".into(),
        precision: "f16".into(),
        seconds: 2.0,
        stages: Stages {
            text_encoder: 0.01,
            unet_loop: 1.8,
            vae_decode: 0.19,
        },
        step_seconds: vec![0.09; 20],
        image_path: Some("/tmp/a.png".into()),
        init_image: None,
        reference_images: Vec::new(),
        cfg_truncation: None,
        cfg_normalization: None,
        true_cfg_scale: None,
        skip_layer_guidance: None,
        batch: 1,
        batch_index: 0,
        memory_profile: Some("low".into()),
        vram_report: None,
        clip_score: None,
    }
}

fn ids(list: &[sdbench_history::RunSummary]) -> Vec<&str> {
    list.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn runs_are_stored_listed_filtered_read_back_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/folder/history.sqlite");
    let history = History::open(&path).unwrap();
    let a = benchmark("a", "2026-11-01T10:00:00Z", "cuda", "NVIDIA H100", 30.0);
    let mut b = benchmark(
        "b",
        "2026-11-02T10:00:00Z",
        "vulkan",
        "AMD Radeon RX 7900",
        12.5,
    );
    b.valid = false;
    b.invalid_reasons = vec!["image 2: blank".into()];
    b.scores.score = None;
    let mut c = benchmark("c", "2026-11-03T10:00:00Z", "cpu", "AMD EPYC", 0.2);
    c.workload.standard = false;
    c.workload.name = "custom".into();
    history.add_benchmark(&a).unwrap();
    history.add_benchmark(&b).unwrap();
    history.add_benchmark(&c).unwrap();
    history
        .add_generation(&generation("g", "2026-11-04T10:00:00Z", "A 100% real_cat"))
        .unwrap();

    let all = history.list(&Filter::default()).unwrap();
    assert_eq!(ids(&all), ["g", "c", "b", "a"], "newest first");
    assert_eq!(all[3].score, Some(3000));
    assert_eq!(all[2].score, None);
    assert!(!all[2].valid);
    assert_eq!(all[0].kind, RunKind::Generation);
    assert_eq!(all[0].images_per_minute, Some(30.0));

    let list = |f: Filter| ids(&history.list(&f).unwrap()).join(",");
    assert_eq!(
        list(Filter {
            kind: Some(RunKind::Benchmark),
            ..Filter::default()
        }),
        "c,b,a"
    );
    assert_eq!(
        list(Filter {
            backend: Some("vulkan".into()),
            ..Filter::default()
        }),
        "b"
    );
    // Text matches title, model or device, case-insensitively; LIKE wildcards are literal.
    assert_eq!(
        list(Filter {
            text: Some("radeon".into()),
            ..Filter::default()
        }),
        "b"
    );
    assert_eq!(
        list(Filter {
            text: Some("100% REAL_".into()),
            ..Filter::default()
        }),
        "g"
    );
    assert_eq!(
        list(Filter {
            text: Some("1_0".into()),
            ..Filter::default()
        }),
        ""
    );
    assert_eq!(
        list(Filter {
            valid_only: true,
            standard_only: true,
            ..Filter::default()
        }),
        "a"
    );
    assert_eq!(
        list(Filter {
            since: Some("2026-11-02T00:00:00Z".into()),
            until: Some("2026-11-03T23:59:59Z".into()),
            ..Filter::default()
        }),
        "c,b"
    );
    assert_eq!(
        list(Filter {
            limit: Some(2),
            ..Filter::default()
        }),
        "g,c"
    );

    // Whole runs come back exactly.
    assert_eq!(history.get("b").unwrap(), Record::Benchmark(Box::new(b)));
    assert_eq!(
        history.get("g").unwrap(),
        Record::Generation(Box::new(generation(
            "g",
            "2026-11-04T10:00:00Z",
            "A 100% real_cat"
        )))
    );
    assert!(matches!(history.get("zzz"), Err(HistoryError::NotFound(_))));

    // Storing a run again replaces it.
    let mut a2 = a.clone();
    a2.scores.score = Some(3100);
    history.add_benchmark(&a2).unwrap();
    assert_eq!(history.list(&Filter::default()).unwrap().len(), 4);

    assert!(history.delete("c").unwrap());
    assert!(!history.delete("c").unwrap());
    drop(history);

    // Everything is on disk.
    let reopened = History::open(&path).unwrap();
    let all = reopened.list(&Filter::default()).unwrap();
    assert_eq!(ids(&all), ["g", "b", "a"]);
    assert_eq!(all[2].score, Some(3100));
}

#[test]
fn export_writes_whole_runs_to_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let history = History::in_memory().unwrap();
    let a = benchmark("a", "2026-11-01T10:00:00Z", "cuda", "NVIDIA H100", 30.0);
    history.add_benchmark(&a).unwrap();
    history
        .add_generation(&generation("g", "2026-11-04T10:00:00Z", "a cat"))
        .unwrap();
    let out = dir.path().join("export.json");
    let n = history
        .export(&["g".to_string(), "a".to_string()], &out)
        .unwrap();
    assert_eq!(n, 2);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["format"], EXPORT_FORMAT);
    let runs: Vec<Record> = serde_json::from_value(v["runs"].clone()).unwrap();
    assert_eq!(runs[0].id(), "g");
    assert_eq!(runs[1], Record::Benchmark(Box::new(a)));

    // An unknown id exports nothing and leaves no file.
    let missing = dir.path().join("missing.json");
    assert!(matches!(
        history.export(&["nope".to_string()], &missing),
        Err(HistoryError::NotFound(_))
    ));
    assert!(!missing.exists());
}

#[test]
fn damaged_and_newer_files_are_refused_with_a_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.sqlite");
    std::fs::write(
        &garbage,
        b"this is not a database, just some text that is long enough",
    )
    .unwrap();
    let message = History::open(&garbage).err().unwrap().to_string();
    assert!(message.contains("garbage.sqlite"), "{message}");
    assert!(message.contains("move it aside"), "{message}");

    let newer = dir.path().join("newer.sqlite");
    drop(History::open(&newer).unwrap());
    sql(&newer, "PRAGMA user_version = 99");
    let message = History::open(&newer).err().unwrap().to_string();
    assert!(message.contains("newer SD Bench"), "{message}");

    // A row whose document was damaged outside SD Bench is named, not a crash.
    let path = dir.path().join("h.sqlite");
    let history = History::open(&path).unwrap();
    history
        .add_generation(&generation("g", "2026-11-04T10:00:00Z", "a cat"))
        .unwrap();
    drop(history);
    sql(
        &path,
        "UPDATE runs SET document = '{not json' WHERE id = 'g'",
    );
    let history = History::open(&path).unwrap();
    let message = history.get("g").err().unwrap().to_string();
    assert!(
        message.contains("run g in the history is damaged"),
        "{message}"
    );
    assert_eq!(history.list(&Filter::default()).unwrap().len(), 1);
}

/// A version 1 history (no memory_profile or sweep_id column) opens as version 3 with each run's
/// profile and sweep read from its document, and the list shows them.
#[test]
fn an_older_history_gains_the_memory_profile_of_each_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.sqlite");
    let mut bench = benchmark("b", "2026-11-04T09:00:00Z", "cuda", "GPU", 10.0);
    bench.backend.memory_profile = Some("balanced".into());
    bench.sweep_id = Some("sweep-1".into());
    let history = History::open(&path).unwrap();
    history.add_benchmark(&bench).unwrap();
    history
        .add_generation(&generation("g", "2026-11-04T10:00:00Z", "a cat"))
        .unwrap();
    drop(history);
    // What version 1 looked like: the same table without the column.
    sql(
        &path,
        "ALTER TABLE runs DROP COLUMN memory_profile; ALTER TABLE runs DROP COLUMN sweep_id; \
         PRAGMA user_version = 1",
    );
    let history = History::open(&path).unwrap();
    let profiles: Vec<(String, Option<String>, Option<String>)> = history
        .list(&Filter::default())
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.memory_profile, s.sweep_id))
        .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        profiles,
        [
            ("g".to_string(), some("low"), None),
            ("b".to_string(), some("balanced"), some("sweep-1"))
        ]
    );
    let points = history
        .list(&Filter {
            sweep: some("sweep-1"),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(ids(&points), ["b"]);
    drop(history);
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 3);
}

/// Changes a history file behind SD Bench's back.
fn sql(path: &std::path::Path, statement: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(statement)
        .unwrap();
}

/// The end of a benchmark: the result saved, then recorded; a history that cannot be opened is a
/// warning beside a saved result, and a result that cannot be saved is an error and no record.
#[test]
fn a_saved_benchmark_is_recorded_or_says_why_not() {
    use sdbench_bench::runner::RunOutput;
    let dir = tempfile::tempdir().unwrap();
    let output = |id: &str| RunOutput {
        result: benchmark(id, "2026-11-20T10:00:00Z", "cpu", "CPU", 1.0),
        images: Vec::new(),
    };
    let history = dir.path().join("history.sqlite");

    let json = dir.path().join("runs/a/result.json");
    let saved = sdbench_history::save_benchmark(&mut output("a"), &json, &history).unwrap();
    assert!(saved.history_warning.is_none(), "{saved:?}");
    assert!(json.is_file());
    assert!(History::open(&history).unwrap().get("a").is_ok());

    // A folder where the database should be: saved, not recorded, and the reason given.
    let json = dir.path().join("runs/b/result.json");
    let saved = sdbench_history::save_benchmark(&mut output("b"), &json, dir.path()).unwrap();
    assert!(json.is_file());
    assert!(saved.history_warning.is_some_and(|w| !w.is_empty()));

    // A result that cannot be written (its folder would be under a file) is not recorded.
    let blocked = dir.path().join("runs/a/result.json/c.json");
    assert!(sdbench_history::save_benchmark(&mut output("c"), &blocked, &history).is_err());
    assert!(History::open(&history).unwrap().get("c").is_err());
}

/// A history that another process is writing (the CLI beside the app, two CLI runs) is waited for,
/// not refused as locked. Opening one takes its write lock at the start: a transaction that read
/// first and asked for the lock later would be refused at once (SQLite's deadlock rule) by a
/// writer committing meanwhile.
#[test]
fn a_history_being_written_elsewhere_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    History::open(&path).unwrap();
    let writer = rusqlite::Connection::open(&path).unwrap();
    let (writing, started) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        writer
            .execute_batch("BEGIN IMMEDIATE; CREATE TABLE elsewhere (x);")
            .unwrap();
        writing.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        writer.execute_batch("COMMIT;").unwrap();
    });
    started.recv().unwrap();
    let history = History::open(&path).expect("waits for the other writer");
    holder.join().unwrap();
    assert!(history.list(&Default::default()).unwrap().is_empty());
}

/// A generation's guidance options (true CFG, skip-layer guidance) are kept with it, written into
/// its PNG's parameters, and absent from records made before they existed.
#[test]
fn guidance_options_are_recorded_and_older_records_read_without_them() {
    let history = History::in_memory().unwrap();
    let mut g = generation("t", "2026-12-07T10:00:00Z", "a lighthouse");
    g.true_cfg_scale = Some(4.0);
    g.skip_layer_guidance = Some(SkipLayerRecord {
        layers: vec![7, 8, 9],
        scale: 2.8,
        start: 0.01,
        stop: 0.2,
    });
    history.add_generation(&g).unwrap();
    let Record::Generation(back) = history.get("t").unwrap() else {
        panic!("not a generation");
    };
    assert_eq!(*back, g);

    let text = g.png_text(None, "0.0.0");
    let parameters = &text[0].1;
    assert!(parameters.contains(", True CFG scale: 4"), "{parameters}");
    assert!(
        parameters.contains(
            ", Skip-layer guidance: blocks 7,8,9, scale 2.8, from 0.01 to 0.2 of the steps"
        ),
        "{parameters}"
    );
    let json: serde_json::Value = serde_json::from_str(&text[1].1).unwrap();
    assert_eq!(json["true_cfg_scale"], 4.0);
    assert_eq!(
        json["skip_layer_guidance"]["layers"],
        serde_json::json!([7, 8, 9])
    );

    let mut older = serde_json::to_value(generation("o", "2026-11-01T10:00:00Z", "a cat")).unwrap();
    assert!(older.get("true_cfg_scale").is_none() && older.get("skip_layer_guidance").is_none());
    older["prompt"] = "a dog".into();
    let read: Generation = serde_json::from_value(older).unwrap();
    assert_eq!(
        (read.true_cfg_scale, read.skip_layer_guidance),
        (None, None)
    );
}
