//! Object versions (S3 versioning). The current version of a key is its
//! row in `storage_objects`; noncurrent versions and delete markers are
//! rows of `storage_versions`, the newest with the highest `seq`. A bucket
//! whose versioning was never enabled has only null versions, replaced in
//! place; a suspended bucket replaces its null version and keeps the others.
//!
//! **Invariant:** every stored version's bytes count in the usage (a delete
//! marker has none), so noncurrent versions hold the plan's limit too.

mod change;
mod read;

use sqlx::FromRow;

use super::objects::{self, Object};
use super::{WriteError, add_bucket_usage, add_usage, lock_usage};
use crate::events::{self, NewEvent};
use crate::{Result, Tx};

use self::change::get_in;
pub use self::change::set_headers;
pub use self::read::{Listed, get, list};

/// The version id of an object written while versioning was not enabled.
pub const NULL: &str = "null";

/// The kind of the bucket setting that holds the versioning state.
pub const SETTING: &str = "versioning";

/// A bucket's versioning state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versioning {
    /// Never enabled.
    Off,
    Enabled,
    Suspended,
}

impl Versioning {
    /// The state a `versioning` setting's body (a JSON string) names.
    pub fn parse(body: Option<&str>) -> Versioning {
        match body.map(|b| b.trim().trim_matches('"')) {
            Some("Enabled") => Versioning::Enabled,
            Some("Suspended") => Versioning::Suspended,
            _ => Versioning::Off,
        }
    }
}

/// A stored version: a noncurrent one, a delete marker, or (with `seq`
/// [`CURRENT`]) the current one.
#[derive(Clone, Debug, FromRow)]
pub struct Version {
    pub bucket_id: String,
    pub key: String,
    pub version_id: String,
    pub seq: i64,
    /// 1 for a delete marker.
    pub delete_marker: i64,
    pub size: i64,
    pub etag: String,
    pub blobs: String,
    pub headers: String,
    pub modified_at: i64,
}

/// The `seq` of a current version: above every noncurrent one.
pub const CURRENT: i64 = i64::MAX;

pub(super) const COLUMNS: &str =
    "bucket_id, key, version_id, seq, delete_marker, size, etag, blobs, headers, modified_at";

impl Version {
    pub(super) fn current(o: Object) -> Version {
        Version {
            bucket_id: o.bucket_id,
            key: o.key,
            version_id: o.version_id,
            seq: CURRENT,
            delete_marker: 0,
            size: o.size,
            etag: o.etag,
            blobs: o.blobs,
            headers: o.headers,
            modified_at: o.modified_at,
        }
    }
}

/// What a write or a delete did to a key's versions.
#[derive(Clone, Debug, Default)]
pub struct Settled {
    /// The version id of what was written or deleted, or of the delete
    /// marker made.
    pub version_id: String,
    /// Whether the bucket has versioning set (enabled or suspended), so
    /// version ids are shown.
    pub versioned: bool,
    /// Whether a delete marker was made (or, by version id, deleted).
    pub delete_marker: bool,
    /// The `blobs` of the versions removed, deleted after the commit.
    pub removed: Vec<String>,
    /// Their bytes and number, taken off the usage.
    pub bytes: i64,
    pub count: i64,
}

impl Settled {
    fn remove(&mut self, size: i64, blobs: String) {
        self.bytes += size;
        self.count += 1;
        self.removed.push(blobs);
    }
}

/// The bucket's versioning state, read in the transaction.
pub async fn state(tx: &mut Tx, bucket_id: &str) -> Result<Versioning> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT body FROM storage_bucket_settings WHERE bucket_id = $1 AND kind = $2",
    )
    .bind(bucket_id)
    .bind(SETTING)
    .fetch_optional(tx.conn())
    .await?;
    Ok(Versioning::parse(row.as_ref().map(|(b,)| b.as_str())))
}

