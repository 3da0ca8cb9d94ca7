//! Changing one version in place: its headers (tags, ACL, object lock's
//! retention and legal hold), current or not, under the organisation's
//! usage lock so that a delete of the version sees the change or happens
//! before it (a version is never deleted past a lock acknowledged).

use super::{COLUMNS, Version};
use crate::storage::lock_usage;
use crate::storage::objects::{self, Object};
use crate::{Db, Result, Tx};

/// One version of a key read in the transaction; `current` is the key's
/// current row, already read.
pub(super) async fn get_in(
    tx: &mut Tx,
    bucket_id: &str,
    key: &str,
    version_id: &str,
    current: Option<&Object>,
) -> Result<Option<Version>> {
    if let Some(o) = current.filter(|o| o.version_id == version_id) {
        return Ok(Some(Version::current(o.clone())));
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM storage_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3"
    );
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .bind(version_id)
        .fetch_optional(tx.conn())
        .await?)
}

/// Replaces the headers of the version `version_id` of `key` if they are
/// still `seen`; false when the version changed or went away meanwhile.
pub async fn set_headers(
    db: &Db,
    org_id: &str,
    bucket_id: &str,
    key: &str,
    version_id: &str,
    seen: &str,
    headers: &str,
) -> Result<bool> {
    let mut tx = db.begin().await?;
    lock_usage(&mut tx, org_id).await?;
    let current = objects::get_in(&mut tx, bucket_id, key).await?;
    let table = match current {
        Some(o) if o.version_id == version_id => "storage_objects",
        _ => "storage_versions",
    };
    let done = sqlx::query(&format!(
        "UPDATE {table} SET headers = $5 \
         WHERE bucket_id = $1 AND key = $2 AND version_id = $3 AND headers = $4"
    ))
    .bind(bucket_id)
    .bind(key)
    .bind(version_id)
    .bind(seen)
    .bind(headers)
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected() == 1)
}
