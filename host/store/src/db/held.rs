//! The transaction a request holds open for its idempotency record.

use std::sync::Arc;

use super::Tx;
use crate::Result;

impl Tx {
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

/// Whether this task runs inside [`hold_last_commit`], where a
/// [`Tx::commit_last`] is held open rather than committed.
pub fn holds_last_commit() -> bool {
    HELD.try_with(|_| ()).is_ok()
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
