//! The one SQL layer: statements written once, in the subset SQLite and PostgreSQL share, with
//! `$1`, `$2`… parameters and values of four kinds, run on either engine. Calls block: the
//! server makes them from `tokio::task::spawn_blocking`.

mod postgres;
mod sqlite;

use std::path::Path;

use crate::error::{Result, ServerError};

/// A parameter or a column value. Booleans are stored as 0 and 1 (`BIGINT`) on both engines.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Real(f) => Some(*f as i64),
            _ => None,
        }
    }

    pub fn real(&self) -> Option<f64> {
        match self {
            Value::Real(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Real(f)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

pub type Row = Vec<Value>;

/// The database: an SQLite file (one connection, writes serialised by SQLite anyway), or a pool
/// of PostgreSQL connections that several server instances may share.
pub enum Db {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Postgres),
}

/// Versioned migrations, applied in order on start; each runs once, in a transaction.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("migrations/0001_runs.sql")),
    (2, include_str!("migrations/0002_hardware_state.sql")),
    (3, include_str!("migrations/0003_clip_score.sql")),
];

impl Db {
    /// `url`: `postgres://…` (or `postgresql://…`) for PostgreSQL; `None` for the SQLite file
    /// `results.sqlite3` in `data_dir` (created with the folder).
    pub fn open(url: Option<&str>, data_dir: &Path) -> Result<Db> {
        let db = match url {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Db::Postgres(postgres::Postgres::connect(url)?)
            }
            Some(other) => {
                return Err(ServerError::Config(format!(
                    "--database {other}: give a postgres:// URL, or leave it out for the SQLite file in the data folder"
                )))
            }
            None => {
                std::fs::create_dir_all(data_dir).map_err(|e| {
                    ServerError::Config(format!(
                        "cannot create the data folder {}: {e}",
                        data_dir.display()
                    ))
                })?;
                Db::Sqlite(sqlite::Sqlite::open(&data_dir.join("results.sqlite3"))?)
            }
        };
        db.migrate()?;
        Ok(db)
    }

    /// "sqlite" or "postgresql".
    pub fn engine(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgresql",
        }
    }

    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        match self {
            Db::Sqlite(db) => db.query(sql, params),
            Db::Postgres(db) => db.query(sql, params),
        }
    }

    /// Rows changed.
    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        match self {
            Db::Sqlite(db) => db.execute(sql, params),
            Db::Postgres(db) => db.execute(sql, params),
        }
    }

    /// Applies the migrations this database lacks; returns its schema version. Instances that
    /// start together take turns (SQLite's write lock, PostgreSQL's advisory lock).
    pub fn migrate(&self) -> Result<i64> {
        match self {
            Db::Sqlite(db) => db.migrate(MIGRATIONS),
            Db::Postgres(db) => db.migrate(MIGRATIONS),
        }
    }
}

/// `sql` split into statements at `;` line ends (the migrations hold no `;` elsewhere).
fn statements(sql: &str) -> impl Iterator<Item = &str> {
    sql.split(";\n")
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.lines().all(|l| l.trim().starts_with("--")))
}

/// The table of applied migrations, created before any is applied.
const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version BIGINT PRIMARY KEY,
    applied_at TEXT NOT NULL
)";

/// The time now, RFC 3339 UTC (sorts as text).
pub(crate) fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
