//! Firewall rules (per organisation or per app) and the events their
//! matches leave: rows the API writes and lists, the agents read and
//! append to.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct RuleRow {
    pub id: String,
    pub org_id: String,
    /// None: every app of the organisation.
    pub app_id: Option<String>,
    pub description: String,
    pub expression: String,
    /// `block`, `log`, `skip` or `challenge`.
    pub action: String,
    pub priority: i64,
    /// 1 when applied.
    pub enabled: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const RULE_COLUMNS: &str = "id, org_id, app_id, description, expression, action, priority, \
                            enabled, created_at, updated_at";

/// The most rules one organisation has.
pub const MAX_RULES: i64 = 500;

pub async fn insert(tx: &mut Tx, r: &RuleRow) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO waf_rules ({RULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(&r.id)
    .bind(&r.org_id)
    .bind(&r.app_id)
    .bind(&r.description)
    .bind(&r.expression)
    .bind(&r.action)
    .bind(r.priority)
    .bind(r.enabled)
    .bind(r.created_at)
    .bind(r.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Writes every field of `r` but its id, organisation and creation time.
pub async fn update(tx: &mut Tx, r: &RuleRow) -> Result<()> {
    sqlx::query(
        "UPDATE waf_rules SET app_id = $1, description = $2, expression = $3, action = $4, \
         priority = $5, enabled = $6, updated_at = $7 WHERE id = $8 AND org_id = $9",
    )
    .bind(&r.app_id)
    .bind(&r.description)
    .bind(&r.expression)
    .bind(&r.action)
    .bind(r.priority)
    .bind(r.enabled)
    .bind(r.updated_at)
    .bind(&r.id)
    .bind(&r.org_id)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> Result<()> {
    sqlx::query("DELETE FROM waf_rules WHERE id = $1 AND org_id = $2")
        .bind(id)
        .bind(org_id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

pub async fn count_in(tx: &mut Tx, org_id: &str) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT COUNT(*) FROM waf_rules WHERE org_id = $1")
            .bind(org_id)
            .fetch_one(tx.conn())
            .await?,
    )
}

pub async fn get_in(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<RuleRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {RULE_COLUMNS} FROM waf_rules WHERE id = $1 AND org_id = $2"
    ))
    .bind(id)
    .bind(org_id)
    .fetch_optional(tx.conn())
    .await?)
}

/// The organisation's rules (of one app and the organisation's when
/// `app_id` is set), in the order they run: priority, then age.
pub async fn list(db: &Db, org_id: &str, app_id: Option<&str>) -> Result<Vec<RuleRow>> {
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM waf_rules WHERE org_id = $1 \
         AND ($2 = '' OR app_id IS NULL OR app_id = $2) ORDER BY priority, id"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(app_id.unwrap_or(""))
        .fetch_all(db.pool())
        .await?)
}

/// The organisation's managed rule set: whether on, its action, when set.
pub async fn managed(db: &Db, org_id: &str) -> Result<Option<(bool, String, i64)>> {
    let row: Option<(i64, String, i64)> =
        sqlx::query_as("SELECT enabled, action, updated_at FROM waf_managed WHERE org_id = $1")
            .bind(org_id)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.map(|(on, action, at)| (on == 1, action, at)))
}

pub async fn set_managed(
    tx: &mut Tx,
    org_id: &str,
    on: bool,
    action: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO waf_managed (org_id, enabled, action, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (org_id) DO UPDATE SET enabled = excluded.enabled, \
         action = excluded.action, updated_at = excluded.updated_at",
    )
    .bind(org_id)
    .bind(i64::from(on))
    .bind(action)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// One match of a rule, as recorded.
#[derive(Clone, Debug, FromRow)]
pub struct EventRow {
    pub id: String,
    pub org_id: String,
    pub app_id: String,
    pub rule_id: String,
    pub action: String,
    pub method: String,
    pub host: String,
    pub path: String,
    /// The client's network (/24 or /48), never its whole address.
    pub client_net: String,
    pub user_agent: String,
    pub at: i64,
}

const EVENT_COLUMNS: &str =
    "id, org_id, app_id, rule_id, action, method, host, path, client_net, user_agent, at";

/// Appends `events` in one transaction.
pub async fn record(db: &Db, events: &[EventRow]) -> Result<()> {
    let mut tx = db.begin().await?;
    for e in events {
        sqlx::query(&format!(
            "INSERT INTO waf_events ({EVENT_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        ))
        .bind(&e.id)
        .bind(&e.org_id)
        .bind(&e.app_id)
        .bind(&e.rule_id)
        .bind(&e.action)
        .bind(&e.method)
        .bind(&e.host)
        .bind(&e.path)
        .bind(&e.client_net)
        .bind(&e.user_agent)
        .bind(e.at)
        .execute(tx.conn())
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// What a page of events is filtered on.
#[derive(Clone, Debug, Default)]
pub struct EventFilter {
    pub app_id: Option<String>,
    pub rule_id: Option<String>,
    pub action: Option<String>,
    /// Only rules whose id starts with this (`bots.`: the bot policy's).
    pub rule_prefix: Option<String>,
}

/// The organisation's events, newest first.
pub async fn events(
    db: &Db,
    org_id: &str,
    filter: &EventFilter,
    keyset: &Keyset,
) -> Result<Listed<EventRow>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    for (column, value) in [
        ("app_id", &filter.app_id),
        ("rule_id", &filter.rule_id),
        ("action", &filter.action),
    ] {
        if let Some(value) = value {
            conds.push(&format!("{column} = ?"), Bind::Text(value.clone()));
        }
    }
    if let Some(prefix) = &filter.rule_prefix {
        let pattern = prefix.replace(['%', '_'], "") + "%";
        conds.push("rule_id LIKE ?", Bind::Text(pattern));
    }
    crate::query::list(
        db.pool(),
        EVENT_COLUMNS,
        "waf_events",
        conds,
        keyset,
        "id",
        Order::Desc,
    )
    .await
}
