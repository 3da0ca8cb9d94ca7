//! Repositories of an organisation, recorded on first use.

use crate::{Db, Result, Tx};

/// Records a repository on first use.
pub async fn ensure(tx: &mut Tx, org_id: &str, name: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO registry_repositories (org_id, name, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (org_id, name) DO NOTHING",
    )
    .bind(org_id)
    .bind(name)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn exists(db: &Db, org_id: &str, name: &str) -> Result<bool> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT name FROM registry_repositories WHERE org_id = $1 AND name = $2")
            .bind(org_id)
            .bind(name)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.is_some())
}

/// Repositories of an organisation in byte order, after `last`.
pub async fn list(db: &Db, org_id: &str, last: Option<&str>, limit: i64) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT name FROM registry_repositories WHERE org_id = $1 AND name > $2 \
         ORDER BY name LIMIT $3",
    )
    .bind(org_id)
    .bind(last.unwrap_or(""))
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    Ok(rows.into_iter().map(|(n,)| n).collect())
}
