//! Submissions: claims of a line, verified from the platform's own
//! records ([`evidence`]) and reviewed by the operator where the line asks
//! for it.

use sqlx::FromRow;

use super::Line;
use crate::{Db, Result, Tx};

/// A claim of a line.
#[derive(Clone, Debug, FromRow)]
pub struct Submission {
    pub id: String,
    pub org_id: String,
    pub line_id: String,
    pub reason: String,
    pub amount_cents: i64,
    /// pending, approved or rejected.
    pub status: String,
    pub evidence: String,
    /// The JSON object the claimant sent.
    pub details: String,
    pub note: Option<String>,
    pub actor_id: Option<String>,
    pub created_at: i64,
    pub reviewed_at: Option<i64>,
}

const COLUMNS: &str = "id, org_id, line_id, reason, amount_cents, status, evidence, details, \
                       note, actor_id, created_at, reviewed_at";

/// The live (not rejected) claims of a line by an organisation.
pub async fn live_claims(tx: &mut Tx, org_id: &str, line_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM reward_submissions \
         WHERE org_id = $1 AND line_id = $2 AND status <> 'rejected'",
    )
    .bind(org_id)
    .bind(line_id)
    .fetch_one(tx.conn())
    .await?;
    Ok(n)
}

/// The organisation's live claims per line, for the lines' listing.
pub async fn claims_per_line(db: &Db, org_id: &str) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT line_id, COUNT(*) FROM reward_submissions \
         WHERE org_id = $1 AND status <> 'rejected' GROUP BY line_id",
    )
    .bind(org_id)
    .fetch_all(db.pool())
    .await?)
}

/// What a claim of `line` names, to find evidence for.
#[derive(Clone, Debug, Default)]
pub struct Wanted {
    /// A resource (event lines: the event's resource; resource lines: the
    /// resource itself); any when absent.
    pub resource_id: Option<String>,
    /// Usage lines: the month (`YYYY-MM`).
    pub period: String,
}

/// Evidence in the platform's records for a claim of `line` by `org_id`
/// that no live claim of the line already used: an event of the line's
/// type (`event:<id>`), a live resource of its type (`resource:<id>`), or
/// the month's usage of its metric at or over its threshold
/// (`usage:<YYYY-MM>`). None when the records show nothing new.
pub async fn evidence(
    tx: &mut Tx,
    org_id: &str,
    line: &Line,
    wanted: &Wanted,
) -> Result<Option<String>> {
    let used = "SELECT evidence FROM reward_submissions \
                WHERE org_id = $1 AND line_id = $2 AND status <> 'rejected'";
    let resource = wanted.resource_id.as_deref();
    match line.kind.as_str() {
        "event" => {
            let sql = format!(
                "SELECT id FROM events WHERE org_id = $1 AND type = $3 \
                 AND ($4 = '' OR resource_id = $4) AND 'event:' || id NOT IN ({used}) \
                 ORDER BY id LIMIT 1"
            );
            let found: Option<(String,)> = sqlx::query_as(&sql)
                .bind(org_id)
                .bind(&line.id)
                .bind(line.event_type.as_deref().unwrap_or(""))
                .bind(resource.unwrap_or(""))
                .fetch_optional(tx.conn())
                .await?;
            Ok(found.map(|(id,)| format!("event:{id}")))
        }
        "resource" => {
            let live = match line.resource_type.as_deref() {
                Some("app") => {
                    "SELECT id FROM apps WHERE org_id = $1 AND deleted_at IS NULL \
                     AND status = 'running'"
                }
                Some("database") => {
                    "SELECT id FROM databases WHERE org_id = $1 AND status = 'running'"
                }
                Some("cache") => "SELECT id FROM caches WHERE org_id = $1 AND status = 'running'",
                Some("bucket") => "SELECT id FROM storage_buckets WHERE org_id = $1",
                _ => return Ok(None),
            };
            let sql = format!(
                "SELECT id FROM ({live}) r WHERE ($3 = '' OR r.id = $3) \
                 AND 'resource:' || r.id NOT IN ({used}) ORDER BY r.id LIMIT 1"
            );
            let found: Option<(String,)> = sqlx::query_as(&sql)
                .bind(org_id)
                .bind(&line.id)
                .bind(resource.unwrap_or(""))
                .fetch_optional(tx.conn())
                .await?;
            Ok(found.map(|(id,)| format!("resource:{id}")))
        }
        "usage" => {
            let evidence = format!("usage:{}", wanted.period);
            let (from, to) = (
                format!("{}-01", wanted.period),
                format!("{}-31", wanted.period),
            );
            let sql = format!(
                "SELECT COALESCE(SUM(quantity), 0.0) FROM usage_points \
                 WHERE org_id = $1 AND metric = $3 AND day >= $4 AND day <= $5 \
                 AND $6 NOT IN ({used})"
            );
            let found: Option<(f64,)> = sqlx::query_as(&sql)
                .bind(org_id)
                .bind(&line.id)
                .bind(line.metric.as_deref().unwrap_or(""))
                .bind(from)
                .bind(to)
                .bind(&evidence)
                .fetch_optional(tx.conn())
                .await?;
            let threshold = line.threshold.unwrap_or(f64::INFINITY);
            Ok(found.filter(|(q,)| *q >= threshold).map(|_| evidence))
        }
        _ => Ok(None),
    }
}

