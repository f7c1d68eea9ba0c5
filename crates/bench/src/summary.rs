//! The end-of-run summary in four forms: a terminal table, Markdown, CSV and JSON.

use crate::result::BenchResult;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

impl Format {
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "table" => Some(Format::Table),
            "md" | "markdown" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// (metric, value, unit) rows; a missing figure is "unavailable".
pub fn rows(r: &BenchResult) -> Vec<(String, String, String)> {
    let s = &r.scores;
    let p = &s.power;
    let na = || "unavailable".to_string();
    let num = |v: Option<f64>, digits: usize| v.map(|x| format!("{x:.digits$}")).unwrap_or_else(na);
    let gib = |b: Option<u64>| {
        b.map(|b| format!("{:.2}", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_else(na)
    };
    let sp = &s.seconds_per_image;
    let mut rows = vec![
        (
            "score".into(),
            s.score
                .map(|x| x.to_string())
                .unwrap_or_else(|| "none (invalid run)".into()),
            String::new(),
        ),
        (
            "images per minute".into(),
            format!("{:.3}", s.images_per_minute),
            "img/min".into(),
        ),
        (
            "seconds per image (median)".into(),
            format!("{:.3}", sp.median),
            "s".into(),
        ),
        (
            "seconds per image (mean ± stdev)".into(),
            format!("{:.3} ± {:.3}", sp.mean, sp.stdev),
            "s".into(),
        ),
        (
            "seconds per image (min – max)".into(),
            format!("{:.3} – {:.3}", sp.min, sp.max),
            "s".into(),
        ),
        (
            "steps per second (median)".into(),
            format!("{:.3}", s.steps_per_second),
            "it/s".into(),
        ),
        ("peak VRAM".into(), gib(s.vram_peak_bytes), "GiB".into()),
        (
            "power avg / min / max".into(),
            if p.available {
                format!(
                    "{} / {} / {}",
                    num(p.avg_w, 1),
                    num(p.min_w, 1),
                    num(p.max_w, 1)
                )
            } else {
                na()
            },
            "W".into(),
        ),
        ("idle power".into(), num(p.idle_w, 1), "W".into()),
        (
            "energy per image".into(),
            num(p.energy_j_per_image, 1),
            "J".into(),
        ),
        (
            "images per minute per watt".into(),
            num(p.images_per_minute_per_watt, 4),
            "img/min/W".into(),
        ),
        (
            "model load".into(),
            format!("{:.2}", r.cold_start.load_seconds),
            "s".into(),
        ),
        (
            "warm-up image".into(),
            format!("{:.2}", r.cold_start.warmup_seconds),
            "s".into(),
        ),
    ];
    rows.extend(kernel_rows(r));
    rows.extend(condition_rows(r));
    rows
}

/// How the run went beyond its figures: the cost of syncing every step, why power is missing,
/// throttling.
fn condition_rows(r: &BenchResult) -> Vec<(String, String, String)> {
    let (s, p) = (&r.scores, &r.scores.power);
    let mut rows = Vec::new();
    if let Some(ratio) = r.step_timing.as_ref().and_then(|t| t.sync_cost_ratio) {
        // The scored images queued their steps; one more image synced after every step.
        rows.push((
            "denoising loop with a sync after every step".into(),
            format!("{ratio:.3}"),
            "x queued".into(),
        ));
    }
    if !p.available {
        rows.push((
            "power unavailable because".into(),
            p.reason.clone().unwrap_or_default(),
            String::new(),
        ));
    }
    rows.extend(hardware_rows(&s.hardware));
    if let Some(q) = &s.quality {
        let note = q
            .note
            .as_deref()
            .map_or(String::new(), |n| format!("; {n}"));
        rows.push((
            "CLIP score (mean)".into(),
            format!(
                "{:.2} ({}, after the timed region{note})",
                q.clip_score_mean, q.clip_model
            ),
            String::new(),
        ));
    }
    rows
}

/// The cold start's GPU kernels: compiled, read from the cache, autotuned, compiled while timed.
fn kernel_rows(r: &BenchResult) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    if let Some(k) = &r.cold_start.kernels {
        rows.push((
            "GPU kernels compiled (load and warm-up)".into(),
            format!("{} in {:.2}", k.compiled, k.compile_seconds),
            "s".into(),
        ));
        rows.push((
            "GPU kernels from the cache".into(),
            format!("{} in {:.2}", k.cache_hits, k.cache_load_seconds),
            format!("s (cache {})", k.cache),
        ));
        if k.tuned + k.tune_cache_hits > 0 {
            rows.push((
                "autotuned kernels".into(),
                format!(
                    "{} in {:.2} ({} from the cache)",
                    k.tuned, k.tune_seconds, k.tune_cache_hits
                ),
                "s".into(),
            ));
        }
        if k.compiled_while_timed > 0 {
            rows.push((
                "GPU kernels compiled while timed".into(),
                k.compiled_while_timed.to_string(),
                "(inside the timed figures)".into(),
            ));
        }
    }
    rows
}

/// What was run and where: (field, value).
pub fn header(r: &BenchResult) -> Vec<(String, String)> {
    let w = &r.workload;
    let kind = if w.standard {
        format!("{} v{} (standard)", w.name, w.version)
    } else if w.model.synthetic {
        format!("{} (synthetic weights: not a standard score)", w.name)
    } else if let Ok(standard) = crate::Workload::named(&w.name) {
        // A standard workload's settings, but not its model as it is.
        let repo = standard.preset.repository();
        let profile = r.backend.memory_profile.as_deref().unwrap_or("full");
        let why = if w.model.preset.as_deref() != Some(standard.preset.name()) {
            format!("not {repo}'s architecture")
        } else if let Some(types) = &w.model.quantization {
            format!("{types} weights")
        } else if profile != "full" {
            format!("the {profile} memory profile")
        } else {
            format!("not {repo}'s own weights")
        };
        format!("{} ({why}: not a standard score)", w.name)
    } else {
        format!("{} (custom: not a standard score)", w.name)
    };
    let mut header = vec![
        ("workload".into(), kind),
        (
            "model".into(),
            format!(
                "{}{}",
                w.model.id,
                w.model
                    .revision
                    .as_deref()
                    .map(|c| format!(" @ {}", &c[..c.len().min(10)]))
                    .unwrap_or_default()
            ),
        ),
        (
            "size / steps / scheduler".into(),
            format!("{}x{} / {} / {}", w.width, w.height, w.steps, w.scheduler),
        ),
        (
            "backend".into(),
            format!(
                "{} on {} ({}{})",
                r.backend.name,
                r.backend.device,
                r.backend.precision,
                if r.backend.software { ", software" } else { "" }
            ),
        ),
    ];
    if let Some(identity) = device_identity(r) {
        header.push(("device".into(), identity));
    }
    if let Some(types) = &r.workload.model.quantization {
        header.push((
            "weights".into(),
            format!(
                "{types}, linear layers kept in those codes (compares only with runs of the same weights)"
            ),
        ));
    }
    if let Some(profile) = memory_profile(r) {
        header.push(("memory profile".into(), profile));
    }
    if let Some(min) = r.workload.min_duration_seconds {
        let passes = r.results.iter().map(|i| i.pass + 1).max().unwrap_or(0);
        let t = &r.telemetry.timed;
        header.push((
            "timed for".into(),
            format!(
                "{:.1} s (at least {min} s asked): {} images in {passes} {} of the prompts",
                t.end - t.start,
                r.results.len(),
                crate::submit::plural(passes, "pass", "passes")
            ),
        ));
    }
    header.push((
        "valid".into(),
        if r.valid {
            "yes".into()
        } else {
            format!("NO: {}", r.invalid_reasons.join("; "))
        },
    ));
    header
}

/// The memory profile and what it chose, when the result records one (`full` is labelled too, so
/// a run never passes for another profile's).
fn memory_profile(r: &BenchResult) -> Option<String> {
    let profile = r.backend.memory_profile.as_deref()?;
    let mut text = profile.to_string();
    if profile != "full" {
        text.push_str(" (not the standard profile)");
    }
    if let Some(p) = &r.backend.placement {
        text.push_str(&format!(
            ": text encoders on {}, VAE on {}, {} guidance{}{}",
            p.text_encoders,
            p.vae,
            p.cfg,
            if p.unet_offload {
                ", UNet off the device while decoding"
            } else {
                ""
            },
            vae_tiles(p)
        ));
        if p.unet_weights == "int8" {
            text.push_str(", int8 UNet weights");
        }
    }
    Some(text)
}

/// How the VAE decoded: ", VAE decoded in 9 tiles (half-size tiles)"; nothing for one piece.
/// Results from before `vae_decode_tiles` say only whether tiling was on.
fn vae_tiles(p: &crate::result::PlacementRecord) -> String {
    let half = match p.small_vae_tiles {
        true => " (half-size tiles)",
        false => "",
    };
    match p.vae_decode_tiles {
        Some(1) => String::new(),
        Some(n) => format!(", VAE decoded in {n} tiles{half}"),
        None if p.vae_tiling => format!(", tiled VAE{half}"),
        None => String::new(),
    }
}

/// Which device ran, where the result says more than its name: number, memory, driver, PCI bus.
fn device_identity(r: &BenchResult) -> Option<String> {
    let b = &r.backend;
    let mut parts = Vec::new();
    if let Some(bytes) = b.device_memory_bytes {
        parts.push(format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64));
    }
    if let Some(driver) = &b.driver {
        parts.push(format!("driver {driver}"));
    }
    if let Some(bus) = &b.pci_bus {
        parts.push(format!("PCI {bus}"));
    }
    if parts.is_empty() {
        return None;
    }
    let number = b.device_index.map(|i| format!("{i}: ")).unwrap_or_default();
    Some(format!("{number}{}", parts.join(", ")))
}

pub fn render(r: &BenchResult, format: Format) -> String {
    match format {
        Format::Table => table(r),
        Format::Markdown => markdown(r),
        Format::Csv => csv(r),
        Format::Json => json(r),
    }
}

fn table(r: &BenchResult) -> String {
    let mut all: Vec<(String, String)> = header(r);
    all.extend(rows(r).into_iter().map(|(m, v, u)| {
        (
            m,
            if u.is_empty() || v == "unavailable" {
                v
            } else {
                format!("{v} {u}")
            },
        )
    }));
    let width = all
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (k, v) in &all {
        out.push_str(&format!("  {k:<width$}  {v}\n"));
    }
    out.push_str("\n  image  seconds  text enc  denoising  VAE     it/s    valid\n");
    for (i, c) in image_cells(r).iter().enumerate() {
        out.push_str(&format!(
            "  {:<5}  {:>7}  {:>8}  {:>9}  {:>6}  {:>6}  {}\n",
            i + 1,
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6]
        ));
    }
    out
}

