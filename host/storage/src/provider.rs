//! The provider boundary: what the API and the S3 endpoint ask of object
//! storage. [`crate::local::LocalProvider`] keeps bytes in an
//! `object_store` (a directory or an S3 bucket) and metadata in Plateau's
//! database; a deployment that outgrows one machine can put another
//! engine (a real S3 service) behind the same trait.

use std::collections::BTreeMap;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use plateau_store::events::Actor;
use serde::{Deserialize, Serialize};

pub use plateau_store::storage::Usage;
pub use plateau_store::storage::buckets::Bucket;

pub use crate::condition::{Condition, DeleteCondition};
use crate::error::{Error, Result};

/// Object content, streamed.
pub type ByteStream = BoxStream<'static, std::io::Result<Bytes>>;

/// Content headers and user metadata kept with an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectHeaders {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_encoding: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_disposition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_language: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<String>,
    /// Milliseconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<i64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Checksums of the content by algorithm (`crc32`, `sha256`...), in
    /// base64; a multipart object's are checksums of its parts'
    /// checksums, ending in `-<parts>`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub checksums: BTreeMap<String, String>,
    /// The algorithm a multipart upload's parts are checksummed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    /// How the bytes are encrypted at rest ([`crate::sse`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sse: Option<crate::sse::Sealed>,
    /// The multipart upload that made the object: a repeated completion
    /// answers with the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_id: Option<String>,
    /// The object's tags (`x-amz-tagging`, PutObjectTagging).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    /// The object's ACL when not private to the bucket's organisation
    /// ([`crate::acl`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acl: Option<crate::acl::Acl>,
    /// A multipart object's part numbers, one per segment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<i64>,
    /// Object lock's retention of this version ([`crate::lock`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<crate::lock::Retention>,
    /// Object lock's legal hold on this version.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub legal_hold: bool,
}

impl ObjectHeaders {
    /// The part number of each segment of an object of `segments`
    /// segments (0 for an object written in one request).
    pub fn part_numbers(&self, segments: usize) -> Vec<i64> {
        if self.parts.len() == segments {
            self.parts.clone()
        } else {
            vec![0; segments]
        }
    }
}

/// A change to an object's headers ([`Provider::change_headers`]).
pub type HeaderChange = std::sync::Arc<dyn Fn(&mut ObjectHeaders) + Send + Sync>;

/// A change to a version's headers that may refuse ([`Provider::change_version`]).
pub type VersionChange = std::sync::Arc<dyn Fn(&mut ObjectHeaders) -> Result<()> + Send + Sync>;

/// The entry of [`Digests`] that, when set, is the object's entity tag
/// (an encrypting stream's MD5 of the plaintext) instead of the MD5 of
/// the bytes stored.
pub const ETAG_DIGEST: &str = "etag";

/// The checksums a body was found to have once it ended, by algorithm.
pub type Digests = std::sync::Arc<std::sync::Mutex<BTreeMap<String, String>>>;

/// What is known of a stored object.
#[derive(Clone, Debug)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
    /// The entity tag without quotes: the MD5 in hex, or for a multipart
    /// object the MD5 of its parts' MD5s and `-<parts>`.
    pub etag: String,
    /// Milliseconds since the epoch.
    pub modified_at: i64,
    pub headers: ObjectHeaders,
    /// The sizes of the object's segments: one, or one per multipart part.
    pub segments: Vec<u64>,
    /// The version id, when there is one to show: an id, or `null` for
    /// the null version of a bucket with versioning set.
    pub version_id: Option<String>,
}

/// What a delete did ([`Provider::delete_version`]).
#[derive(Clone, Debug, Default)]
pub struct Deleted {
    /// The version deleted or the delete marker made (None where
    /// versioning was never set).
    pub version_id: Option<String>,
    /// Whether a delete marker was made, or (by version id) deleted.
    pub delete_marker: bool,
}

/// A version in a listing of versions.
#[derive(Clone, Debug)]
pub struct VersionInfo {
    /// Its `version_id` is always set (`null` for the null version).
    pub info: ObjectInfo,
    /// Whether it is its key's newest version.
    pub latest: bool,
    pub delete_marker: bool,
}

/// A page of a listing of versions.
#[derive(Clone, Debug, Default)]
pub struct VersionListing {
    pub versions: Vec<VersionInfo>,
    pub prefixes: Vec<String>,
    pub truncated: bool,
    /// Where the next page starts: after this key (or prefix) and version.
    pub next: Option<(String, Option<String>)>,
}

