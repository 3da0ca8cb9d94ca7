//! The agent's autoscaler: samples the running apps that have autoscale
//! on, applies [`super::decide`], and records each change; takes an app
//! at zero replicas down and wakes it when the edge says a request came.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use plateau_core::time;
use plateau_edge::Target;
use plateau_store::apps::{self, App, autoscale};
use plateau_store::events::{self, Actor};
use serde_json::json;

use super::{AutoscaleConfig, Bounds, Observed, Reason, decide};
use crate::AppStatus;
use crate::pipeline::event;
use crate::supervisor::Plane;

/// One sample of an app's replicas.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    cpu_usec: u64,
    capacity_milli: u64,
}

/// What the autoscaler keeps of one app.
struct Watch {
    /// The replicas' handle the samples are of.
    handle: usize,
    samples: VecDeque<Sample>,
    /// `apps.replicas` as last read, and since when.
    replicas: i64,
    since: Instant,
}

impl Watch {
    /// CPU over the last `window` in percent of what the replicas could
    /// use; none until the samples span most of a window.
    fn cpu_pct(&self, window: Duration) -> Option<f64> {
        let newest = self.samples.back()?;
        let first = self
            .samples
            .iter()
            .position(|s| newest.at.duration_since(s.at) <= window)?;
        let span = newest.at.duration_since(self.samples[first].at);
        if span < window.mul_f64(0.9) {
            return None;
        }
        let (mut used, mut could) = (0f64, 0f64);
        for i in first + 1..self.samples.len() {
            let (a, b) = (self.samples[i - 1], self.samples[i]);
            used += b.cpu_usec.saturating_sub(a.cpu_usec) as f64;
            let micros = b.at.duration_since(a.at).as_micros() as f64;
            could += micros * a.capacity_milli as f64 / 1000.0;
        }
        (could > 0.0).then(|| used / could * 100.0)
    }
}

/// The autoscaler of one agent.
pub struct Autoscaler {
    plane: Plane,
    config: AutoscaleConfig,
    watched: HashMap<String, Watch>,
}

impl Autoscaler {
    /// Starts scaling the apps of `plane`, and has its edge wake apps
    /// asleep.
    pub fn start(plane: Plane, config: AutoscaleConfig) -> tokio::task::JoinHandle<()> {
        let waking = plane.clone();
        plane.edge().demand().set_waker(Box::new(move |slug| {
            let plane = waking.clone();
            let slug = slug.to_owned();
            tokio::spawn(async move {
                if let Err(e) = plane.wake(&slug).await {
                    tracing::warn!(app = %slug, error = %e, "autoscale: waking the app");
                }
            });
        }));
        let mut scaler = Autoscaler {
            plane,
            config,
            watched: HashMap::new(),
        };
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(scaler.config.tick()).await;
                if let Err(e) = scaler.tick().await {
                    tracing::warn!(error = %e, "autoscale: sampling the apps");
                }
            }
        })
    }

    async fn tick(&mut self) -> plateau_store::Result<()> {
        let db = self.plane.db().clone();
        let settings = autoscale::enabled(&db).await?;
        self.watched
            .retain(|id, _| settings.iter().any(|s| &s.app_id == id));
        let now = Instant::now();
        for s in settings {
            let Some(app) = apps::get_any(&db, &s.app_id).await? else {
                continue;
            };
            if app.deleted_at.is_some()
                || app.live_deployment_id.is_none()
                || AppStatus::Paused.is(&app.status)
            {
                continue;
            }
            let watch = self.watched.entry(app.id.clone()).or_insert(Watch {
                handle: 0,
                samples: VecDeque::new(),
                replicas: app.replicas,
                since: now,
            });
            if watch.replicas != app.replicas {
                // Changed by a wake, the user or another host.
                watch.replicas = app.replicas;
                watch.since = now;
                watch.samples.clear();
            }
            match self.plane.running(&app.id) {
                Some(local) => {
                    let handle = Arc::as_ptr(&local.handle) as *const () as usize;
                    if handle != watch.handle {
                        watch.handle = handle;
                        watch.samples.clear();
                    }
                    let usage = local.handle.usage();
                    watch.samples.push_back(Sample {
                        at: now,
                        cpu_usec: usage.cpu_usec,
                        capacity_milli: usage.capacity_milli,
                    });
                    let keep = self.config.window + self.config.tick() * 2;
                    while watch
                        .samples
                        .front()
                        .is_some_and(|s| now.duration_since(s.at) > keep)
                    {
                        watch.samples.pop_front();
                    }
                }
                None => watch.samples.clear(),
            }
            let seen = self.plane.edge().demand().seen(&app.slug);
            let cpu_pct = watch.cpu_pct(self.config.window);
            let observed = Observed {
                replicas: app.replicas,
                cpu_pct,
                since_change: now.duration_since(watch.since),
                idle_for: seen.idle_for,
                in_flight: seen.in_flight,
            };
            let bounds = Bounds {
                min: s.min_replicas,
                max: s.max_replicas,
                target_pct: s.cpu_target_pct,
            };
            if let Some((to, reason)) = decide(bounds, observed, &self.config)
                && scale(&self.plane, &app, to, reason, cpu_pct).await?
            {
                watch.replicas = to;
                watch.since = now;
                watch.samples.clear();
            }
        }
        Ok(())
    }
}

