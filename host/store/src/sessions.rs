//! Platform-operator sessions, stored as hashes of their cookie secrets.

use crate::{Db, Result};

pub async fn create(db: &Db, id_hash: &str, now: i64, expires_at: i64) -> Result<()> {
    sqlx::query("INSERT INTO admin_sessions (id_hash, created_at, expires_at) VALUES ($1, $2, $3)")
        .bind(id_hash)
        .bind(now)
        .bind(expires_at)
        .execute(&mut *db.writer().await?)
        .await?;
    Ok(())
}

pub async fn is_valid(db: &Db, id_hash: &str, now: i64) -> Result<bool> {
    let row: Option<(i64,)> =
        sqlx::query_as("SELECT expires_at FROM admin_sessions WHERE id_hash = $1")
            .bind(id_hash)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.is_some_and(|(expires_at,)| expires_at > now))
}

pub async fn delete(db: &Db, id_hash: &str) -> Result<()> {
    sqlx::query("DELETE FROM admin_sessions WHERE id_hash = $1")
        .bind(id_hash)
        .execute(&mut *db.writer().await?)
        .await?;
    Ok(())
}

pub async fn purge_expired(db: &Db, now: i64) -> Result<u64> {
    let done = sqlx::query("DELETE FROM admin_sessions WHERE expires_at <= $1")
        .bind(now)
        .execute(&mut *db.writer().await?)
        .await?;
    Ok(done.rows_affected())
}
