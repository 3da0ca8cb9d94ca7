//! A short-lived, per-process cache of verified API tokens, so that the
//! hot path of an authenticated request does not read the database.
//!
//! The database stays the only source of truth: an entry lives at most
//! `ttl` (default two seconds, `PLATEAU_AUTH_CACHE_MS`), expiry is checked
//! on every use, and revoking a token evicts it at once on the host that
//! revoked it. Other hosts on the same PostgreSQL refuse a revoked token
//! within `ttl`. A `ttl` of zero turns the cache off.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use crate::auth::Caller;

/// Entries beyond this are dropped wholesale (a crude but bounded policy:
/// a busy host refills the cache within one `ttl`).
const MAX_ENTRIES: usize = 10_000;

pub struct TokenCache {
    ttl: Duration,
    entries: RwLock<HashMap<String, (Instant, Caller)>>,
}

impl TokenCache {
    pub fn new(ttl: Duration) -> Self {
        TokenCache {
            ttl,
            entries: RwLock::new(HashMap::new()),
        }
    }

    /// The caller for a secret's hash, if verified less than `ttl` ago.
    pub fn get(&self, secret_hash: &str) -> Option<Caller> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let (at, caller) = entries.get(secret_hash)?;
        (at.elapsed() < self.ttl).then(|| caller.clone())
    }

    pub fn insert(&self, secret_hash: String, caller: Caller) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(secret_hash, (Instant::now(), caller));
    }

    /// Forgets every token of a user in an organisation (after their role
    /// changed or they were removed here).
    pub fn evict_user(&self, org_id: &str, user_id: &str) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, (_, c)| c.org_id != org_id || c.user_id != user_id);
    }

    /// Forgets every token of an organisation (after its plan changed here).
    pub fn evict_org(&self, org_id: &str) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, (_, c)| c.org_id != org_id);
    }

    /// Forgets a token (after it was revoked here).
    pub fn evict_token(&self, token_id: &str) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, (_, caller)| caller.token_id != token_id);
    }
}
