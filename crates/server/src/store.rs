//! The runs table: storing a checked submission once, reading runs back, and the per-GPU
//! distributions the leaderboard and the GPU pages show.

use serde::Serialize;

use crate::checks::Checked;
use crate::db::{now, Db, Row, Value};
use crate::error::{Result, ServerError};

/// Which runs a list covers; `None` matches anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub workload: Option<String>,
    pub backend: Option<String>,
    pub precision: Option<String>,
    pub profile: Option<String>,
    /// Only standard runs (the leaderboard's default); false includes custom ones.
    pub standard_only: bool,
    pub hardware: HardwareFilter,
}

/// Which runs a list takes by their hardware state: throttled runs are ranked apart, since a hot
/// or power-capped device's figures are not its steady rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HardwareFilter {
    /// Steady runs and runs whose state is unknown (the lists' default).
    #[default]
    NotThrottled,
    Throttled,
    Any,
}

/// One stored run's figures (the document holds the rest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    pub id: String,
    pub received_at: String,
    pub created_at: String,
    pub workload: String,
    pub standard: bool,
    pub gpu: String,
    pub backend: String,
    pub precision: String,
    pub memory_profile: String,
    pub score: Option<i64>,
    pub images_per_minute: f64,
    pub seconds_per_image: f64,
    pub steps_per_second: f64,
    pub vram_peak_bytes: Option<i64>,
    pub avg_power_w: Option<f64>,
    pub reference_match: Option<bool>,
    /// "steady", "throttled" or "unknown" (`Standing::name`).
    pub hardware_state: String,
    /// The mean CLIP score and its model, where the run was scored (not on synthetic weights).
    pub clip_score_mean: Option<f64>,
    pub clip_model: Option<String>,
}

const COLUMNS: &str = "id, received_at, created_at, workload, standard, gpu, backend, precision, \
     memory_profile, score, images_per_minute, seconds_per_image, steps_per_second, \
     vram_peak_bytes, avg_power_w, reference_match, hardware_state, clip_score_mean, clip_model";
/// The document's column after `COLUMNS`.
const DOCUMENT_COLUMN: usize = 19;

fn run_row(row: &Row) -> Result<RunRow> {
    let text = |i: usize| {
        row.get(i)
            .and_then(Value::text)
            .map(str::to_string)
            .ok_or_else(|| ServerError::Database(format!("runs column {i} is not text")))
    };
    let real = |i: usize| row.get(i).and_then(Value::real);
    let int = |i: usize| row.get(i).and_then(Value::int);
    Ok(RunRow {
        id: text(0)?,
        received_at: text(1)?,
        created_at: text(2)?,
        workload: text(3)?,
        standard: int(4) == Some(1),
        gpu: text(5)?,
        backend: text(6)?,
        precision: text(7)?,
        memory_profile: text(8)?,
        score: int(9),
        images_per_minute: real(10).unwrap_or(0.0),
        seconds_per_image: real(11).unwrap_or(0.0),
        steps_per_second: real(12).unwrap_or(0.0),
        vram_peak_bytes: int(13),
        avg_power_w: real(14),
        reference_match: int(15).map(|v| v == 1),
        hardware_state: text(16)?,
        clip_score_mean: real(17),
        clip_model: row.get(18).and_then(Value::text).map(str::to_string),
    })
}

/// What storing a submission did.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    New(String),
    /// The same run (its id, or its figures under another id) was already stored.
    Existing(String),
}

