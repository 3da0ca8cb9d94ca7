//! The `kv` capability: buckets scoped to (plugin, namespace), read through
//! the call's overlay, written into it; from kv@0.4.0 also `claim` (a
//! compare-and-swap committed at once) and `wait` (parking the call until a
//! write under a prefix commits).

use std::time::{Duration, Instant};

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};

use crate::context::{CallContext, GuestNamespace, guest_namespace_from};
use crate::overlay::{Fail, KvError, Overlay, Reads};
use crate::storage::{BucketId, Claim, Entry, KvWrite, Namespace};
use crate::waits::WaitEnd;

mod gen_ {
    wasmtime::component::bindgen!({
        path: [
            "../../wit/legacy/plugin@0.1.0",
            "../../wit/legacy/plugin@0.2.0",
            "../../wit/legacy/kv@0.3.0",
            "../../wit/deps/kv",
        ],
        interfaces: "
            import plateau:plugin/kv@0.1.0;
            import plateau:plugin/kv@0.2.0;
            import plateau:kv/kv@0.3.0;
            import plateau:kv/kv@0.4.0;
        ",
        imports: { default: async | trappable },
        with: {
            "plateau:plugin/kv.bucket": crate::capabilities::kv::BucketHandle,
            "plateau:kv/kv.bucket": crate::capabilities::kv::BucketHandle,
        },
    });
}
use gen_::plateau::{
    kv0_3_0::kv as v0_3, kv0_4_0::kv as v0_4, plugin0_1_0::kv as v0_1, plugin0_2_0::kv as v0_2,
};

guest_namespace_from!(
    v0_1::Namespace,
    v0_2::Namespace,
    v0_3::Namespace,
    v0_4::Namespace
);

use plateau_contract::kv::{KvRuleError, MAX_LIST_LIMIT as MAX_LIMIT};
/// The longest one `wait` parks.
const MAX_WAIT_MS: u32 = 20_000;

/// An open bucket, as the guest's `bucket` resource.
pub struct BucketHandle {
    bucket: BucketId,
}

/// What `kv` sees of the store: the call, the resource table holding its
/// buckets, the overlay its writes go to, and the reads behind it.
pub(crate) struct KvView<'a> {
    pub call: &'a mut CallContext,
    pub table: &'a mut ResourceTable,
    pub overlay: &'a mut Overlay,
    pub reads: &'a mut Reads,
}

struct HasKv;

impl HasData for HasKv {
    type Data<'a> = KvView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> KvView<'_>,
) -> wasmtime::Result<()> {
    v0_1::add_to_linker::<T, HasKv>(linker, view)?;
    v0_2::add_to_linker::<T, HasKv>(linker, view)?;
    v0_3::add_to_linker::<T, HasKv>(linker, view)?;
    v0_4::add_to_linker::<T, HasKv>(linker, view)
}

// The limits are the contract's, which the SDK's in-memory host enforces
// too.
impl From<KvRuleError> for KvError {
    fn from(e: KvRuleError) -> Self {
        match e {
            KvRuleError::InvalidKey(m) => KvError::InvalidKey(m),
            KvRuleError::TooLarge(m) => KvError::TooLarge(m),
        }
    }
}

fn check_key(key: &str) -> Result<(), KvError> {
    Ok(plateau_contract::kv::check_key(key)?)
}

fn check_prefix(prefix: &str) -> Result<(), KvError> {
    Ok(plateau_contract::kv::check_prefix(prefix)?)
}

fn check_value(value: &[u8]) -> Result<(), KvError> {
    Ok(plateau_contract::kv::check_value(value)?)
}

/// The list name a kv cursor is bound to.
fn cursor_list(bucket: &BucketId, prefix: &str) -> String {
    match &bucket.namespace {
        Namespace::Organization(org) => format!("kv:org:{org}:{prefix}"),
        Namespace::Global => format!("kv:global:{prefix}"),
    }
}

