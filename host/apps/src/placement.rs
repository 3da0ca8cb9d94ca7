//! Where an app runs when several hosts share one database. Each agent is
//! a runner (`plateau_store::runners`: its host's id, its edge's address,
//! a heartbeat renewed every quarter of the lease). An app is placed on
//! one runner the first time a plane follows it: the runner of its
//! volumes, else the live runner whose apps ask for the fewest replicas.
//! That runner launches its deployments and runs its replicas; every other
//! host's edge forwards the app's requests to that runner's edge
//! ([`RemoteReplicas`]).
//!
//! A migration (`POST /apps/{id}/migrate`) names a target runner: the
//! target launches the live deployment, health-checks it and serves it
//! from its own edge, then switches the placement to itself; the old
//! runner, following the database, sends its edge's requests to the
//! target and lets its replicas drain. An app placed on a runner whose
//! heartbeat is older than the lease is placed again on a live runner by
//! the first plane that notices, unless it has volumes (their data is on
//! the dead host): those move only when the operator says so
//! (`POST /admin/runners/{id}/evacuate`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_core::time;
use plateau_edge::Target;
use plateau_runner::remote::RemoteReplicas;
use plateau_store::apps::{App, volume_moves, volumes};
use plateau_store::events::{self, Actor};
use plateau_store::runners::{self, Placement};
use plateau_store::{Db, Result};
use serde_json::json;

use crate::pipeline::event;
use crate::supervisor::Plane;

/// This host as a runner.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    /// The host's id.
    pub id: String,
    /// Where other hosts' edges reach this host's edge.
    pub edge_address: SocketAddr,
    /// How long a heartbeat holds.
    pub lease: Duration,
}

/// What the plane knows of placement.
#[derive(Default)]
pub(crate) struct PlacementState {
    pub runner: Option<RunnerConfig>,
    /// Apps whose requests this edge forwards: their slug and where to.
    forwarded: Mutex<HashMap<String, (String, SocketAddr)>>,
}

/// What this host does for an app.
pub(crate) enum Role {
    /// Its replicas run here; `arriving` while a migration brings it here.
    Run { arriving: bool },
    /// Another runner's edge serves it.
    Forward(SocketAddr),
    /// It runs here and moves, with its volumes, to the migration's
    /// target: it stops here for the copy ([`crate::volumes::moving`]).
    Depart(Placement),
}

/// Registers this host as a runner and renews its lease until aborted.
pub async fn keep_heartbeat(db: Db, runner: RunnerConfig) {
    let every = (runner.lease / 4).max(Duration::from_millis(250));
    loop {
        tokio::time::sleep(every).await;
        let now = time::now_ms();
        let renewed = match runners::heartbeat(&db, &runner.id, now).await {
            Ok(true) => Ok(()),
            Ok(false) => register(&db, &runner).await,
            Err(e) => Err(e),
        };
        if let Err(e) = renewed {
            tracing::warn!(error = %e, "apps: renewing this runner's heartbeat");
        }
    }
}

/// Records this host as a runner, its lease starting now.
pub async fn register(db: &Db, runner: &RunnerConfig) -> Result<()> {
    let address = runner.edge_address.to_string();
    runners::register(db, &runner.id, &address, time::now_ms()).await
}

/// The live runner an app goes to, `except` one: the runner of its
/// volumes, else the one whose apps ask for the fewest replicas (ties to
/// the oldest); `None` when no runner is live.
pub async fn pick(
    db: &Db,
    app_id: &str,
    lease: Duration,
    except: Option<&str>,
) -> Result<Option<String>> {
    let now = time::now_ms();
    let lease_ms = lease.as_millis() as i64;
    let live: Vec<String> = runners::list(db)
        .await?
        .into_iter()
        .filter(|r| r.alive(now, lease_ms) && Some(r.id.as_str()) != except)
        .map(|r| r.id)
        .collect();
    if let Some(home) = volume_host(db, app_id).await? {
        return Ok(live.contains(&home).then_some(home));
    }
    let loads: HashMap<String, i64> = runners::loads(db).await?.into_iter().collect();
    Ok(live
        .into_iter()
        .enumerate()
        .min_by_key(|(i, id)| (loads.get(id).copied().unwrap_or(0), *i))
        .map(|(_, id)| id))
}

