//! Spend budgets: a monthly amount for the organisation or one project,
//! the thresholds that notify, the actions at 100%, and the apps those
//! actions paused. The API process evaluates every budget; a change of
//! what it notified or did is a compare-and-set ([`transition`]), so
//! among several evaluators one acts.

use sqlx::FromRow;

use crate::{Db, Result, Tx};

/// The `scope` of an organisation's own budget.
pub const ORG_SCOPE: &str = "org";

#[derive(Clone, Debug, FromRow)]
pub struct Budget {
    pub id: String,
    pub org_id: String,
    /// [`ORG_SCOPE`] or the project's id.
    pub scope: String,
    pub project_id: Option<String>,
    pub amount_cents: i64,
    /// A JSON array of percents.
    pub thresholds: String,
    /// A JSON array of `pause_apps`, `refuse_new`.
    pub actions: String,
    /// A JSON array of addresses.
    pub notify_emails: String,
    /// The month (`YYYY-MM`) `notified_percent` is about.
    pub period: String,
    pub notified_percent: i64,
    pub spent_cents: Option<f64>,
    pub evaluated_at: Option<i64>,
    /// When the 100% actions ran; cleared by a resume.
    pub limited_at: Option<i64>,
    /// The month a resume turned the actions off for.
    pub resumed_period: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// An app a budget paused.
#[derive(Clone, Debug, FromRow)]
pub struct Paused {
    pub budget_id: String,
    pub app_id: String,
    pub app_name: String,
    pub paused_at: i64,
    /// The app's status now (`None` once deleted for good).
    pub status: Option<String>,
}

const COLUMNS: &str = "id, org_id, scope, project_id, amount_cents, thresholds, actions, \
                       notify_emails, period, notified_percent, spent_cents, evaluated_at, \
                       limited_at, resumed_period, created_at, updated_at";

/// Writes a new budget, or the fields a user changes on one (which keeps
/// what the evaluator recorded).
pub async fn save(tx: &mut Tx, b: &Budget, creating: bool) -> Result<()> {
    if creating {
        sqlx::query(
            "INSERT INTO spend_budgets (id, org_id, scope, project_id, amount_cents, thresholds, \
             actions, notify_emails, period, notified_percent, spent_cents, evaluated_at, \
             limited_at, resumed_period, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(&b.id)
        .bind(&b.org_id)
        .bind(&b.scope)
        .bind(b.project_id.as_deref())
        .bind(b.amount_cents)
        .bind(&b.thresholds)
        .bind(&b.actions)
        .bind(&b.notify_emails)
        .bind(&b.period)
        .bind(b.notified_percent)
        .bind(b.spent_cents)
        .bind(b.evaluated_at)
        .bind(b.limited_at)
        .bind(&b.resumed_period)
        .bind(b.created_at)
        .bind(b.updated_at)
        .execute(tx.conn())
        .await?;
    } else {
        sqlx::query(
            "UPDATE spend_budgets SET amount_cents = $3, thresholds = $4, actions = $5, \
             notify_emails = $6, notified_percent = $7, updated_at = $8 \
             WHERE org_id = $1 AND id = $2",
        )
        .bind(&b.org_id)
        .bind(&b.id)
        .bind(b.amount_cents)
        .bind(&b.thresholds)
        .bind(&b.actions)
        .bind(&b.notify_emails)
        .bind(b.notified_percent)
        .bind(b.updated_at)
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Budget>> {
    let sql = format!("SELECT {COLUMNS} FROM spend_budgets WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// The budget of `scope`, if there is one.
pub async fn of_scope(db: &Db, org_id: &str, scope: &str) -> Result<Option<Budget>> {
    let sql = format!("SELECT {COLUMNS} FROM spend_budgets WHERE org_id = $1 AND scope = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(scope)
        .fetch_optional(db.pool())
        .await?)
}

/// An organisation's budgets, its own first, then by project.
pub async fn list(db: &Db, org_id: &str) -> Result<Vec<Budget>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM spend_budgets WHERE org_id = $1 \
         ORDER BY CASE WHEN project_id IS NULL THEN 0 ELSE 1 END, scope"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_all(db.pool())
        .await?)
}

pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM spend_budgets WHERE org_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Up to `limit` budgets of every organisation after the id `after`.
pub async fn page(db: &Db, after: &str, limit: i64) -> Result<Vec<Budget>> {
    let sql = format!("SELECT {COLUMNS} FROM spend_budgets WHERE id > $1 ORDER BY id LIMIT $2");
    Ok(sqlx::query_as(&sql)
        .bind(after)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// A project's total per metric from `from` to `to` (inclusive days).
pub async fn project_totals(
    db: &Db,
    org_id: &str,
    project_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<(String, f64)>> {
    Ok(sqlx::query_as(
        "SELECT metric, SUM(quantity) FROM usage_points \
         WHERE org_id = $1 AND project_id = $2 AND day >= $3 AND day <= $4 \
         GROUP BY metric ORDER BY metric",
    )
    .bind(org_id)
    .bind(project_id)
    .bind(from)
    .bind(to)
    .fetch_all(db.pool())
    .await?)
}

/// Records what an evaluation measured, changing nothing else.
pub async fn observed(db: &Db, id: &str, spent_cents: f64, now: i64) -> Result<()> {
    sqlx::query("UPDATE spend_budgets SET spent_cents = $2, evaluated_at = $3 WHERE id = $1")
        .bind(id)
        .bind(spent_cents)
        .bind(now)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// What an evaluation moves a budget to.
#[derive(Clone, Debug)]
pub struct Next {
    pub period: String,
    pub notified_percent: i64,
    pub limited_at: Option<i64>,
    pub spent_cents: f64,
}

/// Moves a budget to `next` if it is still as the evaluator read it and
/// unchanged by its user since; false when someone got there first.
pub async fn transition(tx: &mut Tx, b: &Budget, next: &Next, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE spend_budgets SET period = $2, notified_percent = $3, limited_at = $4, \
         spent_cents = $5, evaluated_at = $6 \
         WHERE id = $1 AND period = $7 AND notified_percent = $8 \
         AND COALESCE(limited_at, 0) = $9 AND updated_at = $10 AND resumed_period = $11",
    )
    .bind(&b.id)
    .bind(&next.period)
    .bind(next.notified_percent)
    .bind(next.limited_at)
    .bind(next.spent_cents)
    .bind(now)
    .bind(&b.period)
    .bind(b.notified_percent)
    .bind(b.limited_at.unwrap_or(0))
    .bind(b.updated_at)
    .bind(&b.resumed_period)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Notes that `budget_id` paused an app.
pub async fn add_paused(
    tx: &mut Tx,
    org_id: &str,
    budget_id: &str,
    app_id: &str,
    app_name: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO spend_paused (org_id, budget_id, app_id, app_name, paused_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (org_id, app_id) DO NOTHING",
    )
    .bind(org_id)
    .bind(budget_id)
    .bind(app_id)
    .bind(app_name)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

const PAUSED: &str = "SELECT p.budget_id, p.app_id, p.app_name, p.paused_at, a.status \
                      FROM spend_paused p LEFT JOIN apps a ON a.id = p.app_id \
                      WHERE p.org_id = $1 ORDER BY p.paused_at, p.app_id";

/// The apps the organisation's budgets paused, oldest first.
pub async fn paused(db: &Db, org_id: &str) -> Result<Vec<Paused>> {
    Ok(sqlx::query_as(PAUSED)
        .bind(org_id)
        .fetch_all(db.pool())
        .await?)
}

/// Takes the apps budget `budget_id` paused off the list, in the
/// transaction that resumes them.
pub async fn take_paused(tx: &mut Tx, org_id: &str, budget_id: &str) -> Result<Vec<Paused>> {
    let all: Vec<Paused> = sqlx::query_as(PAUSED)
        .bind(org_id)
        .fetch_all(tx.conn())
        .await?;
    sqlx::query("DELETE FROM spend_paused WHERE org_id = $1 AND budget_id = $2")
        .bind(org_id)
        .bind(budget_id)
        .execute(tx.conn())
        .await?;
    Ok(all
        .into_iter()
        .filter(|p| p.budget_id == budget_id)
        .collect())
}

/// Takes the organisation's paused apps off the list (in the transaction
/// that resumes them) and lifts every budget's limit for `period`.
pub async fn resume(tx: &mut Tx, org_id: &str, period: &str) -> Result<(Vec<Paused>, Vec<Budget>)> {
    let taken: Vec<Paused> = sqlx::query_as(PAUSED)
        .bind(org_id)
        .fetch_all(tx.conn())
        .await?;
    sqlx::query("DELETE FROM spend_paused WHERE org_id = $1")
        .bind(org_id)
        .execute(tx.conn())
        .await?;
    let sql =
        format!("SELECT {COLUMNS} FROM spend_budgets WHERE org_id = $1 AND limited_at IS NOT NULL");
    let lifted: Vec<Budget> = sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_all(tx.conn())
        .await?;
    sqlx::query(
        "UPDATE spend_budgets SET limited_at = NULL, resumed_period = $2 \
         WHERE org_id = $1 AND limited_at IS NOT NULL",
    )
    .bind(org_id)
    .bind(period)
    .execute(tx.conn())
    .await?;
    Ok((taken, lifted))
}

/// The organisation's budgets whose 100% action refuses new resources
/// and whose limit is reached.
pub async fn refusing(db: &Db, org_id: &str) -> Result<Vec<Budget>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM spend_budgets WHERE org_id = $1 AND limited_at IS NOT NULL \
         AND actions LIKE '%refuse_new%'"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_all(db.pool())
        .await?)
}
