//! Charts are well-formed SVG that plot every data point of every run; reports escape what they
//! show and hold every chart.

use std::path::PathBuf;

use sdbench_bench::result::BenchResult;
use sdbench_report::{charts, html, ReportError, Run};

fn sample() -> BenchResult {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/tests/data/result-v1.json");
    BenchResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A run with `images` images of `steps` steps and a power sample every 0.1 s of the timed window.
fn run(images: usize, steps: usize, seconds: f64, watts: f64) -> BenchResult {
    let mut r = sample();
    let template = r.results[0].clone();
    r.results = (0..images)
        .map(|i| {
            let mut x = template.clone();
            x.seconds = seconds + i as f64 * 0.01;
            x.step_seconds = vec![seconds / steps as f64; steps];
            x
        })
        .collect();
    let template = r.telemetry.samples[0].clone();
    let (start, end) = (r.telemetry.timed.start, r.telemetry.timed.end);
    let n = ((end - start) / 0.1).round() as usize + 1;
    r.telemetry.samples = (0..n)
        .map(|i| {
            let mut s = template.clone();
            s.t = start + i as f64 * 0.1;
            s.reading.power_w = Some(watts);
            s
        })
        .collect();
    r
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed SVG: {e}"))
}

fn count(doc: &roxmltree::Document, tag: &str) -> usize {
    doc.descendants().filter(|n| n.has_tag_name(tag)).count()
}

fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

#[test]
fn line_charts_plot_every_point_of_every_run() {
    let a = run(5, 30, 2.0, 300.0);
    let b = run(3, 30, 4.0, 200.0);
    let runs = [
        Run {
            label: "H100 f16",
            result: &a,
        },
        Run {
            label: "7900 XTX f16",
            result: &b,
        },
    ];
    let svg = charts::seconds_per_image(&runs).unwrap();
    let doc = parse(&svg);
    assert_eq!(count(&doc, "circle"), 5 + 3, "one marker per image");
    let labels = texts(&doc);
    for needle in [
        "Seconds per image",
        "H100 f16",
        "7900 XTX f16",
        "image",
        "seconds",
    ] {
        assert!(
            labels.iter().any(|t| t == needle),
            "{needle} missing in {labels:?}"
        );
    }

    let doc_steps = charts::step_times(&runs).unwrap();
    assert_eq!(
        count(&parse(&doc_steps), "circle"),
        30 + 30,
        "one marker per step"
    );

    let power = charts::power_over_time(&runs).unwrap();
    let expected: usize = [&a, &b].iter().map(|r| r.telemetry.samples.len()).sum();
    assert_eq!(count(&parse(&power), "circle"), expected);
}

/// A run whose timed images queued their steps plots its diagnostic image's step times.
#[test]
fn step_times_of_queued_runs_come_from_their_diagnostic_image() {
    let mut queued = run(3, 20, 2.0, 300.0);
    for x in &mut queued.results {
        x.step_seconds.clear();
    }
    queued.step_timing = Some(sdbench_bench::result::StepTiming {
        method: "diagnostic_image".into(),
        step_seconds: vec![0.1; 20],
        sync_cost_ratio: Some(1.02),
    });
    let svg = charts::step_times(&[Run {
        label: "queued",
        result: &queued,
    }])
    .unwrap();
    assert_eq!(count(&parse(&svg), "circle"), 20);
}

#[test]
fn stage_breakdown_stacks_three_stages_per_run() {
    let a = run(2, 4, 1.0, 100.0);
    let b = run(2, 4, 3.0, 100.0);
    let svg = charts::stage_breakdown(&[
        Run {
            label: "a",
            result: &a,
        },
        Run {
            label: "b",
            result: &b,
        },
    ])
    .unwrap();
    let doc = parse(&svg);
    // Each stage colour: one bar per run plus its legend swatch.
    for colour in ["#9EC5E8", "#1F77B4", "#FFBB78"] {
        let n = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(colour))
            .count();
        assert_eq!(n, 3, "{colour}");
    }
    let labels = texts(&doc);
    for needle in ["a", "b", "denoising loop", "VAE decode", "text encoder"] {
        assert!(
            labels.iter().any(|t| t == needle),
            "{needle} missing in {labels:?}"
        );
    }
}

