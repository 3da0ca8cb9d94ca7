//! The per-call key-value overlay: writes are buffered here, the call's own
//! reads see them, and at the end they become one [`WriteSet`] that is
//! committed or dropped.

use std::collections::BTreeMap;
use std::future::Future;
use std::ops::Bound;
use std::sync::Arc;

use crate::storage::{
    BucketId, Claim, Entry, EventRecord, Expectation, JobWrite, KvWrite, Storage, StorageError,
    WriteSet, apply_increment, decode_counter, encode_counter,
};

/// A key-value error the guest sees as a WIT `kv.error` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KvError {
    AccessDenied(String),
    InvalidKey(String),
    TooLarge(String),
    InvalidCursor,
    Unavailable(String),
}

/// Why a key-value call did not return a value to the guest.
#[derive(Debug)]
pub(crate) enum Fail {
    /// A WIT error value for the guest.
    Kv(KvError),
    /// A storage call outlived the call's deadline: the call is aborted.
    Deadline,
}

impl From<KvError> for Fail {
    fn from(e: KvError) -> Self {
        Fail::Kv(e)
    }
}

/// Storage reads bounded by the call's deadline, since epochs do not
/// interrupt host calls.
#[derive(Clone)]
pub(crate) struct Reads {
    pub storage: Arc<dyn Storage>,
    pub deadline: tokio::time::Instant,
}

impl Reads {
    async fn call<T>(&self, fut: impl Future<Output = Result<T, StorageError>>) -> Result<T, Fail> {
        match tokio::time::timeout_at(self.deadline, fut).await {
            Err(_) => Err(Fail::Deadline),
            Ok(Err(e)) => Err(Fail::Kv(KvError::Unavailable(e.to_string()))),
            Ok(Ok(value)) => Ok(value),
        }
    }

    async fn get(&self, bucket: &BucketId, key: &str) -> Result<Option<Vec<u8>>, Fail> {
        self.call(self.storage.get(bucket, key)).await
    }

    /// Applies a claim at once, in its own transaction (kv@0.4.0).
    pub async fn claim(&self, claim: Claim) -> Result<bool, Fail> {
        self.call(self.storage.claim(claim)).await
    }
}

/// What the call did to a key so far.
#[derive(Debug, Clone)]
enum Pending {
    /// Set (`Some`) or deleted (`None`).
    Value(Option<Vec<u8>>),
    /// Incremented by this much on top of the stored counter.
    Delta(i64),
}

/// Buffered writes, expectations and events of one call.
#[derive(Default)]
pub(crate) struct Overlay {
    pending: BTreeMap<(BucketId, String), Pending>,
    writes: Vec<KvWrite>,
    expectations: Vec<Expectation>,
    events: Vec<EventRecord>,
    jobs: Vec<JobWrite>,
    write_bytes: usize,
}

/// The most bytes of values one `list` page returns; a page holds at least
/// one entry.
const PAGE_BYTES: usize = 4 << 20;

fn resolve(pending: &Pending, stored: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match pending {
        Pending::Value(value) => value.clone(),
        Pending::Delta(delta) => match apply_increment(stored.as_deref(), *delta) {
            Some(value) => Some(encode_counter(value)),
            // Changed concurrently to a non-counter: the commit will fail.
            None => stored,
        },
    }
}

impl Overlay {
    pub fn write_count(&self) -> usize {
        self.writes.len()
    }

    /// Bytes of keys and values buffered so far.
    pub fn write_bytes(&self) -> usize {
        self.write_bytes
    }

    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    pub fn push_event(&mut self, event: EventRecord) {
        self.events.push(event);
    }

    /// Buffers a change to durable jobs; it counts against the write budget.
    pub fn push_job(&mut self, job: JobWrite) {
        if let JobWrite::Schedule { id, payload, .. } = &job {
            self.write_bytes += id.key.len() + payload.len();
        }
        self.jobs.push(job);
    }

    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// The call's changes, for [`Storage::commit`].
    pub fn into_write_set(self, plugin: &str) -> WriteSet {
        WriteSet {
            plugin: plugin.to_string(),
            expectations: self.expectations,
            writes: self.writes,
            events: self.events,
            jobs: self.jobs,
        }
    }

    /// Whether the call buffered a write to `key`.
    pub fn has_pending(&self, bucket: &BucketId, key: &str) -> bool {
        self.pending(bucket, key).is_some()
    }

    fn pending(&self, bucket: &BucketId, key: &str) -> Option<&Pending> {
        self.pending.get(&(bucket.clone(), key.to_string()))
    }

    pub async fn get(
        &self,
        reads: &Reads,
        bucket: &BucketId,
        key: &str,
    ) -> Result<Option<Vec<u8>>, Fail> {
        match self.pending(bucket, key) {
            Some(Pending::Value(value)) => Ok(value.clone()),
            Some(pending) => Ok(resolve(pending, reads.get(bucket, key).await?)),
            None => reads.get(bucket, key).await,
        }
    }

