//! An app's autoscale setting (`app_autoscale`): the API writes it, the
//! agent's autoscaler reads it and moves the app's `replicas` within it,
//! one conditional update per change ([`scale_from`]), so a change the
//! user or another host made meanwhile is never overwritten.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct Autoscale {
    pub app_id: String,
    /// 1 when the agent scales the app.
    pub enabled: i64,
    pub min_replicas: i64,
    pub max_replicas: i64,
    pub cpu_target_pct: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "app_id, enabled, min_replicas, max_replicas, cpu_target_pct, updated_at";

/// The app's setting, when it has one.
pub async fn get(db: &Db, app_id: &str) -> Result<Option<Autoscale>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM app_autoscale WHERE app_id = $1"
    ))
    .bind(app_id)
    .fetch_optional(db.pool())
    .await?)
}

/// The app's setting, within a transaction.
pub async fn get_in(tx: &mut Tx, app_id: &str) -> Result<Option<Autoscale>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM app_autoscale WHERE app_id = $1"
    ))
    .bind(app_id)
    .fetch_optional(tx.conn())
    .await?)
}

/// Every enabled setting of an app that is not in the trash.
pub async fn enabled(db: &Db) -> Result<Vec<Autoscale>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {} FROM app_autoscale a JOIN apps p ON p.id = a.app_id \
         WHERE a.enabled = 1 AND p.deleted_at IS NULL ORDER BY a.app_id",
        COLUMNS
            .split(", ")
            .map(|c| format!("a.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .fetch_all(db.pool())
    .await?)
}

/// Writes the app's setting whole.
pub async fn put(tx: &mut Tx, a: &Autoscale) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO app_autoscale ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (app_id) DO UPDATE SET enabled = excluded.enabled, \
         min_replicas = excluded.min_replicas, max_replicas = excluded.max_replicas, \
         cpu_target_pct = excluded.cpu_target_pct, updated_at = excluded.updated_at"
    ))
    .bind(&a.app_id)
    .bind(a.enabled)
    .bind(a.min_replicas)
    .bind(a.max_replicas)
    .bind(a.cpu_target_pct)
    .bind(a.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Sets the app's replicas to `to` if they are still `from` (and the app
/// is live and not in the trash); whether it did.
pub async fn scale_from(tx: &mut Tx, app_id: &str, from: i64, to: i64, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE apps SET replicas = $1, updated_at = $2 \
         WHERE id = $3 AND replicas = $4 AND deleted_at IS NULL",
    )
    .bind(to)
    .bind(now)
    .bind(app_id)
    .bind(from)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}