/// Every filled rectangle of a chart has a positive width and height: a mark of negative or zero
/// size is not drawn by browsers (the stage breakdown of one run once drew none of its bars). At
/// least one is drawn besides plotters' background, the rectangle that covers the whole canvas.
fn assert_marks_are_drawable(svg: &str) {
    let doc = parse(svg);
    let number =
        |node: roxmltree::Node, name| node.attribute(name).map(|v| v.parse::<f64>().unwrap());
    let root = doc.root_element();
    let canvas = (number(root, "width"), number(root, "height"));
    let (mut marks, mut backgrounds) = (0, 0);
    for rect in doc.descendants().filter(|n| n.has_tag_name("rect")) {
        let size = |name| number(rect, name);
        if let (Some(w), Some(h)) = (size("width"), size("height")) {
            assert!(w > 0.0 && h > 0.0, "a {w}x{h} mark: {svg}");
            let at_origin = size("x").unwrap_or(0.0) == 0.0 && size("y").unwrap_or(0.0) == 0.0;
            let background = at_origin && (Some(w), Some(h)) == canvas;
            match background {
                true => backgrounds += 1,
                false => marks += 1,
            }
        }
    }
    assert!(marks > 0, "no marks drawn besides the background: {svg}");
    // The background is recognised, so it is not what was counted.
    assert_eq!(backgrounds, 1, "{svg}");
}

#[test]
fn stage_breakdown_bars_have_a_size_for_one_run_and_for_several() {
    let runs: Vec<BenchResult> = (1..=4).map(|k| run(3, 4, k as f64, 100.0)).collect();
    let labels = ["one", "two", "three", "four"];
    for n in 1..=4 {
        let chosen: Vec<Run> = (0..n)
            .map(|i| Run {
                label: labels[i],
                result: &runs[i],
            })
            .collect();
        let svg = charts::stage_breakdown(&chosen).unwrap();
        assert_marks_are_drawable(&svg);
        let doc = parse(&svg);
        for colour in ["#9EC5E8", "#1F77B4", "#FFBB78"] {
            let bars = doc
                .descendants()
                .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(colour))
                .count();
            assert_eq!(
                bars,
                n + 1,
                "{colour}: a bar per run and the legend's swatch"
            );
        }
    }
}

#[test]
fn every_chart_draws_marks_of_a_size() {
    let a = run(3, 4, 1.0, 100.0);
    let runs = [Run {
        label: "a",
        result: &a,
    }];
    for svg in [
        charts::seconds_per_image(&runs).unwrap(),
        charts::step_times(&runs).unwrap(),
        charts::power_over_time(&runs).unwrap(),
        charts::stage_breakdown(&runs).unwrap(),
    ] {
        assert_marks_are_drawable(&svg);
    }
}

#[test]
fn charts_without_data_say_why() {
    let mut r = run(2, 4, 1.0, 100.0);
    r.scores.power.available = false;
    r.scores.power.source = None;
    let runs = [Run {
        label: "a",
        result: &r,
    }];
    assert!(matches!(
        charts::power_over_time(&runs),
        Err(ReportError::Empty(_))
    ));
    r.results.clear();
    let runs = [Run {
        label: "a",
        result: &r,
    }];
    assert!(matches!(
        charts::seconds_per_image(&runs),
        Err(ReportError::Empty(_))
    ));
    assert!(matches!(
        charts::stage_breakdown(&runs),
        Err(ReportError::Empty(_))
    ));
}

