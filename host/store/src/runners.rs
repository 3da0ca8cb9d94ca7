//! Runners and the placement of apps. Each agent registers its host as a
//! runner (`runners`, keyed by the host's id) and renews its heartbeat; a
//! runner whose heartbeat is older than the lease counts as gone. An app's
//! replicas run on the runner of its placement (`app_placements`); a
//! migration names a target runner, which starts the app, and the
//! placement switches to it once it serves there.
//!
//! A runner's heartbeat is bookkeeping of the deployment and records no
//! event; the changes of a placement are recorded by their callers.

use crate::{Db, Result, Tx};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Runner {
    /// The host's id (`hst_...`).
    pub id: String,
    /// Where other hosts' edges reach this runner's edge (`ip:port`).
    pub edge_address: String,
    pub started_at: i64,
    pub heartbeat_at: i64,
}

impl Runner {
    /// Whether its heartbeat is at most `lease_ms` old at `now`.
    pub fn alive(&self, now: i64, lease_ms: i64) -> bool {
        now - self.heartbeat_at <= lease_ms
    }
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Placement {
    pub app_id: String,
    pub runner_id: String,
    /// The runner a migration moves the app to.
    pub target_runner_id: Option<String>,
    pub migration_started_at: Option<i64>,
    pub switched_at: Option<i64>,
    pub updated_at: i64,
}

const RUNNER_COLUMNS: &str = "id, edge_address, started_at, heartbeat_at";
const COLUMNS: &str =
    "app_id, runner_id, target_runner_id, migration_started_at, switched_at, updated_at";

/// Records that runner `id` started now, its edge at `edge_address`.
pub async fn register(db: &Db, id: &str, edge_address: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO runners (id, edge_address, started_at, heartbeat_at) VALUES ($1, $2, $3, $3) \
         ON CONFLICT (id) DO UPDATE SET edge_address = $2, started_at = $3, heartbeat_at = $3",
    )
    .bind(id)
    .bind(edge_address)
    .bind(now)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// Renews runner `id`'s lease; false when it is not registered.
pub async fn heartbeat(db: &Db, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query("UPDATE runners SET heartbeat_at = $2 WHERE id = $1")
        .bind(id)
        .bind(now)
        .execute(&mut *db.writer().await?)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Every runner, oldest first.
pub async fn list(db: &Db) -> Result<Vec<Runner>> {
    let sql = format!("SELECT {RUNNER_COLUMNS} FROM runners ORDER BY started_at, id");
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}

pub async fn get(db: &Db, id: &str) -> Result<Option<Runner>> {
    let sql = format!("SELECT {RUNNER_COLUMNS} FROM runners WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// The placement of app `app_id`, if it has one.
pub async fn placement(db: &Db, app_id: &str) -> Result<Option<Placement>> {
    let sql = format!("SELECT {COLUMNS} FROM app_placements WHERE app_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_optional(db.pool())
        .await?)
}

pub async fn placement_in(tx: &mut Tx, app_id: &str) -> Result<Option<Placement>> {
    let sql = format!("SELECT {COLUMNS} FROM app_placements WHERE app_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_optional(tx.conn())
        .await?)
}

/// The placements of the apps not in the trash.
pub async fn placements(db: &Db) -> Result<Vec<Placement>> {
    let sql = format!(
        "SELECT {} FROM app_placements p JOIN apps a ON a.id = p.app_id \
         WHERE a.deleted_at IS NULL ORDER BY p.app_id",
        COLUMNS
            .split(", ")
            .map(|c| format!("p.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}

/// The replicas the apps placed on each runner ask for (apps not in the
/// trash), by runner id.
pub async fn loads(db: &Db) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT p.runner_id, CAST(COALESCE(SUM(a.replicas), 0) AS BIGINT) \
         FROM app_placements p JOIN apps a ON a.id = p.app_id \
         WHERE a.deleted_at IS NULL GROUP BY p.runner_id",
    )
    .fetch_all(db.pool())
    .await?)
}

/// Places app `app_id` on `runner_id` unless it has a placement already
/// (another host placed it first); the placement that holds is returned.
pub async fn place(db: &Db, app_id: &str, runner_id: &str, now: i64) -> Result<Placement> {
    sqlx::query(
        "INSERT INTO app_placements (app_id, runner_id, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (app_id) DO NOTHING",
    )
    .bind(app_id)
    .bind(runner_id)
    .bind(now)
    .execute(&mut *db.writer().await?)
    .await?;
    placement(db, app_id)
        .await?
        .ok_or_else(|| crate::Error::Invalid(format!("app {app_id} has no placement")))
}

/// Starts a migration of `app_id` from `from` to `target`; false when
/// its placement changed meanwhile or a migration is under way.
pub async fn start_migration(
    tx: &mut Tx,
    app_id: &str,
    from: &str,
    target: &str,
    now: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_placements SET target_runner_id = $3, migration_started_at = $4, \
         updated_at = $4 WHERE app_id = $1 AND runner_id = $2 AND target_runner_id IS NULL",
    )
    .bind(app_id)
    .bind(from)
    .bind(target)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends the migration of `app_id` to `target`: the app is placed there
/// (`switched`) or stays where it was; false when it was not under way.
pub async fn end_migration(
    tx: &mut Tx,
    app_id: &str,
    target: &str,
    switched: bool,
    now: i64,
) -> Result<bool> {
    let sql = if switched {
        "UPDATE app_placements SET runner_id = target_runner_id, target_runner_id = NULL, \
         switched_at = $3, updated_at = $3 WHERE app_id = $1 AND target_runner_id = $2"
    } else {
        "UPDATE app_placements SET target_runner_id = NULL, updated_at = $3 \
         WHERE app_id = $1 AND target_runner_id = $2"
    };
    let done = sqlx::query(sql)
        .bind(app_id)
        .bind(target)
        .bind(now)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Moves `app_id` from runner `from` to `to` (a rescheduling; any
/// migration under way is dropped); false when it was not on `from`.
pub async fn reschedule(tx: &mut Tx, app_id: &str, from: &str, to: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_placements SET runner_id = $3, target_runner_id = NULL, switched_at = $4, \
         updated_at = $4 WHERE app_id = $1 AND runner_id = $2",
    )
    .bind(app_id)
    .bind(from)
    .bind(to)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives the volumes of `app_id` (not being deleted) to runner `to`:
/// each is made again there, from its latest backup when it has one
/// (empty otherwise). For the apps of a dead runner, whose volumes'
/// images are out of reach.
pub async fn rehome_volumes(tx: &mut Tx, app_id: &str, to: &str, now: i64) -> Result<u64> {
    let done = sqlx::query(
        "UPDATE app_volumes SET host_id = $2, placement = '', status = 'creating', \
         status_detail = NULL, generation = generation + 1, updated_at = $3, \
         source_backup_id = (SELECT b.id FROM app_volume_backups b \
            WHERE b.volume_id = app_volumes.id ORDER BY b.created_at DESC, b.id DESC LIMIT 1) \
         WHERE app_id = $1 AND status <> 'deleting' AND host_id <> $2",
    )
    .bind(app_id)
    .bind(to)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected())
}
