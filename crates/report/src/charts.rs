//! The four charts of the compare view and the HTML report, as SVG text: seconds per image, the
//! stage breakdown, step times, and power over time. Each takes one or more runs.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use sdbench_bench::result::BenchResult;

use crate::{ReportError, Result, Run};

pub const WIDTH: u32 = 720;
pub const HEIGHT: u32 = 360;

/// Series colours, one per run (then repeating).
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// Stage colours: text encoder, denoising loop (UNet or transformer), VAE decode.
const STAGES: [(&str, RGBColor); 3] = [
    ("text encoder", RGBColor(0x9e, 0xc5, 0xe8)),
    ("denoising loop", RGBColor(0x1f, 0x77, 0xb4)),
    ("VAE decode", RGBColor(0xff, 0xbb, 0x78)),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn draw_err(e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw(e.to_string())
}

/// Draws into an SVG string.
fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<()>) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    Ok(out)
}

fn draw_legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(draw_err)
}

/// 0..max with a little headroom; a flat zero range still gets height.
fn upper(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.1
    } else {
        1.0
    }
}

/// One line per run: `points(result)` gives (x, y). `counted_x`: x counts things (images,
/// steps), so only whole numbers are labelled.
fn lines(
    runs: &[Run],
    caption: &str,
    x: (&str, bool),
    y_desc: &str,
    points: impl Fn(&BenchResult) -> Vec<(f64, f64)>,
) -> Result<String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|r| (r.label.to_string(), points(r.result)))
        .collect();
    series_lines(&series, caption, x, y_desc)
}

/// One line per named series of (x, y) points. `counted_x`: x counts things (images, steps,
/// batch sizes), so only whole numbers are labelled.
pub fn series_lines(
    series: &[(String, Vec<(f64, f64)>)],
    caption: &str,
    (x_desc, counted_x): (&str, bool),
    y_desc: &str,
) -> Result<String> {
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        return Err(ReportError::Empty(format!(
            "{caption}: no data in these runs"
        )));
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, 0f64..upper(y1))
            .map_err(draw_err)?;
        let x_label = |x: &f64| {
            if !counted_x {
                format!("{x}")
            } else if x.fract() == 0.0 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&x_label)
            .draw()
            .map_err(draw_err)?;
        for (i, (label, points)) in series.iter().enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
                .map_err(draw_err)?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(draw_err)?;
        }
        draw_legend(&mut chart)
    })
}

/// A histogram of `values` (e.g. images per minute of every run on one GPU), with a marker at
/// `highlight` (one run among them) where given.
pub fn distribution(
    caption: &str,
    x_desc: &str,
    values: &[f64],
    highlight: Option<f64>,
) -> Result<String> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        return Err(ReportError::Empty(format!("{caption}: no runs")));
    }
    let lowest = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // About the square root of the count in bins, 5 to 30 of them, over a range with some room.
    let bins = (finite.len() as f64).sqrt().ceil().clamp(5.0, 30.0) as usize;
    let spread = (highest - lowest).max(highest.abs() * 0.05).max(1e-9);
    let (x0, x1) = ((lowest - spread * 0.05).max(0.0), highest + spread * 0.05);
    let width = (x1 - x0) / bins as f64;
    let mut counts = vec![0usize; bins];
    for v in &finite {
        counts[(((v - x0) / width) as usize).min(bins - 1)] += 1;
    }
    let tallest = counts.iter().copied().max().unwrap_or(1);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(x0..x1, 0f64..upper(tallest as f64))
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("runs")
            .y_label_formatter(&|y| match y.fract() == 0.0 {
                true => format!("{y:.0}"),
                false => String::new(),
            })
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(counts.iter().enumerate().map(|(i, &n)| {
                let left = x0 + i as f64 * width;
                let mut bar =
                    Rectangle::new([(left, 0.0), (left + width, n as f64)], colour(0).filled());
                bar.set_margin(0, 0, 1, 1);
                bar
            }))
            .map_err(draw_err)?;
        if let Some(x) = highlight.filter(|x| x.is_finite()) {
            let c = colour(3);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, 0.0), (x, upper(tallest as f64))],
                    c.stroke_width(3),
                )))
                .map_err(draw_err)?
                .label("this run")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(3))
                });
            draw_legend(&mut chart)?;
        }
        Ok(())
    })
}

/// Seconds of each timed image, by image number.
pub fn seconds_per_image(runs: &[Run]) -> Result<String> {
    lines(runs, "Seconds per image", ("image", true), "seconds", |r| {
        r.results
            .iter()
            .enumerate()
            .map(|(i, x)| ((i + 1) as f64, x.seconds))
            .collect()
    })
}

