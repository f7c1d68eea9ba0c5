//! Sweeps: one model and workload over several configurations (backends, precisions, batch
//! sizes, image sizes, memory profiles), each point a short run of the same prompts and seeds,
//! into one schema-versioned file with every point's result or why it did not run.

use std::path::Path;

use serde::{Deserialize, Serialize};

use sdbench_diffusion::limits::MAX_BATCH;
use sdbench_diffusion::{BackendRequest, CancelToken, DiffusionError, MemoryProfile, Precision};

use crate::error::{BenchError, Result};
use crate::result::{write_atomically, AppInfo, BenchResult};
use crate::runner::{self, new_run_id, now_rfc3339, Event, RunOptions};
use crate::workload::Overrides;

/// The sweep file's version; a reader refuses others.
pub const SWEEP_SCHEMA_VERSION: u32 = 1;
/// What a sweep file says it is, beside its version (a result file has no `kind`).
pub const SWEEP_KIND: &str = "sdbench-sweep";
pub const DEFAULT_SWEEP_FILE: &str = "sdbench-sweep.json";
/// The JSON Schema of the sweep file (a point's `result` is a result of the result schema).
pub const SWEEP_JSON_SCHEMA: &str = include_str!("../schema/sdbench_sweep.v1.schema.json");

/// The batch sizes of a sweep: the ones listed, or `max`: 1, 2, 4, … until the fit check (or a
/// failure) stops it, at most `MAX_BATCH`.
#[derive(Debug, Clone, PartialEq)]
pub enum Batches {
    List(Vec<usize>),
    Max,
}

/// The axes a sweep crosses; a point is one value of each.
#[derive(Debug, Clone)]
pub struct SweepAxes {
    pub backends: Vec<BackendRequest>,
    /// `None`: f16 where the device supports it (as `bench` chooses).
    pub precisions: Vec<Option<Precision>>,
    pub batches: Batches,
    /// `None`: the workload's own size.
    pub sizes: Vec<Option<(usize, usize)>>,
    pub memory: Vec<MemoryProfile>,
}

/// Everything a point sets but its batch.
#[derive(Debug, Clone, Copy)]
struct Setup {
    backend: BackendRequest,
    precision: Option<Precision>,
    size: Option<(usize, usize)>,
    memory: MemoryProfile,
}

impl SweepAxes {
    /// Every combination but the batch, in the order the table lists them.
    fn setups(&self) -> Vec<Setup> {
        let mut out = Vec::new();
        for &backend in &self.backends {
            for &precision in &self.precisions {
                for &memory in &self.memory {
                    for &size in &self.sizes {
                        out.push(Setup {
                            backend,
                            precision,
                            size,
                            memory,
                        });
                    }
                }
            }
        }
        out
    }

    /// The points a listed-batch sweep runs (a `max` sweep's count depends on where it stops).
    pub fn point_count(&self) -> Option<usize> {
        match &self.batches {
            Batches::List(list) => Some(self.setups().len() * list.len()),
            Batches::Max => None,
        }
    }
}

/// A point's configuration, as asked for (its result records what ran: the device, the
/// precision `auto` chose).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct PointSettings {
    pub backend: String,
    pub precision: String,
    pub memory: String,
    pub batch: usize,
    pub width: usize,
    pub height: usize,
}

