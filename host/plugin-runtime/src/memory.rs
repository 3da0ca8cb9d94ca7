//! [`MemoryStore`]: the in-memory [`Storage`], for tests and the SDK's test
//! harness.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;

use crate::storage::{
    BucketId, Entry, EventRecord, KvWrite, Storage, StorageError, WriteSet, apply_increment,
    encode_counter,
};

#[derive(Default)]
struct Data {
    buckets: HashMap<BucketId, BTreeMap<String, Vec<u8>>>,
    events: Vec<EventRecord>,
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
        self.commits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
