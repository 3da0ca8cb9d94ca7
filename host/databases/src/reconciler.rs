//! The databases as the kernel reconciles them ([`Resources`]): a
//! database's recorded spec is applied by the provider (created, restored,
//! its standbys scaled, or a branch reset: `reset`), then its read-only
//! role made sure of; a running one is observed every `supervise_every`
//! (every [`WATCH_EVERY`] with replicas, so a failover starts within a
//! second or so of the leader's death), with a failover's new placement
//! kept with its event, and its disk checked against its quota every
//! `disk_check_every`. The kernel decides when, and records every change
//! of status.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use plateau_kernel::{Failure, ResourceLocks, Resources};
use plateau_store::Db;
use plateau_store::databases::{self, Database};
use plateau_store::events::{Actor, NewEvent};
use plateau_store::managed::{State, Table};
use sqlx::Connection as _;

use crate::inside::roles;
use crate::service::{DatabaseService, WATCH_EVERY};
use crate::spec::Placement;
use crate::{Error, Result};

impl DatabaseService {
    async fn row(&self, state: &State) -> Result<Database> {
        databases::get(self.db(), &state.org_id, &state.id)
            .await?
            .ok_or_else(|| Error::NotPlaced(format!("database {} is gone", state.id)))
    }

    /// Makes sure the host's read-only role exists with its password (what
    /// a `databases:read` caller is given), once per process and cluster.
    async fn ensure_reader(&self, d: &Database, placement: &Placement) -> Result<()> {
        let credentials = self.credentials(d)?;
        let password = Self::reader_password(&credentials);
        let mut conn = self
            .provider()
            .connect(
                placement,
                crate::spec::ADMIN_ROLE,
                &credentials.admin_password,
                &placement.database,
            )
            .await?;
        let made = roles::ensure_reader(&mut conn, &placement.database, &password).await;
        let _ = conn.close().await;
        made?;
        self.checked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .readers
            .insert(d.id.clone());
        Ok(())
    }

    /// The checks of a healthy cluster: its read-only role once per
    /// process (a cluster made by an older version gets it), its disk
    /// every `disk_check_every`.
    async fn now_and_then(&self, d: &Database, placement: &Placement) {
        let (reader, disk) = {
            let checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
            let disk = checked
                .disks
                .get(&d.id)
                .is_none_or(|t| t.elapsed() >= self.config().disk_check_every);
            (!checked.readers.contains(&d.id), disk)
        };
        if reader && let Err(e) = self.ensure_reader(d, placement).await {
            tracing::warn!(database = %d.id, error = %e, "making a database's read-only role");
        }
        if let Err(e) = self.rotate_when_due(d).await {
            tracing::warn!(database = %d.id, error = %e, "rotating a database's password");
        }
        if disk {
            self.checked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .disks
                .insert(d.id.clone(), Instant::now());
            if let Err(e) = self.check_disk(d).await {
                tracing::warn!(database = %d.id, error = %e, "checking a database's disk quota");
            }
        }
    }
}

#[async_trait]
impl Resources for DatabaseService {
    fn kind(&self) -> &'static str {
        "database"
    }

    fn table(&self) -> Table {
        Table::Databases
    }

    fn db(&self) -> &Db {
        DatabaseService::db(self)
    }

    fn locks(&self) -> &ResourceLocks {
        &self.config().locks
    }

    fn host_id(&self) -> &str {
        DatabaseService::host_id(self)
    }

    fn every(&self, state: &State) -> Duration {
        let every = self.config().supervise_every;
        if state.replicas > 0 {
            every.min(WATCH_EVERY)
        } else {
            every
        }
    }

    async fn apply(&self, state: &State) -> Result<String, Failure> {
        let d = self.row(state).await?;
        let spec = Self::spec(&d);
        let credentials = self.credentials(&d)?;
        let placement = Self::placed(&d)?;
        let next = match &placement {
            None => match plateau_store::databases::backups::restore_of(self.db(), &d.id).await? {
                Some(r) => self.restore_into(&d, &r).await?,
                None => self.provider().apply(&spec, None, &credentials).await?,
            },
            Some(placed) => match plateau_store::databases::resets::of(self.db(), &d.id).await? {
                Some(r) => self.reset_branch(&d, placed, &r).await?,
                None => {
                    self.provider()
                        .apply(&spec, Some(placed), &credentials)
                        .await?
                }
            },
        };
        self.ensure_reader(&d, &next).await?;
        Ok(next.to_json())
    }

    async fn observe(&self, state: &State) -> Result<bool, Failure> {
        let d = self.row(state).await?;
        let Some(placement) = Self::placed(&d)? else {
            return Ok(false);
        };
        let spec = Self::spec(&d);
        let credentials = self.credentials(&d)?;
        let round = self
            .provider()
            .observe(&spec, &placement, &credentials)
            .await?;
        let placement = match &round.placement {
            Some(new) => {
                let data = match &round.failover {
                    Some((from, to)) => serde_json::json!({ "from": from, "to": to }),
                    None => serde_json::json!({ "leader": new.leader }),
                };
                let kind = if round.failover.is_some() {
                    "database.failed_over"
                } else {
                    "database.members_changed"
                };
                let event =
                    NewEvent::audited(&d.org_id, kind, "resources", "update", &Actor::system())
                        .resource("database", &d.id)
                        .data(data);
                self.record_placement(&d, new, d.replicas, &event).await?;
                new.clone()
            }
            None => placement,
        };
        if round.healthy {
            self.now_and_then(&d, &placement).await;
        }
        Ok(round.healthy)
    }

    async fn delete(&self, state: &State) -> Result<(), Failure> {
        if let Some(d) = databases::get(self.db(), &state.org_id, &state.id).await? {
            self.keep_backups(&d).await?;
            // Its subscriptions' slots on their sources go with it.
            self.unsubscribe_all(&d).await?;
        }
        plateau_store::databases::rotations::remove(self.db(), &state.id).await?;
        let mut tx = self.db().begin().await?;
        plateau_store::databases::resets::remove(&mut tx, &state.id).await?;
        tx.commit().await?;
        let placement = match state.placement.as_str() {
            "" => None,
            json => Some(Placement::from_json(json)?),
        };
        self.provider()
            .delete(&state.id, placement.as_ref())
            .await?;
        let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        checked.readers.remove(&state.id);
        checked.disks.remove(&state.id);
        Ok(())
    }
}
