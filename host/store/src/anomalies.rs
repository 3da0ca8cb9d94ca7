//! Anomaly monitors and the anomalies they found. A monitor watches one
//! metric of the series store (`usage_points`) for the organisation, a
//! project or a resource; the API process judges each complete day once
//! ([`enabled_page`], [`daily`]) and moves `checked_day` forward by
//! compare-and-set ([`advance`]) in the transaction that records what it
//! found ([`insert_anomaly`]), so among several evaluators one reports it.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Monitor {
    pub id: String,
    pub org_id: String,
    pub project_id: Option<String>,
    pub resource_id: Option<String>,
    pub name: String,
    pub metric: String,
    pub sensitivity: String,
    /// A JSON array of addresses.
    pub notify_emails: String,
    pub enabled: i64,
    /// The last day judged; empty before the first evaluation.
    pub checked_day: String,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Clone, Debug, FromRow)]
pub struct Anomaly {
    pub id: String,
    pub org_id: String,
    pub monitor_id: String,
    pub metric: String,
    pub project_id: Option<String>,
    pub resource_id: Option<String>,
    pub day: String,
    pub value: f64,
    pub expected: f64,
    pub score: f64,
    pub direction: String,
    pub detected_at: i64,
}

const COLUMNS: &str = "id, org_id, project_id, resource_id, name, metric, sensitivity, \
                       notify_emails, enabled, checked_day, created_at, updated_at";
const ANOMALY_COLUMNS: &str = "id, org_id, monitor_id, metric, project_id, resource_id, day, \
                               value, expected, score, direction, detected_at";

/// Writes a new monitor, or every field of an existing one.
pub async fn save(tx: &mut Tx, m: &Monitor, creating: bool) -> Result<()> {
    let sql = if creating {
        "INSERT INTO anomaly_monitors (id, org_id, project_id, resource_id, name, metric, \
         sensitivity, notify_emails, enabled, checked_day, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    } else {
        "UPDATE anomaly_monitors SET project_id = $3, resource_id = $4, name = $5, metric = $6, \
         sensitivity = $7, notify_emails = $8, enabled = $9, checked_day = $10, \
         created_at = $11, updated_at = $12 WHERE id = $1 AND org_id = $2"
    };
    sqlx::query(sql)
        .bind(&m.id)
        .bind(&m.org_id)
        .bind(m.project_id.as_deref())
        .bind(m.resource_id.as_deref())
        .bind(&m.name)
        .bind(&m.metric)
        .bind(&m.sensitivity)
        .bind(&m.notify_emails)
        .bind(m.enabled)
        .bind(&m.checked_day)
        .bind(m.created_at)
        .bind(m.updated_at)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Monitor>> {
    let sql = format!("SELECT {COLUMNS} FROM anomaly_monitors WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// An organisation's monitors, oldest first; `only` narrows them to one
/// project's.
pub async fn list(
    db: &Db,
    org_id: &str,
    only: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<Monitor>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if let Some(project) = only {
        conds.push("project_id = ?", Bind::Text(project.to_owned()));
    }
    crate::query::list(
        db.pool(),
        COLUMNS,
        "anomaly_monitors",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

pub async fn count(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM anomaly_monitors WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok(n)
}

/// Deletes a monitor; what it found stays listed.
pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM anomaly_monitors WHERE org_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Up to `limit` enabled monitors of every organisation after the id
/// `after`, by id.
pub async fn enabled_page(db: &Db, after: &str, limit: i64) -> Result<Vec<Monitor>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM anomaly_monitors WHERE enabled = 1 AND id > $1 ORDER BY id LIMIT $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(after)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// The monitor's metric summed per day from `from` to `to` (inclusive
/// `YYYY-MM-DD`), narrowed to its project or resource; days without a
/// point are absent.
pub async fn daily(db: &Db, m: &Monitor, from: &str, to: &str) -> Result<Vec<(String, f64)>> {
    let mut sql = String::from(
        "SELECT day, SUM(quantity) FROM usage_points \
         WHERE org_id = $1 AND metric = $2 AND day >= $3 AND day <= $4",
    );
    let narrowed = [
        ("project_id", &m.project_id),
        ("resource_id", &m.resource_id),
    ];
    let mut n = 4;
    for (column, value) in &narrowed {
        if value.is_some() {
            n += 1;
            sql.push_str(&format!(" AND {column} = ${n}"));
        }
    }
    sql.push_str(" GROUP BY day ORDER BY day");
    let mut query = sqlx::query_as(&sql)
        .bind(&m.org_id)
        .bind(&m.metric)
        .bind(from)
        .bind(to);
    for value in narrowed.into_iter().filter_map(|(_, v)| v.as_deref()) {
        query = query.bind(value);
    }
    Ok(query.fetch_all(db.pool()).await?)
}

/// Moves the monitor's `checked_day` to `day` if it is still where the
/// evaluator read it and the monitor unchanged since; false when another
/// evaluator or an edit got there first.
pub async fn advance(tx: &mut Tx, m: &Monitor, day: &str) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE anomaly_monitors SET checked_day = $2 \
         WHERE id = $1 AND checked_day = $3 AND updated_at = $4 AND enabled = 1",
    )
    .bind(&m.id)
    .bind(day)
    .bind(&m.checked_day)
    .bind(m.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn insert_anomaly(tx: &mut Tx, a: &Anomaly) -> Result<()> {
    sqlx::query(
        "INSERT INTO anomalies (id, org_id, monitor_id, metric, project_id, resource_id, day, \
         value, expected, score, direction, detected_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&a.id)
    .bind(&a.org_id)
    .bind(&a.monitor_id)
    .bind(&a.metric)
    .bind(a.project_id.as_deref())
    .bind(a.resource_id.as_deref())
    .bind(&a.day)
    .bind(a.value)
    .bind(a.expected)
    .bind(a.score)
    .bind(&a.direction)
    .bind(a.detected_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// What the organisation's monitors found, newest first; narrowed to one
/// monitor or one project when asked.
pub async fn found(
    db: &Db,
    org_id: &str,
    monitor: Option<&str>,
    only: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<Anomaly>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if let Some(monitor) = monitor {
        conds.push("monitor_id = ?", Bind::Text(monitor.to_owned()));
    }
    if let Some(project) = only {
        conds.push("project_id = ?", Bind::Text(project.to_owned()));
    }
    crate::query::list(
        db.pool(),
        ANOMALY_COLUMNS,
        "anomalies",
        conds,
        keyset,
        "id",
        Order::Desc,
    )
    .await
}