impl KvView<'_> {
    fn bucket_of(&self, handle: &Resource<BucketHandle>) -> wasmtime::Result<BucketId> {
        Ok(self.table.get(handle)?.bucket.clone())
    }

    /// Refuses a write of `bytes` (key and value) beyond the call's budget.
    fn check_write_budget(&self, bytes: usize) -> Result<(), KvError> {
        let limits = &self.call.plugin.settings.limits;
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

    /// Turns an overlay result into a trap or the guest's result.
    fn finish<T>(&mut self, result: Result<T, Fail>) -> Outcome<T> {
        match result {
            Ok(value) => Ok(Ok(value)),
            Err(Fail::Kv(e)) => Ok(Err(e)),
            Err(Fail::Deadline) => Err(self.call.deadline_trap()),
        }
    }

    fn open(
        &mut self,
        ns: GuestNamespace,
    ) -> wasmtime::Result<Result<Resource<BucketHandle>, KvError>> {
        match self.call.bucket(ns) {
            Ok(bucket) => Ok(Ok(self.table.push(BucketHandle { bucket })?)),
            Err(e) => Ok(Err(e)),
        }
    }

    async fn get(&mut self, this: &Resource<BucketHandle>, key: &str) -> Outcome<Option<Vec<u8>>> {
        let bucket = self.bucket_of(this)?;
        let result = match check_key(key) {
            Ok(()) => self.overlay.get(self.reads, &bucket, key).await,
            Err(e) => Err(e.into()),
        };
        self.finish(result)
    }

    fn set(&mut self, this: &Resource<BucketHandle>, key: &str, value: Vec<u8>) -> Outcome<()> {
        let bucket = self.bucket_of(this)?;
        let checked = check_key(key)
            .and_then(|()| check_value(&value))
            .and_then(|()| self.check_write_budget(key.len() + value.len()));
        let result = checked.map(|()| self.overlay.set(&bucket, key, value));
        self.finish(result.map_err(Fail::from))
    }

    async fn delete(&mut self, this: &Resource<BucketHandle>, key: &str) -> Outcome<bool> {
        let bucket = self.bucket_of(this)?;
        let result = match check_key(key).and_then(|()| self.check_write_budget(key.len())) {
            Ok(()) => self.overlay.delete(self.reads, &bucket, key).await,
            Err(e) => Err(e.into()),
        };
        self.finish(result)
    }

    /// A page of entries and the cursor that continues after it.
    async fn list(
        &mut self,
        this: &Resource<BucketHandle>,
        prefix: &str,
        cursor: Option<&str>,
        limit: u32,
    ) -> Outcome<(Vec<Entry>, Option<String>)> {
        let bucket = self.bucket_of(this)?;
        if let Err(e) = check_prefix(prefix) {
            return Ok(Err(e));
        }
        let scope = self.call.cursor_scope();
        let codec = &self.call.plugin.services.cursors;
        let list_name = cursor_list(&bucket, prefix);
        let after = match cursor {
            None => None,
            Some(c) => match codec.decode(&scope, &list_name, c) {
                Ok(position) => Some(position),
                Err(_) => return Ok(Err(KvError::InvalidCursor)),
            },
        };
        let limit = limit.clamp(1, MAX_LIMIT);
        let result = self
            .overlay
            .list(self.reads, &bucket, prefix, after.as_deref(), limit)
            .await
            .map(|(entries, more)| {
                let next_cursor = match (more, entries.last()) {
                    (true, Some(last)) => Some(codec.encode(&scope, &list_name, &last.key)),
                    _ => None,
                };
                (entries, next_cursor)
            });
        self.finish(result)
    }

    async fn count(&mut self, this: &Resource<BucketHandle>, prefix: &str) -> Outcome<u64> {
        let bucket = self.bucket_of(this)?;
        let result = match check_prefix(prefix) {
            Ok(()) => self.overlay.count(self.reads, &bucket, prefix).await,
            Err(e) => Err(e.into()),
        };
        self.finish(result)
    }

    async fn compare_and_swap(
        &mut self,
        this: &Resource<BucketHandle>,
        key: &str,
        expected: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
    ) -> Outcome<bool> {
        let bucket = self.bucket_of(this)?;
        let checked = check_key(key)
            .and_then(|()| new.as_deref().map_or(Ok(()), check_value))
            .and_then(|()| self.check_write_budget(key.len() + new.as_ref().map_or(0, Vec::len)));
        let result = match checked {
            Ok(()) => {
                self.overlay
                    .compare_and_swap(self.reads, &bucket, key, expected, new)
                    .await
            }
            Err(e) => Err(e.into()),
        };
        self.finish(result)
    }

    async fn increment(
        &mut self,
        this: &Resource<BucketHandle>,
        key: &str,
        delta: i64,
    ) -> Outcome<i64> {
        let bucket = self.bucket_of(this)?;
        let result = match check_key(key).and_then(|()| self.check_write_budget(key.len())) {
            Ok(()) => {
                self.overlay
                    .increment(self.reads, &bucket, key, delta)
                    .await
            }
            Err(e) => Err(e.into()),
        };
        self.finish(result)
    }

    /// Checks a claim's keys and values: each valid, none with a write
    /// buffered in this call (the commit would overwrite the claim).
    fn check_claim(&self, claim: &Claim) -> Result<(), KvError> {
        let max = self.call.plugin.settings.limits.max_writes;
        if claim.then.len() > max {
            return Err(KvError::TooLarge(format!(
                "a claim applies at most {max} writes with it"
            )));
        }
        check_key(&claim.key)?;
        claim.new.as_deref().map_or(Ok(()), check_value)?;
        let mut keys = vec![claim.key.as_str()];
        for write in &claim.then {
            match write {
                KvWrite::Set { key, value, .. } => {
                    check_value(value)?;
                    keys.push(key);
                }
                KvWrite::Delete { key, .. } | KvWrite::Increment { key, .. } => keys.push(key),
            }
        }
        for key in keys {
            check_key(key)?;
            if self.overlay.has_pending(&claim.bucket, key) {
                return Err(KvError::InvalidKey(format!(
                    "`{key}` has a write buffered in this call: claim keys before writing them"
                )));
            }
        }
        Ok(())
    }

    async fn claim(
        &mut self,
        this: &Resource<BucketHandle>,
        key: String,
        expected: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
        then: Vec<(String, Option<Vec<u8>>)>,
    ) -> Outcome<bool> {
        let bucket = self.bucket_of(this)?;
        let then = then
            .into_iter()
            .map(|(key, value)| match value {
                Some(value) => KvWrite::Set {
                    bucket: bucket.clone(),
                    key,
                    value,
                },
                None => KvWrite::Delete {
                    bucket: bucket.clone(),
                    key,
                },
            })
            .collect();
        let claim = Claim {
            bucket,
            key,
            expected,
            new,
            then,
        };
        if let Err(e) = self.check_claim(&claim) {
            return Ok(Err(e));
        }
        let written: Vec<(BucketId, String)> = if self.call.plugin.waits.any() {
            std::iter::once((claim.bucket.clone(), claim.key.clone()))
                .chain(claim.then.iter().map(crate::exec::written_key))
                .collect()
        } else {
            Vec::new()
        };
        let result = self.reads.claim(claim).await;
        if let Ok(true) = result {
            let waits = &self.call.plugin.waits;
            waits.committed(written.iter().map(|(b, k)| (b, k.as_str())));
        }
        self.finish(result)
    }

    /// Parks until a write under `prefix` commits in the bucket or the
    /// timeout passes; the time parked moves the call's deadline.
    async fn wait(
        &mut self,
        this: &Resource<BucketHandle>,
        prefix: &str,
        timeout_ms: u32,
    ) -> Outcome<bool> {
        let bucket = self.bucket_of(this)?;
        if let Err(e) = check_prefix(prefix) {
            return Ok(Err(e));
        }
        let asked = Duration::from_millis(u64::from(timeout_ms.min(MAX_WAIT_MS)));
        let timeout = asked.min(self.call.parking_left());
        let waits = self.call.plugin.waits.clone();
        let started = Instant::now();
        let end = waits.wait(&bucket, prefix, timeout).await;
        let parked = started.elapsed();
        self.call.add_parked(parked);
        self.reads.deadline += parked;
        Ok(Ok(matches!(end, WaitEnd::Written | WaitEnd::Recheck)))
    }

    fn drop(&mut self, this: Resource<BucketHandle>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        Ok(())
    }
}

