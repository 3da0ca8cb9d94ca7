//! Plugins: stored component versions, the active version of each plugin,
//! plugin key-value data and metered fuel.
//!
//! Key-value keys compare as bytes on both backends (PostgreSQL uses the
//! "C" collation for them), so prefix listings and cursors agree.

use sqlx::FromRow;

use crate::db::Deferred;
use crate::{Backend, Db, Result, Tx};

/// A stored component version, without its bytes.
#[derive(Clone, Debug, FromRow)]
pub struct VersionInfo {
    pub name: String,
    pub digest: String,
    pub version: String,
    pub wit_version: String,
    /// `upload`, `builtin` or an OCI reference.
    pub source: String,
    /// The self-description, as JSON.
    pub description: String,
    pub loaded_at: i64,
}

#[derive(Clone, Debug, FromRow)]
pub struct ActivePlugin {
    pub name: String,
    pub active_digest: String,
    pub previous_digest: Option<String>,
    pub generation: i64,
    pub updated_at: i64,
}

const VERSION_COLUMNS: &str = "name, digest, version, wit_version, source, description, loaded_at";
const PLUGIN_COLUMNS: &str = "name, active_digest, previous_digest, generation, updated_at";

/// Stores a version's bytes once; false if that digest was already stored.
pub async fn insert_version(tx: &mut Tx, info: &VersionInfo, wasm: &[u8]) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO plugin_versions (name, digest, version, wit_version, source, wasm, description, loaded_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name, digest) DO NOTHING",
    )
    .bind(&info.name)
    .bind(&info.digest)
    .bind(&info.version)
    .bind(&info.wit_version)
    .bind(&info.source)
    .bind(wasm)
    .bind(&info.description)
    .bind(info.loaded_at)
    .execute(tx.conn())
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn version_wasm(db: &Db, name: &str, digest: &str) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT wasm FROM plugin_versions WHERE name = $1 AND digest = $2")
            .bind(name)
            .bind(digest)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.map(|(w,)| w))
}

pub async fn versions(db: &Db, name: &str) -> Result<Vec<VersionInfo>> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM plugin_versions WHERE name = $1 ORDER BY loaded_at, digest"
    );
    Ok(sqlx::query_as(&sql).bind(name).fetch_all(db.pool()).await?)
}

pub async fn version(db: &Db, name: &str, digest: &str) -> Result<Option<VersionInfo>> {
    let sql =
        format!("SELECT {VERSION_COLUMNS} FROM plugin_versions WHERE name = $1 AND digest = $2");
    Ok(sqlx::query_as(&sql)
        .bind(name)
        .bind(digest)
        .fetch_optional(db.pool())
        .await?)
}

pub async fn active(db: &Db) -> Result<Vec<ActivePlugin>> {
    let sql = format!("SELECT {PLUGIN_COLUMNS} FROM plugins ORDER BY name");
    Ok(sqlx::query_as(&sql).fetch_all(db.pool()).await?)
}

/// Makes `digest` the active version of `name`, remembering `previous`.
pub async fn set_active(
    tx: &mut Tx,
    name: &str,
    digest: &str,
    previous: Option<&str>,
    now: i64,
) -> Result<i64> {
    let (generation,): (i64,) = sqlx::query_as(
        "INSERT INTO plugins (name, active_digest, previous_digest, generation, updated_at) \
         VALUES ($1, $2, $3, 1, $4) ON CONFLICT (name) DO UPDATE SET \
         active_digest = excluded.active_digest, previous_digest = excluded.previous_digest, \
         generation = plugins.generation + 1, updated_at = excluded.updated_at \
         RETURNING generation",
    )
    .bind(name)
    .bind(digest)
    .bind(previous)
    .bind(now)
    .fetch_one(tx.conn())
    .await?;
    Ok(generation)
}

/// The namespace column of an organisation, or of global data (`None`).
pub fn namespace(org: Option<&str>) -> &str {
    org.unwrap_or("")
}

