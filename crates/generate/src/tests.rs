//! The use case on the tiny SD fixture, on the CPU backend: what is refused before loading, what
//! is written and recorded, and when the held model is kept or reloaded.

use std::path::{Path, PathBuf};

use sdbench_diffusion::{
    BackendRequest, CancelToken, DeviceRequest, MemoryProfile, ModelSource, Precision,
    SchedulerKind,
};
use sdbench_history::{Filter, History};
use sdbench_hub::HubSettings;
use sdbench_session::device_memory::MemoryChoice;
use sdbench_session::events::Event;
use sdbench_session::ErrorKind;
use sdbench_session::ModelName;

use crate::{
    Context, Destination, GenerateError, GenerationRequest, Generator, InitPicture, ModelSetup,
};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../diffusion/tests/fixtures")
}

fn setup() -> ModelSetup {
    let folder = fixtures().join("tiny-sd");
    ModelSetup {
        label: "tiny-sd".into(),
        model: ModelName::Local(ModelSource::Folder(folder)),
        device: DeviceRequest::from(BackendRequest::Cpu),
        memory: MemoryChoice::default(),
        precision: Some(Precision::F32),
    }
}

/// Euler: one UNet call a step (the fixture's own PNDM makes one more).
fn small(prompt: &str) -> GenerationRequest {
    GenerationRequest {
        steps: 2,
        scheduler: Some(SchedulerKind::Euler),
        width: Some(32),
        height: Some(24),
        ..GenerationRequest::new(prompt)
    }
}

struct Place {
    dir: tempfile::TempDir,
    hub: HubSettings,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let hub = HubSettings {
            cache_dir: dir.path().join("hub"),
            endpoint: "http://127.0.0.1:9".into(),
            token: None,
            offline: true,
        };
        Place { dir, hub }
    }

    fn history(&self) -> PathBuf {
        self.dir.path().join("history.sqlite")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Generates with `generator`, returning the outcome and every event.
    fn run(
        &self,
        generator: &mut Generator,
        setup: &ModelSetup,
        request: &GenerationRequest,
        destination: &Destination,
    ) -> (crate::Result<crate::Outcome>, Vec<Event>) {
        let history = self.history();
        let context = Context {
            hub: &self.hub,
            history: &history,
            app_version: "test",
        };
        let mut events = Vec::new();
        let outcome = generator.generate(
            setup,
            request,
            destination,
            &context,
            &mut |e| events.push(e.clone()),
            &CancelToken::new(),
        );
        (outcome, events)
    }
}

fn loads(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::Loading { .. }))
        .count()
}

fn png_text(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned()
}

#[test]
fn a_generation_is_written_recorded_and_its_model_kept() {
    let place = Place::new();
    let mut generator = Generator::default();
    let out = place.path("astronaut.png");
    let (outcome, events) = place.run(
        &mut generator,
        &setup(),
        &small("an astronaut"),
        &Destination::File(out.clone()),
    );
    let outcome = outcome.unwrap();
    assert_eq!(loads(&events), 1);
    let steps: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::Step { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [1, 2]);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::TextEncoded { .. })));
    assert!(events.iter().any(|e| matches!(e, Event::Decoded { .. })));
    assert_eq!(outcome.paths, std::slice::from_ref(&out));
    assert_eq!((outcome.width, outcome.height), (32, 24));
    assert!(png_text(&out).contains("an astronaut"));
    assert!(
        outcome.summary().contains("2 steps"),
        "{}",
        outcome.summary()
    );
    let generation = &outcome.generations[0];
    assert_eq!(generation.model, "tiny-sd");
    assert_eq!(generation.memory_profile.as_deref(), Some("full"));
    let recorded = History::open(&place.history())
        .unwrap()
        .list(&Filter::default())
        .unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].id, generation.id);
    assert!(outcome.history_warning.is_none());

    // The same setup: the model is kept. A batch goes to NAME-1.png, NAME-2.png.
    let pair = place.path("pair.png");
    let request = GenerationRequest {
        batch: 2,
        ..small("a pair")
    };
    let (outcome, events) = place.run(
        &mut generator,
        &setup(),
        &request,
        &Destination::File(pair.clone()),
    );
    let outcome = outcome.unwrap();
    assert_eq!(loads(&events), 0, "the model was kept");
    assert_eq!(
        outcome.paths,
        [place.path("pair-1.png"), place.path("pair-2.png")]
    );
    assert!(!pair.exists() && outcome.paths.iter().all(|p| p.is_file()));

    // Image-to-image needs the VAE encoder: reloaded once, then kept for text-to-image too.
    let picture = InitPicture::read(&fixtures().join("tiny-sd.init.png"), 0.5).unwrap();
    let (w, h) = (picture.image.width, picture.image.height);
    let redraw = GenerationRequest {
        init: Some(picture),
        width: None,
        height: None,
        steps: 4,
        ..small("redrawn")
    };
    let folder = Destination::Folder(place.dir.path().to_path_buf());
    let (outcome, events) = place.run(&mut generator, &setup(), &redraw, &folder);
    let outcome = outcome.unwrap();
    assert_eq!(loads(&events), 1);
    assert_eq!((outcome.width, outcome.height), (w, h));
    let id = &outcome.generations[0].id;
    assert_eq!(outcome.paths, [place.path(&format!("{id}.png"))]);
    let (outcome, events) = place.run(&mut generator, &setup(), &small("again"), &folder);
    outcome.unwrap();
    assert_eq!(loads(&events), 0);

    // Another memory profile is another setup: reloaded, and said.
    let low = ModelSetup {
        memory: MemoryChoice {
            profile: MemoryProfile::Low,
            ..MemoryChoice::default()
        },
        ..setup()
    };
    let (outcome, events) = place.run(&mut generator, &low, &small("low"), &folder);
    assert_eq!(
        outcome.unwrap().generations[0].memory_profile.as_deref(),
        Some("low")
    );
    assert_eq!(loads(&events), 1);
    assert!(
        events.contains(&Event::note("memory profile: low")),
        "{events:?}"
    );
}

