//! Volumes moving with their app to another runner (`POST /apps/{id}/migrate`
//! of an app with volumes), driven by the two agents through the database.
//!
//! 1. The source (the app's runner, a migration's target named) stops the
//!    app: its edge holds new requests (as for a loading app, up to the
//!    edge's hold, then 503 with `Retry-After`), its replicas drain the
//!    requests they hold and are torn down ([`Plane::depart`]).
//! 2. Once nothing of them runs, each volume is snapshotted as a backup is
//!    (frozen while its image is copied) into the volume backup store, and
//!    one transaction records the moves and hands the volumes' rows to the
//!    target (`creating` there): `plateau_store::apps::volume_moves`.
//! 3. The target's kernel restores each snapshot into a new image (whole or
//!    not at all: `image.partial`, then a rename) and mounts it; the
//!    target's plane launches the app with them, health-checks it, serves
//!    it and switches the placement, ending the moves in the same
//!    transaction ([`Plane::arrive`](crate::Plane)).
//! 4. The source's edge forwards to the target; its images are removed by
//!    [`Volumes::sweep`] once no move of them is under way and their rows
//!    are another host's: so only after the switch.
//!
//! Writes between snapshot and switch: there are none. The app does not
//! run anywhere from the moment its source replicas are torn down until
//! the target serves it, so every write the app acknowledged is in the
//! snapshot; requests meanwhile wait at the edge. A failed start on the
//! target (or a target whose lease expires) ends the migration: the
//! volumes go back to the source as they were, their images there never
//! having been touched, and the app starts there again.

use std::time::{Duration, Instant};

use plateau_core::time;
use plateau_edge::Target;
use plateau_store::apps::volume_moves::{self, Move};
use plateau_store::apps::{App, volumes};
use plateau_store::events::{self, Actor};
use plateau_store::runners::{self, Placement};
use serde_json::json;

use super::{Volumes, disk::Disk};
use crate::Plane;
use crate::pipeline::event;

/// How often leftover images are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(3);
/// Longest wait for the source's replicas to drain and be torn down.
const DRAIN_WITHIN: Duration = Duration::from_secs(40);

/// Where an arriving app's volumes are.
pub(crate) enum Arrival {
    /// All made and mounted here (or the app has none).
    Here,
    /// Still on their way.
    Waiting,
    /// One failed to be made here.
    Failed(String),
}

