//! The database handle: a pool for reads, the writer, its backend.

mod checkpoint;
mod held;
mod tx;
#[cfg(test)]
mod tx_tests;
mod writer;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Connection, Executor};
use tokio::sync::Mutex;

use held::commit_held;
pub use held::{hold_last_commit, holds_last_commit};
pub use tx::{Deferred, Tx};
pub use writer::WriteConn;
pub(crate) use writer::Writer;

use crate::idempotency::Reservations;
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
    writer: Writer,
    backend: Backend,
    /// SQLite: idempotency reservations, written in groups.
    reservations: Option<Reservations>,
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
        let sqlite = |max: u32| {
            AnyPoolOptions::new()
                .max_connections(max)
                .min_connections(1)
                // An embedded file cannot hang up: no ping before each use.
                .test_before_acquire(false)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute(SQLITE_PRAGMAS).await?;
                        Ok(())
                    })
                })
        };
        let pool = match backend {
            Backend::Sqlite => sqlite(8).connect_with(options.clone()).await?,
            Backend::Postgres => {
                AnyPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(options.clone())
                    .await?
            }
        };
        match backend {
            Backend::Sqlite => SQLITE_MIGRATIONS.run(&pool).await?,
            Backend::Postgres => POSTGRES_MIGRATIONS.run(&pool).await?,
        }
        let writer = match backend {
            Backend::Sqlite => {
                let mut conn = options.connect().await?;
                conn.execute(SQLITE_PRAGMAS).await?;
                // The writer never checkpoints; the checkpointer does.
                conn.execute("PRAGMA wal_autocheckpoint = 0").await?;
                let writer = Arc::new(Mutex::new(Some(conn)));
                let mut checkpoints = options.connect().await?;
                checkpoints.execute(SQLITE_PRAGMAS).await?;
                tokio::spawn(checkpoint::checkpointer(
                    checkpoints,
                    Arc::downgrade(&writer),
                ));
                Writer::Sqlite(writer)
            }
            Backend::Postgres => Writer::Pool(pool.clone()),
        };
        let reservations =
            (backend == Backend::Sqlite).then(|| Reservations::start(writer.clone()));
        Ok(Db {
            pool,
            writer,
            backend,
            reservations,
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
        Tx::begin(self.writer().await?).await
    }

    /// A connection for single-statement writes, held until dropped; reads
    /// use [`Db::pool`].
    pub async fn writer(&self) -> Result<WriteConn> {
        commit_held().await?;
        self.writer.acquire().await
    }

    /// The group writer of idempotency reservations (SQLite only).
    pub(crate) fn reservations(&self) -> Option<&Reservations> {
        self.reservations.as_ref()
    }

    pub async fn close(&self) {
        if let Writer::Sqlite(conn) = &self.writer
            && let Some(conn) = conn.lock().await.take()
            && let Err(e) = conn.close().await
        {
            tracing::warn!(error = %e, "closing the database writer");
        }
        self.pool.close().await;
    }
}

/// Set on every SQLite connection. WAL with `synchronous = NORMAL`: a
/// commit is durable against a crash of the process, and the WAL is synced
/// at each checkpoint.
const SQLITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
    PRAGMA wal_autocheckpoint = 16384; PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;";

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
