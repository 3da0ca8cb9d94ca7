//! Durable plugin jobs: scheduled with a plugin call's writes, claimed by
//! one host at a time under a lease, finished with the run's writes.
//!
//! A claim sets `lease_until`; when a host dies mid-run, the lease expires
//! and another host claims the job again, so every job runs at least once.
//! `version` grows whenever a job is scheduled again, so the end of a run of
//! a job that was replaced meanwhile changes nothing.

use sqlx::FromRow;

use crate::{Backend, Db, Result, Tx};

/// A job's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobKey {
    pub plugin: String,
    /// An organisation id, or `""` for a global job.
    pub namespace: String,
    /// `job` or `tick`.
    pub kind: String,
    pub key: String,
}

/// A job as a claim returns it.
#[derive(Clone, Debug, FromRow)]
pub struct ClaimedJob {
    pub plugin: String,
    pub namespace: String,
    pub kind: String,
    pub key: String,
    pub due: i64,
    pub every_ms: Option<i64>,
    pub payload: String,
    /// Counting this claim: 1 on the first run.
    pub attempt: i32,
    pub version: i64,
}

impl ClaimedJob {
    pub fn job_key(&self) -> JobKey {
        JobKey {
            plugin: self.plugin.clone(),
            namespace: self.namespace.clone(),
            kind: self.kind.clone(),
            key: self.key.clone(),
        }
    }
}

const PK: &str = "plugin = $1 AND namespace = $2 AND kind = $3 AND key = $4";

