//! Git links: an app's push webhook (a sealed secret and who linked it)
//! and the deliveries it has seen, so that a replayed delivery is
//! ignored.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct GitLink {
    pub app_id: String,
    pub org_id: String,
    /// The webhook secret, sealed with the host key.
    pub secret: Vec<u8>,
    pub token_id: String,
    pub user_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "app_id, org_id, secret, token_id, user_id, created_at, updated_at";

/// Links the app, or replaces its link (a new secret, a new linker).
pub async fn upsert(tx: &mut Tx, link: &GitLink) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO app_git_links ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (app_id) DO UPDATE SET secret = excluded.secret, \
         token_id = excluded.token_id, user_id = excluded.user_id, \
         updated_at = excluded.updated_at"
    ))
    .bind(&link.app_id)
    .bind(&link.org_id)
    .bind(&link.secret)
    .bind(&link.token_id)
    .bind(&link.user_id)
    .bind(link.created_at)
    .bind(link.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn get(db: &Db, app_id: &str) -> Result<Option<GitLink>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM app_git_links WHERE app_id = $1"
    ))
    .bind(app_id)
    .fetch_optional(db.pool())
    .await?)
}

/// Records delivery `id` for the app; false if it was seen before.
pub async fn first_delivery(tx: &mut Tx, app_id: &str, id: &str, now: i64) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO app_git_deliveries (app_id, delivery_id, received_at) VALUES ($1, $2, $3) \
         ON CONFLICT (app_id, delivery_id) DO NOTHING",
    )
    .bind(app_id)
    .bind(id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Removes the app's link and its deliveries.
pub async fn delete(tx: &mut Tx, app_id: &str) -> Result<()> {
    for table in ["app_git_deliveries", "app_git_links"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE app_id = $1"))
            .bind(app_id)
            .execute(tx.conn())
            .await?;
    }
    Ok(())
}
