//! Password rotation of managed PostgreSQL (issue 32): per database, the
//! login role its connection details name, the role whose password stops
//! at the end of the overlap, and the schedule. The password itself is the
//! database's sealed owner password, changed in the same transaction.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, Default, FromRow)]
pub struct Rotation {
    pub database_id: String,
    pub org_id: String,
    /// Days between scheduled rotations; 0: only on demand.
    pub interval_days: i64,
    /// The role the connection details name; empty: the owner role.
    pub login_role: String,
    /// The role whose password is removed at `retire_at`; empty: none.
    pub retiring_role: String,
    pub retire_at: Option<i64>,
    pub rotated_at: Option<i64>,
    pub updated_at: i64,
}

const COLUMNS: &str = "database_id, org_id, interval_days, login_role, retiring_role, retire_at, rotated_at, updated_at";

/// The rotation state of database `id`, if it was ever set.
pub async fn get(db: &Db, id: &str) -> Result<Option<Rotation>> {
    let sql = format!("SELECT {COLUMNS} FROM database_rotations WHERE database_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Writes `r` whole (inserted the first time).
pub async fn put(tx: &mut Tx, r: &Rotation) -> Result<()> {
    sqlx::query(
        "INSERT INTO database_rotations (database_id, org_id, interval_days, login_role, \
         retiring_role, retire_at, rotated_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (database_id) DO UPDATE SET interval_days = excluded.interval_days, \
         login_role = excluded.login_role, retiring_role = excluded.retiring_role, \
         retire_at = excluded.retire_at, rotated_at = excluded.rotated_at, \
         updated_at = excluded.updated_at",
    )
    .bind(&r.database_id)
    .bind(&r.org_id)
    .bind(r.interval_days)
    .bind(&r.login_role)
    .bind(&r.retiring_role)
    .bind(r.retire_at)
    .bind(r.rotated_at)
    .bind(r.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Replaces database `id`'s sealed connection password (with its rotation).
pub async fn set_owner_password(tx: &mut Tx, id: &str, sealed: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE databases SET owner_password_sealed = $2, updated_at = $3 WHERE id = $1")
        .bind(id)
        .bind(sealed)
        .bind(now)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Forgets database `id`'s rotation (the database is gone).
pub async fn remove(db: &Db, id: &str) -> Result<()> {
    sqlx::query("DELETE FROM database_rotations WHERE database_id = $1")
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}
