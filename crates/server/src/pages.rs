//! Server-rendered pages (no scripts): the leaderboard, a GPU's page, a run's page and the
//! compare view, with the report crate's SVG charts.

use axum::extract::{Path, Query, RawQuery, State};
use axum::response::{Html, IntoResponse, Response};

use sdbench_bench::result::BenchResult;
use sdbench_bench::submit::plural;
use sdbench_bench::workload::{workload_names, STANDARD_NAME};
use sdbench_report::html::{comparison_body, escape, page, report_body};
use sdbench_report::{charts, Run};
use sdbench_telemetry::hardware::THROTTLED_SHARE;

use crate::api::{blocking, list_runs, FilterQuery};
use crate::error::ServerError;
use crate::store::{self, Distribution, HardwareFilter, RunRow};
use crate::Shared;
use sdbench_bench::submit::QualityComparison;

/// Characters outside RFC 3986's unreserved set as %XX (for GPU names and ids in links).
pub fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn error_page(e: ServerError) -> Response {
    let (status, message) = e.for_client();
    let body = format!("{NAV}<h1>{status}</h1>\n<p>{}</p>\n", escape(&message));
    (status, Html(page("SD Bench results", &body))).into_response()
}

/// Runs a GPU's page lists (the fastest first).
const MAX_LISTED_RUNS: usize = 500;

const NAV: &str = "<nav><a href=\"/\">Leaderboard</a></nav>\n";

fn select(name: &str, label: &str, choices: &[(&str, &str)], chosen: Option<&str>) -> String {
    let mut out = format!("<label>{label} <select name=\"{name}\" id=\"filter-{name}\">");
    for (value, text) in choices {
        let selected = match chosen {
            Some(c) => c == *value,
            None => value.is_empty() || *value == "any",
        };
        out.push_str(&format!(
            "<option value=\"{value}\"{}>{text}</option>",
            if selected { " selected" } else { "" }
        ));
    }
    out.push_str("</select></label>\n");
    out
}

/// The filter form; the leaderboard and a GPU's page share it.
fn filter_form(action: &str, q: &FilterQuery) -> String {
    let mut workloads: Vec<(&str, &str)> = workload_names().into_iter().map(|n| (n, n)).collect();
    workloads.push(("custom", "custom"));
    workloads.push(("any", "any"));
    let workload = q
        .workload
        .as_deref()
        .filter(|w| !w.is_empty())
        .or(Some(STANDARD_NAME));
    let any = ("any", "any");
    let mut form = format!("<form method=\"get\" action=\"{action}\" id=\"filters\">\n");
    form.push_str(&select("workload", "Workload", &workloads, workload));
    form.push_str(&select(
        "backend",
        "Backend",
        &[
            any,
            ("cuda", "CUDA"),
            ("rocm", "ROCm"),
            ("vulkan", "Vulkan"),
            ("metal", "Metal"),
            ("dx12", "DX12"),
            ("cpu", "CPU"),
        ],
        q.backend.as_deref(),
    ));
    form.push_str(&select(
        "precision",
        "Precision",
        &[any, ("f16", "f16"), ("bf16", "bf16"), ("f32", "f32")],
        q.precision.as_deref(),
    ));
    form.push_str(&select(
        "profile",
        "Memory profile",
        &[
            any,
            ("full", "full"),
            ("balanced", "balanced"),
            ("low", "low"),
            ("minimal", "minimal"),
            ("cpu", "cpu"),
        ],
        q.profile.as_deref(),
    ));
    form.push_str(&select(
        "kind",
        "Runs",
        &[
            ("standard", "standard only"),
            ("all", "standard and custom"),
        ],
        Some(q.kind.as_deref().unwrap_or("standard")),
    ));
    form.push_str(&select(
        "hardware",
        "Hardware state",
        &[
            ("steady", "not throttled"),
            ("throttled", "throttled only"),
            ("any", "any"),
        ],
        Some(q.hardware.as_deref().unwrap_or("steady")),
    ));
    form.push_str("<button type=\"submit\" id=\"apply\">Apply</button>\n</form>\n");
    form
}

/// The query string of `q`, to carry the filters into links.
fn query_string(q: &FilterQuery) -> String {
    let pairs = [
        ("workload", &q.workload),
        ("backend", &q.backend),
        ("precision", &q.precision),
        ("profile", &q.profile),
        ("kind", &q.kind),
        ("hardware", &q.hardware),
    ];
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", encode(v))))
        .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!("?{}", parts.join("&")),
    }
}

