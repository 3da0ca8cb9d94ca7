//! The series store: daily usage points per organisation, resource and
//! metric (`usage_points`). Reporters add increments in batches
//! ([`add`], one transaction per batch, an upsert that sums); `GET /usage`
//! reads them back ([`totals`]), `GET /metrics` through `crate::series`. Each batch
//! is charged to the tokens that created its resources in the same
//! transaction (`crate::token_spend`).

use sqlx::FromRow;

use crate::{Db, Result};

/// One increment: `quantity` more of `metric` by `resource_id` on `day`
/// (`YYYY-MM-DD`, UTC).
#[derive(Clone, Debug, PartialEq)]
pub struct Increment {
    pub org_id: String,
    pub project_id: Option<String>,
    pub resource_type: &'static str,
    pub resource_id: String,
    pub metric: &'static str,
    pub day: String,
    pub quantity: f64,
}

/// One stored point.
#[derive(Clone, Debug, FromRow)]
pub struct Point {
    pub day: String,
    pub resource_type: String,
    pub resource_id: String,
    pub project_id: Option<String>,
    pub metric: String,
    pub quantity: f64,
}

/// What `crate::series::points` selects; `None` selects everything.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub resource_id: Option<String>,
    pub project_id: Option<String>,
    pub metric: Option<String>,
    /// First and last day, inclusive.
    pub from: String,
    pub to: String,
}

/// Adds a batch of increments in one transaction.
pub async fn add(db: &Db, batch: &[Increment]) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut tx = db.begin().await?;
    for inc in batch {
        sqlx::query(
            "INSERT INTO usage_points (org_id, resource_id, metric, day, resource_type, project_id, quantity) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (org_id, resource_id, metric, day) DO UPDATE SET \
             quantity = usage_points.quantity + excluded.quantity, \
             project_id = COALESCE(excluded.project_id, usage_points.project_id)",
        )
        .bind(&inc.org_id)
        .bind(&inc.resource_id)
        .bind(inc.metric)
        .bind(&inc.day)
        .bind(inc.resource_type)
        .bind(inc.project_id.as_deref())
        .bind(inc.quantity)
        .execute(tx.conn())
        .await?;
    }
    crate::token_spend::charge_batch(&mut tx, batch).await?;
    tx.commit().await?;
    Ok(())
}

/// An organisation's total per metric from `from` to `to` (inclusive days).
pub async fn totals(db: &Db, org_id: &str, from: &str, to: &str) -> Result<Vec<(String, f64)>> {
    Ok(sqlx::query_as(
        "SELECT metric, SUM(quantity) FROM usage_points \
         WHERE org_id = $1 AND day >= $2 AND day <= $3 GROUP BY metric ORDER BY metric",
    )
    .bind(org_id)
    .bind(from)
    .bind(to)
    .fetch_all(db.pool())
    .await?)
}

/// An organisation's usage totals per month and metric from the month
/// `from` (`YYYY-MM`) on: what each month's invoice costs
/// (redeemed credit lowers them).
pub async fn monthly_totals(
    db: &Db,
    org_id: &str,
    from: &str,
) -> Result<Vec<(String, String, f64)>> {
    Ok(sqlx::query_as(
        "SELECT substr(day, 1, 7), metric, SUM(quantity) FROM usage_points \
         WHERE org_id = $1 AND day >= $2 GROUP BY substr(day, 1, 7), metric ORDER BY 1, 2",
    )
    .bind(org_id)
    .bind(format!("{from}-01"))
    .fetch_all(db.pool())
    .await?)
}

/// A cache or database this host runs, as the usage sampler reads it.
#[derive(Clone, Debug, FromRow)]
pub struct Running {
    pub id: String,
    pub org_id: String,
    pub project_id: Option<String>,
    pub status: String,
    pub replicas: i64,
}

/// This host's caches (`table` = `caches`) or databases (`databases`).
pub async fn running_on_host(db: &Db, databases: bool, host_id: &str) -> Result<Vec<Running>> {
    let sql = if databases {
        "SELECT id, org_id, project_id, status, replicas FROM databases WHERE host_id = $1"
    } else {
        "SELECT id, org_id, CAST(NULL AS TEXT) AS project_id, status, replicas FROM caches \
         WHERE host_id = $1"
    };
    Ok(sqlx::query_as(sql)
        .bind(host_id)
        .fetch_all(db.pool())
        .await?)
}

/// Every bucket: `(id, org, project, bytes)`.
pub async fn buckets(db: &Db) -> Result<Vec<(String, String, Option<String>, i64)>> {
    Ok(
        sqlx::query_as("SELECT id, org_id, project_id, bytes FROM storage_buckets ORDER BY id")
            .fetch_all(db.pool())
            .await?,
    )
}

/// Registry bytes per organisation (blobs and manifests).
pub async fn registry_bytes(db: &Db) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT org_id, CAST(SUM(size) AS BIGINT) FROM ( \
         SELECT org_id, size FROM registry_blobs UNION ALL \
         SELECT org_id, size FROM registry_manifests) AS sizes GROUP BY org_id ORDER BY org_id",
    )
    .fetch_all(db.pool())
    .await?)
}

/// Whether `host_id` is the host that samples what all hosts share
/// (buckets, the registry): the lowest registered id, so that several
/// hosts on one PostgreSQL count them once.
pub async fn samples_shared(db: &Db, host_id: &str) -> Result<bool> {
    let (first,): (Option<String>,) = sqlx::query_as("SELECT MIN(id) FROM hosts")
        .fetch_one(db.pool())
        .await?;
    Ok(first.as_deref() == Some(host_id))
}
