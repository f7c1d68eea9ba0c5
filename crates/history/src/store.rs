//! The SQLite file. One table: the summary columns the list filters and sorts on, and the whole
//! run as JSON, so a run reads back exactly as it was stored.

use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use sdbench_bench::result::{write_atomically, BenchResult};

use crate::error::{HistoryError, Result};
use crate::record::{Filter, Generation, Record, RunKind, RunSummary};

/// `PRAGMA user_version` of the layout below. 2 added `memory_profile` (`MIGRATE_1_TO_2`), 3
/// `sweep_id` (`MIGRATE_2_TO_3`).
const SCHEMA: i64 = 3;

const CREATE: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id                TEXT PRIMARY KEY,
    kind              TEXT NOT NULL CHECK (kind IN ('benchmark', 'generation')),
    created_at        TEXT NOT NULL,
    title             TEXT NOT NULL,
    model             TEXT NOT NULL,
    backend           TEXT NOT NULL,
    device            TEXT NOT NULL,
    precision         TEXT NOT NULL,
    score             INTEGER,
    images_per_minute REAL,
    seconds_per_image REAL,
    valid             INTEGER NOT NULL,
    standard          INTEGER NOT NULL,
    document          TEXT NOT NULL,
    memory_profile    TEXT,
    sweep_id          TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (created_at);
";

/// Version 1 had no `memory_profile` column: add it, filled from each stored run's document.
const MIGRATE_1_TO_2: &str = "
ALTER TABLE runs ADD COLUMN memory_profile TEXT;
UPDATE runs SET memory_profile = CASE kind
    WHEN 'benchmark' THEN json_extract(document, '$.run.backend.memory_profile')
    ELSE json_extract(document, '$.run.memory_profile') END;
";

/// Version 2 had no `sweep_id` column: add it, filled from each stored benchmark's document.
const MIGRATE_2_TO_3: &str = "
ALTER TABLE runs ADD COLUMN sweep_id TEXT;
UPDATE runs SET sweep_id = json_extract(document, '$.run.sweep_id') WHERE kind = 'benchmark';
";

/// The history the CLI and the desktop app share: `{data_dir}/history.sqlite`.
pub fn default_path() -> PathBuf {
    sdbench_bench::submit::data_dir().join("history.sqlite")
}

/// The `format` field of an export file.
pub const EXPORT_FORMAT: &str = "sdbench-history-export-v1";

pub struct History {
    path: PathBuf,
    conn: Connection,
}