/// Stores `checked` (its JSON as received in `document`) unless it is already there. One
/// statement, so concurrent submissions of the same run store it once on either engine.
pub fn insert(db: &Db, checked: &Checked, document: &str) -> Result<Stored> {
    let r = &checked.result;
    // A synthetic run's score says nothing of a model: it is kept with the document only.
    let quality = r.scores.quality.as_ref().filter(|q| q.note.is_none());
    let params: Vec<Value> = vec![
        r.run_id.as_str().into(),
        checked.figures.as_str().into(),
        now().into(),
        r.created_at.as_str().into(),
        r.workload.name.as_str().into(),
        Value::Int(r.workload.standard as i64),
        checked.gpu.as_str().into(),
        r.backend.name.as_str().into(),
        r.precision_with_weights().into(),
        checked.memory_profile.as_str().into(),
        checked.model_key.as_str().into(),
        r.scores.score.map(|s| s as i64).into(),
        r.scores.images_per_minute.into(),
        r.scores.seconds_per_image.median.into(),
        r.scores.steps_per_second.into(),
        r.scores.vram_peak_bytes.map(|b| b as i64).into(),
        r.scores.power.avg_w.into(),
        checked.reference_match.map(i64::from).into(),
        document.into(),
        checked.hardware.name().into(),
        quality.map(|q| q.clip_score_mean).into(),
        quality.map(|q| q.clip_model.as_str()).into(),
    ];
    let changed = db.execute(
        "INSERT INTO runs (id, figures, received_at, created_at, workload, standard, gpu, \
         backend, precision, memory_profile, model_key, score, images_per_minute, \
         seconds_per_image, steps_per_second, vram_peak_bytes, avg_power_w, reference_match, \
         document, hardware_state, clip_score_mean, clip_model) VALUES ($1, $2, $3, $4, $5, $6, \
         $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22) \
         ON CONFLICT DO NOTHING",
        &params,
    )?;
    if changed == 1 {
        return Ok(Stored::New(r.run_id.clone()));
    }
    let existing = db.query(
        "SELECT id FROM runs WHERE id = $1 OR figures = $2",
        &[r.run_id.as_str().into(), checked.figures.as_str().into()],
    )?;
    match existing
        .first()
        .and_then(|row| row.first())
        .and_then(Value::text)
    {
        Some(id) => Ok(Stored::Existing(id.to_string())),
        None => Err(ServerError::Database(format!(
            "run {} was neither stored nor found",
            r.run_id
        ))),
    }
}

/// A run's figures and the document as it was received.
pub fn get(db: &Db, id: &str) -> Result<Option<(RunRow, String)>> {
    let rows = db.query(
        &format!("SELECT {COLUMNS}, document FROM runs WHERE id = $1"),
        &[id.into()],
    )?;
    match rows.first() {
        None => Ok(None),
        Some(row) => {
            let document = row
                .get(DOCUMENT_COLUMN)
                .and_then(Value::text)
                .unwrap_or_default()
                .to_string();
            Ok(Some((run_row(row)?, document)))
        }
    }
}

/// A run's figures without its document (what a submission's answer needs).
pub fn figures(db: &Db, id: &str) -> Result<Option<RunRow>> {
    let rows = db.query(
        &format!("SELECT {COLUMNS} FROM runs WHERE id = $1"),
        &[id.into()],
    )?;
    rows.first().map(run_row).transpose()
}

/// Runs that pass `filter` (and are of `gpu`, if given), fastest first.
pub fn runs(db: &Db, filter: &Filter, gpu: Option<&str>) -> Result<Vec<RunRow>> {
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    let mut add = |column: &str, value: Option<&str>| {
        if let Some(value) = value {
            params.push(Value::from(value));
            conditions.push(format!("{column} = ${}", params.len()));
        }
    };
    add("workload", filter.workload.as_deref());
    add("backend", filter.backend.as_deref());
    add("precision", filter.precision.as_deref());
    add("memory_profile", filter.profile.as_deref());
    add("gpu", gpu);
    if filter.standard_only {
        conditions.push("standard = 1".into());
    }
    match filter.hardware {
        HardwareFilter::NotThrottled => conditions.push("hardware_state <> 'throttled'".into()),
        HardwareFilter::Throttled => conditions.push("hardware_state = 'throttled'".into()),
        HardwareFilter::Any => {}
    }
    let condition = match conditions.is_empty() {
        true => String::new(),
        false => format!(" WHERE {}", conditions.join(" AND ")),
    };
    let rows = db.query(
        &format!("SELECT {COLUMNS} FROM runs{condition} ORDER BY images_per_minute DESC, id"),
        &params,
    )?;
    rows.iter().map(run_row).collect()
}

pub fn count(db: &Db) -> Result<i64> {
    let rows = db.query("SELECT COUNT(*) FROM runs", &[])?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(Value::int)
        .unwrap_or(0))
}

/// Images per minute over a set of runs: how many, the median, the 10th and 90th percentiles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    pub count: usize,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub best: f64,
}

