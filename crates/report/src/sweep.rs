//! A sweep as an HTML page: the points' table, the fastest configuration, and the charts its axes
//! call for: images per minute against batch size (one line per setup), megapixels per second
//! against image size, and every point's megapixels per second.

use std::collections::BTreeMap;

use sdbench_bench::sweep::{largest_batch_lines, rows, Sweep, SweepPoint, TABLE_COLUMNS};

use crate::charts::{colour, series_lines, stacked_rows};
use crate::html::{escape, page};
use crate::{ReportError, Result};

/// The sweep's page.
pub fn report(sweep: &Sweep) -> String {
    page(
        &format!("SD Bench sweep — {}", sweep.workload),
        &report_body(sweep),
    )
}

pub fn report_body(sweep: &Sweep) -> String {
    let mut body = format!(
        "<h1>SD Bench sweep — {}</h1>\n<p class=\"muted\">{} · sweep {} · {} points</p>\n",
        escape(&sweep.workload),
        escape(&sweep.created_at),
        escape(&sweep.sweep_id),
        sweep.points.len()
    );
    body.push_str(&match sweep.fastest.and_then(|i| sweep.points.get(i)) {
        Some(p) => format!(
            "<p id=\"fastest\">Fastest: <strong>{}</strong> on {}, {:.3} megapixels/s ({:.2} images/min)</p>\n",
            escape(&p.settings.describe()),
            escape(p.result.as_ref().map_or("", |r| r.backend.device.as_str())),
            p.megapixels_per_second().unwrap_or(0.0),
            p.result.as_ref().map_or(0.0, |r| r.scores.images_per_minute),
        ),
        None => "<p id=\"fastest\" class=\"invalid\">No point ran valid.</p>\n".into(),
    });
    body.push_str(&points_table(sweep));
    for line in largest_batch_lines(sweep) {
        body.push_str(&format!(
            "<p class=\"largest-batch\">{}</p>\n",
            escape(&line)
        ));
    }
    body.push_str("<h2>Charts</h2>\n");
    for chart in charts(sweep) {
        body.push_str(&match chart {
            Ok(svg) => format!("<figure>\n{svg}\n</figure>\n"),
            Err(ReportError::Empty(why)) => format!("<p class=\"muted\">{}</p>\n", escape(&why)),
            Err(e) => format!("<p class=\"invalid\">{}</p>\n", escape(&e.to_string())),
        });
    }
    body
}

fn points_table(sweep: &Sweep) -> String {
    let mut out = String::from("<table id=\"sweep-points\">\n<tr>");
    for column in TABLE_COLUMNS {
        out.push_str(&format!("<th>{}</th>", escape(column)));
    }
    out.push_str("</tr>\n");
    for row in rows(sweep) {
        out.push_str(if row.fastest {
            "<tr class=\"fastest\">"
        } else {
            "<tr>"
        });
        for cell in &row.setup {
            out.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        match (&row.figures, &row.skipped) {
            (Some(figures), _) => {
                for cell in figures {
                    out.push_str(&format!("<td class=\"num\">{}</td>", escape(cell)));
                }
            }
            (None, why) => out.push_str(&format!(
                "<td colspan=\"5\" class=\"skipped\">{}</td>",
                escape(why.as_deref().unwrap_or_default())
            )),
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A point's setup less one axis, naming a chart's line (the table names each device).
fn setup_label(p: &SweepPoint, with_size: bool, with_batch: bool) -> String {
    let s = &p.settings;
    let mut label = format!("{} {} {}", s.backend, s.precision, s.memory);
    if with_size {
        label.push_str(&format!(" {}x{}", s.width, s.height));
    }
    if with_batch {
        label.push_str(&format!(" batch {}", s.batch));
    }
    label
}

/// Lines of `(x, y)` per label over the points that ran valid.
fn grouped(
    sweep: &Sweep,
    label: impl Fn(&SweepPoint) -> String,
    xy: impl Fn(&SweepPoint) -> Option<(f64, f64)>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut groups: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in sweep.points.iter().filter(|p| p.ran_valid()) {
        if let Some(point) = xy(p) {
            groups.entry(label(p)).or_default().push(point);
        }
    }
    groups
        .into_iter()
        .map(|(label, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            (label, points)
        })
        .collect()
}

/// The charts the sweep's axes call for: throughput against batch where batches vary,
/// megapixels/s against size where sizes vary, and each point's megapixels/s.
fn charts(sweep: &Sweep) -> Vec<Result<String>> {
    let distinct = |f: fn(&SweepPoint) -> usize| {
        let mut values: Vec<usize> = sweep.points.iter().map(f).collect();
        values.sort_unstable();
        values.dedup();
        values.len()
    };
    let mut charts = Vec::new();
    if distinct(|p| p.settings.batch) > 1 {
        let series = grouped(
            sweep,
            |p| setup_label(p, true, false),
            |p| {
                let r = p.result.as_ref()?;
                Some((p.settings.batch as f64, r.scores.images_per_minute))
            },
        );
        charts.push(series_lines(
            &series,
            "Images per minute against batch size",
            ("batch size", true),
            "images per minute",
        ));
    }
    if distinct(|p| p.settings.width * p.settings.height) > 1 {
        let series = grouped(
            sweep,
            |p| setup_label(p, false, true),
            |p| {
                let pixels = (p.settings.width * p.settings.height) as f64 / 1e6;
                Some((pixels, p.megapixels_per_second()?))
            },
        );
        charts.push(series_lines(
            &series,
            "Megapixels per second against image size",
            ("megapixels per image", false),
            "megapixels per second",
        ));
    }
    charts.push(points_chart(sweep));
    charts
}

/// Every point that ran valid, by megapixels per second (the app's comparison shows it too).
pub fn points_chart(sweep: &Sweep) -> Result<String> {
    let bars: Vec<(String, Vec<f64>)> = sweep
        .points
        .iter()
        .filter(|p| p.ran_valid())
        .filter_map(|p| Some((setup_label(p, true, true), vec![p.megapixels_per_second()?])))
        .collect();
    if bars.is_empty() {
        return Err(ReportError::Empty(
            "megapixels per second: no point ran valid".into(),
        ));
    }
    stacked_rows(
        "Megapixels per second of each point",
        "megapixels per second",
        &bars,
        &[("megapixels per second", colour(0))],
    )
}
