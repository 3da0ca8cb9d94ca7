//! The plugin runtime's [`Storage`] on the host's database: key-value data
//! in `plugin_kv`, events in the organisation's timeline, one transaction
//! per committed call, which under an `Idempotency-Key` also holds the
//! request's idempotency record ([`plateau_store::Tx::commit_last`]).

use async_trait::async_trait;
use plateau_plugin_runtime::storage::apply_increment;
use plateau_plugin_runtime::{
    BucketId, Claim, Entry, EventRecord, JobId, JobWrite, KvWrite, Namespace, Storage,
    StorageError, WriteSet,
};
use plateau_store::db::holds_last_commit;
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::jobs::{self, JobKey};
use plateau_store::plugins as kv;
use plateau_store::{Backend, Db, Tx};

use crate::groups::WriteGroups;

pub struct SqlStorage {
    db: Db,
    /// SQLite: claims and call commits committed in groups (see
    /// `crate::groups`).
    groups: Option<WriteGroups>,
}

impl SqlStorage {
    /// On SQLite, starts the group commit (inside a tokio runtime).
    pub fn new(db: Db) -> Self {
        let groups = (db.backend() == Backend::Sqlite).then(|| WriteGroups::start(db.clone()));
        SqlStorage { db, groups }
    }
}

fn ns(bucket: &BucketId) -> &str {
    match &bucket.namespace {
        Namespace::Organization(id) => id,
        Namespace::Global => "",
    }
}

pub(crate) fn unavailable(e: plateau_store::Error) -> StorageError {
    StorageError::Unavailable(e.to_string())
}

/// The key a commit locks: plugin, namespace and key.
fn lock_key(bucket: &BucketId, key: &str) -> String {
    format!("{}\u{1f}{}\u{1f}{key}", bucket.plugin, ns(bucket))
}

#[async_trait]
impl Storage for SqlStorage {
    async fn get(&self, bucket: &BucketId, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        kv::kv_get(&self.db, &bucket.plugin, ns(bucket), key)
            .await
            .map_err(unavailable)
    }