impl PointSettings {
    /// "vulkan f16 full 512x512 batch 4".
    pub fn describe(&self) -> String {
        format!(
            "{} {} {} {}x{} batch {}",
            self.backend, self.precision, self.memory, self.width, self.height, self.batch
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct SweepPoint {
    pub settings: PointSettings,
    /// The point's run (its images are not kept); none where it did not run.
    pub result: Option<BenchResult>,
    /// Why it did not run: "does not fit: …" from the fit check (nothing was allocated), a
    /// backend this machine lacks, or the failure that stopped it.
    pub skipped: Option<String>,
}

impl SweepPoint {
    /// Pixels made per second, in millions: what compares points of different sizes.
    pub fn megapixels_per_second(&self) -> Option<f64> {
        let r = self.result.as_ref()?;
        let pixels = (r.workload.width * r.workload.height) as f64;
        Some(r.scores.images_per_minute / 60.0 * pixels / 1e6)
    }

    /// A run whose images all passed their checks.
    pub fn ran_valid(&self) -> bool {
        self.result.as_ref().is_some_and(|r| r.valid)
    }
}

/// For `--batch max`: a setup's largest batch that ran, and what stopped the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct LargestBatch {
    /// The setup, batch aside ("cpu auto full 32x24").
    pub setup: String,
    /// None where not even a batch of 1 ran.
    pub batch: Option<usize>,
    /// The batch that did not run (none where `MAX_BATCH` ran), and why.
    pub next: Option<usize>,
    pub stopped_by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Sweep {
    pub schema_version: u32,
    /// Always `SWEEP_KIND`.
    pub kind: String,
    pub sweep_id: String,
    pub created_at: String,
    pub app: AppInfo,
    /// The workload every point runs (with its own batch and size).
    pub workload: String,
    pub points: Vec<SweepPoint>,
    /// The point with the most megapixels per second among those that ran valid.
    pub fastest: Option<usize>,
    /// `--batch max` only: each setup's largest batch.
    pub largest_batches: Vec<LargestBatch>,
}

impl Sweep {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a sweep serializes") + "\n"
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        write_atomically(path, self.to_json().as_bytes())
    }

    /// Whether `text` is a sweep file (rather than a result), by its `kind`.
    pub fn is_sweep(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| {
                v.get("kind")
                    .and_then(|k| k.as_str())
                    .map(|k| k == SWEEP_KIND)
            })
            .unwrap_or(false)
    }

    pub fn from_json(text: &str) -> std::result::Result<Sweep, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if value.get("kind").and_then(|k| k.as_str()) != Some(SWEEP_KIND) {
            return Err(format!("not a sweep file (its kind is not {SWEEP_KIND})"));
        }
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == SWEEP_SCHEMA_VERSION as u64 => {}
            Some(v) => {
                return Err(format!(
                    "sweep schema_version {v}; this SD Bench reads version {SWEEP_SCHEMA_VERSION}"
                ))
            }
            None => return Err("no schema_version".into()),
        }
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    pub fn load(path: &Path) -> Result<Sweep> {
        let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))?;
        Self::from_json(&text).map_err(|problem| BenchError::BadResult {
            path: path.to_path_buf(),
            problem,
        })
    }
}

/// What a sweep reports while it runs.
pub enum SweepEvent<'a> {
    /// Point `index` (from 0) of `total` (`None` for `--batch max`) starts.
    Point {
        index: usize,
        total: Option<usize>,
        settings: &'a PointSettings,
    },
    /// The point's run.
    Run(&'a Event),
    Finished {
        index: usize,
        point: &'a SweepPoint,
    },
}

