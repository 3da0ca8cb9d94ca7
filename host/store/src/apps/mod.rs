//! Apps (spec section 4.4): the app record, its plan maxima, and its
//! deployments, components, environment and logs in submodules.
//! Trashed apps keep their row with `deleted_at` set until restored.

pub mod analytics;
pub mod autoscale;
pub mod cdn;
pub mod components;
pub mod deployments;
pub mod domains;
pub mod env;
pub mod filters;
pub mod git_links;
pub mod logs;
pub mod plugin_env;
pub mod previews;
pub mod rules;
pub mod uploads;
pub mod volume_moves;
pub mod volumes;

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct App {
    pub id: String,
    pub org_id: String,
    pub project_id: String,
    pub name: String,
    pub slug: String,
    pub source_type: String,
    pub image: Option<String>,
    pub repo: Option<String>,
    pub branch: Option<String>,
    pub port: Option<i64>,
    pub health_check_path: String,
    pub status: String,
    pub replicas: i64,
    pub memory_mb: i64,
    pub milli_cpu: i64,
    pub live_deployment_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub deleted_at: Option<i64>,
}

const COLUMNS: &str = "id, org_id, project_id, name, slug, source_type, image, repo, branch, \
    port, health_check_path, status, replicas, memory_mb, milli_cpu, live_deployment_id, \
    created_at, updated_at, deleted_at";

/// The most one app may use on a plan.
#[derive(Clone, Debug, FromRow)]
pub struct AppPlanLimits {
    pub plan: String,
    pub memory_mb: i64,
    pub milli_cpu: i64,
    pub replicas: i64,
}

