//! The edge's CDN: a shared HTTP cache (RFC 9111) in front of the
//! replicas of the apps that turned it on (`Edge::set_cdn`).
//!
//! Only GET and HEAD are answered from the cache; a HEAD from a stored
//! GET. Whether a response may be stored, for how long, for which
//! requests (`Vary`), its `Age`, and how to revalidate it (`ETag` with
//! `If-None-Match`, `Last-Modified` with `If-Modified-Since`) are the
//! `http-cache-semantics` crate's answers, as a shared cache: `private`
//! and `no-store` responses, and responses to requests with
//! `Authorization` (unless `public`, `s-maxage` or `must-revalidate`), are
//! never stored; `s-maxage` wins over `max-age`. On top of it, this
//! module serves a stale response while it revalidates it in the
//! background for as long as the response's `stale-while-revalidate`
//! allows (RFC 5861), and answers a client's own `If-None-Match` or
//! `If-Modified-Since` with a 304 from the stored response.
//!
//! Concurrent misses of one key send one request to the app; the others
//! wait for it and are answered from what it stored (`coalesce`).
//!
//! Each answer says what the cache did in `X-Cache`: `HIT`, `STALE`
//! (served stale while revalidating), `REVALIDATED` (the app answered
//! 304), `MISS`. Upgrades, range requests and other methods pass by.
//!
//! The cache is bounded in memory and on disk ([`Limits`]), each app
//! with a fair share of each tier (`store`: a full tier evicts from the
//! apps above their share first, so one busy app cannot push out the
//! others' recent responses); an app's responses are purged under a path prefix ([`Cdn::purge`]), and all of
//! them when another deployment goes live (the edge does it when the
//! replicas it routes to change).
//!
//! **Architecture Invariant:** the cache never stores what a request
//! that started before a purge fetched: each purge starts a new epoch
//! of the app, and a response is stored only under its request's epoch.

mod coalesce;
#[cfg(test)]
mod coalesce_tests;
mod fetch;
#[cfg(test)]
mod purge_tests;
mod respond;
#[cfg(test)]
mod share_tests;
mod store;
mod tee;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) use fetch::handle;
pub use store::{Limits, Share, Usage};
use store::{Store, Variant};

/// The CDN of one edge; cheap to clone.
#[derive(Clone)]
pub struct Cdn {
    inner: Arc<Inner>,
}

struct Inner {
    store: Mutex<Store>,
    limits: Limits,
    apps: Mutex<HashMap<String, Arc<AppCdn>>>,
    next_id: AtomicU64,
    /// Responses whose bodies are being written to files.
    writing: AtomicU64,
}

/// One app's switch and counters (since the edge started).
#[derive(Default)]
pub struct AppCdn {
    enabled: AtomicBool,
    hits: AtomicU64,
    stale: AtomicU64,
    revalidated: AtomicU64,
    misses: AtomicU64,
    /// Hits that waited for another request's miss of the same key.
    coalesced: AtomicU64,
    bytes_served: AtomicU64,
    /// Misses under way, by key.
    flights: Arc<coalesce::Flights>,
    /// Variants a background revalidation is under way for.
    revalidating: Mutex<HashSet<u64>>,
}

/// What the CDN did for an app since the edge started, and what it holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub enabled: bool,
    /// Answered from the cache, fresh.
    pub hits: u64,
    /// Answered from the cache, stale, while it was revalidated.
    pub stale: u64,
    /// Answered from the cache after the app said it had not changed.
    pub revalidated: u64,
    /// Answered by the app.
    pub misses: u64,
    /// Of the hits, those that waited for another request's miss of the
    /// same key (coalesced) rather than going to the app too.
    pub coalesced: u64,
    /// Body bytes answered from the cache.
    pub bytes_served: u64,
    /// Responses stored, and their body bytes.
    pub stored: Usage,
    /// Its bytes in memory and on disk against its fair share of each.
    pub share: Share,
}

impl Stats {
    /// The share of cacheable requests answered from the cache.
    pub fn hit_ratio(&self) -> f64 {
        let cached = self.hits + self.stale + self.revalidated;
        match cached + self.misses {
            0 => 0.0,
            all => cached as f64 / all as f64,
        }
    }
}

