//! The agent's usage sampler: what this host runs, measured every
//! `PLATEAU_USAGE_SAMPLE_MS` and written to the series store in one batch
//! (`plateau_store::usage`), without the API process.
//!
//! Per sample of `Δ` hours: a running or degraded cache or database adds
//! `(replicas + 1) × Δ` compute hours and `GB on disk × Δ` disk GB-hours
//! (its directory under the data dir, every node's data); and, on the one
//! host that samples what hosts share ([`usage::samples_shared`]), each
//! bucket adds `GB stored × Δ` and each organisation's registry
//! `GB × Δ`. Apps add what `plateau_apps::metering` read of this host's
//! data plane (CPU seconds, memory GB-hours, requests, bandwidth). The first sample after a start only sets the clock, and `Δ`
//! is capped at two intervals, so time the agent was down is not charged.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use plateau_apps::metering::AppMeter;
use plateau_core::time;
use plateau_store::Db;
use plateau_store::usage::{self, Increment};

const GB: f64 = 1e9;

/// How often usage is sampled.
#[derive(Args, Clone, Debug)]
pub struct UsageArgs {
    /// Milliseconds between the agent's usage samples (compute hours, disk,
    /// stored bytes), each written to the series store in one batch.
    #[arg(long, env = "PLATEAU_USAGE_SAMPLE_MS", default_value_t = 60_000)]
    pub usage_sample_ms: u64,
}

/// Samples until aborted; `apps` reads the usage of this host's apps.
pub fn spawn_sampler(
    args: &UsageArgs,
    db: Db,
    data_dir: PathBuf,
    host_id: String,
    mut apps: Option<AppMeter>,
) -> tokio::task::JoinHandle<()> {
    let interval = Duration::from_millis(args.usage_sample_ms.max(100));
    tokio::spawn(async move {
        let mut last = Instant::now();
        loop {
            tokio::time::sleep(interval).await;
            let now = Instant::now();
            let hours = now.duration_since(last).min(interval * 2).as_secs_f64() / 3600.0;
            last = now;
            let mut sampled = sample(&db, &data_dir, &host_id, hours).await;
            if let (Ok(batch), Some(apps)) = (&mut sampled, &mut apps) {
                let day = time::to_date(time::now_ms());
                match apps.sample(hours, &day).await {
                    Ok(more) => batch.extend(more),
                    Err(e) => tracing::warn!(error = %e, "sampling apps' usage"),
                }
            }
            match sampled {
                Ok(batch) => {
                    if let Err(e) = usage::add(&db, &batch).await {
                        tracing::warn!(error = %e, points = batch.len(), "writing usage");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "sampling usage"),
            }
        }
    })
}

/// One sample's increments, `hours` long.
async fn sample(
    db: &Db,
    data_dir: &Path,
    host_id: &str,
    hours: f64,
) -> plateau_store::Result<Vec<Increment>> {
    let day = time::to_date(time::now_ms());
    let mut batch = Vec::new();
    let mut add = |org: &str, project: Option<String>, kind, id: &str, metric, quantity: f64| {
        if quantity > 0.0 {
            batch.push(Increment {
                org_id: org.to_owned(),
                project_id: project,
                resource_type: kind,
                resource_id: id.to_owned(),
                metric,
                day: day.clone(),
                quantity,
            });
        }
    };
    for (databases, kind, dir) in [(false, "cache", "caches"), (true, "database", "databases")] {
        for r in usage::running_on_host(db, databases, host_id).await? {
            if !matches!(r.status.as_str(), "running" | "degraded") {
                continue;
            }
            let nodes = (r.replicas + 1) as f64;
            add(
                &r.org_id,
                r.project_id.clone(),
                kind,
                &r.id,
                "compute_hours",
                nodes * hours,
            );
            let path = data_dir.join(dir).join(&r.id);
            let bytes = tokio::task::spawn_blocking(move || dir_bytes(&path))
                .await
                .unwrap_or(0);
            add(
                &r.org_id,
                r.project_id,
                kind,
                &r.id,
                "disk_gb_hours",
                bytes as f64 / GB * hours,
            );
        }
    }
    if usage::samples_shared(db, host_id).await? {
        for (id, org, project, bytes) in usage::buckets(db).await? {
            add(
                &org,
                project,
                "bucket",
                &id,
                "storage_gb_hours",
                bytes as f64 / GB * hours,
            );
        }
        for (org, bytes) in usage::registry_bytes(db).await? {
            add(
                &org,
                None,
                "registry",
                "registry",
                "registry_gb_hours",
                bytes as f64 / GB * hours,
            );
        }
    }
    Ok(batch)
}

/// Bytes under `path`, symbolic links not followed; what cannot be read counts 0.
fn dir_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if meta.is_symlink() {
            continue;
        }
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_bytes_counts_nested_files_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/x"), [0u8; 1000]).unwrap();
        std::fs::write(dir.path().join("y"), [0u8; 24]).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("link")).unwrap();
        assert_eq!(dir_bytes(dir.path()), 1024);
        assert_eq!(dir_bytes(&dir.path().join("missing")), 0);
    }
}
