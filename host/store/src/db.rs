//! The database handle: a pool, its backend, and write transactions.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyConnection, AnyPool, Executor};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::{Error, Result};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A connection pool to SQLite or PostgreSQL with the schema migrated.
#[derive(Clone)]
pub struct Db {
    pool: AnyPool,
    backend: Backend,
    /// SQLite has one writer at a time. Taking this gate before a write
    /// transaction keeps this process's writers from failing each other
    /// with SQLITE_BUSY; other processes wait on SQLite's busy timeout.
    write_gate: Option<Arc<Mutex<()>>>,
}

/// A write transaction. Dropping it without [`Tx::commit`] rolls back.
pub struct Tx {
    inner: sqlx::Transaction<'static, Any>,
    _gate: Option<OwnedMutexGuard<()>>,
}

impl Tx {
    pub fn conn(&mut self) -> &mut AnyConnection {
        &mut self.inner
    }

    pub async fn commit(self) -> Result<()> {
        self.inner.commit().await?;
        Ok(())
    }
}

impl Db {
    /// The default database: a SQLite file in the data directory.
    pub fn sqlite_url(data_dir: &Path) -> String {
        format!(
            "sqlite://{}?mode=rwc",
            data_dir.join("plateau.db").display()
        )
    }

    /// Connects and runs the migrations of the URL's backend.
    pub async fn connect(url: &str) -> Result<Db> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            return Err(Error::UnsupportedUrl(redact(url)));
        };
        let options = AnyConnectOptions::from_str(url)?;
        let pool = match backend {
            Backend::Sqlite => {
                AnyPoolOptions::new()
                    .max_connections(8)
                    .min_connections(1)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute(
                                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                                 PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;",
                            )
                            .await?;
                            Ok(())
                        })
                    })
                    .connect_with(options)
                    .await?
            }
            Backend::Postgres => {
                AnyPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(options)
                    .await?
            }
        };
        match backend {
            Backend::Sqlite => SQLITE_MIGRATIONS.run(&pool).await?,
            Backend::Postgres => POSTGRES_MIGRATIONS.run(&pool).await?,
        }
        let write_gate = (backend == Backend::Sqlite).then(|| Arc::new(Mutex::new(())));
        Ok(Db {
            pool,
            backend,
            write_gate,
        })
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Begins a write transaction.
    pub async fn begin(&self) -> Result<Tx> {
        let gate = self.write_turn().await;
        let inner = self.pool.begin().await?;
        Ok(Tx { inner, _gate: gate })
    }

    /// Waits for this process's turn to write. Hold the guard while running
    /// a single-statement write on [`Db::pool`]; transactions from
    /// [`Db::begin`] take their turn themselves. On PostgreSQL, where
    /// writers do not exclude each other, there is no turn to wait for.
    pub async fn write_turn(&self) -> Option<OwnedMutexGuard<()>> {
        match &self.write_gate {
            Some(gate) => Some(gate.clone().lock_owned().await),
            None => None,
        }
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A database URL with any password replaced, for error messages and logs.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacts_passwords() {
        assert_eq!(
            super::redact("postgres://app:s3cret@db:5432/plateau"),
            "postgres://app:***@db:5432/plateau"
        );
        assert_eq!(
            super::redact("sqlite://./data/p.db"),
            "sqlite://./data/p.db"
        );
    }
}