    pub fn set(&mut self, bucket: &BucketId, key: &str, value: Vec<u8>) {
        self.write_bytes += key.len() + value.len();
        self.pending.insert(
            (bucket.clone(), key.to_string()),
            Pending::Value(Some(value.clone())),
        );
        self.writes.push(KvWrite::Set {
            bucket: bucket.clone(),
            key: key.to_string(),
            value,
        });
    }

    pub async fn delete(
        &mut self,
        reads: &Reads,
        bucket: &BucketId,
        key: &str,
    ) -> Result<bool, Fail> {
        let existed = self.get(reads, bucket, key).await?.is_some();
        self.pending
            .insert((bucket.clone(), key.to_string()), Pending::Value(None));
        self.writes.push(KvWrite::Delete {
            bucket: bucket.clone(),
            key: key.to_string(),
        });
        Ok(existed)
    }

    pub async fn increment(
        &mut self,
        reads: &Reads,
        bucket: &BucketId,
        key: &str,
        delta: i64,
    ) -> Result<i64, Fail> {
        let current = self.get(reads, bucket, key).await?;
        let not_counter = || {
            KvError::InvalidKey(format!(
                "`{key}` holds a value that is not a signed 64-bit counter, or the sum overflows"
            ))
        };
        let current = match current {
            None => 0,
            Some(bytes) => decode_counter(&bytes).ok_or_else(not_counter)?,
        };
        let new = current.checked_add(delta).ok_or_else(not_counter)?;
        let slot = (bucket.clone(), key.to_string());
        let next = match self.pending.get(&slot) {
            Some(Pending::Value(_)) => Pending::Value(Some(encode_counter(new))),
            Some(Pending::Delta(d)) => Pending::Delta(d.saturating_add(delta)),
            None => Pending::Delta(delta),
        };
        self.pending.insert(slot, next);
        self.write_bytes += key.len();
        self.writes.push(KvWrite::Increment {
            bucket: bucket.clone(),
            key: key.to_string(),
            delta,
        });
        Ok(new)
    }

    pub async fn compare_and_swap(
        &mut self,
        reads: &Reads,
        bucket: &BucketId,
        key: &str,
        expected: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
    ) -> Result<bool, Fail> {
        let pending = self.pending(bucket, key).cloned();
        let stored = match pending {
            Some(Pending::Value(_)) => None,
            _ => Some(reads.get(bucket, key).await?),
        };
        let current = match (&pending, &stored) {
            (Some(p), Some(s)) => resolve(p, s.clone()),
            (Some(p), None) => resolve(p, None),
            (None, Some(s)) => s.clone(),
            (None, None) => None,
        };
        if current != expected {
            return Ok(false);
        }
        // The decision rests on the stored value unless this call already
        // overwrote the key: the commit must see that value unchanged.
        if let Some(stored) = stored {
            self.expectations.push(Expectation {
                bucket: bucket.clone(),
                key: key.to_string(),
                value: stored,
            });
        }
        match new {
            Some(value) => self.set(bucket, key, value),
            None => {
                self.pending
                    .insert((bucket.clone(), key.to_string()), Pending::Value(None));
                self.writes.push(KvWrite::Delete {
                    bucket: bucket.clone(),
                    key: key.to_string(),
                });
            }
        }
        Ok(true)
    }