/// A listing request: keys above `after` that start with `prefix`,
/// rolled up at `delimiter`.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    pub prefix: String,
    pub delimiter: Option<String>,
    pub after: String,
    pub max_keys: usize,
}

/// A page of a listing.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    pub objects: Vec<ObjectInfo>,
    pub prefixes: Vec<String>,
    pub truncated: bool,
    /// Where the next page starts (after this key or prefix).
    pub next_after: Option<String>,
}

/// A multipart upload in progress.
#[derive(Clone, Debug)]
pub struct UploadInfo {
    pub id: String,
    pub key: String,
    pub created_at: i64,
    pub headers: ObjectHeaders,
}

/// A stored part of a multipart upload.
#[derive(Clone, Debug)]
pub struct PartInfo {
    pub number: i64,
    pub size: u64,
    pub etag: String,
    pub modified_at: i64,
    /// The part's checksums by algorithm, in base64.
    pub checksums: BTreeMap<String, String>,
}

/// An object found for reading: its description, and its bytes on demand
/// (nothing is read before [`Opened::read`]), so that conditions and
/// ranges are checked on the one lookup that found it.
pub struct Opened {
    pub info: ObjectInfo,
    reader: Box<dyn FnOnce(std::ops::Range<u64>) -> ByteStream + Send>,
}

impl Opened {
    pub fn new(
        info: ObjectInfo,
        reader: impl FnOnce(std::ops::Range<u64>) -> ByteStream + Send + 'static,
    ) -> Opened {
        Opened {
            info,
            reader: Box::new(reader),
        }
    }

    /// The bytes of `range` (all of them for None); InvalidRange when it
    /// passes the end.
    pub fn read(self, range: Option<std::ops::Range<u64>>) -> Result<(ObjectInfo, ByteStream)> {
        let want = range.unwrap_or(0..self.info.size);
        if want.end > self.info.size || want.start > want.end {
            return Err(Error::InvalidRange);
        }
        Ok((self.info, (self.reader)(want)))
    }
}

/// A write's body and what is known of it before reading it.
pub struct Upload {
    pub body: ByteStream,
    /// The declared length, to refuse early what cannot fit.
    pub length: Option<u64>,
    /// Filled with the body's checksums when it ends; stored with it.
    pub digests: Digests,
    /// What the write requires of the object it replaces.
    pub condition: Condition,
}