fn rate(v: f64) -> String {
    format!("{v:.2}")
}

/// `/`: GPUs ranked by the median images per minute of their runs.
pub async fn leaderboard(State(service): State<Shared>, Query(q): Query<FilterQuery>) -> Response {
    let runs = match list_runs(service.clone(), &q, None).await {
        Ok(runs) => runs,
        Err(e) => return error_page(e),
    };
    let rows = store::leaderboard(&runs);
    let apart = match throttled_apart(&service, &q, None).await {
        Ok(apart) => apart,
        Err(e) => return error_page(e),
    };
    let mut body = format!("{NAV}<h1>SD Bench leaderboard</h1>\n");
    body.push_str(&filter_form("/", &q));
    body.push_str(&format!(
        "<p class=\"muted\" id=\"summary\">{} {} on {} {}. Runs of other memory profiles than full are not standard scores and are labelled so.</p>\n{apart}",
        runs.len(),
        plural(runs.len(), "run", "runs"),
        rows.len(),
        plural(rows.len(), "device", "devices")
    ));
    if rows.is_empty() {
        body.push_str("<p id=\"empty\">No runs match these filters yet.</p>\n");
    } else {
        body.push_str(
            "<table id=\"leaderboard\">\n<tr><th>#</th><th>device</th><th>backends</th><th>runs</th>\
             <th>median images/min</th><th>p10 – p90</th><th>best</th><th>median score</th></tr>\n",
        );
        let carried = query_string(&q);
        for (i, row) in rows.iter().enumerate() {
            let d = &row.images_per_minute;
            body.push_str(&format!(
                "<tr class=\"gpu-row\"><td class=\"num\">{}</td><td><a href=\"/gpus/{}{carried}\">{}</a></td><td>{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} – {}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                i + 1,
                encode(&row.gpu),
                escape(&row.gpu),
                escape(&row.backends.join(", ")),
                d.count,
                rate(d.median),
                rate(d.p10),
                rate(d.p90),
                rate(d.best),
                row.median_score.map_or("–".into(), |s| format!("{s:.0}")),
            ));
        }
        body.push_str("</table>\n");
    }
    Html(page("SD Bench leaderboard", &body)).into_response()
}

/// Where the list leaves throttled runs out (its default): how many match the other filters, and
/// a link to them.
async fn throttled_apart(
    service: &Shared,
    q: &FilterQuery,
    gpu: Option<String>,
) -> crate::Result<String> {
    if q.filter().hardware != HardwareFilter::NotThrottled {
        return Ok(String::new());
    }
    let throttled = FilterQuery {
        hardware: Some("throttled".into()),
        ..q.clone()
    };
    let n = list_runs(service.clone(), &throttled, gpu).await?.len();
    if n == 0 {
        return Ok(String::new());
    }
    Ok(format!(
        "<p class=\"muted\" id=\"throttled-apart\">{n} throttled {} (a throttle reason held for {:.0}% of the timed samples or more) {} ranked apart: <a href=\"?{}\">show {}</a>.</p>\n",
        plural(n, "run", "runs"),
        THROTTLED_SHARE * 100.0,
        plural(n, "is", "are"),
        query_string(&throttled).trim_start_matches('?'),
        plural(n, "it", "them"),
    ))
}

fn reference_text(m: Option<bool>) -> &'static str {
    match m {
        Some(true) => "images match the reference",
        Some(false) => "images differ from the reference",
        None => "no reference hashes for this model revision",
    }
}

fn profile_label(run: &RunRow) -> String {
    match run.memory_profile.as_str() {
        "full" => "full".into(),
        other => format!("{other} (not the standard profile)"),
    }
}

