//! Threshold alarms: a metric of the series store (`usage_points`) summed
//! over a window of days, for an organisation, a project or a resource,
//! compared with a threshold. The API process evaluates them
//! ([`enabled_page`], [`window_sum`]); a state change is a compare-and-set
//! ([`transition`]), so among several evaluators one emits its event.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Alarm {
    pub id: String,
    pub org_id: String,
    pub project_id: Option<String>,
    pub resource_id: Option<String>,
    pub name: String,
    pub metric: String,
    pub measure: String,
    pub comparison: String,
    pub threshold: f64,
    pub window_days: i64,
    /// A JSON array of addresses.
    pub notify_emails: String,
    pub enabled: i64,
    pub state: String,
    pub value: Option<f64>,
    pub evaluated_at: Option<i64>,
    pub state_changed_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, org_id, project_id, resource_id, name, metric, measure, comparison, \
                       threshold, window_days, notify_emails, enabled, state, value, evaluated_at, \
                       state_changed_at, created_at, updated_at";

pub async fn insert(tx: &mut Tx, a: &Alarm) -> Result<()> {
    sqlx::query(
        "INSERT INTO alarms (id, org_id, project_id, resource_id, name, metric, measure, comparison, \
         threshold, window_days, notify_emails, enabled, state, value, evaluated_at, \
         state_changed_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
    )
    .bind(&a.id)
    .bind(&a.org_id)
    .bind(a.project_id.as_deref())
    .bind(a.resource_id.as_deref())
    .bind(&a.name)
    .bind(&a.metric)
    .bind(&a.measure)
    .bind(&a.comparison)
    .bind(a.threshold)
    .bind(a.window_days)
    .bind(&a.notify_emails)
    .bind(a.enabled)
    .bind(&a.state)
    .bind(a.value)
    .bind(a.evaluated_at)
    .bind(a.state_changed_at)
    .bind(a.created_at)
    .bind(a.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Writes the fields a user may change; the evaluation state starts over
/// (`pending`) because the old one was about another rule.
pub async fn update(tx: &mut Tx, a: &Alarm) -> Result<()> {
    sqlx::query(
        "UPDATE alarms SET name = $3, metric = $4, measure = $5, comparison = $6, threshold = $7, \
         window_days = $8, notify_emails = $9, enabled = $10, project_id = $11, resource_id = $12, \
         state = $13, value = $14, evaluated_at = $15, state_changed_at = $16, updated_at = $17 \
         WHERE org_id = $1 AND id = $2",
    )
    .bind(&a.org_id)
    .bind(&a.id)
    .bind(&a.name)
    .bind(&a.metric)
    .bind(&a.measure)
    .bind(&a.comparison)
    .bind(a.threshold)
    .bind(a.window_days)
    .bind(&a.notify_emails)
    .bind(a.enabled)
    .bind(a.project_id.as_deref())
    .bind(a.resource_id.as_deref())
    .bind(&a.state)
    .bind(a.value)
    .bind(a.evaluated_at)
    .bind(a.state_changed_at)
    .bind(a.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// One alarm of an organisation by id.
fn by_id() -> String {
    format!("SELECT {COLUMNS} FROM alarms WHERE org_id = $1 AND id = $2")
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Alarm>> {
    Ok(sqlx::query_as(&by_id())
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Reads an alarm inside a write transaction, so a change decides on
/// what it sees.
pub async fn get_in(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<Alarm>> {
    Ok(sqlx::query_as(&by_id())
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// An organisation's alarms, oldest first; `only` narrows the list to one
/// project's (a project-limited token sees only those).
pub async fn list(
    db: &Db,
    org_id: &str,
    only: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<Alarm>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if let Some(project) = only {
        conds.push("project_id = ?", Bind::Text(project.to_owned()));
    }
    crate::query::list(
        db.pool(),
        COLUMNS,
        "alarms",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

pub async fn count(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM alarms WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok(n)
}

pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM alarms WHERE org_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Up to `limit` enabled alarms of every organisation after the id
/// `after`, by id: the evaluator walks them page by page.
pub async fn enabled_page(db: &Db, after: &str, limit: i64) -> Result<Vec<Alarm>> {
    let sql =
        format!("SELECT {COLUMNS} FROM alarms WHERE enabled = 1 AND id > $1 ORDER BY id LIMIT $2");
    Ok(sqlx::query_as(&sql)
        .bind(after)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// The sum of `metric`'s daily quantities from `from` to `to` (inclusive
/// `YYYY-MM-DD` days) for the organisation, narrowed to one project or
/// one resource when the alarm names them.
pub async fn window_sum(db: &Db, alarm: &Alarm, from: &str, to: &str) -> Result<f64> {
    let mut sql = String::from(
        "SELECT COALESCE(SUM(quantity), 0.0) FROM usage_points \
         WHERE org_id = $1 AND metric = $2 AND day >= $3 AND day <= $4",
    );
    let mut n = 4;
    for (column, value) in [
        ("project_id", &alarm.project_id),
        ("resource_id", &alarm.resource_id),
    ] {
        if value.is_some() {
            n += 1;
            sql.push_str(&format!(" AND {column} = ${n}"));
        }
    }
    let mut query = sqlx::query_as::<_, (f64,)>(&sql)
        .bind(&alarm.org_id)
        .bind(&alarm.metric)
        .bind(from)
        .bind(to);
    for value in [&alarm.project_id, &alarm.resource_id]
        .into_iter()
        .flatten()
    {
        query = query.bind(value.as_str());
    }
    Ok(query.fetch_one(db.pool()).await?.0)
}

/// Records an evaluation that leaves the state as it is.
pub async fn observed(db: &Db, id: &str, value: f64, now: i64) -> Result<()> {
    sqlx::query("UPDATE alarms SET value = $2, evaluated_at = $3 WHERE id = $1")
        .bind(id)
        .bind(value)
        .bind(now)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Moves an alarm from `from` to `to` if it is still in `from` and its
/// rule unchanged since `updated_at`; false when another evaluator or an
/// edit got there first.
pub async fn transition(
    tx: &mut Tx,
    alarm: &Alarm,
    to: &str,
    value: f64,
    now: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE alarms SET state = $3, value = $4, evaluated_at = $5, state_changed_at = $5 \
         WHERE id = $1 AND state = $2 AND updated_at = $6 AND enabled = 1",
    )
    .bind(&alarm.id)
    .bind(&alarm.state)
    .bind(to)
    .bind(value)
    .bind(now)
    .bind(alarm.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}