/// Object storage, as the API and the S3 endpoint use it. Every method
/// acts within `bucket`'s organisation; callers have already checked
/// that the caller may.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Creates a bucket named `<prefix>-<org>-<name>-<suffix>`; with
    /// `s3_name` (CreateBucket over S3, checked by
    /// [`crate::names::check_s3_name`]), a bucket whose `name` and S3 name
    /// are both that one.
    async fn create_bucket(
        &self,
        org_id: &str,
        project_id: Option<String>,
        name: &str,
        s3_name: Option<&str>,
        actor: &Actor,
    ) -> Result<Bucket>;
    /// Deletes an empty bucket.
    async fn delete_bucket(&self, bucket: &Bucket, actor: &Actor) -> Result<()>;
    /// A bucket by its S3 name, whatever its organisation.
    async fn bucket_by_name(&self, name: &str) -> Result<Option<Bucket>>;
    /// Every bucket of an organisation.
    async fn buckets(&self, org_id: &str) -> Result<Vec<Bucket>>;
    /// The organisation's stored bytes (with unfinished uploads) and objects.
    async fn usage(&self, org_id: &str) -> Result<Usage>;

    /// Stores an object; it becomes visible only once complete.
    async fn put_object(
        &self,
        bucket: &Bucket,
        key: &str,
        upload: Upload,
        headers: ObjectHeaders,
        actor: &Actor,
    ) -> Result<ObjectInfo>;
    async fn head_object(&self, bucket: &Bucket, key: &str) -> Result<ObjectInfo>;
    /// An object, to read.
    async fn get_object(&self, bucket: &Bucket, key: &str) -> Result<Opened>;
    /// Deletes an object; false when there was none.
    async fn delete_object(&self, bucket: &Bucket, key: &str, actor: &Actor) -> Result<bool> {
        Ok(self
            .delete_version(bucket, key, None, false, &DeleteCondition::default(), actor)
            .await?
            .is_some())
    }
    /// One version of an object, to read: NoSuchVersion when the key has
    /// none of that id, DeleteMarker when it is a delete marker.
    async fn open_version(&self, bucket: &Bucket, key: &str, version: &str) -> Result<Opened>;
    /// The current version (None) or the one named, to read.
    async fn open(&self, bucket: &Bucket, key: &str, version: Option<&str>) -> Result<Opened> {
        match version {
            None => self.get_object(bucket, key).await,
            Some(v) => self.open_version(bucket, key, v).await,
        }
    }
    /// Deletes the current version of an object (where versioning is set,
    /// by making a delete marker its newest version), or with `version`
    /// that version for good; None when there was nothing to delete;
    /// ObjectLocked when object lock protects it ([`crate::lock::protects`],
    /// GOVERNANCE yielding to `bypass`); PreconditionFailed unless
    /// `condition` holds for that version (a delete marker included).
    async fn delete_version(
        &self,
        bucket: &Bucket,
        key: &str,
        version: Option<&str>,
        bypass: bool,
        condition: &DeleteCondition,
        actor: &Actor,
    ) -> Result<Option<Deleted>>;
    /// Versions of keys after `query.after` (and, within that key, after
    /// `version_after`), newest first within a key.
    async fn list_versions(
        &self,
        bucket: &Bucket,
        query: &ListQuery,
        version_after: Option<&str>,
    ) -> Result<VersionListing>;
    /// Copies an object (its current version, or the one named), with new
    /// headers or the source's.
    async fn copy_object(
        &self,
        from: (&Bucket, &str, Option<&str>),
        to: (&Bucket, &str),
        headers: Option<ObjectHeaders>,
        actor: &Actor,
    ) -> Result<ObjectInfo>;
    async fn list_objects(&self, bucket: &Bucket, query: &ListQuery) -> Result<Listing>;
    /// Changes the headers of an object in place (its tags, its ACL),
    /// never those of an object that replaced it meanwhile.
    async fn change_headers(
        &self,
        bucket: &Bucket,
        key: &str,
        change: HeaderChange,
    ) -> Result<ObjectInfo>;

    /// Changes the headers of one version (the current one for None) in
    /// place, as `change` does or refuses.
    async fn change_version(
        &self,
        bucket: &Bucket,
        key: &str,
        version: Option<&str>,
        change: VersionChange,
    ) -> Result<ObjectInfo>;

    /// The bucket's configuration of `kind` (`cors`, `tagging`, `acl`), JSON.
    async fn bucket_setting(&self, bucket: &Bucket, kind: &str) -> Result<Option<String>>;
    /// Every configuration of the bucket, by kind (one read for a write
    /// that needs several: object lock, default encryption).
    async fn bucket_settings(&self, bucket: &Bucket) -> Result<BTreeMap<String, String>>;
    /// Sets, or with None removes, the bucket's configuration of `kind`;
    /// false when there was none to remove.
    async fn set_bucket_setting(
        &self,
        bucket: &Bucket,
        kind: &str,
        body: Option<&str>,
    ) -> Result<bool>;

    async fn create_upload(
        &self,
        bucket: &Bucket,
        key: &str,
        headers: ObjectHeaders,
    ) -> Result<UploadInfo>;
    async fn upload_part(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        number: i64,
        upload: Upload,
    ) -> Result<PartInfo>;
    /// Makes one object of the named parts (number and entity tag), in order.
    async fn complete_upload(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        parts: &[(i64, String)],
        condition: &Condition,
        actor: &Actor,
    ) -> Result<ObjectInfo>;
    async fn abort_upload(&self, bucket: &Bucket, upload_id: &str) -> Result<()>;
    async fn upload(&self, bucket: &Bucket, upload_id: &str) -> Result<UploadInfo>;
    /// Parts above `after`, at most `max`; and whether more follow.
    async fn list_parts(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        after: i64,
        max: usize,
    ) -> Result<(Vec<PartInfo>, bool)>;
    /// Uploads after (`key`, `id`) whose keys start with `prefix`.
    async fn list_uploads(
        &self,
        bucket: &Bucket,
        prefix: &str,
        after: (&str, &str),
        max: usize,
    ) -> Result<(Vec<UploadInfo>, bool)>;
}