/// `/gpus/{name}`: the distribution of a GPU's runs and the runs, with boxes to compare some.
pub async fn gpu(
    State(service): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<FilterQuery>,
) -> Response {
    let runs = match list_runs(service.clone(), &q, Some(name.clone())).await {
        Ok(runs) => runs,
        Err(e) => return error_page(e),
    };
    let apart = match throttled_apart(&service, &q, Some(name.clone())).await {
        Ok(apart) => apart,
        Err(e) => return error_page(e),
    };
    let rates: Vec<f64> = runs.iter().map(|r| r.images_per_minute).collect();
    let mut body = format!("{NAV}<h1 id=\"gpu-name\">{}</h1>\n", escape(&name));
    body.push_str(&filter_form(&format!("/gpus/{}", encode(&name)), &q));
    body.push_str(&apart);
    match Distribution::of(&rates) {
        None => body.push_str("<p id=\"empty\">No runs of this device match these filters.</p>\n"),
        Some(d) => {
            body.push_str(&format!(
                "<table id=\"distribution\">\n<tr><th>runs</th><td class=\"num\">{}</td></tr>\n\
                 <tr><th>median images/min</th><td class=\"num\">{}</td></tr>\n\
                 <tr><th>p10</th><td class=\"num\">{}</td></tr>\n<tr><th>p90</th><td class=\"num\">{}</td></tr>\n\
                 <tr><th>best</th><td class=\"num\">{}</td></tr>\n</table>\n",
                d.count,
                rate(d.median),
                rate(d.p10),
                rate(d.p90),
                rate(d.best)
            ));
            let chart = charts::distribution(
                "Images per minute of each run",
                "images per minute",
                &rates,
                None,
            );
            match chart {
                Ok(svg) => body.push_str(&format!(
                    "<figure id=\"distribution-chart\">\n{svg}\n</figure>\n"
                )),
                Err(e) => body.push_str(&format!(
                    "<p class=\"muted\">{}</p>\n",
                    escape(&e.to_string())
                )),
            }
            body.push_str(
                "<h2>Runs</h2>\n<form method=\"get\" action=\"/compare\" id=\"compare-form\">\n<table id=\"runs\">\n\
                 <tr><th>compare</th><th>run</th><th>received</th><th>backend</th><th>memory profile</th>\
                 <th>images/min</th><th>s/image</th><th>steps/s</th><th title=\"images against the reference hashes\">reference images</th>\
                 <th title=\"clocks and throttle reasons over the timed images\">hardware</th></tr>\n",
            );
            for run in runs.iter().take(MAX_LISTED_RUNS) {
                body.push_str(&format!(
                    "<tr class=\"run-row\"><td><input type=\"checkbox\" name=\"ids\" value=\"{id}\"></td>\
                     <td><a href=\"/runs/{id_link}\">{id}</a></td><td>{}</td><td>{} {}</td><td>{}</td>\
                     <td class=\"num\">{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.2}</td><td>{}</td>\
                     <td class=\"hardware-state\">{}</td></tr>\n",
                    escape(run.received_at.get(..19).unwrap_or(&run.received_at)).replace('T', " "),
                    escape(&run.backend),
                    escape(&run.precision),
                    escape(&profile_label(run)),
                    rate(run.images_per_minute),
                    run.seconds_per_image,
                    run.steps_per_second,
                    match run.reference_match {
                        Some(true) => "match",
                        Some(false) => "differ",
                        None => "–",
                    },
                    escape(&run.hardware_state),
                    id = escape(&run.id),
                    id_link = encode(&run.id),
                ));
            }
            body.push_str("</table>\n");
            if runs.len() > MAX_LISTED_RUNS {
                body.push_str(&format!(
                    "<p class=\"muted\">The {MAX_LISTED_RUNS} fastest of {} runs; the distribution counts them all (every run: /api/v1/gpus/{}).</p>\n",
                    runs.len(),
                    encode(&name)
                ));
            }
            body.push_str(
                "<button type=\"submit\" id=\"compare\">Compare selected</button>\n</form>\n",
            );
        }
    }
    Html(page(&format!("{name} — SD Bench results"), &body)).into_response()
}

/// The run's CLIP score against the other runs of its workload scored by the same model.
fn quality_line(judged: Option<QualityComparison>) -> String {
    let Some(judged) = judged else {
        return String::new();
    };
    let against = match (&judged.not_judged, judged.median) {
        (Some(why), _) => why.clone(),
        (None, Some(median)) => format!(
            "the median of {} other runs of this workload is {median:.2}",
            judged.runs
        ),
        (None, None) => String::new(),
    };
    let (class, verdict) = match judged.far_below {
        true => ("invalid", ": FAR BELOW the others, look at its pictures"),
        false => ("muted", ""),
    };
    format!(
        "<p id=\"quality\" class=\"{class}\">CLIP score {:.2} ({}){verdict}</p>\n",
        judged.clip_score_mean,
        escape(&against)
    )
}