/// Runs every point of `axes` on `base`'s model and workload. A point that does not fit, or whose
/// backend this machine lacks, is recorded as skipped and the sweep goes on; a model or workload
/// that cannot run at all, or a cancel, ends it.
pub fn run(
    base: &RunOptions,
    axes: &SweepAxes,
    observer: &mut dyn FnMut(SweepEvent),
    cancel: &CancelToken,
) -> Result<Sweep> {
    let total = axes.point_count();
    let sweep_id = new_run_id();
    let mut points: Vec<SweepPoint> = Vec::new();
    let mut largest_batches = Vec::new();
    for setup in axes.setups() {
        let mut run_one = |batch: usize, points: &mut Vec<SweepPoint>| -> Result<bool> {
            let mut point = run_point(base, setup, batch, points.len(), total, observer, cancel)?;
            if let Some(r) = point.result.as_mut() {
                r.sweep_id = Some(sweep_id.clone());
            }
            let ran = point.result.is_some();
            points.push(point);
            Ok(ran)
        };
        match &axes.batches {
            Batches::List(list) => {
                for &batch in list {
                    run_one(batch, &mut points)?;
                }
            }
            Batches::Max => {
                let (mut largest, mut next) = (None, None);
                let mut stopped_by = format!("{MAX_BATCH} is the largest batch SD Bench runs");
                let mut batch = 1;
                while batch <= MAX_BATCH {
                    if !run_one(batch, &mut points)? {
                        let last = points.last().and_then(|p| p.skipped.clone());
                        (next, stopped_by) = (Some(batch), last.unwrap_or_default());
                        break;
                    }
                    largest = Some(batch);
                    batch *= 2;
                }
                // The loop ran batch 1 at least: its last point names the setup.
                if let Some(settings) = points.last().map(|p| &p.settings) {
                    largest_batches.push(LargestBatch {
                        setup: format!(
                            "{} {} {} {}x{}",
                            settings.backend,
                            settings.precision,
                            settings.memory,
                            settings.width,
                            settings.height
                        ),
                        batch: largest,
                        next,
                        stopped_by,
                    });
                }
            }
        }
    }
    let fastest = points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.ran_valid())
        .filter_map(|(i, p)| Some((i, p.megapixels_per_second()?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    Ok(Sweep {
        schema_version: SWEEP_SCHEMA_VERSION,
        kind: SWEEP_KIND.into(),
        sweep_id,
        created_at: now_rfc3339(),
        app: base.app.clone(),
        workload: base.workload.name.clone(),
        points,
        fastest,
        largest_batches,
    })
}

/// One point: `base` with the setup and batch, run to its result or to why it could not run.
fn run_point(
    base: &RunOptions,
    setup: Setup,
    batch: usize,
    index: usize,
    total: Option<usize>,
    observer: &mut dyn FnMut(SweepEvent),
    cancel: &CancelToken,
) -> Result<SweepPoint> {
    let w = &base.workload;
    let (width, height) = setup.size.unwrap_or((w.width, w.height));
    // Only what differs from the workload is an override (any override makes a run custom).
    let overrides = Overrides {
        batch: (batch != w.batch).then_some(batch),
        width: (width != w.width).then_some(width),
        height: (height != w.height).then_some(height),
        ..Overrides::default()
    };
    let mut options = base.clone();
    options.workload = w.clone().with_overrides(&overrides)?;
    options.backend = match setup.memory.needs_cpu_backend() {
        true => BackendRequest::Cpu,
        false => setup.backend,
    };
    options.precision = setup.precision;
    options.memory = setup.memory;
    options.memory_auto = false;
    let settings = PointSettings {
        backend: options.backend.name().into(),
        precision: setup.precision.map_or("auto", Precision::name).into(),
        memory: setup.memory.name().into(),
        batch,
        width,
        height,
    };
    observer(SweepEvent::Point {
        index,
        total,
        settings: &settings,
    });
    let outcome = runner::run(&options, &mut |e| observer(SweepEvent::Run(e)), cancel);
    let point = match outcome {
        Ok(output) => SweepPoint {
            settings,
            result: Some(output.result),
            skipped: None,
        },
        Err(BenchError::Cancelled) => return Err(BenchError::Cancelled),
        // Nothing of the model or workload can run: no other point would either.
        Err(e @ (BenchError::Model(_) | BenchError::Hub(_) | BenchError::Workload(_))) => {
            return Err(e)
        }
        Err(BenchError::Engine(DiffusionError::DoesNotFit(why))) => SweepPoint {
            settings,
            result: None,
            skipped: Some(format!("does not fit: {why}")),
        },
        Err(e) => SweepPoint {
            settings,
            result: None,
            skipped: Some(e.to_string()),
        },
    };
    observer(SweepEvent::Finished {
        index,
        point: &point,
    });
    Ok(point)
}

/// The table's columns: the six of a point's setup, then the five of its figures.
pub const TABLE_COLUMNS: [&str; 11] = [
    "backend",
    "device",
    "precision",
    "memory",
    "size",
    "batch",
    "img/min",
    "MP/s",
    "s/image",
    "peak VRAM",
    "W",
];

/// A point as the table shows it: its setup's cells, then its figures' or why it did not run.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct PointRow {
    pub setup: Vec<String>,
    pub figures: Option<Vec<String>>,
    pub skipped: Option<String>,
    pub fastest: bool,
}

/// Every point's row, in order.
pub fn rows(sweep: &Sweep) -> Vec<PointRow> {
    sweep
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = &p.settings;
            let r = p.result.as_ref();
            let setup = vec![
                s.backend.clone(),
                r.map_or(String::new(), |r| r.backend.device.clone()),
                r.map_or(s.precision.clone(), |r| r.backend.precision.clone()),
                s.memory.clone(),
                format!("{}x{}", s.width, s.height),
                s.batch.to_string(),
            ];
            let figures = r.map(|r| {
                let valid = if r.valid { "" } else { " (invalid)" };
                vec![
                    format!("{:.2}{valid}", r.scores.images_per_minute),
                    format!("{:.3}", p.megapixels_per_second().unwrap_or(0.0)),
                    format!("{:.3}", r.scores.seconds_per_image.median),
                    r.scores
                        .vram_peak_bytes
                        .map_or("–".into(), |b| format!("{:.2} GiB", b as f64 / GIB)),
                    r.scores
                        .power
                        .avg_w
                        .map_or("–".into(), |w| format!("{w:.1}")),
                ]
            });
            PointRow {
                setup,
                skipped: figures
                    .is_none()
                    .then(|| p.skipped.clone().unwrap_or_else(|| "did not run".into())),
                figures,
                fastest: sweep.fastest == Some(i),
            }
        })
        .collect()
}

