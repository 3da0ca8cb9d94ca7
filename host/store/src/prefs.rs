//! Notification preferences per organisation and category.

use crate::{Db, Result, Tx};

/// The categories of spec section 2, in the order lists show them.
pub const CATEGORIES: [&str; 3] = ["alarms", "anomalies", "spend"];

/// Email is on for every category until someone turns it off.
pub const DEFAULT_EMAIL_ENABLED: bool = true;

/// `(category, email_enabled, updated_at)` for every category.
pub async fn list(db: &Db, org_id: &str) -> Result<Vec<(String, bool, Option<i64>)>> {
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT category, email_enabled, updated_at FROM notification_preferences WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_all(db.pool())
    .await?;
    Ok(CATEGORIES
        .iter()
        .map(
            |category| match rows.iter().find(|(c, _, _)| c == category) {
                Some((_, enabled, at)) => ((*category).to_owned(), *enabled != 0, Some(*at)),
                None => ((*category).to_owned(), DEFAULT_EMAIL_ENABLED, None),
            },
        )
        .collect())
}

pub async fn set(tx: &mut Tx, org_id: &str, category: &str, enabled: bool, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO notification_preferences (org_id, category, email_enabled, updated_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (org_id, category) \
         DO UPDATE SET email_enabled = excluded.email_enabled, updated_at = excluded.updated_at",
    )
    .bind(org_id)
    .bind(category)
    .bind(i64::from(enabled))
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}
