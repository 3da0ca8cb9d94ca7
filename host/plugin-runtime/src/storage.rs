//! The storage trait the host implements on its database, and the shapes it
//! deals in: buckets, entries and the write set a request commits.
//!
//! A plugin's reads go straight to [`Storage::get`], [`Storage::list`] and
//! [`Storage::count`]; its writes and events are buffered by the runtime and
//! reach storage in one [`Storage::commit`] at the end of the call, or not at
//! all.

use async_trait::async_trait;

/// Whose data a bucket holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Namespace {
    /// One organisation's data.
    Organization(String),
    /// Data of the plugin shared across organisations.
    Global,
}

/// A bucket: the key space of one plugin in one namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BucketId {
    pub plugin: String,
    pub namespace: Namespace,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: Vec<u8>,
}

/// One buffered key-value write, applied in order at commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvWrite {
    Set {
        bucket: BucketId,
        key: String,
        value: Vec<u8>,
    },
    Delete {
        bucket: BucketId,
        key: String,
    },
    /// Add `delta` to the counter at `key` as it is at commit time (absent is
    /// 0), so concurrent increments all count. Counters are stored as
    /// [`encode_counter`] writes them.
    Increment {
        bucket: BucketId,
        key: String,
        delta: i64,
    },
}

/// A value a compare-and-swap saw: the commit must fail with
/// [`StorageError::Conflict`] unless `key` still holds `value` (`None`:
/// absent) before any write of the set is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    pub bucket: BucketId,
    pub key: String,
    pub value: Option<Vec<u8>>,
}

/// A compare-and-swap applied at once, in a transaction of its own: `key`
/// becomes `new` (`None` deletes) if it holds `expected` (`None`: absent),
/// and then `then` is applied in the same transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub bucket: BucketId,
    pub key: String,
    pub expected: Option<Vec<u8>>,
    pub new: Option<Vec<u8>>,
    /// Sets and deletes that change with the key.
    pub then: Vec<KvWrite>,
}

/// An event a plugin emitted, recorded with the request's writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    pub plugin: String,
    /// The organisation it is recorded for: the event's own, or the caller's.
    pub organization_id: String,
    /// The event as the plugin asked, checked.
    pub event: plateau_contract::NewEvent,
    /// `user:<id>` or `token:<id>` of the request, if any.
    pub actor: Option<String>,
    /// Milliseconds since the Unix epoch, from the host clock.
    pub at: u64,
}

/// What a durable job is: one the plugin scheduled through the `scheduler`
/// interface, or a tick of a schedule from its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobKind {
    Job,
    Tick,
}

impl JobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Job => "job",
            JobKind::Tick => "tick",
        }
    }
}

/// A durable job's identity: plugin and namespace (the bucket), kind and key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId {
    pub bucket: BucketId,
    pub kind: JobKind,
    pub key: String,
}

/// One buffered change to durable jobs, applied in order at commit with the
/// call's key-value writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobWrite {
    /// Create the job, or replace its due time, interval and payload (which
    /// also resets its attempts and any lease on it).
    Schedule {
        id: JobId,
        /// Milliseconds since the Unix epoch.
        due: u64,
        every_ms: Option<u64>,
        payload: String,
    },
    /// Remove the job if it exists.
    Cancel { id: JobId },
    /// The end of a successful run of the job as it was when claimed
    /// (`version`): reschedule it at `next_due`, or remove it when `None`.
    /// Does nothing if the job was scheduled again since the claim, so a
    /// replacement made meanwhile (by the run itself, too) stands.
    Finish {
        id: JobId,
        version: i64,
        next_due: Option<u64>,
    },
}

/// Everything one call of a plugin changes, committed atomically.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSet {
    pub plugin: String,
    /// Checked first; any that no longer holds fails the whole commit.
    pub expectations: Vec<Expectation>,
    /// Applied in order.
    pub writes: Vec<KvWrite>,
    pub events: Vec<EventRecord>,
    /// Applied in order, after the key-value writes.
    pub jobs: Vec<JobWrite>,
}

impl WriteSet {
    pub fn is_empty(&self) -> bool {
        self.expectations.is_empty()
            && self.writes.is_empty()
            && self.events.is_empty()
            && self.jobs.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// A compare-and-swap expectation no longer holds; nothing was written.
    #[error("`{key}` was changed concurrently")]
    Conflict { key: String },
    /// An increment met a value that is not a counter, or overflowed;
    /// nothing was written.
    #[error("`{key}` does not hold a signed 64-bit counter, or it would overflow")]
    NotACounter { key: String },
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
}

/// Plugin key-value data and events, implemented by the host on its database.
///
/// Keys are compared as bytes. Implementations must make [`Storage::commit`]
/// atomic: either every expectation holds and every write and event is
/// recorded, or nothing is.
///
/// A request's commit may end in a transaction the host keeps open until
/// the response is known, to record it for `Idempotency-Key` replays in the
/// same commit; the client sees the response only after that commit, and a
/// crash before it keeps neither the writes nor the record. The runtime
/// makes no other call to storage for the request after
/// [`Storage::commit`].
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    async fn get(&self, bucket: &BucketId, key: &str) -> Result<Option<Vec<u8>>, StorageError>;

    /// Up to `limit` entries whose key starts with `prefix` and sorts after
    /// `after` (when given), in key order.
    async fn list(
        &self,
        bucket: &BucketId,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Entry>, StorageError>;

    /// The number of keys starting with `prefix`.
    async fn count(&self, bucket: &BucketId, prefix: &str) -> Result<u64, StorageError>;

    async fn commit(&self, writes: WriteSet) -> Result<(), StorageError>;

    /// Applies `claim` now and commits it alone (never held open for an
    /// idempotency record): `Ok(false)` when the key did not hold what the
    /// claim expected, and then nothing was written. It must serialise
    /// with [`Storage::commit`]'s expectations on the same key, across
    /// processes sharing the database too.
    async fn claim(&self, claim: Claim) -> Result<bool, StorageError>;
}

/// The stored form of a counter: its decimal digits.
pub fn encode_counter(value: i64) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// Reads a counter written by [`encode_counter`].
pub fn decode_counter(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// Applies `delta` to the counter stored as `current`: the rule every
/// [`Storage::commit`] follows for [`KvWrite::Increment`].
pub fn apply_increment(current: Option<&[u8]>, delta: i64) -> Option<i64> {
    let base = match current {
        None => 0,
        Some(bytes) => decode_counter(bytes)?,
    };
    base.checked_add(delta)
}
