//! Where snapshot RDBs are kept: an `object_store` (a local directory, or
//! S3 with the usual `AWS_*` variables), opened like every store of the
//! host (`plateau-object-store`).

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload};

use crate::Result;

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
