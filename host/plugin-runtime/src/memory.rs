//! [`MemoryStore`]: the in-memory [`Storage`], for tests and the SDK's test
//! harness.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;

use crate::storage::{
    BucketId, Claim, Entry, EventRecord, Expectation, JobId, JobWrite, KvWrite, Storage,
    StorageError, WriteSet, apply_increment, encode_counter,
};

/// A durable job as the memory store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredJob {
    pub due: u64,
    pub every_ms: Option<u64>,
    pub payload: String,
    /// Grows on every `Schedule`, as a claim's version.
    pub version: i64,
}

#[derive(Default)]
struct Data {
    buckets: HashMap<BucketId, BTreeMap<String, Vec<u8>>>,
    events: Vec<EventRecord>,
    jobs: BTreeMap<JobId, StoredJob>,
    job_versions: i64,
}

impl Data {
    fn apply_job(&mut self, write: JobWrite) {
        match write {
            JobWrite::Schedule {
                id,
                due,
                every_ms,
                payload,
            } => {
                self.job_versions += 1;
                let version = self.job_versions;
                self.jobs.insert(
                    id,
                    StoredJob {
                        due,
                        every_ms,
                        payload,
                        version,
                    },
                );
            }
            JobWrite::Cancel { id } => {
                self.jobs.remove(&id);
            }
            JobWrite::Finish {
                id,
                version,
                next_due,
            } => {
                if self.jobs.get(&id).is_some_and(|j| j.version == version) {
                    match next_due {
                        Some(due) => self.jobs.get_mut(&id).expect("checked").due = due,
                        None => {
                            self.jobs.remove(&id);
                        }
                    }
                }
            }
        }
    }
}

/// Key-value data and events in memory; commits are serialised by a lock.
#[derive(Default)]
pub struct MemoryStore {
    data: Mutex<Data>,
    commits: AtomicU64,
    unavailable: AtomicBool,
}

impl MemoryStore {
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// Every event committed so far, oldest first.
    pub fn events(&self) -> Vec<EventRecord> {
        self.lock().events.clone()
    }

    /// Every durable job, by identity.
    pub fn jobs(&self) -> BTreeMap<JobId, StoredJob> {
        self.lock().jobs.clone()
    }

    /// How many non-empty write sets were committed.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// Makes every call fail with [`StorageError::Unavailable`], or not.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::SeqCst);
    }

    /// A value as committed, bypassing any plugin.
    pub fn value(&self, bucket: &BucketId, key: &str) -> Option<Vec<u8>> {
        self.lock().buckets.get(bucket)?.get(key).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Data> {
        // A panic while holding the lock leaves consistent data: every
        // commit is validated before it changes anything.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check(&self) -> Result<(), StorageError> {
        if self.unavailable.load(Ordering::SeqCst) {
            return Err(StorageError::Unavailable(
                "the memory store is switched off".into(),
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl Storage for MemoryStore {
    async fn get(&self, bucket: &BucketId, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.check()?;
        Ok(self.value(bucket, key))
    }

    async fn list(
        &self,
        bucket: &BucketId,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Entry>, StorageError> {
        self.check()?;
        let data = self.lock();
        let Some(entries) = data.buckets.get(bucket) else {
            return Ok(Vec::new());
        };
        Ok(entries
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(k, _)| after.is_none_or(|a| k.as_str() > a))
            .take(limit as usize)
            .map(|(k, v)| Entry {
                key: k.clone(),
                value: v.clone(),
            })
            .collect())
    }

    async fn count(&self, bucket: &BucketId, prefix: &str) -> Result<u64, StorageError> {
        self.check()?;
        let data = self.lock();
        Ok(data.buckets.get(bucket).map_or(0, |entries| {
            entries
                .range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .count() as u64
        }))
    }

    async fn commit(&self, set: WriteSet) -> Result<(), StorageError> {
        self.check()?;
        let mut data = self.lock();
        for expectation in &set.expectations {
            let current = data
                .buckets
                .get(&expectation.bucket)
                .and_then(|b| b.get(&expectation.key));
            if current != expectation.value.as_ref() {
                return Err(StorageError::Conflict {
                    key: expectation.key.clone(),
                });
            }
        }
        // Apply to a copy of the touched buckets so a bad increment leaves
        // nothing half-written.
        let mut touched: HashMap<BucketId, BTreeMap<String, Vec<u8>>> = HashMap::new();
        for write in &set.writes {
            let bucket = match write {
                KvWrite::Set { bucket, .. }
                | KvWrite::Delete { bucket, .. }
                | KvWrite::Increment { bucket, .. } => bucket,
            };
            let entries = touched
                .entry(bucket.clone())
                .or_insert_with(|| data.buckets.get(bucket).cloned().unwrap_or_default());
            match write {
                KvWrite::Set { key, value, .. } => {
                    entries.insert(key.clone(), value.clone());
                }
                KvWrite::Delete { key, .. } => {
                    entries.remove(key);
                }
                KvWrite::Increment { key, delta, .. } => {
                    let next = apply_increment(entries.get(key).map(Vec::as_slice), *delta)
                        .ok_or_else(|| StorageError::NotACounter { key: key.clone() })?;
                    entries.insert(key.clone(), encode_counter(next));
                }
            }
        }
        data.buckets.extend(touched);
        data.events.extend(set.events);
        for job in set.jobs {
            data.apply_job(job);
        }
        self.commits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn claim(&self, claim: Claim) -> Result<bool, StorageError> {
        let swap = match claim.new {
            Some(value) => KvWrite::Set {
                bucket: claim.bucket.clone(),
                key: claim.key.clone(),
                value,
            },
            None => KvWrite::Delete {
                bucket: claim.bucket.clone(),
                key: claim.key.clone(),
            },
        };
        let set = WriteSet {
            plugin: claim.bucket.plugin.clone(),
            expectations: vec![Expectation {
                bucket: claim.bucket,
                key: claim.key,
                value: claim.expected,
            }],
            writes: std::iter::once(swap).chain(claim.then).collect(),
            ..WriteSet::default()
        };
        match self.commit(set).await {
            Ok(()) => Ok(true),
            Err(StorageError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
