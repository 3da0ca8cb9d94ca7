//! The components deployments run, by organisation and digest: pulled
//! once, then every rollback, resume and restart reads them from here.

use crate::{Db, Result, Tx};

/// Stores `wasm` under its digest unless the organisation already has it.
pub async fn put(tx: &mut Tx, org_id: &str, digest: &str, wasm: &[u8], now: i64) -> Result<()> {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM app_components WHERE org_id = $1 AND digest = $2")
            .bind(org_id)
            .bind(digest)
            .fetch_one(tx.conn())
            .await?;
    if n == 0 {
        sqlx::query(
            "INSERT INTO app_components (org_id, digest, wasm, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(org_id)
        .bind(digest)
        .bind(wasm)
        .bind(now)
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}

pub async fn get(db: &Db, org_id: &str, digest: &str) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT wasm FROM app_components WHERE org_id = $1 AND digest = $2")
            .bind(org_id)
            .bind(digest)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.map(|(w,)| w))
}
