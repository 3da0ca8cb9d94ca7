//! Plan limits (spec section 8), kept as data in the `plans` table.

use serde::Serialize;
use sqlx::FromRow;

use crate::{Db, Result};

#[derive(Clone, Debug, FromRow, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanLimits {
    pub name: String,
    #[serde(skip)]
    pub position: i64,
    pub price_cents: i64,
    pub apps: i64,
    pub databases: i64,
    pub cache_instances: i64,
    pub cron_jobs: i64,
    pub storage_gb: i64,
    pub db_disk_gb: i64,
    pub bandwidth_gb: i64,
    pub check_min_interval_seconds: i64,
}

const COLUMNS: &str = "name, position, price_cents, apps, databases, cache_instances, cron_jobs, \
                       storage_gb, db_disk_gb, bandwidth_gb, check_min_interval_seconds";

pub async fn get(db: &Db, name: &str) -> Result<Option<PlanLimits>> {
    let sql = format!("SELECT {COLUMNS} FROM plans WHERE name = $1");
    Ok(sqlx::query_as(&sql)
        .bind(name)
        .fetch_optional(db.pool())
        .await?)
}

pub async fn list(db: &Db) -> Result<Vec<PlanLimits>> {
    let sql = format!("SELECT {COLUMNS} FROM plans ORDER BY position");
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}

/// What an organisation holds that a plan limits by count or size.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Footprint {
    pub apps: i64,
    pub databases: i64,
    pub cache_instances: i64,
    pub db_disk_gb: i64,
    pub storage_bytes: i64,
}

pub async fn footprint(db: &Db, org_id: &str) -> Result<Footprint> {
    let (apps,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM apps WHERE org_id = $1 AND deleted_at IS NULL")
            .bind(org_id)
            .fetch_one(db.pool())
            .await?;
    let (databases, db_disk_gb): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(disk_gb), 0) AS BIGINT) FROM databases WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?;
    let (cache_instances,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM caches WHERE org_id = $1")
            .bind(org_id)
            .fetch_one(db.pool())
            .await?;
    let storage_bytes = crate::storage::usage(db, org_id).await?.bytes;
    Ok(Footprint {
        apps,
        databases,
        cache_instances,
        db_disk_gb,
        storage_bytes,
    })
}

/// Moves an organisation to `plan`, with its audited event
/// (`organization.plan_changed`, category `billing`); false when it was
/// already on it. The caller checks the plan's limits first.
pub async fn change_org_plan(
    db: &Db,
    org_id: &str,
    from: &str,
    plan: &str,
    actor: &crate::events::Actor,
) -> Result<bool> {
    if from == plan {
        return Ok(false);
    }
    let now = plateau_core::time::now_ms();
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE organizations SET plan = $2 WHERE id = $1")
        .bind(org_id)
        .bind(plan)
        .execute(tx.conn())
        .await?;
    let event = crate::events::NewEvent::audited(
        org_id,
        "organization.plan_changed",
        "billing",
        "update",
        actor,
    )
    .resource("organization", org_id)
    .data(serde_json::json!({ "from": from, "to": plan }));
    crate::events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(true)
}