pub async fn kv_get(db: &Db, plugin: &str, ns: &str, key: &str) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> = sqlx::query_as(
        "SELECT value FROM plugin_kv WHERE plugin = $1 AND namespace = $2 AND key = $3",
    )
    .bind(plugin)
    .bind(ns)
    .bind(key)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.map(|(v,)| v))
}

/// The value as the committing transaction sees it.
pub async fn kv_get_in(tx: &mut Tx, plugin: &str, ns: &str, key: &str) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> = sqlx::query_as(
        "SELECT value FROM plugin_kv WHERE plugin = $1 AND namespace = $2 AND key = $3",
    )
    .bind(plugin)
    .bind(ns)
    .bind(key)
    .fetch_optional(tx.conn())
    .await?;
    Ok(row.map(|(v,)| v))
}

/// The smallest string greater than every string starting with `prefix`.
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Up to `limit` entries under `prefix` after `after`, in byte order.
pub async fn kv_list(
    db: &Db,
    plugin: &str,
    ns: &str,
    prefix: &str,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<(String, Vec<u8>)>> {
    let lower = match after {
        Some(after) if after >= prefix => after,
        _ => prefix,
    };
    let op = if after.is_some_and(|a| a >= prefix) {
        ">"
    } else {
        ">="
    };
    let end = prefix_end(prefix);
    let upper = if end.is_some() { " AND key < $4" } else { "" };
    let sql = format!(
        "SELECT key, value FROM plugin_kv WHERE plugin = $1 AND namespace = $2 AND key {op} $3{upper} \
         ORDER BY key LIMIT {limit}"
    );
    let mut query = sqlx::query_as(&sql).bind(plugin).bind(ns).bind(lower);
    if let Some(end) = &end {
        query = query.bind(end);
    }
    Ok(query.fetch_all(db.pool()).await?)
}

pub async fn kv_count(db: &Db, plugin: &str, ns: &str, prefix: &str) -> Result<u64> {
    let end = prefix_end(prefix);
    let upper = if end.is_some() { " AND key < $4" } else { "" };
    let sql = format!(
        "SELECT COUNT(*) FROM plugin_kv WHERE plugin = $1 AND namespace = $2 AND key >= $3{upper}"
    );
    let mut query = sqlx::query_as(&sql).bind(plugin).bind(ns).bind(prefix);
    if let Some(end) = &end {
        query = query.bind(end);
    }
    let (n,): (i64,) = query.fetch_one(db.pool()).await?;
    Ok(n as u64)
}

/// Sets `key`; sent with the transaction's next statement or its commit
/// (SQLite; at once on PostgreSQL), as nobody reads its result.
pub async fn kv_set(tx: &mut Tx, plugin: &str, ns: &str, key: &str, value: &[u8]) -> Result<()> {
    tx.defer(
        Deferred::new(
            "INSERT INTO plugin_kv (plugin, namespace, key, value) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (plugin, namespace, key) DO UPDATE SET value = excluded.value",
        )
        .bind(plugin.to_owned())
        .bind(ns.to_owned())
        .bind(key.to_owned())
        .bind(value.to_vec()),
    )
    .await
}

/// Deletes `key`, deferred as [`kv_set`] is.
pub async fn kv_delete(tx: &mut Tx, plugin: &str, ns: &str, key: &str) -> Result<()> {
    tx.defer(
        Deferred::new("DELETE FROM plugin_kv WHERE plugin = $1 AND namespace = $2 AND key = $3")
            .bind(plugin.to_owned())
            .bind(ns.to_owned())
            .bind(key.to_owned()),
    )
    .await
}

/// A step of the savepoint that lets one operation of a group commit be
/// undone alone (SQLite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Savepoint {
    Begin,
    RollBack,
    Release,
}