pub async fn insert(tx: &mut Tx, app: &App) -> Result<()> {
    let sql = format!(
        "INSERT INTO apps ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)"
    );
    sqlx::query(&sql)
        .bind(&app.id)
        .bind(&app.org_id)
        .bind(&app.project_id)
        .bind(&app.name)
        .bind(&app.slug)
        .bind(&app.source_type)
        .bind(&app.image)
        .bind(&app.repo)
        .bind(&app.branch)
        .bind(app.port)
        .bind(&app.health_check_path)
        .bind(&app.status)
        .bind(app.replicas)
        .bind(app.memory_mb)
        .bind(app.milli_cpu)
        .bind(&app.live_deployment_id)
        .bind(app.created_at)
        .bind(app.updated_at)
        .bind(app.deleted_at)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// An app of the organisation, trashed or not.
pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<App>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// [`get`] inside a write transaction, so a change decides on what it sees.
pub async fn get_in(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<App>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// An app by its id alone, for the host's own work (never for a caller).
pub async fn get_any(db: &Db, id: &str) -> Result<Option<App>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// The organisation's apps outside the trash, oldest first; `only`
/// narrows them to one project.
pub async fn list(
    db: &Db,
    org_id: &str,
    only: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<App>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    conds.push_raw("deleted_at IS NULL");
    // Previews run as apps of their own, listed under their app.
    conds.push_raw("id NOT IN (SELECT app_id FROM app_previews)");
    if let Some(project) = only {
        conds.push("project_id = ?", Bind::Text(project.to_owned()));
    }
    crate::query::list(db.pool(), COLUMNS, "apps", conds, keyset, "id", Order::Asc).await
}

/// The organisation's apps outside the trash, previews included, read in
/// a write transaction; `only` narrows them to one project.
pub async fn of_org_in(tx: &mut Tx, org_id: &str, only: Option<&str>) -> Result<Vec<App>> {
    let mut sql = format!("SELECT {COLUMNS} FROM apps WHERE org_id = $1 AND deleted_at IS NULL");
    if only.is_some() {
        sql.push_str(" AND project_id = $2");
    }
    sql.push_str(" ORDER BY id");
    let mut query = sqlx::query_as(&sql).bind(org_id);
    if let Some(project) = only {
        query = query.bind(project);
    }
    Ok(query.fetch_all(tx.conn()).await?)
}

/// Apps counted against the plan: those outside the trash.
pub async fn count_active(tx: &mut Tx, org_id: &str) -> Result<i64> {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM apps WHERE org_id = $1 AND deleted_at IS NULL")
            .bind(org_id)
            .fetch_one(tx.conn())
            .await?;
    Ok(n)
}

/// Every app outside the trash, across organisations: what the hosts'
/// supervisors follow.
pub async fn active(db: &Db) -> Result<Vec<App>> {
    let sql = format!("SELECT {COLUMNS} FROM apps WHERE deleted_at IS NULL ORDER BY id");
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}

/// Whether another app already has `slug`.
pub async fn slug_taken(tx: &mut Tx, slug: &str) -> Result<bool> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM apps WHERE slug = $1")
        .bind(slug)
        .fetch_one(tx.conn())
        .await?;
    Ok(n > 0)
}

pub async fn rename(tx: &mut Tx, id: &str, name: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE apps SET name = $1, updated_at = $2 WHERE id = $3")
        .bind(name)
        .bind(now)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn set_status(tx: &mut Tx, id: &str, status: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE apps SET status = $1, updated_at = $2 WHERE id = $3")
        .bind(status)
        .bind(now)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Moves the app from status `from` to `to` (what a host observed);
/// false when it was no longer `from`.
pub async fn observed(db: &Db, id: &str, from: &str, to: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE apps SET status = $1, updated_at = $2 \
         WHERE id = $3 AND status = $4 AND deleted_at IS NULL",
    )
    .bind(to)
    .bind(now)
    .bind(id)
    .bind(from)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Makes `deployment_id` the live deployment and the app `running`.
pub async fn set_live(tx: &mut Tx, id: &str, deployment_id: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE apps SET live_deployment_id = $1, status = 'running', updated_at = $2 WHERE id = $3",
    )
    .bind(deployment_id)
    .bind(now)
    .bind(id)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Changes the image a later deployment pulls.
pub async fn set_image(tx: &mut Tx, id: &str, image: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE apps SET image = $1, source_type = 'image', updated_at = $2 WHERE id = $3")
        .bind(image)
        .bind(now)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Changes the git repository and branch a later deployment builds.
pub async fn set_git(tx: &mut Tx, id: &str, repo: &str, branch: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE apps SET repo = $1, branch = $2, source_type = 'git', updated_at = $3 WHERE id = $4",
    )
    .bind(repo)
    .bind(branch)
    .bind(now)
    .bind(id)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn set_replicas(tx: &mut Tx, id: &str, replicas: i64, now: i64) -> Result<()> {
    sqlx::query("UPDATE apps SET replicas = $1, updated_at = $2 WHERE id = $3")
        .bind(replicas)
        .bind(now)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn set_resources(
    tx: &mut Tx,
    id: &str,
    memory_mb: i64,
    milli_cpu: i64,
    now: i64,
) -> Result<()> {
    sqlx::query("UPDATE apps SET memory_mb = $1, milli_cpu = $2, updated_at = $3 WHERE id = $4")
        .bind(memory_mb)
        .bind(milli_cpu)
        .bind(now)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Moves the app to the trash (`Some(now)`) or out of it (`None`).
pub async fn set_trashed(tx: &mut Tx, id: &str, at: Option<i64>, now: i64) -> Result<()> {
    sqlx::query("UPDATE apps SET deleted_at = $1, updated_at = $2 WHERE id = $3")
        .bind(at)
        .bind(now)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn plan_limits(db: &Db, plan: &str) -> Result<Option<AppPlanLimits>> {
    Ok(sqlx::query_as(
        "SELECT plan, memory_mb, milli_cpu, replicas FROM app_plan_limits WHERE plan = $1",
    )
    .bind(plan)
    .fetch_optional(db.pool())
    .await?)
}

/// The number of apps the organisation's plan allows (spec section 8).
pub async fn plan_app_limit(tx: &mut Tx, org_id: &str) -> Result<(String, i64)> {
    Ok(sqlx::query_as(
        "SELECT p.name, p.apps FROM organizations o JOIN plans p ON p.name = o.plan WHERE o.id = $1",
    )
    .bind(org_id)
    .fetch_one(tx.conn())
    .await?)
}
