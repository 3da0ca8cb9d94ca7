//! What can go wrong in object storage, independent of the protocol that
//! reports it (S3 XML errors on the endpoint, problems on the API).

use plateau_store::storage::WriteError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the bucket does not exist")]
    NoSuchBucket,
    #[error("the object does not exist")]
    NoSuchKey,
    /// The newest version of the key is a delete marker.
    #[error("the object does not exist; its newest version is a delete marker")]
    DeletedKey,
    #[error("the version does not exist")]
    NoSuchVersion,
    /// The version named is a delete marker (its id), which has no content.
    #[error("the version is a delete marker")]
    DeleteMarker(String),
    #[error("the multipart upload does not exist; it may have been completed or aborted")]
    NoSuchUpload,
    #[error("the bucket is not empty; delete its objects and unfinished uploads first")]
    BucketNotEmpty,
    #[error("a bucket named {0:?} already exists in this organisation; choose another name")]
    NameTaken(String),
    #[error("{0}")]
    QuotaExceeded(String),
    #[error("{0}")]
    InvalidPart(String),
    #[error("the parts must be listed in ascending order of part number")]
    InvalidPartOrder,
    #[error("each part but the last must be at least 5 MiB")]
    EntityTooSmall,
    #[error("the object is larger than the largest accepted object")]
    EntityTooLarge,
    #[error("the request body ended before its declared length")]
    IncompleteBody,
    #[error("the range is outside the object")]
    InvalidRange,
    #[error("{0}")]
    InvalidArgument(String),
    #[error("the object does not meet the write's condition (If-Match or If-None-Match)")]
    PreconditionFailed,
    /// Object lock protects the version (a retention or a legal hold).
    #[error("the object version is protected by object lock")]
    ObjectLocked,
    #[error("internal storage error: {0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<plateau_store::Error> for Error {
    fn from(e: plateau_store::Error) -> Self {
        Error::Internal(e.to_string())
    }
}

impl From<object_store::Error> for Error {
    fn from(e: object_store::Error) -> Self {
        Error::Internal(e.to_string())
    }
}

impl Error {
    /// A store refusal in the words of this crate; `quota` is the message
    /// of a refused write.
    pub fn from_write(e: WriteError, quota: impl FnOnce() -> String) -> Error {
        match e {
            WriteError::Quota => Error::QuotaExceeded(quota()),
            WriteError::Gone => Error::NoSuchUpload,
            WriteError::Locked => Error::ObjectLocked,
            WriteError::Versioned => Error::Internal("a versioned write was grouped".to_owned()),
            WriteError::Store(e) => e.into(),
        }
    }
}
