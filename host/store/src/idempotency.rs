//! Idempotency records (spec section 1.1, and the IETF Idempotency-Key
//! draft): one row per (scope, method, path, key), kept 24 hours.
//!
//! A request reserves its key before it runs; concurrent retries see the
//! reservation and get a conflict; the finished response is stored for
//! replay. A reservation whose host died is taken over once its lock
//! expires.
//!
//! The response is stored in the transaction of the change when the
//! handler ends with [`crate::Tx::commit_last`] ([`complete_in`]), so the
//! change and its record are one commit: a fresh request costs two write
//! transactions (reserve, then change and record), and no crash can leave a
//! change without the record that stops a retry from making it again.

mod group;

pub(crate) use group::Reservations;

use crate::db::Deferred;
use crate::{Db, Result, Tx};

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
    /// The key is ours: run the request. `lease` is the reservation's
    /// `locked_until`, which [`complete_in`] checks is still ours.
    Acquired { lease: i64 },
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
        if insert(db, k, fingerprint, now).await? {
            return Ok(Reservation::Acquired {
                lease: now + LOCK_MS,
            });
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

/// Inserts a running record unless one exists; true if inserted.
async fn insert(db: &Db, k: &KeyRef<'_>, fingerprint: &str, now: i64) -> Result<bool> {
    if let Some(reservations) = db.reservations() {
        return reservations
            .insert(group::NewKey {
                scope: k.scope.to_owned(),
                method: k.method.to_owned(),
                path: k.path.to_owned(),
                key: k.key.to_owned(),
                fingerprint: fingerprint.to_owned(),
                locked_until: now + LOCK_MS,
                created_at: now,
                expires_at: now + RETENTION_MS,
            })
            .await;
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
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(inserted.rows_affected() == 1)
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
        .execute(&mut *db.writer().await?)
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
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(Some(if taken.rows_affected() == 1 {
        Reservation::Acquired {
            lease: now + LOCK_MS,
        }
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
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// Stores the response of a reserved request for replay in `tx`, the
/// transaction of the request's change, at `now`. `false` when the
/// reservation is no longer ours (its lock expired and another host took
/// the key over): the caller then rolls `tx` back, so the request takes
/// effect at most once.
///
/// On SQLite, well inside the lease, the record is a [`Deferred`] write
/// that goes with the commit: nobody takes a key over before its lock
/// expires by the clock of this machine, which every process on the
/// database reads, and no one else writes between this call and the
/// commit. The margin covers the commit waiting for another process's
/// write lock (SQLite's busy timeout, 10 s).
pub async fn complete_in(
    tx: &mut Tx,
    k: &KeyRef<'_>,
    lease: i64,
    response: &StoredResponse,
    now: i64,
) -> Result<bool> {
    if tx.is_sqlite() && now + SURE_LEASE_MS < lease {
        let record = Deferred::new(COMPLETE)
            .bind(k.scope)
            .bind(k.method)
            .bind(k.path)
            .bind(k.key)
            .bind(i64::from(response.status))
            .bind(response.content_type.clone())
            .bind(response.body.clone())
            .bind(lease);
        tx.defer(record).await?;
        return Ok(true);
    }
    let done = sqlx::query(COMPLETE)
        .bind(k.scope)
        .bind(k.method)
        .bind(k.path)
        .bind(k.key)
        .bind(i64::from(response.status))
        .bind(&response.content_type)
        .bind(&response.body)
        .bind(lease)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// How much of its lease a request must have left for [`complete_in`] to
/// know it still holds its key without asking.
const SURE_LEASE_MS: i64 = 30 * 1000;

const COMPLETE: &str = "UPDATE idempotency_keys SET state = 'completed', status = $5, \
    content_type = $6, body = $7 WHERE scope = $1 AND method = $2 AND path = $3 AND key = $4 \
    AND state = 'running' AND locked_until = $8";

/// [`release`] in `tx`, the transaction of the request's change.
pub async fn release_in(tx: &mut Tx, k: &KeyRef<'_>) -> Result<()> {
    sqlx::query(RELEASE)
        .bind(k.scope)
        .bind(k.method)
        .bind(k.path)
        .bind(k.key)
        .execute(tx.conn())
        .await?;
    Ok(())
}

const RELEASE: &str = "DELETE FROM idempotency_keys WHERE scope = $1 AND method = $2 \
                       AND path = $3 AND key = $4 AND state = 'running'";

/// Forgets a reservation: the request changed nothing (a 4xx), so the key
/// may be used again, with a corrected body.
pub async fn release(db: &Db, k: &KeyRef<'_>) -> Result<()> {
    sqlx::query(RELEASE)
        .bind(k.scope)
        .bind(k.method)
        .bind(k.path)
        .bind(k.key)
        .execute(&mut *db.writer().await?)
        .await?;
    Ok(())
}

/// Deletes records older than the retention period.
pub async fn purge_expired(db: &Db, now: i64) -> Result<u64> {
    let done = sqlx::query("DELETE FROM idempotency_keys WHERE expires_at <= $1")
        .bind(now)
        .execute(&mut *db.writer().await?)
        .await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::hold_last_commit;

    async fn sqlite() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = Db::connect(&Db::sqlite_url(dir.path()))
            .await
            .expect("sqlite");
        (dir, db)
    }

    fn key(key: &str) -> KeyRef<'_> {
        KeyRef {
            scope: "token:t1",
            method: "POST",
            path: "/api/v1/projects",
            key,
        }
    }

    /// A change to hold: a setting named `probe`.
    async fn put(tx: &mut Tx, value: &str) {
        sqlx::query("INSERT INTO settings (key, value) VALUES ('probe', $1)")
            .bind(value)
            .execute(tx.conn())
            .await
            .expect("insert");
    }

    fn created() -> StoredResponse {
        StoredResponse {
            status: 201,
            content_type: Some("application/json".to_owned()),
            body: br#"{"id":"prj_1"}"#.to_vec(),
        }
    }

    #[tokio::test]
    async fn grouped_reservations_acquire_each_key_once() {
        let (_dir, db) = sqlite().await;
        let names: Vec<String> = (0..40)
            .map(|i| format!("k{}", if i % 4 == 0 { 0 } else { i }))
            .collect();
        let tasks: Vec<_> = names
            .into_iter()
            .map(|name| {
                let db = db.clone();
                tokio::spawn(async move {
                    let verdict = reserve(&db, &key(&name), "fp", 1_000)
                        .await
                        .expect("reserve");
                    (name, matches!(verdict, Reservation::Acquired { .. }))
                })
            })
            .collect();
        let mut acquired = Vec::new();
        for task in tasks {
            let (name, ok) = task.await.expect("task");
            if ok {
                acquired.push(name);
            }
        }
        acquired.sort();
        let mut expected: Vec<String> = (0..40)
            .filter(|i| i % 4 != 0)
            .map(|i| format!("k{i}"))
            .chain(["k0".to_owned()])
            .collect();
        expected.sort();
        assert_eq!(acquired, expected);
    }

    #[tokio::test]
    async fn a_held_change_commits_with_its_record() {
        let (_dir, db) = sqlite().await;
        let k = key("a");
        let Reservation::Acquired { lease } = reserve(&db, &k, "fp", 1_000).await.unwrap() else {
            panic!("a fresh key is acquired")
        };
        let ((), held) = hold_last_commit(async {
            let mut tx = db.begin().await.unwrap();
            put(&mut tx, "1").await;
            tx.commit_last().await.unwrap();
        })
        .await;
        let mut tx = held.expect("the last commit is held");
        // Nothing is visible before the held transaction commits.
        assert!(crate::settings::get(&db, "probe").await.unwrap().is_none());
        assert!(
            complete_in(&mut tx, &k, lease, &created(), 1_001)
                .await
                .unwrap()
        );
        tx.commit().await.unwrap();
        assert_eq!(
            crate::settings::get(&db, "probe").await.unwrap().as_deref(),
            Some("1")
        );
        let Reservation::Replay(stored) = reserve(&db, &k, "fp", 2_000).await.unwrap() else {
            panic!("a completed key replays")
        };
        assert_eq!((stored.status, stored.body), (201, created().body));
    }

    #[tokio::test]
    async fn a_lost_lease_or_a_dropped_hold_changes_nothing() {
        let (_dir, db) = sqlite().await;
        let k = key("b");
        let Reservation::Acquired { lease } = reserve(&db, &k, "fp", 1_000).await.unwrap() else {
            panic!("a fresh key is acquired")
        };
        // Another host takes the key over once the lock has expired.
        let later = lease + 1;
        assert!(matches!(
            reserve(&db, &k, "fp", later).await.unwrap(),
            Reservation::Acquired { .. }
        ));
        let mut tx = db.begin().await.unwrap();
        put(&mut tx, "1").await;
        assert!(
            !complete_in(&mut tx, &k, lease, &created(), later)
                .await
                .unwrap()
        );
        drop(tx);
        assert!(crate::settings::get(&db, "probe").await.unwrap().is_none());
        // A held transaction that is dropped rolls back, and the writer is free.
        let ((), held) = hold_last_commit(async {
            let mut tx = db.begin().await.unwrap();
            put(&mut tx, "2").await;
            tx.commit_last().await.unwrap();
        })
        .await;
        drop(held);
        assert!(crate::settings::get(&db, "probe").await.unwrap().is_none());
        release(&db, &k).await.unwrap();
        assert!(matches!(
            reserve(&db, &k, "other", later).await.unwrap(),
            Reservation::Acquired { .. }
        ));
    }
}