    /// Pending keys of `bucket` under `prefix`, after `after`, in order.
    fn pending_range<'a>(
        &'a self,
        bucket: &'a BucketId,
        prefix: &'a str,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a String, &'a Pending)> + 'a {
        let lower = match after {
            Some(a) if a >= prefix => Bound::Excluded((bucket.clone(), a.to_string())),
            _ => Bound::Included((bucket.clone(), prefix.to_string())),
        };
        self.pending
            .range((lower, Bound::Unbounded))
            .take_while(move |((b, k), _)| b == bucket && k.starts_with(prefix))
            .map(|((_, k), p)| (k, p))
    }

    /// Up to `limit` entries after `after`, storage and pending writes
    /// merged; the flag says whether more may follow.
    pub async fn list(
        &self,
        reads: &Reads,
        bucket: &BucketId,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Entry>, bool), Fail> {
        // Pending deletes can hide at most this many stored entries, so
        // fetching this many more still yields `limit` if they exist.
        let pending: Vec<(&String, &Pending)> = self.pending_range(bucket, prefix, after).collect();
        let fetch = limit.saturating_add(pending.len() as u32);
        let stored = reads
            .call(reads.storage.list(bucket, prefix, after, fetch))
            .await?;
        let stored_full = stored.len() as u32 == fetch;
        let last_stored = stored.last().map(|e| e.key.clone());

        let mut merged: BTreeMap<String, Option<Vec<u8>>> =
            stored.into_iter().map(|e| (e.key, Some(e.value))).collect();
        for (key, p) in pending {
            // Beyond the last stored key of a full page, storage may hold
            // keys we have not seen: stop there to keep the order right.
            if stored_full && last_stored.as_ref().is_some_and(|last| key > last) {
                break;
            }
            let stored = match (p, merged.get(key)) {
                (Pending::Value(_), _) => None,
                (Pending::Delta(_), Some(value)) => value.clone(),
                (Pending::Delta(_), None) => reads.get(bucket, key).await?,
            };
            merged.insert(key.clone(), resolve(p, stored));
        }
        let live: Vec<Entry> = merged
            .into_iter()
            .filter_map(|(key, value)| value.map(|value| Entry { key, value }))
            .collect();
        let mut more = stored_full || live.len() > limit as usize;
        let mut page = Vec::new();
        let mut bytes = 0;
        for entry in live.into_iter().take(limit as usize) {
            bytes += entry.key.len() + entry.value.len();
            if bytes > PAGE_BYTES && !page.is_empty() {
                more = true;
                break;
            }
            page.push(entry);
        }
        Ok((page, more))
    }

    pub async fn count(&self, reads: &Reads, bucket: &BucketId, prefix: &str) -> Result<u64, Fail> {
        let mut count = reads.call(reads.storage.count(bucket, prefix)).await? as i64;
        for (key, p) in self.pending_range(bucket, prefix, None) {
            let stored = reads.get(bucket, key).await?;
            let existed = stored.is_some() as i64;
            let exists = resolve(p, stored).is_some() as i64;
            count += exists - existed;
        }
        Ok(count.max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryStore;
    use crate::storage::Namespace;

    fn bucket() -> BucketId {
        BucketId {
            plugin: "p".into(),
            namespace: Namespace::Global,
        }
    }

    async fn stored(keys: &[&str]) -> (Reads, Arc<MemoryStore>) {
        let store = Arc::new(MemoryStore::new());
        let writes = keys
            .iter()
            .map(|k| KvWrite::Set {
                bucket: bucket(),
                key: k.to_string(),
                value: k.as_bytes().to_vec(),
            })
            .collect();
        store
            .commit(WriteSet {
                writes,
                ..WriteSet::default()
            })
            .await
            .unwrap();
        let reads = Reads {
            storage: store.clone(),
            deadline: tokio::time::Instant::now() + std::time::Duration::from_secs(60),
        };
        (reads, store)
    }

    fn keys(entries: &[Entry]) -> Vec<&str> {
        entries.iter().map(|e| e.key.as_str()).collect()
    }

    #[tokio::test]
    async fn lists_merge_pending_writes_in_order() {
        let (reads, _store) = stored(&["a", "b", "c", "d"]).await;
        let mut overlay = Overlay::default();
        let b = bucket();
        overlay.delete(&reads, &b, "a").await.unwrap();
        overlay.delete(&reads, &b, "b").await.unwrap();
        overlay.set(&b, "bb", b"new".to_vec());
        overlay.increment(&reads, &b, "n", 5).await.unwrap();

        let (page, more) = overlay.list(&reads, &b, "", None, 2).await.unwrap();
        assert_eq!((keys(&page), more), (vec!["bb", "c"], true));
        let (page, more) = overlay.list(&reads, &b, "", Some("c"), 10).await.unwrap();
        assert_eq!((keys(&page), more), (vec!["d", "n"], false));
        assert_eq!(page[1].value, b"5");
        assert_eq!(overlay.count(&reads, &b, "").await.unwrap(), 4);
        assert_eq!(overlay.count(&reads, &b, "b").await.unwrap(), 1);
    }

    #[tokio::test]
    async fn compare_and_swap_records_what_it_saw_in_storage() {
        let (reads, _store) = stored(&["k"]).await;
        let mut overlay = Overlay::default();
        let b = bucket();
        assert!(
            !overlay
                .compare_and_swap(&reads, &b, "k", None, Some(b"x".to_vec()))
                .await
                .unwrap()
        );
        assert!(
            overlay
                .compare_and_swap(&reads, &b, "k", Some(b"k".to_vec()), Some(b"x".to_vec()))
                .await
                .unwrap()
        );
        // Against its own write, no further expectation is needed.
        assert!(
            overlay
                .compare_and_swap(&reads, &b, "k", Some(b"x".to_vec()), None)
                .await
                .unwrap()
        );
        let set = overlay.into_write_set("p");
        assert_eq!(set.expectations.len(), 1);
        assert_eq!(set.expectations[0].value, Some(b"k".to_vec()));
        assert_eq!(set.writes.len(), 2);
    }

    #[tokio::test]
    async fn increments_read_through_and_stay_deltas() {
        let (reads, store) = stored(&[]).await;
        let b = bucket();
        store
            .commit(WriteSet {
                writes: vec![KvWrite::Set {
                    bucket: b.clone(),
                    key: "n".into(),
                    value: encode_counter(10),
                }],
                ..WriteSet::default()
            })
            .await
            .unwrap();
        let mut overlay = Overlay::default();
        assert_eq!(overlay.increment(&reads, &b, "n", 2).await.unwrap(), 12);
        assert_eq!(overlay.increment(&reads, &b, "n", 3).await.unwrap(), 15);
        assert_eq!(
            overlay.get(&reads, &b, "n").await.unwrap(),
            Some(b"15".to_vec())
        );
        let set = overlay.into_write_set("p");
        assert!(
            set.writes
                .iter()
                .all(|w| matches!(w, KvWrite::Increment { .. }))
        );
    }
}
