//! An app's deployments: the history of what ran, each `pending` until
//! it is healthy and `live` (a built one `building`, then `deploying`,
//! on the way), then `superseded`, or `failed` with a reason.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Deployment {
    pub id: String,
    pub app_id: String,
    pub org_id: String,
    pub status: String,
    /// What started it: deploy, rollback, env, resume, restore.
    pub cause: String,
    pub source_type: String,
    pub image: Option<String>,
    pub digest: Option<String>,
    pub component: Option<String>,
    pub reason: Option<String>,
    pub created_at: i64,
    pub live_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The git repository and branch a `git` deployment builds.
    pub repo: Option<String>,
    pub branch: Option<String>,
    /// The source upload an `upload` deployment builds.
    pub upload_id: Option<String>,
    /// The build's output, capped.
    pub build_log: Option<String>,
}

const COLUMNS: &str = "id, app_id, org_id, status, cause, source_type, image, digest, component, \
    reason, created_at, live_at, finished_at, repo, branch, upload_id, build_log";

pub async fn insert(tx: &mut Tx, d: &Deployment) -> Result<()> {
    let sql = format!(
        "INSERT INTO app_deployments ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
    );
    sqlx::query(&sql)
        .bind(&d.id)
        .bind(&d.app_id)
        .bind(&d.org_id)
        .bind(&d.status)
        .bind(&d.cause)
        .bind(&d.source_type)
        .bind(&d.image)
        .bind(&d.digest)
        .bind(&d.component)
        .bind(&d.reason)
        .bind(d.created_at)
        .bind(d.live_at)
        .bind(d.finished_at)
        .bind(&d.repo)
        .bind(&d.branch)
        .bind(&d.upload_id)
        .bind(&d.build_log)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn get(db: &Db, app_id: &str, id: &str) -> Result<Option<Deployment>> {
    let sql = format!("SELECT {COLUMNS} FROM app_deployments WHERE app_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

pub async fn get_in(tx: &mut Tx, app_id: &str, id: &str) -> Result<Option<Deployment>> {
    let sql = format!("SELECT {COLUMNS} FROM app_deployments WHERE app_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// An app's deployments, newest first.
pub async fn list(db: &Db, app_id: &str, keyset: &Keyset) -> Result<Listed<Deployment>> {
    let mut conds = Conditions::new();
    conds.push("app_id = ?", Bind::Text(app_id.to_owned()));
    crate::query::list(
        db.pool(),
        COLUMNS,
        "app_deployments",
        conds,
        keyset,
        "id",
        Order::Desc,
    )
    .await
}

/// The newest deployment before `before` that was once live and still
/// has its component: where a rollback without a target goes.
pub async fn previous_live(tx: &mut Tx, app_id: &str, before: &str) -> Result<Option<Deployment>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM app_deployments WHERE app_id = $1 AND id < $2 \
         AND live_at IS NOT NULL AND component IS NOT NULL ORDER BY id DESC LIMIT 1"
    );
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .bind(before)
        .fetch_optional(tx.conn())
        .await?)
}

/// Records what the image resolved to.
pub async fn set_artifact(tx: &mut Tx, id: &str, digest: &str, component: &str) -> Result<()> {
    sqlx::query("UPDATE app_deployments SET digest = $1, component = $2 WHERE id = $3")
        .bind(digest)
        .bind(component)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Records what a build made: the image it pushed and its log.
pub async fn set_built(db: &Db, id: &str, image: Option<&str>, log: &str) -> Result<()> {
    sqlx::query(
        "UPDATE app_deployments SET image = COALESCE($1, image), build_log = $2 WHERE id = $3",
    )
    .bind(image)
    .bind(log)
    .bind(id)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Moves a deployment between its working statuses (`building`,
/// `deploying`); false when it was no longer working.
pub async fn set_working(db: &Db, id: &str, status: &str) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_deployments SET status = $1 \
         WHERE id = $2 AND status IN ('pending', 'building', 'deploying')",
    )
    .bind(status)
    .bind(id)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Makes `id` live and supersedes the app's other live deployment; false
/// (and nothing changed) when `id` was no longer working: another host
/// promoted it, or it failed.
pub async fn promote(tx: &mut Tx, app_id: &str, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_deployments SET status = 'live', live_at = $1 \
         WHERE id = $2 AND status IN ('pending', 'building', 'deploying')",
    )
    .bind(now)
    .bind(id)
    .execute(tx.conn())
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    sqlx::query(
        "UPDATE app_deployments SET status = 'superseded', finished_at = $1 \
         WHERE app_id = $2 AND status = 'live' AND id <> $3",
    )
    .bind(now)
    .bind(app_id)
    .bind(id)
    .execute(tx.conn())
    .await?;
    Ok(true)
}

/// Marks a pending deployment failed; false when it was no longer pending.
pub async fn fail(tx: &mut Tx, id: &str, reason: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_deployments SET status = 'failed', reason = $1, finished_at = $2 \
         WHERE id = $3 AND status IN ('pending', 'building', 'deploying')",
    )
    .bind(reason)
    .bind(now)
    .bind(id)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The deployments of one app on their way, oldest first: the first is
/// the next to go live.
pub async fn working(db: &Db, app_id: &str) -> Result<Vec<Deployment>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM app_deployments WHERE app_id = $1 \
         AND status IN ('pending', 'building', 'deploying') ORDER BY id"
    );
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_all(db.pool())
        .await?)
}

/// Pending deployments, oldest first: after a restart, the work a host
/// left unfinished.
pub async fn pending(db: &Db) -> Result<Vec<Deployment>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM app_deployments WHERE status IN ('pending', 'building', 'deploying') ORDER BY id"
    );
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}