impl Distribution {
    pub fn of(values: &[f64]) -> Option<Distribution> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        Some(Distribution {
            count: sorted.len(),
            median: quantile(&sorted, 0.5),
            p10: quantile(&sorted, 0.1),
            p90: quantile(&sorted, 0.9),
            best: sorted[sorted.len() - 1],
        })
    }
}

/// The `q` quantile of sorted values, interpolating between neighbours.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (below, above) = (position.floor() as usize, position.ceil() as usize);
    sorted[below] + (sorted[above] - sorted[below]) * (position - below as f64)
}

/// The share of `values` below `value`, counting ties as half: 0 slowest, 100 fastest.
pub fn percentile_of(values: &[f64], value: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let below = values.iter().filter(|v| **v < value).count() as f64;
    let ties = values.iter().filter(|v| **v == value).count() as f64;
    100.0 * (below + ties / 2.0) / values.len() as f64
}

/// The mean CLIP scores of `workload`'s runs scored by `clip_model`, but `except`'s.
pub fn clip_scores(db: &Db, workload: &str, clip_model: &str, except: &str) -> Result<Vec<f64>> {
    let rows = db.query(
        "SELECT clip_score_mean FROM runs WHERE workload = $1 AND clip_model = $2 AND id <> $3 \
         AND clip_score_mean IS NOT NULL",
        &[workload.into(), clip_model.into(), except.into()],
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| r.first().and_then(Value::real))
        .collect())
}

/// One leaderboard line: a GPU (with its backend and precision) and its runs' distribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardRow {
    pub gpu: String,
    pub images_per_minute: Distribution,
    /// The median standard score (100 x images per minute) where the runs are standard.
    pub median_score: Option<f64>,
    pub backends: Vec<String>,
}

/// The runs grouped by GPU, the fastest median first.
pub fn leaderboard(runs: &[RunRow]) -> Vec<BoardRow> {
    let mut gpus: Vec<&str> = runs.iter().map(|r| r.gpu.as_str()).collect();
    gpus.sort_unstable();
    gpus.dedup();
    let mut rows: Vec<BoardRow> = gpus
        .into_iter()
        .filter_map(|gpu| {
            let of_gpu: Vec<&RunRow> = runs.iter().filter(|r| r.gpu == gpu).collect();
            let rates: Vec<f64> = of_gpu.iter().map(|r| r.images_per_minute).collect();
            let scores: Vec<f64> = of_gpu
                .iter()
                .filter_map(|r| r.score.map(|s| s as f64))
                .collect();
            let mut backends: Vec<String> = of_gpu
                .iter()
                .map(|r| format!("{} {}", r.backend, r.precision))
                .collect();
            backends.sort();
            backends.dedup();
            Some(BoardRow {
                gpu: gpu.to_string(),
                images_per_minute: Distribution::of(&rates)?,
                median_score: Distribution::of(&scores).map(|d| d.median),
                backends,
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        b.images_per_minute
            .median
            .total_cmp(&a.images_per_minute.median)
            .then_with(|| a.gpu.cmp(&b.gpu))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_and_percentiles_count_ties_as_half() {
        let d = Distribution::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!((d.count, d.median, d.best), (5, 3.0, 5.0));
        assert!((d.p10 - 1.4).abs() < 1e-12 && (d.p90 - 4.6).abs() < 1e-12);
        assert_eq!(Distribution::of(&[]), None);
        assert_eq!(percentile_of(&[1.0, 2.0, 3.0, 4.0], 3.0), 62.5);
        assert_eq!(percentile_of(&[1.0, 2.0], 9.0), 100.0);
        assert_eq!(percentile_of(&[], 1.0), 0.0);
    }

    #[test]
    fn a_quantized_run_is_ranked_under_its_weights_too() {
        let mut r: sdbench_bench::result::BenchResult =
            serde_json::from_str(include_str!("../../bench/tests/data/result-v1.json")).unwrap();
        assert_eq!(r.precision_with_weights(), "f16");
        r.workload.model.quantization = Some("Q4_K+Q6_K".into());
        assert_eq!(r.precision_with_weights(), "f16+Q4_K+Q6_K");
    }
}
