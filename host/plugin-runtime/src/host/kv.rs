//! The `kv` capability: buckets scoped to (plugin, namespace), read through
//! the call's overlay, written into it.

use wasmtime::component::{HasSelf, Linker, Resource};

use crate::bindings::v0_1::plateau::plugin::kv as v0_1;
use crate::bindings::v0_2::plateau::plugin::kv as v0_2;
use crate::overlay::{Fail, KvError};
use crate::state::{Phase, State};
use crate::storage::{BucketId, Namespace};

/// Keys are 1 to 512 bytes of UTF-8 without control characters.
const MAX_KEY: usize = 512;
/// Values are at most 1 MiB.
const MAX_VALUE: usize = 1 << 20;
/// The most entries one `list` returns.
const MAX_LIMIT: u32 = 200;

/// An open bucket, as the guest's `bucket` resource.
pub struct BucketHandle {
    bucket: BucketId,
}

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<State, HasSelf<State>>(linker, |s| s)?;
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

fn check_key(key: &str) -> Result<(), KvError> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(KvError::InvalidKey(format!(
            "a key is 1 to {MAX_KEY} bytes, not {}",
            key.len()
        )));
    }
    check_text(key)
}

fn check_prefix(prefix: &str) -> Result<(), KvError> {
    if prefix.len() > MAX_KEY {
        return Err(KvError::InvalidKey(format!(
            "a prefix is at most {MAX_KEY} bytes"
        )));
    }
    check_text(prefix)
}

fn check_text(text: &str) -> Result<(), KvError> {
    if text.chars().any(char::is_control) {
        return Err(KvError::InvalidKey(
            "keys may not contain control characters".into(),
        ));
    }
    Ok(())
}

fn check_value(value: &[u8]) -> Result<(), KvError> {
    if value.len() > MAX_VALUE {
        return Err(KvError::TooLarge(format!(
            "a value is at most {MAX_VALUE} bytes, not {}",
            value.len()
        )));
    }
    Ok(())
}

/// The list name a kv cursor is bound to.
fn cursor_list(bucket: &BucketId, prefix: &str) -> String {
    match &bucket.namespace {
        Namespace::Organization(org) => format!("kv:org:{org}:{prefix}"),
        Namespace::Global => format!("kv:global:{prefix}"),
    }
}

impl State {
    /// Resolves a namespace under the rules of the WIT: `caller` needs a
    /// caller organisation, `organization(id)` is allowed only without one or
    /// for the caller's own.
    pub(crate) fn open_bucket(&self, ns: Namespace0) -> Result<BucketId, KvError> {
        if self.phase == Phase::Describe {
            return Err(KvError::AccessDenied(
                "key-value data is not available in describe".into(),
            ));
        }
        let namespace = match (ns, self.caller_org()) {
            (Namespace0::Caller, Some(org)) => Namespace::Organization(org.to_string()),
            (Namespace0::Caller, None) => {
                return Err(KvError::AccessDenied(
                    "this call has no caller organisation; open organization(id) or global".into(),
                ));
            }
            (Namespace0::Organization(id), _) if id.is_empty() => {
                return Err(KvError::AccessDenied("the organisation id is empty".into()));
            }
            (Namespace0::Organization(id), None) => Namespace::Organization(id),
            (Namespace0::Organization(id), Some(org)) if id == org => Namespace::Organization(id),
            (Namespace0::Organization(_), Some(_)) => {
                return Err(KvError::AccessDenied(
                    "a request may open only its caller's organisation".into(),
                ));
            }
            (Namespace0::Global, _) => Namespace::Global,
        };
        Ok(BucketId {
            plugin: self.plugin.name.clone(),
            namespace,
        })
    }

    fn bucket_of(&self, handle: &Resource<BucketHandle>) -> wasmtime::Result<BucketId> {
        Ok(self.table.get(handle)?.bucket.clone())
    }

    /// Refuses a write of `bytes` (key and value) beyond the call's budget.
    fn check_write_budget(&self, bytes: usize) -> Result<(), KvError> {
        let limits = &self.plugin.settings.limits;
        if self.overlay.write_count() >= limits.max_writes {
            let max = limits.max_writes;
            return Err(KvError::TooLarge(format!(
                "a call may make at most {max} writes"
            )));
        }
        if self.overlay.write_bytes() + bytes > limits.max_write_bytes {
            let max = limits.max_write_bytes;
            return Err(KvError::TooLarge(format!(
                "a call may write at most {max} bytes"
            )));
        }
        Ok(())
    }

    /// Turns a kv outcome into what the generated bindings return.
    fn finish<T, E: From<KvError>>(
        &mut self,
        result: Result<T, Fail>,
    ) -> wasmtime::Result<Result<T, E>> {
        match result {
            Ok(value) => Ok(Ok(value)),
            Err(Fail::Kv(e)) => Ok(Err(e.into())),
            Err(Fail::Deadline) => Err(self.deadline_trap()),
        }
    }
}