    async fn list(
        &self,
        bucket: &BucketId,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Entry>, StorageError> {
        let rows = kv::kv_list(&self.db, &bucket.plugin, ns(bucket), prefix, after, limit)
            .await
            .map_err(unavailable)?;
        Ok(rows
            .into_iter()
            .map(|(key, value)| Entry { key, value })
            .collect())
    }

    async fn count(&self, bucket: &BucketId, prefix: &str) -> Result<u64, StorageError> {
        kv::kv_count(&self.db, &bucket.plugin, ns(bucket), prefix)
            .await
            .map_err(unavailable)
    }

    async fn commit(&self, set: WriteSet) -> Result<(), StorageError> {
        if set.is_empty() {
            return Ok(());
        }
        if let Some(groups) = &self.groups
            && !holds_last_commit()
        {
            return groups.commit(set).await;
        }
        let mut tx = self.db.begin().await.map_err(unavailable)?;
        let mut locks: Vec<String> = set
            .expectations
            .iter()
            .map(|e| lock_key(&e.bucket, &e.key))
            .chain(set.writes.iter().filter_map(|w| match w {
                KvWrite::Increment { bucket, key, .. } => Some(lock_key(bucket, key)),
                _ => None,
            }))
            .collect();
        kv::kv_lock(&mut tx, self.db.backend(), &mut locks)
            .await
            .map_err(unavailable)?;
        commit_in(&mut tx, &set).await??;
        // Under an `Idempotency-Key` the middleware adds the record of the
        // response to this transaction and commits both at once, so a crash
        // cannot keep the writes and lose the record (the retry would run
        // the plugin again and repeat its writes, events and jobs).
        // Elsewhere (no key, jobs, ticks, event deliveries) this is a plain
        // commit.
        tx.commit_last().await.map_err(unavailable)
    }

    /// Committed at once whatever the request does next: on SQLite with
    /// the operations that wait for the writer with it (`crate::groups`),
    /// elsewhere in one short transaction of its own: lock the key (PostgreSQL, as commits do, so a
    /// commit expecting the key cannot interleave), a conditional write,
    /// then the writes that change with it.
    async fn claim(&self, claim: Claim) -> Result<bool, StorageError> {
        if let Some(groups) = &self.groups {
            return groups.claim(claim).await;
        }
        let mut tx = self.db.begin().await.map_err(unavailable)?;
        let mut locks: Vec<String> = std::iter::once(lock_key(&claim.bucket, &claim.key))
            .chain(claim.then.iter().filter_map(|w| match w {
                KvWrite::Increment { bucket, key, .. } => Some(lock_key(bucket, key)),
                _ => None,
            }))
            .collect();
        kv::kv_lock(&mut tx, self.db.backend(), &mut locks)
            .await
            .map_err(unavailable)?;
        if !claim_in(&mut tx, &claim).await?? {
            return Ok(false);
        }
        tx.commit().await.map_err(unavailable)?;
        Ok(true)
    }
}

/// One write set in `tx`: its expectations are checked before anything of
/// it is written, then its writes, events and jobs. The outer error is a
/// database error; the inner one the set's own (a `Conflict`, or an
/// increment that cannot apply), after which the caller rolls back what
/// the set wrote.
pub(crate) async fn commit_in(
    tx: &mut Tx,
    set: &WriteSet,
) -> Result<Result<(), StorageError>, StorageError> {
    for expectation in &set.expectations {
        let bucket = &expectation.bucket;
        let current = kv::kv_get_in(tx, &bucket.plugin, ns(bucket), &expectation.key)
            .await
            .map_err(unavailable)?;
        if current != expectation.value {
            return Ok(Err(StorageError::Conflict {
                key: expectation.key.clone(),
            }));
        }
    }
    if let Err(e) = apply_all(tx, &set.writes).await? {
        return Ok(Err(e));
    }
    for event in &set.events {
        record(tx, event).await?;
    }
    for job in &set.jobs {
        apply_job(tx, job).await?;
    }
    Ok(Ok(()))
}

/// One claim in `tx`: whether its compare-and-swap held, then its writes.
/// Errors as for [`commit_in`].
pub(crate) async fn claim_in(
    tx: &mut Tx,
    claim: &Claim,
) -> Result<Result<bool, StorageError>, StorageError> {
    if !swap_claimed(tx, claim).await? {
        return Ok(Ok(false));
    }
    Ok(apply_all(tx, &claim.then).await?.map(|()| true))
}

/// Applies `writes` in order. Errors as for [`commit_in`].
async fn apply_all(
    tx: &mut Tx,
    writes: &[KvWrite],
) -> Result<Result<(), StorageError>, StorageError> {
    for write in writes {
        match apply_write(tx, write).await {
            Ok(()) => {}
            Err(e @ StorageError::NotACounter { .. }) => return Ok(Err(e)),
            Err(e) => return Err(e),
        }
    }
    Ok(Ok(()))
}

/// Applies `write` in `tx`: sets and deletes travel with the transaction's
/// next statement (nobody reads their result). An increment of a key that
/// is not a counter is `NotACounter`, before anything of it is written.
async fn apply_write(tx: &mut Tx, write: &KvWrite) -> Result<(), StorageError> {
    let (bucket, key, value) = match write {
        KvWrite::Set { bucket, key, value } => (bucket, key, Some(value.clone())),
        KvWrite::Delete { bucket, key } => (bucket, key, None),
        KvWrite::Increment { bucket, key, delta } => {
            let current = kv::kv_get_in(tx, &bucket.plugin, ns(bucket), key)
                .await
                .map_err(unavailable)?;
            let next = apply_increment(current.as_deref(), *delta)
                .ok_or_else(|| StorageError::NotACounter { key: key.clone() })?;
            (bucket, key, Some(next.to_string().into_bytes()))
        }
    };
    let (plugin, ns) = (&bucket.plugin, ns(bucket));
    match value {
        Some(value) => kv::kv_set(tx, plugin, ns, key, &value).await,
        None => kv::kv_delete(tx, plugin, ns, key).await,
    }
    .map_err(unavailable)
}

/// The compare-and-swap of `claim` in `tx`: whether the key held the
/// expected value (and now holds the new one).
async fn swap_claimed(tx: &mut Tx, claim: &Claim) -> Result<bool, StorageError> {
    kv::kv_claim(
        tx,
        &claim.bucket.plugin,
        ns(&claim.bucket),
        &claim.key,
        claim.expected.as_deref(),
        claim.new.as_deref(),
    )
    .await
    .map_err(unavailable)
}

/// The row key of a durable job.
pub fn job_key(id: &JobId) -> JobKey {
    JobKey {
        plugin: id.bucket.plugin.clone(),
        namespace: ns(&id.bucket).to_owned(),
        kind: id.kind.as_str().to_owned(),
        key: id.key.clone(),
    }
}

/// Milliseconds as the database keeps them.
fn millis(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

async fn apply_job(tx: &mut Tx, job: &JobWrite) -> Result<(), StorageError> {
    match job {
        JobWrite::Schedule {
            id,
            due,
            every_ms,
            payload,
        } => {
            jobs::schedule(
                tx,
                &job_key(id),
                millis(*due),
                every_ms.map(millis),
                payload,
            )
            .await
        }
        JobWrite::Cancel { id } => jobs::cancel(tx, &job_key(id)).await,
        JobWrite::Finish {
            id,
            version,
            next_due,
        } => jobs::finish(tx, &job_key(id), *version, next_due.map(millis)).await,
    }
    .map_err(unavailable)
}

async fn record(tx: &mut Tx, event: &EventRecord) -> Result<(), StorageError> {
    let actor = match event.actor.as_deref().and_then(|a| a.split_once(':')) {
        Some((kind, id)) => Actor {
            kind: kind.to_owned(),
            id: Some(id.to_owned()),
            ..Actor::default()
        },
        None => Actor {
            kind: "plugin".to_owned(),
            id: Some(event.plugin.clone()),
            ..Actor::default()
        },
    };
    let asked = &event.event;
    let data = serde_json::from_str(&asked.data).unwrap_or(serde_json::Value::Null);
    let new = NewEvent {
        org_id: event.organization_id.clone(),
        kind: asked.event_type.clone(),
        category: event.plugin.clone(),
        action: asked.action.clone(),
        audit: asked.audit,
        actor,
        resource_type: asked.resource_type.clone(),
        resource_id: asked.resource_id.clone(),
        data,
    };
    events::record(tx, &new, event.at as i64)
        .await
        .map(|_| ())
        .map_err(unavailable)
}

#[cfg(test)]
mod tests {
    use plateau_plugin_runtime::{BucketId, KvWrite, Namespace, Storage, WriteSet};
    use plateau_store::{Db, db::hold_last_commit};

    use super::SqlStorage;

    fn set(key: &str) -> WriteSet {
        let bucket = BucketId {
            plugin: "echo".to_owned(),
            namespace: Namespace::Global,
        };
        WriteSet {
            plugin: "echo".to_owned(),
            writes: vec![KvWrite::Set {
                bucket,
                key: key.to_owned(),
                value: b"v".to_vec(),
            }],
            ..WriteSet::default()
        }
    }

    async fn stored(db: &Db, key: &str) -> Option<Vec<u8>> {
        plateau_store::plugins::kv_get(db, "echo", "", key)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_request_s_commit_waits_for_its_idempotency_record() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&Db::sqlite_url(dir.path())).await.unwrap();
        let storage = SqlStorage::new(db.clone());
        // Outside a request under a key (jobs, ticks, deliveries, no key):
        // committed at once.
        storage.commit(set("job")).await.unwrap();
        assert_eq!(stored(&db, "job").await.as_deref(), Some(&b"v"[..]));
        // Under a key: held open for the record, kept only once committed.
        let (done, held) = hold_last_commit(storage.commit(set("kept"))).await;
        done.unwrap();
        let tx = held.expect("the plugin's transaction is held");
        assert_eq!(stored(&db, "kept").await, None);
        tx.commit().await.unwrap();
        assert_eq!(stored(&db, "kept").await.as_deref(), Some(&b"v"[..]));
        // A hold that is dropped (the process died first) keeps nothing.
        let (done, held) = hold_last_commit(storage.commit(set("lost"))).await;
        done.unwrap();
        drop(held);
        assert_eq!(stored(&db, "lost").await, None);
        db.close().await;
    }
}