/// `/runs/{id}`: every figure of one run, its images' hashes and its system.
pub async fn run(State(service): State<Shared>, Path(id): Path<String>) -> Response {
    let wanted = id.clone();
    let found = blocking(move || {
        let Some((run, document)) = store::get(&service.db, &wanted)? else {
            return Ok(None);
        };
        let quality = crate::api::quality_of(&service, &run)?;
        Ok(Some((run, document, quality)))
    });
    let found = match found.await {
        Ok(found) => found,
        Err(e) => return error_page(e),
    };
    let Some((run, document, quality)) = found else {
        return error_page(ServerError::refused(404, format!("no run {id}")));
    };
    let result: BenchResult = match serde_json::from_str(&document) {
        Ok(r) => r,
        Err(e) => {
            return error_page(ServerError::Database(format!(
                "run {id} cannot be read: {e}"
            )))
        }
    };
    let mut body = String::from(NAV);
    body.push_str(&format!(
        "<p id=\"run-facts\">Received {} · <a href=\"/gpus/{}\">{}</a> · memory profile {} · \
         <span id=\"reference\">{}</span></p>\n",
        escape(&run.received_at),
        encode(&run.gpu),
        escape(&run.gpu),
        escape(&profile_label(&run)),
        reference_text(run.reference_match)
    ));
    body.push_str(&quality_line(quality));
    body.push_str(&report_body(&result));
    body.push_str("<h2>Image hashes</h2>\n<table id=\"hashes\">\n<tr><th>image</th><th>prompt</th><th>seed</th><th>sha256 of the pixels</th><th>perceptual hash</th></tr>\n");
    for (i, image) in result.results.iter().enumerate() {
        body.push_str(&format!(
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>\n",
            i + 1,
            image.prompt_index + 1,
            image.seed,
            escape(&image.image.check.sha256),
            escape(&image.image.check.phash)
        ));
    }
    body.push_str("</table>\n");
    Html(page(&format!("Run {id} — SD Bench results"), &body)).into_response()
}

/// `/compare?ids=A&ids=B` (or `ids=A,B`): two or more runs side by side.
pub async fn compare(State(service): State<Shared>, RawQuery(query): RawQuery) -> Response {
    let ids: Vec<String> = query
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.strip_prefix("ids="))
        .flat_map(|v| {
            v.split("%2C")
                .flat_map(|v| v.split(','))
                .map(decode)
                .collect::<Vec<_>>()
        })
        .filter(|v| !v.is_empty())
        .collect();
    if ids.len() < 2 {
        return error_page(ServerError::refused(
            400,
            "choose two or more runs to compare",
        ));
    }
    if ids.len() > 8 {
        return error_page(ServerError::refused(400, "compare at most 8 runs at once"));
    }
    let wanted = ids.clone();
    let found = blocking(move || {
        wanted
            .iter()
            .map(|id| store::get(&service.db, id).map(|r| (id.clone(), r)))
            .collect::<crate::Result<Vec<_>>>()
    })
    .await;
    let found = match found {
        Ok(found) => found,
        Err(e) => return error_page(e),
    };
    let mut results = Vec::new();
    for (id, run) in found {
        let Some((row, document)) = run else {
            return error_page(ServerError::refused(404, format!("no run {id}")));
        };
        match serde_json::from_str::<BenchResult>(&document) {
            Ok(r) => results.push((format!("{} · {}", row.gpu, short(&id)), r)),
            Err(e) => {
                return error_page(ServerError::Database(format!(
                    "run {id} cannot be read: {e}"
                )))
            }
        }
    }
    let runs: Vec<Run> = results
        .iter()
        .map(|(label, result)| Run { label, result })
        .collect();
    let body = format!("{NAV}{}", comparison_body(&runs));
    Html(page("Compare — SD Bench results", &body)).into_response()
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// %XX and `+` decoded (form values).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push((high * 16 + low) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_survive_a_link() {
        let name = "NVIDIA GeForce RTX 4090 / 24 GB & more";
        assert_eq!(decode(&encode(name)), name);
        assert_eq!(encode("a b"), "a%20b");
        assert_eq!(decode("a+b%2"), "a b%2");
    }
}
