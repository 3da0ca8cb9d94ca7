//! The database handle: a pool, its backend, and write transactions.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyConnection, AnyPool, Executor};

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
    /// Where writes go. SQLite has one writer at a time, so on SQLite this
    /// is a pool of one connection: this process's writers queue for it
    /// instead of failing each other with SQLITE_BUSY (other processes wait
    /// on SQLite's busy timeout), and the one writer stays warm. On
    /// PostgreSQL it is the main pool.
    writer: AnyPool,
    backend: Backend,
}

/// A write transaction. Dropping it without [`Tx::commit`] rolls back.
pub struct Tx {
    inner: sqlx::Transaction<'static, Any>,
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
        let sqlite = |max: u32| {
            AnyPoolOptions::new()
                .max_connections(max)
                .min_connections(1)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 16384; \
                             PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;",
                        )
                        .await?;
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
            Backend::Sqlite => sqlite(1).connect_with(options).await?,
            Backend::Postgres => pool.clone(),
        };
        Ok(Db {
            pool,
            writer,
            backend,
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
        let inner = self.writer.begin().await?;
        Ok(Tx { inner })
    }

    /// The pool for single-statement writes; reads use [`Db::pool`].
    pub fn writer(&self) -> &AnyPool {
        &self.writer
    }

    pub async fn close(&self) {
        self.writer.close().await;
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
