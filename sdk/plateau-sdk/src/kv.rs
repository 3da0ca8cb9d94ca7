//! Typed access to the plugin's key-value storage (`kv` bucket resource).
//!
//! Values are bytes to the host; [`Bucket::get`] and [`Bucket::set`] store
//! them as JSON. Writes made while serving a request are committed together
//! when the handler answers below 500 and discarded otherwise, so a handler
//! that fails half-way should return an error of status 500 or more.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::sys;

pub use plateau_contract::Namespace;

/// A key-value failure. Converts into [`ApiError`] so handlers can use `?`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvError {
    /// The namespace may not be opened from this context.
    #[error("key-value namespace refused: {0}")]
    AccessDenied(String),
    /// Keys are 1 to 512 bytes of UTF-8 without control characters.
    #[error("key is not valid: {0}")]
    InvalidKey(String),
    /// A value is at most 1 MiB.
    #[error("value is too large: {0}")]
    TooLarge(String),
    /// A cursor that the host did not issue for this prefix.
    #[error("cursor is not valid for this list")]
    InvalidCursor,
    /// The host's storage failed; the request should answer 503.
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    /// A stored value is not the JSON the plugin expected, or a value did
    /// not serialize (raised by this SDK, not the host).
    #[error("value at key {key} is not the expected json: {message}")]
    Json { key: String, message: String },
}

impl From<KvError> for ApiError {
    fn from(error: KvError) -> ApiError {
        match error {
            KvError::InvalidKey(why) => {
                ApiError::bad_request(format!("identifier is not usable as a key: {why}"))
            }
            KvError::TooLarge(why) => {
                ApiError::payload_too_large(format!("value is over the 1 MiB limit: {why}"))
            }
            KvError::InvalidCursor => ApiError::invalid_cursor(),
            KvError::Unavailable(why) => {
                ApiError::unavailable(format!("storage is unavailable, retry later: {why}"))
            }
            e @ (KvError::AccessDenied(_) | KvError::Json { .. }) => {
                ApiError::internal(e.to_string())
            }
        }
    }
}

/// One stored key and its raw value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: Vec<u8>,
}

impl Entry {
    /// The value parsed as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, KvError> {
        from_json(&self.key, &self.value)
    }
}

/// One page of [`Bucket::list`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KvPage {
    pub entries: Vec<Entry>,
    /// Opaque, issued by the host; pass it back to continue.
    pub next_cursor: Option<String>,
}

/// An open bucket of one namespace.
#[derive(Debug)]
pub struct Bucket {
    raw: sys::RawBucket,
}

impl Bucket {
    pub fn open(namespace: Namespace) -> Result<Bucket, KvError> {
        sys::RawBucket::open(&namespace).map(|raw| Bucket { raw })
    }

    /// The caller's organisation's bucket: the usual one in a handler.
    pub fn caller() -> Result<Bucket, KvError> {
        Self::open(Namespace::Caller)
    }

    pub fn organization(id: impl Into<String>) -> Result<Bucket, KvError> {
        Self::open(Namespace::Organization(id.into()))
    }

    pub fn global() -> Result<Bucket, KvError> {
        Self::open(Namespace::Global)
    }

