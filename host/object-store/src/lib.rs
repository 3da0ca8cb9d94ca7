//! Opening an object store from a setting, in one place: object storage
//! (`PLATEAU_STORAGE_STORE`), the registry (`PLATEAU_REGISTRY_STORE`) and
//! cache snapshots (`PLATEAU_CACHE_SNAPSHOT_STORE`) take the same three
//! forms:
//!
//! - `s3://bucket[/prefix]`: S3, with credentials, region and endpoint
//!   from the usual `AWS_*` variables;
//! - `file:///dir`, or a plain directory path: a local directory, made if
//!   missing, whose half-written files `object_store` removes on failure.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;

/// An opened store.
#[derive(Clone, Debug)]
pub struct Opened {
    pub store: Arc<dyn ObjectStore>,
    /// Where it lives, for logs: `file:///...` or `s3://bucket/prefix`.
    pub location: String,
    /// The directory of a local store; `None` on S3.
    pub local_root: Option<PathBuf>,
}

/// Parts written to S3 (its minimum is 5 MiB); also what a write holds in
/// memory per upload.
pub const S3_PART_SIZE: usize = 8 * 1024 * 1024;
/// A local part is one `write` into the staged file, not a request: small
/// parts start writing sooner and hold little memory.
pub const LOCAL_PART_SIZE: usize = 1024 * 1024;

impl Opened {
    /// The size of the parts a streamed write sends to this store.
    pub fn part_size(&self) -> usize {
        if self.local_root.is_some() {
            LOCAL_PART_SIZE
        } else {
            S3_PART_SIZE
        }
    }
}

/// Why a store could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The local directory could not be made.
    Directory(PathBuf, std::io::Error),
    Store(object_store::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Directory(dir, e) => write!(f, "creating {}: {e}", dir.display()),
            OpenError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<object_store::Error> for OpenError {
    fn from(e: object_store::Error) -> Self {
        OpenError::Store(e)
    }
}

/// Opens `spec`: `s3://bucket[/prefix]`, `file:///dir` or a directory.
pub fn open(spec: &str) -> Result<Opened, OpenError> {
    let Some(rest) = spec.strip_prefix("s3://") else {
        return local(Path::new(spec.strip_prefix("file://").unwrap_or(spec)));
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let s3 = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .build()?;
    let prefix = prefix.trim_matches('/');
    let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
        Arc::new(s3)
    } else {
        Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
    };
    Ok(Opened {
        store,
        location: format!("s3://{rest}"),
        local_root: None,
    })
}

/// A store in the local directory `dir`, made if missing.
pub fn local(dir: &Path) -> Result<Opened, OpenError> {
    std::fs::create_dir_all(dir).map_err(|e| OpenError::Directory(dir.to_path_buf(), e))?;
    let fs = LocalFileSystem::new_with_prefix(dir)?.with_automatic_cleanup(true);
    Ok(Opened {
        store: Arc::new(fs),
        location: format!("file://{}", dir.display()),
        local_root: Some(dir.to_path_buf()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_and_a_file_url_open_the_same_local_store() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("made");
        let a = open(sub.to_str().unwrap()).unwrap();
        let b = open(&format!("file://{}", sub.display())).unwrap();
        assert_eq!(a.location, b.location);
        assert_eq!(a.local_root.as_deref(), Some(sub.as_path()));
        assert!(sub.is_dir(), "the directory is made");
    }

    #[test]
    fn s3_urls_keep_their_bucket_and_prefix_for_logs() {
        let opened = open("s3://bucket/some/prefix/").unwrap();
        assert_eq!(opened.location, "s3://bucket/some/prefix/");
        assert!(opened.local_root.is_none());
    }
}
