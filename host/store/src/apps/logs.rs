//! Runtime logs of apps: what replicas print, newest last, with a bounded
//! retention per app. Lines are telemetry, not changes of the app, so
//! they record no event.

use sqlx::FromRow;

use crate::{Db, Result};

#[derive(Clone, Debug, FromRow)]
pub struct LogLine {
    pub id: String,
    pub app_id: String,
    pub deployment: String,
    /// The replica that printed it; none for Wasm apps.
    pub replica: Option<String>,
    pub stream: String,
    pub line: String,
    pub created_at: i64,
}

const COLUMNS: &str = "id, app_id, deployment, replica, stream, line, created_at";

/// Rows per INSERT: 7 parameters each, far below SQLite's and
/// PostgreSQL's parameter limits.
const ROWS_PER_INSERT: usize = 200;

/// Appends lines (one transaction, a few multi-row INSERTs) and keeps the newest `keep` lines of
/// each app they touch.
pub async fn append(db: &Db, lines: &[LogLine], keep: i64) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut tx = db.begin().await?;
    for chunk in lines.chunks(ROWS_PER_INSERT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|row| {
                let p: Vec<String> = (1..=7).map(|c| format!("${}", row * 7 + c)).collect();
                format!("({})", p.join(", "))
            })
            .collect();
        let sql = format!(
            "INSERT INTO app_logs ({COLUMNS}) VALUES {}",
            values.join(", ")
        );
        let mut insert = sqlx::query(&sql);
        for l in chunk {
            insert = insert
                .bind(&l.id)
                .bind(&l.app_id)
                .bind(&l.deployment)
                .bind(&l.replica)
                .bind(&l.stream)
                .bind(&l.line)
                .bind(l.created_at);
        }
        insert.execute(tx.conn()).await?;
    }
    let mut apps: Vec<&str> = lines.iter().map(|l| l.app_id.as_str()).collect();
    apps.sort_unstable();
    apps.dedup();
    for app in apps {
        sqlx::query(
            "DELETE FROM app_logs WHERE app_id = $1 AND id < \
             (SELECT MIN(id) FROM (SELECT id FROM app_logs WHERE app_id = $2 \
              ORDER BY id DESC LIMIT $3) AS newest)",
        )
        .bind(app)
        .bind(app)
        .bind(keep)
        .execute(tx.conn())
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The app's newest `limit` lines at or after `since` (milliseconds),
/// oldest first.
pub async fn list(db: &Db, app_id: &str, since: Option<i64>, limit: i64) -> Result<Vec<LogLine>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM app_logs WHERE app_id = $1 AND created_at >= $2 \
         ORDER BY id DESC LIMIT $3"
    );
    let mut rows: Vec<LogLine> = sqlx::query_as(&sql)
        .bind(app_id)
        .bind(since.unwrap_or(0))
        .bind(limit)
        .fetch_all(db.pool())
        .await?;
    rows.reverse();
    Ok(rows)
}

/// The app's lines written after the line `after` (an id), oldest first,
/// at most `limit`: what a follower has not seen yet. Ids grow with time
/// within the one process that writes an app's lines.
pub async fn after(db: &Db, app_id: &str, after: &str, limit: i64) -> Result<Vec<LogLine>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM app_logs WHERE app_id = $1 AND id > $2 ORDER BY id LIMIT $3"
    );
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .bind(after)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// A line of an organisation's apps, with its app's name.
#[derive(Clone, Debug, FromRow)]
pub struct OrgLogLine {
    #[sqlx(flatten)]
    pub line: LogLine,
    pub app_name: String,
}

/// The lines of every app of organisation `org_id` written after the line
/// `after` (an id) and at or before `settled` (milliseconds), oldest first,
/// at most `limit`: what a log drain has not forwarded yet. Lines of one
/// process get increasing ids, and `settled` leaves out the newest, whose
/// write may not have committed.
pub async fn after_in_org(
    db: &Db,
    org_id: &str,
    after: &str,
    settled: i64,
    limit: i64,
) -> Result<Vec<OrgLogLine>> {
    let columns: Vec<String> = COLUMNS.split(", ").map(|c| format!("l.{c}")).collect();
    let sql = format!(
        "SELECT {}, a.name AS app_name FROM app_logs l JOIN apps a ON a.id = l.app_id \
         WHERE a.org_id = $1 AND l.id > $2 AND l.created_at <= $3 ORDER BY l.id LIMIT $4",
        columns.join(", ")
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(after)
        .bind(settled)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}