/// Records `app`'s replicas going from what was read to `to`, unless they
/// changed meanwhile, and has the plane follow; whether it did.
async fn scale(
    plane: &Plane,
    app: &App,
    to: i64,
    reason: Reason,
    cpu_pct: Option<f64>,
) -> plateau_store::Result<bool> {
    let now = time::now_ms();
    let mut tx = plane.db().begin().await?;
    if !autoscale::scale_from(&mut tx, &app.id, app.replicas, to, now).await? {
        return Ok(false);
    }
    let e = event(app, "app.scaled", "update", &Actor::system()).data(json!({
        "from": app.replicas,
        "to": to,
        "cause": "autoscale",
        "reason": reason.as_str(),
        "cpuPct": cpu_pct.map(|c| (c * 10.0).round() / 10.0),
    }));
    events::record(&mut tx, &e, now).await?;
    tx.commit().await?;
    tracing::info!(app = %app.id, from = app.replicas, to, reason = reason.as_str(), cpu_pct, "autoscale: scaled");
    let plane = plane.clone();
    let id = app.id.clone();
    tokio::spawn(async move {
        if let Err(e) = plane.follow_now(&id).await {
            tracing::warn!(app = %id, error = %e, "autoscale: following a scale");
        }
    });
    Ok(true)
}

impl Plane {
    /// Serves `app` with zero replicas: its name holds requests, the
    /// first of which wakes it, and its replicas stop once the requests
    /// they hold are answered. The caller holds the app's lock.
    pub(crate) fn sleep(&self, app: &App) {
        let edge = self.edge();
        edge.demand().sleep(&app.slug);
        if !matches!(edge.get(&app.slug), Some(Target::Loading)) {
            edge.set(&app.slug, Target::Loading);
        }
        if let Some(local) = self.take_local(&app.id) {
            local.handle.stop();
        }
    }

    /// A request came for the app at `slug`, asleep: it gets a replica
    /// (recorded as a scale from 0 to 1) and the plane starts it.
    async fn wake(&self, slug: &str) -> plateau_store::Result<()> {
        let Some(app) = apps::active(self.db())
            .await?
            .into_iter()
            .find(|a| a.slug == slug)
        else {
            return Ok(());
        };
        if AppStatus::Paused.is(&app.status) {
            return Ok(());
        }
        if app.replicas == 0 {
            let now = time::now_ms();
            let mut tx = self.db().begin().await?;
            if autoscale::scale_from(&mut tx, &app.id, 0, 1, now).await? {
                let e = event(&app, "app.scaled", "update", &Actor::system())
                    .data(json!({ "from": 0, "to": 1, "cause": "request" }));
                events::record(&mut tx, &e, now).await?;
            }
            tx.commit().await?;
            tracing::info!(app = %app.id, "autoscale: a request woke the app");
        }
        self.follow_now(&app.id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_the_share_of_what_the_replicas_could_use() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut watch = Watch {
            handle: 1,
            samples: VecDeque::new(),
            replicas: 1,
            since: start,
        };
        // One replica of 500 milli-CPU using 250 ms of CPU a second: 50%.
        for i in 0..=10u64 {
            watch.samples.push_back(Sample {
                at: at(i * 100),
                cpu_usec: i * 25_000,
                capacity_milli: 500,
            });
        }
        let pct = watch.cpu_pct(Duration::from_secs(1)).unwrap();
        assert!((pct - 50.0).abs() < 0.01, "{pct}");
        assert_eq!(
            watch.cpu_pct(Duration::from_secs(2)),
            None,
            "not a full window"
        );
    }
}
