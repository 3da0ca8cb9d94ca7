//! Fuel metering: every plugin request's fuel is added to its
//! organisation's daily meter (`plugin_usage`), buffered in memory and
//! flushed every few seconds and at shutdown, so metering adds no write to
//! the request path. Also caches each organisation's default project,
//! which never changes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use plateau_api::error::ApiError;
use plateau_core::time;
use plateau_store::usage::{self, Increment};
use plateau_store::{Db, plugins, projects};

/// Day (days since the Unix epoch, UTC) to organisation to plugin to
/// (requests, fuel): nested so that recording a request for a known
/// organisation and plugin allocates nothing.
type Pending = HashMap<i64, HashMap<String, HashMap<String, (i64, i64)>>>;

const MS_PER_DAY: i64 = 86_400_000;

/// The value under `key`, inserted empty first if missing; unlike `entry`,
/// allocates the key only when it is new.
fn slot<'a, V: Default>(map: &'a mut HashMap<String, V>, key: &str) -> &'a mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// The series store's points of `pending`: requests and fuel per plugin.
fn series(pending: &Pending) -> Vec<Increment> {
    let mut batch = Vec::new();
    for (day, orgs) in pending {
        let day = time::to_date(day * MS_PER_DAY);
        for (org, by_plugin) in orgs {
            for (plugin, (requests, fuel)) in by_plugin {
                for (metric, quantity) in [("plugin_requests", *requests), ("plugin_fuel", *fuel)] {
                    batch.push(Increment {
                        org_id: org.clone(),
                        project_id: None,
                        resource_type: "plugin",
                        resource_id: plugin.clone(),
                        metric,
                        day: day.clone(),
                        quantity: quantity as f64,
                    });
                }
            }
        }
    }
    batch
}

#[derive(Default)]
pub struct Meter {
    pending: Mutex<Pending>,
    default_projects: Mutex<HashMap<String, String>>,
}

impl Meter {
    pub fn record(&self, org_id: &str, plugin: &str, fuel: u64) {
        let day = time::now_ms().div_euclid(MS_PER_DAY);
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let entry = slot(slot(pending.entry(day).or_default(), org_id), plugin);
        entry.0 += 1;
        entry.1 = entry
            .1
            .saturating_add(i64::try_from(fuel).unwrap_or(i64::MAX));
    }

    /// Writes what was recorded since the last flush.
    pub async fn flush(&self, db: &Db) {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        if let Err(e) = usage::add(db, &series(&pending)).await {
            tracing::warn!(error = %e, "recording plugin usage in the series store");
        }
        for (day, orgs) in pending {
            let day = time::to_date(day * MS_PER_DAY);
            for (org, by_plugin) in orgs {
                for (plugin, (requests, fuel)) in by_plugin {
                    if let Err(e) =
                        plugins::add_usage(db, &org, &plugin, &day, requests, fuel).await
                    {
                        tracing::warn!(error = %e, org, plugin, "recording plugin usage");
                    }
                }
            }
        }
    }

    /// Flushes every `period` until the task is dropped.
    pub async fn keep_flushing(self: std::sync::Arc<Self>, db: Db, period: Duration) {
        let mut every = tokio::time::interval(period);
        loop {
            every.tick().await;
            self.flush(&db).await;
        }
    }

    pub async fn default_project(&self, db: &Db, org_id: &str) -> Result<String, ApiError> {
        if let Some(id) = self
            .default_projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(org_id)
        {
            return Ok(id.clone());
        }
        let project = projects::default_for(db, org_id).await?.ok_or_else(|| {
            ApiError::Internal(format!("organization {org_id} has no default project"))
        })?;
        self.default_projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(org_id.to_owned(), project.id.clone());
        Ok(project.id)
    }
}
