//! The shared engine: a pool of PostgreSQL connections (the blocking `postgres` client; the
//! server calls it from blocking threads). Several server instances may use one database.

use std::error::Error;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, NoTls};

use super::{now, statements, Row, Value, MIGRATIONS_TABLE};
use crate::error::{Result, ServerError};

/// Connections per server instance.
const POOL_SIZE: usize = 8;
/// Any constant key shared by every instance: `pg_advisory_lock` serialises their migrations.
const MIGRATION_LOCK: i64 = 0x5d_be_4c_11;

pub struct Postgres {
    url: String,
    idle: Mutex<Pool>,
    returned: Condvar,
}

struct Pool {
    clients: Vec<Client>,
    open: usize,
}

fn error(e: postgres::Error) -> ServerError {
    ServerError::Database(format!("PostgreSQL: {e}"))
}

/// A `Value` as a parameter of whatever type PostgreSQL inferred for it.
#[derive(Debug)]
struct Param<'a>(&'a Value);

type BoxError = Box<dyn Error + Sync + Send>;

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, BoxError> {
        match (self.0, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Value::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Value::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Value::Int(i), &Type::BOOL) => (*i != 0).to_sql(ty, out),
            (Value::Real(f), &Type::FLOAT8) => f.to_sql(ty, out),
            (Value::Real(f), &Type::FLOAT4) => (*f as f32).to_sql(ty, out),
            (Value::Text(s), _) => s.as_str().to_sql(ty, out),
            (v, ty) => Err(format!("cannot send {v:?} as PostgreSQL type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn column(row: &postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_().clone();
    let get_error =
        |e: postgres::Error| ServerError::Database(format!("PostgreSQL column {i}: {e}"));
    Ok(match ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(get_error)?.into(),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(get_error)?
            .map(i64::from)
            .into(),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(get_error)?
            .map(i64::from)
            .into(),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map_err(get_error)?
            .map(i64::from)
            .into(),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(get_error)?.into(),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(get_error)?
            .map(f64::from)
            .into(),
        _ => row
            .try_get::<_, Option<String>>(i)
            .map_err(get_error)?
            .into(),
    })
}

impl Postgres {
    /// Connects once to check the URL (the error names what is wrong), keeping that connection.
    pub fn connect(url: &str) -> Result<Postgres> {
        let first = Self::open(url)?;
        Ok(Postgres {
            url: url.to_string(),
            idle: Mutex::new(Pool {
                clients: vec![first],
                open: 1,
            }),
            returned: Condvar::new(),
        })
    }

    fn open(url: &str) -> Result<Client> {
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| ServerError::Config(format!("--database: not a PostgreSQL URL: {e}")))?;
        config.connect_timeout(Duration::from_secs(10));
        config.connect(NoTls).map_err(|e| {
            ServerError::Database(format!(
                "cannot connect to PostgreSQL at {}: {e}",
                redacted(url)
            ))
        })
    }

    /// Runs `work` on a pooled connection; a connection that broke is dropped, not returned.
    fn with_client<T>(&self, work: impl FnOnce(&mut Client) -> Result<T>) -> Result<T> {
        let poisoned = || ServerError::Database("the PostgreSQL pool was poisoned".into());
        let mut client = {
            let mut pool = self.idle.lock().map_err(|_| poisoned())?;
            loop {
                if let Some(client) = pool.clients.pop() {
                    break client;
                }
                if pool.open < POOL_SIZE {
                    pool.open += 1;
                    drop(pool);
                    match Self::open(&self.url) {
                        Ok(client) => break client,
                        Err(e) => {
                            if let Ok(mut pool) = self.idle.lock() {
                                pool.open -= 1;
                            }
                            return Err(e);
                        }
                    }
                }
                pool = self.returned.wait(pool).map_err(|_| poisoned())?;
            }
        };
        let result = work(&mut client);
        let mut pool = self.idle.lock().map_err(|_| poisoned())?;
        if client.is_closed() {
            pool.open -= 1;
        } else {
            pool.clients.push(client);
        }
        self.returned.notify_one();
        result
    }

    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let params: Vec<Param> = params.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.with_client(|client| {
            let rows = client.query(sql, &refs).map_err(error)?;
            rows.iter()
                .map(|row| (0..row.len()).map(|i| column(row, i)).collect())
                .collect()
        })
    }

    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let params: Vec<Param> = params.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.with_client(|client| client.execute(sql, &refs).map_err(error))
    }

    pub fn migrate(&self, migrations: &[(i64, &str)]) -> Result<i64> {
        self.with_client(|client| {
            client
                .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
                .map_err(error)?;
            let applied = Self::apply(client, migrations);
            let unlocked = client
                .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
                .map_err(error);
            let version = applied?;
            unlocked?;
            Ok(version)
        })
    }

    fn apply(client: &mut Client, migrations: &[(i64, &str)]) -> Result<i64> {
        client.batch_execute(MIGRATIONS_TABLE).map_err(error)?;
        let current: i64 = client
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                &[],
            )
            .map_err(error)?
            .get(0);
        let mut version = current;
        for &(v, sql) in migrations.iter().filter(|(v, _)| *v > current) {
            let mut tx = client.transaction().map_err(error)?;
            for statement in statements(sql) {
                tx.batch_execute(statement)
                    .map_err(|e| ServerError::Database(format!("migration {v} failed: {e}")))?;
            }
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
                &[&v, &now()],
            )
            .map_err(error)?;
            tx.commit().map_err(error)?;
            version = v;
        }
        Ok(version)
    }
}

impl Drop for Postgres {
    /// The blocking client closes its connection by driving its own runtime, which panics on a
    /// thread that runs async tasks (where the server's last reference may go): close them on a
    /// plain thread.
    fn drop(&mut self) {
        let clients = match self.idle.get_mut() {
            Ok(pool) => std::mem::take(&mut pool.clients),
            Err(_) => return,
        };
        let _ = std::thread::spawn(move || drop(clients)).join();
    }
}

/// The URL without its password, for messages.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            redacted("postgres://bench:secret@db:5432/results"),
            "postgres://bench:***@db:5432/results"
        );
        assert_eq!(
            redacted("postgres://bench@db/results"),
            "postgres://bench@db/results"
        );
    }
}