impl Plane {
    /// Stops the app here for its volumes' move to `placed`'s target, then
    /// snapshots them and hands them over; the app stays stopped until the
    /// migration ends. Ends the migration instead when its target's lease
    /// expired. The caller holds the app's lock.
    pub(crate) async fn depart(&self, app: &App, placed: &Placement) -> plateau_store::Result<()> {
        let Some(me) = self.placement().runner.clone() else {
            return Ok(());
        };
        let Some(target) = placed.target_runner_id.clone() else {
            return Ok(());
        };
        let db = self.db();
        let lease = me.lease.as_millis() as i64;
        let target_live = runners::get(db, &target)
            .await?
            .is_some_and(|r| r.alive(time::now_ms(), lease));
        if !target_live {
            return self.end_failed(app, &target, "target_gone").await;
        }
        // New requests wait; the replicas finish theirs and are torn down.
        if !matches!(self.edge().get(&app.slug), Some(Target::Loading)) {
            self.edge().set(&app.slug, Target::Loading);
        }
        if let Some(local) = self.take_local(&app.id) {
            local.handle.stop();
            let started = Instant::now();
            while !local.handle.drained() {
                if started.elapsed() > DRAIN_WITHIN {
                    tracing::warn!(app = %app.id, "apps: the replicas of a moving app did not drain; retrying");
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let mine: Vec<volumes::Volume> = volumes::list(db, &app.id)
            .await?
            .into_iter()
            .filter(|v| v.status != "deleting" && v.host_id == me.id)
            .collect();
        if mine.is_empty() {
            // Handed over already: the target takes it from here.
            return Ok(());
        }
        let Some(vols) = self.volumes() else {
            tracing::warn!(app = %app.id, "apps: this plane has no volumes to move");
            return Ok(());
        };
        let started = Instant::now();
        let mut moves = Vec::new();
        for v in &mine {
            match vols.snapshot_for_move(v).await {
                Ok((object_key, size_bytes)) => moves.push(Move {
                    volume_id: v.id.clone(),
                    app_id: app.id.clone(),
                    from_host_id: me.id.clone(),
                    to_host_id: target.clone(),
                    from_placement: v.placement.clone(),
                    object_key,
                    size_bytes,
                    created_at: time::now_ms(),
                }),
                Err(e) => {
                    tracing::warn!(app = %app.id, volume = %v.id, error = %e, "apps: snapshotting a moving volume; retrying");
                    forget_all(vols, &moves).await;
                    return Ok(());
                }
            }
        }
        let mut tx = db.begin().await?;
        let still = runners::placement_in(&mut tx, &app.id)
            .await?
            .is_some_and(|p| {
                p.runner_id == me.id && p.target_runner_id.as_deref() == Some(&target)
            });
        let mut recorded = still;
        for m in &moves {
            if !recorded {
                break;
            }
            recorded = volume_moves::record(&mut tx, m).await?;
        }
        if !recorded {
            drop(tx);
            forget_all(vols, &moves).await;
            return Ok(());
        }
        tx.commit().await?;
        let bytes: i64 = moves.iter().map(|m| m.size_bytes).sum();
        tracing::info!(app = %app.id, to = %target, volumes = moves.len(), bytes,
            secs = started.elapsed().as_secs_f64(), "apps: the volumes of a moving app were handed over");
        Ok(())
    }

    /// Where the volumes of an app migrating here are.
    pub(crate) async fn arrival(&self, app: &App) -> plateau_store::Result<Arrival> {
        let Some(me) = &self.placement().runner else {
            return Ok(Arrival::Here);
        };
        for v in volumes::list(self.db(), &app.id).await? {
            if v.status == "deleting" {
                continue;
            }
            if v.host_id != me.id {
                return Ok(Arrival::Waiting);
            }
            match v.status.as_str() {
                "failed" => {
                    let why = v.status_detail.unwrap_or_default();
                    return Ok(Arrival::Failed(format!("volume {}: {why}", v.id)));
                }
                "running" | "degraded" if !v.placement.is_empty() => {}
                _ => return Ok(Arrival::Waiting),
            }
        }
        Ok(Arrival::Here)
    }

    /// Ends the migration of `app` to `target` as failed (`cause`): the
    /// app stays, or starts again, where it was, with its volumes.
    pub(crate) async fn end_failed(
        &self,
        app: &App,
        target: &str,
        cause: &str,
    ) -> plateau_store::Result<()> {
        let now = time::now_ms();
        let mut tx = self.db().begin().await?;
        let Some(placed) = runners::placement_in(&mut tx, &app.id).await? else {
            return Ok(());
        };
        if !runners::end_migration(&mut tx, &app.id, target, false, now).await? {
            return Ok(());
        }
        let moves = volume_moves::roll_back(&mut tx, &app.id, now).await?;
        let e = event(app, "app.migration_failed", "update", &Actor::system()).data(json!({
            "from": placed.runner_id,
            "to": target,
            "cause": cause,
            "afterMs": now - placed.migration_started_at.unwrap_or(now),
        }));
        events::record(&mut tx, &e, now).await?;
        tx.commit().await?;
        if let Some(vols) = self.volumes() {
            forget_all(vols, &moves).await;
        }
        tracing::info!(app = %app.id, to = target, cause, "apps: a migration ended without moving the app");
        Ok(())
    }
}

/// Removes the snapshots of moves that ended (or were never recorded).
pub(crate) async fn forget_all(vols: &Volumes, moves: &[Move]) {
    for m in moves {
        vols.forget(&m.object_key).await;
    }
}

impl Volumes {
    /// Removes the images this host keeps of volumes that are no longer
    /// its own and are not moving: a moved volume's source image once the
    /// app switched, a target's copy once a migration failed, and what a
    /// deleted volume left. Each under the volume's lock.
    pub async fn sweep(&self) {
        self.sweep_scratch().await;
        self.sweep_staged().await;
        let Ok(entries) = std::fs::read_dir(&self.inner.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("vol_") {
                continue;
            }
            if let Err(e) = self.sweep_one(&name).await {
                tracing::warn!(volume = %name, error = %e, "apps: removing a volume this host no longer holds");
            }
        }
    }

    async fn sweep_one(&self, id: &str) -> Result<(), String> {
        let leftover = |held: Option<(String, bool)>| match held {
            Some((host, moving)) => host != self.inner.host_id && !moving,
            None => true,
        };
        let held = volume_moves::holder(&self.inner.db, id).await;
        if !leftover(held.map_err(|e| e.to_string())?) {
            return Ok(());
        }
        if let Some(plane) = self.inner.plane.get()
            && plane.uses_volume(id)
        {
            return Ok(());
        }
        let _held = self
            .inner
            .locks
            .lock(id)
            .await
            .map_err(|e| format!("locking the volume: {e}"))?;
        // Again under the lock: a move may have gone back meanwhile.
        let held = volume_moves::holder(&self.inner.db, id).await;
        if !leftover(held.map_err(|e| e.to_string())?) {
            return Ok(());
        }
        let d = Disk::of(&self.inner.root, id);
        tokio::task::spawn_blocking(move || d.remove())
            .await
            .map_err(|e| e.to_string())??;
        tracing::info!(volume = %id, "apps: removed the image of a volume another host holds now");
        Ok(())
    }

    /// Removes the frozen copies a killed snapshot left (`.backups/<volume
    /// id>.<name>.img`): one that exists once the volume's lock is free is
    /// nobody's.
    async fn sweep_scratch(&self) {
        let scratch = self.inner.root.join(".backups");
        let Ok(entries) = std::fs::read_dir(&scratch) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((id, _)) = name.split_once('.') else {
                continue;
            };
            let Ok(_held) = self.inner.locks.lock(id).await else {
                continue;
            };
            if std::fs::remove_file(entry.path()).is_ok() {
                tracing::info!(file = %name, "apps: removed the copy an interrupted volume snapshot left");
            }
        }
    }

    /// Sweeps every few seconds until aborted.
    pub async fn keep_sweeping(self) {
        loop {
            tokio::time::sleep(SWEEP_EVERY).await;
            self.sweep().await;
        }
    }
}