/// Creates the job, or replaces its schedule and payload (which resets its
/// attempts and releases any lease: the replaced run's end changes nothing).
pub async fn schedule(
    tx: &mut Tx,
    job: &JobKey,
    due: i64,
    every_ms: Option<i64>,
    payload: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO plugin_jobs (plugin, namespace, kind, key, due, every_ms, payload) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (plugin, namespace, kind, key) DO UPDATE SET \
         due = excluded.due, every_ms = excluded.every_ms, payload = excluded.payload, \
         attempt = 0, version = plugin_jobs.version + 1, lease_until = 0, lease_owner = NULL",
    )
    .bind(&job.plugin)
    .bind(&job.namespace)
    .bind(&job.kind)
    .bind(&job.key)
    .bind(due)
    .bind(every_ms)
    .bind(payload)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn cancel(tx: &mut Tx, job: &JobKey) -> Result<()> {
    sqlx::query(&format!("DELETE FROM plugin_jobs WHERE {PK}"))
        .bind(&job.plugin)
        .bind(&job.namespace)
        .bind(&job.kind)
        .bind(&job.key)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// The end of a successful run of `version`: due again at `next_due`, or
/// gone. Nothing happens if the job was scheduled again since.
pub async fn finish(tx: &mut Tx, job: &JobKey, version: i64, next_due: Option<i64>) -> Result<()> {
    let query = match next_due {
        Some(_) => format!(
            "UPDATE plugin_jobs SET due = $6, attempt = 0, lease_until = 0, lease_owner = NULL \
             WHERE {PK} AND version = $5"
        ),
        None => format!("DELETE FROM plugin_jobs WHERE {PK} AND version = $5"),
    };
    let mut query = sqlx::query(&query)
        .bind(&job.plugin)
        .bind(&job.namespace)
        .bind(&job.kind)
        .bind(&job.key)
        .bind(version);
    if let Some(due) = next_due {
        query = query.bind(due);
    }
    query.execute(tx.conn()).await?;
    Ok(())
}

/// After a failed run of `version`: due again at `due`, with its attempts
/// kept (`reset_attempts` starts over, for a repeating job that gave up).
pub async fn retry(
    db: &Db,
    job: &JobKey,
    version: i64,
    due: i64,
    reset_attempts: bool,
) -> Result<()> {
    let attempt = if reset_attempts { "0" } else { "attempt" };
    sqlx::query(&format!(
        "UPDATE plugin_jobs SET due = $6, attempt = {attempt}, lease_until = 0, \
         lease_owner = NULL WHERE {PK} AND version = $5"
    ))
    .bind(&job.plugin)
    .bind(&job.namespace)
    .bind(&job.kind)
    .bind(&job.key)
    .bind(version)
    .bind(due)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// Removes a one-shot job that failed too often.
pub async fn give_up(db: &Db, job: &JobKey, version: i64) -> Result<()> {
    sqlx::query(&format!(
        "DELETE FROM plugin_jobs WHERE {PK} AND version = $5"
    ))
    .bind(&job.plugin)
    .bind(&job.namespace)
    .bind(&job.kind)
    .bind(&job.key)
    .bind(version)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// Claims up to `limit` jobs due at `now` (the host clock) whose lease
/// expired by `lease_now` (the system clock), leasing them to `owner` until
/// `lease_until`; the earliest due first. Two hosts never claim the same
/// job while its lease holds. Leases run on the system clock so that moving
/// the host clock (`PLATEAU_CLOCK=manual`) never frees a running job.
pub async fn claim(
    db: &Db,
    owner: &str,
    now: i64,
    lease_now: i64,
    lease_until: i64,
    limit: i64,
) -> Result<Vec<ClaimedJob>> {
    let skip_locked = match db.backend() {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    let sql = format!(
        "UPDATE plugin_jobs SET lease_until = $1, lease_owner = $2, attempt = attempt + 1 \
         WHERE (plugin, namespace, kind, key) IN ( \
           SELECT plugin, namespace, kind, key FROM plugin_jobs \
           WHERE due <= $3 AND lease_until <= $5 ORDER BY due LIMIT $4{skip_locked}) \
         RETURNING plugin, namespace, kind, key, due, every_ms, payload, attempt, version"
    );
    let mut jobs: Vec<ClaimedJob> = sqlx::query_as(&sql)
        .bind(lease_until)
        .bind(owner)
        .bind(now)
        .bind(limit)
        .bind(lease_now)
        .fetch_all(&mut *db.writer().await?)
        .await?;
    jobs.sort_by_key(|j| j.due);
    Ok(jobs)
}

/// The earliest due time of a job not leased at `lease_now` (the system
/// clock), if any: a read, so a runner can sleep until then without taking
/// the writer.
pub async fn next_due(db: &Db, lease_now: i64) -> Result<Option<i64>> {
    let (due,): (Option<i64>,) =
        sqlx::query_as("SELECT MIN(due) FROM plugin_jobs WHERE lease_until <= $1")
            .bind(lease_now)
            .fetch_one(db.pool())
            .await?;
    Ok(due)
}

/// Makes the ticks of `plugin` those of `schedules` (name, interval): new
/// ones are first due one interval from `now`, changed intervals apply from
/// the next run, and ticks no longer described are removed.
pub async fn sync_ticks(
    db: &Db,
    plugin: &str,
    schedules: &[(String, i64)],
    now: i64,
) -> Result<()> {
    let mut tx = db.begin().await?;
    let existing: Vec<(String,)> =
        sqlx::query_as("SELECT key FROM plugin_jobs WHERE plugin = $1 AND kind = 'tick'")
            .bind(plugin)
            .fetch_all(tx.conn())
            .await?;
    for (key,) in existing {
        if !schedules.iter().any(|(name, _)| *name == key) {
            sqlx::query("DELETE FROM plugin_jobs WHERE plugin = $1 AND kind = 'tick' AND key = $2")
                .bind(plugin)
                .bind(&key)
                .execute(tx.conn())
                .await?;
        }
    }
    for (name, every_ms) in schedules {
        sqlx::query(
            "INSERT INTO plugin_jobs (plugin, namespace, kind, key, due, every_ms, payload) \
             VALUES ($1, '', 'tick', $2, $3, $4, '') \
             ON CONFLICT (plugin, namespace, kind, key) DO UPDATE SET every_ms = excluded.every_ms",
        )
        .bind(plugin)
        .bind(name)
        .bind(now + every_ms)
        .bind(every_ms)
        .execute(tx.conn())
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Jobs waiting, jobs due at `now` and not leased, and jobs leased.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    pub total: i64,
    pub due: i64,
    pub running: i64,
}

/// The backlog at `now` (the host clock), leases read at `lease_now` (the
/// system clock), as in [`claim`].
pub async fn backlog(db: &Db, now: i64, lease_now: i64) -> Result<Backlog> {
    let (total, due, running): (i64, i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), \
         COALESCE(SUM(CASE WHEN due <= $1 AND lease_until <= $2 THEN 1 ELSE 0 END), 0), \
         COALESCE(SUM(CASE WHEN lease_until > $2 THEN 1 ELSE 0 END), 0) FROM plugin_jobs",
    )
    .bind(now)
    .bind(lease_now)
    .fetch_one(db.pool())
    .await?;
    Ok(Backlog {
        total,
        due,
        running,
    })
}