/// Makes `object` the current version of its key, keeping or removing
/// the version it replaces as the bucket's state says; `object`'s
/// version id (a fresh one) becomes `null` unless versioning is enabled.
/// The caller changes the usage by the returned removals.
pub(super) async fn settle(tx: &mut Tx, object: &mut Object) -> Result<Settled> {
    let state = state(tx, &object.bucket_id).await?;
    let old = objects::get_in(tx, &object.bucket_id, &object.key).await?;
    let mut s = Settled {
        versioned: state != Versioning::Off,
        ..Default::default()
    };
    if state != Versioning::Enabled {
        object.version_id = NULL.to_owned();
    }
    if let Some(old) = old {
        if state == Versioning::Enabled
            || (state == Versioning::Suspended && old.version_id != NULL)
        {
            archive(tx, Version::current(old), false).await?;
        } else {
            s.remove(old.size, old.blobs);
        }
    }
    if state == Versioning::Suspended {
        drop_null(tx, &object.bucket_id, &object.key, &mut s).await?;
    }
    objects::upsert(tx, object).await?;
    s.version_id = object.version_id.clone();
    Ok(s)
}

/// Removes the noncurrent null version of a key, if any.
async fn drop_null(tx: &mut Tx, bucket_id: &str, key: &str, s: &mut Settled) -> Result<()> {
    if let Some(v) = take(tx, bucket_id, key, NULL).await?
        && v.delete_marker == 0
    {
        s.remove(v.size, v.blobs);
    }
    Ok(())
}

/// Stores `v` as the newest noncurrent version (or delete marker) of its key.
async fn archive(tx: &mut Tx, v: Version, marker: bool) -> Result<()> {
    sqlx::query(
        "INSERT INTO storage_versions (bucket_id, key, version_id, seq, delete_marker, size, etag, \
         blobs, headers, modified_at) VALUES ($1, $2, $3, \
         COALESCE((SELECT MAX(seq) FROM storage_versions WHERE bucket_id = $1 AND key = $2), 0) + 1, \
         $4, $5, $6, $7, $8, $9)",
    )
    .bind(&v.bucket_id)
    .bind(&v.key)
    .bind(&v.version_id)
    .bind(i64::from(marker))
    .bind(v.size)
    .bind(&v.etag)
    .bind(&v.blobs)
    .bind(&v.headers)
    .bind(v.modified_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Removes a noncurrent version and returns it.
async fn take(
    tx: &mut Tx,
    bucket_id: &str,
    key: &str,
    version_id: &str,
) -> Result<Option<Version>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM storage_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3"
    );
    let found: Option<Version> = sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .bind(version_id)
        .fetch_optional(tx.conn())
        .await?;
    if found.is_some() {
        sqlx::query(
            "DELETE FROM storage_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3",
        )
        .bind(bucket_id)
        .bind(key)
        .bind(version_id)
        .execute(tx.conn())
        .await?;
    }
    Ok(found)
}

