//! Bot policies: an organisation's (app id `''`) and each app's own, as
//! JSON the apps crate reads and writes (`plateau_apps::bots::BotPolicy`).
//! Their decisions are recorded with the firewall's, in `waf_events`.

use crate::{Db, Result, Tx};

/// One stored policy.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PolicyRow {
    pub org_id: String,
    /// `''`: the organisation's.
    pub app_id: String,
    pub policy: String,
    pub updated_at: i64,
}

/// Writes the policy of `app_id` (`''`: the organisation's).
pub async fn put(tx: &mut Tx, row: &PolicyRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO bot_policies (org_id, app_id, policy, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (org_id, app_id) DO UPDATE SET policy = excluded.policy, \
         updated_at = excluded.updated_at",
    )
    .bind(&row.org_id)
    .bind(&row.app_id)
    .bind(&row.policy)
    .bind(row.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Removes an app's own policy (the organisation's applies again).
pub async fn delete(tx: &mut Tx, org_id: &str, app_id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM bot_policies WHERE org_id = $1 AND app_id = $2")
        .bind(org_id)
        .bind(app_id)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The policy in force for `app_id` (`''`: the organisation's): the app's
/// own, else the organisation's, else none.
pub async fn in_force(db: &Db, org_id: &str, app_id: &str) -> Result<Option<PolicyRow>> {
    Ok(sqlx::query_as(
        "SELECT org_id, app_id, policy, updated_at FROM bot_policies \
         WHERE org_id = $1 AND (app_id = $2 OR app_id = '') ORDER BY app_id DESC LIMIT 1",
    )
    .bind(org_id)
    .bind(app_id)
    .fetch_optional(db.pool())
    .await?)
}