/// Seconds of each denoising step, averaged over the run's images; for a run whose timed images
/// queued their steps, its diagnostic image's (synced after every step).
pub fn step_times(runs: &[Run]) -> Result<String> {
    lines(
        runs,
        "Step times (mean over images)",
        ("step", true),
        "seconds",
        |r| {
            let per_image: Vec<&[f64]> = r
                .results
                .iter()
                .map(|x| x.step_seconds.as_slice())
                .filter(|s| !s.is_empty())
                .collect();
            let per_image = match (&per_image[..], &r.step_timing) {
                ([], Some(timing)) => vec![timing.step_seconds.as_slice()],
                _ => per_image,
            };
            let steps = per_image.iter().map(|s| s.len()).max().unwrap_or(0);
            (0..steps)
                .filter_map(|s| {
                    let values: Vec<f64> =
                        per_image.iter().filter_map(|x| x.get(s).copied()).collect();
                    (!values.is_empty()).then(|| {
                        (
                            (s + 1) as f64,
                            values.iter().sum::<f64>() / values.len() as f64,
                        )
                    })
                })
                .collect()
        },
    )
}

/// The id of the telemetry source the run's power figures come from.
pub fn power_source_id(r: &BenchResult) -> Option<&str> {
    let named = r.scores.power.source.as_deref()?;
    r.telemetry
        .sources
        .iter()
        .map(|s| s.id.as_str())
        .filter(|id| named == *id || named.starts_with(&format!("{id} (")))
        .max_by_key(|id| id.len())
}

/// Power samples of the run's power source, in seconds from the start of the timed images.
pub fn power_over_time(runs: &[Run]) -> Result<String> {
    lines(
        runs,
        "Power during the run",
        ("seconds from the first timed image", false),
        "watts",
        |r| {
            let Some(id) = power_source_id(r) else {
                return Vec::new();
            };
            let start = r.telemetry.timed.start;
            r.telemetry
                .samples
                .iter()
                .filter(|s| s.source == id)
                .filter_map(|s| s.reading.power_w.map(|w| (s.t - start, w)))
                .collect()
        },
    )
}

/// Mean seconds per image in each stage, one stacked bar per run.
pub fn stage_breakdown(runs: &[Run]) -> Result<String> {
    let bars: Vec<(&str, [f64; 3])> = runs
        .iter()
        .filter(|r| !r.result.results.is_empty())
        .map(|r| {
            let n = r.result.results.len() as f64;
            let mut sums = [0.0; 3];
            for x in &r.result.results {
                sums[0] += x.stages.text_encoder;
                sums[1] += x.stages.unet_loop;
                sums[2] += x.stages.vae_decode;
            }
            (r.label, sums.map(|s| s / n))
        })
        .collect();
    if bars.is_empty() {
        return Err(ReportError::Empty(
            "stage breakdown: no timed images".into(),
        ));
    }
    let rows: Vec<(String, Vec<f64>)> = bars
        .into_iter()
        .map(|(label, s)| (label.to_string(), s.to_vec()))
        .collect();
    stacked_rows(
        "Stage breakdown (mean seconds per image)",
        "seconds",
        &rows,
        &STAGES,
    )
}

/// One row of stacked bars per (label, segment values), the first row at the top; `segments`
/// names and colours each segment.
pub fn stacked_rows(
    caption: &str,
    x_desc: &str,
    bars: &[(String, Vec<f64>)],
    segments: &[(&str, RGBColor)],
) -> Result<String> {
    let widest = bars
        .iter()
        .map(|(_, s)| s.iter().sum::<f64>())
        .fold(0.0, f64::max);
    // One row per run, the first at the top, on a plain numeric axis: row i spans i..i+1 and its
    // bar the middle 60% of it. (Bars between segmented coordinates had no height when the
    // segment's end fell outside the axis: one run drew none.)
    let rows = bars.len();
    let row = |i: usize| (rows - 1 - i) as f64;
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(140)
            .build_cartesian_2d(0f64..upper(widest), 0f64..rows as f64)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(x_desc)
            .draw()
            .map_err(draw_err)?;
        for (stage, (name, c)) in segments.iter().enumerate() {
            let c = *c;
            chart
                .draw_series(bars.iter().enumerate().map(|(i, (_, s))| {
                    let left: f64 = s.iter().take(stage).sum();
                    let right = left + s.get(stage).copied().unwrap_or(0.0);
                    Rectangle::new([(left, row(i) + 0.2), (right, row(i) + 0.8)], c.filled())
                }))
                .map_err(draw_err)?
                .label(*name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        // Each run's label beside its row's middle, where the axis labels would be.
        let style = ("sans-serif", 13)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, (label, _)) in bars.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(0.0, row(i) + 0.5));
            root.draw(&Text::new(label.to_string(), (x - 8, y), style.clone()))
                .map_err(draw_err)?;
        }
        draw_legend(&mut chart)
    })
}