/// The host of the app's volumes, when it has some.
pub async fn volume_host(db: &Db, app_id: &str) -> Result<Option<String>> {
    Ok(volumes::list(db, app_id)
        .await?
        .into_iter()
        .find(|v| v.status != "deleting")
        .map(|v| v.host_id))
}

impl Plane {
    /// What this host does for `app`: places it first if no host did,
    /// and places it again if its runner is gone and it has no volumes.
    pub(crate) async fn role(&self, app: &App) -> Result<Role> {
        let Some(me) = &self.placement().runner else {
            return Ok(Role::Run { arriving: false });
        };
        let db = self.db();
        let placed = match runners::placement(db, &app.id).await? {
            Some(p) => p,
            None => {
                let pick = pick(db, &app.id, me.lease, None).await?;
                let to = pick.unwrap_or_else(|| me.id.clone());
                runners::place(db, &app.id, &to, time::now_ms()).await?
            }
        };
        if placed.target_runner_id.as_deref() == Some(me.id.as_str()) {
            return Ok(Role::Run { arriving: true });
        }
        if placed.runner_id == me.id {
            if placed.target_runner_id.is_some() && volume_host(db, &app.id).await?.is_some() {
                return Ok(Role::Depart(placed));
            }
            return Ok(Role::Run { arriving: false });
        }
        let now = time::now_ms();
        let runner = runners::get(db, &placed.runner_id).await?;
        let lease_ms = me.lease.as_millis() as i64;
        if let Some(r) = &runner
            && r.alive(now, lease_ms)
        {
            return Ok(
                address(&r.edge_address).map_or(Role::Run { arriving: false }, Role::Forward)
            );
        }
        if volume_host(db, &app.id).await?.is_none()
            && let Some(to) = pick(db, &app.id, me.lease, Some(&placed.runner_id)).await?
        {
            reschedule(db, app, &placed, &to, "runner_gone", &Actor::system()).await?;
            if to == me.id {
                return Ok(Role::Run { arriving: false });
            }
            if let Some(r) = runners::get(db, &to).await?
                && let Some(addr) = address(&r.edge_address)
            {
                return Ok(Role::Forward(addr));
            }
        }
        // Its runner is gone and it waits for the operator (or no runner
        // is live): requests go where it ran, and are answered 503.
        let last = runner.and_then(|r| address(&r.edge_address));
        Ok(last.map_or(Role::Run { arriving: false }, Role::Forward))
    }

    /// Sends the app's requests to another runner's edge; replicas it
    /// ran here drain with the requests they hold.
    pub(crate) fn forward(&self, app: &App, to: SocketAddr) {
        let mut forwarded = self
            .placement()
            .forwarded
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let same = forwarded.get(&app.id).is_some_and(|(_, a)| *a == to)
            && matches!(self.edge().get(&app.slug), Some(Target::Serving(_)));
        if !same {
            let remote = Arc::new(RemoteReplicas::new(to, self.edge().forwarding_token()));
            self.edge().set(&app.slug, Target::Serving(remote));
            forwarded.insert(app.id.clone(), (app.slug.clone(), to));
            tracing::info!(app = %app.id, to = %to, "apps: this edge forwards the app to the runner that serves it");
        }
        drop(forwarded);
        // Dropped, not stopped: requests in flight finish first.
        drop(self.take_local(&app.id));
    }

    /// Forgets that this edge forwards the app (it runs here now, or it
    /// is gone).
    pub(crate) fn stop_forwarding(&self, app_id: &str) {
        let mut forwarded = self
            .placement()
            .forwarded
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        forwarded.remove(app_id);
    }

