//! Where writes go: SQLite's one writer connection taken in turns (or
//! PostgreSQL's pool), write transactions, and the transaction a request
//! holds open for its idempotency record.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Database, TransactionManager};
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

type Manager = <Any as Database>::TransactionManager;

/// A write transaction. Dropping it without [`Tx::commit`] rolls back.
pub struct Tx {
    conn: WriteConn,
    open: bool,
}

impl Tx {
    pub(super) async fn begin(mut conn: WriteConn) -> Result<Tx> {
        Manager::begin(&mut conn, None).await?;
        Ok(Tx { conn, open: true })
    }

    pub fn conn(&mut self) -> &mut AnyConnection {
        &mut self.conn
    }

    pub async fn commit(mut self) -> Result<()> {
        Manager::commit(&mut self.conn).await?;
        self.open = false;
        Ok(())
    }

    /// Commits the request's last write: only building the response may
    /// follow. Inside [`hold_last_commit`] (the idempotency middleware) the
    /// transaction is handed back open instead, so that the record of the
    /// response joins it and the change, its event and its idempotency
    /// record are one commit. Nothing else sees the change before that
    /// commit, so a handler that tells others about its change (a cache
    /// eviction) uses [`Tx::commit`].
    pub async fn commit_last(self) -> Result<()> {
        match HELD.try_with(Arc::clone) {
            Ok(slot) => {
                let earlier = slot.lock().expect("held transaction lock").replace(self);
                // `Db::writer` commits a held transaction before a new one
                // can begin, so there is never an earlier one; commit it
                // if there is.
                if let Some(tx) = earlier {
                    tx.commit().await?;
                }
                Ok(())
            }
            Err(_) => self.commit().await,
        }
    }
}

type HeldSlot = Arc<std::sync::Mutex<Option<Tx>>>;

tokio::task_local! {
    /// Where [`Tx::commit_last`] leaves its transaction open, in a request
    /// run by [`hold_last_commit`].
    static HELD: HeldSlot;
}

/// Runs `request` so that a transaction it ends with [`Tx::commit_last`]
/// comes back open, for the caller to add to and commit (or drop, which
/// rolls it back). `None` when the request made no such transaction.
pub async fn hold_last_commit<F: Future>(request: F) -> (F::Output, Option<Tx>) {
    let slot = HeldSlot::default();
    let output = HELD.scope(slot.clone(), request).await;
    let held = slot.lock().expect("held transaction lock").take();
    (output, held)
}

/// Commits the transaction this task holds, if any: the request writes
/// again after [`Tx::commit_last`]. On SQLite the held transaction has the
/// one writer connection, so anything else would wait for it forever.
pub(super) async fn commit_held() -> Result<()> {
    let held = HELD
        .try_with(|slot| slot.lock().expect("held transaction lock").take())
        .ok()
        .flatten();
    match held {
        Some(tx) => tx.commit().await,
        None => Ok(()),
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if self.open {
            // Queued on the connection ahead of anything its next user sends
            // (SQLite's worker runs commands in order; a pooled PostgreSQL
            // connection flushes it when it returns to the pool).
            Manager::start_rollback(&mut self.conn);
        }
    }
}
