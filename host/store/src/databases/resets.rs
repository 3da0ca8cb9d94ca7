//! Branch resets of managed PostgreSQL (issue 32): a reset asked for and
//! not swapped in yet. The row goes in the transaction that keeps the
//! fresh copy's placement, so the agent either makes the copy again (the
//! row is there) or is done (it is not).

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Reset {
    /// The branch's database.
    pub database_id: String,
    pub org_id: String,
    /// The parent copied, and its base backup the copy starts from.
    pub source_id: String,
    pub backup_id: String,
    pub requested_at: i64,
}

/// Records a reset asked for, replacing one not done yet.
pub async fn put(tx: &mut Tx, r: &Reset) -> Result<()> {
    remove(tx, &r.database_id).await?;
    sqlx::query(
        "INSERT INTO database_resets (database_id, org_id, source_id, backup_id, requested_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&r.database_id)
    .bind(&r.org_id)
    .bind(&r.source_id)
    .bind(&r.backup_id)
    .bind(r.requested_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The reset of database `id` not done yet, if one was asked for.
pub async fn of(db: &Db, id: &str) -> Result<Option<Reset>> {
    Ok(sqlx::query_as(
        "SELECT database_id, org_id, source_id, backup_id, requested_at \
         FROM database_resets WHERE database_id = $1",
    )
    .bind(id)
    .fetch_optional(db.pool())
    .await?)
}

/// Marks the reset of database `id` done (or forgets it with the database).
pub async fn remove(tx: &mut Tx, id: &str) -> Result<()> {
    sqlx::query("DELETE FROM database_resets WHERE database_id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}
