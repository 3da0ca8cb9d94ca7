//! Apps' usage for the series store (`plateau_store::usage`), read from
//! this host's data plane by the agent's usage sampler at each sample:
//!
//! - `app_cpu_seconds`: CPU time of the app's replicas (each container's
//!   cgroup; a Wasm app's epoch ticks, 10 ms each);
//! - `app_memory_gb_hours`: memory in use at the sample (the containers'
//!   `memory.current`, or the linear memory of live Wasm instances) × the
//!   sample's hours;
//! - `app_requests`, `app_bandwidth_in_gb`: requests and their bytes
//!   (head and body) counted at the edge;
//! - `app_bandwidth_out_gb`: the answers' bytes at the edge, plus what
//!   Linux replicas sent beyond the host (their egress chains' counters);
//! - `app_cdn_hits`, `app_cdn_misses`, `app_cdn_bytes_served_gb`: what
//!   the edge's CDN answered from its cache (fresh, stale while it
//!   revalidated, or revalidated), what the app answered of the cacheable
//!   requests, and the body bytes the cache served (`plateau_edge::cdn`).
//!
//! Every counter only grows while the agent runs; a sample adds what grew
//! since the previous one. What a deployment's replicas used between the
//! last sample and their replacement is not counted.

use std::collections::HashMap;
use std::sync::Arc;

use plateau_edge::cdn::Stats as CdnStats;
use plateau_edge::demand::Seen;
use plateau_store::apps;
use plateau_store::usage::Increment;

use crate::supervisor::Plane;

const GB: f64 = 1e9;

/// What the previous sample read of one app.
#[derive(Default)]
struct Last {
    /// The replicas' handle the CPU and egress counters are of.
    handle: usize,
    cpu_usec: u64,
    egress_bytes: u64,
    seen: Seen,
    cdn: CdnStats,
}

/// Reads apps' usage from a plane, sample after sample.
pub struct AppMeter {
    plane: Plane,
    last: HashMap<String, Last>,
}

impl AppMeter {
    pub fn new(plane: Plane) -> AppMeter {
        AppMeter {
            plane,
            last: HashMap::new(),
        }
    }

    /// The increments of one sample `hours` long, on `day`.
    pub async fn sample(&mut self, hours: f64, day: &str) -> plateau_store::Result<Vec<Increment>> {
        let active = apps::active(self.plane.db()).await?;
        self.last.retain(|id, _| active.iter().any(|a| &a.id == id));
        let mut batch = Vec::new();
        for app in active {
            let last = self.last.entry(app.id.clone()).or_default();
            let seen = self.plane.edge().demand().seen(&app.slug);
            let (mut cpu_usec, mut egress, mut memory) = (0, 0, 0);
            if let Some(local) = self.plane.running(&app.id) {
                let handle = Arc::as_ptr(&local.handle) as *const () as usize;
                if handle != last.handle {
                    *last = Last {
                        handle,
                        seen: last.seen,
                        cdn: last.cdn,
                        ..Last::default()
                    };
                }
                let usage = local.handle.usage();
                let replicas = local.handle.clone();
                let sent = tokio::task::spawn_blocking(move || replicas.egress_bytes())
                    .await
                    .unwrap_or(0);
                cpu_usec = usage.cpu_usec.saturating_sub(last.cpu_usec);
                egress = sent.saturating_sub(last.egress_bytes);
                memory = usage.memory_bytes;
                last.cpu_usec = usage.cpu_usec.max(last.cpu_usec);
                last.egress_bytes = sent.max(last.egress_bytes);
            }
            let requests = seen.requests.saturating_sub(last.seen.requests);
            let bytes_in = seen.bytes_in.saturating_sub(last.seen.bytes_in);
            let bytes_out = seen.bytes_out.saturating_sub(last.seen.bytes_out);
            last.seen = seen;
            let cdn = self.plane.edge().cdn().stats(&app.slug);
            let cached = |s: &CdnStats| s.hits + s.stale + s.revalidated;
            // The edge starts an app's CDN counters over when it stops
            // serving the app (trash, restore): all they hold is new.
            if cached(&cdn) < cached(&last.cdn) || cdn.misses < last.cdn.misses {
                last.cdn = CdnStats::default();
            }
            let hits = cached(&cdn).saturating_sub(cached(&last.cdn));
            let misses = cdn.misses.saturating_sub(last.cdn.misses);
            let served = cdn.bytes_served.saturating_sub(last.cdn.bytes_served);
            last.cdn = cdn;
            let quantities = [
                ("app_cpu_seconds", cpu_usec as f64 / 1e6),
                ("app_memory_gb_hours", memory as f64 / GB * hours),
                ("app_requests", requests as f64),
                ("app_bandwidth_in_gb", bytes_in as f64 / GB),
                ("app_bandwidth_out_gb", (bytes_out + egress) as f64 / GB),
                ("app_cdn_hits", hits as f64),
                ("app_cdn_misses", misses as f64),
                ("app_cdn_bytes_served_gb", served as f64 / GB),
            ];
            for (metric, quantity) in quantities {
                if quantity > 0.0 {
                    batch.push(Increment {
                        org_id: app.org_id.clone(),
                        project_id: Some(app.project_id.clone()),
                        resource_type: "app",
                        resource_id: app.id.clone(),
                        metric,
                        day: day.to_owned(),
                        quantity,
                    });
                }
            }
        }
        Ok(batch)
    }
}
