//! Web analytics at the edge: an app's switch for reporting its page
//! views to the analytics plugin, a row the API writes and the agent
//! follows with the rest of the app's edge.

use crate::{Db, Result, Tx};

/// Whether the edge reports `app_id`'s page views (off when never set).
pub async fn enabled(db: &Db, app_id: &str) -> Result<bool> {
    let row: Option<(i64,)> = sqlx::query_as("SELECT enabled FROM app_analytics WHERE app_id = $1")
        .bind(app_id)
        .fetch_optional(db.pool())
        .await?;
    Ok(row.is_some_and(|(on,)| on == 1))
}

pub async fn set_enabled(tx: &mut Tx, app_id: &str, on: bool, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO app_analytics (app_id, enabled, updated_at) VALUES ($1, $2, $3) \
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
