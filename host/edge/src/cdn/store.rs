//! The CDN's storage: every app's cached responses in one index, their
//! bodies in memory (small ones) or in files under the cache directory
//! (large ones), each tier bounded in bytes. A purge removes an app's
//! responses under a path prefix and bumps the app's epoch, so a
//! response fetched before the purge is not stored after it.
//!
//! Each app has a fair share of each tier: the tier's bytes over the
//! number of apps with responses in it. When a tier is full, what goes is
//! the least recently used response of that tier among the apps above
//! their share (there is always one: the tier is over its bytes, so some
//! app is over the average), so one busy app pushes out its own old
//! responses, not another app's recent ones. An app alone in a tier has
//! all of it, and an app's unused share is the others' to use until it
//! needs it back.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::SystemTime;

use bytes::Bytes;
use http::HeaderMap;
use http_cache_semantics::CachePolicy;

/// How much the CDN of a host keeps.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Bytes of bodies (and heads) kept in memory.
    pub memory_bytes: u64,
    /// Bytes of bodies kept in files; 0 (or no `dir`): none.
    pub disk_bytes: u64,
    /// Where the files go; emptied when the CDN starts.
    pub dir: Option<PathBuf>,
}

impl Limits {
    /// Memory only, `memory_bytes` of it.
    pub fn memory(memory_bytes: u64) -> Limits {
        Limits {
            memory_bytes,
            disk_bytes: 0,
            dir: None,
        }
    }

    /// The largest body kept in memory: a sixteenth of the memory, at
    /// most 1 MiB, so that one response never pushes out most others.
    pub fn memory_object(&self) -> u64 {
        (self.memory_bytes / 16).min(1 << 20)
    }

    /// The largest body kept on disk: a sixteenth of the disk.
    pub fn disk_object(&self) -> u64 {
        if self.dir.is_some() {
            self.disk_bytes / 16
        } else {
            0
        }
    }

    /// The largest body stored at all.
    pub fn max_object(&self) -> u64 {
        self.memory_object().max(self.disk_object())
    }
}

/// Where a stored body is.
#[derive(Clone)]
pub enum Stored {
    Memory(Bytes),
    Disk(PathBuf),
}

/// One stored response: the request it answered (in `policy`), its
/// head, and its body.
#[derive(Clone)]
pub struct Variant {
    pub id: u64,
    pub policy: CachePolicy,
    /// The head to answer with (hop-by-hop fields left out).
    pub status: http::StatusCode,
    pub headers: HeaderMap,
    pub body: Stored,
    pub len: u64,
    /// When it stops being fresh, and how long after it may still be
    /// served while it is revalidated (`stale-while-revalidate`).
    pub fresh_until: SystemTime,
    pub stale_while_revalidate: std::time::Duration,
}

impl Variant {
    /// The bytes it counts against its tier: body and head.
    fn weight(&self) -> u64 {
        let head: usize = self
            .headers
            .iter()
            .map(|(n, v)| n.as_str().len() + v.len() + 32)
            .sum();
        self.len + head as u64 + 256
    }

    fn on_disk(&self) -> bool {
        matches!(self.body, Stored::Disk(_))
    }

    /// Its tier ([`MEMORY`] or [`DISK`]) and the bytes it counts there:
    /// body and head in memory, the file's on disk.
    fn cost(&self) -> (usize, u64) {
        if self.on_disk() {
            (DISK, self.len)
        } else {
            (MEMORY, self.weight())
        }
    }
}

/// The tiers, as indices of per-tier arrays.
const MEMORY: usize = 0;
const DISK: usize = 1;

/// An app's stored responses and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub entries: u64,
    pub bytes: u64,
}

/// What an app holds of each tier against its fair share now: the tier
/// over the apps with responses in it, this app counted (a share it may
/// exceed while the others leave room).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    pub memory_bytes: u64,
    pub memory_share_bytes: u64,
    pub disk_bytes: u64,
    pub disk_share_bytes: u64,
}