fn markdown(r: &BenchResult) -> String {
    let mut out = String::from("| | |\n| --- | --- |\n");
    for (k, v) in header(r) {
        out.push_str(&format!("| {k} | {} |\n", v.replace('|', "\\|")));
    }
    out.push_str("\n| metric | value | unit |\n| --- | ---: | --- |\n");
    for (m, v, u) in rows(r) {
        out.push_str(&format!("| {m} | {} | {u} |\n", v.replace('|', "\\|")));
    }
    out.push_str("\n| image | seed | seconds | text encoder | denoising loop | VAE decode | it/s | valid |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (i, c) in image_cells(r).iter().enumerate() {
        out.push_str(&format!("| {} | {} |\n", i + 1, c.join(" | ")));
    }
    out
}

/// The columns of `image_cells`.
pub const IMAGE_COLUMNS: [&str; 7] = [
    "seed",
    "seconds",
    "text encoder",
    "denoising loop",
    "VAE decode",
    "it/s",
    "valid",
];

/// Per image: seed, seconds, text encoder, denoising loop (UNet or transformer), VAE decode, it/s, valid.
pub fn image_cells(r: &BenchResult) -> Vec<[String; 7]> {
    r.results
        .iter()
        .map(|x| {
            [
                x.seed.to_string(),
                format!("{:.3}", x.seconds),
                format!("{:.3}", x.stages.text_encoder),
                format!("{:.3}", x.stages.unet_loop),
                format!("{:.3}", x.stages.vae_decode),
                format!("{:.2}", x.steps_per_second),
                if x.image.check.valid { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect()
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

fn csv(r: &BenchResult) -> String {
    let mut out = String::from("metric,value,unit\n");
    for (k, v) in header(r) {
        out.push_str(&format!("{},{},\n", csv_field(&k), csv_field(&v)));
    }
    for (m, v, u) in rows(r) {
        out.push_str(&format!(
            "{},{},{}\n",
            csv_field(&m),
            csv_field(&v),
            csv_field(&u)
        ));
    }
    out
}

fn json(r: &BenchResult) -> String {
    let summary = serde_json::json!({
        "run_id": r.run_id,
        "workload": r.workload.name,
        "standard": r.workload.standard,
        "model": r.workload.model.id,
        "backend": r.backend,
        "valid": r.valid,
        "invalid_reasons": r.invalid_reasons,
        "scores": r.scores,
        "cold_start": r.cold_start,
    });
    serde_json::to_string_pretty(&summary).expect("summary serializes") + "\n"
}

/// A throttled run's warning: the reasons that held and for how much of the timed region.
pub fn throttled_note(r: &BenchResult) -> Option<String> {
    let h = &r.scores.hardware;
    if !h.throttled {
        return None;
    }
    let reasons: Vec<String> = h
        .throttle
        .iter()
        .map(|t| format!("{} {:.0}% of the time", t.reason, t.share * 100.0))
        .collect();
    Some(format!(
        "Throttled: {}. The device slowed itself during the timed images, so these figures are below its steady rate; the results service ranks such runs apart.",
        reasons.join(", ")
    ))
}

/// The hardware's state over the timed region: the core clock against its maximum, the peak
/// temperature, each throttle reason's share of the time, and what could not be read.
fn hardware_rows(h: &sdbench_telemetry::HardwareState) -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    if let Some(clock) = h.gpu_clock_mhz {
        let of_max = match (h.gpu_clock_max_mhz, h.gpu_clock_median_share) {
            (Some(max), Some(share)) => {
                format!(" ({:.0}% of its {max} MHz maximum)", share * 100.0)
            }
            _ => String::new(),
        };
        rows.push((
            "core clock".into(),
            format!(
                "median {:.0} MHz{of_max}, {:.0} to {:.0}",
                clock.median, clock.min, clock.max
            ),
            String::new(),
        ));
    }
    if let Some(t) = h.temperature_peak_c {
        rows.push(("peak temperature".into(), format!("{t:.0}"), "°C".into()));
    }
    if !h.throttle.is_empty() {
        let shares: Vec<String> = h
            .throttle
            .iter()
            .map(|t| format!("{} {:.0}% of the time", t.reason, t.share * 100.0))
            .collect();
        let label = if h.throttled {
            "throttled"
        } else {
            "briefly throttled"
        };
        rows.push((label.into(), shares.join(", "), String::new()));
    }
    if !h.unavailable.is_empty() {
        rows.push((
            "hardware state unavailable".into(),
            h.unavailable.join("; "),
            String::new(),
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BenchResult {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/result-v1.json");
        BenchResult::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A standard workload's run that is not standard says the first reason it is not.
    #[test]
    fn the_header_names_why_a_standard_workload_is_not_a_standard_score() {
        let kind = |change: fn(&mut BenchResult)| {
            let mut r = sample();
            r.workload.standard = false;
            r.workload.model.preset = Some("sd15".into());
            change(&mut r);
            header(&r)[0].1.clone()
        };
        let repo = "stable-diffusion-v1-5/stable-diffusion-v1-5";
        assert_eq!(
            kind(|r| r.workload.model.preset = None),
            format!("sd15-512-30 (not {repo}'s architecture: not a standard score)")
        );
        assert_eq!(
            kind(|r| r.workload.model.quantization = Some("Q8_0".into())),
            "sd15-512-30 (Q8_0 weights: not a standard score)"
        );
        assert_eq!(
            kind(|r| r.backend.memory_profile = Some("low".into())),
            "sd15-512-30 (the low memory profile: not a standard score)"
        );
        assert_eq!(
            kind(|_| {}),
            format!("sd15-512-30 (not {repo}'s own weights: not a standard score)")
        );
    }
}