impl Cdn {
    /// A CDN keeping what `limits` allow; its directory is emptied (what a
    /// previous edge stored is not known to be current).
    pub fn new(limits: Limits) -> std::io::Result<Cdn> {
        if let Some(dir) = &limits.dir {
            match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            std::fs::create_dir_all(dir)?;
        }
        Ok(Cdn {
            inner: Arc::new(Inner {
                store: Mutex::new(Store::default()),
                limits,
                apps: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                writing: AtomicU64::new(0),
            }),
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.inner.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn app(&self, slug: &str) -> Arc<AppCdn> {
        let mut apps = self.inner.apps.lock().unwrap_or_else(|e| e.into_inner());
        apps.entry(slug.to_owned()).or_default().clone()
    }

    /// Caches `slug`'s responses from now on, or stops (dropping them).
    pub fn set_enabled(&self, slug: &str, on: bool) {
        let was = self.app(slug).enabled.swap(on, Ordering::Relaxed);
        if was && !on {
            self.purge(slug, "/");
        }
    }

    /// The app's counters when its responses are cached.
    pub(crate) fn enabled(&self, slug: &str) -> Option<Arc<AppCdn>> {
        let apps = self.inner.apps.lock().unwrap_or_else(|e| e.into_inner());
        apps.get(slug)
            .filter(|a| a.enabled.load(Ordering::Relaxed))
            .cloned()
    }

    /// Drops the app's responses whose path starts with `prefix`; answers
    /// how many went.
    pub fn purge(&self, slug: &str, prefix: &str) -> u64 {
        let (files, count) = self.store().purge(slug, prefix);
        remove_files(files);
        count
    }

    /// Drops everything of an app that is no longer served here.
    pub fn forget(&self, slug: &str) {
        self.purge(slug, "");
        let mut apps = self.inner.apps.lock().unwrap_or_else(|e| e.into_inner());
        apps.remove(slug);
    }

    pub fn stats(&self, slug: &str) -> Stats {
        let (stored, share) = {
            let store = self.store();
            (store.usage(slug), store.share(slug, &self.inner.limits))
        };
        let apps = self.inner.apps.lock().unwrap_or_else(|e| e.into_inner());
        let Some(app) = apps.get(slug) else {
            return Stats {
                stored,
                share,
                ..Stats::default()
            };
        };
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            enabled: app.enabled.load(Ordering::Relaxed),
            hits: n(&app.hits),
            stale: n(&app.stale),
            revalidated: n(&app.revalidated),
            misses: n(&app.misses),
            coalesced: n(&app.coalesced),
            bytes_served: n(&app.bytes_served),
            stored,
            share,
        }
    }

    /// Bytes in memory and on disk, all apps together.
    pub fn used(&self) -> (u64, u64) {
        self.store().used()
    }

    /// Responses whose bodies are still being written to files: they
    /// are stored (or evicted at once) when the write ends.
    pub fn writing(&self) -> u64 {
        self.inner.writing.load(Ordering::Relaxed)
    }

    /// Counts a file write until the guard drops.
    fn start_writing(&self) -> Writing {
        self.inner.writing.fetch_add(1, Ordering::Relaxed);
        Writing(self.clone())
    }

    fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn file(&self, id: u64) -> Option<PathBuf> {
        self.inner
            .limits
            .dir
            .as_ref()
            .map(|d| d.join(id.to_string()))
    }

    /// Stores `variant` under `key` unless a purge came since `epoch`.
    fn insert(&self, slug: &str, key: &str, epoch: u64, variant: Variant, asked: &fetch::Asked) {
        let now = std::time::SystemTime::now();
        let files = self
            .store()
            .insert(slug, key, epoch, variant, &self.inner.limits, |old| {
                fetch::same_request(old, asked, now)
            });
        remove_files(files);
    }
}

/// A body being written to its file (see [`Cdn::writing`]).
struct Writing(Cdn);

impl Drop for Writing {
    fn drop(&mut self) {
        self.0.inner.writing.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Deletes files of responses no longer stored (a missing one is fine).
fn remove_files(files: Vec<PathBuf>) {
    for file in files {
        let _ = std::fs::remove_file(file);
    }
}
