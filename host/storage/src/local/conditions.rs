//! Conditional writes (`If-Match`, `If-None-Match: *`): the condition is
//! read and the row committed under a lock of the object's key, so two
//! conditional writers of one key never both succeed. Unconditional
//! writes take no lock (they may replace anything anyway).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use plateau_store::Db;
use plateau_store::storage::objects;
use tokio::sync::OwnedMutexGuard;

use crate::error::{Error, Result};
use crate::provider::Condition;

/// An object's bucket id and key.
type ObjectId = (String, String);

/// The keys conditional writes are committing.
#[derive(Default)]
pub(crate) struct KeyLocks {
    held: Mutex<HashMap<ObjectId, Arc<tokio::sync::Mutex<()>>>>,
}

/// Held while a conditional write checks and commits.
pub(crate) struct Held {
    locks: Arc<KeyLocks>,
    key: ObjectId,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.guard.take();
        let mut held = self.locks.held.lock().unwrap_or_else(|p| p.into_inner());
        if held
            .get(&self.key)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            held.remove(&self.key);
        }
    }
}

/// Locks `key` of `bucket_id` and checks `condition` against its current
/// object; None (and no lock) for an unconditional write.
pub(crate) async fn check(
    locks: &Arc<KeyLocks>,
    db: &Db,
    bucket_id: &str,
    key: &str,
    condition: &Condition,
) -> Result<Option<Held>> {
    if condition.is_empty() {
        return Ok(None);
    }
    let id = (bucket_id.to_owned(), key.to_owned());
    let mutex = locks
        .held
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(id.clone())
        .or_default()
        .clone();
    let held = Held {
        locks: locks.clone(),
        key: id,
        guard: Some(mutex.lock_owned().await),
    };
    holds(db, bucket_id, key, condition).await?;
    Ok(Some(held))
}

/// PreconditionFailed unless `condition` holds for the current object.
pub(crate) async fn holds(
    db: &Db,
    bucket_id: &str,
    key: &str,
    condition: &Condition,
) -> Result<()> {
    if condition.is_empty() {
        return Ok(());
    }
    let current = objects::get(db, bucket_id, key).await?;
    if condition.if_match.is_some() && current.is_none() {
        return Err(Error::NoSuchKey);
    }
    if condition.holds(current.as_ref().map(|o| o.etag.as_str())) {
        Ok(())
    } else {
        Err(Error::PreconditionFailed)
    }
}
