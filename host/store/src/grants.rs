//! Connect grants: ceilings under which a broker mints ephemeral tokens.
//! A deleted grant keeps its row (marked deleted) so that its secret stays
//! refused for good and its history stays readable.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Grant {
    pub id: String,
    pub org_id: String,
    pub user_id: String,
    pub name: String,
    pub allowed_scopes: String,
    pub max_ttl_seconds: i64,
    pub max_cost_cents: Option<i64>,
    pub project_id: Option<String>,
    pub enabled: i64,
    pub secret_hint: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub deleted_at: Option<i64>,
}

const COLUMNS: &str = "id, org_id, user_id, name, allowed_scopes, max_ttl_seconds, max_cost_cents, \
                       project_id, enabled, secret_hint, created_at, updated_at, deleted_at";

pub async fn insert(tx: &mut Tx, grant: &Grant, secret_hash: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO connect_grants (id, org_id, user_id, name, allowed_scopes, max_ttl_seconds, \
         max_cost_cents, project_id, enabled, secret_hash, secret_hint, created_at, updated_at, deleted_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(&grant.id)
    .bind(&grant.org_id)
    .bind(&grant.user_id)
    .bind(&grant.name)
    .bind(&grant.allowed_scopes)
    .bind(grant.max_ttl_seconds)
    .bind(grant.max_cost_cents)
    .bind(&grant.project_id)
    .bind(grant.enabled)
    .bind(secret_hash)
    .bind(&grant.secret_hint)
    .bind(grant.created_at)
    .bind(grant.updated_at)
    .bind(grant.deleted_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The grant whose secret hashes to `secret_hash`, deleted ones included.
pub async fn find_by_secret_hash(db: &Db, secret_hash: &str) -> Result<Option<Grant>> {
    let sql = format!("SELECT {COLUMNS} FROM connect_grants WHERE secret_hash = $1");
    Ok(sqlx::query_as(&sql)
        .bind(secret_hash)
        .fetch_optional(db.pool())
        .await?)
}

/// Live (not deleted) grants of an organisation, oldest first.
pub async fn list(db: &Db, org_id: &str, keyset: &Keyset) -> Result<Listed<Grant>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    conds.push_raw("deleted_at IS NULL");
    crate::query::list(
        db.pool(),
        COLUMNS,
        "connect_grants",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

pub async fn get(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<Grant>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM connect_grants WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

pub async fn update(tx: &mut Tx, grant: &Grant) -> Result<()> {
    sqlx::query(
        "UPDATE connect_grants SET name = $3, allowed_scopes = $4, max_ttl_seconds = $5, \
         max_cost_cents = $6, enabled = $7, updated_at = $8 WHERE org_id = $1 AND id = $2",
    )
    .bind(&grant.org_id)
    .bind(&grant.id)
    .bind(&grant.name)
    .bind(&grant.allowed_scopes)
    .bind(grant.max_ttl_seconds)
    .bind(grant.max_cost_cents)
    .bind(grant.enabled)
    .bind(grant.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn mark_deleted(tx: &mut Tx, org_id: &str, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE connect_grants SET deleted_at = $3, enabled = 0, updated_at = $3 \
         WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL",
    )
    .bind(org_id)
    .bind(id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn count_live(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM connect_grants WHERE org_id = $1 AND deleted_at IS NULL",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?;
    Ok(n)
}