pub async fn insert(tx: &mut Tx, s: &Submission) -> Result<()> {
    sqlx::query(
        "INSERT INTO reward_submissions (id, org_id, line_id, reason, amount_cents, status, \
         evidence, details, note, actor_id, created_at, reviewed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&s.id)
    .bind(&s.org_id)
    .bind(&s.line_id)
    .bind(&s.reason)
    .bind(s.amount_cents)
    .bind(&s.status)
    .bind(&s.evidence)
    .bind(&s.details)
    .bind(s.note.as_deref())
    .bind(s.actor_id.as_deref())
    .bind(s.created_at)
    .bind(s.reviewed_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// A submission of any organisation (the operator's review).
pub async fn get(db: &Db, id: &str) -> Result<Option<Submission>> {
    let sql = format!("SELECT {COLUMNS} FROM reward_submissions WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Moves a pending submission to `status` with the operator's note;
/// false when it is no longer pending.
pub async fn review(
    tx: &mut Tx,
    id: &str,
    status: &str,
    note: Option<&str>,
    now: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE reward_submissions SET status = $2, note = $3, reviewed_at = $4 \
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(id)
    .bind(status)
    .bind(note)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The organisation's latest submissions, newest first.
pub async fn of_org(db: &Db, org_id: &str, limit: i64) -> Result<Vec<Submission>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM reward_submissions WHERE org_id = $1 ORDER BY id DESC LIMIT $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// Submissions of every organisation (`status`: only those), newest
/// first: what the operator reviews.
pub async fn all(db: &Db, status: Option<&str>, limit: i64) -> Result<Vec<Submission>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM reward_submissions WHERE ($1 = '' OR status = $1) \
         ORDER BY id DESC LIMIT $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(status.unwrap_or(""))
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// What the organisation earned through referrals: approved and pending
/// cents of the referral line's submissions.
pub async fn referral_earnings(db: &Db, org_id: &str) -> Result<(i64, i64)> {
    let (approved, pending): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(CASE WHEN s.status = 'approved' THEN s.amount_cents ELSE 0 END), 0) AS BIGINT), \
         CAST(COALESCE(SUM(CASE WHEN s.status = 'pending' THEN s.amount_cents ELSE 0 END), 0) AS BIGINT) \
         FROM reward_submissions s JOIN reward_lines l ON l.id = s.line_id \
         WHERE s.org_id = $1 AND l.kind = 'referral'",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?;
    Ok((approved, pending))
}

/// The organisation's earnings: approved and pending cents.
pub async fn earnings(db: &Db, org_id: &str) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(CASE WHEN status = 'approved' THEN amount_cents ELSE 0 END), 0) AS BIGINT), \
         CAST(COALESCE(SUM(CASE WHEN status = 'pending' THEN amount_cents ELSE 0 END), 0) AS BIGINT) \
         FROM reward_submissions WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?)
}
