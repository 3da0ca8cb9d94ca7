//! Organisations, users and memberships.

use plateau_core::Role;
use sqlx::FromRow;

use crate::query::{Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Organization {
    pub id: String,
    pub name: String,
    pub plan: String,
    pub created_at: i64,
}

#[derive(Clone, Debug, FromRow)]
pub struct User {
    pub id: String,
    pub name: String,
    pub email: Option<String>,
    pub created_at: i64,
}

#[derive(Clone, Debug, FromRow)]
pub struct Member {
    pub user_id: String,
    pub name: String,
    pub email: Option<String>,
    pub role: String,
    pub created_at: i64,
}

pub async fn insert_org(tx: &mut Tx, org: &Organization) -> Result<()> {
    sqlx::query("INSERT INTO organizations (id, name, plan, created_at) VALUES ($1, $2, $3, $4)")
        .bind(&org.id)
        .bind(&org.name)
        .bind(&org.plan)
        .bind(org.created_at)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn insert_user(tx: &mut Tx, user: &User) -> Result<()> {
    sqlx::query("INSERT INTO users (id, name, email, created_at) VALUES ($1, $2, $3, $4)")
        .bind(&user.id)
        .bind(&user.name)
        .bind(&user.email)
        .bind(user.created_at)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn insert_membership(
    tx: &mut Tx,
    org_id: &str,
    user_id: &str,
    role: Role,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(org_id)
    .bind(user_id)
    .bind(role.as_str())
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn get(db: &Db, id: &str) -> Result<Option<Organization>> {
    Ok(
        sqlx::query_as("SELECT id, name, plan, created_at FROM organizations WHERE id = $1")
            .bind(id)
            .fetch_optional(db.pool())
            .await?,
    )
}

pub async fn get_user(db: &Db, id: &str) -> Result<Option<User>> {
    Ok(
        sqlx::query_as("SELECT id, name, email, created_at FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(db.pool())
            .await?,
    )
}

/// Whether no organisation exists yet (first start).
pub async fn is_empty(db: &Db) -> Result<bool> {
    let row: Option<(String,)> = sqlx::query_as("SELECT id FROM organizations LIMIT 1")
        .fetch_optional(db.pool())
        .await?;
    Ok(row.is_none())
}

/// Every organisation, oldest first: the operator's view.
pub async fn list(db: &Db, keyset: &Keyset) -> Result<Listed<Organization>> {
    crate::query::list(
        db.pool(),
        "id, name, plan, created_at",
        "organizations",
        Conditions::new(),
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

pub async fn count_members(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM memberships WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok(n)
}
