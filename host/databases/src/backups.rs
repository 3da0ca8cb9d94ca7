//! Backups as the data plane runs them (issue 32). In `plateau agent`, so
//! they go on while the API process is down, [`DatabaseService::spawn_backups`]
//! ships each running cluster's archived WAL every second, asks for a
//! base backup of a cluster with none newer than `backup_every`, takes
//! the backups asked for (by that schedule or by `POST
//! /databases/{id}/backups`) each in a task of its own, prunes what a
//! live cluster's `backupRetentionDays` no longer covers (its newest full
//! backup and the WAL after it always kept), and removes the ledger and
//! objects of a deleted cluster once they expire. A restore is the
//! creation of a new cluster ([`DatabaseService::restore_into`], called
//! by the reconciler's apply).

use std::sync::Arc;
use std::time::{Duration, Instant};

use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::databases::backups::{self, Backup, Finished, Restore};
use plateau_store::events::{Actor, NewEvent};
use plateau_store::managed::{self, Table};
use serde::{Deserialize, Serialize};

use crate::service::DatabaseService;
use crate::spec::{Placement, RestoreFrom};
use crate::{Error, Result};

/// How often the retention of live clusters and the sweep of deleted
/// ones run.
const PRUNE_EVERY: Duration = Duration::from_secs(60);
/// Empties every table outside the system's schemas (a structure-only
/// branch), sequences restarted.
const EMPTY_TABLES: &str = "DO $$ DECLARE r record; BEGIN \
    FOR r IN SELECT n.nspname, c.relname FROM pg_catalog.pg_class c \
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
    WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
    AND n.nspname NOT LIKE 'pg\\_%' LOOP \
    EXECUTE pg_catalog.format('TRUNCATE TABLE %I.%I RESTART IDENTITY CASCADE', r.nspname, r.relname); \
    END LOOP; END $$";
/// How long after a scheduled backup was asked for another may be.
const RETRY_AFTER: Duration = Duration::from_secs(300);

/// What a ledger row remembers of its cluster (`settings`): what a
/// restore needs once the cluster is gone.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub version: String,
    pub owner: String,
    pub database: String,
    pub memory_mb: i64,
    pub cpus: i64,
    pub disk_gb: i64,
}

impl Source {
    pub fn of(d: &plateau_store::databases::Database, placement: &Placement) -> Source {
        Source {
            version: d.version.clone(),
            owner: placement.owner.clone(),
            database: placement.database.clone(),
            memory_mb: d.memory_mb,
            cpus: d.cpus,
            disk_gb: d.disk_gb,
        }
    }

    pub fn read(text: &str) -> Source {
        serde_json::from_str(text).unwrap_or_default()
    }
}

/// A new ledger row of `kind` asked for now (`pending`).
pub fn asked(d: &plateau_store::databases::Database, placement: &Placement, kind: &str) -> Backup {
    Backup {
        id: new_id("dbb"),
        org_id: d.org_id.clone(),
        database_id: d.id.clone(),
        database_name: d.name.clone(),
        settings: serde_json::to_string(&Source::of(d, placement)).expect("serializes"),
        kind: kind.to_owned(),
        status: "pending".to_owned(),
        detail: None,
        started_at: None,
        ended_at: None,
        size_bytes: 0,
        wal_start: None,
        wal_end: None,
        created_at: time::now_ms(),
        expires_at: None,
    }
}