    /// The JSON value at `key`, if any.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KvError> {
        self.get_raw(key)?
            .map(|bytes| from_json(key, &bytes))
            .transpose()
    }

    /// Stores `value` as JSON at `key`.
    pub fn set<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<(), KvError> {
        self.set_raw(key, &to_json(key, value)?)
    }

    /// The bytes at `key`, if any. A key no key can be (control
    /// characters, too long) holds nothing: a name taken from a request's
    /// path reads as absent (a 404), not as a bad request. Writing one is
    /// still refused.
    pub fn get_raw(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        match self.raw.get(key) {
            Err(KvError::InvalidKey(_)) => Ok(None),
            found => found,
        }
    }

    pub fn set_raw(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.raw.set(key, value)
    }

    /// Removes `key`; true if it existed (never, for a key no key can be).
    pub fn delete(&self, key: &str) -> Result<bool, KvError> {
        match self.raw.delete(key) {
            Err(KvError::InvalidKey(_)) => Ok(false),
            done => done,
        }
    }

    /// Keys starting with `prefix` in byte order, `limit` at most, after
    /// `cursor` (a `next_cursor` of an earlier page of the same prefix).
    pub fn list(&self, prefix: &str, cursor: Option<&str>, limit: u32) -> Result<KvPage, KvError> {
        self.raw.list(prefix, cursor, limit)
    }

    /// Every entry under `prefix`, following cursors; for small sets only.
    pub fn list_all(&self, prefix: &str) -> Result<Vec<Entry>, KvError> {
        let mut entries = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list(prefix, cursor.as_deref(), crate::MAX_LIMIT)?;
            entries.extend(page.entries);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(entries),
            }
        }
    }

    /// How many keys start with `prefix`.
    pub fn count(&self, prefix: &str) -> Result<u64, KvError> {
        self.raw.count(prefix)
    }

    /// Sets `key` to `new` (`None` deletes) only if it holds exactly
    /// `expected` (`None`: absent). False when it did not.
    pub fn compare_and_swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<bool, KvError> {
        self.raw.compare_and_swap(key, expected, new)
    }

    /// Stores `value` at `key` only if the key is absent; false if taken.
    pub fn insert_new<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<bool, KvError> {
        self.compare_and_swap(key, None, Some(&to_json(key, value)?))
    }

    /// Reads the JSON value at `key`, lets `change` compute the new one
    /// (`None` deletes) and writes it with compare-and-swap, retrying when a
    /// concurrent writer got there first. Returns what was written. Fails
    /// with 409 `conflict` after 8 lost races.
    pub fn update<T, F>(&self, key: &str, mut change: F) -> Result<Option<T>, ApiError>
    where
        T: Serialize + DeserializeOwned,
        F: FnMut(Option<T>) -> Result<Option<T>, ApiError>,
    {
        for _ in 0..8 {
            let current = self.get_raw(key)?;
            let value = current
                .as_deref()
                .map(|bytes| from_json(key, bytes))
                .transpose()?;
            let next = change(value)?;
            let encoded = next.as_ref().map(|v| to_json(key, v)).transpose()?;
            if self.compare_and_swap(key, current.as_deref(), encoded.as_deref())? {
                return Ok(next);
            }
        }
        Err(ApiError::conflict(format!(
            "{key} is being changed concurrently: retry the request"
        )))
    }

    /// Adds `delta` to the signed counter at `key` (absent is 0) and returns
    /// the new value.
    pub fn increment(&self, key: &str, delta: i64) -> Result<i64, KvError> {
        self.raw.increment(key, delta)
    }

    /// A compare-and-swap committed at once, in a transaction of its own,
    /// together with `then` (sets, or deletes for `None`): false when `key`
    /// did not hold `expected`, and nothing was written. A lost race is not
    /// a conflict at the end of the request: move on to another candidate
    /// (a work queue's SKIP LOCKED).
    ///
    /// **Not rolled back**: what a claim writes stays even when the handler
    /// then fails or answers 500 or more, so claim only what is safe to
    /// keep on its own (a lease that expires). Claiming a key this call has
    /// already written (`set`, `delete`, ...) is `InvalidKey`. kv@0.4.0.
    pub fn claim(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        then: &[(String, Option<Vec<u8>>)],
    ) -> Result<bool, KvError> {
        self.raw.claim(key, expected, new, then)
    }

    /// Parks the call until a write under `prefix` commits in this bucket
    /// (true), or `timeout_ms` (at most 20,000) passes (false). True may
    /// also mean "read again": the host re-checks about once a second for
    /// writes of other hosts. The call parks for at most 20 s in all, and
    /// the time parked does not count against its deadline. In native
    /// tests nothing runs meanwhile, so it returns false at once. kv@0.4.0.
    pub fn wait(&self, prefix: &str, timeout_ms: u32) -> Result<bool, KvError> {
        self.raw.wait(prefix, timeout_ms)
    }
}

fn from_json<T: DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, KvError> {
    serde_json::from_slice(bytes).map_err(|e| KvError::Json {
        key: key.to_owned(),
        message: e.to_string(),
    })
}

fn to_json<T: Serialize + ?Sized>(key: &str, value: &T) -> Result<Vec<u8>, KvError> {
    serde_json::to_vec(value).map_err(|e| KvError::Json {
        key: key.to_owned(),
        message: e.to_string(),
    })
}
