//! The CDN's storage: every app's cached responses in one index, their
//! bodies in memory (small ones) or in files under the cache directory
//! (large ones), each tier bounded in bytes. When a tier is full, the
//! least recently used responses of that tier go, whichever app they are
//! of. A purge removes an app's responses under a path prefix and bumps
//! the app's epoch, so a response fetched before the purge is not stored
//! after it.

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
}

/// An app's stored responses and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub entries: u64,
    pub bytes: u64,
}

/// The index of every stored response.
#[derive(Default)]
pub struct Store {
    /// By app, then path and query: the variants (`Vary`) stored there.
    entries: HashMap<String, HashMap<String, Vec<Variant>>>,
    /// Least recently used first: tick to (app, key, variant id).
    lru: BTreeMap<u64, (String, String, u64)>,
    /// Each variant's tick in `lru`.
    ticks: HashMap<u64, u64>,
    tick: u64,
    memory_used: u64,
    disk_used: u64,
    usage: HashMap<String, Usage>,
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
        self.usage.get(app).copied().unwrap_or_default()
    }

    pub fn used(&self) -> (u64, u64) {
        (self.memory_used, self.disk_used)
    }

    /// The variants stored for `key`, marking them used.
    pub fn get(&mut self, app: &str, key: &str) -> Vec<Variant> {
        let Some(found) = self.entries.get(app).and_then(|e| e.get(key)) else {
            return Vec::new();
        };
        let found = found.clone();
        for v in &found {
            self.touch(app, key, v.id);
        }
        found
    }

    fn touch(&mut self, app: &str, key: &str, id: u64) {
        if let Some(old) = self.ticks.remove(&id) {
            self.lru.remove(&old);
        }
        self.tick += 1;
        self.lru
            .insert(self.tick, (app.to_owned(), key.to_owned(), id));
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
        let old: Vec<u64> = self
            .entries
            .get(app)
            .and_then(|e| e.get(key))
            .map(|vs| vs.iter().filter(|v| replaces(v)).map(|v| v.id).collect())
            .unwrap_or_default();
        for id in old {
            gone.extend(self.remove(app, key, id));
        }
        let count = self
            .entries
            .get(app)
            .and_then(|e| e.get(key))
            .map_or(0, Vec::len);
        if count >= MAX_VARIANTS
            && let Some(first) = self.entries[app][key].first().map(|v| v.id)
        {
            gone.extend(self.remove(app, key, first));
        }
        let weight = variant.weight();
        if variant.on_disk() {
            self.disk_used += variant.len;
        } else {
            self.memory_used += weight;
        }
        let usage = self.usage.entry(app.to_owned()).or_default();
        usage.entries += 1;
        usage.bytes += variant.len;
        let id = variant.id;
        self.entries
            .entry(app.to_owned())
            .or_default()
            .entry(key.to_owned())
            .or_default()
            .push(variant);
        self.touch(app, key, id);
        gone.extend(self.evict(limits));
        gone
    }

    /// Replaces the head and policy of variant `id` (a 304 refreshed it).
    pub fn refresh(&mut self, app: &str, key: &str, id: u64, fresh: &Variant) {
        let Some(v) = self
            .entries
            .get_mut(app)
            .and_then(|e| e.get_mut(key))
            .and_then(|vs| vs.iter_mut().find(|v| v.id == id))
        else {
            return;
        };
        let before = v.weight();
        v.policy = fresh.policy.clone();
        v.headers = fresh.headers.clone();
        v.fresh_until = fresh.fresh_until;
        v.stale_while_revalidate = fresh.stale_while_revalidate;
        if !v.on_disk() {
            self.memory_used = self.memory_used - before + v.weight();
        }
    }

    /// Removes one variant; answers its file, if it had one.
    fn remove(&mut self, app: &str, key: &str, id: u64) -> Option<PathBuf> {
        let variants = self.entries.get_mut(app)?.get_mut(key)?;
        let at = variants.iter().position(|v| v.id == id)?;
        let v = variants.remove(at);
        if variants.is_empty()
            && let Some(e) = self.entries.get_mut(app)
        {
            e.remove(key);
        }
        if let Some(tick) = self.ticks.remove(&id) {
            self.lru.remove(&tick);
        }
        if let Some(usage) = self.usage.get_mut(app) {
            usage.entries -= 1;
            usage.bytes -= v.len;
        }
        match v.body {
            Stored::Disk(ref path) => {
                self.disk_used -= v.len;
                Some(path.clone())
            }
            Stored::Memory(_) => {
                self.memory_used -= v.weight();
                None
            }
        }
    }

    /// Drops the least recently used variants of each tier over its limit.
    fn evict(&mut self, limits: &Limits) -> Vec<PathBuf> {
        let mut gone = Vec::new();
        while self.memory_used > limits.memory_bytes || self.disk_used > limits.disk_bytes {
            let memory_over = self.memory_used > limits.memory_bytes;
            let victim = self.lru.values().find(|(app, key, id)| {
                let on_disk = self.entries[app][key]
                    .iter()
                    .find(|v| v.id == *id)
                    .is_some_and(Variant::on_disk);
                on_disk != memory_over
            });
            let Some((app, key, id)) = victim.cloned() else {
                break;
            };
            gone.extend(self.remove(&app, &key, id));
        }
        gone
    }

    /// Removes the app's variants whose path starts with `prefix` ("/":
    /// all) and starts a new epoch; answers the files to delete and how
    /// many responses went.
    pub fn purge(&mut self, app: &str, prefix: &str) -> (Vec<PathBuf>, u64) {
        *self.epochs.entry(app.to_owned()).or_default() += 1;
        let doomed: Vec<(String, u64)> = self
            .entries
            .get(app)
            .into_iter()
            .flatten()
            .filter(|(key, _)| key.starts_with(prefix))
            .flat_map(|(key, vs)| vs.iter().map(|v| (key.clone(), v.id)))
            .collect();
        let count = doomed.len() as u64;
        let gone = doomed
            .into_iter()
            .filter_map(|(key, id)| self.remove(app, &key, id))
            .collect();
        if self.entries.get(app).is_some_and(HashMap::is_empty) {
            self.entries.remove(app);
        }
        (gone, count)
    }
}