/// "fastest: vulkan f16 full 512x512 batch 4 (1.234 megapixels/s)".
pub fn fastest_line(sweep: &Sweep) -> String {
    match sweep.fastest.and_then(|i| sweep.points.get(i)) {
        Some(p) => format!(
            "fastest: {} ({:.3} megapixels/s)",
            p.settings.describe(),
            p.megapixels_per_second().unwrap_or(0.0)
        ),
        None => "fastest: no point ran valid".into(),
    }
}

/// For `--batch max`: each setup's largest batch, and what stopped it.
pub fn largest_batch_lines(sweep: &Sweep) -> Vec<String> {
    sweep
        .largest_batches
        .iter()
        .map(|l| {
            let why = match l.next {
                Some(next) => format!("batch {next} did not run: see the skipped point above"),
                None => l.stopped_by.clone(),
            };
            format!(
                "largest batch, {}: {} ({why})",
                l.setup,
                l.batch.map_or("none".into(), |b| b.to_string()),
            )
        })
        .collect()
}

/// The sweep as a text table: each point's figures or why it did not run, then the fastest
/// configuration and, for `--batch max`, each setup's largest batch.
pub fn table(sweep: &Sweep) -> String {
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut notes = Vec::new();
    for (i, row) in rows(sweep).into_iter().enumerate() {
        let mut cells = row.setup;
        match (row.figures, row.skipped) {
            (Some(figures), _) => cells.extend(figures),
            (None, why) => {
                cells.push(format!("skipped [{}]", notes.len() + 1));
                notes.push(format!(
                    "[{}] point {}: {}",
                    notes.len() + 1,
                    i + 1,
                    why.unwrap_or_default()
                ));
            }
        }
        lines.push(cells);
    }
    let mut widths: Vec<usize> = TABLE_COLUMNS.iter().map(|h| h.chars().count()).collect();
    for cells in &lines {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(TABLE_COLUMNS.iter().map(|h| h.to_string()).collect());
    for cells in lines {
        out.push_str(&line(cells));
    }
    for text in notes
        .into_iter()
        .chain([fastest_line(sweep)])
        .chain(largest_batch_lines(sweep))
    {
        out.push_str(&text);
        out.push('\n');
    }
    out
}

const GIB: f64 = (1u64 << 30) as f64;