async fn delete_current_row(tx: &mut Tx, bucket_id: &str, key: &str) -> Result<()> {
    sqlx::query("DELETE FROM storage_objects WHERE bucket_id = $1 AND key = $2")
        .bind(bucket_id)
        .bind(key)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// When a key has no current version, makes its newest noncurrent one
/// current unless that is a delete marker.
async fn promote(tx: &mut Tx, bucket_id: &str, key: &str) -> Result<()> {
    let sql = format!(
        "SELECT {COLUMNS} FROM storage_versions WHERE bucket_id = $1 AND key = $2 \
         ORDER BY seq DESC LIMIT 1"
    );
    let newest: Option<Version> = sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .fetch_optional(tx.conn())
        .await?;
    let Some(v) = newest.filter(|v| v.delete_marker == 0) else {
        return Ok(());
    };
    take(tx, bucket_id, key, &v.version_id).await?;
    let object = Object {
        bucket_id: v.bucket_id,
        key: v.key,
        size: v.size,
        etag: v.etag,
        blobs: v.blobs,
        headers: v.headers,
        modified_at: v.modified_at,
        version_id: v.version_id,
    };
    objects::upsert(tx, &object).await
}

/// Takes the removals of `s` off the usage and records `event`.
async fn account(
    tx: &mut Tx,
    org_id: &str,
    bucket_id: &str,
    s: &Settled,
    event: &NewEvent,
    now: i64,
) -> Result<(), WriteError> {
    if s.count > 0 {
        add_usage(tx, org_id, -s.bytes, -s.count, 0).await?;
        add_bucket_usage(tx, bucket_id, -s.bytes, -s.count).await?;
    }
    events::record(tx, event, now).await?;
    Ok(())
}

/// Deletes a key without naming a version: removes it where versioning
/// was never enabled, otherwise makes a delete marker its newest version
/// (a suspended bucket's null version is removed, as S3 does). Returns
/// None when there was nothing to delete and no marker to make.
pub async fn delete_current(
    tx: &mut Tx,
    org_id: &str,
    bucket_id: &str,
    key: &str,
    marker_id: &str,
    event: &NewEvent,
    now: i64,
) -> Result<Option<Settled>, WriteError> {
    lock_usage(tx, org_id).await?;
    let state = state(tx, bucket_id).await?;
    let old = objects::get_in(tx, bucket_id, key).await?;
    let mut s = Settled {
        versioned: state != Versioning::Off,
        version_id: NULL.to_owned(),
        ..Default::default()
    };
    if state == Versioning::Off && old.is_none() {
        return Ok(None);
    }
    if let Some(old) = old {
        delete_current_row(tx, bucket_id, key).await?;
        if state == Versioning::Enabled
            || (state == Versioning::Suspended && old.version_id != NULL)
        {
            archive(tx, Version::current(old), false).await?;
        } else {
            s.remove(old.size, old.blobs);
        }
    }
    if state != Versioning::Off {
        if state == Versioning::Suspended {
            drop_null(tx, bucket_id, key, &mut s).await?;
        } else {
            s.version_id = marker_id.to_owned();
        }
        let marker = Version {
            bucket_id: bucket_id.to_owned(),
            key: key.to_owned(),
            version_id: s.version_id.clone(),
            seq: 0,
            delete_marker: 1,
            size: 0,
            etag: String::new(),
            blobs: "[]".to_owned(),
            headers: "{}".to_owned(),
            modified_at: now,
        };
        archive(tx, marker, true).await?;
        s.delete_marker = true;
    }
    account(tx, org_id, bucket_id, &s, event, now).await?;
    Ok(Some(s))
}

/// Whether a version (its headers, JSON) may not be deleted: object lock.
pub type Locked<'a> = &'a (dyn Fn(&str) -> bool + Send + Sync);

/// Deletes one version of a key for good (a delete marker too); when it
/// was the current one, the newest other becomes current. None when the
/// key has no such version; Locked when `locked` says of its headers.
#[allow(clippy::too_many_arguments)]
pub async fn delete_version(
    tx: &mut Tx,
    org_id: &str,
    bucket_id: &str,
    key: &str,
    version_id: &str,
    locked: Locked<'_>,
    event: &NewEvent,
    now: i64,
) -> Result<Option<Settled>, WriteError> {
    lock_usage(tx, org_id).await?;
    let old = objects::get_in(tx, bucket_id, key).await?;
    if let Some(v) = get_in(tx, bucket_id, key, version_id, old.as_ref()).await?
        && v.delete_marker == 0
        && locked(&v.headers)
    {
        return Err(WriteError::Locked);
    }
    let mut s = Settled {
        version_id: version_id.to_owned(),
        versioned: true,
        ..Default::default()
    };
    match old {
        Some(old) if old.version_id == version_id => {
            delete_current_row(tx, bucket_id, key).await?;
            s.remove(old.size, old.blobs);
            promote(tx, bucket_id, key).await?;
        }
        old => {
            let Some(v) = take(tx, bucket_id, key, version_id).await? else {
                return Ok(None);
            };
            s.delete_marker = v.delete_marker != 0;
            if !s.delete_marker {
                s.remove(v.size, v.blobs);
            }
            if old.is_none() {
                promote(tx, bucket_id, key).await?;
            }
        }
    }
    account(tx, org_id, bucket_id, &s, event, now).await?;
    Ok(Some(s))
}
