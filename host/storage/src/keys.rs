//! Access keys: per-organisation S3 credentials, separate from API tokens
//! (spec section 5.8). SigV4 verification needs the secret itself, so it
//! is stored sealed with the host's key ([`Sealing`]) and opened only to
//! verify a signature or sign a presigned URL; it is never logged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_core::{id::new_id, time};
use plateau_store::Db;
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::storage::keys::{self, AccessKey};
use serde_json::json;

use crate::error::{Error, Result};
use crate::names;

/// Authenticated encryption under a key only the host holds.
pub trait Sealing: Send + Sync + 'static {
    fn seal(&self, context: &str, plaintext: &[u8]) -> Option<Vec<u8>>;
    fn open(&self, context: &str, sealed: &[u8]) -> Option<Vec<u8>>;
}

/// What a sealed secret is bound to: its key id, so that it opens for no
/// other key.
fn context(access_key_id: &str) -> String {
    format!("storage-key\u{1f}{access_key_id}")
}

/// An access key with its opened secret, as the S3 endpoint uses it.
#[derive(Clone)]
pub struct Principal {
    pub key_id: String,
    pub access_key_id: String,
    pub org_id: String,
    pub read_only: bool,
    /// Bucket ids the key is limited to; None for all.
    pub buckets: Option<Vec<String>>,
    pub secret: String,
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("access_key_id", &self.access_key_id)
            .field("org_id", &self.org_id)
            .finish_non_exhaustive()
    }
}

impl Principal {
    /// Whoever sends an unsigned request, reading a public bucket of
    /// `org_id`: no key, no writes, no bucket of its own.
    pub fn anonymous(org_id: &str) -> Principal {
        Principal {
            key_id: String::new(),
            access_key_id: String::new(),
            org_id: org_id.to_owned(),
            read_only: true,
            buckets: Some(Vec::new()),
            secret: String::new(),
        }
    }

    /// Whether the key may act on `bucket_id`, writing or not.
    pub fn may(&self, bucket_id: &str, write: bool) -> bool {
        if write && self.read_only {
            return false;
        }
        self.buckets
            .as_ref()
            .is_none_or(|only| only.iter().any(|b| b == bucket_id))
    }
}

/// The organisation's keys, with a short-lived cache of opened ones.
pub struct Keys {
    db: Db,
    sealer: Arc<dyn Sealing>,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Option<Principal>)>>,
}

impl Keys {
    /// `ttl` is how long a looked-up key is trusted without reading the
    /// database (other hosts see a deleted key fail within it).
    pub fn new(db: Db, sealer: Arc<dyn Sealing>, ttl: Duration) -> Self {
        Keys {
            db,
            sealer,
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The host's sealing key (also SSE-S3's, [`crate::sse`]).
    pub fn sealer(&self) -> &dyn Sealing {
        self.sealer.as_ref()
    }

    /// Creates a key; returns it and its secret, which is never shown again.
    pub async fn create(
        &self,
        org_id: &str,
        name: &str,
        read_only: bool,
        buckets: Option<Vec<String>>,
        actor: &Actor,
    ) -> Result<(AccessKey, String)> {
        let access_key_id = names::access_key_id();
        let secret = names::secret();
        let sealed = self
            .sealer
            .seal(&context(&access_key_id), secret.as_bytes())
            .ok_or_else(|| Error::Internal("sealing the secret failed".to_owned()))?;
        let now = time::now_ms();
        let key = AccessKey {
            id: new_id("skey"),
            org_id: org_id.to_owned(),
            name: name.to_owned(),
            access_key_id,
            secret_sealed: BASE64.encode(sealed),
            secret_hint: secret[secret.len() - 4..].to_owned(),
            read_only: i64::from(read_only),
            buckets: buckets.map(|b| json!(b).to_string()),
            created_at: now,
        };
        let mut tx = self.db.begin().await?;
        keys::insert(&mut tx, &key).await?;
        let event = NewEvent::audited(org_id, "storage.key.created", "tokens", "create", actor)
            .resource("storage_key", &key.id)
            .data(json!({
                "name": key.name,
                "accessKeyId": key.access_key_id,
                "readOnly": read_only,
            }));
        events::record(&mut tx, &event, now).await?;
        tx.commit_last().await?;
        Ok((key, secret))
    }

    /// Deletes a key; false when the organisation has no such key.
    pub async fn delete(&self, org_id: &str, id: &str, actor: &Actor) -> Result<Option<AccessKey>> {
        let mut tx = self.db.begin().await?;
        let Some(key) = keys::get(&mut tx, org_id, id).await? else {
            return Ok(None);
        };
        keys::delete(&mut tx, org_id, id).await?;
        let event = NewEvent::audited(org_id, "storage.key.deleted", "tokens", "delete", actor)
            .resource("storage_key", id)
            .data(json!({ "name": key.name, "accessKeyId": key.access_key_id }));
        events::record(&mut tx, &event, time::now_ms()).await?;
        tx.commit_last().await?;
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key.access_key_id);
        Ok(Some(key))
    }

    /// The key with this access key id and its secret, or None.
    pub async fn principal(&self, access_key_id: &str) -> Result<Option<Principal>> {
        if let Some((at, found)) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(access_key_id)
            && at.elapsed() < self.ttl
        {
            return Ok(found.clone());
        }
        let found = match keys::by_access_key_id(&self.db, access_key_id).await? {
            Some(key) => Some(self.open(key)?),
            None => None,
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(access_key_id.to_owned(), (Instant::now(), found.clone()));
        Ok(found)
    }

    /// Whether the organisation `org_id` exists (a grantee of an ACL).
    pub async fn org_exists(&self, org_id: &str) -> Result<bool> {
        Ok(plateau_store::orgs::get(&self.db, org_id).await?.is_some())
    }

    /// An organisation's key by its id, opened (for presigning).
    pub async fn principal_of_org(
        &self,
        org_id: &str,
        access_key_id: &str,
    ) -> Result<Option<Principal>> {
        Ok(self
            .principal(access_key_id)
            .await?
            .filter(|p| p.org_id == org_id))
    }

    fn open(&self, key: AccessKey) -> Result<Principal> {
        let sealed = BASE64
            .decode(&key.secret_sealed)
            .map_err(|_| Error::Internal(format!("access key {} is damaged", key.id)))?;
        let secret = self
            .sealer
            .open(&context(&key.access_key_id), &sealed)
            .and_then(|s| String::from_utf8(s).ok())
            .ok_or_else(|| {
                Error::Internal(format!(
                    "access key {} does not open with this host's key; check PLATEAU_SECRET_KEY",
                    key.id
                ))
            })?;
        Ok(Principal {
            key_id: key.id,
            access_key_id: key.access_key_id,
            org_id: key.org_id,
            read_only: key.read_only != 0,
            buckets: key
                .buckets
                .as_deref()
                .and_then(|b| serde_json::from_str(b).ok()),
            secret,
        })
    }
}
