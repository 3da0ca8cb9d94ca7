//! Cache snapshots across an organisation, and their retention: a
//! snapshot outlives its cache. When the cache is deleted its snapshots
//! get an `expires_at`, and their bytes count against the organisation's
//! storage (`storage_usage`) until they are swept or deleted. The rows of
//! one cache's snapshots and their insertion stay in [`crate::caches`].

use crate::caches::{SNAPSHOT_COLUMNS, Snapshot};
use crate::events::{self, NewEvent};
use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

/// Adds `bytes` (negative: removes) to the organisation's storage.
async fn count_storage(tx: &mut Tx, org_id: &str, bytes: i64) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO storage_usage (org_id, bytes, objects) VALUES ($1, $2, 0) \
         ON CONFLICT (org_id) DO UPDATE SET bytes = storage_usage.bytes + excluded.bytes",
    )
    .bind(org_id)
    .bind(bytes)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Keeps the snapshots of cache `cache_id`, which is being deleted, until
/// `expires_at`, counting their bytes against the organisation's storage.
pub async fn retain(tx: &mut Tx, org_id: &str, cache_id: &str, expires_at: i64) -> Result<()> {
    let (bytes,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) FROM cache_snapshots \
         WHERE org_id = $1 AND cache_id = $2 AND expires_at IS NULL",
    )
    .bind(org_id)
    .bind(cache_id)
    .fetch_one(tx.conn())
    .await?;
    sqlx::query(
        "UPDATE cache_snapshots SET expires_at = $3 \
         WHERE org_id = $1 AND cache_id = $2 AND expires_at IS NULL",
    )
    .bind(org_id)
    .bind(cache_id)
    .bind(expires_at)
    .execute(tx.conn())
    .await?;
    count_storage(tx, org_id, bytes).await
}

/// The organisation's snapshots, of live and deleted caches (or of one
/// cache), oldest first.
pub async fn list(
    db: &Db,
    org_id: &str,
    cache_id: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<Snapshot>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if let Some(cache_id) = cache_id {
        conds.push("cache_id = ?", Bind::Text(cache_id.to_owned()));
    }
    crate::query::list(
        db.pool(),
        SNAPSHOT_COLUMNS,
        "cache_snapshots",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

/// One of the organisation's snapshots, whatever became of its cache.
pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Snapshot>> {
    let sql =
        format!("SELECT {SNAPSHOT_COLUMNS} FROM cache_snapshots WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Deletes one snapshot's row (its bytes leave the organisation's storage
/// if they were counted) and records `event` if given; the row, for the
/// caller to remove its object. `None` if it was gone already.
pub async fn remove(
    tx: &mut Tx,
    org_id: &str,
    id: &str,
    event: Option<&NewEvent>,
    now: i64,
) -> Result<Option<Snapshot>> {
    let sql =
        format!("SELECT {SNAPSHOT_COLUMNS} FROM cache_snapshots WHERE org_id = $1 AND id = $2");
    let found: Option<Snapshot> = sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?;
    let Some(snapshot) = found else {
        return Ok(None);
    };
    sqlx::query("DELETE FROM cache_snapshots WHERE org_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?;
    if snapshot.expires_at.is_some() {
        count_storage(tx, org_id, -snapshot.size_bytes).await?;
    }
    if let Some(event) = event {
        events::record(tx, event, now).await?;
    }
    Ok(Some(snapshot))
}

/// Up to `limit` snapshots whose retention ended by `now`: (org, id).
pub async fn expired(db: &Db, now: i64, limit: i64) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT org_id, id FROM cache_snapshots WHERE expires_at IS NOT NULL AND expires_at <= $1 \
         ORDER BY expires_at LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(db.pool())
    .await?)
}
