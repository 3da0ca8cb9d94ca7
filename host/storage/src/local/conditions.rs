//! Conditional writes (`If-Match`, `If-None-Match`) and deletes (`If-Match`,
//! last modification, size): the condition is read and the row committed
//! under a lock of the object's key, so two conditional writers of one
//! key never both succeed. Unconditional writes take no lock (they may
//! replace anything anyway).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use plateau_store::Db;
use plateau_store::storage::{objects, versions};
use tokio::sync::OwnedMutexGuard;

use crate::condition::Target;
use crate::error::{Error, Result};
use crate::provider::{Bucket, Condition, DeleteCondition};

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
    let held = lock(locks, bucket_id, key).await;
    holds(db, bucket_id, key, condition).await?;
    Ok(Some(held))
}

/// What a delete goes on with.
pub(crate) enum Verdict {
    /// Delete, holding the key's lock where the delete is conditional.
    Go(Option<Held>),
    /// A conditional delete of a version that is not there: nothing to do.
    Nothing,
}

/// Locks `key` and checks `condition` against the version a delete
/// removes (`version`, or the current one: a delete marker included);
/// no lock for an unconditional delete.
pub(crate) async fn check_delete(
    locks: &Arc<KeyLocks>,
    db: &Db,
    bucket: &Bucket,
    key: &str,
    version: Option<&str>,
    condition: &DeleteCondition,
) -> Result<Verdict> {
    if condition.is_empty() {
        return Ok(Verdict::Go(None));
    }
    let held = lock(locks, &bucket.id, key).await;
    let found = match version {
        Some(v) => versions::get(db, &bucket.id, key, v)
            .await?
            .map(|v| (v.delete_marker != 0, v.etag, v.modified_at, v.size)),
        None => match objects::get(db, &bucket.id, key).await? {
            Some(o) => Some((false, o.etag, o.modified_at, o.size)),
            None => versions::list(db, &bucket.id, key, ("", i64::MIN), 1)
                .await?
                .into_iter()
                .find(|v| v.key == key && v.latest != 0 && v.delete_marker != 0)
                .map(|v| (true, v.etag, v.modified_at, v.size)),
        },
    };
    let Some((marker, etag, modified_at, size)) = found else {
        return Ok(Verdict::Nothing);
    };
    let target = Target {
        etag: (!marker).then_some(etag.as_str()),
        modified_at,
        size: u64::try_from(size).unwrap_or(0),
    };
    if !condition.holds(Some(target)) {
        return Err(Error::PreconditionFailed);
    }
    Ok(Verdict::Go(Some(held)))
}

async fn lock(locks: &Arc<KeyLocks>, bucket_id: &str, key: &str) -> Held {
    let id = (bucket_id.to_owned(), key.to_owned());
    let mutex = locks
        .held
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(id.clone())
        .or_default()
        .clone();
    Held {
        locks: locks.clone(),
        key: id,
        guard: Some(mutex.lock_owned().await),
    }
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
