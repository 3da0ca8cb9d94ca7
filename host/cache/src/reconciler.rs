//! The caches as the kernel reconciles them ([`Resources`]): a cache's
//! recorded spec is applied by the provider (a restored cache first loads
//! its snapshot), observed every `supervise_every`, and deleted with its
//! snapshots. The kernel decides when, and records every change of
//! status.

use std::time::Duration;

use async_trait::async_trait;
use plateau_kernel::{Failure, ResourceLocks, Resources};
use plateau_store::Db;
use plateau_store::caches;
use plateau_store::managed::{State, Table};

use crate::Error;
use crate::service::CacheService;

#[async_trait]
impl Resources for CacheService {
    fn kind(&self) -> &'static str {
        "cache"
    }

    fn table(&self) -> Table {
        Table::Caches
    }

    fn db(&self) -> &Db {
        CacheService::db(self)
    }

    fn locks(&self) -> &ResourceLocks {
        CacheService::locks(self)
    }

    fn host_id(&self) -> &str {
        CacheService::host_id(self)
    }

    fn every(&self, _state: &State) -> Duration {
        self.supervise_every()
    }

    async fn apply(&self, state: &State) -> Result<String, Failure> {
        let cache = caches::get(self.db(), &state.org_id, &state.id)
            .await?
            .ok_or_else(|| Error::NotPlaced(format!("cache {} is gone", state.id)))?;
        let spec = Self::spec(&cache)?;
        let credentials = self.credentials(&cache)?;
        let placement = Self::placed(&cache)?;
        let seed = match (&placement, &cache.source_snapshot_id) {
            (None, Some(snapshot_id)) => {
                let snapshot = plateau_store::cache_snapshots::get(
                    self.db(),
                    &cache.org_id,
                    snapshot_id,
                )
                .await?
                .ok_or_else(|| {
                    Error::NotPlaced(format!(
                        "snapshot {snapshot_id} was deleted before the cache was restored from it"
                    ))
                })?;
                Some(self.snapshots().get(&snapshot.object_key).await?)
            }
            _ => None,
        };
        let next = self
            .provider()
            .apply(&spec, placement.as_ref(), &credentials, seed)
            .await?;
        Ok(next.to_json())
    }

    async fn observe(&self, state: &State) -> Result<bool, Failure> {
        let Some(cache) = caches::get(self.db(), &state.org_id, &state.id).await? else {
            return Ok(true);
        };
        let Some(placement) = Self::placed(&cache)? else {
            return Ok(false);
        };
        let spec = Self::spec(&cache)?;
        let credentials = self.credentials(&cache)?;
        Ok(self
            .provider()
            .observe(&spec, &placement, &credentials)
            .await?)
    }

    async fn delete(&self, state: &State) -> Result<(), Failure> {
        let placement = match state.placement.as_str() {
            "" => None,
            json => Some(crate::spec::Placement::from_json(json)?),
        };
        self.provider()
            .delete(&state.id, placement.as_ref())
            .await?;
        // Its snapshots outlive it for the retention period (swept by the
        // agent), counted against the organisation's storage meanwhile.
        let expires_at =
            plateau_core::time::now_ms() + self.snapshot_retention().as_millis() as i64;
        let mut tx = self.db().begin().await?;
        plateau_store::cache_snapshots::retain(&mut tx, &state.org_id, &state.id, expires_at)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
