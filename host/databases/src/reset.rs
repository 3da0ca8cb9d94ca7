//! Branch reset as the data plane runs it (issue 32): the reconciler's
//! apply of a branch with a reset asked for (`database_resets`) makes a
//! fresh copy of the parent beside the branch, which serves until the copy
//! answers ([`crate::DatabaseProvider::prepare_reset`]); then one
//! transaction keeps the copy's placement and marks the reset done (the
//! swap), and the endpoints move to the copy and the old members go
//! ([`crate::DatabaseProvider::finish_reset`]). The URIs keep their ports,
//! role, password and database: clients see at most a reconnect.
//!
//! Killed before the swap, the next apply finds the reset still asked for
//! and makes the copy again (the killed try's copy removed first); killed
//! after it, the next apply finishes the move. The branch is old or new,
//! never half of each. The branch's earlier backups, which no restore can
//! follow onto the copy's timeline, leave its ledger.

use plateau_core::time;
use plateau_store::databases::backups;
use plateau_store::databases::resets::{self, Reset};
use plateau_store::databases::{self, Database};
use plateau_store::events::{Actor, NewEvent};
use serde_json::json;

use crate::backups::Source;
use crate::service::DatabaseService;
use crate::spec::{Placement, RestoreFrom};
use crate::{Error, Result};

impl DatabaseService {
    /// Resets branch `d` (placed at `placement`) as `r` asks: the new
    /// placement. A failure removes what it made and forgets the reset;
    /// the branch serves on as it was.
    pub(crate) async fn reset_branch(
        &self,
        d: &Database,
        placement: &Placement,
        r: &Reset,
    ) -> Result<Placement> {
        let done = self.swap_in_copy(d, placement, r).await;
        if done.is_err() {
            let mut tx = self.db().begin().await?;
            resets::remove(&mut tx, &d.id).await?;
            tx.commit().await?;
        }
        done
    }

    async fn swap_in_copy(
        &self,
        d: &Database,
        placement: &Placement,
        r: &Reset,
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
            target_time: None,
        };
        let spec = Self::spec(d);
        let credentials = self.credentials(d)?;
        let fresh = self
            .provider()
            .prepare_reset(&spec, placement, &credentials, &from)
            .await?;
        let branch = databases::branches::of(self.db(), &d.id).await?;
        if branch.is_some_and(|b| b.schema_only != 0)
            && let Err(e) = self.empty_tables(&fresh, &credentials).await
        {
            // The old placement lists none of the copy's members.
            let _ = self
                .provider()
                .finish_reset(&spec, placement, &credentials)
                .await;
            return Err(e);
        }

        // The swap.
        let now = time::now_ms();
        let event = NewEvent::audited(
            &d.org_id,
            "database.branch_reset",
            "resources",
            "update",
            &Actor::system(),
        )
        .resource("database", &d.id)
        .data(json!({ "parent": r.source_id, "backup": backup.id, "leader": fresh.leader }));
        let mut tx = self.db().begin().await?;
        databases::set_placement(&mut tx, &d.id, &fresh.to_json(), d.replicas, &event, now).await?;
        resets::remove(&mut tx, &d.id).await?;
        tx.commit().await?;

        self.provider()
            .finish_reset(&spec, &fresh, &credentials)
            .await?;
        if let Err(e) = self.forget_backups_before(d, now).await {
            tracing::warn!(database = %d.id, error = %e, "removing a reset branch's earlier backups");
        }
        // Its standbys, made again from the copy.
        self.provider()
            .apply(&spec, Some(&fresh), &credentials)
            .await
    }

    /// Removes the ledger rows and objects of `d`'s backups asked for
    /// before `at`.
    async fn forget_backups_before(&self, d: &Database, at: i64) -> Result<()> {
        let ids: Vec<String> = backups::list(self.db(), &d.org_id, &d.id)
            .await?
            .into_iter()
            .filter(|b| b.created_at < at && b.status != "running")
            .map(|b| b.id)
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        self.provider().prune_backups(&d.id, &ids, None).await?;
        backups::remove(self.db(), &ids).await?;
        Ok(())
    }
}