/// One app's stored responses.
#[derive(Default)]
struct App {
    /// By path and query: the variants (`Vary`) stored there.
    entries: HashMap<String, Vec<Variant>>,
    /// Per tier, least recently used first: tick to (key, variant id).
    lru: [BTreeMap<u64, (String, u64)>; 2],
    /// Per tier, the bytes its variants count there.
    used: [u64; 2],
    usage: Usage,
}

/// The index of every stored response.
#[derive(Default)]
pub struct Store {
    apps: HashMap<String, App>,
    /// Each variant's tick in its app's `lru`.
    ticks: HashMap<u64, u64>,
    tick: u64,
    /// Per tier, all apps together.
    used: [u64; 2],
    /// Each app's purge count: a fetch that started under another epoch
    /// is not stored.
    epochs: HashMap<String, u64>,
}

/// The most variants one path keeps.
const MAX_VARIANTS: usize = 8;

impl Store {
    pub fn epoch(&self, app: &str) -> u64 {
        self.epochs.get(app).copied().unwrap_or(0)
    }

    pub fn usage(&self, app: &str) -> Usage {
        self.apps.get(app).map(|a| a.usage).unwrap_or_default()
    }

    pub fn used(&self) -> (u64, u64) {
        (self.used[MEMORY], self.used[DISK])
    }

    /// The app's bytes in each tier and its share of it under `limits`.
    pub fn share(&self, app: &str, limits: &Limits) -> Share {
        let mine = self.apps.get(app).map_or([0, 0], |a| a.used);
        let share = |tier: usize, limit: u64| {
            let others = self
                .apps
                .iter()
                .filter(|(name, a)| name.as_str() != app && a.used[tier] > 0)
                .count() as u64;
            limit / (others + 1)
        };
        Share {
            memory_bytes: mine[MEMORY],
            memory_share_bytes: share(MEMORY, limits.memory_bytes),
            disk_bytes: mine[DISK],
            disk_share_bytes: share(DISK, limits.disk_bytes),
        }
    }

    /// The variants stored for `key`, marking them used.
    pub fn get(&mut self, app: &str, key: &str) -> Vec<Variant> {
        let Some(found) = self.apps.get(app).and_then(|a| a.entries.get(key)) else {
            return Vec::new();
        };
        let found = found.clone();
        for v in &found {
            self.touch(app, key, v.id, v.cost().0);
        }
        found
    }

    /// Marks variant `id` (in `tier`) the app's most recently used.
    fn touch(&mut self, app: &str, key: &str, id: u64, tier: usize) {
        let Some(a) = self.apps.get_mut(app) else {
            return;
        };
        if let Some(old) = self.ticks.remove(&id) {
            a.lru[tier].remove(&old);
        }
        self.tick += 1;
        a.lru[tier].insert(self.tick, (key.to_owned(), id));
        self.ticks.insert(id, self.tick);
    }

    /// Stores `variant` for `key` if `epoch` is still the app's, in place
    /// of the variants `replaces` says it replaces; then evicts what no
    /// longer fits. Answers the files to delete.
    pub fn insert(
        &mut self,
        app: &str,
        key: &str,
        epoch: u64,
        variant: Variant,
        limits: &Limits,
        replaces: impl Fn(&Variant) -> bool,
    ) -> Vec<PathBuf> {
        let mut gone = Vec::new();
        if self.epoch(app) != epoch {
            if let Stored::Disk(path) = variant.body {
                gone.push(path);
            }
            return gone;
        }
        let stored = |s: &Store| s.apps.get(app).and_then(|a| a.entries.get(key)).cloned();
        let old: Vec<u64> = stored(self)
            .map(|vs| vs.iter().filter(|v| replaces(v)).map(|v| v.id).collect())
            .unwrap_or_default();
        for id in old {
            gone.extend(self.remove(app, key, id));
        }
        if let Some(vs) = stored(self)
            && vs.len() >= MAX_VARIANTS
        {
            gone.extend(self.remove(app, key, vs[0].id));
        }
        let (tier, cost) = variant.cost();
        self.used[tier] += cost;
        let a = self.apps.entry(app.to_owned()).or_default();
        a.used[tier] += cost;
        a.usage.entries += 1;
        a.usage.bytes += variant.len;
        let id = variant.id;
        a.entries.entry(key.to_owned()).or_default().push(variant);
        self.touch(app, key, id, tier);
        gone.extend(self.evict(limits));
        gone
    }

