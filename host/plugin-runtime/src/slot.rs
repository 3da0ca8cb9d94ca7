//! [`PluginSlot`]: the active version(s) of one plugin, swapped atomically.
//!
//! Routing is a list of (version, weight); today a switch installs one
//! version at weight 100, and a weighted canary only needs a way to install
//! two. A request holds the `Arc` of the version it started on, so a switch
//! never disturbs it.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::error::{Error, Result};
use crate::exec::PluginVersion;

/// Every version that gets traffic, with its weight.
struct Routing {
    targets: Vec<(Arc<PluginVersion>, u32)>,
    /// What was active before, for [`PluginSlot::rollback`].
    previous: Option<Arc<Routing>>,
}

impl Routing {
    fn single(version: Arc<PluginVersion>, previous: Option<Arc<Routing>>) -> Self {
        Routing {
            targets: vec![(version, 100)],
            previous,
        }
    }

    /// The target whose cumulative weight first exceeds `key` modulo the
    /// total weight.
    fn pick(&self, key: u64) -> &Arc<PluginVersion> {
        let total: u64 = self.targets.iter().map(|(_, w)| u64::from(*w)).sum();
        let mut point = if total == 0 { 0 } else { key % total };
        for (version, weight) in &self.targets {
            if point < u64::from(*weight) {
                return version;
            }
            point -= u64::from(*weight);
        }
        &self.targets[0].0
    }
}

/// The active version(s) of one plugin.
pub struct PluginSlot {
    name: String,
    routing: ArcSwap<Routing>,
    /// Serialises writers; readers never wait.
    writer: Mutex<()>,
}

impl PluginSlot {
    pub fn new(version: Arc<PluginVersion>) -> Self {
        PluginSlot {
            name: version.name().to_string(),
            routing: ArcSwap::from_pointee(Routing::single(version, None)),
            writer: Mutex::new(()),
        }
    }

    /// The plugin's name, the same for every version.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version that serves a request now.
    pub fn current(&self) -> Arc<PluginVersion> {
        self.pick(0)
    }

    /// The version for a request with routing key `key` (a hash of the
    /// request or caller), following the weights.
    pub fn pick(&self, key: u64) -> Arc<PluginVersion> {
        self.routing.load().pick(key).clone()
    }

    /// Every version that gets traffic, with its weight.
    pub fn targets(&self) -> Vec<(Arc<PluginVersion>, u32)> {
        self.routing.load().targets.clone()
    }

    /// Makes `new` the only active version, atomically; returns the version
    /// it replaced. Requests already running finish on their version.
    pub fn switch(&self, new: Arc<PluginVersion>) -> Result<Arc<PluginVersion>> {
        if new.name() != self.name {
            return Err(Error::WrongPlugin {
                current: self.name.clone(),
                new: new.name().to_string(),
            });
        }
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.routing.load_full();
        let replaced = old.pick(0).clone();
        self.routing
            .store(Arc::new(Routing::single(new, Some(old))));
        Ok(replaced)
    }

    /// Returns to the routing before the last switch; returns the version
    /// that now serves.
    pub fn rollback(&self) -> Result<Arc<PluginVersion>> {
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.routing.load_full();
        let previous = current
            .previous
            .clone()
            .ok_or_else(|| Error::NothingToRollBack(self.name.clone()))?;
        let serving = previous.pick(0).clone();
        self.routing.store(previous);
        Ok(serving)
    }
}