#[test]
fn html_report_escapes_text_and_holds_every_chart() {
    let mut r = run(3, 4, 1.0, 100.0);
    r.workload.model.id = "<script>alert(1)</script>".into();
    let page = html::report(&r);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.contains("<script>"));
    assert_eq!(page.matches("<svg").count(), 4);
    assert!(page.contains(&format!("Score {}", r.scores.score.unwrap())));
    assert!(!page.contains("memory profile)"));
    // A score of another memory profile says so where the score is.
    r.backend.memory_profile = Some("low".into());
    let low = html::report(&r);
    assert!(low.contains(&format!(
        "<h1>SD Bench — Score {} (low memory profile)</h1>",
        r.scores.score.unwrap()
    )));
    r.backend.memory_profile = Some("full".into());
    // Every score row of the summary is in the page.
    for (metric, _, _) in sdbench_bench::summary::rows(&r) {
        assert!(page.contains(&html::escape(&metric)), "{metric}");
    }

    assert!(!page.contains("id=\"throttled\""));
    let mut hot = r.clone();
    hot.scores.hardware.throttled = true;
    hot.scores.hardware.throttle = vec![sdbench_telemetry::hardware::ThrottleShare {
        reason: "hw_slowdown".into(),
        share: 0.125,
    }];
    assert!(html::report(&hot).contains(
        "<p class=\"invalid\" id=\"throttled\">Throttled: hw_slowdown 12% of the time. The device slowed itself"
    ));

    r.valid = false;
    r.scores.score = None;
    r.invalid_reasons = vec!["image 2: blank".into()];
    r.scores.power.available = false;
    r.scores.power.source = None;
    let page = html::report(&r);
    assert!(page.contains("Invalid run: image 2: blank"));
    assert!(page.contains("No score"));
    assert_eq!(
        page.matches("<svg").count(),
        3,
        "no power chart, a reason instead"
    );
}

#[test]
fn comparison_has_a_column_per_run() {
    let a = run(2, 4, 1.0, 100.0);
    let b = run(2, 4, 2.0, 100.0);
    let c = run(2, 4, 3.0, 100.0);
    let page = html::comparison(&[
        Run {
            label: "first",
            result: &a,
        },
        Run {
            label: "second",
            result: &b,
        },
        Run {
            label: "third",
            result: &c,
        },
    ]);
    assert!(page.contains("<th>first</th><th>second</th><th>third</th>"));
    assert_eq!(page.matches("<svg").count(), 4);
    assert!(!page.contains("not-comparable") && !page.contains("compared-across"));

    let mut xl = run(2, 4, 3.0, 100.0);
    xl.workload.name = "sdxl-1024-20".into();
    let page = html::comparison(&[
        Run {
            label: "first",
            result: &a,
        },
        Run {
            label: "sdxl",
            result: &xl,
        },
    ]);
    assert!(page.contains("id=\"not-comparable\""), "{page}");
    assert!(
        page.contains("workload: sd15-512-30 v1 / sdxl-1024-20 v1"),
        "{page}"
    );

    // The same work on two devices and precisions: a comparison across them, not a warning.
    let mut other = run(2, 4, 3.0, 100.0);
    other.backend.device = "Other GPU".into();
    other.backend.precision = "f32".into();
    let page = html::comparison(&[
        Run {
            label: "first",
            result: &a,
        },
        Run {
            label: "other",
            result: &other,
        },
    ]);
    assert!(!page.contains("not-comparable"), "{page}");
    assert!(page.contains("id=\"compared-across\""), "{page}");
    assert!(
        page.contains("Compared across precision: f16 / f32; device: NVIDIA H100 / Other GPU."),
        "{page}"
    );
}

#[test]
fn distribution_bins_every_value_and_marks_the_run() {
    // 9 values: 5 bins (the square root of the count, at least 5), one bar each.
    let values = [10.0, 10.5, 11.0, 11.2, 12.0, 12.1, 12.2, 13.0, 20.0];
    let svg = charts::distribution(
        "Images per minute",
        "images per minute",
        &values,
        Some(12.1),
    )
    .unwrap();
    let doc = parse(&svg);
    let bars: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#1F77B4"))
        .collect();
    assert_eq!(bars.len(), 5);
    let labels = texts(&doc);
    assert!(labels.iter().any(|t| t == "this run"), "{labels:?}");
    assert!(labels.iter().any(|t| t == "Images per minute"));
    // No marker without a run to mark; no values is a reason, not a chart.
    let plain = charts::distribution("c", "x", &values, None).unwrap();
    assert!(!plain.contains("this run"));
    let empty = charts::distribution("c", "x", &[f64::NAN], None).unwrap_err();
    assert!(empty.to_string().contains("no runs"));
}