    /// Replaces the head and policy of variant `id` (a 304 refreshed it).
    pub fn refresh(&mut self, app: &str, key: &str, id: u64, fresh: &Variant) {
        let Some(a) = self.apps.get_mut(app) else {
            return;
        };
        let Some(v) = a
            .entries
            .get_mut(key)
            .and_then(|vs| vs.iter_mut().find(|v| v.id == id))
        else {
            return;
        };
        let (tier, before) = v.cost();
        v.policy = fresh.policy.clone();
        v.headers = fresh.headers.clone();
        v.fresh_until = fresh.fresh_until;
        v.stale_while_revalidate = fresh.stale_while_revalidate;
        let (_, after) = v.cost();
        a.used[tier] = a.used[tier] - before + after;
        self.used[tier] = self.used[tier] - before + after;
    }

    /// Removes one variant; answers its file, if it had one.
    fn remove(&mut self, app: &str, key: &str, id: u64) -> Option<PathBuf> {
        let a = self.apps.get_mut(app)?;
        let variants = a.entries.get_mut(key)?;
        let at = variants.iter().position(|v| v.id == id)?;
        let v = variants.remove(at);
        if variants.is_empty() {
            a.entries.remove(key);
        }
        let (tier, cost) = v.cost();
        if let Some(tick) = self.ticks.remove(&id) {
            a.lru[tier].remove(&tick);
        }
        a.used[tier] -= cost;
        self.used[tier] -= cost;
        a.usage.entries -= 1;
        a.usage.bytes -= v.len;
        if a.entries.is_empty() {
            self.apps.remove(app);
        }
        match v.body {
            Stored::Disk(path) => Some(path),
            Stored::Memory(_) => None,
        }
    }

    /// Drops variants of each tier over its limit: each time the least
    /// recently used one of the apps above their share of the tier.
    fn evict(&mut self, limits: &Limits) -> Vec<PathBuf> {
        let mut gone = Vec::new();
        for (tier, limit) in [(MEMORY, limits.memory_bytes), (DISK, limits.disk_bytes)] {
            while self.used[tier] > limit {
                let Some((app, key, id)) = self.victim(tier, limit) else {
                    break;
                };
                gone.extend(self.remove(&app, &key, id));
            }
        }
        gone
    }

    /// The least recently used variant in `tier` of the apps holding more
    /// than their share of its `limit`.
    fn victim(&self, tier: usize, limit: u64) -> Option<(String, String, u64)> {
        let holders = self.apps.values().filter(|a| a.used[tier] > 0).count() as u64;
        let share = limit / holders.max(1);
        self.apps
            .iter()
            .filter(|(_, a)| a.used[tier] > share)
            .filter_map(|(name, a)| {
                let (tick, (key, id)) = a.lru[tier].first_key_value()?;
                Some((*tick, name, key, *id))
            })
            .min_by_key(|(tick, ..)| *tick)
            .map(|(_, name, key, id)| (name.clone(), key.clone(), id))
    }

    /// Removes the app's variants whose path starts with `prefix` ("/":
    /// all) and starts a new epoch; answers the files to delete and how
    /// many responses went.
    pub fn purge(&mut self, app: &str, prefix: &str) -> (Vec<PathBuf>, u64) {
        *self.epochs.entry(app.to_owned()).or_default() += 1;
        let doomed: Vec<(String, u64)> = self
            .apps
            .get(app)
            .into_iter()
            .flat_map(|a| &a.entries)
            .filter(|(key, _)| key.starts_with(prefix))
            .flat_map(|(key, vs)| vs.iter().map(|v| (key.clone(), v.id)))
            .collect();
        let count = doomed.len() as u64;
        let gone = doomed
            .into_iter()
            .filter_map(|(key, id)| self.remove(app, &key, id))
            .collect();
        (gone, count)
    }
}
