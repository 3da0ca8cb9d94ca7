//! Where snapshot RDBs are kept: an `object_store` (a local directory, or
//! S3 with the usual `AWS_*` variables), configured like the registry's.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
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
    /// Opens `spec`: `s3://bucket[/prefix]`, `file:///dir` or a directory.
    pub fn open(spec: &str) -> Result<SnapshotStore> {
        if let Some(rest) = spec.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let s3 = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()?;
            let prefix = prefix.trim_matches('/');
            let inner: Arc<dyn ObjectStore> = if prefix.is_empty() {
                Arc::new(s3)
            } else {
                Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
            };
            return Ok(SnapshotStore {
                inner,
                location: format!("s3://{rest}"),
            });
        }
        Self::local(Path::new(spec.strip_prefix("file://").unwrap_or(spec)))
    }

    /// A store in a local directory, created if needed.
    pub fn local(dir: &Path) -> Result<SnapshotStore> {
        std::fs::create_dir_all(dir)?;
        Ok(SnapshotStore {
            inner: Arc::new(LocalFileSystem::new_with_prefix(dir)?.with_automatic_cleanup(true)),
            location: format!("file://{}", dir.display()),
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
