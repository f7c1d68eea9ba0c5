//! The embedded engine: one SQLite file in WAL mode with full syncs (an acknowledged submission
//! survives a crash or a restart).

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::{now, statements, Row, Value, MIGRATIONS_TABLE};
use crate::error::{Result, ServerError};

pub struct Sqlite {
    connection: Mutex<Connection>,
}

fn error(e: rusqlite::Error) -> ServerError {
    ServerError::Database(format!("SQLite: {e}"))
}

/// `$1` parameters as SQLite's numbered `?1` (SQLite would take `$1` as a name, numbered by
/// first appearance).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

fn to_sql(v: &Value) -> rusqlite::types::Value {
    match v {
        Value::Null => rusqlite::types::Value::Null,
        Value::Int(i) => rusqlite::types::Value::Integer(*i),
        Value::Real(f) => rusqlite::types::Value::Real(*f),
        Value::Text(s) => rusqlite::types::Value::Text(s.clone()),
    }
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Sqlite> {
        let connection = Connection::open(path)
            .map_err(|e| ServerError::Database(format!("cannot open {}: {e}", path.display())))?;
        connection
            .busy_timeout(Duration::from_secs(30))
            .map_err(error)?;
        connection
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            .map_err(error)?;
        Ok(Sqlite {
            connection: Mutex::new(connection),
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Connection>> {
        self.connection
            .lock()
            .map_err(|_| ServerError::Database("the SQLite connection was poisoned".into()))
    }

    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let connection = self.lock()?;
        let mut statement = connection.prepare_cached(&numbered(sql)).map_err(error)?;
        let columns = statement.column_count();
        let mut rows = statement
            .query(rusqlite::params_from_iter(params.iter().map(to_sql)))
            .map_err(error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(error)? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match row.get_ref(i).map_err(error)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(i) => Value::Int(i),
                    ValueRef::Real(f) => Value::Real(f),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Value::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            out.push(values);
        }
        Ok(out)
    }

    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let connection = self.lock()?;
        let mut statement = connection.prepare_cached(&numbered(sql)).map_err(error)?;
        let changed = statement
            .execute(rusqlite::params_from_iter(params.iter().map(to_sql)))
            .map_err(error)?;
        Ok(changed as u64)
    }

    pub fn migrate(&self, migrations: &[(i64, &str)]) -> Result<i64> {
        let mut connection = self.lock()?;
        connection.execute(MIGRATIONS_TABLE, []).map_err(error)?;
        // IMMEDIATE: a second process starting at once waits for this one's migrations.
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(error)?;
        let current: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
            .map_err(error)?;
        let mut version = current;
        for &(v, sql) in migrations.iter().filter(|(v, _)| *v > current) {
            for statement in statements(sql) {
                tx.execute(statement, [])
                    .map_err(|e| ServerError::Database(format!("migration {v} failed: {e}")))?;
            }
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
                rusqlite::params![v, now()],
            )
            .map_err(error)?;
            version = v;
        }
        tx.commit().map_err(error)?;
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_parameters_become_numbered_ones() {
        assert_eq!(
            numbered("SELECT $2, $1 FROM t WHERE a = $10 AND b = '$x'"),
            "SELECT ?2, ?1 FROM t WHERE a = ?10 AND b = '$x'"
        );
    }
}