/// The check above counts the chart's marks, not plotters' background: a chart of nothing but
/// its background fails it.
#[test]
#[should_panic(expected = "no marks drawn besides the background")]
fn a_chart_of_only_its_background_has_no_marks() {
    assert_marks_are_drawable(
        r##"<svg width="640" height="360" viewBox="0 0 640 360" xmlns="http://www.w3.org/2000/svg"><rect x="0" y="0" width="640" height="360" opacity="1" fill="#FFFFFF" stroke="none"/></svg>"##,
    );
}

/// The difference of two pictures: identical ones have no difference and an infinite PSNR; one
/// channel off by 10 in a 2x1 picture (6 values) has a mean of 10/6, a PSNR of
/// 10·log10(255² / (100/6)), and a difference picture whose largest value is white; pictures of
/// other sizes are not compared.
#[test]
fn the_difference_of_two_pictures() {
    use sdbench_diffusion::io::image::RgbImage;
    use sdbench_report::side_by_side::difference;
    let a = RgbImage {
        width: 2,
        height: 1,
        pixels: vec![10, 20, 30, 40, 50, 60],
    };
    let (same, picture) = difference(&a, &a).unwrap();
    assert_eq!((same.mean_abs, same.max_abs), (0.0, 0));
    assert!(same.psnr_db.is_infinite());
    assert!(picture.pixels.iter().all(|&v| v == 0));
    let mut b = a.clone();
    b.pixels[4] = 60;
    let (d, picture) = difference(&a, &b).unwrap();
    assert!((d.mean_abs - 10.0 / 6.0).abs() < 1e-12);
    let psnr = 10.0 * (255.0f64 * 255.0 / (100.0 / 6.0)).log10();
    assert!((d.psnr_db - psnr).abs() < 1e-9, "{}", d.psnr_db);
    assert_eq!(picture.pixels, [0, 0, 0, 0, 255, 0]);
    let wide = RgbImage {
        width: 1,
        height: 2,
        ..a.clone()
    };
    assert!(difference(&a, &wide).is_none());
}

/// A result's image name is read only inside its own folder.
#[test]
fn a_picture_name_outside_the_results_folder_is_refused() {
    use sdbench_report::side_by_side::{pairs, Pictures};
    let dir = tempfile::tempdir().unwrap();
    let mut r = sample();
    r.results[0].image.file = Some("../secret.png".into());
    let side = Pictures {
        run: Run {
            label: "A",
            result: &r,
        },
        dir: dir.path(),
    };
    let found = pairs(&side, &side);
    let why = found[0].compared.as_ref().err().unwrap();
    assert_eq!(why, "A: the image name ../secret.png is not a file name");
}

/// A sweep file from elsewhere whose `fastest` names no point is reported as having none, not a
/// crash.
#[test]
fn a_sweep_whose_fastest_names_no_point_is_reported_without_one() {
    use sdbench_bench::sweep::{table, Sweep, SWEEP_KIND, SWEEP_SCHEMA_VERSION};
    let sweep = Sweep {
        schema_version: SWEEP_SCHEMA_VERSION,
        kind: SWEEP_KIND.into(),
        sweep_id: "00000000-0000-0000-0000-000000000000".into(),
        created_at: "2026-12-08T00:00:00Z".into(),
        app: sample().app,
        workload: "sd15-512-30".into(),
        points: Vec::new(),
        fastest: Some(99),
        largest_batches: Vec::new(),
    };
    assert!(sdbench_report::sweep::report(&sweep).contains("No point ran valid."));
    assert!(table(&sweep).contains("fastest: no point ran valid"));
}