/// Each rule's one message, before anything is loaded, with nothing written.
#[test]
fn bad_requests_are_refused_before_loading() {
    let place = Place::new();
    let out = place.path("x.png");
    let picture = || InitPicture::read(&fixtures().join("tiny-sd.init.png"), 0.5).unwrap();
    let cases: Vec<(GenerationRequest, Destination, &str)> = vec![
        (
            GenerationRequest {
                width: Some(30),
                ..small("x")
            },
            Destination::File(out.clone()),
            "width must be a multiple of 8 from 8 to 2048 pixels (got 30)",
        ),
        (
            GenerationRequest {
                steps: 0,
                ..small("x")
            },
            Destination::File(out.clone()),
            "steps must be from 1 to 1000 (got 0)",
        ),
        (
            GenerationRequest {
                guidance: 60.0,
                ..small("x")
            },
            Destination::File(out.clone()),
            "guidance must be from 0 to 50",
        ),
        (
            GenerationRequest {
                batch: 0,
                ..small("x")
            },
            Destination::File(out.clone()),
            "batch must be from 1 to 64 images (got 0)",
        ),
        (
            GenerationRequest {
                init: Some(InitPicture {
                    strength: 0.1,
                    ..picture()
                }),
                width: None,
                height: None,
                ..small("x")
            },
            Destination::File(out.clone()),
            "runs no step",
        ),
        (
            GenerationRequest {
                init: Some(picture()),
                width: Some(64),
                ..small("x")
            },
            Destination::File(out.clone()),
            "resizing is not done for you",
        ),
        (
            small("x"),
            Destination::File(place.path("x.jpg")),
            "must be a .png file",
        ),
        (
            small("x"),
            Destination::File(place.path("missing/x.png")),
            "does not exist",
        ),
    ];
    for (request, destination, message) in cases {
        let (outcome, events) =
            place.run(&mut Generator::default(), &setup(), &request, &destination);
        let Err(e) = outcome else {
            panic!("{message}: not refused")
        };
        assert!(
            e.to_string().contains(message),
            "{e} should say {message:?}"
        );
        assert_eq!(e.kind(), ErrorKind::BadInput, "{e}");
        assert!(events.is_empty(), "{message}: {events:?}");
        assert!(!out.exists());
    }
    let e = InitPicture::decode("notes.txt", b"not a picture", 0.5).unwrap_err();
    assert!(matches!(e, GenerateError::Request(_)) && e.to_string().contains("notes.txt"));
}

#[test]
fn a_cancelled_generation_writes_nothing() {
    let place = Place::new();
    let out = place.path("cancelled.png");
    let history = place.history();
    let context = Context {
        hub: &place.hub,
        history: &history,
        app_version: "test",
    };
    let cancel = CancelToken::new();
    let e = Generator::default()
        .generate(
            &setup(),
            &small("x"),
            &Destination::File(out.clone()),
            &context,
            &mut |e| {
                if matches!(e, Event::Step { .. }) {
                    cancel.cancel();
                }
            },
            &cancel,
        )
        .err()
        .expect("cancelled");
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert!(!out.exists());
    assert!(
        !history.exists() || {
            let listed = History::open(&history).unwrap().list(&Filter::default());
            listed.unwrap().is_empty()
        }
    );
}

/// Without a size, an image conditioned on reference pictures takes the first one's as FLUX.2
/// prepares it (diffusers' default): over 1024x1024 pixels resized to about that area, then cut
/// to multiples of 16; a size given still wins, side by side.
#[test]
fn reference_pictures_size_an_image_given_no_size() {
    let picture = |width, height| crate::Picture {
        name: format!("{width}x{height}.png"),
        image: sdbench_diffusion::io::image::RgbImage {
            width,
            height,
            pixels: vec![0; width * height * 3],
        },
    };
    let with = |pictures: Vec<crate::Picture>| GenerationRequest {
        references: pictures,
        ..GenerationRequest::new("the same cat")
    };
    assert_eq!(with(vec![picture(75, 66)]).size().unwrap(), (64, 64));
    // 1100x1000 is resized to 1073x976 (the area rule), then cut to 1072x976.
    let two = with(vec![picture(1100, 1000), picture(64, 64)]);
    assert_eq!(two.size().unwrap(), (1072, 976));
    let sized = GenerationRequest {
        width: Some(512),
        ..two
    };
    assert_eq!(sized.size().unwrap(), (512, 976));
    assert_eq!(with(Vec::new()).size().unwrap(), (512, 512));
    // 3000x500 is resized to 2508x418, cut to 2496x416: wider than any image may be.
    let e = with(vec![picture(3000, 500)])
        .size()
        .unwrap_err()
        .to_string();
    for needle in [
        "3000x500.png (3000x500)",
        "2496x416",
        "width",
        "--width and --height",
    ] {
        assert!(e.contains(needle), "{needle}: {e}");
    }
    let given = GenerationRequest {
        width: Some(1024),
        ..with(vec![picture(3000, 500)])
    };
    assert_eq!(given.size().unwrap(), (1024, 416));
}
