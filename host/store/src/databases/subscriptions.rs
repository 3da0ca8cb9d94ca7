//! Logical replication of managed PostgreSQL (issue 32): the
//! subscriptions the host made in a database, with their source. The
//! subscription itself lives in the subscriber's catalog; a row here is
//! what the API lists and what dropping it must undo on the source.

use sqlx::FromRow;

use crate::{Db, Result};

#[derive(Clone, Debug, FromRow)]
pub struct Subscription {
    /// The subscriber.
    pub database_id: String,
    pub name: String,
    pub org_id: String,
    /// The Plateau database replicated from; none for a connection string.
    pub source_database_id: Option<String>,
    /// `host:port/dbname` of the source, never a password.
    pub source_display: String,
    pub publication: String,
    /// The role the host made on a Plateau source; empty otherwise.
    pub source_role: String,
    pub slot_name: String,
    /// 1 when the tables were copied first.
    pub copy_data: i64,
    pub created_at: i64,
}

const COLUMNS: &str = "database_id, name, org_id, source_database_id, source_display, \
    publication, source_role, slot_name, copy_data, created_at";

/// Records a subscription made in its database.
pub async fn insert(db: &Db, s: &Subscription) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO database_subscriptions ({COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(&s.database_id)
    .bind(&s.name)
    .bind(&s.org_id)
    .bind(&s.source_database_id)
    .bind(&s.source_display)
    .bind(&s.publication)
    .bind(&s.source_role)
    .bind(&s.slot_name)
    .bind(s.copy_data)
    .bind(s.created_at)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Database `id`'s subscriptions, by name.
pub async fn of(db: &Db, id: &str) -> Result<Vec<Subscription>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM database_subscriptions WHERE database_id = $1 ORDER BY name"
    );
    Ok(sqlx::query_as(&sql).bind(id).fetch_all(db.pool()).await?)
}

/// Subscription `name` of database `id`.
pub async fn get(db: &Db, id: &str, name: &str) -> Result<Option<Subscription>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM database_subscriptions WHERE database_id = $1 AND name = $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .bind(name)
        .fetch_optional(db.pool())
        .await?)
}

/// Forgets subscription `name` of database `id`.
pub async fn remove(db: &Db, id: &str, name: &str) -> Result<()> {
    sqlx::query("DELETE FROM database_subscriptions WHERE database_id = $1 AND name = $2")
        .bind(id)
        .bind(name)
        .execute(db.pool())
        .await?;
    Ok(())
}
