//! Self-contained HTML reports (no scripts, no external files): the run's identity, every score,
//! the per-image table and the charts inline as SVG. Readable in light and dark themes.

use sdbench_bench::result::BenchResult;
use sdbench_bench::summary::{header, image_cells, rows, throttled_note, IMAGE_COLUMNS};

use crate::charts;
use crate::side_by_side::{self, Pictures};
use crate::{ReportError, Result, Run};

const STYLE: &str = "
:root { color-scheme: light dark; --fg: #1b1b1f; --bg: #ffffff; --muted: #5f6368; --line: #d0d3d8; --bad: #b3261e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6ea; --bg: #17181c; --muted: #a0a4ab; --line: #3a3d44; --bad: #f2b8b5; } }
body { font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); max-width: 980px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .7rem; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.invalid { color: var(--bad); font-weight: 600; }
figure { margin: 1rem 0; } figure svg { max-width: 100%; height: auto; background: #fff; border-radius: 6px; }
.muted { color: var(--muted); }
table.pictures img { width: 192px; height: auto; image-rendering: pixelated; background: #fff; }
";

/// `&`, `<`, `>` and quotes as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A whole self-contained page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

/// A chart, or the reason there is none (e.g. no power readings).
fn figure(chart: Result<String>) -> String {
    match chart {
        Ok(svg) => format!("<figure>\n{svg}\n</figure>\n"),
        Err(ReportError::Empty(why)) => format!("<p class=\"muted\">{}</p>\n", escape(&why)),
        Err(e) => format!("<p class=\"invalid\">{}</p>\n", escape(&e.to_string())),
    }
}

fn charts(runs: &[Run]) -> String {
    let mut out = String::new();
    out.push_str(&figure(charts::seconds_per_image(runs)));
    out.push_str(&figure(charts::stage_breakdown(runs)));
    out.push_str(&figure(charts::step_times(runs)));
    out.push_str(&figure(charts::power_over_time(runs)));
    out
}

/// "Score 1234", with the memory profile when it is not the standard score's (`full`).
fn score_title(r: &BenchResult) -> String {
    let score = match r.scores.score {
        Some(s) => format!("Score {s}"),
        None => "No score".into(),
    };
    match r.backend.memory_profile.as_deref() {
        Some(profile) if profile != "full" => format!("{score} ({profile} memory profile)"),
        _ => score,
    }
}

/// The report of one run.
pub fn report(r: &BenchResult) -> String {
    page(&format!("SD Bench — {}", score_title(r)), &report_body(r))
}

/// The report of one run without the page around it (the results service's run page).
pub fn report_body(r: &BenchResult) -> String {
    let score = score_title(r);
    let mut body = format!(
        "<h1>SD Bench — {}</h1>\n<p class=\"muted\">{} · run {}</p>\n",
        escape(&score),
        escape(&r.created_at),
        escape(&r.run_id)
    );
    if !r.valid {
        body.push_str(&format!(
            "<p class=\"invalid\">Invalid run: {}</p>\n",
            escape(&r.invalid_reasons.join("; "))
        ));
    }
    if let Some(note) = throttled_note(r) {
        body.push_str(&format!(
            "<p class=\"invalid\" id=\"throttled\">{}</p>\n",
            escape(&note)
        ));
    }
    body.push_str("<table>\n");
    for (k, v) in header(r) {
        body.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>\n",
            escape(&k),
            escape(&v)
        ));
    }
    let gpus: Vec<String> = r.system.gpus.iter().map(|g| g.name.clone()).collect();
    for (k, v) in [
        (
            "system",
            format!("{} · {}", r.system.os_label(), r.system.cpu_model),
        ),
        ("GPUs", gpus.join(", ")),
        ("app", format!("{} {}", r.app.name, r.app.version)),
    ] {
        body.push_str(&format!("<tr><th>{k}</th><td>{}</td></tr>\n", escape(&v)));
    }
    body.push_str(
        "</table>\n<h2>Scores</h2>\n<table>\n<tr><th>metric</th><th>value</th><th>unit</th></tr>\n",
    );
    for (m, v, u) in rows(r) {
        body.push_str(&format!(
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
            escape(&m),
            escape(&v),
            escape(&u)
        ));
    }
    body.push_str("</table>\n<h2>Images</h2>\n<table>\n<tr><th>image</th>");
    for c in IMAGE_COLUMNS {
        body.push_str(&format!("<th>{c}</th>"));
    }
    body.push_str("</tr>\n");
    for (i, cells) in image_cells(r).iter().enumerate() {
        body.push_str(&format!("<tr><td class=\"num\">{}</td>", i + 1));
        for c in cells {
            body.push_str(&format!("<td class=\"num\">{}</td>", escape(c)));
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</table>\n<h2>Charts</h2>\n");
    body.push_str(&charts(&[Run {
        label: &r.backend.device,
        result: r,
    }]));
    body
}

/// Two or more runs side by side: one column per run, then the charts with one series each.
pub fn comparison(runs: &[Run]) -> String {
    page("SD Bench — comparison", &comparison_body(runs))
}

/// Two or more runs with their pictures: the comparison, then the first run's images beside each
/// other run's (`side_by_side`).
pub fn comparison_with_pictures(runs: &[Pictures]) -> String {
    let plain: Vec<Run> = runs.iter().map(|p| p.run).collect();
    let mut body = comparison_body(&plain);
    if let Some((first, others)) = runs.split_first() {
        for other in others {
            body.push_str(&side_by_side::section(first, other));
        }
    }
    page("SD Bench — comparison", &body)
}

/// The comparison without the page around it (the results service's compare view).
pub fn comparison_body(runs: &[Run]) -> String {
    let mut body = String::from("<h1>SD Bench — comparison</h1>\n");
    if let Some(why) = crate::comparison_warning(runs) {
        body.push_str(&format!(
            "<p class=\"invalid\" id=\"not-comparable\">{}</p>\n",
            escape(&why)
        ));
    }
    if let Some(across) = crate::comparison_note(runs) {
        body.push_str(&format!(
            "<p id=\"compared-across\">{}</p>\n",
            escape(&across)
        ));
    }
    body.push_str("<table>\n<tr><th>metric</th>");
    for run in runs {
        body.push_str(&format!("<th>{}</th>", escape(run.label)));
    }
    body.push_str("</tr>\n");
    let per_run: Vec<Vec<(String, String, String)>> = runs.iter().map(|r| rows(r.result)).collect();
    let headers: Vec<Vec<(String, String)>> = runs.iter().map(|r| header(r.result)).collect();
    if let Some(first) = headers.first() {
        for (i, (k, _)) in first.iter().enumerate() {
            body.push_str(&format!("<tr><th>{}</th>", escape(k)));
            for h in &headers {
                body.push_str(&format!("<td>{}</td>", escape(&h[i].1)));
            }
            body.push_str("</tr>\n");
        }
    }
    if let Some(first) = per_run.first() {
        for (i, (m, _, u)) in first.iter().enumerate() {
            body.push_str(&format!("<tr><td>{} ({})</td>", escape(m), escape(u)));
            for rows in &per_run {
                let v = rows
                    .get(i)
                    .filter(|r| r.0 == *m)
                    .map(|r| r.1.as_str())
                    .unwrap_or("");
                body.push_str(&format!("<td class=\"num\">{}</td>", escape(v)));
            }
            body.push_str("</tr>\n");
        }
    }
    body.push_str("</table>\n<h2>Charts</h2>\n");
    body.push_str(&charts(runs));
    body
}