/// The namespace as the guest named it, before the access rules.
pub(crate) enum Namespace0 {
    Caller,
    Organization(String),
    Global,
}
/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($module:ident, $version:ident) => {
        mod $module {
            use super::$version as wit;
            use super::*;

            impl From<wit::Namespace> for Namespace0 {
                fn from(ns: wit::Namespace) -> Self {
                    match ns {
                        wit::Namespace::Caller => Namespace0::Caller,
                        wit::Namespace::Organization(id) => Namespace0::Organization(id),
                        wit::Namespace::Global => Namespace0::Global,
                    }
                }
            }

            impl From<KvError> for wit::Error {
                fn from(e: KvError) -> Self {
                    match e {
                        KvError::AccessDenied(m) => wit::Error::AccessDenied(m),
                        KvError::InvalidKey(m) => wit::Error::InvalidKey(m),
                        KvError::TooLarge(m) => wit::Error::TooLarge(m),
                        KvError::InvalidCursor => wit::Error::InvalidCursor,
                        KvError::Unavailable(m) => wit::Error::Unavailable(m),
                    }
                }
            }

            type Answer<T> = wasmtime::Result<Result<T, wit::Error>>;

            impl wit::Host for State {}

            impl wit::HostBucket for State {
                async fn open(&mut self, ns: wit::Namespace) -> Answer<Resource<BucketHandle>> {
                    match self.open_bucket(ns.into()) {
                        Ok(bucket) => Ok(Ok(self.table.push(BucketHandle { bucket })?)),
                        Err(e) => Ok(Err(e.into())),
                    }
                }

                async fn get(
                    &mut self,
                    this: Resource<BucketHandle>,
                    key: String,
                ) -> Answer<Option<Vec<u8>>> {
                    let bucket = self.bucket_of(&this)?;
                    let result = match check_key(&key) {
                        Ok(()) => self.overlay.get(&self.reads, &bucket, &key).await,
                        Err(e) => Err(e.into()),
                    };
                    self.finish(result)
                }

                async fn set(
                    &mut self,
                    this: Resource<BucketHandle>,
                    key: String,
                    value: Vec<u8>,
                ) -> Answer<()> {
                    let bucket = self.bucket_of(&this)?;
                    let checked = check_key(&key)
                        .and_then(|()| check_value(&value))
                        .and_then(|()| self.check_write_budget(key.len() + value.len()));
                    let result = checked.map(|()| self.overlay.set(&bucket, &key, value));
                    self.finish(result.map_err(Fail::from))
                }

                async fn delete(
                    &mut self,
                    this: Resource<BucketHandle>,
                    key: String,
                ) -> Answer<bool> {
                    let bucket = self.bucket_of(&this)?;
                    let result =
                        match check_key(&key).and_then(|()| self.check_write_budget(key.len())) {
                            Ok(()) => self.overlay.delete(&self.reads, &bucket, &key).await,
                            Err(e) => Err(e.into()),
                        };
                    self.finish(result)
                }

                async fn list(
                    &mut self,
                    this: Resource<BucketHandle>,
                    prefix: String,
                    cursor: Option<String>,
                    limit: u32,
                ) -> Answer<wit::Page> {
                    let bucket = self.bucket_of(&this)?;
                    if let Err(e) = check_prefix(&prefix) {
                        return Ok(Err(e.into()));
                    }
                    let scope = self.cursor_scope();
                    let codec = self.plugin.services.cursors.clone();
                    let list_name = cursor_list(&bucket, &prefix);
                    let after = match cursor {
                        None => None,
                        Some(c) => match codec.decode(&scope, &list_name, &c) {
                            Ok(position) => Some(position),
                            Err(_) => return Ok(Err(KvError::InvalidCursor.into())),
                        },
                    };
                    let limit = limit.clamp(1, MAX_LIMIT);
                    let result = self
                        .overlay
                        .list(&self.reads, &bucket, &prefix, after.as_deref(), limit)
                        .await
                        .map(|(entries, more)| {
                            let next_cursor = match (more, entries.last()) {
                                (true, Some(last)) => {
                                    Some(codec.encode(&scope, &list_name, &last.key))
                                }
                                _ => None,
                            };
                            wit::Page {
                                entries: entries
                                    .into_iter()
                                    .map(|e| wit::Entry {
                                        key: e.key,
                                        value: e.value,
                                    })
                                    .collect(),
                                next_cursor,
                            }
                        });
                    self.finish(result)
                }

                async fn count(
                    &mut self,
                    this: Resource<BucketHandle>,
                    prefix: String,
                ) -> Answer<u64> {
                    let bucket = self.bucket_of(&this)?;
                    let result = match check_prefix(&prefix) {
                        Ok(()) => self.overlay.count(&self.reads, &bucket, &prefix).await,
                        Err(e) => Err(e.into()),
                    };
                    self.finish(result)
                }

                async fn compare_and_swap(
                    &mut self,
                    this: Resource<BucketHandle>,
                    key: String,
                    expected: Option<Vec<u8>>,
                    new: Option<Vec<u8>>,
                ) -> Answer<bool> {
                    let bucket = self.bucket_of(&this)?;
                    let checked = check_key(&key)
                        .and_then(|()| new.as_deref().map_or(Ok(()), check_value))
                        .and_then(|()| {
                            self.check_write_budget(key.len() + new.as_ref().map_or(0, Vec::len))
                        });
                    let result = match checked {
                        Ok(()) => {
                            self.overlay
                                .compare_and_swap(&self.reads, &bucket, &key, expected, new)
                                .await
                        }
                        Err(e) => Err(e.into()),
                    };
                    self.finish(result)
                }

                async fn increment(
                    &mut self,
                    this: Resource<BucketHandle>,
                    key: String,
                    delta: i64,
                ) -> Answer<i64> {
                    let bucket = self.bucket_of(&this)?;
                    let result =
                        match check_key(&key).and_then(|()| self.check_write_budget(key.len())) {
                            Ok(()) => {
                                self.overlay
                                    .increment(&self.reads, &bucket, &key, delta)
                                    .await
                            }
                            Err(e) => Err(e.into()),
                        };
                    self.finish(result)
                }

                async fn drop(&mut self, this: Resource<BucketHandle>) -> wasmtime::Result<()> {
                    self.table.delete(this)?;
                    Ok(())
                }
            }
        }
    };
}

wit_impls!(impls_v0_1, v0_1);
wit_impls!(impls_v0_2, v0_2);