pub async fn kv_savepoint(tx: &mut Tx, step: Savepoint) -> Result<()> {
    let sql = match step {
        Savepoint::Begin => "SAVEPOINT grouped",
        Savepoint::RollBack => "ROLLBACK TO grouped",
        Savepoint::Release => "RELEASE grouped",
    };
    sqlx::query(sql).execute(tx.conn()).await?;
    Ok(())
}

/// Sets `key` to `new` (`None` deletes) if it holds `expected` (`None`:
/// absent), in one conditional statement; false when it did not, and then
/// nothing changed. The caller holds [`kv_lock`] on the key, so a commit
/// that read the key under the same lock cannot interleave.
pub async fn kv_claim(
    tx: &mut Tx,
    plugin: &str,
    ns: &str,
    key: &str,
    expected: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Result<bool> {
    let done = match (expected, new) {
        (Some(expected), Some(new)) => {
            sqlx::query(
                "UPDATE plugin_kv SET value = $4 \
                 WHERE plugin = $1 AND namespace = $2 AND key = $3 AND value = $5",
            )
            .bind(plugin)
            .bind(ns)
            .bind(key)
            .bind(new)
            .bind(expected)
            .execute(tx.conn())
            .await?
        }
        (Some(expected), None) => {
            sqlx::query(
                "DELETE FROM plugin_kv \
                 WHERE plugin = $1 AND namespace = $2 AND key = $3 AND value = $4",
            )
            .bind(plugin)
            .bind(ns)
            .bind(key)
            .bind(expected)
            .execute(tx.conn())
            .await?
        }
        (None, Some(new)) => {
            sqlx::query(
                "INSERT INTO plugin_kv (plugin, namespace, key, value) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (plugin, namespace, key) DO NOTHING",
            )
            .bind(plugin)
            .bind(ns)
            .bind(key)
            .bind(new)
            .execute(tx.conn())
            .await?
        }
        (None, None) => return Ok(kv_get_in(tx, plugin, ns, key).await?.is_none()),
    };
    Ok(done.rows_affected() == 1)
}

/// Serialises transactions that touch the same keys. SQLite transactions
/// already run one at a time; PostgreSQL takes a transaction-scoped
/// advisory lock per key, in sorted order so that two commits never wait
/// on each other in a cycle.
pub async fn kv_lock(tx: &mut Tx, backend: Backend, keys: &mut Vec<String>) -> Result<()> {
    if backend == Backend::Sqlite {
        return Ok(());
    }
    keys.sort();
    keys.dedup();
    for key in keys.iter() {
        sqlx::query("SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(key)
            .execute(tx.conn())
            .await?;
    }
    Ok(())
}

/// Adds requests and their fuel to an organisation's daily meter.
pub async fn add_usage(
    db: &Db,
    org_id: &str,
    plugin: &str,
    day: &str,
    requests: i64,
    fuel: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO plugin_usage (org_id, plugin, day, requests, fuel) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (org_id, plugin, day) DO UPDATE SET \
         requests = plugin_usage.requests + excluded.requests, fuel = plugin_usage.fuel + excluded.fuel",
    )
    .bind(org_id)
    .bind(plugin)
    .bind(day)
    .bind(requests)
    .bind(fuel)
    .execute(&mut *db.writer().await?)
    .await?;
    Ok(())
}

/// `(plugin, requests, fuel)` of an organisation since `day` (inclusive).
pub async fn usage_since(db: &Db, org_id: &str, day: &str) -> Result<Vec<(String, i64, i64)>> {
    Ok(sqlx::query_as(
        "SELECT plugin, CAST(SUM(requests) AS BIGINT), CAST(SUM(fuel) AS BIGINT) FROM plugin_usage \
         WHERE org_id = $1 AND day >= $2 GROUP BY plugin ORDER BY plugin",
    )
    .bind(org_id)
    .bind(day)
    .fetch_all(db.pool())
    .await?)
}
