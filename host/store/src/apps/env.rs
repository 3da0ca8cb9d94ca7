//! An app's environment: names in the clear, values sealed by the host
//! (the store never sees a value in the clear).

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct EnvVar {
    pub name: String,
    pub sealed: Vec<u8>,
    pub target: String,
    pub updated_at: i64,
}

/// Sets `name`, replacing its value.
pub async fn put(tx: &mut Tx, app_id: &str, var: &EnvVar) -> Result<()> {
    sqlx::query("DELETE FROM app_env WHERE app_id = $1 AND name = $2")
        .bind(app_id)
        .bind(&var.name)
        .execute(tx.conn())
        .await?;
    sqlx::query(
        "INSERT INTO app_env (app_id, name, sealed, target, updated_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(app_id)
    .bind(&var.name)
    .bind(&var.sealed)
    .bind(&var.target)
    .bind(var.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Removes `name`; false when the app had no such variable.
pub async fn delete(tx: &mut Tx, app_id: &str, name: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM app_env WHERE app_id = $1 AND name = $2")
        .bind(app_id)
        .bind(name)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The app's variables by name.
pub async fn list(db: &Db, app_id: &str) -> Result<Vec<EnvVar>> {
    Ok(sqlx::query_as(
        "SELECT name, sealed, target, updated_at FROM app_env WHERE app_id = $1 ORDER BY name",
    )
    .bind(app_id)
    .fetch_all(db.pool())
    .await?)
}
