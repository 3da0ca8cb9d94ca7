//! Where snapshot RDBs are kept: an `object_store` (a local directory, or
//! S3 with the usual `AWS_*` variables), opened like every store of the
//! host (`plateau-object-store`); what a snapshot remembers of its cache;
//! and the retention sweep.
//!
//! A snapshot outlives its cache: deleting the cache gives its snapshots
//! an expiry (`PLATEAU_CACHE_SNAPSHOT_RETENTION_DAYS` later, 7 by
//! default), and until then they are listed, restorable into a new or an
//! existing cache, and counted against the organisation's storage. The
//! sweeper removes expired ones (the row first, then the object, so a
//! crash between leaves an object no row names, never a row without its
//! object).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload};

use plateau_core::time;
use plateau_store::Db;
use plateau_store::cache_snapshots;
use plateau_store::caches::Cache;
use serde::{Deserialize, Serialize};

use crate::Result;

/// The settings of the cache a snapshot was taken of (the snapshot row's
/// `settings` JSON): the defaults of a restore into a new cache once that
/// cache is gone. Empty for snapshots taken before they were kept.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceSettings {
    pub memory_mb: Option<i64>,
    pub eviction_policy: Option<String>,
    pub replicas: Option<i64>,
    pub persistence: Option<String>,
    pub tls: Option<bool>,
}

impl SourceSettings {
    pub fn of(cache: &Cache) -> SourceSettings {
        SourceSettings {
            memory_mb: Some(cache.memory_mb),
            eviction_policy: Some(cache.eviction_policy.clone()),
            replicas: Some(cache.replicas),
            persistence: Some(cache.persistence.clone()),
            tls: Some(cache.tls != 0),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("settings serialize")
    }

    /// The settings in `text`; none for text that does not read.
    pub fn from_json(text: &str) -> SourceSettings {
        serde_json::from_str(text).unwrap_or_default()
    }
}

/// Removes the snapshots whose retention ended: each row (its bytes leave
/// the organisation's storage), then its object. How many went.
pub async fn sweep(db: &Db, store: &SnapshotStore, now: i64) -> Result<usize> {
    let mut removed = 0;
    loop {
        let due = cache_snapshots::expired(db, now, 100).await?;
        if due.is_empty() {
            return Ok(removed);
        }
        for (org_id, id) in due {
            let mut tx = db.begin().await?;
            let row = cache_snapshots::remove(&mut tx, &org_id, &id, None, now).await?;
            tx.commit_last().await?;
            if let Some(row) = row {
                store.delete(&row.object_key).await?;
                removed += 1;
            }
        }
    }
}

/// Sweeps expired snapshots at once and then every `every`.
pub fn spawn_sweeper(db: Db, store: SnapshotStore, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match sweep(&db, &store, time::now_ms()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(removed = n, "swept expired cache snapshots"),
                Err(e) => tracing::warn!(error = %e, "sweeping expired cache snapshots"),
            }
            tokio::time::sleep(every).await;
        }
    })
}

#[derive(Clone)]
pub struct SnapshotStore {
    inner: Arc<dyn ObjectStore>,
    /// For logs: `file:///...` or `s3://bucket/prefix`.
    pub location: String,
}

impl SnapshotStore {
    /// Opens `spec` (see [`plateau_object_store::open`]).
    pub fn open(spec: &str) -> Result<SnapshotStore> {
        Self::opened(plateau_object_store::open(spec))
    }

    /// A store in a local directory, created if needed.
    pub fn local(dir: &Path) -> Result<SnapshotStore> {
        Self::opened(plateau_object_store::local(dir))
    }

    fn opened(
        opened: Result<plateau_object_store::Opened, plateau_object_store::OpenError>,
    ) -> Result<SnapshotStore> {
        let opened = opened.map_err(|e| crate::Error::Internal(e.to_string()))?;
        Ok(SnapshotStore {
            inner: opened.store,
            location: opened.location,
        })
    }

    /// The key of a snapshot's RDB.
    pub fn key(org_id: &str, cache_id: &str, snapshot_id: &str) -> String {
        format!("caches/{org_id}/{cache_id}/{snapshot_id}.rdb")
    }

    pub async fn put(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.inner
            .put(&ObjectPath::from(key), PutPayload::from_bytes(bytes))
            .await?;
        Ok(())
    }

    pub async fn get(&self, key: &str) -> Result<Bytes> {
        Ok(self
            .inner
            .get(&ObjectPath::from(key))
            .await?
            .bytes()
            .await?)
    }

    /// Removes a snapshot; one already gone is not an error.
    pub async fn delete(&self, key: &str) -> Result<()> {
        match self.inner.delete(&ObjectPath::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use plateau_store::caches::{self, Snapshot};
    use plateau_store::events::{Actor, NewEvent};
    use plateau_store::orgs::{self, Organization};

    use super::*;

    #[tokio::test]
    async fn a_deleted_caches_snapshot_counts_until_swept() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = Db::connect(&Db::sqlite_url(dir.path()))
            .await
            .expect("sqlite");
        let store = SnapshotStore::local(&dir.path().join("snapshots")).expect("store");
        let key = SnapshotStore::key("org_kept", "cch_gone", "csn_1");
        store
            .put(&key, Bytes::from_static(b"rdb"))
            .await
            .expect("put");
        let mut tx = db.begin().await.expect("begin");
        let org = Organization {
            id: "org_kept".to_owned(),
            name: "Kept".to_owned(),
            plan: "free".to_owned(),
            created_at: 1,
        };
        orgs::insert_org(&mut tx, &org).await.expect("org");
        let snapshot = Snapshot {
            id: "csn_1".to_owned(),
            org_id: org.id.clone(),
            cache_id: "cch_gone".to_owned(),
            cache_name: "gone".to_owned(),
            settings: "{}".to_owned(),
            object_key: key.clone(),
            size_bytes: 3,
            created_at: 1,
            expires_at: None,
        };
        let event = NewEvent::audited(
            &org.id,
            "cache.snapshot_created",
            "resources",
            "create",
            &Actor::system(),
        );
        caches::insert_snapshot(&mut tx, &snapshot, &event, 1)
            .await
            .expect("snapshot");
        cache_snapshots::retain(&mut tx, &org.id, "cch_gone", 100)
            .await
            .expect("retain");
        tx.commit().await.expect("commit");
        let used = |db: Db| async move {
            plateau_store::storage::usage(&db, "org_kept")
                .await
                .expect("usage")
                .bytes
        };
        assert_eq!(used(db.clone()).await, 3, "kept, it counts");

        assert_eq!(sweep(&db, &store, 99).await.expect("sweep"), 0);
        assert_eq!(
            store.get(&key).await.expect("still there"),
            Bytes::from_static(b"rdb")
        );
        assert_eq!(sweep(&db, &store, 100).await.expect("sweep"), 1);
        assert!(
            store.get(&key).await.is_err(),
            "the object went with its row"
        );
        assert_eq!(used(db.clone()).await, 0, "swept, it no longer counts");
        assert!(
            cache_snapshots::get(&db, &org.id, "csn_1")
                .await
                .expect("get")
                .is_none()
        );
    }
}