/// A kv answer: a trap, or the guest's result.
type Outcome<T> = wasmtime::Result<Result<T, KvError>>;

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident $({ $($extra:item)* })?),+ $(,)?) => {$(
        impl From<KvError> for $wit::Error {
            fn from(e: KvError) -> Self {
                match e {
                    KvError::AccessDenied(m) => $wit::Error::AccessDenied(m),
                    KvError::InvalidKey(m) => $wit::Error::InvalidKey(m),
                    KvError::TooLarge(m) => $wit::Error::TooLarge(m),
                    KvError::InvalidCursor => $wit::Error::InvalidCursor,
                    KvError::Unavailable(m) => $wit::Error::Unavailable(m),
                }
            }
        }

        impl $wit::Host for KvView<'_> {}

        impl $wit::HostBucket for KvView<'_> {
            async fn open(
                &mut self,
                ns: $wit::Namespace,
            ) -> wasmtime::Result<Result<Resource<BucketHandle>, $wit::Error>> {
                Ok(KvView::open(self, ns.into())?.map_err(Into::into))
            }

            async fn get(
                &mut self,
                this: Resource<BucketHandle>,
                key: String,
            ) -> wasmtime::Result<Result<Option<Vec<u8>>, $wit::Error>> {
                Ok(KvView::get(self, &this, &key).await?.map_err(Into::into))
            }

            async fn set(
                &mut self,
                this: Resource<BucketHandle>,
                key: String,
                value: Vec<u8>,
            ) -> wasmtime::Result<Result<(), $wit::Error>> {
                Ok(KvView::set(self, &this, &key, value)?.map_err(Into::into))
            }

            async fn delete(
                &mut self,
                this: Resource<BucketHandle>,
                key: String,
            ) -> wasmtime::Result<Result<bool, $wit::Error>> {
                Ok(KvView::delete(self, &this, &key).await?.map_err(Into::into))
            }

            async fn list(
                &mut self,
                this: Resource<BucketHandle>,
                prefix: String,
                cursor: Option<String>,
                limit: u32,
            ) -> wasmtime::Result<Result<$wit::Page, $wit::Error>> {
                let page = KvView::list(self, &this, &prefix, cursor.as_deref(), limit).await?;
                Ok(page
                    .map(|(entries, next_cursor)| $wit::Page {
                        entries: entries
                            .into_iter()
                            .map(|e| $wit::Entry {
                                key: e.key,
                                value: e.value,
                            })
                            .collect(),
                        next_cursor,
                    })
                    .map_err(Into::into))
            }

            async fn count(
                &mut self,
                this: Resource<BucketHandle>,
                prefix: String,
            ) -> wasmtime::Result<Result<u64, $wit::Error>> {
                Ok(KvView::count(self, &this, &prefix).await?.map_err(Into::into))
            }

            async fn compare_and_swap(
                &mut self,
                this: Resource<BucketHandle>,
                key: String,
                expected: Option<Vec<u8>>,
                new: Option<Vec<u8>>,
            ) -> wasmtime::Result<Result<bool, $wit::Error>> {
                let swapped = KvView::compare_and_swap(self, &this, &key, expected, new).await?;
                Ok(swapped.map_err(Into::into))
            }

            async fn increment(
                &mut self,
                this: Resource<BucketHandle>,
                key: String,
                delta: i64,
            ) -> wasmtime::Result<Result<i64, $wit::Error>> {
                Ok(KvView::increment(self, &this, &key, delta).await?.map_err(Into::into))
            }

            async fn drop(&mut self, this: Resource<BucketHandle>) -> wasmtime::Result<()> {
                KvView::drop(self, this)
            }

            $($($extra)*)?
        }
    )+};
}

wit_impls!(v0_1, v0_2, v0_3, v0_4 {
    async fn claim(
        &mut self,
        this: Resource<BucketHandle>,
        key: String,
        expected: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
        then: Vec<v0_4::Write>,
    ) -> wasmtime::Result<Result<bool, v0_4::Error>> {
        let then = then
            .into_iter()
            .map(|w| match w {
                v0_4::Write::Set(e) => (e.key, Some(e.value)),
                v0_4::Write::Delete(key) => (key, None),
            })
            .collect();
        let claimed = KvView::claim(self, &this, key, expected, new, then).await?;
        Ok(claimed.map_err(Into::into))
    }

    async fn wait(
        &mut self,
        this: Resource<BucketHandle>,
        prefix: String,
        timeout_ms: u32,
    ) -> wasmtime::Result<Result<bool, v0_4::Error>> {
        Ok(KvView::wait(self, &this, &prefix, timeout_ms).await?.map_err(Into::into))
    }
});