    /// The apps this edge forwards that are not among `seen`: their
    /// routes are removed.
    pub(crate) fn drop_forwarded_except(&self, seen: &std::collections::HashSet<String>) {
        let mut forwarded = self
            .placement()
            .forwarded
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        forwarded.retain(|id, (slug, _)| {
            let keep = seen.contains(id);
            if !keep {
                self.edge().remove(slug);
            }
            keep
        });
    }

    /// Once the live deployment of an app migrating here serves from
    /// this host (or it sleeps at zero replicas), places the app here:
    /// every edge then routes to it. When it does not start here, the
    /// migration ends and the app stays where it was.
    pub(crate) async fn arrive(&self, app: &App) -> Result<()> {
        let Some(me) = &self.placement().runner else {
            return Ok(());
        };
        let serving = self.running(&app.id);
        let Some(live) = &app.live_deployment_id else {
            return Ok(());
        };
        let failed = self.recently_failed(&app.id, live);
        if !failed && app.replicas > 0 && serving.is_none_or(|l| &l.deployment_id != live) {
            return Ok(());
        }
        let now = time::now_ms();
        let mut tx = self.db().begin().await?;
        let Some(placed) = runners::placement_in(&mut tx, &app.id).await? else {
            return Ok(());
        };
        if !runners::end_migration(&mut tx, &app.id, &me.id, !failed, now).await? {
            return Ok(());
        }
        // The volumes that came with it stay (the source removes its
        // images), or go back to the source as they were.
        let moves = if failed {
            volume_moves::roll_back(&mut tx, &app.id, now).await?
        } else {
            volume_moves::finish(&mut tx, &app.id).await?
        };
        let started = placed.migration_started_at.unwrap_or(now);
        let kind = if failed {
            "app.migration_failed"
        } else {
            "app.migrated"
        };
        let mut data = json!({
            "from": placed.runner_id,
            "to": me.id,
            "afterMs": now - started,
            "volumesMoved": if failed { 0 } else { moves.len() },
        });
        if failed {
            data["cause"] = json!("start_failed");
            data["reason"] = json!(self.failure_reason(&app.id));
        }
        let e = event(app, kind, "update", &Actor::system()).data(data);
        events::record(&mut tx, &e, now).await?;
        tx.commit().await?;
        if let Some(vols) = self.volumes() {
            crate::volumes::moving::forget_all(vols, &moves).await;
        }
        if failed {
            // What started here stops; the app stays where it was.
            drop(self.take_local(&app.id));
        }
        tracing::info!(app = %app.id, from = %placed.runner_id, kind, "apps: a migration to this runner ended");
        Ok(())
    }
}

/// Places `app` on runner `to` instead of where `placed` says, with an
/// `app.rescheduled` event; false when its placement changed meanwhile.
pub async fn reschedule(
    db: &Db,
    app: &App,
    placed: &Placement,
    to: &str,
    cause: &str,
    actor: &Actor,
) -> Result<bool> {
    let now = time::now_ms();
    let mut tx = db.begin().await?;
    if !runners::reschedule(&mut tx, &app.id, &placed.runner_id, to, now).await? {
        return Ok(false);
    }
    // Only the operator moves an app with volumes off a dead runner: its
    // volumes are made again on the new one, from their latest backups.
    let volumes = runners::rehome_volumes(&mut tx, &app.id, to, now).await?;
    let e = event(app, "app.rescheduled", "update", actor).data(json!({
        "from": placed.runner_id,
        "to": to,
        "cause": cause,
        "volumesMoved": volumes,
    }));
    events::record(&mut tx, &e, now).await?;
    tx.commit().await?;
    tracing::info!(app = %app.id, from = %placed.runner_id, to, cause, "apps: the app was placed on another runner");
    Ok(true)
}

fn address(text: &str) -> Option<SocketAddr> {
    text.parse().ok()
}
