//! Where writes go: SQLite's one writer connection taken in turns, or
//! PostgreSQL's pool.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool};
use tokio::sync::{Mutex, OwnedMappedMutexGuard, OwnedMutexGuard};

use crate::Result;

/// Where writes go.
#[derive(Clone)]
pub(crate) enum Writer {
    /// SQLite has one writer at a time, so this process keeps one writer
    /// connection and its writers take turns on it (a fair lock, first come
    /// first served) instead of failing each other with SQLITE_BUSY; other
    /// processes wait on SQLite's busy timeout. It is not a pool: a pool
    /// pings the connection on every check-out and check-in, two more trips
    /// to SQLite's worker thread inside the one critical section of every
    /// write. `None` once closed.
    Sqlite(Arc<Mutex<Option<AnyConnection>>>),
    /// PostgreSQL: the main pool.
    Pool(AnyPool),
}

impl Writer {
    /// Waits for a turn on SQLite's writer, or takes a pooled connection.
    pub(crate) async fn acquire(&self) -> Result<WriteConn> {
        let inner = match self {
            Writer::Sqlite(conn) => WriteConnInner::Sqlite(
                OwnedMutexGuard::try_map(conn.clone().lock_owned().await, Option::as_mut)
                    .map_err(|_| sqlx::Error::PoolClosed)?,
            ),
            Writer::Pool(pool) => WriteConnInner::Pool(pool.acquire().await?),
        };
        Ok(WriteConn { inner })
    }
}

/// A connection to write on, held until dropped: on SQLite, this process's
/// turn on the one writer connection.
pub struct WriteConn {
    inner: WriteConnInner,
}

enum WriteConnInner {
    Sqlite(OwnedMappedMutexGuard<Option<AnyConnection>, AnyConnection>),
    Pool(PoolConnection<Any>),
}

impl WriteConn {
    pub(crate) fn is_sqlite(&self) -> bool {
        matches!(self.inner, WriteConnInner::Sqlite(_))
    }
}

impl Deref for WriteConn {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        match &self.inner {
            WriteConnInner::Sqlite(conn) => conn,
            WriteConnInner::Pool(conn) => conn,
        }
    }
}

impl DerefMut for WriteConn {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match &mut self.inner {
            WriteConnInner::Sqlite(conn) => conn,
            WriteConnInner::Pool(conn) => conn,
        }
    }
}
