//! An app's edge CDN: its switch and the purges asked for, rows the API
//! writes and the agent follows (each purge once, in `seq` order).

use sqlx::FromRow;

use crate::{Db, Result, Tx};

/// The purges of an app kept for agents that are behind.
pub const KEEP_PURGES: i64 = 100;

#[derive(Clone, Debug, Default, FromRow, PartialEq, Eq)]
pub struct CdnRow {
    /// 1 when the edge caches the app's answers.
    pub enabled: i64,
    /// The `seq` of the last purge asked for.
    pub purges: i64,
}

#[derive(Clone, Debug, FromRow, PartialEq, Eq)]
pub struct Purge {
    pub seq: i64,
    pub prefix: String,
}

/// The app's CDN settings (off, no purge, when never set).
pub async fn get(db: &Db, app_id: &str) -> Result<CdnRow> {
    Ok(
        sqlx::query_as("SELECT enabled, purges FROM app_cdn WHERE app_id = $1")
            .bind(app_id)
            .fetch_optional(db.pool())
            .await?
            .unwrap_or_default(),
    )
}

pub async fn set_enabled(tx: &mut Tx, app_id: &str, on: bool, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO app_cdn (app_id, enabled, purges, updated_at) VALUES ($1, $2, 0, $3) \
         ON CONFLICT (app_id) DO UPDATE SET enabled = excluded.enabled, \
         updated_at = excluded.updated_at",
    )
    .bind(app_id)
    .bind(i64::from(on))
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Records a purge of the paths under `prefix`; answers its `seq`. The
/// oldest purges beyond [`KEEP_PURGES`] are dropped.
pub async fn add_purge(tx: &mut Tx, app_id: &str, prefix: &str, now: i64) -> Result<i64> {
    sqlx::query(
        "INSERT INTO app_cdn (app_id, enabled, purges, updated_at) VALUES ($1, 0, 1, $2) \
         ON CONFLICT (app_id) DO UPDATE SET purges = app_cdn.purges + 1, \
         updated_at = excluded.updated_at",
    )
    .bind(app_id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    let seq: i64 = sqlx::query_scalar("SELECT purges FROM app_cdn WHERE app_id = $1")
        .bind(app_id)
        .fetch_one(tx.conn())
        .await?;
    sqlx::query(
        "INSERT INTO app_cdn_purges (app_id, seq, prefix, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(app_id)
    .bind(seq)
    .bind(prefix)
    .bind(now)
    .execute(tx.conn())
    .await?;
    sqlx::query("DELETE FROM app_cdn_purges WHERE app_id = $1 AND seq <= $2")
        .bind(app_id)
        .bind(seq - KEEP_PURGES)
        .execute(tx.conn())
        .await?;
    Ok(seq)
}

/// The app's purges after `seq`, oldest first.
pub async fn purges_after(db: &Db, app_id: &str, seq: i64) -> Result<Vec<Purge>> {
    Ok(sqlx::query_as(
        "SELECT seq, prefix FROM app_cdn_purges WHERE app_id = $1 AND seq > $2 ORDER BY seq",
    )
    .bind(app_id)
    .bind(seq)
    .fetch_all(db.pool())
    .await?)
}
