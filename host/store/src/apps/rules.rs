//! An app's edge rules and its scale-out switch: rows the API writes and
//! the agent reads to configure the edge.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct RuleRow {
    pub id: String,
    pub app_id: String,
    /// The rule as JSON (`plateau_edge_rules::RuleSpec`).
    pub spec: String,
    /// 1 when applied.
    pub enabled: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, app_id, spec, enabled, created_at, updated_at";

/// The most rules one app has.
pub const MAX_RULES: i64 = 100;

pub async fn insert(tx: &mut Tx, r: &RuleRow) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO app_rules ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
    ))
    .bind(&r.id)
    .bind(&r.app_id)
    .bind(&r.spec)
    .bind(r.enabled)
    .bind(r.created_at)
    .bind(r.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The app's rules in the order the edge applies them.
pub async fn list(db: &Db, app_id: &str) -> Result<Vec<RuleRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM app_rules WHERE app_id = $1 ORDER BY id"
    ))
    .bind(app_id)
    .fetch_all(db.pool())
    .await?)
}

pub async fn count_in(tx: &mut Tx, app_id: &str) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT COUNT(*) FROM app_rules WHERE app_id = $1")
            .bind(app_id)
            .fetch_one(tx.conn())
            .await?,
    )
}

pub async fn get_in(tx: &mut Tx, app_id: &str, id: &str) -> Result<Option<RuleRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM app_rules WHERE app_id = $1 AND id = $2"
    ))
    .bind(app_id)
    .bind(id)
    .fetch_optional(tx.conn())
    .await?)
}

pub async fn set_enabled(tx: &mut Tx, id: &str, enabled: bool, now: i64) -> Result<()> {
    sqlx::query("UPDATE app_rules SET enabled = $1, updated_at = $2 WHERE id = $3")
        .bind(i64::from(enabled))
        .bind(now)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn delete(tx: &mut Tx, id: &str) -> Result<()> {
    sqlx::query("DELETE FROM app_rules WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Whether the app's scale-out is on (off when never set).
pub async fn scale_out(db: &Db, app_id: &str) -> Result<bool> {
    let on: Option<i64> =
        sqlx::query_scalar("SELECT scale_out FROM app_edge_settings WHERE app_id = $1")
            .bind(app_id)
            .fetch_optional(db.pool())
            .await?;
    Ok(on == Some(1))
}

pub async fn set_scale_out(tx: &mut Tx, app_id: &str, on: bool, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO app_edge_settings (app_id, scale_out, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (app_id) DO UPDATE SET scale_out = excluded.scale_out, \
         updated_at = excluded.updated_at",
    )
    .bind(app_id)
    .bind(i64::from(on))
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}