impl History {
    /// Opens (or creates) the history at `path`, making its folder if needed.
    pub fn open(path: &Path) -> Result<History> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| HistoryError::Folder {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| db(path, e))?;
        Self::prepare(path.to_path_buf(), conn)
    }

    /// A history that lives in memory only (for tests and previews).
    pub fn in_memory() -> Result<History> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| db(&path, e))?;
        Self::prepare(path, conn)
    }

    fn prepare(path: PathBuf, conn: Connection) -> Result<History> {
        // Another process (the CLI beside the app, another CLI run) may be writing: wait for it,
        // from the first statement on.
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| db(&path, e))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(|e| db(&path, e))?;
        if version > SCHEMA {
            return Err(HistoryError::TooNew {
                path,
                found: version,
                supported: SCHEMA,
            });
        }
        let migrate = match version {
            1 => format!("{MIGRATE_1_TO_2} {MIGRATE_2_TO_3}"),
            2 => MIGRATE_2_TO_3.to_string(),
            _ => String::new(),
        };
        conn.execute_batch(&format!(
            // IMMEDIATE: the write lock is taken (or waited for) at the start, not upgraded to
            // midway, which fails at once when another writer holds it.
            "BEGIN IMMEDIATE; {CREATE} {migrate} PRAGMA user_version = {SCHEMA}; COMMIT;"
        ))
        .map_err(|e| db(&path, e))?;
        Ok(History { path, conn })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a run; a run with the same id is replaced.
    pub fn add(&self, record: &Record) -> Result<()> {
        let s = record.summary();
        let document = serde_json::to_string(record).expect("records serialise");
        self.conn
            .execute(
                "INSERT OR REPLACE INTO runs (id, kind, created_at, title, model, backend, device,
                 precision, score, images_per_minute, seconds_per_image, valid, standard, document,
                 memory_profile, sweep_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                params![
                    s.id,
                    s.kind.name(),
                    s.created_at,
                    s.title,
                    s.model,
                    s.backend,
                    s.device,
                    s.precision,
                    s.score.map(|v| v as i64),
                    s.images_per_minute,
                    s.seconds_per_image,
                    s.valid,
                    s.standard,
                    document,
                    s.memory_profile,
                    s.sweep_id
                ],
            )
            .map_err(|e| self.db(e))?;
        Ok(())
    }

    pub fn add_benchmark(&self, result: &BenchResult) -> Result<()> {
        self.add(&Record::Benchmark(Box::new(result.clone())))
    }

    pub fn add_generation(&self, generation: &Generation) -> Result<()> {
        self.add(&Record::Generation(Box::new(generation.clone())))
    }

    /// The runs `filter` selects, newest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunSummary>> {
        // Anonymous `?` parameters bind in order of appearance: each clause pushes its values.
        let mut clauses: Vec<&str> = Vec::new();
        let mut values: Vec<Value> = Vec::new();
        if let Some(kind) = filter.kind {
            clauses.push("kind = ?");
            values.push(Value::Text(kind.name().into()));
        }
        if let Some(backend) = &filter.backend {
            clauses.push("backend = ?");
            values.push(Value::Text(backend.clone()));
        }
        if let Some(text) = filter
            .text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            clauses.push(
                "(lower(title) LIKE ? ESCAPE '\\' OR lower(model) LIKE ? ESCAPE '\\' OR lower(device) LIKE ? ESCAPE '\\')",
            );
            let pattern = format!("%{}%", escape_like(&text.to_lowercase()));
            values.extend(std::iter::repeat_n(Value::Text(pattern), 3));
        }
        if let Some(since) = &filter.since {
            clauses.push("created_at >= ?");
            values.push(Value::Text(since.clone()));
        }
        if let Some(until) = &filter.until {
            clauses.push("created_at <= ?");
            values.push(Value::Text(until.clone()));
        }
        if let Some(sweep) = &filter.sweep {
            clauses.push("sweep_id = ?");
            values.push(Value::Text(sweep.clone()));
        }
        if filter.standard_only {
            clauses.push("standard = 1");
        }
        if filter.valid_only {
            clauses.push("valid = 1");
        }
        let mut sql = String::from(
            "SELECT id, kind, created_at, title, model, backend, device, precision, score,
             images_per_minute, seconds_per_image, valid, standard, memory_profile, sweep_id
             FROM runs",
        );
        if !clauses.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&clauses.join(" AND "));
        }
        sql.push_str(" ORDER BY created_at DESC, id");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut statement = self.conn.prepare(&sql).map_err(|e| self.db(e))?;
        let rows = statement
            .query_map(rusqlite::params_from_iter(values), |row| {
                let kind: String = row.get(1)?;
                Ok(RunSummary {
                    id: row.get(0)?,
                    kind: RunKind::from_name(&kind).unwrap_or(RunKind::Benchmark),
                    created_at: row.get(2)?,
                    title: row.get(3)?,
                    model: row.get(4)?,
                    backend: row.get(5)?,
                    device: row.get(6)?,
                    precision: row.get(7)?,
                    score: row.get::<_, Option<i64>>(8)?.map(|v| v as u64),
                    images_per_minute: row.get(9)?,
                    seconds_per_image: row.get(10)?,
                    valid: row.get(11)?,
                    standard: row.get(12)?,
                    memory_profile: row.get(13)?,
                    sweep_id: row.get(14)?,
                })
            })
            .map_err(|e| self.db(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.db(e))
    }

    /// A whole run.
    pub fn get(&self, id: &str) -> Result<Record> {
        let document: Option<String> = self
            .conn
            .query_row("SELECT document FROM runs WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .optional()
            .map_err(|e| self.db(e))?;
        let document = document.ok_or_else(|| HistoryError::NotFound(id.to_string()))?;
        serde_json::from_str(&document).map_err(|e| HistoryError::Damaged {
            id: id.to_string(),
            problem: e.to_string(),
        })
    }

    /// Removes a run; false when there was none.
    pub fn delete(&self, id: &str) -> Result<bool> {
        let removed = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(|e| self.db(e))?;
        Ok(removed > 0)
    }

    /// Writes the given runs, whole, to one JSON file (`{"format": …, "runs": [...]}`), atomically.
    pub fn export(&self, ids: &[String], path: &Path) -> Result<usize> {
        let runs = ids
            .iter()
            .map(|id| self.get(id))
            .collect::<Result<Vec<_>>>()?;
        let document = serde_json::json!({ "format": EXPORT_FORMAT, "runs": runs });
        let text = serde_json::to_string_pretty(&document).expect("records serialise");
        write_atomically(path, text.as_bytes())?;
        Ok(runs.len())
    }

    fn db(&self, e: rusqlite::Error) -> HistoryError {
        db(&self.path, e)
    }
}

fn db(path: &Path, source: rusqlite::Error) -> HistoryError {
    HistoryError::Database {
        path: path.to_path_buf(),
        source,
    }
}

/// `%`, `_` and `\` match themselves in a LIKE pattern with `ESCAPE '\'`.
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
