//! The hosts of a deployment: one row per host identity, written when a
//! host starts and as it stays alive. Resources a host runs (caches,
//! databases) carry its id in their `host_id`, and only that host
//! supervises them.
//!
//! A host's registration is bookkeeping of the deployment, not a change a
//! user made, so it records no event.

use crate::{Db, Result};

/// A registered host.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Host {
    pub id: String,
    /// The machine's name when it last started.
    pub name: String,
    pub started_at: i64,
    pub seen_at: i64,
}

/// Records that host `id` started now under `name`.
pub async fn register(db: &Db, id: &str, name: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO hosts (id, name, started_at, seen_at) VALUES ($1, $2, $3, $3) \
         ON CONFLICT (id) DO UPDATE SET name = $2, started_at = $3, seen_at = $3",
    )
    .bind(id)
    .bind(name)
    .bind(now)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

pub async fn get(db: &Db, id: &str) -> Result<Option<Host>> {
    Ok(
        sqlx::query_as("SELECT id, name, started_at, seen_at FROM hosts WHERE id = $1")
            .bind(id)
            .fetch_optional(db.pool())
            .await?,
    )
}

/// Hands every cache and database of host `from` to host `to`: for a host
/// whose services each kept an identity of their own before there was one
/// per host.
pub async fn adopt_resources(db: &Db, from: &str, to: &str) -> Result<u64> {
    let mut moved = 0;
    for sql in [
        "UPDATE caches SET host_id = $2 WHERE host_id = $1",
        "UPDATE databases SET host_id = $2 WHERE host_id = $1",
    ] {
        moved += sqlx::query(sql)
            .bind(from)
            .bind(to)
            .execute(&mut *db.writer().await?)
            .await?
            .rows_affected();
    }
    Ok(moved)
}
