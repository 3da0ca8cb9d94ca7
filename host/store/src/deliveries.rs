//! Delivery of timeline events to subscribing plugins: one cursor per
//! plugin, leased by one host at a time, advanced after each delivered
//! event, so every event is delivered at least once and in id order.

use sqlx::FromRow;

use crate::{Db, Result};

/// The organisation of platform events, which plugins never receive.
const PLATFORM_ORG: &str = "platform";

/// A plugin's cursor as a lease returns it.
#[derive(Clone, Debug, FromRow)]
pub struct Cursor {
    /// The id of the last event seen.
    pub position: String,
    /// Failed attempts at the next event.
    pub attempt: i32,
}

/// An event to deliver.
#[derive(Clone, Debug, FromRow)]
pub struct PendingEvent {
    pub id: String,
    pub org_id: String,
    #[sqlx(rename = "type")]
    pub kind: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub data: String,
    pub created_at: i64,
}

/// The id of the last event `plugin` has seen, if it has a cursor: a read,
/// to look for work without taking the writer.
pub async fn position(db: &Db, plugin: &str) -> Result<Option<String>> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT position FROM plugin_event_cursors WHERE plugin = $1")
            .bind(plugin)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.map(|(position,)| position))
}

/// Leases `plugin`'s cursor to `owner` until `lease_until`, creating it at
/// `start` (so a new subscriber sees only later events). `None` while
/// another host holds it (leases are read at `lease_now`, the system clock)
/// or a failed delivery waits for its retry time (after `now`, the host
/// clock).
pub async fn lease(
    db: &Db,
    plugin: &str,
    owner: &str,
    start: &str,
    now: i64,
    lease_now: i64,
    lease_until: i64,
) -> Result<Option<Cursor>> {
    sqlx::query(
        "INSERT INTO plugin_event_cursors (plugin, position) VALUES ($1, $2) \
         ON CONFLICT (plugin) DO NOTHING",
    )
    .bind(plugin)
    .bind(start)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(sqlx::query_as(
        "UPDATE plugin_event_cursors SET lease_until = $1, lease_owner = $2 \
         WHERE plugin = $3 AND (lease_until <= $5 OR lease_owner = $2) AND not_before <= $4 \
         RETURNING position, attempt",
    )
    .bind(lease_until)
    .bind(owner)
    .bind(plugin)
    .bind(now)
    .bind(lease_now)
    .fetch_optional(&mut *db.writer().await?)
    .await?)
}

/// Moves the cursor past `position`, if `owner` still holds it.
pub async fn advance(db: &Db, plugin: &str, owner: &str, position: &str) -> Result<()> {
    sqlx::query(
        "UPDATE plugin_event_cursors SET position = $1, attempt = 0, not_before = 0 \
         WHERE plugin = $2 AND lease_owner = $3",
    )
    .bind(position)
    .bind(plugin)
    .bind(owner)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// Records a failed delivery of the next event: try again at `not_before`.
pub async fn failed(
    db: &Db,
    plugin: &str,
    owner: &str,
    attempt: i32,
    not_before: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE plugin_event_cursors SET attempt = $1, not_before = $2, lease_until = 0 \
         WHERE plugin = $3 AND lease_owner = $4",
    )
    .bind(attempt)
    .bind(not_before)
    .bind(plugin)
    .bind(owner)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// Up to `limit` events with ids after `after` and before `before`, of a
/// type matching one of `patterns` (exact, or a prefix ending in `*`),
/// oldest first, never the platform's own.
pub async fn pending(
    db: &Db,
    after: &str,
    before: &str,
    patterns: &[String],
    limit: i64,
) -> Result<Vec<PendingEvent>> {
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = String::from(
        "SELECT id, org_id, type, resource_type, resource_id, data, created_at FROM events \
         WHERE id > $1 AND id < $2 AND org_id <> $3 AND (",
    );
    let mut binds = Vec::new();
    for (i, pattern) in patterns.iter().enumerate() {
        if i > 0 {
            sql.push_str(" OR ");
        }
        let n = binds.len() + 4;
        match pattern.strip_suffix('*') {
            Some(prefix) => {
                sql.push_str(&format!("substr(type, 1, {}) = ${n}", prefix.len()));
                binds.push(prefix.to_owned());
            }
            None => {
                sql.push_str(&format!("type = ${n}"));
                binds.push(pattern.clone());
            }
        }
    }
    sql.push_str(&format!(") ORDER BY id LIMIT {limit}"));
    let mut query = sqlx::query_as(&sql)
        .bind(after)
        .bind(before)
        .bind(PLATFORM_ORG);
    for bind in binds {
        query = query.bind(bind);
    }
    Ok(query.fetch_all(db.pool()).await?)
}
