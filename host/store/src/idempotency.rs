//! Idempotency records (spec section 1.1, and the IETF Idempotency-Key
//! draft): one row per (scope, method, path, key), kept 24 hours.
//!
//! A request reserves its key before it runs; concurrent retries see the
//! reservation and get a conflict; the finished response is stored for
//! replay. A reservation whose host died is taken over once its lock
//! expires.

use crate::{Db, Result};

/// How long a record is kept.
pub const RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
/// How long a running request holds its key before another host may take
/// it over.
pub const LOCK_MS: i64 = 60 * 1000;

/// Identifies one idempotent request.
#[derive(Clone, Debug)]
pub struct KeyRef<'a> {
    /// Who sent it: `token:<id>`, `grant:<id>` or `admin:<session hash>`.
    pub scope: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub key: &'a str,
}

/// A response kept for replay.
#[derive(Clone, Debug)]
pub struct StoredResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

#[derive(Debug)]
pub enum Reservation {
    /// The key is ours: run the request.
    Acquired,
    /// The first request finished: replay its response.
    Replay(StoredResponse),
    /// The first request is still running.
    InProgress,
    /// The key was used with a different body.
    Mismatch,
}

type Row = (
    String,
    String,
    Option<i64>,
    Option<String>,
    Option<Vec<u8>>,
    i64,
    i64,
);

pub async fn reserve(db: &Db, k: &KeyRef<'_>, fingerprint: &str, now: i64) -> Result<Reservation> {
    // Two rounds at most: the second runs after an expired record was purged.
    for _ in 0..2 {
        // Replays and conflicts are answered from a read; only a first use writes.
        if let Some(row) = fetch(db, k).await? {
            match judge(db, k, fingerprint, now, row).await? {
                Some(verdict) => return Ok(verdict),
                None => continue,
            }
        }
        let inserted = sqlx::query(
            "INSERT INTO idempotency_keys (scope, method, path, key, fingerprint, state, status, \
             content_type, body, locked_until, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, 'running', NULL, NULL, NULL, $6, $7, $8) \
             ON CONFLICT (scope, method, path, key) DO NOTHING",
        )
        .bind(k.scope)
        .bind(k.method)
        .bind(k.path)
        .bind(k.key)
        .bind(fingerprint)
        .bind(now + LOCK_MS)
        .bind(now)
        .bind(now + RETENTION_MS)
        .execute(db.writer())
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(Reservation::Acquired);
        }
        // Someone inserted between our read and our write: judge their record.
        if let Some(row) = fetch(db, k).await?
            && let Some(verdict) = judge(db, k, fingerprint, now, row).await?
        {
            return Ok(verdict);
        }
    }
    Ok(Reservation::InProgress)
}

async fn fetch(db: &Db, k: &KeyRef<'_>) -> Result<Option<Row>> {
    Ok(sqlx::query_as(
        "SELECT fingerprint, state, status, content_type, body, locked_until, expires_at \
         FROM idempotency_keys WHERE scope = $1 AND method = $2 AND path = $3 AND key = $4",
    )
    .bind(k.scope)
    .bind(k.method)
    .bind(k.path)
    .bind(k.key)
    .fetch_optional(db.pool())
    .await?)
}

/// What an existing record means for a new request with the same key;
/// `None` when the record had expired and was purged.
async fn judge(
    db: &Db,
    k: &KeyRef<'_>,
    fingerprint: &str,
    now: i64,
    row: Row,
) -> Result<Option<Reservation>> {
    let (stored_fp, state, status, content_type, body, locked_until, expires_at) = row;
    if expires_at <= now {
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE scope = $1 AND method = $2 AND path = $3 \
                 AND key = $4 AND expires_at <= $5",
        )
        .bind(k.scope)
        .bind(k.method)
        .bind(k.path)
        .bind(k.key)
        .bind(now)
        .execute(db.writer())
        .await?;
        return Ok(None);
    }
    if stored_fp != fingerprint {
        return Ok(Some(Reservation::Mismatch));
    }
    if state == "completed" {
        return Ok(Some(Reservation::Replay(StoredResponse {
            status: status.unwrap_or(500) as u16,
            content_type,
            body: body.unwrap_or_default(),
        })));
    }
    if locked_until > now {
        return Ok(Some(Reservation::InProgress));
    }
    // The first request's host died: take the key over if nobody else has.
    let taken = sqlx::query(
        "UPDATE idempotency_keys SET locked_until = $5 WHERE scope = $1 AND method = $2 \
             AND path = $3 AND key = $4 AND state = 'running' AND locked_until = $6",
    )
    .bind(k.scope)
    .bind(k.method)
    .bind(k.path)
    .bind(k.key)
    .bind(now + LOCK_MS)
    .bind(locked_until)
    .execute(db.writer())
    .await?;
    Ok(Some(if taken.rows_affected() == 1 {
        Reservation::Acquired
    } else {
        Reservation::InProgress
    }))
}

/// Stores the response of a reserved request for replay.
pub async fn complete(db: &Db, k: &KeyRef<'_>, response: &StoredResponse) -> Result<()> {
    sqlx::query(
        "UPDATE idempotency_keys SET state = 'completed', status = $5, content_type = $6, body = $7 \
         WHERE scope = $1 AND method = $2 AND path = $3 AND key = $4",
    )
    .bind(k.scope)
    .bind(k.method)
    .bind(k.path)
    .bind(k.key)
    .bind(i64::from(response.status))
    .bind(&response.content_type)
    .bind(&response.body)
    .execute(db.writer())
    .await?;
    Ok(())
}

/// Forgets a reservation: the request changed nothing (a 4xx), so the key
/// may be used again, with a corrected body.
pub async fn release(db: &Db, k: &KeyRef<'_>) -> Result<()> {
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE scope = $1 AND method = $2 AND path = $3 AND key = $4 \
         AND state = 'running'",
    )
    .bind(k.scope)
    .bind(k.method)
    .bind(k.path)
    .bind(k.key)
    .execute(db.writer())
    .await?;
    Ok(())
}

/// Deletes records older than the retention period.
pub async fn purge_expired(db: &Db, now: i64) -> Result<u64> {
    let done = sqlx::query("DELETE FROM idempotency_keys WHERE expires_at <= $1")
        .bind(now)
        .execute(db.writer())
        .await?;
    Ok(done.rows_affected())
}
