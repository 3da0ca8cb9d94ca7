//! Projects: the resource groups of an organisation. Every organisation has
//! one default project, created with it and never deleted.

use plateau_core::time;
use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Project {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub is_default: i64,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, name, is_default, created_at";

pub async fn insert(tx: &mut Tx, project: &Project) -> Result<()> {
    sqlx::query(
        "INSERT INTO projects (id, org_id, name, is_default, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&project.id)
    .bind(&project.org_id)
    .bind(&project.name)
    .bind(project.is_default)
    .bind(project.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Project>> {
    let sql = format!("SELECT {COLUMNS} FROM projects WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// The organisation's project named `name` (names are unique in an
/// organisation): how a manifest finds its project.
pub async fn by_name(db: &Db, org_id: &str, name: &str) -> Result<Option<Project>> {
    let sql = format!("SELECT {COLUMNS} FROM projects WHERE org_id = $1 AND name = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(name)
        .fetch_optional(db.pool())
        .await?)
}

pub async fn default_for(db: &Db, org_id: &str) -> Result<Option<Project>> {
    let sql = format!("SELECT {COLUMNS} FROM projects WHERE org_id = $1 AND is_default = 1");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_optional(db.pool())
        .await?)
}

/// Projects of an organisation, oldest first; `only` narrows the list to
/// one project (a project-limited token sees only its project).
pub async fn list(
    db: &Db,
    org_id: &str,
    only: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<Project>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if let Some(id) = only {
        conds.push("id = ?", Bind::Text(id.to_owned()));
    }
    crate::query::list(
        db.pool(),
        COLUMNS,
        "projects",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

pub async fn count(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM projects WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok(n)
}

/// What still lives in a project, by kind: a project with any of these is
/// not empty and cannot be deleted. Product areas add their resources here.
pub async fn contents(tx: &mut Tx, org_id: &str, id: &str) -> Result<Vec<(String, i64)>> {
    let now = time::now_ms();
    let (grants,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM connect_grants WHERE org_id = $1 AND project_id = $2 AND deleted_at IS NULL",
    )
    .bind(org_id)
    .bind(id)
    .fetch_one(tx.conn())
    .await?;
    let (tokens,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM tokens WHERE org_id = $1 AND project_id = $2 \
         AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3)",
    )
    .bind(org_id)
    .bind(id)
    .bind(now)
    .fetch_one(tx.conn())
    .await?;
    Ok([("connect grants", grants), ("tokens", tokens)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(kind, n)| (kind.to_owned(), n))
        .collect())
}

/// Reads a project inside a write transaction, so a delete decides on
/// what it sees.
pub async fn get_for_update(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<Project>> {
    let sql = format!("SELECT {COLUMNS} FROM projects WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM projects WHERE org_id = $1 AND id = $2 AND is_default = 0")
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}