impl DatabaseService {
    /// Runs the backups of this host's clusters until aborted.
    pub fn spawn_backups(self: Arc<Self>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            if let Err(e) =
                backups::fail_interrupted(self.db(), self.host_id(), time::now_ms()).await
            {
                tracing::warn!(error = %e, "failing interrupted database backups");
            }
            let interrupted = plateau_store::databases::dumps::fail_interrupted(
                self.db(),
                self.host_id(),
                time::now_ms(),
            );
            if let Err(e) = interrupted.await {
                tracing::warn!(error = %e, "failing interrupted dump restores");
            }
            let mut pruned: Option<Instant> = None;
            loop {
                let prune = pruned.is_none_or(|t| t.elapsed() >= PRUNE_EVERY);
                if prune {
                    pruned = Some(Instant::now());
                }
                if let Err(e) = self.clone().backup_round(prune).await {
                    tracing::warn!(error = %e, "a round of database backups");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    }

    async fn backup_round(self: Arc<Self>, prune: bool) -> Result<()> {
        let now = time::now_ms();
        for state in managed::list_on_host(self.db(), Table::Databases, self.host_id()).await? {
            if !matches!(state.status.as_str(), "running" | "degraded")
                || state.placement.is_empty()
            {
                continue;
            }
            let placement = Placement::from_json(&state.placement)?;
            if let Err(e) = self.provider().ship_wal(&placement).await {
                tracing::warn!(database = %state.id, error = %e, "shipping archived WAL");
            }
            let Some(d) =
                plateau_store::databases::get(self.db(), &state.org_id, &state.id).await?
            else {
                continue;
            };
            let due = match backups::latest(self.db(), &d.id, "full").await? {
                Some(b) => {
                    now - b.ended_at.unwrap_or(0) >= self.config().backup_every.as_millis() as i64
                }
                None => true,
            };
            // A failed try is tried again, not at once.
            let retry = backups::last_asked(self.db(), &d.id)
                .await?
                .is_none_or(|at| now - at >= RETRY_AFTER.as_millis() as i64);
            if due && retry && !backups::in_flight(self.db(), &d.id).await? {
                backups::insert(self.db(), &asked(&d, &placement, "full")).await?;
            }
            if prune {
                let before = now - d.backup_retention_days * 86_400_000;
                self.prune(&d.id, before).await?;
            }
        }
        for b in backups::pending(self.db(), self.host_id()).await? {
            if backups::start(self.db(), &b.id, time::now_ms()).await? {
                let service = self.clone();
                tokio::spawn(async move { service.take(b).await });
            }
        }
        for job in plateau_store::databases::dumps::pending(self.db(), self.host_id()).await? {
            if plateau_store::databases::dumps::start(self.db(), &job.id, time::now_ms()).await? {
                let service = self.clone();
                tokio::spawn(async move { service.run_dump_job(job).await });
            }
        }
        if prune {
            self.expire_branches(now).await?;
            for id in backups::expired_databases(self.db(), now, 100).await? {
                self.provider().drop_backups(&id).await?;
                backups::remove_database(self.db(), &id).await?;
            }
        }
        Ok(())
    }

    /// Deletes the unprotected branches whose TTL ended.
    async fn expire_branches(&self, now: i64) -> Result<()> {
        use plateau_store::databases::branches;
        for (org_id, id) in branches::expired(self.db(), self.host_id(), now).await? {
            let event = NewEvent::audited(
                &org_id,
                "database.deleted",
                "resources",
                "delete",
                &Actor::system(),
            )
            .resource("database", &id)
            .data(serde_json::json!({ "reason": "the branch's ttlHours ended" }));
            let mut tx = self.db().begin().await?;
            managed::request(&mut tx, Table::Databases, &org_id, &id, "deleting", now).await?;
            plateau_store::events::record(&mut tx, &event, now).await?;
            tx.commit().await?;
        }
        Ok(())
    }

    /// Removes the rows and objects of cluster `id` older than `before`.
    async fn prune(&self, id: &str, before: i64) -> Result<()> {
        let old = backups::outdated(self.db(), id, before).await?;
        if old.is_empty() {
            return Ok(());
        }
        let keep = backups::latest(self.db(), id, "full").await?;
        let ids: Vec<String> = old.iter().map(|b| b.id.clone()).collect();
        let wal_before = keep.and_then(|k| k.wal_start);
        self.provider()
            .prune_backups(id, &ids, wal_before.as_deref())
            .await?;
        backups::remove(self.db(), &ids).await?;
        Ok(())
    }

    /// Takes backup `b` and records how it went.
    async fn take(&self, b: Backup) {
        let started_at = time::now_ms();
        let taken = self.run(&b, started_at).await;
        let (kind, data) = match &taken {
            Ok(f) => {
                let done = backups::complete(self.db(), &b.id, f).await;
                if let Err(e) = done {
                    tracing::warn!(backup = %b.id, error = %e, "recording a database backup");
                }
                (
                    "database.backup_completed",
                    serde_json::json!({ "backupId": b.id, "kind": b.kind, "sizeBytes": f.size_bytes }),
                )
            }
            Err(e) => {
                let _ = backups::fail(self.db(), &b.id, &e.to_string(), time::now_ms()).await;
                (
                    "database.backup_failed",
                    serde_json::json!({ "backupId": b.id, "kind": b.kind, "error": e.to_string() }),
                )
            }
        };
        let event = NewEvent::audited(&b.org_id, kind, "resources", "create", &Actor::system())
            .resource("database", &b.database_id)
            .data(data);
        if let Err(e) = self.record_event(&event).await {
            tracing::warn!(backup = %b.id, error = %e, "recording a backup's event");
        }
    }

    async fn run(&self, b: &Backup, started_at: i64) -> Result<Finished> {
        let d = plateau_store::databases::get(self.db(), &b.org_id, &b.database_id)
            .await?
            .ok_or_else(|| Error::NotPlaced(format!("database {} is gone", b.database_id)))?;
        let placement = Self::placement(&d)?;
        let credentials = self.credentials(&d)?;
        if b.kind == "full" {
            let base = self
                .provider()
                .base_backup(&placement, &credentials, &b.id)
                .await?;
            return Ok(Finished {
                started_at: base.started_at,
                ended_at: base.ended_at,
                size_bytes: base.size_bytes as i64,
                wal_start: base.wal_start,
                wal_end: base.wal_end,
            });
        }
        // Incremental: the WAL since the last entry, closed and shipped.
        let previous = backups::list(self.db(), &b.org_id, &b.database_id)
            .await?
            .into_iter()
            .filter(|p| p.status == "completed")
            .filter_map(|p| p.wal_end)
            .max();
        let (segment, bytes) = self.provider().flush_wal(&placement, &credentials).await?;
        Ok(Finished {
            started_at,
            ended_at: time::now_ms(),
            size_bytes: bytes as i64,
            wal_start: previous.unwrap_or_else(|| segment.clone()),
            wal_end: segment,
        })
    }

    /// Makes cluster `d` by restore `r` (the reconciler's apply of a
    /// cluster not placed yet that a restore makes). A source still
    /// running on this host first closes and ships its current WAL, so
    /// the copy reaches up to now.
    pub(crate) async fn restore_into(
        &self,
        d: &plateau_store::databases::Database,
        r: &Restore,
    ) -> Result<Placement> {
        let backup = backups::get(self.db(), &r.backup_id)
            .await?
            .ok_or_else(|| Error::Missing(format!("backup {} is gone", r.backup_id)))?;
        let source = Source::read(&backup.settings);
        self.close_wal_of(&r.org_id, &r.source_id).await?;
        let from = RestoreFrom {
            source: r.source_id.clone(),
            backup_id: backup.id.clone(),
            wal_start: backup.wal_start.clone().unwrap_or_default(),
            owner: source.owner,
            database: source.database,
            target_time: r.target_time,
        };
        let credentials = self.credentials(d)?;
        let placement = self
            .provider()
            .restore(&Self::spec(d), &credentials, &from)
            .await?;
        let branch = plateau_store::databases::branches::of(self.db(), &d.id).await?;
        if branch.is_some_and(|b| b.schema_only != 0)
            && let Err(e) = self.empty_tables(&placement, &credentials).await
        {
            let _ = self.provider().delete(&d.id, Some(&placement)).await;
            return Err(e);
        }
        Ok(placement)
    }

    /// Closes the current WAL segment of the source of a copy (a restore,
    /// a branch, a reset) and ships it, when that source runs here: the
    /// copy then holds every commit made before now.
    pub(crate) async fn close_wal_of(&self, org_id: &str, source_id: &str) -> Result<()> {
        if let Some(s) = plateau_store::databases::get(self.db(), org_id, source_id).await?
            && s.host_id == self.host_id()
            && let Ok(placement) = Self::placement(&s)
        {
            let flushed = async {
                let credentials = self.credentials(&s)?;
                self.provider().flush_wal(&placement, &credentials).await
            }
            .await;
            if let Err(e) = flushed {
                tracing::warn!(database = %s.id, error = %e, "closing the WAL of a copy's source");
            }
        }
        Ok(())
    }

    /// Empties every table of cluster `placement` (a structure-only
    /// branch).
    pub(crate) async fn empty_tables(
        &self,
        placement: &Placement,
        credentials: &crate::spec::Credentials,
    ) -> Result<()> {
        let mut conn = self
            .provider()
            .connect(
                placement,
                crate::spec::ADMIN_ROLE,
                &credentials.admin_password,
                &placement.database,
            )
            .await?;
        sqlx::Executor::execute(&mut conn, sqlx::raw_sql(EMPTY_TABLES)).await?;
        Ok(())
    }

    /// Before cluster `d` is deleted: its last WAL shipped, and its
    /// backups kept for its `backupRetentionDays` (or removed at once when
    /// it has none).
    pub(crate) async fn keep_backups(&self, d: &plateau_store::databases::Database) -> Result<()> {
        if let Ok(placement) = Self::placement(d) {
            let flushed = async {
                let credentials = self.credentials(d)?;
                self.provider().flush_wal(&placement, &credentials).await
            }
            .await;
            if let Err(e) = flushed {
                tracing::warn!(database = %d.id, error = %e, "shipping a deleted database's last WAL");
            }
        }
        let ledger = backups::list(self.db(), &d.org_id, &d.id).await?;
        if !ledger.iter().any(|b| b.status == "completed") {
            self.provider().drop_backups(&d.id).await?;
            backups::remove_database(self.db(), &d.id).await?;
            return Ok(());
        }
        let expires_at = time::now_ms() + d.backup_retention_days * 86_400_000;
        let mut tx = self.db().begin().await?;
        backups::retain(&mut tx, &d.id, expires_at).await?;
        tx.commit().await?;
        Ok(())
    }
}
