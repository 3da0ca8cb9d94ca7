//! Previews of apps: a branch of the app's linked repository deployed
//! under a host name of its own. A preview runs as an app row of its own
//! (`app_id`); this table says whose preview it is, which branch it
//! builds and which database branch goes with it. `purge` removes
//! everything the preview made once its replicas are down.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Preview {
    pub id: String,
    pub org_id: String,
    /// The app previewed.
    pub parent_id: String,
    /// The preview's own app row.
    pub app_id: String,
    pub branch: String,
    pub db_branch_id: Option<String>,
    pub db_env_key: Option<String>,
    /// `open` or `deleting`.
    pub status: String,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, org_id, parent_id, app_id, branch, db_branch_id, db_env_key, \
    status, created_at, updated_at";

pub async fn insert(tx: &mut Tx, p: &Preview) -> Result<()> {
    let sql = format!(
        "INSERT INTO app_previews ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    );
    sqlx::query(&sql)
        .bind(&p.id)
        .bind(&p.org_id)
        .bind(&p.parent_id)
        .bind(&p.app_id)
        .bind(&p.branch)
        .bind(&p.db_branch_id)
        .bind(&p.db_env_key)
        .bind(&p.status)
        .bind(p.created_at)
        .bind(p.updated_at)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// The previews of app `parent_id`, oldest first.
pub async fn list(db: &Db, parent_id: &str) -> Result<Vec<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE parent_id = $1 ORDER BY id");
    Ok(sqlx::query_as(&sql)
        .bind(parent_id)
        .fetch_all(db.pool())
        .await?)
}

/// [`list`] inside a write transaction.
pub async fn list_in(tx: &mut Tx, parent_id: &str) -> Result<Vec<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE parent_id = $1 ORDER BY id");
    Ok(sqlx::query_as(&sql)
        .bind(parent_id)
        .fetch_all(tx.conn())
        .await?)
}

/// Preview `id` of app `parent_id`.
pub async fn get(db: &Db, parent_id: &str, id: &str) -> Result<Option<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE parent_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(parent_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// [`get`] inside a write transaction.
pub async fn get_in(tx: &mut Tx, parent_id: &str, id: &str) -> Result<Option<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE parent_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(parent_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// The preview app `app_id` runs, if it is one.
pub async fn of_app(db: &Db, app_id: &str) -> Result<Option<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE app_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_optional(db.pool())
        .await?)
}

/// [`of_app`] inside a write transaction.
pub async fn of_app_in(tx: &mut Tx, app_id: &str) -> Result<Option<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE app_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_optional(tx.conn())
        .await?)
}

/// The preview of `branch` of app `parent_id`, open or being deleted.
pub async fn for_branch(tx: &mut Tx, parent_id: &str, branch: &str) -> Result<Option<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE parent_id = $1 AND branch = $2");
    Ok(sqlx::query_as(&sql)
        .bind(parent_id)
        .bind(branch)
        .fetch_optional(tx.conn())
        .await?)
}

/// The preview that deletes database branch `db_branch_id`, if any.
pub async fn with_db_branch(tx: &mut Tx, db_branch_id: &str) -> Result<Option<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE db_branch_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(db_branch_id)
        .fetch_optional(tx.conn())
        .await?)
}

/// Marks the preview `deleting`; false when it already was.
pub async fn set_deleting(tx: &mut Tx, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_previews SET status = 'deleting', updated_at = $1 \
         WHERE id = $2 AND status <> 'deleting'",
    )
    .bind(now)
    .bind(id)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Every preview being deleted, across organisations.
pub async fn deleting(db: &Db) -> Result<Vec<Preview>> {
    let sql = format!("SELECT {COLUMNS} FROM app_previews WHERE status = 'deleting' ORDER BY id");
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}

/// Removes what the preview made: its app row and the rows under it
/// (deployments, environment, logs, uploads, deliveries, edge rules),
/// its builds' registry repository `repository` (the registry's GC then
/// collects the blobs), the stored components no other deployment of the
/// organisation runs, and the preview's own row. Returns the digests of
/// the components removed.
pub async fn purge(tx: &mut Tx, p: &Preview, repository: &str) -> Result<Vec<String>> {
    let components: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT component FROM app_deployments WHERE app_id = $1 AND component IS NOT NULL",
    )
    .bind(&p.app_id)
    .fetch_all(tx.conn())
    .await?;
    for table in [
        "app_env",
        "app_plugin_env",
        "app_plugin_layers",
        "app_logs",
        "app_uploads",
        "app_git_deliveries",
        "app_git_links",
        "app_rules",
        "app_edge_settings",
        "app_analytics",
        "app_deployments",
    ] {
        sqlx::query(&format!("DELETE FROM {table} WHERE app_id = $1"))
            .bind(&p.app_id)
            .execute(tx.conn())
            .await?;
    }
    let mut removed = Vec::new();
    for (digest,) in components {
        let done = sqlx::query(
            "DELETE FROM app_components WHERE org_id = $1 AND digest = $2 AND NOT EXISTS \
             (SELECT 1 FROM app_deployments WHERE org_id = $1 AND component = $2)",
        )
        .bind(&p.org_id)
        .bind(&digest)
        .execute(tx.conn())
        .await?;
        if done.rows_affected() > 0 {
            removed.push(digest);
        }
    }
    for table in [
        "registry_tags",
        "registry_manifest_references",
        "registry_manifests",
        "registry_repository_blobs",
    ] {
        sqlx::query(&format!("DELETE FROM {table} WHERE repository = $1"))
            .bind(repository)
            .execute(tx.conn())
            .await?;
    }
    sqlx::query("DELETE FROM registry_repositories WHERE org_id = $1 AND name = $2")
        .bind(&p.org_id)
        .bind(repository)
        .execute(tx.conn())
        .await?;
    sqlx::query("DELETE FROM app_previews WHERE id = $1")
        .bind(&p.id)
        .execute(tx.conn())
        .await?;
    sqlx::query("DELETE FROM apps WHERE id = $1")
        .bind(&p.app_id)
        .execute(tx.conn())
        .await?;
    Ok(removed)
}
