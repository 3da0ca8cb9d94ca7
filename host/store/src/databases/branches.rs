//! Branches of managed PostgreSQL (issue 32): a branch is a database of
//! its own (its row in `databases`), made as a copy of its parent; this
//! table says whose, whether it is protected or structure only, and when
//! it expires.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Branch {
    /// The branch's own database.
    pub database_id: String,
    pub org_id: String,
    pub parent_id: String,
    /// 1 when protected (the Any driver has no booleans).
    pub protected: i64,
    /// 1 for a structure-only copy.
    pub schema_only: i64,
    /// The parent's time it was copied at (milliseconds); none: when made.
    pub from_time: Option<i64>,
    pub expires_at: Option<i64>,
    pub created_at: i64,
}

const COLUMNS: &str =
    "database_id, org_id, parent_id, protected, schema_only, from_time, expires_at, created_at";

/// Records a branch (with its database's row).
pub async fn insert(tx: &mut Tx, b: &Branch) -> Result<()> {
    sqlx::query(
        "INSERT INTO database_branches (database_id, org_id, parent_id, protected, schema_only, \
         from_time, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&b.database_id)
    .bind(&b.org_id)
    .bind(&b.parent_id)
    .bind(b.protected)
    .bind(b.schema_only)
    .bind(b.from_time)
    .bind(b.expires_at)
    .bind(b.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The branches of `parent_id` whose databases still exist, oldest first.
pub async fn list(db: &Db, org_id: &str, parent_id: &str) -> Result<Vec<Branch>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM database_branches WHERE org_id = $1 AND parent_id = $2 \
         AND database_id IN (SELECT id FROM databases) ORDER BY database_id"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(parent_id)
        .fetch_all(db.pool())
        .await?)
}

/// The branch that database `id` is, if it is one.
pub async fn of(db: &Db, id: &str) -> Result<Option<Branch>> {
    let sql = format!("SELECT {COLUMNS} FROM database_branches WHERE database_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Protects a branch or lifts its protection.
pub async fn set_protected(db: &Db, id: &str, protected: bool) -> Result<()> {
    sqlx::query("UPDATE database_branches SET protected = $2 WHERE database_id = $1")
        .bind(id)
        .bind(i64::from(protected))
        .execute(db.pool())
        .await?;
    Ok(())
}

/// The unprotected branches of host `host_id` whose TTL ended, with their
/// organisations, not being deleted already.
pub async fn expired(db: &Db, host_id: &str, now: i64) -> Result<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT b.org_id, b.database_id FROM database_branches b \
         JOIN databases d ON d.id = b.database_id \
         WHERE b.expires_at <= $1 AND b.protected = 0 AND d.host_id = $2 \
         AND d.status <> 'deleting'",
    )
    .bind(now)
    .bind(host_id)
    .fetch_all(db.pool())
    .await?)
}
