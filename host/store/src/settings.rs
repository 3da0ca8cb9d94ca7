//! Host-wide settings shared by every host on the same database, such as
//! the key that signs pagination cursors.

use crate::{Db, Result};

/// The value of `key`, storing `init()` first if there is none. Safe when
/// several hosts start at once: the first insert wins and all read it.
pub async fn get_or_init(db: &Db, key: &str, init: impl FnOnce() -> String) -> Result<String> {
    if let Some(value) = get(db, key).await? {
        return Ok(value);
    }
    sqlx::query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING")
        .bind(key)
        .bind(init())
        .execute(&mut *db.writer().await?)
        .await?;
    Ok(get(db, key).await?.unwrap_or_default())
}

pub async fn get(db: &Db, key: &str) -> Result<Option<String>> {
    let row: Option<(String,)> = sqlx::query_as("SELECT value FROM settings WHERE key = $1")
        .bind(key)
        .fetch_optional(db.pool())
        .await?;
    Ok(row.map(|(v,)| v))
}
